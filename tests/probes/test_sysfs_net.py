"""sysfs probes on a committed fake tree (a degraded RoCE host), and one live cross-check."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from fabriclens.cli.app import run
from fabriclens.diagnose.host import diagnose_host, host_rules, nic_facts, rdma_facts
from fabriclens.parse.ethtool import parse_ethtool
from fabriclens.probes.sysfs_net import read_interfaces, read_rdma_ports

TREE = FIXTURES / "sysfs-roce-degraded"


def test_interfaces_from_the_fake_tree() -> None:
    nics = {n.name: n for n in read_interfaces(TREE)}
    ens = nics["ens1f0"]
    assert (ens.operstate, ens.speed_mbps, ens.mtu, ens.driver, ens.physical) == (
        "up",
        100000,
        9000,
        "mlx5_core",
        True,
    )
    assert ens.stats["rx_crc_errors"] == 12
    assert not nics["lo"].physical and nics["lo"].speed_mbps is None


def test_rdma_ports_from_the_fake_tree_and_exclusion() -> None:
    ports = {(p.device, p.port): p for p in read_rdma_ports(TREE)}
    roce = ports[("mlx5_0", 1)]
    assert roce.active and roce.link_layer == "Ethernet" and roce.counters["link_downed"] == 2
    assert roce.hw_counters["np_ecn_marked_roce_packets"] == 5000
    assert not ports[("mlx5_1", 1)].active
    assert [p.device for p in read_rdma_ports(TREE, exclude=("mlx5_1",))] == ["mlx5_0"]


def test_missing_root_is_empty_not_an_error(tmp_path: Path) -> None:
    assert read_interfaces(tmp_path) == [] and read_rdma_ports(tmp_path) == []


def test_a_400g_nic_negotiated_at_100g_is_flagged() -> None:
    info = parse_ethtool((FIXTURES / "ethtool-400g-at-100g.txt").read_text())
    assert (
        info.supported_mbps == [10000, 25000, 100000, 200000, 400000] and info.speed_mbps == 100000
    )
    nic = {n.name: n for n in read_interfaces(TREE)}["ens1f0"]
    found = {f.rule: f for f in diagnose_host([nic_facts(nic, info)], [])}
    assert "nic-speed-below-capability" in found
    assert found["nic-speed-below-capability"].evidence == (
        "ens1f0: negotiated 100000 Mb/s, supports 400000 Mb/s",
    )


def test_host_findings_from_the_tree() -> None:
    nics = [nic_facts(n, None) for n in read_interfaces(TREE)]
    ports = [rdma_facts(p) for p in read_rdma_ports(TREE)]
    ids = {f.rule for f in diagnose_host(nics, ports)}
    assert {"rdma-port-not-active", "rdma-link-flaps", "rdma-ecn-without-cnp", "rdma-ack-timeouts", "nic-errors",
            "nic-crc-errors"} <= ids  # fmt: skip
    assert "nic-speed-below-capability" not in ids  # no ethtool reading: not claimed
    assert len({r.id for r in host_rules()}) == len(host_rules())


def test_doctor_on_the_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["doctor", "--sys-root", str(TREE), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["findings"][0]["severity"] == "critical"
    assert {"interfaces", "rdma_ports", "findings"} <= set(doc)
    assert run(["doctor", "--sys-root", str(TREE / "nope")]) == 2


def test_doctor_symptom_walk_on_the_tree(capsys: pytest.CaptureFixture[str]) -> None:
    """The degraded RoCE tree has a port down and flapping: a hang walk stops at link state."""
    assert run(["doctor", "--sys-root", str(TREE), "--symptom", "training-hangs", "--json"]) == 1
    w = json.loads(capsys.readouterr().out)["walk"]
    assert [s["status"] for s in w["steps"]][:3] == ["not checked", "found", "not reached"]
    assert w["stopped_at"] == "link state" and "rdma-port-not-active" in w["steps"][1]["findings"]
    assert (
        run(["doctor", "--sys-root", str(TREE), "--symptom", "training-hangs", "--markdown"]) == 1
    )
    md = capsys.readouterr().out
    assert "## Symptom: training freezes mid-run" in md and "2. link state: **FOUND**" in md
    assert run(["doctor", "--symptom", "slow"]) == 2
    assert "unknown --symptom 'slow'" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2 for the cross-check")
def test_live_cross_check_with_ip() -> None:
    """What sysfs gives here matches `ip -j link` on this machine."""
    ours = {n.name: n.mtu for n in read_interfaces(Path("/"))}
    theirs = {link["ifname"]: link["mtu"] for link in json.loads(
        subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, timeout=10, check=True).stdout)}  # fmt: skip
    assert ours == theirs


# every host rule, case by case: tests/unit/test_rules_golden.py


def test_sampling_sees_errors_rising_and_the_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Counters change while doctor waits: the new errors fire the rule, the byte delta is a rate."""
    import threading

    root = tmp_path / "tree"
    shutil.copytree(TREE, root, symlinks=True)
    stats = root / "sys" / "class" / "net" / "ens1f0" / "statistics"
    (stats / "rx_bytes").write_text("1000\n")
    ib = root / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters"
    (ib / "port_xmit_data").write_text("0\n")

    def add(path: Path, n: int) -> None:
        path.write_text(str(int(path.read_text()) + n) + "\n")

    def bump() -> None:
        add(stats / "rx_errors", 5)
        add(stats / "rx_bytes", 2_000_000)
        add(ib / "symbol_error", 3)
        add(ib / "link_downed", 1)
        add(ib / "port_xmit_data", 250_000)  # 4-octet words: 1 MB

    timer = threading.Timer(0.1, bump)
    timer.start()
    try:
        assert run(["doctor", "--sys-root", str(root), "--sample", "0.6", "--json"]) == 1
    finally:
        timer.cancel()
    doc = json.loads(capsys.readouterr().out)
    ens = {n["name"]: n for n in doc["interfaces"]}["ens1f0"]
    assert ens["errors_new"] == 5 and ens["drops_new"] == 0 and ens["sample_s"] >= 0.6
    assert ens["rx_bits_per_s"] == pytest.approx(16_000_000 / ens["sample_s"], rel=0.01)
    rising = [f for f in doc["findings"] if f["rule"] == "nic-errors-rising"]
    assert rising and rising[0]["evidence"] == [f"ens1f0: 5 new errors in {ens['sample_s']} s"]
    port = {(p["device"], p["port"]): p for p in doc["rdma_ports"]}[("mlx5_0", 1)]
    assert (port["errors_new"], port["flaps_new"], port["ack_timeouts_new"]) == (3, 1, 0)
    assert port["tx_bits_per_s"] == pytest.approx(8_000_000 / port["sample_s"], rel=0.01)
    assert {"rdma-errors-rising", "rdma-link-flapping-now"} <= {f["rule"] for f in doc["findings"]}
    assert "rdma-ack-timeouts-rising" not in {f["rule"] for f in doc["findings"]}


