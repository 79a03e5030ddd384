"""`fabriclens simulate`: what a designed fabric does to a collective (flow-level)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fabriclens.cli._output import emit

if TYPE_CHECKING:
    from fabriclens.fabric.simulate import Scenario

# without --gpus or --fabric: one DGX SuperPOD scalable unit (32 servers of 8), the smallest
# fabric with spines (64 GPUs fit one 64-port switch, where routing changes nothing)
DEFAULT_GPUS = 256


def _pairs(values: list[str] | None, flag: str, cast: type) -> tuple[tuple[int, float], ...]:
    from fabriclens.errors import InputError

    out = []
    for v in values or []:
        a, sep, b = v.partition(":")
        try:
            out.append((int(a), cast(b)))
        except ValueError:
            raise InputError(f"{flag} {v!r} is not A:B", f"write it like {flag} 0:1") from None
        if not sep:
            raise InputError(f"{flag} {v!r} is not A:B", f"write it like {flag} 0:1")
    return tuple(out)


def simulate(
    op: Annotated[
        str | None,
        typer.Argument(
            help="all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv | reduce | gather | scatter"
            " (not with --plan)"
        ),
    ] = None,
    size: Annotated[
        str | None,
        typer.Argument(help="Buffer size (nccl-tests convention), e.g. 1GB (not with --plan)"),
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option(
            help="A `fabriclens plan --json` file: simulate each of its collectives that cross "
            "the network, and the step time with them"
        ),
    ] = None,
    fabric: Annotated[
        Path | None,
        typer.Option(help="A `fabriclens topo --json` file [default: design from the flags below]"),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option(
            help="GPUs of the fabric to design (without --fabric) [default: 256, one scalable unit "
            "of 32 servers: the smallest two-tier fabric, where routing and oversubscription show]"
        ),
    ] = None,
    switch: Annotated[str, typer.Option(help="Switch (without --fabric)")] = "qm9700",
    topology: Annotated[str, typer.Option(help="Topology (without --fabric)")] = "rail-optimized",
    oversubscription: Annotated[
        float, typer.Option(help="Leaf down:up ratio (without --fabric)")
    ] = 1.0,
    nic_rate: Annotated[str | None, typer.Option(help="NIC rate (without --fabric)")] = None,
    uplink_rate: Annotated[
        str | None,
        typer.Option(
            help="Switch-to-switch link rate, a multiple of the NIC rate (without --fabric)"
        ),
    ] = None,
    network: Annotated[str | None, typer.Option(help="Catalog network of the NICs")] = None,
    gpu: Annotated[str, typer.Option(help="GPU SKU: its intra-node and host links")] = "h100-sxm",
    ranks: Annotated[
        int | None, typer.Option(help="Ranks in the collective [default: every GPU]")
    ] = None,
    pattern: Annotated[
        str | None,
        typer.Option(
            help="ring | tree | hierarchical | all_to_all | pipeline | root [default: by op]"
        ),
    ] = None,
    routing: Annotated[
        str,
        typer.Option(help="ecmp | static (InfiniBand D-mod-k tables) | adaptive (ideal spraying)"),
    ] = "ecmp",
    placement: Annotated[str, typer.Option(help="topology | random")] = "topology",
    rail_aware: Annotated[
        bool, typer.Option("--rail-aware", help="PXN: cross-rail data moves over NVLink first")
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of ECMP hashing and random placement")] = 0,
    flows: Annotated[
        int,
        typer.Option(
            help="Flows per NIC-to-NIC connection that ECMP hashes apart: NCCL channels per NIC x "
            "NCCL_IB_QPS_PER_CONNECTION (Llama 3's cluster: 16)"
        ),
    ] = 1,
    fail_link: Annotated[
        list[str] | None, typer.Option(help="LEAF:PORT leaf uplink that failed (repeatable)")
    ] = None,
    fail_spine: Annotated[
        list[int] | None, typer.Option(help="Spine index that failed (repeatable)")
    ] = None,
    slow_node: Annotated[
        list[str] | None, typer.Option(help="SERVER:FACTOR, its NICs at FACTOR of their rate")
    ] = None,
    nic_spread: Annotated[
        str,
        typer.Option(
            help="NICs that differ: each at 1 - SPREAD x |z| of its rate (z normal, --seed), "
            "e.g. 5%; a ring runs at its slowest"
        ),
    ] = "0",
    show_effects: Annotated[
        bool, typer.Option("--effects/--no-effects", help="Also simulate one change at a time")
    ] = True,
    heatmap: Annotated[
        Path | None, typer.Option(help="Write a link-utilisation heat map (PNG or SVG)")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Simulate one collective on a designed fabric: max-min fair flow rates, the busiest links,
    and the ratio to the analytical model."""
    from fabriclens.catalog import find_gpu, find_network, find_switch
    from fabriclens.cli._fabric_args import link_rate, read_design, resolve_counts
    from fabriclens.errors import InputError
    from fabriclens.fabric.simulate import Scenario, effects, simulate_collective
    from fabriclens.fabric.topology import design_fabric
    from fabriclens.model.collectives import OPS, op_name
    from fabriclens.plan.planner import resolve_fabric
    from fabriclens.report.fabric_doc import simulate_doc
    from fabriclens.units import parse_fraction, parse_rate, parse_size

    spread = parse_fraction(nic_spread)
    if plan is not None:
        if op is not None or size is not None:
            raise InputError("--plan simulates the plan's own collectives", "drop OP and SIZE")
        _simulate_plan(plan, fabric, switch, topology, oversubscription,
                       Scenario(routing=routing, placement=placement, rail_aware=rail_aware,
                                seed=seed, flows=flows, nic_spread=spread),
                       json_out)  # fmt: skip
        return
    if op is None or size is None:
        raise InputError(
            "simulate needs OP and SIZE, or --plan FILE", "e.g. simulate all_reduce 1GB"
        )
    name = op_name(op)
    if name not in OPS:
        raise InputError(f"unknown collective {op!r}", f"use one of {', '.join(OPS)}")
    size_bytes = parse_size(size)
    if size_bytes <= 0:
        raise InputError(f"size {size!r} is not positive", "give a size like 1GB")
    if heatmap is not None:
        from fabriclens.report.plots import require_matplotlib

        require_matplotlib()
    if fabric is not None:
        design, net_name = read_design(fabric)
        net = find_network(network or net_name or "ndr-ib")
    else:
        sw = find_switch(switch)
        rate, net = link_rate(nic_rate, network, sw.kind)
        n = resolve_counts(None, gpus if gpus is not None else DEFAULT_GPUS, 8)
        up = parse_rate(uplink_rate) if uplink_rate is not None else None
        design = design_fabric(
            n, 8, rate, sw, topology, oversubscription, uplink_rate_bits_per_s=up
        )
    sw_obj = find_switch(design.switch)
    n_ranks = ranks if ranks is not None else design.servers * design.gpus_per_server
    if n_ranks < 2:
        raise InputError(
            f"--ranks {n_ranks}: a collective needs at least 2", "give --ranks 2 or more"
        )
    model_fabric, _ = resolve_fabric(
        find_gpu(gpu), n_ranks, gpus_per_node=design.gpus_per_server, network_name=net.name,
        nics_per_node=design.nics_per_server,
    )  # fmt: skip
    scenario = Scenario(
        routing=routing, placement=placement, rail_aware=rail_aware, seed=seed, flows=flows,
        failed_links=tuple((a, int(b)) for a, b in _pairs(fail_link, "--fail-link", int)),
        failed_spines=tuple(fail_spine or ()), slow_servers=_pairs(slow_node, "--slow-node", float),
        nic_spread=spread,
    )  # fmt: skip
    result = simulate_collective(design, model_fabric, name, size_bytes, n_ranks, scenario, pattern)
    rows = None
    if show_effects:

        def redesign(**changes: object) -> object:
            kw: dict[str, object] = dict(
                topology=design.topology, oversubscription=design.oversubscription,
                core_oversubscription=design.core_oversubscription,
                gpus_per_server=design.gpus_per_server,
                uplink_rate_bits_per_s=design.uplink_rate_bits_per_s or None,
            )  # fmt: skip
            kw.update(changes)
            return design_fabric(design.servers, design.nics_per_server,
                                 design.link_rate_bits_per_s, sw_obj, **kw)  # type: ignore[arg-type]  # fmt: skip

        rows = effects(design, model_fabric, name, size_bytes, n_ranks, scenario, redesign)
    doc = simulate_doc(design, net.name, result, scenario, rows)
    if heatmap is not None:
        from fabriclens.report.fabric_plots import heat_map

        doc["plots"] = [str(heat_map(design, result, heatmap))]
    emit(doc, json_out, "fabric_text.simulate_renderables")


