"""`fabriclens fleet`: baselines over nodes' results; the node outside them named with evidence."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from fabriclens.cli.app import run
from fabriclens.measure.fleet import baselines

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def doctor_docs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Five nodes' `doctor --json`: node5 is the degraded RoCE fixture; the others are the same
    report with that node's faults repaired (the 400G its NIC supports rather than the 100G it
    negotiated, no errors, no findings)."""
    run(["doctor", "--json", "--sys-root", str(FIXTURES / "sysfs-roce-degraded")])
    bad = json.loads(capsys.readouterr().out)
    good = copy.deepcopy(bad)
    for i in good["interfaces"]:
        if i["physical"]:
            i.update(speed_mbps=400_000, errors=0, crc_errors=0, drops=0)
    for p in good["rdma_ports"]:
        p.update(
            port_active=True, symbol_errors=0, link_downed=0, ack_timeouts=0, out_of_sequence=0
        )
    good["findings"] = []
    for n in range(1, 5):
        (tmp_path / f"node{n}.json").write_text(json.dumps(good))
    (tmp_path / "node5.json").write_text(json.dumps(bad))
    return tmp_path


def test_the_degraded_node_is_named_with_evidence(
    doctor_docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["fleet", *map(str, sorted(doctor_docs.glob("*.json"))), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == [f"node{n}" for n in range(1, 6)]
    assert [s["node"] for s in doc["suspect_nodes"]] == ["node5"]
    evidence = " ".join(doc["suspect_nodes"][0]["evidence"])
    assert "ens1f0 speed Mb/s 100,000 against a fleet median of 400,000" in evidence
    assert "mlx5_1/1 active 0" in evidence and "crc_errors 12" in evidence
    assert run(["fleet", *map(str, sorted(doctor_docs.glob("node[1-4].json")))]) == 0
    assert "No node falls outside" in capsys.readouterr().out


def test_bench_net_and_p2p_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for n, mbit in enumerate((941, 940, 939, 942, 610), 1):
        (tmp_path / f"n{n}.json").write_text(json.dumps({"host": "peer", "best_goodput_bits_per_s": mbit * 1e6,
                                                         "rtt": {"p50_s": 0.0002}}))  # fmt: skip
    (tmp_path / "p2p.json").write_text(json.dumps({"node_median_GBps": {"n1": 0.046, "n2": 0.045, "n3": 0.046,
                                                                        "n4": 0.045, "n5": 0.025}}))  # fmt: skip
    assert run(["fleet", *map(str, sorted(tmp_path.glob("*.json"))), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["suspect_nodes"][0]["node"] == "n5" and doc["suspect_nodes"][0]["metrics"] == 2
    assert doc["metrics"]["tcp goodput Mbit/s"]["median"] == 940e0


def test_only_the_bad_direction_counts() -> None:
    nodes = {f"n{i}": {"bw": (100.0, True), "errors": (5.0, False)} for i in range(5)}
    nodes["n0"] = {"bw": (300.0, True), "errors": (0.0, False)}  # faster, fewer errors: no finding
    nodes["n1"] = {
        "bw": (100.0, True),
        "errors": (6.0, False),
    }  # one error more than most: within 1
    nodes["n2"] = {"bw": (100.0, True), "errors": (15.0, False)}
    _, outliers = baselines(nodes)
    assert [(o["node"], o["metric"]) for o in outliers] == [("n2", "errors")]


def test_a_count_where_nearly_every_node_has_zero_stands_out() -> None:
    # median 0 and MAD 0: no deviation to measure, yet 1 against 0, 0, 0, 0 is the news
    nodes = {f"n{i}": {"critical findings": (0.0, False)} for i in range(8)}
    nodes["n3"] = {"critical findings": (1.0, False)}
    _, outliers = baselines(nodes)
    assert [o["node"] for o in outliers] == ["n3"]
    assert outliers[0]["evidence"] == "n3: critical findings 1 where 7 of the other 7 nodes read 0"
    # zero on only half the nodes: a count of 1 is ordinary there
    half = {f"n{i}": {"drops": (float(i % 2), False)} for i in range(8)}
    assert baselines(half)[1] == []


def test_the_node_with_a_few_counts_among_clean_nodes_is_named(
    doctor_docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One critical finding, 2 link-downs and 3 ACK timeouts where four nodes read zero."""
    clean = json.loads((doctor_docs / "node1.json").read_text())
    odd = copy.deepcopy(clean)
    odd["rdma_ports"][0].update(link_downed=2, ack_timeouts=3)
    odd["findings"] = [{"severity": "critical", "id": "x", "symptom": "s", "cause": "c"}]
    (doctor_docs / "node5.json").write_text(json.dumps(odd))
    assert run(["fleet", *map(str, sorted(doctor_docs.glob("*.json"))), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [s["node"] for s in doc["suspect_nodes"]] == ["node5"]
    assert doc["suspect_nodes"][0]["metrics"] == 3
    port = f"{odd['rdma_ports'][0]['device']}/{odd['rdma_ports'][0]['port']}"
    evidence = doc["suspect_nodes"][0]["evidence"]
    assert f"node5: {port} link_downed 2 where 4 of the other 4 nodes read 0" in evidence
    assert f"node5: {port} ack_timeouts 3 where 4 of the other 4 nodes read 0" in evidence
    assert "node5: critical findings 1 where 4 of the other 4 nodes read 0" in evidence


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not valid JSON"),
        ("[1]", "not a fabriclens JSON"),
        ('{"x": 1}', "no metric"),
    ],
)
def test_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    f = tmp_path / "a.json"
    f.write_text(content)
    assert run(["fleet", str(f)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_too_few_nodes(doctor_docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["fleet", str(doctor_docs / "node1.json"), str(doctor_docs / "node2.json")]) == 2
    assert "at least 3" in capsys.readouterr().err


def test_a_value_no_run_writes_is_left_out_and_named(
    doctor_docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every fleet metric is a speed, bandwidth, time or count: a negative value (an edited
    file; NaN and Infinity are refused as JSON before this) is left out and named, never taken
    as a node's reading, where -1e308 Mb/s once printed as a 300-digit outlier."""
    doc = json.loads((doctor_docs / "node1.json").read_text())
    nic = next(i for i in doc["interfaces"] if i["physical"])
    nic.update(speed_mbps=-1e308, errors=-3)
    (doctor_docs / "node1.json").write_text(json.dumps(doc))
    run(["fleet", *map(str, sorted(doctor_docs.glob("*.json"))), "--json"])
    out = json.loads(capsys.readouterr().out)
    names = " ".join(out["left_out"])
    assert "node1: ens1f0 speed Mb/s reads -1e+308" in names and "ens1f0 errors reads -3" in names
    assert [s["node"] for s in out["suspect_nodes"]] == ["node5"]
    run(["fleet", *map(str, sorted(doctor_docs.glob("*.json")))])
    assert "2 value(s) left out" in capsys.readouterr().out
