"""A multi-node ring's steps and a tree's levels, and what one costs on a network where published
sweeps measure it (model/collectives.py net_step_floor and tree_level_s; catalog networks.toml
ring_step_s and tree_step_s, benchmarks/calibrate_steps.py)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from calibrate_steps import (
    GRIDS_US,
    MIN_ROWS,
    calibration_rows,
    fit_step_us,
    measured_networks,
)
from fabriclens.catalog import find_link, find_network
from fabriclens.model.collectives import Fabric, estimate_collective, ring_steps
from reference import all_collective_cases

KINDS = ("ring_step_s", "tree_step_s")


@pytest.mark.parametrize("kind", KINDS)
def test_some_step_is_measured(kind: str) -> None:
    """The measured entries exist: an empty list would make the tests below pass vacuously."""
    assert "aws-efa-p5" in measured_networks(kind)


@pytest.mark.parametrize(
    ("name", "kind"), [(name, kind) for kind in KINDS for name in measured_networks(kind)]
)
def test_a_measured_step_is_the_calibration_fit(name: str, kind: str) -> None:
    """A network's measured step is the grid value that fits its own multi-node calibration rows
    best (the other kind at its catalog value), from enough of them, and its source says it is
    measured."""
    assert len(calibration_rows(name)) >= MIN_ROWS
    net = find_network(name)
    assert getattr(net, kind.removesuffix("_s") + "_source").startswith("measured:")
    best, table = fit_step_us(name, kind)
    assert getattr(net, kind) == pytest.approx(best * 1e-6)
    # a fit, not the grid's edge: the misfit rises on both sides
    assert GRIDS_US[kind][0] < best < GRIDS_US[kind][-1]
    misfit = dict(table)
    assert misfit[best - 1] > misfit[best] < misfit[best + 1]


@pytest.mark.parametrize("step_us", [2.5, 8.0, 20.0])
@pytest.mark.parametrize("ranks", [16, 64, 256])
def test_every_ring_step_across_nodes_costs_the_measured_step(step_us: float, ranks: int) -> None:
    """A ring all_gather over nodes pays at least a network's measured step at each of its n - 1
    steps, the intra-node ones included; without a measured step, NCCL's constants alone."""
    net = replace(find_network("ndr-ib"), ring_step_s=step_us * 1e-6, ring_step_source="test")
    fabric = Fabric(find_link("nvlink4-nvswitch"), net, 8, 8, generation="hopper")
    est = estimate_collective("all_gather", 2**20, ranks, fabric, algorithm="ring")
    assert est.latency_s >= ring_steps("all_gather", ranks) * step_us * 1e-6
    plain = replace(fabric, network=find_network("ndr-ib"))
    assert estimate_collective("all_gather", 2**20, ranks, plain, algorithm="ring").latency_s < (
        ring_steps("all_gather", ranks) * 2.5e-6
    )
    # inside one node the network plays no part
    other = replace(fabric, network=replace(net, ring_step_s=2 * net.ring_step_s))
    one = estimate_collective("all_gather", 2**20, 8, fabric, algorithm="ring")
    assert (
        one.latency_s
        == estimate_collective("all_gather", 2**20, 8, other, algorithm="ring").latency_s
    )


def test_p5_all_gather_held_out_rows_follow_the_step_cost() -> None:
    """AWS p5's ring all_gather at 8-32 nodes (crazyguitar/aws-gpu-communication-benchmark
    data/nccl_all_gather.csv, reference cm375-cm389 held out): at a 0.25-2 MiB share per rank the
    busbw is set by the step's cost, and the model follows it within 15%, where NCCL's tuner
    constants alone put it 47-156% too fast."""
    held = [
        case
        for case in all_collective_cases()
        if case.row_id in {"cm375", "cm377", "cm382", "cm384", "cm388", "cm389"}
    ]
    assert len(held) == 6
    for case in held:
        assert case.split == "held_out"
        assert abs(case.error) <= 0.15, (case.row_id, case.error)


