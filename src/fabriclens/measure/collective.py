"""Collective and pairwise benchmark figures, nccl-tests conventions (pure).

Sizes are nccl-tests' "size": the bytes of the array each rank holds for all_reduce, broadcast
and reduce, the whole (gathered / scattered) array for all_gather, reduce_scatter, gather and
scatter, the send buffer for all_to_all and send_recv. algbw = size / time; busbw = algbw x the bus factor.
The time of a size is the slowest rank's mean over the timed iterations.
"""

from __future__ import annotations

import statistics
from typing import Any

from fabriclens.measure.order_stats import nearest_rank
from fabriclens.model.collectives import bus_factor


def sweep(min_bytes: int, max_bytes: int, factor: float) -> list[int]:
    """Sizes from ``min_bytes`` to ``max_bytes``, each ``factor`` times the last."""
    sizes, size = [], float(min_bytes)
    while size <= max_bytes * (1 + 1e-9):
        sizes.append(int(size))
        size *= factor
    return sizes


def iteration_stats(times_s: list[float]) -> dict[str, float]:
    """Mean, p50, p99 and coefficient of variation of one rank's iteration times."""
    ordered = sorted(times_s)
    mean = statistics.fmean(ordered)
    return {
        "mean_s": mean,
        "p50_s": nearest_rank(ordered, 0.5),
        "p99_s": nearest_rank(ordered, 0.99),
        "cv": statistics.pstdev(ordered) / mean if mean > 0 else 0.0,
    }


def size_row(
    op: str, size_bytes: int, ranks: int, per_rank: list[dict[str, float]]
) -> dict[str, Any]:
    """One size's row from every rank's iteration statistics."""
    slowest = max(per_rank, key=lambda s: s["mean_s"])
    t = slowest["mean_s"]
    algbw = size_bytes / t / 1e9 if t > 0 else 0.0
    factor = 1.0 if op == "send_recv" else bus_factor(op, ranks)  # type: ignore[arg-type]
    return {
        "size_bytes": size_bytes,
        "time_us": 1e6 * t,
        "p50_us": 1e6 * slowest["p50_s"],
        "p99_us": 1e6 * max(s["p99_s"] for s in per_rank),
        "cv": slowest["cv"],
        "slowest_rank": per_rank.index(slowest),
        "algbw_GBps": algbw,
        "busbw_GBps": algbw * factor,
    }


def pair_rounds(n: int) -> list[list[tuple[int, int]]]:
    """Every pair of ``n`` ranks once, in rounds of disjoint pairs (the circle method): n - 1
    rounds for even n, n for odd n — O(n) rounds, not O(n^2)."""
    ids = list(range(n)) + ([-1] if n % 2 else [])
    m = len(ids)
    rounds = []
    for _ in range(m - 1):
        pairs = [(ids[i], ids[m - 1 - i]) for i in range(m // 2)]
        rounds.append([(min(a, b), max(a, b)) for a, b in pairs if a >= 0 and b >= 0])
        ids = [ids[0], ids[-1], *ids[1:-1]]
    return rounds


def node_medians(
    pairs: dict[tuple[int, int], float], hosts: list[str]
) -> tuple[dict[str, float], float]:
    """Each node's median over its pairs with other nodes, and the typical node's (the median of
    those; the median pair where all ranks share one node)."""
    nodes: dict[str, list[float]] = {}
    for (a, b), value in pairs.items():
        if hosts[a] != hosts[b]:
            nodes.setdefault(hosts[a], []).append(value)
            nodes.setdefault(hosts[b], []).append(value)
    by_node = {h: statistics.median(v) for h, v in nodes.items()}
    typical = statistics.median(by_node.values()) if by_node else statistics.median(pairs.values())
    return by_node, typical


def p2p_report(
    matrix: dict[tuple[int, int], float], hosts: list[str], slow: float = 0.7
) -> dict[str, Any]:
    """Worst pairs and suspect nodes from pairwise bandwidths (GB/s, both directions measured).

    A node is suspect when the median of its pairs is below ``slow`` x the median over nodes:
    one slow pair may be a link; a node whose every pair is slow is the node."""
    overall = statistics.median(matrix.values())
    worst = sorted(matrix.items(), key=lambda kv: kv[1])
    by_node, typical = node_medians(matrix, hosts)
    suspects = sorted(
        (h for h, m in by_node.items() if m < slow * typical), key=lambda h: by_node[h]
    )
    return {
        "median_GBps": overall,
        "worst_pairs": [{"ranks": [a, b], "hosts": [hosts[a], hosts[b]], "GBps": bw,
                         "of_median": bw / overall if overall else 0.0} for (a, b), bw in worst[:10]],
        "node_median_GBps": by_node,
        "suspect_nodes": suspects,
    }  # fmt: skip


def _slow_to_answer(
    latency_us: dict[tuple[int, int], float], hosts: list[str], slow: float
) -> list[str]:
    """Nodes whose pairs stand apart from the pairs that do not involve them, in the same run:
    the node's median over ``slow`` x the others' median and above the others' slowest pair. A
    machine that is slow for everyone (ranks waiting for a core) moves both sides alike."""
    out = []
    for h in sorted(set(hosts)):
        mine = [
            v
            for (a, b), v in latency_us.items()
            if h in (hosts[a], hosts[b]) and hosts[a] != hosts[b]
        ]
        others = [v for (a, b), v in latency_us.items() if h not in (hosts[a], hosts[b])]
        if not mine or not others:
            continue
        m = statistics.median(mine)
        if m > slow * statistics.median(others) and m > max(others):
            out.append((m, h))
    return [h for _, h in sorted(out, reverse=True)]


def latency_report(
    latency_us: dict[tuple[int, int], float], hosts: list[str], slow: float = 1.5
) -> dict[str, Any]:
    """Small-message one-way latency per pair (microseconds): the median, the worst pairs, and the
    nodes slow to answer: their median pair over ``slow`` x that of the pairs without them, and
    above the slowest of those."""
    if not latency_us:
        return {"median_latency_us": None, "worst_latency_pairs": [], "node_median_latency_us": {},
                "latency_suspect_nodes": []}  # fmt: skip
    overall = statistics.median(latency_us.values())
    by_node, _ = node_medians(latency_us, hosts)
    worst = sorted(latency_us.items(), key=lambda kv: -kv[1])[:10]
    return {
        "median_latency_us": overall,
        "worst_latency_pairs": [
            {"ranks": [a, b], "hosts": [hosts[a], hosts[b]], "us": us} for (a, b), us in worst
        ],
        "node_median_latency_us": by_node,
        "latency_suspect_nodes": _slow_to_answer(latency_us, hosts, slow),
    }
