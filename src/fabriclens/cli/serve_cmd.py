"""`fabriclens bench serve URL`: a load test of an LLM endpoint, tokens counted correctly."""

import math
from pathlib import Path
from typing import Annotated, Any

import typer

API_HELP = "openai | ollama [default: ollama when the path starts /api/, else openai]"


def serve(
    url: Annotated[str, typer.Argument(help="Endpoint, e.g. http://localhost:8000/v1/chat/completions")],
    model: Annotated[str | None, typer.Option(help="Model name the server knows")] = None,
    api: Annotated[str | None, typer.Option(help=API_HELP)] = None,
    concurrency: Annotated[str | None, typer.Option(help="Closed loop: requests in flight, a sweep like 1,4,16,64")] = None,
    rate: Annotated[str | None, typer.Option(help="Open loop: requests/s (Poisson), or a sweep like 1,2,4")] = None,
    burstiness: Annotated[float, typer.Option(help="Open loop: gamma shape of the gaps (1 = Poisson, < 1 burstier)")] = 1.0,
    ramp_up: Annotated[float | None, typer.Option(help="Closed loop: seconds over which the workers start [default: 5 ms each, at most 1 s]")] = None,
    requests: Annotated[int | None, typer.Option(help="Requests per level [default: 4 x concurrency, at least 8; 10 s of arrivals]")] = None,
    duration: Annotated[float | None, typer.Option(help="Seconds per level instead of a request count")] = None,
    prompt_tokens: Annotated[int, typer.Option(help="Synthetic prompt length (about one token per word)")] = 128,
    output_tokens: Annotated[int, typer.Option(help="Tokens to ask for (max_tokens / num_predict)")] = 128,
    prompts: Annotated[Path | None, typer.Option(help="JSONL file: {\"prompt\": ..., \"output_tokens\": N} per line")] = None,
    slo: Annotated[str | None, typer.Option(help="Goodput targets, e.g. ttft=500ms,tpot=50ms")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds for each whole request: connect, send and the full stream")] = 60.0,
    header: Annotated[list[str] | None, typer.Option(help="Extra header 'Name: value' (repeatable)")] = None,
    ignore_eos: Annotated[bool, typer.Option("--ignore-eos", help="Ask the server (vLLM) to generate every requested token")] = False,
    insecure: Annotated[bool, typer.Option("--insecure", "-k", help="Accept any TLS certificate (self-signed servers)")] = False,
    tokenizer: Annotated[Path | None, typer.Option(help="tokenizer.json to count tokens when the server gives no usage")] = None,
    plan_gpu: Annotated[str | None, typer.Option(help="Planner comparison: GPU SKU serving the model")] = None,
    plan_gpus: Annotated[int, typer.Option(help="Planner comparison: GPUs (tensor parallel)")] = 1,
    plan_model: Annotated[str | None, typer.Option(help="Planner comparison: catalog model [default: --model]")] = None,
    plan_engine: Annotated[str | None, typer.Option(help="Planner comparison: engine serving it (vllm, sglang, tgi, trtllm, ollama; vllm@0.8.5 names a release) [default: ollama for the Ollama API, else vllm]")] = None,
    plan_spec_tokens: Annotated[int | None, typer.Option(help="Planner comparison: speculative decoding's draft tokens a step, as the server runs it (see `plan --spec-tokens`)")] = None,
    plan_accept_length: Annotated[float | None, typer.Option(help="Planner comparison: the accept length the server reports with --plan-spec-tokens (SGLang's 'accept len' in its log, vLLM's spec-decode metrics)")] = None,
    seed: Annotated[int, typer.Option(help="Seed for prompts and arrival times")] = 0,
    plot: Annotated[Path | None, typer.Option(help="Write latency vs throughput to this PNG")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:  # fmt: skip
    """Load-test an LLM endpoint: TTFT, inter-token latency, TPOT, tokens/s, errors, goodput."""
    import asyncio
    import dataclasses

    from fabriclens.bench.serve_load import ClientCost, Target, request_body, run_level
    from fabriclens.cli._output import emit, parse_headers
    from fabriclens.errors import ExitStatus, InputError
    from fabriclens.measure.serving import aggregate, parse_slo

    chosen_api = api or ("ollama" if "/api/" in url else "openai")
    if chosen_api not in ("openai", "ollama"):
        raise InputError(f"unknown --api {api!r}", "use --api openai or --api ollama")
    try:
        target = dataclasses.replace(Target.parse(url, chosen_api), insecure=insecure)
    except ValueError as exc:
        raise InputError(
            str(exc), "give a URL like http://localhost:8000/v1/chat/completions"
        ) from None
    if not model:
        raise InputError(
            "no --model given", "name the model the server serves, e.g. --model llama3.1:8b"
        )
    if concurrency and rate:
        raise InputError(
            "--concurrency and --rate were both given",
            "choose a closed loop (--concurrency) or an open loop (--rate)",
        )
    levels = _levels(concurrency, rate, burstiness, ramp_up)
    if requests is not None and not 1 <= requests <= 1_000_000:
        raise InputError(f"--requests {requests} is outside 1..1000000", "give --requests 100")
    if duration is not None and not 0 < duration <= 86400:
        raise InputError(f"--duration {duration:g} is outside (0, 86400] s", "give --duration 60")
    if not 0 < timeout <= 3600:
        raise InputError(f"--timeout {timeout:g} is outside (0, 3600] s", "give --timeout 60")
    for name, value in (("prompt-tokens", prompt_tokens), ("output-tokens", output_tokens)):
        if not 1 <= value <= 1_000_000:
            raise InputError(f"--{name} {value} is outside 1..1000000", f"give --{name} 128")
    planner_only = [flag for flag, value in (("--plan-model", plan_model), ("--plan-engine", plan_engine),
                    ("--plan-spec-tokens", plan_spec_tokens), ("--plan-accept-length", plan_accept_length))
                    if value is not None]  # fmt: skip
    if planner_only and not plan_gpu:
        raise InputError(
            f"{planner_only[0]} describes the planner comparison, which needs --plan-gpu",
            "add --plan-gpu (the GPU serving the model), or drop " + planner_only[0],
        )
    if (plan_spec_tokens is None) != (plan_accept_length is None):
        given, missing = (("--plan-spec-tokens", "--plan-accept-length") if plan_accept_length is None
                          else ("--plan-accept-length", "--plan-spec-tokens"))  # fmt: skip
        raise InputError(
            f"{given} needs {missing}: the plan of a speculative server takes both",
            f"add {missing} (the server reports its accept length), or drop {given}",
        )
    targets = parse_slo(slo) if slo else {}
    headers = parse_headers(header)
    prompt_list = _prompts(prompts, prompt_tokens, output_tokens, seed)
    count_tokens = _tokenizer(tokenizer)
    engine = plan_engine or ("ollama" if chosen_api == "ollama" else "vllm")
    expected_for = None
    if plan_gpu:
        expected_for = _planner(
            plan_model or model, plan_gpu, plan_gpus, prompt_tokens, output_tokens, engine,
            plan_spec_tokens, plan_accept_length,
        )  # fmt: skip
    if plot is not None:
        from fabriclens.report.plots import require_matplotlib

        require_matplotlib()

    def make_body(i: int) -> bytes:
        return request_body(
            chosen_api, target.path, model, prompt_list[i % len(prompt_list)], ignore_eos
        )

    results: list[dict[str, Any]] = []
    users: list[int] = []  # the concurrency each level's expectation is planned at
    costs = []
    from fabriclens.cli._progress import terminal_progress

    with terminal_progress(json_out) as progress:
        for level in levels:
            n = (
                requests
                if requests is not None
                else (None if duration else _default_requests(level))
            )
            task = progress.start(_level_name(level), n)

            def done(_record: Any, task: int = task) -> None:
                progress.advance(task)

            records, wall, cost = asyncio.run(run_level(
                target, make_body, level, requests=n, headers=headers, timeout_s=timeout,
                duration_s=duration, seed=seed, count_tokens=count_tokens, on_done=done))  # fmt: skip
            entry = {"concurrency": level.concurrency, "rate": level.rate,
                     **aggregate(records, wall, targets), "client": cost.summary()}  # fmt: skip
            users.append(level.concurrency or max(1, round(level.rate or 1)))
            if expected_for is not None:
                entry["expected"] = expected_for(users[-1])
            results.append(entry)
            costs.append(cost)
            if entry["completed"] == 0 and _unreachable(entry["errors"]):
                break  # nothing answers: the rest of the sweep would say the same
    from fabriclens.redact import redact_url

    speculation = _server_speculation(chosen_api, target, headers, results)
    if plan_gpu and plan_spec_tokens is None and speculation.get("plannable"):
        # the server decodes speculatively: plan it as it reports it, where the engine planned can
        try:
            planned = _planner(plan_model or model, plan_gpu, plan_gpus, prompt_tokens, output_tokens,
                               engine, speculation["spec_tokens"], speculation["accept_length"],
                               speculation["topk"], speculation["draft_tokens"])  # fmt: skip
        except InputError as exc:
            speculation["note"] = f"not planned with it: {exc}"
        else:
            for entry, n in zip(results, users, strict=False):
                entry["expected"] = {**planned(n), "speculation": "as the server reports it"}
    doc = {
        "url": redact_url(url),
        "api": chosen_api,
        "model": model,
        "mode": "open loop" if rate else "closed loop",
        "results": results,
        "client_overhead": ClientCost.merged(costs).summary(),
        "server_speculation": speculation,
        "assumptions": _assumptions(chosen_api, prompts is None, results),
    }  # fmt: skip
    if plot is not None:
        from fabriclens.report.plots import serve_plot

        serve_plot(doc, plot)
        doc["plot"] = str(plot)
    emit(doc, json_out, "serving_text.bench_serve_renderables")
    if not insecure and any(k.startswith("tls") for r in results for k in r["errors"]):
        import sys

        sys.stderr.write(
            "fabriclens: note: TLS failed — for a self-signed or private certificate add -k (--insecure)\n"
        )
    if any(r["errors"] for r in results):
        raise typer.Exit(int(ExitStatus.FINDINGS))


def _server_speculation(api: str, target: Any, headers: dict[str, str],
                        results: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """What the server reports of its speculative decoding after the load test (SGLang's
    /server_info, vLLM's /metrics): ``reported`` and its figures, or why not."""
    if api != "openai":
        return {"reported": False, "why": "not asked: Ollama does not report speculative decoding"}
    if not any(r["completed"] for r in results):
        return {"reported": False, "why": "not asked: no request was answered"}
    from fabriclens.bench.server_state import read_speculation

    found, how = read_speculation(target, headers)
    if found is None:
        return {"reported": False, "why": how}
    chain = found.topk == 1
    tree_known = chain or found.draft_tokens > 0
    return {
        "reported": True, "source": found.source, "algorithm": found.algorithm,
        "spec_tokens": found.spec_tokens, "accept_length": found.accept_length, "topk": found.topk,
        "draft_tokens": found.draft_tokens or (found.spec_tokens + 1 if chain else 0),
        "plannable": tree_known and found.accept_length is not None,
        "note": "" if tree_known else f"a tree of drafts (top-k {found.topk}) whose verified positions the server does not report: its expectation is plain decode",
    }  # fmt: skip


def _levels(
    concurrency: str | None, rate: str | None, burstiness: float, ramp_up: float | None
) -> list[Any]:
    from fabriclens.bench.serve_load import Level
    from fabriclens.cli._output import split_list
    from fabriclens.errors import InputError

    if not 0 < burstiness <= 100:
        raise InputError(
            f"--burstiness {burstiness:g} is outside (0, 100]", "give --burstiness 1 (Poisson)"
        )
    if rate:
        try:
            rates = [float(x) for x in split_list([rate])]
        except ValueError:
            raise InputError(
                f"--rate {rate!r} is not a list of numbers",
                "write it like --rate 2 or --rate 1,2,4",
            ) from None
        if not rates or not all(0 < r <= 100_000 and math.isfinite(r) for r in rates):
            raise InputError(
                f"--rate {rate!r} needs rates in (0, 100000] requests/s",
                "write it like --rate 1,2,4",
            )
        return [Level(rate=r, burstiness=burstiness) for r in rates]
    values = split_list([concurrency or "1,4,16,64"])
    if not values or not all(v.isdigit() and len(v) <= 6 and 1 <= int(v) <= 10_000 for v in values):
        raise InputError(
            f"--concurrency {concurrency!r} needs numbers in 1..10000",
            "write it like --concurrency 1,4,16,64",
        )
    if ramp_up is not None and not 0 <= ramp_up <= 3600:
        raise InputError(f"--ramp-up {ramp_up:g} is outside [0, 3600] s", "give --ramp-up 1")
    return [Level(concurrency=int(v), ramp_s=min(1.0, 0.005 * int(v)) if ramp_up is None else ramp_up)
            for v in values]  # fmt: skip


def _default_requests(level: Any) -> int:
    if level.concurrency is not None:
        return int(max(8, 4 * level.concurrency))
    return int(max(20, math.ceil(10 * level.rate)))


def _level_name(level: Any) -> str:
    return (
        f"concurrency {level.concurrency}"
        if level.concurrency is not None
        else f"{level.rate:g} req/s"
    )


def _unreachable(errors: dict[str, int]) -> bool:
    return bool(errors) and all(
        k.startswith(("connection refused", "connect", "tls")) for k in errors
    )


MAX_PROMPTS = 100_000  # a load test sends requests in the thousands; more prompts only cost memory


def _prompts(path: Path | None, prompt_tokens: int, output_tokens: int, seed: int) -> list[Any]:
    from fabriclens.bench.serve_load import Prompt, synthetic_prompts
    from fabriclens.errors import InputError
    from fabriclens.safe_text import clean_text

    if path is None:
        return synthetic_prompts(1000, prompt_tokens, output_tokens, seed)
    from fabriclens.inputs import MAX_FILE_BYTES, iter_lines, loads_json

    out: list[Any] = []
    lines = iter_lines(path, "--prompts", MAX_FILE_BYTES, max_line_bytes=MAX_FILE_BYTES)
    for number, line in enumerate(lines, 1):
        if len(out) == MAX_PROMPTS:
            import sys

            sys.stderr.write(f"fabriclens: note: using the first {MAX_PROMPTS:,} prompts of "
                             f"{clean_text(str(path))} (requests take them in turn)\n")  # fmt: skip
            break
        if not line.strip():
            continue
        try:
            item = loads_json(line)
        except ValueError:
            item = None
        text = item.get("prompt") if isinstance(item, dict) else None
        want = item.get("output_tokens", output_tokens) if isinstance(item, dict) else None
        if not isinstance(text, str) or not isinstance(want, int) or want < 1:
            raise InputError(f"{path} line {number} is not {{\"prompt\": \"...\", \"output_tokens\": N}}",
                             "write one JSON object per line with a prompt string")  # fmt: skip
        out.append(Prompt(text, want))
    if not out:
        raise InputError(
            f"{path} holds no prompts", "write one JSON object per line with a prompt string"
        )
    return out


def _tokenizer(path: Path | None) -> Any:
    from fabriclens.errors import InputError

    if path is None:
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise InputError(
            "--tokenizer needs the tokenizers package", "pip install tokenizers"
        ) from None
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # the library raises its own exception types
        raise InputError(
            f"cannot load tokenizer {path}: {exc}", "give a tokenizer.json file"
        ) from None
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def _planner(
    model: str,
    gpu: str,
    gpus: int,
    prompt_tokens: int,
    output_tokens: int,
    engine: str,
    spec_tokens: int | None = None,
    accept_length: float | None = None,
    topk: int = 1,
    draft_tokens: int | None = None,
) -> Any:
    """What the capacity planner expects at a given concurrency on ``gpus`` x ``gpu`` served by
    ``engine`` (its weights format, its cap on requests at once, how it schedules prompts), with
    speculative decoding where the server runs it (``spec_tokens``, ``accept_length``, and a
    tree's ``topk`` and ``draft_tokens``)."""
    from fabriclens.catalog import find_model
    from fabriclens.plan.capacity import plan_capacity

    spec = find_model(model)

    def expected(users: int) -> dict[str, Any]:
        plan = plan_capacity(spec, gpu, users=users, output_tokens=output_tokens, prompt_tokens=prompt_tokens,
                             tpot_slo_s=1e9, tp=gpus, engine=engine, spec_tokens=spec_tokens,
                             accept_length=accept_length, draft_topk=topk if topk > 1 else None,
                             draft_tokens=draft_tokens if topk > 1 else None)  # fmt: skip
        return {
            "model": spec.name, "gpu": gpu, "gpus": gpus, "engine": plan.limits.engine, "batch": plan.batch,
            "output_tokens_per_s": plan.replica_tokens_per_s, "tpot_s": plan.tpot_s, "ttft_s": plan.ttft_s,
            "note": "" if plan.batch >= users else (
                f"{plan.limits.engine} runs {plan.batch} of {users} requests at once; the rest wait"
                if plan.limits.max_parallel and plan.batch == plan.limits.max_parallel
                else f"the KV cache holds {plan.batch} of {users} requests at once"),
        }  # fmt: skip

    expected(1)  # a bad model or GPU fails now, before any load is sent
    return expected


def _assumptions(api: str, synthetic: bool, results: list[dict[str, Any]]) -> list[str]:
    out = ["TTFT is measured at the client, from opening the connection to the first chunk with text: it includes "
           "the TCP (and TLS) connect and one more round trip for the request; ttft_server_s takes two connect times "
           "off each request's TTFT (plain HTTP only) to leave the server's share",
           "one connection per request (Connection: close), as a client without a pool would",
           "closed loop: the workers start one after another over the ramp-up (5 ms each, at most 1 s, or --ramp-up), "
           "so that N streams do not stay in lock step; requests/s and tokens/s count the ramp-up"]  # fmt: skip
    sources = {r["token_count"] for r in results if r.get("token_count")}
    if any("estimated" in s for s in sources):
        out.append("some responses carried no token count: those counts are estimated at 4 characters per token "
                   "(give --tokenizer tokenizer.json for exact counts)")  # fmt: skip
    if api == "openai":
        out.append(
            "usage requested with stream_options.include_usage; servers that ignore it get estimated counts"
        )
    if synthetic:
        out.append(
            "synthetic prompts: about one token per word, each prompt different so a prefix cache does not serve them"
        )
    return out
