"""`fabriclens advise`: which network to buy, and why — rules plus the planner across tiers."""

from typing import Annotated, Any

import typer

from fabriclens.cli._output import emit, split_list
from fabriclens.cli._params import (
    ATTENTION_HELP,
    EP_OVERLAP_HELP,
    ETP_HELP,
    FRAMEWORK_HELP,
    GRAD_REDUCE_HELP,
    LORA_TARGETS_HELP,
    MOE_DISPATCH_HELP,
    PIPELINE_SPLIT_HELP,
)


def advise(
    model: Annotated[
        str | None, typer.Argument(help="Optional: a model to plan across network tiers")
    ] = None,
    scenario: Annotated[
        str, typer.Option(help="personal | team-inference | small-cluster | large-cluster")
    ] = "small-cluster",
    nodes: Annotated[int, typer.Option(help="Nodes in the cluster [default: from --gpus]")] = 0,
    network_engineer: Annotated[
        bool,
        typer.Option(
            "--network-engineer/--no-network-engineer",
            help="A dedicated network engineer on the team",
        ),
    ] = False,
    cloud: Annotated[
        bool, typer.Option("--cloud/--own-dc", help="Cloud or your own data centre")
    ] = False,
    utilisation: Annotated[
        float, typer.Option(help="Expected GPU utilisation over the hardware's life, 0-1")
    ] = 0.5,
    sensitive_data: Annotated[
        bool, typer.Option("--sensitive-data", help="Regulated or proprietary data")
    ] = False,
    workload: Annotated[
        str,
        typer.Option(
            "--workload", "-w", help="pretrain | full-finetune | lora | qlora | inference"
        ),
    ] = "pretrain",
    gpu: Annotated[str, typer.Option(help="GPU SKU")] = "h100-sxm",
    gpus: Annotated[int, typer.Option(help="Total GPUs")] = 16,
    gpus_per_node: Annotated[int | None, typer.Option(help="GPUs per node")] = None,
    nics_per_node: Annotated[int | None, typer.Option(help="NICs per node for every tier")] = None,
    network: Annotated[
        list[str] | None, typer.Option(help="Tiers to compare (comma list) [default: 10GbE to NDR]")
    ] = None,
    framework: Annotated[str | None, typer.Option(help=FRAMEWORK_HELP)] = None,
    grad_reduce: Annotated[str | None, typer.Option(help=GRAD_REDUCE_HELP)] = None,
    moe_dispatch: Annotated[str | None, typer.Option(help=MOE_DISPATCH_HELP)] = None,
    ep_overlap: Annotated[bool, typer.Option("--ep-overlap", help=EP_OVERLAP_HELP)] = False,
    etp: Annotated[int | None, typer.Option("--etp", help=ETP_HELP)] = None,
    attention: Annotated[str | None, typer.Option(help=ATTENTION_HELP)] = None,
    pipeline_split: Annotated[str | None, typer.Option(help=PIPELINE_SPLIT_HELP)] = None,
    lora_rank: Annotated[int | None, typer.Option(help="LoRA adapter rank [default: 16]")] = None,
    lora_targets: Annotated[str | None, typer.Option(help=LORA_TARGETS_HELP)] = None,
    slack: Annotated[
        str, typer.Option(help="Accept a tier this much slower than the best, e.g. 10%")
    ] = "10%",
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """A network selection guide for your situation; with a model, the cheapest tier that is fast enough."""
    from fabriclens.catalog import find_gpu
    from fabriclens.plan.advise import TIERS, Facts
    from fabriclens.plan.advise import advise as run_advise
    from fabriclens.units import parse_fraction

    request = None
    # the nodes the guide speaks of hold what the plan puts in one (resolve_fabric): the part's
    # GPUs a node (8 H100s, 4 GH200s, 72 GB200s of an NVL72 domain, one DGX Spark or Mac)
    gpn = gpus_per_node or find_gpu(gpu).max_gpus_per_node
    step_flags = {
        "--framework": framework, "--grad-reduce": grad_reduce, "--moe-dispatch": moe_dispatch,
        "--ep-overlap": ep_overlap or None, "--etp": etp, "--attention": attention,
        "--pipeline-split": pipeline_split, "--lora-rank": lora_rank, "--lora-targets": lora_targets,
    }  # fmt: skip
    given = [flag for flag, value in step_flags.items() if value is not None]
    if any(flag.startswith("--lora") for flag in given):
        from fabriclens.plan.request import settle_workload

        # a LoRA option with another workload is refused as plan refuses it
        settle_workload(workload, {flag for flag in given if flag.startswith("--lora")})
    if model is None and given:
        from fabriclens.errors import InputError

        raise InputError(
            f"{', '.join(given)} {'prices' if len(given) == 1 else 'price'} a model's training "
            "step, and no model is given",
            "name the model (fabriclens advise llama-3.1-70b ...) or drop "
            + ("it" if len(given) == 1 else "them"),
        )
    if model is not None:
        from fabriclens.catalog import find_model
        from fabriclens.plan.request import PlanRequest

        request = PlanRequest(model=find_model(model), gpu=gpu, gpus=gpus, workload=workload,
                              gpus_per_node=gpus_per_node, nics_per_node=nics_per_node,
                              framework=framework, grad_reduce=grad_reduce,
                              moe_dispatch=moe_dispatch, ep_overlap=ep_overlap, etp=etp,
                              attention=attention, pipeline_split=pipeline_split,
                              lora_rank=16 if lora_rank is None else lora_rank,
                              lora_targets=lora_targets)  # fmt: skip
    facts = Facts(
        scenario=scenario, nodes=nodes or max(1, -(-gpus // gpn)), network_engineer=network_engineer,
        cloud=cloud, utilisation=utilisation, sensitive_data=sensitive_data,
        workload=workload if model is not None or workload != "pretrain" else "",
    )  # fmt: skip
    tiers = tuple(split_list(network)) or TIERS
    result = run_advise(facts, request, slack=parse_fraction(slack), tiers=tiers)
    doc = _doc(result)
    emit(doc, json_out, "advise_renderables")


def _doc(result: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "facts": asdict(result.facts),
        "advice": [
            {
                "rule": r.id,
                "topic": r.topic,
                "advice": r.advice,
                "because": r.because,
                "watch": list(r.watch),
            }
            for r in result.fired
        ],
        "tiers": [
            {
                "network": t.network,
                "time_s": float(f"{t.time_s:.6g}"),
                "network_cost_relative": t.cost_relative,
                "fits": t.fits,
                "bottleneck": t.bottleneck,
                "comm_share": round(t.comm_share, 4),
                "verdict": t.verdict,
            }
            for t in result.tiers
        ],
        "recommended": result.recommended.network if result.recommended else None,
        "reason": result.reason,
        "sensitivity": result.sensitivity,
        "slack": result.slack,
        "assumptions": list(result.assumptions),
    }
