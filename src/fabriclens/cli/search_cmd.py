"""`fabriclens search`: the best layouts for a job, and the network tiers worth paying for."""

from typing import Annotated, Any

import typer

from fabriclens.cli._output import emit, split_list
from fabriclens.cli._params import (
    ATTENTION_HELP,
    DP_OVERLAP_HELP,
    DROPOUT_HELP,
    EP_OVERLAP_HELP,
    ETP_HELP,
    FRAMEWORK_HELP,
    GRAD_REDUCE_HELP,
    LORA_TARGETS_HELP,
    MOE_DISPATCH_HELP,
    PIPELINE_SPLIT_HELP,
)


def search(
    model: Annotated[str, typer.Argument(help="Catalog model name or a config.json path")],
    workload: Annotated[
        str, typer.Option("--workload", "-w", help="pretrain | full-finetune | lora | qlora")
    ] = "pretrain",
    gpu: Annotated[str, typer.Option(help="GPU SKU")] = "h100-sxm",
    gpus: Annotated[
        int | None,
        typer.Option(help="Total GPUs [default: 8, 1 on a one-GPU machine: a Mac, a DGX Spark]"),
    ] = None,
    gpus_per_node: Annotated[int | None, typer.Option(help="GPUs per node")] = None,
    network: Annotated[
        list[str] | None, typer.Option(help="Network(s) to search on; several give a Pareto front")
    ] = None,
    nics_per_node: Annotated[int | None, typer.Option(help="NICs per node")] = None,
    tp: Annotated[int | None, typer.Option(help="Pin tensor parallelism")] = None,
    pp: Annotated[int | None, typer.Option(help="Pin pipeline parallelism")] = None,
    cp: Annotated[int | None, typer.Option(help="Pin context parallelism")] = None,
    ep: Annotated[int | None, typer.Option(help="Pin expert parallelism (MoE)")] = None,
    zero: Annotated[int | None, typer.Option(help="Pin the ZeRO stage")] = None,
    recompute: Annotated[str | None, typer.Option(help="Pin recompute")] = None,
    micro_batch: Annotated[int | None, typer.Option(help="Pin the micro-batch")] = None,
    seq_len: Annotated[int | None, typer.Option(help="Sequence length")] = None,
    global_batch: Annotated[int | None, typer.Option(help="Sequences per step")] = None,
    precision: Annotated[str | None, typer.Option(help="bf16 | fp16 | fp8")] = None,
    framework: Annotated[str | None, typer.Option(help=FRAMEWORK_HELP)] = None,
    grad_reduce: Annotated[str | None, typer.Option(help=GRAD_REDUCE_HELP)] = None,
    moe_dispatch: Annotated[str | None, typer.Option(help=MOE_DISPATCH_HELP)] = None,
    ep_overlap: Annotated[bool, typer.Option("--ep-overlap", help=EP_OVERLAP_HELP)] = False,
    etp: Annotated[int | None, typer.Option("--etp", help=ETP_HELP)] = None,
    attention: Annotated[str | None, typer.Option(help=ATTENTION_HELP)] = None,
    pipeline_split: Annotated[str | None, typer.Option(help=PIPELINE_SPLIT_HELP)] = None,
    flash_attention: Annotated[bool, typer.Option("--flash-attention/--no-flash-attention")] = True,
    dropout: Annotated[bool, typer.Option("--dropout/--no-dropout", help=DROPOUT_HELP)] = False,
    dp_overlap: Annotated[
        bool, typer.Option("--dp-overlap/--no-dp-overlap", help=DP_OVERLAP_HELP)
    ] = True,
    lora_rank: Annotated[int | None, typer.Option(help="LoRA adapter rank [default: 16]")] = None,
    lora_targets: Annotated[str | None, typer.Option(help=LORA_TARGETS_HELP)] = None,
    top: Annotated[int, typer.Option(help="Layouts to show per network")] = 5,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> int:
    """Rank every layout that fits (TP x PP x DP x EP x micro-batch x ZeRO x recompute x
    interleaving; exit status 1 when none does)."""
    from fabriclens.catalog import find_model
    from fabriclens.errors import ExitStatus, InputError
    from fabriclens.plan.request import PlanRequest, settle_workload
    from fabriclens.plan.search import search as run_search

    if workload == "inference":
        raise InputError(
            "search ranks training layouts",
            "for inference use `fabriclens capacity` or `plan -w inference`",
        )
    if top < 1:
        raise InputError(f"--top {top} must be at least 1", "give --top 5")
    # a LoRA option with another workload is refused as plan refuses it
    lora = {"--lora-rank": lora_rank, "--lora-targets": lora_targets}
    settle_workload(workload, {flag for flag, value in lora.items() if value is not None})
    if gpus is None:
        from fabriclens.catalog import find_gpu
        from fabriclens.plan.planner import default_training_gpus

        gpus = default_training_gpus(find_gpu(gpu))
    req = PlanRequest(
        model=find_model(model), gpu=gpu, gpus=gpus, workload=workload, gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node, tp=tp, pp=pp, cp=cp, ep=ep, zero=zero, recompute=recompute,
        micro_batch=micro_batch, flash_attention=flash_attention, dropout=dropout,
        dp_overlap=dp_overlap,
        seq_len=seq_len, global_batch=global_batch, precision=precision, framework=framework,
        grad_reduce=grad_reduce, moe_dispatch=moe_dispatch, ep_overlap=ep_overlap, etp=etp,
        attention=attention, pipeline_split=pipeline_split,
        lora_rank=16 if lora_rank is None else lora_rank, lora_targets=lora_targets,
    )  # fmt: skip
    from fabriclens.plan.planner import make_plans

    make_plans(req)  # validates the request's flags once, with the planner's messages
    nets: tuple[str | None, ...] = tuple(split_list(network)) or (None,)
    result = run_search(req, nets, top=top)
    doc = _doc(result)
    emit(doc, json_out, "search_renderables")
    fits = any(r.top for r in result.results)
    return int(ExitStatus.OK if fits else ExitStatus.FINDINGS)  # nothing fits: exit status 1


def _doc(result: Any) -> dict[str, Any]:
    from fabriclens.plan.search import describe

    return {
        "layouts_evaluated": result.layouts_evaluated,
        "elapsed_s": round(result.elapsed_s, 4),
        "networks": [
            {
                "network": r.network,
                "network_cost_relative": r.cost_relative,
                "layouts_tried": r.tried,
                "layouts_fitting": r.fitting,
                "best_time_s": float(f"{r.best_time_s:.6g}") if r.top else None,
                "top": [
                    {
                        "layout": describe(x.config),
                        "tp": x.config.tp,
                        "pp": x.config.pp,
                        "dp": x.config.dp,
                        "ep": x.config.ep,
                        "zero": x.config.zero,
                        "micro_batch": x.config.micro_batch,
                        "recompute": x.config.recompute,
                        "interleave": x.config.interleave,
                        "time_s": float(f"{x.estimate.time_s:.6g}"),
                        "tokens_per_s": float(f"{x.estimate.tokens_per_s:.6g}"),
                        "mfu": round(x.estimate.mfu, 4),
                        "memory_per_gpu_bytes": round(x.estimate.memory.total_per_gpu_bytes),
                        "bottleneck": x.estimate.bottleneck,
                        "why_slower": x.why_slower,
                    }
                    for x in r.top
                ],
                "assumptions": list(r.notes),
            }
            for r in result.results
        ],
        "pareto": list(result.pareto),
        "upgrades": list(result.upgrades),
    }
