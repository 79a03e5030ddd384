"""`watch --prometheus`: the exposition's names and labels, the Grafana dashboard's queries, and
a real Prometheus server (Debian's `prometheus`) scraping a running `watch`."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client", reason="pip install 'fabriclens[ui]'")

ROOT = Path(__file__).parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "fabriclens-watch.json"
SYSFS = ROOT / "tests" / "fixtures" / "sysfs-roce-degraded"


def _sample() -> dict[str, object]:
    from fabriclens.measure.watch import LinkRate, sample_doc

    gpus = [{"index": 0, "util_pct": 30.0, "power_w": 200.0, "power_limit_w": 700.0}]
    return sample_doc(
        1.0, gpus, [LinkRate("eth0", 8e9, 4e9, 1e10), LinkRate("mlx5_0/1", 0, 0, 4e11)]
    )


def test_metrics_use_base_units_and_labels() -> None:
    from prometheus_client import generate_latest

    from fabriclens.report.prometheus import NAMES, WatchMetrics

    m = WatchMetrics()
    doc = _sample()
    m.update(doc, "communication-bound")
    text = generate_latest(m.registry).decode()
    assert 'fabriclens_gpu_utilization_ratio{gpu="0"} 0.3' in text
    assert 'fabriclens_link_receive_bytes_per_second{kind="nic",link="eth0"} 1e+09' in text
    assert 'fabriclens_link_load_ratio{kind="nic",link="eth0"} 0.8' in text
    assert 'fabriclens_link_capacity_bytes_per_second{kind="rdma",link="mlx5_0/1"} 5e+10' in text
    assert f'fabriclens_verdict{{fabriclens_verdict="{doc["verdict"]}"}} 1.0' in text
    assert (
        'fabriclens_running_verdict{fabriclens_running_verdict="communication-bound"} 1.0' in text
    )
    assert "fabriclens_samples_total 1.0" in text
    exposed = {
        line.split("{")[0].split(" ")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert set(NAMES) <= exposed | {"fabriclens_samples_total"}


def test_the_grafana_dashboard_asks_only_for_metrics_watch_exports() -> None:
    from fabriclens.report.prometheus import NAMES

    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 5
    used = {name for e in exprs for name in re.findall(r"fabriclens_[a-z_]+", e)}
    assert used <= set(NAMES), used - set(NAMES)
    assert {
        "fabriclens_gpu_utilization_ratio",
        "fabriclens_link_load_ratio",
        "fabriclens_running_verdict",
    } <= used


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _query(port: int, promql: str) -> list[dict[str, object]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=3) as r:
        return list(json.load(r)["data"]["result"])


def test_a_real_prometheus_scrapes_watch(tmp_path: Path) -> None:
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        if os.environ.get("CI") == "true":
            pytest.fail("prometheus is missing under CI (make test installs the Debian package)")
        pytest.skip(
            "prometheus is not installed (apt-get install prometheus; make test does, as root)"
        )
    metrics_port, prom_port = _free_port(), _free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: fabriclens\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
    watch = subprocess.Popen(
        [sys.executable, "-m", "fabriclens", "watch", "--sys-root", str(SYSFS), "--interval", "0.5",
         "--link-speed", "10gbit", "--duration", "40", "--prometheus", f"127.0.0.1:{metrics_port}", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)  # fmt: skip
    server = subprocess.Popen(
        [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 40
        samples: list[dict[str, object]] = []
        verdict: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                samples = _query(prom_port, "fabriclens_samples_total")
                verdict = _query(prom_port, "fabriclens_running_verdict == 1")
                links = _query(prom_port, "fabriclens_link_receive_bytes_per_second")
            except OSError:
                continue
            if samples and verdict and links and float(samples[0]["value"][1]) >= 2:  # type: ignore[index]
                break
        assert samples, "Prometheus never scraped fabriclens_samples_total"
        assert float(samples[0]["value"][1]) >= 2  # type: ignore[index]
        assert verdict[0]["metric"]["fabriclens_running_verdict"]  # type: ignore[index]
        assert {lr["metric"]["link"] for lr in links} >= {"ens1f0"}  # type: ignore[index]
    finally:
        for proc in (server, watch):
            os.kill(proc.pid, signal.SIGTERM)
        for proc in (server, watch):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


@pytest.mark.parametrize("value", ["abc", "127.0.0.1:", "127.0.0.1:70000", ":0"])
def test_a_bad_prometheus_address_is_one_line(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from fabriclens.cli.app import run

    assert run(["watch", "--sys-root", str(SYSFS), "--count", "1", "--prometheus", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--prometheus" in err
