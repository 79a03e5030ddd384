"""`fabriclens simulate`: what a designed fabric does to a collective (flow-level)."""

from pathlib import Path
from typing import Annotated

import typer

from fabriclens.cli._output import emit


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
        str,
        typer.Argument(
            help="all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv"
        ),
    ],
    size: Annotated[str, typer.Argument(help="Buffer size (nccl-tests convention), e.g. 1GB")],
    fabric: Annotated[
        Path | None,
        typer.Option(help="A `fabriclens topo --json` file [default: design from the flags below]"),
    ] = None,
    gpus: Annotated[
        int | None, typer.Option(help="GPUs of the fabric to design (without --fabric)")
    ] = None,
    switch: Annotated[str, typer.Option(help="Switch (without --fabric)")] = "qm9700",
    topology: Annotated[str, typer.Option(help="Topology (without --fabric)")] = "rail-optimized",
    oversubscription: Annotated[
        float, typer.Option(help="Leaf down:up ratio (without --fabric)")
    ] = 1.0,
    nic_rate: Annotated[str | None, typer.Option(help="NIC rate (without --fabric)")] = None,
    network: Annotated[str | None, typer.Option(help="Catalog network of the NICs")] = None,
    gpu: Annotated[str, typer.Option(help="GPU SKU: its intra-node and host links")] = "h100-sxm",
    ranks: Annotated[
        int | None, typer.Option(help="Ranks in the collective [default: every GPU]")
    ] = None,
    pattern: Annotated[
        str | None,
        typer.Option(help="ring | tree | hierarchical | all_to_all | pipeline [default: by op]"),
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
    fail_link: Annotated[
        list[str] | None, typer.Option(help="LEAF:PORT leaf uplink that failed (repeatable)")
    ] = None,
    fail_spine: Annotated[
        list[int] | None, typer.Option(help="Spine index that failed (repeatable)")
    ] = None,
    slow_node: Annotated[
        list[str] | None, typer.Option(help="SERVER:FACTOR, its NICs at FACTOR of their rate")
    ] = None,
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
    from fabriclens.model.collectives import OPS
    from fabriclens.plan.planner import resolve_fabric
    from fabriclens.report.fabric_doc import simulate_doc
    from fabriclens.units import parse_size

    name = op.strip().lower().replace("-", "_")
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
        n = resolve_counts(None, gpus if gpus is not None else 64, 8)
        design = design_fabric(n, 8, rate, sw, topology, oversubscription)
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
        routing=routing, placement=placement, rail_aware=rail_aware, seed=seed,
        failed_links=tuple((a, int(b)) for a, b in _pairs(fail_link, "--fail-link", int)),
        failed_spines=tuple(fail_spine or ()), slow_servers=_pairs(slow_node, "--slow-node", float),
    )  # fmt: skip
    result = simulate_collective(design, model_fabric, name, size_bytes, n_ranks, scenario, pattern)
    rows = None
    if show_effects:

        def redesign(**changes: object) -> object:
            kw: dict[str, object] = dict(
                topology=design.topology, oversubscription=design.oversubscription,
                core_oversubscription=design.core_oversubscription,
                gpus_per_server=design.gpus_per_server,
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
