"""`fabriclens capacity`: GPUs, replicas and bandwidth for a team's inference load."""

from typing import Annotated

import typer

from fabriclens.cli._output import emit
from fabriclens.cli._params import (
    ACCEPT_LENGTH_HELP,
    DRAFT_HELP,
    DRAFT_TOKENS_HELP,
    DRAFT_TOPK_HELP,
    SPEC_TOKENS_HELP,
)


def capacity(
    model: Annotated[str, typer.Argument(help="Catalog model name or a config.json path")],
    users: Annotated[
        int | None,
        typer.Option(
            help="Users streaming a response at the same time [default: 10 without --team]"
        ),
    ] = None,
    team: Annotated[
        int | None,
        typer.Option(
            help="People in the team: turned into concurrent streams (see --active-share, --request-rate)"
        ),
    ] = None,
    active_share: Annotated[
        str | None,
        typer.Option(help="With --team: share of people active in the busiest hour [default: 50%]"),
    ] = None,
    request_rate: Annotated[
        str | None,
        typer.Option(
            help="With --team: requests per active person, e.g. 20/h or 1/min [default: 20/h]"
        ),
    ] = None,
    concurrency_quantile: Annotated[
        float | None,
        typer.Option(help="With --team: quantile of requests in flight to serve [default: 0.95]"),
    ] = None,
    output_tokens: Annotated[int, typer.Option(help="Tokens per response")] = 500,
    prompt_tokens: Annotated[int, typer.Option(help="Tokens per prompt")] = 1024,
    gpu: Annotated[str, typer.Option(help="GPU SKU")] = "h100-sxm",
    latency_slo: Annotated[str, typer.Option(help="Targets, e.g. tpot=50ms,ttft=2s")] = "tpot=50ms",
    tp: Annotated[
        int | None,
        typer.Option(
            help="Tensor parallel per replica [default: fewest GPUs that meet the targets]"
        ),
    ] = None,
    pp: Annotated[
        int | None, typer.Option(help="Pipeline stages per replica [default: fewest that fit]")
    ] = None,
    ep: Annotated[
        int | None,
        typer.Option(
            help="Experts split over this many ranks of each replica's --tp (SGLang --ep, vLLM "
            "--enable-expert-parallel)"
        ),
    ] = None,
    dp: Annotated[
        int | None,
        typer.Option(
            help="Data-parallel attention groups inside each replica's --tp (SGLang --dp with "
            "--enable-dp-attention)"
        ),
    ] = None,
    spec_tokens: Annotated[int | None, typer.Option(help=SPEC_TOKENS_HELP)] = None,
    accept_length: Annotated[float | None, typer.Option(help=ACCEPT_LENGTH_HELP)] = None,
    draft: Annotated[str | None, typer.Option(help=DRAFT_HELP)] = None,
    draft_topk: Annotated[int | None, typer.Option(help=DRAFT_TOPK_HELP)] = None,
    draft_tokens: Annotated[int | None, typer.Option(help=DRAFT_TOKENS_HELP)] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs per node (tp beyond it crosses the network)")
    ] = None,
    network: Annotated[
        str | None, typer.Option(help="Network between nodes / for loading weights")
    ] = None,
    nics_per_node: Annotated[int | None, typer.Option(help="NICs per node")] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            help="vllm | sglang | tgi | trtllm | ollama | hf, and a release as vllm@0.8.5 where the engine changed between releases [default: vllm, its newest; ollama on Apple GPUs]"
        ),
    ] = None,
    precision: Annotated[
        str | None, typer.Option(help="Weights: bf16 | fp8 | int8 | int4 [default: the engine's]")
    ] = None,
    gpu_memory_utilization: Annotated[
        float | None,
        typer.Option(help="Share of each GPU the engine uses [default: the engine's, vLLM 0.9]"),
    ] = None,
    max_parallel: Annotated[
        int | None,
        typer.Option(
            help="Requests one replica runs at once (vLLM --max-num-seqs, OLLAMA_NUM_PARALLEL) [default: the engine's]"
        ),
    ] = None,
    host_memory: Annotated[
        str | None,
        typer.Option(
            help="Ollama / llama.cpp on --pp GPUs too small for the model: the host memory the "
            "other layers are read from, a catalog host or a measured rate (60GB/s) [default: "
            "desktop DDR5 beside a GeForce card, a server socket beside others]"
        ),
    ] = None,
    host_ram: Annotated[
        str | None,
        typer.Option(
            help="With layers in host memory: each replica host's free RAM + swap, checked "
            "against them as Ollama does (64GB)"
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """How many GPUs and replicas serve N users (or a team of N people) at a per-token latency target."""
    from fabriclens.catalog import find_model
    from fabriclens.errors import InputError
    from fabriclens.measure.serving import parse_slo
    from fabriclens.plan.capacity import plan_capacity
    from fabriclens.plan.team import plan_team_capacity
    from fabriclens.report.json_doc import capacity_doc
    from fabriclens.units import parse_fraction, parse_per_time

    if users is not None and team is not None:
        raise InputError(
            "--users and --team both give the demand",
            "give --users for concurrent streams or --team for a number of people, not both",
        )
    team_flags = [f for f, v in (("--active-share", active_share), ("--request-rate", request_rate),
                                 ("--concurrency-quantile", concurrency_quantile)) if v is not None]  # fmt: skip
    if team is None and team_flags:
        raise InputError(f"{team_flags[0]} only applies with --team", "add --team N, or drop it")
    slo = parse_slo(latency_slo, ("tpot", "ttft"), "--latency-slo", "tpot=50ms,ttft=2s")
    spec = find_model(model)
    common = dict(
        output_tokens=output_tokens, prompt_tokens=prompt_tokens, tpot_slo_s=slo.get("tpot", 0.05),
        ttft_slo_s=slo.get("ttft"), tp=tp, pp=pp, gpus_per_node=gpus_per_node, network=network,
        nics_per_node=nics_per_node, engine=engine, precision=precision,
        gpu_memory_utilization=gpu_memory_utilization, max_parallel=max_parallel,
        host_memory=host_memory, host_ram=host_ram, ep=ep, dp=dp, spec_tokens=spec_tokens,
        accept_length=accept_length, draft=draft, draft_topk=draft_topk,
        draft_tokens=draft_tokens,
    )  # fmt: skip
    if team is not None:
        plan, demand = plan_team_capacity(
            spec, gpu, people=team,
            active_share=parse_fraction(active_share) if active_share is not None else None,
            requests_per_person_per_s=parse_per_time(request_rate) if request_rate is not None else None,
            quantile=concurrency_quantile, **common,
        )  # fmt: skip
        doc = capacity_doc(plan, demand.doc())
    else:
        plan = plan_capacity(spec, gpu, users=10 if users is None else users, **common)  # type: ignore[arg-type]
        doc = capacity_doc(plan)
    emit(doc, json_out, "capacity_renderables")
