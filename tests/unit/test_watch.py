"""`watch`: the verdict per sample, rates from counters, the summary, and the command end to end
on a fixture tree with a stand-in NVML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabriclens.cli.app import run
from fabriclens.measure.watch import (
    LinkRate,
    link_rate,
    running_verdict,
    sample_doc,
    summary,
    verdict,
)
from fake_nvml import FakeNvml

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs-roce-degraded"


@pytest.mark.parametrize(
    ("util", "power", "load", "peak", "want"),
    [
        (20, 0.3, 0.9, 0, "communication-bound"),  # GPUs wait while a link is saturated
        (100, 0.25, 0.5, 0, "communication-bound"),  # "100% busy" at low power: NCCL spinning
        (95, 0.8, 0.5, 0, "compute-bound"),
        (100, 0.25, 0.05, 0, "busy"),  # low power but the network is quiet: not the network
        (30, 0.3, 0.1, 0, "input-bound"),  # waiting, and not on the network
        (5, 0.1, 0.02, 0, "idle"),
        (65, 0.6, 0.2, 0, "busy"),
        (30, 0.3, None, 5e9, "GPUs waiting"),  # no capacity known: the network is not judged
        (5, 0.1, None, 1e3, "idle"),
        (None, None, 0.8, 0, "network busy"),
        (None, None, 0.3, 0, "network in use"),
        (None, None, 0.01, 0, "network idle"),
        (None, None, None, 2e6, "network in use"),
        (None, None, None, 0, "network idle"),
    ],
)
def test_verdict(
    util: float | None, power: float | None, load: float | None, peak: float, want: str
) -> None:
    assert verdict(util, power, load, peak) == want


def test_rates_from_counters() -> None:
    r = link_rate(
        "eth0",
        {"rx_bytes": 0, "tx_bytes": 100},
        {"rx_bytes": 125_000_000, "tx_bytes": 50},
        2.0,
        1e9,
    )
    assert r.rx_bits_per_s == 500e6 and r.tx_bits_per_s == 0.0  # a counter going back is no traffic
    assert r.load == 0.5
    ib = link_rate("mlx5_0/1", {"port_rcv_data": 0}, {"port_rcv_data": 25_000_000}, 1.0, 100e9,
                   "port_rcv_data", "port_xmit_data", 32)  # fmt: skip
    assert ib.rx_bits_per_s == 800e6  # 4-byte words
    assert LinkRate("veth0", 1e9, 0, None).load is None


def test_summary_and_running_verdict() -> None:
    fast = LinkRate("eth0", 9e8, 1e8, 1e9)
    quiet = LinkRate("eth0", 1e6, 1e6, 1e9)
    busy_gpu = [{"index": 0, "util_pct": 97.0, "power_w": 600.0, "power_limit_w": 700.0}]
    idle_gpu = [{"index": 0, "util_pct": 12.0, "power_w": 100.0, "power_limit_w": 700.0}]
    samples = [sample_doc(i + 1.0, idle_gpu, [fast]) for i in range(6)]
    samples += [sample_doc(i + 7.0, busy_gpu, [quiet]) for i in range(4)]
    assert (
        samples[0]["verdict"] == "communication-bound" and samples[-1]["verdict"] == "compute-bound"
    )
    assert running_verdict(samples) == "communication-bound"  # 6 of the last 10
    assert running_verdict(samples, window=4) == "compute-bound"
    s = summary(samples)
    assert s["verdict"] == "communication-bound" and s["shares"] == {
        "communication-bound": 0.6,
        "compute-bound": 0.4,
    }
    assert s["peak_link_bits_per_s"] == 9e8 and s["duration_s"] == 10.0
    assert summary([])["samples"] == 0


def test_watch_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fabriclens.probes import gpu

    real = gpu.open_gpus
    monkeypatch.setattr(gpu, "open_gpus", lambda live=True: real(FakeNvml()))  # type: ignore[arg-type]
    out = tmp_path / "w.jsonl"
    args = ["watch", "--sys-root", str(TREE), "--count", "4", "--interval", "0.05", "--record", str(out),
            "--link-speed", "25gbit", "--json"]  # fmt: skip
    assert run(args) == 0
    doc = json.loads(capsys.readouterr().out)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4 == doc["samples"] and doc["gpu_source"] == "nvml"
    assert [g["index"] for g in lines[0]["gpus"]] == [0, 1]
    assert {line["net_load"] for line in lines} == {0.0}  # a copied tree's counters do not move
    # GPU 0 swings 0/100, GPU 1 sits at 97: the mean alternates between busy and waiting
    assert {line["verdict"] for line in lines} <= {"compute-bound", "input-bound"}
    assert run(["watch", "--interval", "0"]) == 2
    assert run(["watch", "--sys-root", str(tmp_path / "none")]) == 2


def _summary_text(doc: dict[str, object]) -> str:
    from fabriclens.report.text import watch_renderables

    return "".join(str(getattr(r, "plain", r)) for r in watch_renderables(doc))


def test_summary_without_a_link_capacity_shows_the_peak_not_a_dash() -> None:
    links = [LinkRate("veth0", 0.0, 42e6, None)]
    doc = summary([sample_doc(1.0, [], links), sample_doc(2.0, [], links)])
    doc |= {"gpu_source": "none", "links": ["veth0"], "gpu_problem": None}
    text = _summary_text(doc)
    assert "peak, -" not in text
    assert "busiest 42 Mbit/s at peak" in text
    assert "no link capacity known" in text and "--link-speed" in text
    doc["net_load_mean"] = 0.25
    assert "42 Mbit/s at peak; 25% of capacity on average" in _summary_text(doc)
