"""`fabriclens bench`: measurements beside what the fabric should give."""

from pathlib import Path
from typing import Annotated, Any

import typer

from fabriclens.cli.collective_bench_cmd import collective, p2p
from fabriclens.cli.serve_cmd import serve

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks, each judged against what the fabric should give.",
    no_args_is_help=True,
)

bench_app.command("serve")(serve)
bench_app.command("collective")(collective)
bench_app.command("p2p")(p2p)


@bench_app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="nccl-tests output (all_reduce_perf ... > FILE)")],
    op: Annotated[str | None, typer.Option(help="Collective, when the log does not say")] = None,
    gpu: Annotated[
        str | None, typer.Option(help="GPU SKU [default: from the log's Rank lines]")
    ] = None,
    ranks: Annotated[int | None, typer.Option(help="Ranks [default: from the log]")] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs per node [default: from the log's hosts]")
    ] = None,
    network: Annotated[str | None, typer.Option(help="Network between nodes (catalog id)")] = None,
    nics_per_node: Annotated[int | None, typer.Option(help="NICs per node")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    max_input: Annotated[
        str,
        typer.Option(
            help="Read at most this much of the file (- reads stdin); nccl-tests prints kilobytes"
        ),
    ] = "64MB",
) -> None:
    """Read nccl-tests output; report the large-message plateau, the expected busbw and a verdict."""
    from fabriclens.cli._output import emit
    from fabriclens.errors import ExitStatus, InputError
    from fabriclens.inputs import iter_lines
    from fabriclens.parse.nccl_tests import parse_nccl_tests
    from fabriclens.plan.expect import fixed_cost_text, flags, judge
    from fabriclens.units import parse_size

    run = parse_nccl_tests(
        iter_lines(
            file, "nccl-tests output", parse_size(max_input), too_big="give a larger --max-input"
        )
    )
    if not run.rows and not (run.headers or run.ranks or run.columns_seen):
        raise InputError(
            "no result rows found in the nccl-tests output", "give the file nccl-tests printed"
        )
    found = flags(run)
    try:
        verdict = judge(run, op=op, gpu=gpu, ranks=ranks, gpus_per_node=gpus_per_node,
                        network=network, nics_per_node=nics_per_node)  # fmt: skip
        not_judged = None
    except InputError as exc:
        verdict = None
        not_judged = f"not judged: {exc.problem}" + (f" ({exc.fix})" if exc.fix else "")
    if verdict is not None and verdict.fixed_cost is not None and verdict.fixed_cost.excessive:
        found.append(("fixed-cost", "warning", fixed_cost_text(verdict.fixed_cost)))
    doc = _doc(run, verdict, found, not_judged)
    emit(doc, json_out, "bench_import_renderables")
    if doc["level"] != "ok":
        raise typer.Exit(int(ExitStatus.FINDINGS))


def _doc(
    run: Any, v: Any, found: list[tuple[str, str, str]], not_judged: str | None
) -> dict[str, Any]:
    from fabriclens.plan.expect import infer_op, infer_op_and_ranks, plateau

    guess = None if v else infer_op_and_ranks(run)  # all_reduce and its ranks from the factor
    levels = [lvl for _, lvl, _ in found] + ([v.level] if v else [])
    level = next((x for x in ("critical", "warning") if x in levels), "ok")
    size, busbw = plateau(run) if run.rows else (None, None)
    largest = max(run.rows, key=lambda r: r.size_bytes) if run.rows else None
    return {
        # not judged: the op the paste names, else the one its bus factor tells (all_reduce's
        # 2(n-1)/n, reduce_scatter's (n-1)/n with a reduction)
        "op": v.op
        if v
        else (run.op or infer_op(run, run.world_size) or (guess[0] if guess else None)),
        "ranks": v.ranks if v else (run.world_size or (guess[1] if guess else None)),
        "nodes": v.nodes if v else (len(run.hosts) or None),
        "gpus_per_node": v.gpus_per_node if v else None,
        "gpu": v.gpu if v else (run.gpu_names[0] if run.gpu_names else None),
        "hosts": run.hosts,
        "version": run.version,
        "network": v.network if v else None,
        "sizes": [
            {
                "size_bytes": r.size_bytes,
                "count": r.count,
                "type": r.dtype,
                "time_us": r.time_us,
                "algbw_GBps": r.algbw_GBps,
                "busbw_GBps": r.busbw_GBps,
                "wrong": r.wrong,
                "inplace_wrong": r.inplace_wrong,
                "error": r.error,
                "inplace_time_us": r.inplace_time_us,
                "inplace_algbw_GBps": r.inplace_algbw_GBps,
                "inplace_busbw_GBps": r.inplace_busbw_GBps,
            }
            for r in run.rows
        ],
        "largest_size_bytes": largest.size_bytes if largest else None,
        "largest_busbw_GBps": largest.busbw_GBps if largest else None,
        "plateau_size_bytes": v.plateau_size_bytes if v else size,
        "plateau_busbw_GBps": round(v.plateau_busbw_GBps if v else busbw, 4)
        if busbw is not None
        else None,
        "expected_busbw_GBps": round(v.expected_busbw_GBps, 4) if v else None,
        "efficiency": round(v.efficiency, 4) if v else None,
        "judged": v is not None,
        "level": level,
        "verdict": v.verdict if v else (not_judged or ""),
        # the plateau verdict's own level; `level` is the worst of it and the flags
        "verdict_level": v.level if v else level,
        "flags": [{"id": i, "level": lvl, "text": t} for i, lvl, t in found],
        "next_checks": list(v.next_checks) if v else [],
        "fixed_cost": v.fixed_cost.as_dict() if v and v.fixed_cost else None,
        "log_avg_busbw_GBps": run.avg_busbw_GBps,
        "unparsed_lines": run.unparsed_lines,
        "assumptions": list(v.assumptions) if v else [],
    }


