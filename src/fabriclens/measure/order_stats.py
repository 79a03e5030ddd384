"""Percentiles of timed samples by the nearest-rank rule: the value at index int(q x n) of the
sorted samples (never interpolated, so a reported p99 is a time that really happened)."""

from __future__ import annotations

from collections.abc import Sequence


def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``ordered`` (sorted ascending, not empty)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
