"""`fabriclens collect` and `doctor --from`: captured output gives the live doctor's findings."""

from __future__ import annotations

import json
import tarfile
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from fabriclens.cli.app import run
from fabriclens.diagnose.captured import Capture, diagnose_captures
from fabriclens.parse.detect import detect_kind
from fabriclens.probes.collect import collect

PASTED = FIXTURES / "pasted"

# file -> the rule ids doctor --from must find (tests/fixtures/pasted/SOURCES.md: thread, diagnosis)
EXPECTED = {
    "topo-no-nvlink-deepep-60.txt": {"gpus-without-nvlink"},
    "lspci-acsctl-nccl-523.txt": {"pcie-acs-enabled"},
    "lspci-lnksta-jan-183.txt": {"pcie-speed-downgraded"},
    "lspci-lnksta-x1-rpi-480.txt": {"pcie-link-downgraded", "pcie-speed-downgraded"},
    "dmesg-fallen-off-bus-nvsentinel-155.txt": {"gpu-xid-critical"},
    "dmesg-xid63-ml-engineering.txt": {"gpu-xid"},
    "dmesg-mlx5-link-gpud-1209.txt": set(),
    "ethtool-S-pause-xsos-112.txt": {"nic-pause-without-ecn"},
    "ibv_devinfo-softroce-rxe-46.txt": set(),
}


