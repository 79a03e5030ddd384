"""Pairwise results: the rounds of disjoint pairs, the slow node by bandwidth and by latency."""

from __future__ import annotations

from itertools import combinations

import pytest

from fabriclens.measure.collective import latency_report, p2p_report, pair_rounds


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 16])
def test_rounds_cover_every_pair_once_in_n_rounds(n: int) -> None:
    rounds = pair_rounds(n)
    seen = [tuple(sorted(p)) for r in rounds for p in r]
    assert sorted(seen) == sorted(combinations(range(n), 2))  # every pair, once
    assert all(len({x for p in r for x in p}) == 2 * len(r) for r in rounds)  # disjoint in a round
    assert len(rounds) <= n  # O(N), not O(N^2)


HOSTS = ["a", "b", "c", "d"]


def test_the_node_slow_with_every_peer_is_named() -> None:
    bw = {p: 1.0 for p in combinations(range(4), 2)} | {(0, 3): 0.4, (1, 3): 0.4, (2, 3): 0.45}
    report = p2p_report(bw, HOSTS)
    assert report["suspect_nodes"] == ["d"] and report["worst_pairs"][0]["ranks"] == [0, 3]
    one_bad_link = {p: 1.0 for p in combinations(range(4), 2)} | {(0, 1): 0.3}
    assert p2p_report(one_bad_link, HOSTS)["suspect_nodes"] == []  # a link, not a node


def test_latency_suspects() -> None:
    lat = {p: 100.0 for p in combinations(range(4), 2)} | {
        (0, 2): 2100.0,
        (1, 2): 2150.0,
        (2, 3): 2080.0,
    }
    report = latency_report(lat, HOSTS)
    assert report["latency_suspect_nodes"] == ["c"] and report[
        "median_latency_us"
    ] == pytest.approx(1090.0)
    assert [p["us"] for p in report["worst_latency_pairs"][:3]] == [2150.0, 2100.0, 2080.0]
    assert latency_report({}, HOSTS)["median_latency_us"] is None


def test_latency_suspect_under_load_is_judged_against_the_same_run() -> None:
    """A lab run on a loaded 2-core machine: every exchange waits ~1 ms for a core, and host c's
    2 ms delay adds ~1 ms more to each of its pairs (node medians 1,086-1,207 us and 2,136 us):
    c is named although its median is under twice the typical node's."""
    lat = {(0, 1): 1010.0, (0, 3): 1085.0, (1, 3): 1207.0,
           (0, 2): 2136.0, (1, 2): 2190.0, (2, 3): 2050.0}  # fmt: skip
    assert latency_report(lat, HOSTS)["latency_suspect_nodes"] == ["c"]
    noisy = {p: 1000.0 + 150 * i for i, p in enumerate(combinations(range(4), 2))}
    assert latency_report(noisy, HOSTS)["latency_suspect_nodes"] == []  # noise names nobody


def test_nearest_rank() -> None:
    from fabriclens.measure.order_stats import nearest_rank

    ten = [float(i) for i in range(1, 11)]
    assert (
        nearest_rank(ten, 0.5) == 6.0
        and nearest_rank(ten, 0.99) == 10.0
        and nearest_rank(ten, 0.0) == 1.0
    )
    assert nearest_rank([3.0], 0.99) == 3.0  # one sample is every percentile
