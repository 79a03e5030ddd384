"""Measured collective bandwidth beside what the fabric should give, with a verdict.

The plateau is the large-message bus bandwidth (median over the sizes within 4x of the
largest), never the sweep average that nccl-tests prints, which includes 8-byte messages.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from fabriclens.catalog import find_gpu, gpus
from fabriclens.catalog.schema import Gpu
from fabriclens.errors import InputError
from fabriclens.model.collectives import (
    OPS,
    SHARE_OPS,
    bus_factor,
    estimate_collective,
    op_name,
    ring_steps,
    tree_levels,
)
from fabriclens.parse.nccl_tests import MAX_PLAUSIBLE_GBPS, NcclTestsRun, Row
from fabriclens.plan.planner import resolve_fabric

OK_EFFICIENCY = 0.85
WARN_EFFICIENCY = 0.6
# a sweep's fixed cost per call is flagged when, two standard errors below its fitted value, it is
# still this many times the model's latency, and it is at least this share of the largest call
FIXED_COST_RATIO = 2.0
FIXED_COST_SHARE = 0.1
FIXED_COST_SPAN = 64  # the fit takes the sizes within this factor of the largest


@dataclass(frozen=True)
class Verdict:
    """What the measurement says, against the model."""

    op: str
    ranks: int
    nodes: int
    gpus_per_node: int
    gpu: str
    network: str
    plateau_size_bytes: int
    plateau_busbw_GBps: float
    expected_busbw_GBps: float
    efficiency: float
    level: str  # ok, warning, critical
    verdict: str
    next_checks: tuple[str, ...]
    assumptions: tuple[str, ...]
    fixed_cost: FixedCost | None = None


@dataclass(frozen=True)
class FixedCost:
    """A sweep's time per call fitted as a + size / B over its largest sizes, beside the
    model's latency for the same call: the part of every call that no bandwidth explains."""

    measured_s: float  # a, the fitted time at size zero
    stderr_s: float  # its standard error (least squares)
    model_s: float  # the model's times at the same sizes, fitted alike (NCCL's tuner latencies)
    sizes: int  # message sizes fitted
    largest_time_s: float  # the fitted sizes' largest call
    ring_steps: int | None  # steps of the ring the model runs, None for another algorithm
    # where the model runs an all-reduce tree across nodes: the levels a tree level's added cost
    # (catalog tree_step_s) is charged at, each way, twice under Simple; None for another algorithm
    tree_levels: int | None = None

    @property
    def share(self) -> float:
        """Of the largest call's time, the fixed part."""
        return self.measured_s / self.largest_time_s

    @property
    def excessive(self) -> bool:
        """Well above the model's latency (beyond the fit's noise) and a visible share of the
        largest call."""
        return (
            self.measured_s - 2 * self.stderr_s >= FIXED_COST_RATIO * self.model_s
            and self.share >= FIXED_COST_SHARE
        )

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """The JSON reports' ``fixed_cost`` object (bench import, bench collective)."""
        return {
            "measured_ms": round(1e3 * self.measured_s, 4),
            "stderr_ms": round(1e3 * self.stderr_s, 4),
            "model_ms": round(1e3 * self.model_s, 4),
            "sizes": self.sizes,
            "share_of_largest": round(self.share, 4),
            "ring_steps": self.ring_steps,
            "tree_levels": self.tree_levels,
            "excessive": self.excessive,
        }


def fixed_cost_points(run: NcclTestsRun) -> dict[int, float]:
    """Seconds per call at the sizes a fixed-cost fit takes: SHORT_SWEEP_BYTES or more (below,
    NCCL's protocol changes with the size, each with its own latency, at thresholds its version
    and tuner plugin set) and within FIXED_COST_SPAN of the largest, each at its better of
    out-of-place and in-place time."""
    best: dict[int, float] = {}
    for r in run.rows:
        times = [t for t in (r.time_us, r.inplace_time_us) if t is not None and t > 0]
        if r.size_bytes > 0 and times:
            best[r.size_bytes] = min([*times, best.get(r.size_bytes, math.inf)]) * 1e-6
    largest = max(best, default=0)
    return {
        s: t for s, t in best.items() if s >= SHORT_SWEEP_BYTES and s * FIXED_COST_SPAN >= largest
    }


