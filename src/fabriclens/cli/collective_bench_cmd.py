"""`fabriclens bench collective` and `bench p2p`: torch.distributed benchmarks, judged."""

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from fabriclens.cli._progress import NoProgress, terminal_progress

# what `bench collective --op` accepts (nccl-tests' names; fabriclens.bench.collective runs each)
BENCH_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv",
             "reduce", "gather", "scatter")  # fmt: skip


def _need_torch() -> None:
    from fabriclens.errors import InputError

    try:
        import torch.distributed  # noqa: F401
    except ImportError:
        raise InputError("bench collective/p2p need torch", "pip install 'fabriclens[bench]' (CPU: pip install torch==2.13.0)") from None  # fmt: skip


def _launch(spawn: int | None, argv: list[str], timeout: float, json_out: bool) -> bool:
    """With --spawn N, run N local ranks of this same command and relay rank 0; True when done
    here. Without it, this process must be one rank of torchrun / srun."""
    from fabriclens.bench.collective import env_rendezvous
    from fabriclens.bench.collective import spawn as run_spawned
    from fabriclens.errors import ExitStatus, InputError

    if env_rendezvous() is not None:
        return False
    if spawn is None:
        raise InputError("no ranks to run", "launch under torchrun (torchrun --nproc-per-node 8 -m fabriclens ...), srun, or give --spawn N")  # fmt: skip
    if not 1 <= spawn <= 64:
        raise InputError(f"--spawn {spawn} is outside 1..64", "give --spawn 2 (local processes)")
    # rank 0 draws the progress bar: straight to a terminal, never through a pipe or with --json
    code, out, errors = run_spawned(
        argv, spawn, timeout, rank0_stderr=sys.stderr.isatty() and not json_out
    )
    sys.stdout.write(out)
    if code != 0 and not out.strip():
        raise InputError(f"the ranks failed: {errors or 'rank 0 exited with status ' + str(code)}", "see the first error above")  # fmt: skip
    if code:
        raise typer.Exit(code if code in (1, 2) else int(ExitStatus.FAILURE))
    return True


def _rank0_progress(json_out: bool) -> NoProgress:
    """A progress bar drawn by rank 0 only (every rank of torchrun may share one terminal)."""
    from fabriclens.bench.collective import env_rendezvous

    rank = (env_rendezvous() or (0, 1))[0]
    return terminal_progress(json_out) if rank == 0 else NoProgress()


def _child_argv(ctx: typer.Context) -> list[str]:
    """This run's arguments (handed down by the entry point as ``ctx.obj["argv"]``) without
    --spawn: the ranks run the rest."""
    args = (ctx.obj or {}).get("argv", sys.argv[1:])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--spawn":
            skip = True
            continue
        if a.startswith("--spawn="):
            continue
        out.append(a)
    return out


