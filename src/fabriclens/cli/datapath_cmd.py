"""`fabriclens datapath`: storage -> network -> host -> PCIe -> GPU; the narrowest pipe."""

from typing import Annotated, Any

import typer

from fabriclens.cli._output import emit


def datapath(
    model: Annotated[
        str | None,
        typer.Argument(
            help="Optional model: its planned tokens/s set the input rate and its checkpoint size"
        ),
    ] = None,
    gpu: Annotated[str, typer.Option(help="GPU SKU")] = "h100-sxm",
    gpus: Annotated[int, typer.Option(help="Total GPUs")] = 8,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs per node [default: up to 8]")
    ] = None,
    storage_network: Annotated[
        str, typer.Option(help="Network to the storage (catalog id)")
    ] = "25gbe",
    storage_nics: Annotated[int, typer.Option(help="Storage NICs per node")] = 1,
    storage_bw: Annotated[
        str | None,
        typer.Option(
            "--storage-bw",
            "--storage",
            help="Storage system read/write rate in total, e.g. 20GB/s (bytes) or 100Gbit/s",
        ),
    ] = None,
    tokens_per_s: Annotated[
        float | None, typer.Option(help="Training tokens/s for the whole job")
    ] = None,
    bytes_per_token: Annotated[
        float, typer.Option(help="Input bytes per token (pre-tokenised int32 = 4)")
    ] = 4.0,
    images_per_s: Annotated[
        float | None, typer.Option(help="Images/s per GPU (vision training)")
    ] = None,
    image_size: Annotated[str, typer.Option(help="Bytes per image on storage")] = "110kB",
    checkpoint_size: Annotated[
        str | None, typer.Option(help="Checkpoint size [default with a model: 16 bytes/parameter]")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Find the narrowest pipe between storage and the GPUs, and how much it throttles the job."""
    from fabriclens.catalog import find_gpu
    from fabriclens.errors import InputError
    from fabriclens.plan.datapath import plan_datapath
    from fabriclens.units import format_number, parse_bandwidth, parse_size

    if gpus < 1:
        raise InputError(f"--gpus {gpus} must be at least 1", "give a positive --gpus")
    gpn = gpus_per_node or min(find_gpu(gpu).max_gpus_per_node, gpus)
    nodes = -(-gpus // gpn)
    notes: list[str] = []
    ckpt = float(parse_size(checkpoint_size)) if checkpoint_size else 0.0
    if images_per_s is not None:
        demand = images_per_s * parse_size(image_size)
        notes.append(f"input: {format_number(images_per_s, 6)} images/s per GPU x {image_size}")
    elif tokens_per_s is not None:
        demand = tokens_per_s * bytes_per_token / gpus
        notes.append(
            f"input: {format_number(tokens_per_s, 6)} tokens/s x {format_number(bytes_per_token, 6)} bytes over {gpus} GPUs"
        )
    elif model is not None:
        from fabriclens.catalog import find_model
        from fabriclens.model.arch import count_params
        from fabriclens.plan.planner import make_plans
        from fabriclens.plan.request import PlanRequest

        spec = find_model(model)
        plan = make_plans(PlanRequest(model=spec, gpu=gpu, gpus=gpus, gpus_per_node=gpus_per_node))[
            0
        ]
        assert plan.training is not None
        demand = plan.training.tokens_per_s * bytes_per_token / gpus
        notes.append(
            f"input: the planner's {plan.training.tokens_per_s:,.0f} tokens/s for {spec.name} x {format_number(bytes_per_token, 6)} bytes"
        )
        if not checkpoint_size:
            ckpt = 16.0 * count_params(spec).total
            notes.append(
                "checkpoint: 16 bytes per parameter (bf16 weights + fp32 master and Adam moments)"
            )
    else:
        raise InputError("no input rate", "give a MODEL, --tokens-per-s or --images-per-s")
    result = plan_datapath(
        gpu=gpu, nodes=nodes, gpus_per_node=gpn, storage_network=storage_network,
        demand_per_gpu_bytes_per_s=demand, storage_bytes_per_s=parse_bandwidth(storage_bw) if storage_bw else None,
        storage_nics=storage_nics, checkpoint_bytes=ckpt,
    )  # fmt: skip
    doc = _doc(result, notes)
    emit(doc, json_out, "datapath_renderables")


def _doc(result: Any, notes: list[str]) -> dict[str, Any]:
    return {
        "nodes": result.nodes,
        "gpus_per_node": result.gpus_per_node,
        "demand_per_gpu_bytes_per_s": float(f"{result.demand_per_gpu_bytes_per_s:.6g}"),
        "stages": [
            {
                "name": s.name,
                "capacity_bytes_per_s": float(f"{s.capacity_bytes_per_s:.6g}"),
                "demand_bytes_per_s": float(f"{s.demand_bytes_per_s:.6g}"),
                "utilisation": round(s.utilisation, 4),
                "note": s.note,
            }
            for s in result.stages
        ],
        "narrowest": result.narrowest.name,
        "slowdown": round(result.slowdown, 4),
        "checkpoint_bytes": round(result.checkpoint_bytes),
        "checkpoint_s": float(f"{result.checkpoint_s:.6g}")
        if result.checkpoint_s is not None
        else None,
        "advice": list(result.advice),
        "assumptions": notes,
    }