def fit_fixed_cost(points: dict[int, float]) -> tuple[float, float] | None:
    """Least squares time = a + size / B: (a, its standard error). None with fewer than three
    sizes, or where the time does not grow with size or the fitted a is not positive (noise,
    nothing to separate)."""
    if len(points) < 3:
        return None
    xs = sorted(points)
    ys = [points[x] for x in xs]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    a = my - slope * mx
    if slope <= 0 or a <= 0:
        return None
    resid = sum((y - a - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return a, math.sqrt(resid / (n - 2) * (1 / n + mx * mx / sxx))


def fixed_cost_text(fc: FixedCost) -> str:
    """The fixed-cost flag: what was fitted, beside the model, and what usually causes it."""
    # ring_steps and tree_levels are never both set: the model runs one algorithm
    waits = "tree waits at every level" if fc.tree_levels else "ring waits at every step"
    if fc.ring_steps:
        per_step = (
            f" ({1e6 * fc.measured_s / fc.ring_steps:.1f} µs for each of the ring's "
            f"{fc.ring_steps:,} steps, the model {1e6 * fc.model_s / fc.ring_steps:.1f} µs)"
        )
        offer = (
            "what a ring step costs on this network: "
            f"ring_step_s = {fc.measured_s / fc.ring_steps:.3g}"
        )
    elif fc.tree_levels:
        per_level = (fc.measured_s - fc.model_s) / fc.tree_levels
        per_step = (
            f" ({1e6 * per_level:.1f} µs more than the model at each of the tree's "
            f"{fc.tree_levels} levels, up and down)"
        )
        offer = (
            f"what a tree level adds on this network: tree_step_s = {per_level:.3g}"
            if per_level > 0
            else ""
        )
    else:
        per_step = offer = ""
    return (
        f"a fixed cost of {1e3 * fc.measured_s:.2f} ms per call (± {1e3 * fc.stderr_s:.2f} ms; time = a + "
        f"size/B over the {fc.sizes} largest sizes) where the model has {1e3 * fc.model_s:.2f} ms{per_step}: "
        f"{100 * fc.share:.0f}% of the largest call, and more of every smaller one, such as a training job's "
        f"gradient buckets. A {waits} for its slowest rank, so one node, NIC or link with a slow step "
        "(or a proxy thread short of CPU) sets it: run the sweep on disjoint pairs of nodes "
        "(or fabriclens bench p2p) to find it, then rerun without it"
        + (
            f". If it stays with every node healthy, it is {offer} on the network in your catalog "
            "(~/.config/fabriclens/catalog.toml) makes every plan price it"
            if offer
            else ""
        )
    )


def gpu_from_name(name: str) -> Gpu | None:
    """Match a device name as nccl-tests prints it ('NVIDIA H100 80GB HBM3') to the catalog."""
    wanted = name.lower().replace("nvidia", "").replace("geforce", "").strip()
    for gpu in gpus():
        if gpu.title.lower().replace("nvidia", "").replace("geforce", "").strip() == wanted:
            return gpu
    plain = " " + re.sub(r"[^a-z0-9]+", " ", wanted).strip() + " "
    for known in sorted(gpus(), key=lambda g: -len(g.name)):
        if f" {known.name.replace('-', ' ')} " in plain:
            return known
    for alias_key in ("h200", "b200", "l40s", "rtx 4090", "rtx 3090", "rtx 5090"):
        if alias_key in wanted:
            return find_gpu(alias_key.replace(" ", "-"))
    if "h100" in wanted:
        return find_gpu("h100-pcie" if "pcie" in wanted else "h100-sxm")
    if "a100" in wanted:
        big = "80" in wanted
        pcie = "pcie" in wanted
        return find_gpu(f"a100-{'pcie' if pcie else 'sxm'}-{'80' if big else '40'}gb")
    return None


def largest_row_factor(run: NcclTestsRun, min_algbw_GBps: float) -> tuple[Row, float] | None:
    """The largest message's row among those of at least ``min_algbw_GBps`` algbw, and its
    busbw/algbw: nccl-tests' bus factor, which names the op and the rank count (two printed
    decimals on each column: the faster the row, the finer the ratio)."""
    rows = [r for r in run.rows if r.algbw_GBps >= min_algbw_GBps and r.algbw_GBps > 0]
    if not rows:
        return None
    row = max(rows, key=lambda r: r.size_bytes)
    return row, row.busbw_GBps / row.algbw_GBps


def _share_gap(op: str, ratio: float) -> float | None:
    """1/n from a bus factor: 2(n-1)/n for all_reduce, (n-1)/n for the ops in SHARE_OPS; None
    for ops whose factor does not depend on n."""
    if op == "all_reduce":
        return (2.0 - ratio) / 2.0
    return 1.0 - ratio if op in SHARE_OPS else None


def infer_op_and_ranks(run: NcclTestsRun) -> tuple[str, int] | None:
    """Without a header: nccl-tests' busbw/algbw factor 2(n-1)/n > 1 means all_reduce on
    n = 2/(2 - factor) ranks (other ops have factors <= 1, which do not tell n apart)."""
    found = largest_row_factor(run, 0.1)
    if found is None:
        return None
    row, factor = found
    if row.rooted or factor <= 1.02 or factor >= 2:
        return None
    n = round(2 / (2 - factor))
    return ("all_reduce", n) if abs(2 * (n - 1) / n - factor) < 0.03 else None


MiB = 1 << 20
SHORT_SWEEP_BYTES = 64 * MiB  # below this the busbw of most fabrics is still rising


def flags(run: NcclTestsRun) -> list[tuple[str, str, str]]:
    """What is odd about a pasted run, as (id, level, text): separate runs pasted together, the
    same GPU twice, corrupted results, a sweep too short or cut, no rows at all."""
    out: list[tuple[str, str, str]] = []
    hosts_of_rank: dict[int, set[str]] = {}
    lines_of_rank: Counter[int] = Counter()
    for rank, host, _, _ in run.rank_lines:
        hosts_of_rank.setdefault(rank, set()).add(host)
        lines_of_rank[rank] += 1
    dup = sorted(r for r, h in hosts_of_rank.items() if len(h) > 1 or lines_of_rank[r] > 1)
    runs_on_one_host = all(len(h) == 1 for h in hosts_of_rank.values()) and len(set(run.hosts)) <= 1
    if (run.headers > 1 or dup) and runs_on_one_host:
        out.append(("separate-runs", "critical",
                    f"{max(run.headers, 2)} runs on one host in this output (rank {dup[0] if dup else 0} listed again): runs "
                    "pasted one after another, or processes that each ran alone (nccl-tests built without MPI=1 under "
                    "mpirun); only the first table is judged"))  # fmt: skip
    elif run.headers > 1 or dup:
        where = (
            f"rank {dup[0]} is listed on {', '.join(sorted(hosts_of_rank[dup[0]]))}"
            if dup
            else f"{run.headers} '# nThread' headers"
        )
        out.append(("separate-runs", "critical",
                    f"{where}: each host ran its own job, so nothing crossed the network — nccl-tests was not "
                    "built with MPI=1 (make MPI=1; `mpirun -x MPI=1` only sets a variable) or not launched as one MPI job"))  # fmt: skip
    # on one host, each header starting its own sweep is a run pasted after another (said above)
    if run.size_restarts and not (runs_on_one_host and run.size_restarts < run.headers):
        out.append(("interleaved-rows", "critical",
                    f"message sizes restart {run.size_restarts} time(s) mid-table (non-monotonic): two processes printed "
                    "separate runs into one output — not one multi-node job (build nccl-tests with MPI=1)"))  # fmt: skip
    if run.dropped_rows:
        out.append(("rows-not-read", "warning",
                    f"{run.dropped_rows:,} result rows after the first {len(run.rows):,} were not read (a file of "
                    "many runs): give one run per file"))  # fmt: skip
    if run.implausible_rows:
        out.append(("implausible-rows", "warning",
                    f"{run.implausible_rows:,} result row(s) left out: a negative time or bandwidth, or a bus bandwidth "
                    f"of {MAX_PLAUSIBLE_GBPS / 1e3:,.0f} TB/s or more — values no run "
                    "prints, so the table was edited or corrupted: paste the test's own output"))  # fmt: skip
    if run.runs_after_rows:
        out.append(("two-runs-pasted", "warning",
                    f"another run follows the first table ({', '.join(dict.fromkeys(run.ops_seen)) or 'a second command'}): "
                    "only the first table is judged"))  # fmt: skip
    # nccl-tests prints the PCI bus number alone ([0x10]): two GPUs may share one (p4d's pairs,
    # other VMs), so only the same bus under the same device index is taken for one GPU twice
    seen: dict[tuple[str, str, int], int] = {}
    for rank, host, dev, bus in run.rank_lines:
        if bus.strip("0x:") == "":
            continue  # cloud VMs put every GPU on bus 0
        if (host, bus, dev) in seen and seen[(host, bus, dev)] != rank:
            out.append(("same-device-twice", "warning",
                        f"ranks {seen[(host, bus, dev)]} and {rank} on {host} report the same device {dev} and PCI bus "
                        f"[{bus}]: one GPU used twice (check CUDA_VISIBLE_DEVICES and the launcher's GPU binding)"))  # fmt: skip
            break
        seen[(host, bus, dev)] = rank
    bad = [r for r in run.rows if r.wrong or r.inplace_wrong]
    if bad:
        r = bad[0]
        counts = " / ".join(str(w) for w in (r.wrong, r.inplace_wrong) if w is not None)
        out.append(("wrong-results", "critical",
                    f"#wrong {counts} (out-of-place / in-place) at {r.size_bytes:,} bytes: DATA CORRUPTION — the collective returned wrong values "
                    "(suspect the NIC/PCIe path, GPUDirect with ACS, or a buggy NCCL/driver combination)"))  # fmt: skip
    deviant = [r for r in run.rows if r.error is not None and r.error >= 1e-2]
    if deviant:
        out.append(("validation-error", "critical",
                    f"the old 'error' column reads {deviant[0].error:g} at {deviant[0].size_bytes:,} bytes: results failed validation"))  # fmt: skip
    elif run.has_error_column and run.rows:
        out.append(("error-column", "info",
                    "old layout: the 'error' column is the largest numerical deviation (e.g. 1e-06), not a count of wrong "
                    "elements; small values are normal"))  # fmt: skip
    if run.failure:
        out.append(("test-failed", "critical",
                    f"the test stopped on an error: {run.failure} — that error, not the bandwidth, is the finding "
                    "(rerun with NCCL_DEBUG=WARN and read it with fabriclens logs)"))  # fmt: skip
    if not run.rows and run.failure:
        out.append(
            (
                "no-rows",
                "critical",
                "no result rows: the test failed before its first message size completed",
            )
        )
        return out
    if not run.rows and run.implausible_rows:
        out.append(
            ("no-rows", "critical", "no result rows left to judge (see the rows left out above)")
        )
        return out
    if not run.rows:
        one_host = len(set(run.hosts)) == 1 and len(run.ranks) > 1
        out.append(("no-rows", "critical" if (run.headers or run.ranks) else "warning",
                    "no result rows: the run hung before the first message size, or the output stops before the table"
                    + ("; on one machine a hang there is often GPU peer-to-peer that an IOMMU or PCIe ACS blocks "
                       "(dmesg | grep -i -e DMAR -e IOMMU; lspci -vvv | grep ACSCtl; NCCL_P2P_DISABLE=1 to confirm; "
                       "AMD hosts: iommu=pt)" if one_host else "")))  # fmt: skip
        return out
    largest = max(r.size_bytes for r in run.rows)
    if run.world_size == 1:
        out.append(
            (
                "single-rank",
                "info",
                "one rank: busbw is 0 by definition and algbw is a local copy; nothing crossed a link",
            )
        )
    elif largest < SHORT_SWEEP_BYTES:
        out.append(("sweep-short", "warning",
                    f"the largest message is {largest:,} bytes: bandwidth is still rising there — insufficient data to judge "
                    "the plateau (run to -e 1G or more)"))  # fmt: skip
    if any(r.size_bytes == 0 for r in run.rows):
        out.append(
            (
                "size-zero",
                "info",
                "rows of size 0: the requested size is below ranks x type size; they are ignored",
            )
        )
    if run.cut_rows:
        out.append(
            (
                "row-truncated",
                "info",
                "a row stops after the out-of-place columns: the output was truncated",
            )
        )
    if run.avg_busbw_GBps is None:
        out.append(
            (
                "no-summary",
                "info",
                "no 'Avg bus bandwidth' line: the output is cut (or the run hung) after the last row",
            )
        )
    if run.elided:
        out.append(("elided", "info", "rows were replaced by '...' in the paste"))
    dip = busbw_dip(run)
    if dip is not None:
        (lo_size, hi_size, low), before, after = dip
        out.append(("busbw-dip", "warning",
                    f"busbw drops to {low:.3g} GB/s at {lo_size:,}-{hi_size:,} bytes, between {before:.3g} GB/s below "
                    f"and {after:.3g} GB/s above: those sizes stall (the protocol or algorithm NCCL picks for them, or a "
                    "path that retransmits); rerun them with NCCL_PROTO=Simple and with NCCL_ALGO=Ring to isolate it, "
                    "and see what changes there with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING"))  # fmt: skip
    collapse = busbw_collapse(run)
    if collapse is not None:
        (peak_size, peak), (from_size, low) = collapse
        out.append(("busbw-collapse", "warning",
                    f"busbw falls from {peak:.3g} GB/s at {peak_size:,} bytes to {low:.3g} GB/s from {from_size:,} bytes on: "
                    "the path NCCL takes for large messages (the algorithm or protocol it switches to at that size, or a "
                    "link those sizes reach) runs slower than the one before; compare NCCL_ALGO=Ring and NCCL_PROTO=Simple, "
                    "and see what changed with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING"))  # fmt: skip
    return out


def busbw_dip(run: NcclTestsRun) -> tuple[tuple[int, int, float], float, float] | None:
    """Two or more consecutive sizes whose busbw falls below a quarter of the best smaller size
    and a larger size that climbs back above that best: ((first, last size, lowest busbw),
    best before, best after). A fall that never recovers is busbw_collapse's."""
    rows = sorted((r for r in run.rows if r.size_bytes > 0), key=lambda r: r.size_bytes)
    best_before = 0.0
    i = 0
    while i < len(rows):
        bw = rows[i].best_busbw_GBps
        if best_before > 0 and bw < best_before / 4:
            j = i
            while j < len(rows) and rows[j].best_busbw_GBps < best_before / 4:
                j += 1
            after = max((r.best_busbw_GBps for r in rows[j:]), default=0.0)
            if j - i >= 2 and after > best_before:
                low = min(r.best_busbw_GBps for r in rows[i:j])
                return (rows[i].size_bytes, rows[j - 1].size_bytes, low), best_before, after
            i = j
            continue
        best_before = max(best_before, bw)
        i += 1
    return None


def busbw_collapse(run: NcclTestsRun) -> tuple[tuple[int, float], tuple[int, float]] | None:
    """A sweep whose busbw, from some size on to its largest, stays below half of the best it
    reached at a smaller size of 1 MiB or more: ((peak size, busbw), (first low size, busbw))."""
    rows = sorted((r for r in run.rows if r.size_bytes >= 1 << 20), key=lambda r: r.size_bytes)
    if len(rows) < 3:
        return None
    best = max(range(len(rows)), key=lambda i: rows[i].best_busbw_GBps)
    peak = rows[best].best_busbw_GBps
    tail = rows[best + 1 :]
    start = next(
        (i for i in range(len(tail)) if all(r.best_busbw_GBps < peak / 2 for r in tail[i:])), None
    )
    if start is None or len(tail) - start < 2:  # one slow row is an outlier, not a collapse
        return None
    return (rows[best].size_bytes, peak), (tail[start].size_bytes, tail[start].best_busbw_GBps)


def infer_op(run: NcclTestsRun, ranks: int) -> str | None:
    """Tell the collective from busbw/algbw (nccl-tests' factor) and the reduction column:
    2(n-1)/n is all_reduce; (n-1)/n with a reduction is reduce_scatter; without one it is
    all_gather or alltoall, whose rows (size, count, `none`, -1) nccl-tests prints alike. A row
    whose root column names a rank is broadcast or reduce (factor 1), or gather or scatter."""
    found = largest_row_factor(run, 0.0)
    if found is not None and found[0].rooted and found[0].reduces:
        return "reduce"  # the one op with both a root and a reduction, whatever the rank count
    if found is None or ranks < 2:
        return None
    row, ratio = found
    if row.rooted:  # broadcast and reduce move the buffer once (factor 1); gather and scatter
        # share (n-1)/n and print alike rows
        if abs(ratio - 1.0) < 0.02 and abs(ratio - (ranks - 1) / ranks) >= 0.02:
            return "reduce" if row.reduces else "broadcast"
        return None
    if abs(ratio - 2 * (ranks - 1) / ranks) < 0.02:
        return "all_reduce"
    if abs(ratio - (ranks - 1) / ranks) < 0.02 and row.reduces:
        return "reduce_scatter"  # all_gather and alltoall share the factor and print no reduction
    if row.root == -1 and abs(ratio - 1.0) < 0.02 and abs(ratio - (ranks - 1) / ranks) >= 0.02:
        return "send_recv"  # factor 1 without a root (nccl-tests prints `sum -1` on its rows)
    return None


def ranks_from_factor(run: NcclTestsRun, op: str) -> int | None:
    """The rank count nccl-tests' bus factor implies for ``op`` (all_reduce 2(n-1)/n; all_gather,
    reduce_scatter, alltoall, gather, scatter (n-1)/n), read on the largest row; None where the
    factor does not tell (other ops, or busbw printed too coarsely to resolve it)."""
    found = largest_row_factor(run, 1.0)
    gap = _share_gap(op, found[1]) if found else None  # = 1/n
    if found is None or gap is None or not 0.0 < gap < 0.5:
        return None
    row = found[0]
    n = round(1.0 / gap)
    # both columns carry two decimals: the ratio must resolve n from n - 1 and n + 1
    step = abs((n - 1) / n - n / (n + 1)) * (2.0 if op == "all_reduce" else 1.0)
    return n if 0.01 / row.algbw_GBps < step / 2 else None


def factor_disagrees(run: NcclTestsRun, op: str, n: int) -> float | None:
    """busbw/algbw of the largest row when it cannot come from ``n`` ranks of ``op`` (beyond
    what two printed decimals allow): the rank list is incomplete. None when it fits."""
    found = largest_row_factor(run, 1.0)
    gap = _share_gap(op, found[1]) if found else None  # 1/n of the factor
    if found is None or gap is None:
        return None
    row, ratio = found
    factor = bus_factor(op, n)  # type: ignore[arg-type]
    slack = 0.011 * (1.0 + ratio) / row.algbw_GBps + 1e-4  # two printed decimals on each
    # only more ranks than listed (a cut list): an edited or mixed paste may show anything
    more = gap > 0 and 1.0 / gap > 1.5 * n
    return ratio if abs(ratio - factor) > slack and more else None


def plateau(run: NcclTestsRun) -> tuple[int, float]:
    """(size, busbw) of the large-message plateau: median over sizes within 4x of the largest."""
    if not run.rows:
        raise InputError(
            "no result rows found in the nccl-tests output", "give the file nccl-tests printed"
        )
    largest = max(r.size_bytes for r in run.rows)
    big = [r for r in run.rows if r.size_bytes * 4 >= largest]
    return largest, statistics.median(r.best_busbw_GBps for r in big)


def judge(
    run: NcclTestsRun,
    *,
    op: str | None = None,
    gpu: str | None = None,
    ranks: int | None = None,
    gpus_per_node: int | None = None,
    network: str | None = None,
    nics_per_node: int | None = None,
) -> Verdict:
    """Compare a parsed run with the collective model."""
    n = ranks or run.world_size
    notes: list[str] = []
    guess = infer_op_and_ranks(run)
    if n < 2 and guess is not None and (op or run.op or guess[0]) == guess[0]:
        n = guess[1]
        notes.append(
            f"no rank list in the log: busbw/algbw = 2(n-1)/n gives all_reduce on {n} ranks"
        )
    name = op or run.op or infer_op(run, n) or (guess[0] if guess else None)
    if name is None:
        last = max(run.rows, key=lambda r: r.size_bytes) if run.rows else None
        found = largest_row_factor(run, 1.0)
        # without a rank list, a factor below 1 on rows without a reduction still says (n-1)/n
        unreduced = (
            last is not None
            and not last.reduces
            and (n >= 2 or (found is not None and found[1] < 0.99))
        )
        pair = ("gather", "scatter") if last and last.rooted else ("all_gather", "alltoall")
        raise InputError(
            "cannot tell which collective this is"
            + (f": {pair[0]} and {pair[1]} print alike rows (no reduction)" if unreduced else ""),
            f"give --op {pair[0]} or --op {pair[1]}" if unreduced
            else "give --op all_reduce (or the op that ran)",
        )  # fmt: skip
    if op is None and run.op is None and name == "all_reduce" and n == 2:
        notes.append(
            "the log does not name its op, and on two ranks all_reduce and sendrecv print alike rows "
            "(busbw = algbw): judged as all_reduce, whose expectation is the same (--op sendrecv names it)"
        )
    name = op_name(name)  # the tests' names (alltoall, sendrecv) and the user's spellings
    factor_n = ranks_from_factor(run, name)
    if n < 2 and factor_n is not None and ranks is None:
        n = factor_n
        notes.append(f"no rank list in the log: busbw/algbw = (n-1)/n gives {n} ranks")
    if name not in OPS:
        raise InputError(f"collective {name!r} is not modelled", f"use one of {', '.join(OPS)}")
    if n < 2:
        raise InputError(
            "the number of ranks is unknown",
            "give --ranks (the header lines listing ranks are missing)",
        )
    spec = find_gpu(gpu) if gpu else (gpu_from_name(run.gpu_names[0]) if run.gpu_names else None)
    if spec is None:
        raise InputError("cannot tell which GPU ran", "give --gpu (fabriclens catalog gpus)")
    hosts = run.hosts if run.header_complete else []
    gpn = gpus_per_node or (max(1, n // len(hosts)) if hosts else None)
    if gpus_per_node is None and hosts:
        notes.append(f"{len(hosts)} host(s) and {n} ranks in the log: {gpn} GPUs per node")
    elif gpus_per_node is None and run.ranks and not run.header_complete:
        notes.append(
            f"the log lists {len(run.ranks)} of its {run.world_size} ranks: GPUs per node not "
            "read from it (give --gpus-per-node)"
        )
    domain = spec.max_gpus_per_node
    if gpn is None and domain > 8 and n > domain and n % domain:
        # an NVLink domain across hosts (GB200 NVL72) is often used in part: 16 of its 18 trays
        fits = [d for d in range(domain, domain // 2 - 1, -1) if n % d == 0]
        if fits:
            gpn = fits[0]
            notes.append(
                f"{n} ranks do not fill NVLink domains of {domain}: taken as {n // gpn} domains of "
                f"{gpn} GPUs (give --gpus-per-node)"
            )
    transport = (run.transport or "").lower()
    if network is None and ("libfabric" in transport or "ofi" in transport):
        raise InputError(
            f"the log's NCCL lines say its network is {run.transport} (AWS EFA, or HPE "
            "Slingshot, through aws-ofi-nccl), which the default InfiniBand expectation does "
            "not describe",
            "give --network aws-efa-p4d, aws-efa-p5, aws-efa-p5en or slingshot-11 "
            "(--nics-per-node for other instance types)",
        )
    if network is None and transport == "socket":
        notes.append(
            "the log's NCCL lines say NET/Socket: TCP, judged against the default RDMA network"
        )
    if (ranks is None and n >= 2 and run.header_complete
            and (said := factor_disagrees(run, name, n)) is not None):  # fmt: skip
        raise InputError(
            f"the rank list shows {n} ranks, but busbw/algbw = {said:.4f} is not 2(n-1)/n or "
            f"(n-1)/n for n = {n}: the list was cut",
            "give --ranks (and --gpus-per-node)",
        )
    fabric, more = resolve_fabric(
        spec, n, gpus_per_node=gpn, network_name=network, nics_per_node=nics_per_node
    )
    notes += more
    size, measured = plateau(run)
    if run.world_size == 1 or n == 1:
        raise InputError("one rank: nothing to judge", "run with two or more ranks")
    est = estimate_collective(name, size, n, fabric)
    algo = "auto"
    if est.algorithm == "nvls_tree":
        # two NVLS nodes: a run may have forced the ring (as NCCL's staff advise for measuring the
        # network); judge it against the ring's network bound, and say what NVLSTree reaches
        tree = est.busbw_bytes_per_s / 1e9
        algo = "ring"
        est = estimate_collective(name, size, n, fabric, algorithm=algo)
        notes.append(
            f"two nodes: judged against the ring's network bound ({est.busbw_bytes_per_s / 1e9:.1f} "
            f"GB/s); NVLSTree, NCCL's default here, reaches about {tree:.0f} GB/s"
        )
    expected = est.busbw_bytes_per_s / 1e9
    # the expectation is the model's at the same size, latency included, so a short sweep is still
    # judged like for like; say so when, on this fabric, that size is short of the bandwidth plateau
    asymptote = (
        estimate_collective(name, 1 << 40, n, fabric, algorithm=algo).busbw_bytes_per_s / 1e9
    )
    if asymptote and expected < 0.5 * asymptote:  # latency-bound: nothing about the links to judge
        raise InputError(
            f"insufficient data: the largest message is {size:,} bytes, where this fabric is still "
            f"latency-bound (the model gives {expected:.2f} of its {asymptote:.1f} GB/s there)",
            "sweep to larger messages (nccl-tests -e 1G; fabriclens bench collective --max-bytes 1GB)",
        )
    if asymptote and expected < 0.9 * asymptote:
        notes.append(
            f"the largest message ({size:,} bytes) is below this fabric's bandwidth plateau: the model "
            f"gives {expected:.1f} of {asymptote:.1f} GB/s there (latency still counts); a longer sweep "
            "judges the links alone"
        )
    eff = measured / expected if expected else 0.0
    crosses = est.nodes > 1
    # the model's times at the same sizes, fitted alike: its protocol may change between them
    points = fixed_cost_points(run)
    fit = fit_fixed_cost(points)
    fixed = None
    if fit is not None:
        model = {s: estimate_collective(name, s, n, fabric, algorithm=algo).time_s for s in points}
        model_fit = fit_fixed_cost(model)
        fixed = FixedCost(measured_s=fit[0], stderr_s=fit[1], model_s=model_fit[0] if model_fit else est.latency_s,
                          sizes=len(points), largest_time_s=points[max(points)],
                          ring_steps=ring_steps(name, n) if est.algorithm == "ring" or name == "all_to_all" else None,
                          tree_levels=tree_levels(est) if est.algorithm == "tree" else None)  # fmt: skip
    if eff >= OK_EFFICIENCY:
        level, text = (
            "ok",
            f"busbw {measured:.1f} GB/s is {100 * eff:.0f}% of the {expected:.1f} GB/s expected: healthy",
        )
        if eff > 1.05 and est.nodes == 2 and name == "all_reduce":
            text += (" (above 100%: on two nodes NCCL's tree sends each byte across the network once, beating the "
                     "ring bound busbw assumes; force NCCL_ALGO=Ring to measure the network against it)")  # fmt: skip
        elif eff > 1.05:
            text += " (above 100%: the model's efficiency for this fabric is conservative, or NVLS/SHARP offloads the reduction)"
        checks: tuple[str, ...] = ()
    else:
        level = "warning" if eff >= WARN_EFFICIENCY else "critical"
        text = f"busbw {measured:.1f} GB/s is only {100 * eff:.0f}% of the {expected:.1f} GB/s expected"
        if crosses:
            checks = (
                "NCCL on sockets? run with NCCL_DEBUG=INFO and look for NET/IB (RDMA) rather than NET/Socket",
                "RoCE: PFC pause and ECN/CNP counters (ethtool -S, /sys/class/infiniband/*/ports/*/hw_counters)",
                "every NIC up at full speed (ibstatus / ethtool), one NIC per GPU in `nvidia-smi topo -m` (PIX)",
                "a slow node: fabriclens bench p2p (every pair, the slow node named)",
            )
        else:
            checks = (
                "`nvidia-smi topo -m`: are the GPUs joined by NV# links, or only PIX/PHB/SYS (PCIe)?",
                "`nvidia-smi nvlink -s`: every NVLink up",
                "NCCL_P2P_DISABLE / NCCL_NVLS_ENABLE set in the environment?",
                "PCIe links at full generation and width (nvidia-smi -q | grep -A3 'Link Width')",
            )
    if run.avg_busbw_GBps is not None:
        notes.append(f"the log's 'Avg bus bandwidth' ({run.avg_busbw_GBps:.2f} GB/s) averages every size, including tiny ones: "
                     "the plateau is the figure to compare")  # fmt: skip
    notes.append(
        f"plateau: median best-of-in/out-of-place busbw over sizes within 4x of {size:,} bytes"
    )
    notes.append(
        f"expected: {est.algorithm} on {fabric.intra.name}"
        + (f" ({fabric.intra.title})" if fabric.intra.title else "")
        + (
            f" and {fabric.network.name} x {fabric.nics_per_node}"
            if crosses and fabric.network
            else ""
        )
    )
    return Verdict(
        op=name, ranks=n, nodes=est.nodes, gpus_per_node=fabric.gpus_per_node, gpu=spec.name,
        network=fabric.network.name if fabric.network and crosses else "none", plateau_size_bytes=size,
        plateau_busbw_GBps=measured, expected_busbw_GBps=expected, efficiency=eff, level=level, verdict=text,
        next_checks=checks, assumptions=tuple(notes), fixed_cost=fixed,
    )  # fmt: skip


def detected_network(
    rdma_ports: list[tuple[float, str]], nic_speed_mbps: int | None
) -> tuple[str | None, int | None, str]:
    """The network to judge a collective against, from what this node has: its active RDMA
    ports as (rate in Gbit/s, link layer), else the negotiated speed of the NIC that carries the
    job's traffic. Returns (network id or wire rate, NICs per node, how it was found); a network
    id is None when nothing fits (say so, never guess)."""
    from collections import Counter

    from fabriclens.catalog import networks

    if rdma_ports:
        (rate, layer), count = Counter(rdma_ports).most_common(1)[0]
        kind = "ib" if layer.lower() == "infiniband" else "roce"
        match = next(
            (n for n in networks() if n.kind == kind and n.rate_bits_per_s == rate * 1e9), None
        )
        how = f"{count} active {layer} RDMA port(s) at {rate:g} Gbit/s"
        if match is None:
            return None, count, f"{how}: no catalog network matches (give --network)"
        return match.name, count, f"{how} -> {match.name}"
    if nic_speed_mbps:
        match = next(
            (
                n
                for n in networks()
                if n.kind == "tcp" and n.rate_bits_per_s == nic_speed_mbps * 1e6
            ),
            None,
        )
        name = match.name if match else f"{nic_speed_mbps}mbit"
        return (
            name,
            1,
            f"no RDMA ports; the job's NIC negotiated {nic_speed_mbps:,} Mb/s -> {name} (TCP)",
        )
    return (
        None,
        None,
        "no RDMA ports and no physical NIC with a known speed on the job's route (give --network)",
    )