def test_without_sampling_nothing_claims_to_be_rising(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["doctor", "--sys-root", str(TREE), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    rows = doc["interfaces"] + doc["rdma_ports"]
    assert all(r["errors_new"] is None and r["rx_bits_per_s"] is None for r in rows)
    rising = {"nic-errors-rising", "nic-drops-rising", "rdma-errors-rising", "rdma-link-flapping-now",
              "rdma-ack-timeouts-rising"}  # fmt: skip
    assert not rising & {f["rule"] for f in doc["findings"]}
    assert run(["doctor", "--sys-root", str(TREE), "--sample", "-1"]) == 2


def test_a_counter_that_went_backwards_is_no_change() -> None:
    from dataclasses import replace

    (nic,) = [n for n in read_interfaces(TREE) if n.name == "ens1f0"]
    later = replace(nic, stats={**nic.stats, "rx_errors": 0, "rx_dropped": 2000})
    facts = nic_facts(later, None, nic, 2.0)
    assert (facts["errors_new"], facts["drops_new"]) == (0, 2000 - nic.stats["rx_dropped"])
    assert "nic-drops-rising" in {f.rule for f in diagnose_host([facts], [])}


@pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2 for the cross-check")
def test_live_loopback_rate_covers_the_bytes_sent(capsys: pytest.CaptureFixture[str]) -> None:
    """Send a known number of bytes over loopback during the window: lo's rate accounts for them."""
    import socket
    import threading

    sent = 0
    stop = threading.Event()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(5)

    def sink() -> None:
        conn, _ = server.accept()
        conn.settimeout(5)
        with conn:
            while conn.recv(1 << 16):
                pass

    def source() -> None:
        nonlocal sent
        with socket.create_connection(server.getsockname(), timeout=5) as c:
            chunk = b"x" * (1 << 16)
            time.sleep(0.2)  # inside the window
            while sent < 50_000_000 and not stop.is_set():
                sent += c.send(chunk)

    threads = [threading.Thread(target=sink), threading.Thread(target=source)]
    for t in threads:
        t.start()
    try:
        assert run(["doctor", "--sample", "1.5", "--json"]) in (0, 1)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        server.close()
    lo = {n["name"]: n for n in json.loads(capsys.readouterr().out)["interfaces"]}["lo"]
    # payload only; headers add a little, so the measured bytes are at least what was sent
    assert lo["rx_bits_per_s"] * lo["sample_s"] >= sent * 8 * 0.99


def test_doctor_symptom_exit_status_follows_the_walk(capsys: pytest.CaptureFixture[str]) -> None:
    """The degraded tree's findings are unrelated to a slow inference server: its walk finds
    nothing, so the exit status is 0, the findings are still shown, and a line says why."""
    argv = ["doctor", "--sys-root", str(TREE), "--symptom", "inference-slow"]
    assert run([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["walk"]["stopped_at"] is None
    assert any(f["severity"] == "critical" for f in doc["findings"])  # shown, not hidden
    assert doc["walk"]["exit_note"].startswith("exit status 0 follows the symptom walk")
    assert run(argv) == 0
    out = capsys.readouterr().out
    assert "exit status 0 follows the symptom walk: it found nothing; the " in out
    assert "CRITICAL" in out
    assert run([*argv, "--markdown"]) == 0
    assert "exit status 0 follows the symptom walk" in capsys.readouterr().out
    # a walk that stops still exits 1, and says so
    assert run(["doctor", "--sys-root", str(TREE), "--symptom", "nccl-timeout", "--json"]) == 1
    note = json.loads(capsys.readouterr().out)["walk"]["exit_note"]
    assert note == "exit status 1 follows the symptom walk: it stopped at 'link state'"
    # without --symptom every finding at warning or worse sets it
    assert run(["doctor", "--sys-root", str(TREE), "--json"]) == 1
