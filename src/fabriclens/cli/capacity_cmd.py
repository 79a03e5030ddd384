"""`fabriclens capacity`: GPUs, replicas and bandwidth for a team's inference load."""

from typing import Annotated

import typer

from fabriclens.cli._output import emit


def capacity(
    model: Annotated[str, typer.Argument(help="Catalog model name or a config.json path")],
    users: Annotated[int, typer.Option(help="Users streaming a response at the same time")] = 10,
    output_tokens: Annotated[int, typer.Option(help="Tokens per response")] = 500,
    prompt_tokens: Annotated[int, typer.Option(help="Tokens per prompt")] = 1024,
    gpu: Annotated[str, typer.Option(help="GPU SKU")] = "h100-sxm",
    latency_slo: Annotated[str, typer.Option(help="Targets, e.g. tpot=50ms,ttft=2s")] = "tpot=50ms",
    tp: Annotated[
        int | None, typer.Option(help="Tensor parallel per replica [default: fewest GPUs that fit]")
    ] = None,
    pp: Annotated[int, typer.Option(help="Pipeline stages per replica")] = 1,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs per node (tp beyond it crosses the network)")
    ] = None,
    network: Annotated[
        str | None, typer.Option(help="Network between nodes / for loading weights")
    ] = None,
    nics_per_node: Annotated[int | None, typer.Option(help="NICs per node")] = None,
    engine: Annotated[str, typer.Option(help="vllm | trtllm | ollama | hf")] = "vllm",
    precision: Annotated[str, typer.Option(help="Weights: bf16 | fp8 | int8 | int4")] = "bf16",
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """How many GPUs and replicas serve N users at a per-token latency target."""
    from fabriclens.catalog import find_model
    from fabriclens.measure.serving import parse_slo
    from fabriclens.plan.capacity import plan_capacity
    from fabriclens.report.json_doc import capacity_doc

    slo = parse_slo(latency_slo, ("tpot", "ttft"), "--latency-slo", "tpot=50ms,ttft=2s")
    plan = plan_capacity(
        find_model(model), gpu, users=users, output_tokens=output_tokens, prompt_tokens=prompt_tokens,
        tpot_slo_s=slo.get("tpot", 0.05), ttft_slo_s=slo.get("ttft"), tp=tp, pp=pp,
        gpus_per_node=gpus_per_node, network=network, nics_per_node=nics_per_node, engine=engine,
        precision=precision,
    )  # fmt: skip
    doc = capacity_doc(plan)
    emit(doc, json_out, "capacity_renderables")
