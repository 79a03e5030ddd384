"""`topo` and `simulate` on the command line: JSON, the round trip, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabriclens.cli.app import run


def test_topo_json_feeds_simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(["topo", "--gpus", "256", "--json"]) == 0  # one scalable unit: 32 servers
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["leaves"] == 8 and doc["summary"]["tiers"] == 2
    path = tmp_path / "f.json"
    path.write_text(json.dumps(doc))
    assert run(["simulate", "all_reduce", "1GB", "--fabric", str(path), "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert sim["collective"]["ranks"] == 256 and sim["collective"]["ratio_to_model"] > 0.98
    assert {r["change"] for r in sim["effects"]} >= {"adaptive routing", "3:1 oversubscription"}
    assert sim["scenario"]["flows"] == 1
    assert any("per connection" in r["change"] for r in sim["effects"])


def test_more_flows_per_connection_spread_a_scattered_ring(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", "all_reduce", "1GB", "--gpus", "1024", "--placement", "random"]
    shares = []
    for flows in ("1", "16"):
        assert run([*argv, "--flows", flows, "--no-effects", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["scenario"]["flows"] == int(flows)
        assert doc["collective"]["flows"] == 128 * 8 * int(flows)
        shares.append(doc["collective"]["slowest_flow_share"])
    assert shares[0] < 0.5 < shares[1]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["topo", "--gpus", "1024", "--switch", "qm9700", "--topology", "rail-only"],
            "rail-optimized",
        ),
        (["topo", "--gpus", "64", "--oversubscription", "0.5"], "below 1"),
        (["topo", "--gpus", "64", "--switch", "tomahawk9"], "unknown switch"),
        (["topo", "--gpus", "63"], "multiple"),
        (["simulate", "all_reduce", "1GB", "--fabric", "/nonexistent.json"], "cannot read"),
        (["simulate", "all_reduce", "1GB", "--gpus", "64", "--fail-spine", "5"], "spine"),
        (["simulate", "all_reduce", "1GB", "--gpus", "64", "--flows", "0"], "flows"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and words in err and " — " in err


def test_plan_with_a_fabric_file_uses_the_simulated_network(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plan = ["plan", "llama-3.1-70b", "--gpus", "1024", "--json"]
    assert run([*plan, "--network", "ndr-ib"]) == 0
    flat = json.loads(capsys.readouterr().out)
    assert (
        run(
            [
                "topo",
                "--gpus",
                "1024",
                "--topology",
                "leaf-spine",
                "--oversubscription",
                "3",
                "--json",
            ]
        )
        == 0
    )
    path = tmp_path / "f.json"
    path.write_text(capsys.readouterr().out)
    assert run([*plan, "--fabric", str(path)]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert sim["step"]["time_s"] > flat["step"]["time_s"]
    assert any("simulated fabric" in a for a in sim["assumptions"])


def test_topo_uplink_rate_reaches_simulate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["topo", "--servers", "128", "--nic-rate", "200G", "--switch", "tomahawk4"]
    assert run([*argv, "--uplink-rate", "400G", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["design"]["uplink_rate_bits_per_s"] == 400e9
    assert doc["summary"]["leaf_ports_down_up"] == [64, 32]
    path = tmp_path / "fabric.json"
    path.write_text(json.dumps(doc))
    assert (
        run(["simulate", "all_reduce", "1GB", "--fabric", str(path), "--no-effects", "--json"]) == 0
    )
    capsys.readouterr()
    # a file from before the field still reads
    del doc["design"]["uplink_rate_bits_per_s"]
    path.write_text(json.dumps(doc))
    assert (
        run(["simulate", "all_reduce", "1GB", "--fabric", str(path), "--no-effects", "--json"]) == 0
    )
    capsys.readouterr()
    assert run([*argv, "--uplink-rate", "300G"]) == 2
    err = capsys.readouterr().err
    assert "not a multiple" in err and err.count("\n") == 1


def test_simulate_shows_what_fat_uplinks_change(capsys: pytest.CaptureFixture[str]) -> None:
    """Where the switch offers ports at twice the NIC rate (Tomahawk 4 under 200G NICs), the
    effects table tries MegaScale's split; scattered servers under ECMP collide less with it."""
    argv = ["simulate", "all_reduce", "1GB", "--gpus", "1024", "--switch", "tomahawk4",
            "--nic-rate", "200G", "--placement", "random", "--json"]  # fmt: skip
    assert run(argv) == 0
    rows = {r["change"]: r for r in json.loads(capsys.readouterr().out)["effects"]}
    assert rows["uplinks at 2x the NIC rate"]["vs_base"] < 0.9
    assert run([*argv, "--uplink-rate", "400G"]) == 0
    rows = {r["change"]: r for r in json.loads(capsys.readouterr().out)["effects"]}
    assert rows["uplinks at the NIC rate"]["vs_base"] > 1.1