@bench_app.command("net")
def net(
    host: Annotated[
        str | None,
        typer.Argument(help="Host running `fabriclens bench net --serve` (or iperf3 -s)"),
    ] = None,
    serve: Annotated[
        bool, typer.Option("--serve", help="Run the test server here instead")
    ] = False,
    bind: Annotated[str, typer.Option(help="Server: address to listen on")] = "127.0.0.1",
    port: Annotated[
        int | None, typer.Option(help="Port [default: 5299 built-in, 5201 iperf3]")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Server: exit after this many seconds")] = 60.0,
    streams: Annotated[
        list[str] | None, typer.Option(help="Parallel TCP streams to try, e.g. 1,4")
    ] = None,
    duration: Annotated[float, typer.Option(help="Seconds per throughput run")] = 3.0,
    expect: Annotated[
        str | None,
        typer.Option(help="What the link should give: a network id (1gbe) or a wire rate (1gbit)"),
    ] = None,
    tool: Annotated[str, typer.Option(help="auto | iperf3 | builtin")] = "auto",
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """TCP throughput (single and parallel streams) and latency to a host, against the expected goodput."""
    from fabriclens.cli._output import emit, split_list
    from fabriclens.errors import ExitStatus, InputError

    if serve:
        from fabriclens.bench.tcp import DEFAULT_PORT
        from fabriclens.bench.tcp import serve as run_server

        if not 0 < timeout <= 3600:
            raise InputError(
                f"--timeout {timeout:g} is outside (0, 3600] s", "give a bounded --timeout"
            )
        try:
            n = run_server(
                bind,
                port or DEFAULT_PORT,
                timeout,
                ready=lambda p: print(f"serving on {bind}:{p} for {timeout:g} s", flush=True),
            )
        except OSError as exc:
            raise InputError(
                f"cannot listen on {bind}:{port or DEFAULT_PORT}: {exc.strerror}",
                "choose another --bind or --port",
            ) from None
        print(f"served {n} test(s)")
        return
    if host is None:
        raise InputError(
            "no host given",
            "fabriclens bench net HOST, with `fabriclens bench net --serve` running there",
        )
    if tool not in ("auto", "iperf3", "builtin"):
        raise InputError(f"unknown --tool {tool!r}", "use auto, iperf3 or builtin")
    if not 0 < duration <= 60:
        raise InputError(f"--duration {duration:g} is outside (0, 60] s", "give --duration 3")
    counts = [
        int(x)
        for x in split_list(streams) or ["1", "4"]
        if x.isdigit() and len(x) <= 3 and 0 < int(x) <= 64
    ]
    if not counts:
        raise InputError("--streams needs numbers between 1 and 64", "write it like --streams 1,4")
    from fabriclens.bench.tcp import measure_link
    from fabriclens.plan.transfer import expected_goodput

    expected, expected_note = expected_goodput(expect)
    doc = measure_link(host, port, counts, duration, tool)
    doc["expected_goodput_bits_per_s"] = expected
    doc["expected_note"] = expected_note
    best = max(r["goodput_bits_per_s"] for r in doc["runs"])
    doc["best_goodput_bits_per_s"] = best
    from fabriclens.bench.tcp import is_loopback
    from fabriclens.measure.goodput import judge_goodput

    judged = judge_goodput(best, expected, loopback=is_loopback(host))
    doc["efficiency"], doc["level"], doc["verdict"] = (
        judged.efficiency,
        judged.level,
        judged.verdict,
    )
    emit(doc, json_out, "bench_net_renderables")
    if doc["level"] != "ok":
        raise typer.Exit(int(ExitStatus.FINDINGS))