def _simulate_plan(path: Path, fabric: Path | None, switch: str, topology: str,
                   oversubscription: float, scenario: "Scenario", json_out: bool) -> None:  # fmt: skip
    """`simulate --plan`: a plan's network collectives on a designed fabric, and its step."""
    from fabriclens.catalog import find_gpu, find_switch
    from fabriclens.cli._fabric_args import link_rate, read_design
    from fabriclens.errors import InputError
    from fabriclens.fabric.simulate import simulate_ledger
    from fabriclens.fabric.topology import design_fabric
    from fabriclens.inputs import read_json
    from fabriclens.plan.planner import resolve_fabric

    fix = "give the output of `fabriclens plan ... --json` (one network)"
    doc = read_json(path, "plan file", fix)
    try:
        comm, gpus, gpn = doc["comm"], int(doc["gpus"]), int(doc["gpus_per_node"])
        nics, net_name, step = int(doc["nics_per_node"]), doc["network"], doc["step"]["time_s"]
        gpu = find_gpu(str(doc["gpu"]))
        entries = [c for c in comm if isinstance(c, dict)]
        for c in entries:
            float(c["size_bytes"]) + float(c["time_s"]) + float(c["exposed_s"]) + int(c["count"])
            str(c["op"]) + str(c["group"]) + str(c["link"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{path} is not one plan's JSON", fix) from None
    if not net_name or gpus <= gpn:
        raise InputError(f"{path} is a plan on one node: nothing crosses a network", fix)
    if fabric is not None:
        design, _ = read_design(fabric)
    else:
        sw = find_switch(switch)
        rate, _ = link_rate(None, str(net_name), sw.kind)
        design = design_fabric(gpus // gpn, nics, rate, sw, topology, oversubscription,
                               gpus_per_server=gpn)  # fmt: skip
    model_fabric, _ = resolve_fabric(gpu, gpus, gpus_per_node=gpn, network_name=str(net_name),
                                     nics_per_node=design.nics_per_server)  # fmt: skip
    rows = simulate_ledger(design, model_fabric, entries, gpus, scenario)
    delta = sum(r["sim_exposed_s"] - r["exposed_s"] for r in rows)
    out = {
        "plan": str(path),
        "network": net_name,
        "fabric": {"topology": design.topology, "servers": design.servers, "tiers": design.tiers,
                   "switch": design.switch, "oversubscription": design.oversubscription},
        "scenario": {"routing": scenario.routing, "placement": scenario.placement,
                     "rail_aware": scenario.rail_aware, "seed": scenario.seed,
                     "flows": scenario.flows},
        "comm": rows,
        "step_time_s": step,
        "sim_step_time_s": step + delta,
        "assumptions": [
            "each collective that crosses the network is simulated at its per-call size over all "
            f"{gpus} ranks of the job, and the plan's time for it is scaled by simulated / model "
            "time; collectives on NVLink/PCIe keep the plan's time",
            "what the plan hid behind compute stays hidden up to the same window; the rest of a "
            "slower collective is exposed and added to the step",
            "pipeline sends (send_recv) and broadcasts keep the plan's time: their flows are a few "
            "stage boundaries, not a job-wide pattern",
        ],
    }  # fmt: skip
    emit(out, json_out, "fabric_text.simulate_plan_renderables")