@pytest.mark.parametrize("level_us", [20.0, 60.0])
@pytest.mark.parametrize("nodes", [4, 16, 64])
def test_every_tree_level_pays_what_the_network_adds(level_us: float, nodes: int) -> None:
    """An all-reduce tree over nodes pays what a level adds on a network at each of its levels,
    up and down, on top of the NIC's latency, and Simple twice (NCCL's tuner adds a plugin's
    reported latency to each level, and again for Simple's flush); without it, NCCL's constants
    alone (far less on InfiniBand)."""
    base = find_network("ndr-ib")
    net = replace(base, tree_step_s=level_us * 1e-6, tree_step_source="test")
    fabric = Fabric(find_link("nvlink4-nvswitch"), net, 8, 8, generation="hopper")
    plain = replace(fabric, network=base)
    levels = 2 * (math.ceil(math.log2(nodes)) + 1)
    for size in (2**20, 16 * 2**30):  # LL128, then Simple
        est = estimate_collective("all_reduce", size, 8 * nodes, fabric, algorithm="tree")
        bare = estimate_collective("all_reduce", size, 8 * nodes, plain, algorithm="tree")
        assert est.algorithm == bare.algorithm == "tree" and est.protocol == bare.protocol
        times = 2 if est.protocol == "Simple" else 1
        added = est.latency_s - bare.latency_s
        assert added == pytest.approx(times * levels * level_us * 1e-6)
        assert bare.latency_s < levels * (15e-6 if times == 1 else 30e-6)
    assert estimate_collective(
        "all_reduce", 2**20, 8 * nodes, fabric, algorithm="tree"
    ).protocol == ("LL128")


def test_p5_all_reduce_held_out_rows_follow_the_tree_level() -> None:
    """AWS p5's all_reduce at 8-32 nodes below 1 GiB, where AWS's tuner runs a tree
    (crazyguitar/aws-gpu-communication-benchmark data/nccl_all_reduce.csv, reference cm356 and
    cm369-cm371 held out): with what a tree level adds on p5 each comes within 30% of its
    published busbw, where NCCL's constants alone left them 53-126% too fast."""
    held = {
        case.row_id: case
        for case in all_collective_cases()
        if case.row_id in {"cm356", "cm369", "cm370", "cm371"}
    }
    assert len(held) == 4
    for case in held.values():
        assert case.split == "held_out"
        assert abs(case.error) <= 0.3, (case.row_id, case.error)


def test_collective_says_when_a_measured_step_prices_the_ring(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fabriclens collective` names the measured step where it prices a ring or a tree, and only
    there."""
    from fabriclens.cli.app import run

    args = ["collective", "all_gather", "256MiB", "--ranks", "256", "--gpus-per-node", "8"]
    assert run([*args, "--network", "aws-efa-p5"]) == 0
    out = capsys.readouterr().out
    assert "every step of the ring at least 8 µs" in out and "measured:" in out
    assert run([*args, "--network", "ndr-ib"]) == 0
    assert "every step of the ring" not in capsys.readouterr().out
    tree = ["collective", "all_reduce", "64MiB", "--ranks", "256", "--gpus-per-node", "8"]
    assert run([*tree, "--network", "aws-efa-p5"]) == 0
    out = capsys.readouterr().out
    assert "every level of the tree adds 43 µs each way (LL128 here)" in out
    assert run([*tree, "--network", "ndr-ib"]) == 0
    assert "every level of the tree" not in capsys.readouterr().out


def test_a_user_step_needs_a_source_and_a_sign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user catalog's ring or tree step gets the built-in checks: without its source, or
    negative, one line naming the field and exit 2."""
    from fabriclens.cli.app import run

    base = '[[network]]\nname = "ndr-ib"\nbase = "ndr-ib"\n'
    for body, field in (
        ("ring_step_s = 9e-6\n", "ring_step_source"),
        ('ring_step_s = -1e-6\nring_step_source = "measured: ours"\n', "ring_step_s"),
        ("tree_step_s = 40e-6\n", "tree_step_source"),
        ('tree_step_s = -1e-6\ntree_step_source = "measured: ours"\n', "tree_step_s"),
    ):
        path = tmp_path / "catalog.toml"
        path.write_text(base + body)
        assert run(["catalog", "networks", "--catalog", str(path)]) == 2
        err = capsys.readouterr().err
        assert field in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
