"""`fabriclens collective`: predicted time, algbw and busbw of one collective."""

from typing import Annotated

import typer

from fabriclens.cli._output import emit


def collective(
    op: Annotated[
        str,
        typer.Argument(
            help="all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv | reduce | gather | scatter"
        ),
    ],
    size: Annotated[
        str, typer.Argument(help="Buffer size, e.g. 1GB, 256MiB, 64M (nccl-tests convention)")
    ],
    ranks: Annotated[int, typer.Option(help="Ranks (GPUs) in the collective")] = 8,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs per node [default: up to 8]")
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            help="GPU SKU; sets the default intra-node link [default: the GPU --intra-link joins, "
            "else h100-sxm]"
        ),
    ] = None,
    intra_link: Annotated[str | None, typer.Option(help="Intra-node link id")] = None,
    network: Annotated[
        str | None, typer.Option(help="Network id [default across nodes: ndr-ib]")
    ] = None,
    nics_per_node: Annotated[int | None, typer.Option(help="NICs per node")] = None,
    algo: Annotated[str, typer.Option(help="auto | ring | tree | nvls (like NCCL_ALGO)")] = "auto",
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Predict one collective's time, algbw and busbw (GB/s = 1e9 B/s) and its bottleneck."""
    import math
    from dataclasses import replace

    from fabriclens.catalog import find_gpu, find_link, gpu_on_link, host_link_on
    from fabriclens.errors import InputError
    from fabriclens.model.collectives import BASE_LATENCY_S, OPS, estimate_collective, op_name
    from fabriclens.plan.planner import resolve_fabric
    from fabriclens.units import format_bw, format_number, format_rate, format_time, parse_size

    name = op_name(op)
    if name not in OPS:
        raise InputError(f"unknown collective {op!r}", f"use one of {', '.join(OPS)}")
    if algo not in ("auto", "ring", "tree", "nvls"):
        raise InputError(f"unknown --algo {algo!r}", "use auto, ring, tree or nvls")
    size_bytes = parse_size(size)
    if size_bytes <= 0:
        raise InputError(f"size {size!r} is not positive", "give a size like 1GB")
    if ranks < 2:
        raise InputError(
            f"--ranks {ranks}: a collective needs at least 2 ranks", "give --ranks 2 or more"
        )
    on_link = gpu_on_link(find_link(intra_link).name) if gpu is None and intra_link else None
    spec = on_link or find_gpu(gpu or "h100-sxm")
    fabric, notes = resolve_fabric(
        spec,
        ranks,
        gpus_per_node=gpus_per_node,
        intra_link=intra_link,
        network_name=network,
        nics_per_node=nics_per_node,
    )
    if on_link is not None:
        # NCCL's caps and the host link's feed of the NICs are the GPU's, not only its link's
        shared_host = host_link_on(on_link.intra_link)
        if shared_host is None:
            fabric = replace(fabric, host=None)
        notes.append(
            f"GPU: {spec.title} ({spec.generation}), the catalog's first GPU on {spec.intra_link}"
            + ("" if shared_host else "; its GPUs differ in host link, so none caps the NICs")
            + " (set --gpu)"
        )
    est = estimate_collective(name, size_bytes, ranks, fabric, algorithm=algo)
    link = fabric.intra
    notes += [
        f"intra-node: {link.title}, {format_bw(link.bw_bytes_per_s)} per GPU x {format_number(link.efficiency)} "
        f"({link.efficiency_source})",
        f"per-collective launch latency {format_time(BASE_LATENCY_S)} + {format_time(link.latency_s)} per "
        "intra-node step",
    ]
    if fabric.network is not None and est.nodes > 1:
        net = fabric.network
        notes.append(
            f"network: {net.title}, {format_rate(net.rate_bits_per_s)} x {fabric.nics_per_node} NIC(s) "
            f"x {format_number(net.efficiency)} ({net.efficiency_source}); {format_time(net.latency_s)} per message"
        )
        if net.ring_step_s and est.algorithm == "ring":
            notes.append(
                f"every step of the ring at least {format_time(net.ring_step_s)}, what one costs on "
                f"this network ({net.ring_step_source})"
            )
        if net.tree_step_s and est.algorithm == "tree":
            notes.append(
                f"every level of the tree adds {format_time(net.tree_step_s)} each way "
                f"({'twice for Simple, ' if est.protocol == 'Simple' else ''}"
                f"{est.protocol or 'its protocol'} here), what one adds on this network "
                f"({net.tree_step_source})"
            )
        if fabric.host is not None:
            host = fabric.host
            notes.append(
                f"each GPU reaches the NICs over its host link, {host.title}: at most "
                f"{host.bw_bytes_per_s / 1e9:g} GB/s x {host.efficiency:.3g} = "
                f"{fabric.gpu_net_bw() / 1e9:.3g} GB/s of network per GPU"
            )
    if est.algorithm == "nvls_tree":
        notes.append(
            "two nodes: NVLSTree, NVLink SHARP reducing inside each node's switch and each node's "
            "NICs carrying the buffer once each way (a ring carries 2(n-1)/n of it), so the busbw "
            "exceeds the network's; --algo ring gives the network's own bound (nccl-tests#196)"
        )
        cap = fabric.nvls_tree_cap(min(ranks, fabric.gpus_per_node))
        if not math.isinf(cap):
            notes.append(
                f"NVLSTree at most {format_bw(cap)} of bus bandwidth here: one channel per GPU of "
                f"the node at NCCL's per-channel NVLSTree rate for {spec.generation} GPUs (its "
                "tuner's perChMaxNVLSTreeBws)"
            )
    if est.algorithm == "tree" and name == "all_reduce" and est.nodes > 1:
        ll128 = est.protocol == "LL128"
        cap = fabric.tree_channel_cap(est.nodes, protocol=est.protocol)
        capped = "" if math.isinf(cap) else (
            f", and at most {format_bw(cap)} here: one channel per NIC (at most one per GPU) at NCCL's per-channel tree "
            f"rate for {spec.generation} GPUs on {'two' if est.nodes <= 2 else 'three or more'} "
            f"nodes (its tuner's {'perChMaxTreeLL128Bws' if ll128 else 'perChMaxTreeBws'})"
        )  # fmt: skip
        proto = (
            "the LL128 protocol (120/128 of it, at the low latency; Simple's longer steps cost "
            "more at this size)"
            if ll128
            else "the Simple protocol (LL128's lower cap costs more at this size)"
        )
        notes.append(
            f"tree: double binary trees across the nodes, at 0.92 of the ring's bus bandwidth "
            f"(NCCL's tuner), {proto}{capped}"
        )
    if name in ("gather", "scatter") and est.nodes > 1:
        notes.append(
            f"{name}: the root's node moves (g-1)/n of the buffer over NVLink while the other "
            "nodes' (n-g)/n crosses the root GPU's one NIC, at once; more nodes add no bandwidth"
        )
    notes.append(
        "busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for all_gather / reduce_scatter / "
        "all_to_all / gather / scatter, x 1 otherwise (nccl-tests PERFORMANCE.md)"
    )
    from fabriclens.report.json_doc import collective_doc

    doc = collective_doc(est, fabric, notes)
    emit(doc, json_out, "collective_renderables")