def _from(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, dict]:
    status = run(["doctor", "--from", *paths, "--json"])
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_pasted_output_gives_the_threads_finding(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    status, doc = _from(capsys, str(PASTED / name))
    assert {f["rule"] for f in doc["findings"]} == EXPECTED[name]
    assert doc["inputs"][0]["read"] is True
    assert status == (1 if any(f["severity"] != "info" for f in doc["findings"]) else 0)


def test_every_pasted_fixture_is_listed_with_its_source() -> None:
    listed = (PASTED / "SOURCES.md").read_text()
    for path in PASTED.glob("*.txt"):
        assert path.name in listed and path.name in EXPECTED


def test_xid_findings_carry_the_catalogue_meaning(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = _from(capsys, str(PASTED / "dmesg-fallen-off-bus-nvsentinel-155.txt"))
    (f,) = doc["findings"]
    assert "fallen off the bus" in f["cause"] and "drain the node" in f["fix"]
    assert doc["xid_events"][0]["code"] == 79 and "xid-errors" in f["source"]


def test_kind_comes_from_content_not_name(tmp_path: Path) -> None:
    odd = tmp_path / "notes.log"
    odd.write_text((FIXTURES / "ethtool-400g-at-100g.txt").read_text())
    assert detect_kind(odd.read_text()) == "ethtool"
    assert detect_kind((FIXTURES / "captured" / "ip-s-link.txt").read_text()) == "ip-s-link"
    assert detect_kind((FIXTURES / "captured" / "ip-j-link.json").read_text()) == "ip-j-link"
    assert detect_kind((FIXTURES / "captured" / "sysctl.txt").read_text()) == "sysctl"
    assert detect_kind((FIXTURES / "samples" / "nccl-debug-ib.log").read_text()) == "nccl-log"
    assert detect_kind((FIXTURES / "nccl-tests-h200-8gpu.txt").read_text()) == "nccl-tests"
    assert detect_kind((FIXTURES / "iperf3-client-P2.json").read_text()) == "iperf3-json"


def test_unknown_text_is_unread_not_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("hello, this is a shopping list\n"))
    status, doc = _from(capsys, "-")
    assert status == 0 and doc["inputs"] == [
        {"source": "<stdin>", "kind": "unknown", "tool": "", "read": False, "command": ""}
    ]
    assert any(c["check"].startswith("GPU Xid") for c in doc["not_checked"])


def test_missing_path_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["doctor", "--from", "/nonexistent/bundle.tar.gz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0].lower()


# a constructed `lspci -vvv` in the tool's format (addresses and names invented): a PCIe switch
# port with ACS redirect on above a GPU and a NIC, the GPU on NUMA node 1 with the NIC on node 0,
# and the NIC trained at x8 of x16
LSPCI = """\
0000:17:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch (rev ca)
\tBus: primary=16, secondary=18, subordinate=1a, sec-latency=0
\tNUMA node: 0
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
0000:18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
\tNUMA node: 1
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)
0000:19:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]
\tNUMA node: 0
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)
\tKernel driver in use: mlx5_core
"""


def test_lspci_acs_above_gpu_numa_and_width() -> None:
    doc, findings = diagnose_captures([Capture("lspci", LSPCI)])
    rules = {f.rule for f in findings}
    assert rules == {"pcie-acs-enabled", "gpu-nic-numa-mismatch", "pcie-link-downgraded"}
    assert "GPU 0000:18:00.0" in doc["acs_bridges"][0]["below"]
    assert doc["gpu_numa"][0]["numa_node"] == 1


def test_roce_port_off_the_fabrics_mtu() -> None:
    text = "".join(
        f"hca_id: mlx5_{i}\n\tport:\t1\n\t\tstate:\tPORT_ACTIVE (4)\n\t\tmax_mtu:\t4096 (5)\n"
        f"\t\tactive_mtu:\t{mtu} (3)\n\t\tlink_layer:\tEthernet\n"
        for i, mtu in enumerate((4096, 4096, 1024))
    )
    _, findings = diagnose_captures([Capture("ibv_devinfo", text)])
    off = [f for f in findings if f.rule == "roce-mtu-mismatch"]
    assert (
        len(off) == 1 and "mlx5_2" in off[0].evidence[0] and "fabric's 4096" in off[0].evidence[0]
    )


def test_collect_bundle_gives_the_live_doctors_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundle collected on this machine: same finding rule ids and interface facts as live doctor."""
    out = tmp_path / "b.tar.gz"
    started = time.monotonic()
    assert run(["collect", "-o", str(out), "--json"]) == 0
    elapsed = time.monotonic() - started
    manifest = json.loads(capsys.readouterr().out)
    assert elapsed <= 15 and manifest["elapsed_s"] <= 15
    assert {"command", "status", "duration_s", "file"} <= set(manifest["commands"][0])
    with tarfile.open(out) as tar:
        assert any(n.endswith("manifest.json") for n in tar.getnames())
    run(["doctor", "--json"])
    live = json.loads(capsys.readouterr().out)
    _, captured = _from(capsys, str(out))
    assert sorted(f["rule"] for f in captured["findings"]) == sorted(
        f["rule"] for f in live["findings"]
    )
    stable = (
        "name",
        "physical",
        "nic_state",
        "speed_mbps",
        "max_speed_mbps",
        "mtu",
        "duplex",
        "driver",
    )
    assert [{k: n[k] for k in stable} for n in captured["interfaces"]] == [
        {k: n[k] for k in stable} for n in live["interfaces"]
    ]


def test_bundle_from_fake_sysfs_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """collect's sysfs copy of a fake tree gives what live doctor reads from that tree."""

    def nothing(argv: list[str], timeout_s: float = 0) -> object:
        from fabriclens.probes._run import CommandResult

        return CommandResult(tuple(argv), -1, "", f"{argv[0]}: not found")

    root = FIXTURES / "sysfs-roce-degraded"
    collect(tmp_path / "b", root=root, runner=nothing)  # type: ignore[arg-type]
    _, captured = _from(capsys, str(tmp_path / "b"))
    run(["doctor", "--sys-root", str(root), "--json"])
    live = json.loads(capsys.readouterr().out)
    rules = sorted(
        f["rule"] for f in captured["findings"] if not f["rule"].startswith("not-checked")
    )
    assert rules == sorted(
        f["rule"] for f in live["findings"] if not f["rule"].startswith("not-checked")
    )
    assert "rdma-out-of-sequence" in rules
    assert captured["rdma_ports"] == live["rdma_ports"]


def test_redact_is_consistent_across_files(tmp_path: Path) -> None:
    from fabriclens.parse.redact import Redactor

    r = Redactor(("node7",))
    a = r.redact(
        "node7 10.0.0.5 aa:bb:cc:dd:ee:ff fe80::1:2:3:4\n    Serial Number : 1650022001234\n"
    )
    b = r.redact("peer of node7 is 10.0.0.5, mac aa:bb:cc:dd:ee:ff, 0000:3b:00.0 at 12:30:45")
    assert "node7" not in a + b and "10.0.0.5" not in a + b and "1650022001234" not in a
    assert a.split()[0] == b.split()[2] == "host-1" and "ip4-1" in a and "ip4-1" in b
    assert "0000:3b:00.0" in b and "12:30:45" in b  # PCI addresses and times are kept
