"""Progress as an observer: doctor's peer tests, a collective sweep and lab up report done of total
through the callback their caller passes (with fakes for the host: no pings, no namespaces), and
the CLI draws a bar only on a terminal's stderr, never with --json."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

import fabriclens.cli._progress as cli_progress
from fabriclens.cli.app import run
from fabriclens.parse.ping import PingSummary
from fabriclens.probes import peer, survey

Calls = list[tuple[int, int, str]]


def _recorder() -> tuple[Calls, Any]:
    calls: Calls = []
    return calls, lambda done, total, doing: calls.append((done, total, doing))


def _counts_ok(calls: Calls, total: int) -> None:
    """Every report has the same total, done never goes back, and the last says it is over."""
    assert {t for _, t, _ in calls} == {total}
    assert [d for d, _, _ in calls] == sorted(d for d, _, _ in calls)
    assert calls[-1] == (total, total, "")


def test_doctor_peer_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two peers, the second silent: every step of the first (throughput included), ping and TCP
    connect of the second, whose path MTU, route and throughput are skipped; 10 steps in all."""
    answers = {"10.0.0.2": 20, "10.0.0.3": 0}

    def fake_ping(host: str, count: int, interval: float, *a: Any, **k: Any) -> Any:
        return SimpleNamespace(stdout=host, command="ping")  # parse_ping, faked, reads the host

    def fake_parse(host: str) -> PingSummary:
        got = answers[host]
        return PingSummary(20, got, 1.0, 1.0, 1.0, 0.1, (1.0,) * got)

    monkeypatch.setattr(peer, "_ping", fake_ping)
    monkeypatch.setattr(peer, "parse_ping", fake_parse)
    monkeypatch.setattr(peer, "route_device", lambda host: "eth0")
    # the second peer answers no TCP connect either: down, not behind an ICMP firewall
    monkeypatch.setattr(peer, "tcp_connect_ms", lambda host, port: 0.5 if answers[host] else None)
    monkeypatch.setattr(peer, "path_mtu", lambda host, mtu, loss, **kw: 1500)
    monkeypatch.setattr(peer, "mtr_path", lambda host: None)
    import fabriclens.bench.tcp as tcp

    monkeypatch.setattr(tcp, "measure_link", lambda *a, **k: {"runs": [{"goodput_bits_per_s": 9e8, "command": "x"}]})  # fmt: skip
    monkeypatch.setattr(survey.shutil, "which", lambda name: f"/usr/bin/{name}")
    calls, progress = _recorder()
    opts = survey.PeerOptions(hosts=("10.0.0.2", "10.0.0.3"), pings=20)
    out = survey.Survey()
    survey._peer_rows(opts, [], out, progress)
    assert survey.peer_steps(opts) == 10
    _counts_ok(calls, 10)
    # the two paths are probed at once: each peer's steps in order, interleaved as they come;
    # the throughput test after every path, one peer at a time
    doing = [d for _, _, d in calls[:-1]]
    assert sorted(d for d, _, _ in calls[:-1]) == [d for d, _, _ in calls[:-1]]
    assert [d for d in doing if d.startswith("10.0.0.2")] == [
        "10.0.0.2 ping x20", "10.0.0.2 TCP connect", "10.0.0.2 path MTU",
        "10.0.0.2 route (mtr)", "10.0.0.2 TCP throughput, 2 s",
    ]  # fmt: skip
    assert [d for d in doing if d.startswith("10.0.0.3")] == ["10.0.0.3 ping x20", "10.0.0.3 TCP connect"]  # fmt: skip
    assert doing[-1] == "10.0.0.2 TCP throughput, 2 s" and len(doing) == 7
    assert [p["reachable"] for p in out.peers] == [True, False]


def test_collective_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """One gloo rank on loopback: each size reported as it starts, then all of them done."""
    pytest.importorskip("torch", reason="needs torch (make test installs torch==2.13.0)")
    from fabriclens.bench.collective import RunConfig, free_port, run_collective

    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(free_port()), "GLOO_SOCKET_IFNAME": "lo"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    calls, progress = _recorder()
    cfg = RunConfig("all_reduce", (1024, 4096, 16384), 1, 0, "float32", "gloo", 30, False)
    raw = run_collective(cfg, progress)
    assert raw is not None and len(raw["ranks"][0]["stats"]) == 3
    _counts_ok(calls, 3)
    assert calls[:-1] == [(0, 3, "1,024 bytes"), (1, 3, "4,096 bytes"), (2, 3, "16,384 bytes")]


def test_lab_up_hosts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Five hosts: each reported as it is created (fake ip and plumbing, no namespaces)."""
    from fabriclens.lab import lab as lab_module

    made: list[tuple[str, ...]] = []
    monkeypatch.setattr(lab_module, "require_root", lambda: None)
    monkeypatch.setattr(lab_module, "netns_list", lambda: [])
    monkeypatch.setattr(lab_module, "ip", lambda *a, **k: made.append(a))
    monkeypatch.setattr(lab_module, "STATE_DIR", tmp_path)
    monkeypatch.setattr(lab_module, "_free_subnet", lambda dfd: ipaddress.IPv4Network("198.18.0.0/24"))  # fmt: skip
    monkeypatch.setattr(lab_module.Lab, "_plumb", lambda self, host, mac=None: None)
    calls, progress = _recorder()
    caps = lab_module.Capabilities(root=True, iproute2=True, tun=True, netem=True)
    lab = lab_module.Lab.up(name="t", hosts=5, capabilities=caps, progress=progress)
    assert len(lab.hosts) == 5 and sum(a[:2] == ("netns", "add") for a in made) == 6
    _counts_ok(calls, 5)
    assert calls[:-1] == [(i, 5, f"h{i + 1} 198.18.0.{i + 1}") for i in range(5)]


class _Recording(cli_progress.NoProgress):
    """Stands in for the rich bar: records what it would draw."""

    drawn: ClassVar[list[tuple[str, int, int]]] = []

    def update(self, task: int, done: int, total: int, doing: str) -> None:
        self.drawn.append((doing, done, total))


@pytest.mark.parametrize(("tty", "json_out", "bar"), [(True, False, True), (True, True, False), (False, False, False)])  # fmt: skip
def test_bar_only_on_a_terminal_without_json(
    monkeypatch: pytest.MonkeyPatch, tty: bool, json_out: bool, bar: bool
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    chosen = cli_progress.terminal_progress(json_out)
    assert isinstance(chosen, cli_progress.RichProgress) == bar


def test_doctor_draws_the_peer_steps_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI hands survey_host an observer that draws "peer tests 0/2: <step>", and with --json
    one that draws nothing."""

    def fake_survey(*args: Any, progress: Any, **kwargs: Any) -> survey.Survey:
        progress(0, 2, "10.0.0.2 ping x20")
        progress(2, 2, "")
        return survey.Survey()

    monkeypatch.setattr(survey, "survey_host", fake_survey)
    monkeypatch.setattr(cli_progress, "RichProgress", _Recording)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    _Recording.drawn = []
    assert run(["doctor", "--peer", "10.0.0.2"]) in (0, 1)
    assert _Recording.drawn == [
        ("peer tests 0/2: 10.0.0.2 ping x20", 0, 2),
        ("peer tests 2/2", 2, 2),
    ]
    _Recording.drawn = []
    assert run(["doctor", "--peer", "10.0.0.2", "--json"]) in (0, 1)
    assert _Recording.drawn == []
    assert "peer tests" not in capsys.readouterr().err
