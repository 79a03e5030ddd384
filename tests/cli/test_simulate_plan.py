"""`simulate --plan`: a plan's network collectives on a designed fabric, and its step time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabriclens.cli.app import run


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Llama-3.1-8B on 512 H100s over NDR InfiniBand: ZeRO-1's reduce-scatter and all-gather
    cross the network (64 servers, two scalable units)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run(["plan", "llama-3.1-8b", "--gpus", "512", "--network", "ndr-ib", "--json"]) == 0
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(out.getvalue())
    return path


def _sim(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert run(["simulate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ideal_fabric_keeps_the_plan(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Non-blocking, servers in fabric order: the simulator equals the flat model within 2%
    (the simulator's own property), so the step is the plan's."""
    doc = _sim(capsys, "--plan", str(plan_file))
    net = [r for r in doc["comm"] if r["simulated"]]
    assert {r["op"] for r in net} == {"reduce_scatter", "all_gather"}
    assert all(r["factor"] == pytest.approx(1.0, abs=0.02) for r in net)
    assert doc["sim_step_time_s"] == pytest.approx(doc["step_time_s"], rel=0.02)


def test_oversubscribed_scattered_job_is_slower(
    plan_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """3:1 leaves and servers scattered by a scheduler: the rings cross the spines, the
    collectives slow down, and what the plan hid behind compute no longer fits."""
    doc = _sim(capsys, "--plan", str(plan_file), "--oversubscription", "3", "--placement", "random")
    net = [r for r in doc["comm"] if r["simulated"]]
    assert all(r["factor"] > 1.5 for r in net)
    assert all(r["sim_exposed_s"] >= r["exposed_s"] for r in net)
    assert doc["sim_step_time_s"] > doc["step_time_s"] * 1.1


def test_bad_plan_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"comm": 3}')
    assert run(["simulate", "--plan", str(bad)]) == 2
    assert "is not one plan's JSON" in capsys.readouterr().err
    one_node = tmp_path / "one.json"
    with_stdout = json.dumps({"comm": [], "gpus": 8, "gpus_per_node": 8, "nics_per_node": 8,
                              "network": None, "step": {"time_s": 1.0}, "gpu": "h100-sxm"})  # fmt: skip
    one_node.write_text(with_stdout)
    assert run(["simulate", "--plan", str(one_node)]) == 2
    assert "nothing crosses a network" in capsys.readouterr().err
    assert run(["simulate", "all_reduce", "1GB", "--plan", str(one_node)]) == 2
    assert "drop OP and SIZE" in capsys.readouterr().err
    assert run(["simulate"]) == 2
    assert "needs OP and SIZE, or --plan" in capsys.readouterr().err
