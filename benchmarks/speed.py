"""Speed of the planner: one plan evaluation in-process, and `fabriclens plan --json` as a process;
start-up: whole `fabriclens` processes against a bare `python -c pass` timed in the same run.

Run: make bench  (or: python benchmarks/speed.py; only the start-up section: --startup)
Targets (issue): <= 1 ms per plan evaluation in-process; whole-process plan <= 0.5 s;
start-up: `plan llama-3.1-8b --gpus 16 --network 100g-roce --json` <= 0.1 s, `--help` <= 0.15 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from fabriclens.catalog import find_gpu, find_link, find_model, find_network
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric, estimate_collective
from fabriclens.model.layout import TrainConfig
from fabriclens.model.step import estimate_training_step
from fabriclens.plan.planner import make_plans
from fabriclens.plan.request import PlanRequest


def per_call(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    fn()  # warm caches (catalog load)
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best.append((time.perf_counter() - t0) / repeat)
    return min(best)


def _cli() -> list[str]:
    """How a user runs fabriclens with this interpreter: its console script, else ``-m``."""
    script = os.path.join(os.path.dirname(sys.executable), "fabriclens")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "fabriclens"]


def _user_env() -> dict[str, str]:
    # as installed for a user: bytecode caches allowed (this workplace sets PYTHONDONTWRITEBYTECODE,
    # which would recompile every module on every start); a warm-up run writes them
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


STARTUP_CASES = [  # (label, arguments, target in seconds of whole-process wall time)
    ("python -c pass", None, None),
    ("fabriclens plan llama-3.1-8b --gpus 16 --network 100g-roce --json",
     ["plan", "llama-3.1-8b", "--gpus", "16", "--network", "100g-roce", "--json"], 0.1),
    ("fabriclens --help", ["--help"], 0.15),
    ("fabriclens plan --help", ["plan", "--help"], None),
]  # fmt: skip


def startup(rounds: int = 21) -> bool:
    """Whole-process wall time of each case, best and median of ``rounds`` runs taken in
    interleaved rounds (so a busy moment on a shared machine hits every case alike), and each
    one's difference from the bare interpreter measured alongside. True when every target holds
    (for the median)."""
    env = _user_env()
    argvs = [
        [sys.executable, "-c", "pass"] if a is None else [*_cli(), *a] for _, a, _ in STARTUP_CASES
    ]
    for argv in argvs:  # warm-up: bytecode caches, the OS's file cache
        subprocess.run(argv, check=True, capture_output=True, timeout=60, env=env)
    times: list[list[float]] = [[] for _ in argvs]
    for _ in range(rounds):
        for i, argv in enumerate(argvs):
            t0 = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True, timeout=60, env=env)
            times[i].append(time.perf_counter() - t0)
    bare_best, bare_med = min(times[0]), statistics.median(times[0])
    how = "the fabriclens script" if len(_cli()) == 1 else "python -m fabriclens"
    print(f"start-up, whole process (best / median of {rounds} interleaved runs; {how})")
    print(f"  {'command':<68} {'best':>7} {'median':>7}   {'- python -c pass (best / median)':<30}")
    ok = True
    for (label, _, target), t in zip(STARTUP_CASES, times, strict=True):
        best, med = min(t), statistics.median(t)
        line = f"  {label:<68} {best:6.3f}s {med:6.3f}s"
        if target is not None:
            line += (
                f"   +{best - bare_best:.3f} s / +{med - bare_med:.3f} s   target <= {target:g} s"
            )
            line += " ok" if med <= target else " MISS"
            ok = ok and med <= target
        print(line)
    return ok


def main() -> int:
    if "--startup" in sys.argv[1:]:
        return 0 if startup() else 1
    spec = find_model("llama-3.1-70b")
    counts = count_params(spec)
    gpu = find_gpu("h100-sxm")
    fabric = Fabric(find_link("nvlink4-nvswitch"), find_network("ndr-ib"), 8, 8)
    cfg = TrainConfig(gpus=64, gpus_per_node=8, tp=8, pp=2, dp=4, zero=1, recompute="selective",
                      sequence_parallel=True, seq_len=4096, global_batch=512)  # fmt: skip
    step = per_call(lambda: estimate_training_step(spec, counts, gpu, fabric, cfg), 2000)
    coll = per_call(lambda: estimate_collective("all_reduce", 2**30, 64, fabric), 20000)
    req = PlanRequest(
        model=spec, gpu="h100-sxm", gpus=64, workload="pretrain", networks=("ndr-ib",)
    )
    full = per_call(lambda: make_plans(req), 20)

    from fabriclens.plan.search import search

    # the layout search: 70B on 256 GPUs, every layout the search admits, five network tiers
    sreq = PlanRequest(model=spec, gpu="h100-sxm", gpus=256, workload="pretrain")
    nets = ("100g-roce", "200g-roce", "400g-roce", "hdr-ib", "ndr-ib")
    search(sreq, nets[:1], top=5)  # warm caches
    rounds = []
    for _ in range(3):
        t0 = time.perf_counter()
        sres = search(sreq, nets, top=5)
        rounds.append(time.perf_counter() - t0)
    search_s = min(rounds)
    # the vectorised model alone, on the same candidates
    from fabriclens.model.batch import REC, evaluate
    from fabriclens.plan.planner import layout_config, prepare_layouts

    prep = prepare_layouts(sreq, "ndr-ib", wide=True)
    cfgs = [layout_config(sreq, prep.base, c) for c in prep.candidates]
    arrays = {
        "tp": [c.tp for c in cfgs], "pp": [c.pp for c in cfgs], "dp": [c.dp for c in cfgs],
        "ep": [c.ep for c in cfgs], "zero": [c.zero for c in cfgs], "rec": [REC[c.recompute] for c in cfgs],
        "mb": [c.micro_batch for c in cfgs], "interleave": [c.interleave for c in cfgs],
        "sp": [int(c.sequence_parallel) for c in cfgs], "gb": [c.global_batch for c in cfgs],
    }  # fmt: skip
    model_s = per_call(
        lambda: evaluate(prep.spec, prep.counts, prep.gpu, prep.fabric, prep.base, arrays), 20
    )

    argv = [*_cli(), "plan", "llama-3.1-70b", "--gpus", "64", "--network", "ndr-ib", "--json"]
    env = _user_env()
    subprocess.run(argv, check=True, capture_output=True, timeout=60, env=env)
    wall = []
    for _ in range(7):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, timeout=60, env=env)
        wall.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=60)
    bare = time.perf_counter() - t0

    print("fabriclens planner speed (one core, best of 5 rounds)")
    print(
        f"  one training-step evaluation (70B, 64 GPUs, fixed layout)   {step * 1e3:8.3f} ms   target <= 1 ms   ({1e-3 / step:.0f}x headroom)"
    )
    print(f"  one collective estimate                                       {coll * 1e6:8.2f} us")
    print(
        f"  `plan` with defaults: layout search + min-GPU search (in-process) {full * 1e3:6.1f} ms"
    )
    print(
        f"  whole process `fabriclens plan ... --json` (median of 7)      {statistics.median(wall):8.3f} s    target <= 0.5 s"
    )
    rate = sres.layouts_evaluated / search_s
    model_rate = len(cfgs) / model_s
    print(
        f"  vectorised step model: {len(cfgs):,} layouts in {model_s * 1e3:.2f} ms = {model_rate:,.0f} layouts/s"
        "   target >= 100,000/s"
    )
    print(
        f"  search end to end, 70B on 256 GPUs x {len(nets)} networks: {sres.layouts_evaluated:,} layouts in "
        f"{search_s * 1e3:.0f} ms = {rate:,.0f} layouts/s (includes re-checking each network's top 5 one by one)"
    )
    print(
        f"  scalar model for comparison: {1 / step:,.0f} layouts/s; the published Python model in issue 3 "
        "needs ~33 s for 8,112 layouts (~250/s)"
    )
    print(f"  (bare Python interpreter start on this machine: {bare:.3f} s)")
    print()
    started = startup()
    ok = step <= 1e-3 and statistics.median(wall) <= 0.5 and model_rate >= 100_000 and started
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
