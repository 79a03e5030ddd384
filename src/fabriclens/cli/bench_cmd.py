"""`fabriclens bench`: measurements beside what the fabric should give."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks, each judged against what the fabric should give.",
    no_args_is_help=True,
)


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
) -> None:
    """Read nccl-tests output; report the large-message plateau, the expected busbw and a verdict."""
    from fabriclens.cli._output import emit
    from fabriclens.errors import ExitStatus, InputError
    from fabriclens.parse.nccl_tests import parse_nccl_tests
    from fabriclens.plan.expect import judge

    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read {file}: {exc.strerror}", "check the path") from None
    run = parse_nccl_tests(text)
    verdict = judge(run, op=op, gpu=gpu, ranks=ranks, gpus_per_node=gpus_per_node, network=network,
                    nics_per_node=nics_per_node)  # fmt: skip
    doc = _doc(run, verdict)
    emit(doc, json_out, "bench_import_renderables")
    if verdict.level != "ok":
        raise typer.Exit(int(ExitStatus.FINDINGS))


def _doc(run: Any, v: Any) -> dict[str, Any]:
    return {
        "op": v.op,
        "ranks": v.ranks,
        "nodes": v.nodes,
        "gpus_per_node": v.gpus_per_node,
        "gpu": v.gpu,
        "network": v.network,
        "sizes": [
            {
                "size_bytes": r.size_bytes,
                "count": r.count,
                "type": r.dtype,
                "time_us": r.time_us,
                "algbw_GBps": r.algbw_GBps,
                "busbw_GBps": r.busbw_GBps,
                "wrong": r.wrong,
                "inplace_time_us": r.inplace_time_us,
                "inplace_algbw_GBps": r.inplace_algbw_GBps,
                "inplace_busbw_GBps": r.inplace_busbw_GBps,
            }
            for r in run.rows
        ],
        "plateau_size_bytes": v.plateau_size_bytes,
        "plateau_busbw_GBps": round(v.plateau_busbw_GBps, 4),
        "expected_busbw_GBps": round(v.expected_busbw_GBps, 4),
        "efficiency": round(v.efficiency, 4),
        "level": v.level,
        "verdict": v.verdict,
        "next_checks": list(v.next_checks),
        "log_avg_busbw_GBps": run.avg_busbw_GBps,
        "unparsed_lines": run.unparsed_lines,
        "assumptions": list(v.assumptions),
    }