def collective(
    ctx: typer.Context,
    op: Annotated[str, typer.Option(help=f"One of {', '.join(BENCH_OPS)}; several, comma-separated; or all (one start-up for them all)")] = "all_reduce",
    spawn: Annotated[int | None, typer.Option(help="Run N local processes (else: one rank of torchrun/srun)")] = None,
    backend: Annotated[str, typer.Option(help="nccl | gloo | auto (nccl with GPUs)")] = "auto",
    min_bytes: Annotated[str, typer.Option(help="Smallest size")] = "1MB",
    max_bytes: Annotated[str, typer.Option(help="Largest size")] = "64MB",
    factor: Annotated[float, typer.Option(help="Each size this many times the last")] = 2.0,
    iters: Annotated[int, typer.Option(help="Timed iterations per size")] = 10,
    warmup: Annotated[int, typer.Option(help="Untimed iterations per size")] = 3,
    dtype: Annotated[str, typer.Option(help="float32 | float16 | bfloat16 | float64 | int32 | int8")] = "float32",
    check: Annotated[bool, typer.Option("--check", help="Check the results' values")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds an operation may take before the stuck ranks are named")] = 120.0,
    network: Annotated[str | None, typer.Option(help="Network between nodes, for the expected busbw [default: detected from this node's RDMA ports or NIC]")] = None,
    nics_per_node: Annotated[int | None, typer.Option(help="NICs per node")] = None,
    gpu: Annotated[str | None, typer.Option(help="GPU SKU [default: from torch]")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write busbw vs size (expected overlaid) to this PNG")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:  # fmt: skip
    """Time a collective over torch.distributed (nccl-tests conventions); plateau busbw vs expected."""
    from fabriclens.cli._output import emit
    from fabriclens.errors import ExitStatus, InputError
    from fabriclens.measure.collective import sweep
    from fabriclens.units import parse_size

    names = _ops(op)
    name = names[0]
    if backend not in ("auto", "nccl", "gloo"):
        raise InputError(f"unknown --backend {backend!r}", "use nccl, gloo or auto")
    if dtype not in ("float32", "float16", "bfloat16", "float64", "int32", "int8"):
        raise InputError(
            f"unknown --dtype {dtype!r}", "use float32, float16, bfloat16, float64, int32 or int8"
        )
    lo, hi = parse_size(min_bytes), parse_size(max_bytes)
    if not 0 < lo <= hi <= 1 << 36 or not 1.1 <= factor <= 1024:
        raise InputError(
            "the sweep is empty or too large", "give --min-bytes 1MB --max-bytes 64MB --factor 2"
        )
    if not 1 <= iters <= 100_000 or not 0 <= warmup <= 100_000:
        raise InputError("--iters must be >= 1 and --warmup >= 0", "give --iters 10 --warmup 3")
    if not 1 <= timeout <= 86400:
        raise InputError(f"--timeout {timeout:g} is outside [1, 86400] s", "give --timeout 120")
    if plot is not None:
        if len(names) > 1:
            raise InputError("--plot draws one op", f"give one --op with --plot (e.g. --op {name})")
        from fabriclens.report.plots import require_matplotlib

        require_matplotlib()
    _need_torch()
    steps = len(sweep(lo, hi, factor)) * len(names)
    if _launch(spawn, _child_argv(ctx), timeout * (steps + 2 * len(names)) + 60, json_out):
        return
    from fabriclens.bench.collective import RunConfig, StuckRanks, run_collectives

    cfg = RunConfig(
        name, tuple(sweep(lo, hi, factor)), iters, warmup, dtype, backend, timeout, check
    )
    try:
        with _rank0_progress(json_out) as bar:
            raws = run_collectives(
                cfg, names, bar.observer(f"{'/'.join(names) if len(names) < 4 else 'op'} sizes")
            )
    except StuckRanks as exc:
        stuck: dict[str, Any] = {"op": exc.step.split(" ", 1)[0], "error": "timeout", "step": exc.step, "stuck_ranks": exc.behind, "detail": exc.detail,
               "verdict": f"{exc.step} did not finish within {timeout:g} s: " + (
                   f"ranks {exc.behind} never got there — look at those ranks' hosts first (fabriclens doctor "
                   "there; their NCCL logs)" if exc.behind else f"not every rank arrived ({exc.detail})")}  # fmt: skip
        if json_out:
            emit(stuck, True, "")
        else:
            sys.stdout.write(stuck["verdict"] + "\n")
        raise typer.Exit(int(ExitStatus.FINDINGS)) from None
    if raws is None:
        return  # not rank 0
    docs = [collective_doc(raw["op"], cfg, raw, network=network, nics_per_node=nics_per_node, gpu=gpu)
            for raw in raws]  # fmt: skip
    if plot is not None:
        from fabriclens.report.plots import collective_plot

        collective_plot(docs[0], plot)
        docs[0]["plot"] = str(plot)
    if len(docs) == 1:
        emit(docs[0], json_out, "collective_bench_text.bench_collective_renderables")
    else:
        emit({"ops": docs, "level": _worst([d["level"] for d in docs])}, json_out,
             "collective_bench_text.bench_collectives_renderables")  # fmt: skip
    if any(
        d["level"] in ("warning", "critical") or any(r["wrong"] for r in d["sizes"]) for d in docs
    ):
        raise typer.Exit(int(ExitStatus.FINDINGS))


def _ops(text: str) -> list[str]:
    """The ops --op names: one, several comma-separated, or all (nccl-tests' names or ours)."""
    from fabriclens.errors import InputError
    from fabriclens.model.collectives import op_name

    if text.strip().lower() == "all":
        return list(BENCH_OPS)
    names: list[str] = []
    for word in text.split(","):
        name = op_name(word.strip())
        if name not in BENCH_OPS:
            raise InputError(f"unknown --op {word.strip()!r}", f"use one of {', '.join(BENCH_OPS)}, several comma-separated, or all")  # fmt: skip
        if name not in names:
            names.append(name)
    return names


def _worst(levels: list[str]) -> str:
    """The most severe of the ops' levels (unjudged below ok)."""
    order = ("unjudged", "ok", "info", "warning", "critical")
    return max(levels, key=lambda lv: order.index(lv) if lv in order else 0)


def collective_doc(op: str, cfg: Any, raw: dict[str, Any], *, network: str | None, nics_per_node: int | None,
                   gpu: str | None) -> dict[str, Any]:  # fmt: skip
    """The report (rank 0): per-size rows, plateau, expected busbw, efficiency, verdict."""
    from fabriclens.bench.collective import DTYPES
    from fabriclens.errors import InputError
    from fabriclens.measure.collective import size_row
    from fabriclens.parse.nccl_tests import NcclTestsRun, Row
    from fabriclens.plan.expect import fixed_cost_text, judge, plateau

    world = raw["world"]
    hosts = [r["host"] for r in raw["ranks"]]
    rows = []
    for i, size in enumerate(cfg.sizes):
        row = size_row(op, size, world, [r["stats"][i] for r in raw["ranks"]])
        row["wrong"] = sum(r["wrong"][i] for r in raw["ranks"]) if cfg.check else None
        rows.append(row)
    run = NcclTestsRun(op=op, rows=[Row(r["size_bytes"], r["size_bytes"] // DTYPES[cfg.dtype], cfg.dtype, r["time_us"],
                                        r["algbw_GBps"], r["busbw_GBps"], r["wrong"]) for r in rows])  # fmt: skip
    size, busbw = plateau(run)  # the same rule as bench import
    doc: dict[str, Any] = {
        "op": op, "backend": raw["backend"], "device": raw["device"], "ranks": world, "hosts": sorted(set(hosts)),
        "dtype": cfg.dtype, "iters": cfg.iters, "warmup": cfg.warmup, "sizes": rows,
        "plateau_size_bytes": size, "plateau_busbw_GBps": busbw, "expected_busbw_GBps": None, "efficiency": None,
        "level": "unjudged", "verdict": "", "next_checks": [], "fixed_cost": None, "assumptions": [
            "time of a size: the slowest rank's mean over the timed iterations; busbw = algbw x nccl-tests' bus factor",
            "plateau: median busbw over the sizes within 4x of the largest (never a sweep average)",
        ],
    }  # fmt: skip
    gpus_per_node = max(hosts.count(h) for h in set(hosts))
    cpu = raw["device"] == "cpu"
    if network is None or network == "detect":
        from fabriclens.probes.fabric import detect_network

        found, nics, how = detect_network()
        doc["assumptions"].append(f"network detected on rank 0's node: {how}")
        network, nics_per_node = found, nics_per_node or nics
    if cpu and network is None:
        doc["verdict"] = (
            f"plateau busbw {busbw:.3f} GB/s (give --network to judge it against the fabric)"
        )
        return doc
    try:
        v = judge(run, op=op, gpu=gpu or ("h100-sxm" if cpu else _torch_gpu()), ranks=world, gpus_per_node=gpus_per_node,
                  network=network, nics_per_node=nics_per_node)  # fmt: skip
    except InputError as exc:  # e.g. a sweep that stays latency-bound on this fabric
        doc.update(level="warning", verdict=f"not judged: {exc.problem} ({exc.fix})")
        return doc
    doc.update(expected_busbw_GBps=v.expected_busbw_GBps, efficiency=v.efficiency, level=v.level, verdict=v.verdict,
               next_checks=list(v.next_checks), network=v.network, nodes=v.nodes, gpus_per_node=v.gpus_per_node)  # fmt: skip
    if v.fixed_cost is not None:  # as bench import: the sweep's fixed part beside the model's
        doc["fixed_cost"] = v.fixed_cost.as_dict()
        if v.fixed_cost.excessive:
            doc["level"] = _worst([doc["level"], "warning"])
            doc["next_checks"].append(fixed_cost_text(v.fixed_cost))
    if cpu:
        doc["assumptions"].append(
            "CPU ranks: only the network between hosts is modelled (one rank per host is the meaningful case)"
        )
    doc["assumptions"] += list(v.assumptions)
    return doc


def _torch_gpu() -> str | None:
    import torch

    from fabriclens.plan.expect import gpu_from_name

    spec = gpu_from_name(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else None
    return spec.name if spec else None


def p2p(
    ctx: typer.Context,
    spawn: Annotated[int | None, typer.Option(help="Run N local processes (else: one rank of torchrun/srun)")] = None,
    backend: Annotated[str, typer.Option(help="nccl | gloo | auto")] = "auto",
    size: Annotated[str, typer.Option(help="Bytes per exchange")] = "16MB",
    iters: Annotated[int, typer.Option(help="Exchanges per pair (the best counts)")] = 3,
    timeout: Annotated[float, typer.Option(help="Seconds a round may take before the stuck ranks are named")] = 120.0,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:  # fmt: skip
    """Bandwidth and small-message latency of every pair of ranks, in O(N) rounds of disjoint
    pairs; the worst pairs and the slow nodes."""
    from fabriclens.cli._output import emit
    from fabriclens.errors import ExitStatus, InputError
    from fabriclens.units import parse_size

    nbytes = parse_size(size)
    if not 4 <= nbytes <= 1 << 34:
        raise InputError(f"--size {size} is outside 4 B..16 GiB", "give --size 16MB")
    if not 1 <= iters <= 1000:
        raise InputError(f"--iters {iters} is outside 1..1000", "give --iters 3")
    if backend not in ("auto", "nccl", "gloo"):
        raise InputError(f"unknown --backend {backend!r}", "use nccl, gloo or auto")
    if not 1 <= timeout <= 86400:
        raise InputError(f"--timeout {timeout:g} is outside [1, 86400] s", "give --timeout 120")
    _need_torch()
    from fabriclens.measure.collective import pair_rounds

    if _launch(
        spawn, _child_argv(ctx), timeout * (len(pair_rounds(spawn or 2)) + 2) + 60, json_out
    ):
        return
    from fabriclens.bench.collective import LATENCY_BYTES, StuckRanks, run_p2p
    from fabriclens.measure.collective import latency_report, p2p_report

    try:
        with _rank0_progress(json_out) as bar:
            raw = run_p2p(nbytes, iters, backend, timeout, progress=bar.observer("p2p rounds"))
    except StuckRanks as exc:
        sys.stdout.write(json.dumps({"error": "timeout", "step": exc.step, "stuck_ranks": exc.behind}) + "\n" if json_out
                         else f"{exc.step} did not finish within {timeout:g} s: ranks {exc.behind} never got there\n")  # fmt: skip
        raise typer.Exit(int(ExitStatus.FINDINGS)) from None
    if raw is None:
        return
    world = raw["world"]
    hosts = [r["host"] for r in raw["ranks"]]
    matrix: dict[tuple[int, int], float] = {}
    for r in raw["ranks"]:
        for key, bw in r["pairs"].items():
            a, b = (int(x) for x in key.split(","))
            matrix[(a, b)] = max(matrix.get((a, b), 0.0), bw)
    report = p2p_report(matrix, hosts) if matrix else {"median_GBps": None, "worst_pairs": [], "node_median_GBps": {}, "suspect_nodes": []}  # fmt: skip
    lat: dict[tuple[int, int], float] = {}
    for r in raw["ranks"]:
        for key, us in r.get("latency_us", {}).items():
            a, b = (int(x) for x in key.split(","))
            lat[(a, b)] = us
    report |= latency_report(lat, hosts)
    notes = []
    for h in sorted(set(hosts)):
        cores = next((r.get("cores") for r in raw["ranks"] if r["host"] == h), None)
        if raw["backend"] == "gloo" and cores and hosts.count(h) > cores:
            notes.append(f"{hosts.count(h)} gloo ranks share {cores} CPU cores on {h}: waiting ranks spin, so "
                         "small-message latency there includes waiting for a core (one rank per core or per node reads true)")  # fmt: skip
    doc = {"backend": raw["backend"], "ranks": world, "hosts": hosts, "size_bytes": raw["size_bytes"],
           "rounds": len(pair_rounds(world)),
           "matrix_GBps": [[matrix.get((min(i, j), max(i, j))) if i != j else None for j in range(world)] for i in range(world)],
           "latency_bytes": LATENCY_BYTES,
           "latency_matrix_us": [[lat.get((min(i, j), max(i, j))) if i != j else None for j in range(world)] for i in range(world)],
           **report, "notes": notes}  # fmt: skip
    emit(doc, json_out, "collective_bench_text.bench_p2p_renderables")
    if report["suspect_nodes"] or report["latency_suspect_nodes"]:
        raise typer.Exit(int(ExitStatus.FINDINGS))
