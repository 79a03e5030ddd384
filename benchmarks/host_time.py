"""Why eager PyTorch carries a host time per layer: its published runs against the GPU work a
layer's micro-batch holds.

    PYTHONPATH=src:benchmarks python benchmarks/host_time.py

For every dense training row of reference/ (calibration and held out alike), the median of
measured / kernel-level predicted speed (a time row inverted), grouped by the kernel-level step's
time per decoder layer per micro-batch, for each framework family (the frameworks that take a
share from a base are counted with it). First at the kernel level without any host time: a
framework whose runs reach the same share of the kernels whatever their size sits flat across the
groups; one that pays a fixed cost per layer on top of its kernels falls where a layer's kernels
are short. Then measured / planned speed with the catalog's shares and host times: flat where
the host time accounts for the fall. The host time itself is fitted on the calibration rows only
(benchmarks/calibrate_frameworks.py); this script reads every row and judges nothing.
"""

from __future__ import annotations

import statistics
from itertools import pairwise

import reference
from calibrate_frameworks import speed_ratio
from fabriclens.catalog.load import share_owner
from reference import Case, all_training_cases

BINS_MS = (0.0, 4.0, 8.0, 16.0, 32.0, 64.0, float("inf"))
FAMILIES = ("pytorch", "nemo", "megatron", "jax")


def grouped(cases: list[Case], layer_ms: dict[str, float], family: str) -> list[list[float]]:
    """The speed ratios of one framework family's dense rows, in the groups of BINS_MS by time
    per layer (``layer_ms``, by row id, at the kernel level without host time)."""
    rows = [
        c for c in cases
        if c.framework and not c.moe and share_owner(c.framework) == family and c.row_id in layer_ms
    ]  # fmt: skip
    return [
        [speed_ratio(c) for c in rows if lo <= layer_ms[c.row_id] < hi]
        for lo, hi in pairwise(BINS_MS)
    ]


def table(cases: list[Case], layer_ms: dict[str, float]) -> list[str]:
    """One line per framework family: the median speed ratio and the row count in each group."""
    lines = []
    for family in FAMILIES:
        groups = grouped(cases, layer_ms, family)
        cells = [
            f"{statistics.median(g):>5.2f} ({len(g):>3})" if g else f"{'-':>11}" for g in groups
        ]
        lines.append(f"{family:<9} {sum(map(len, groups)):>5}  " + "  ".join(cells))
    return lines


def kernel_cases() -> list[Case]:
    """Every training row at the kernel level without any host time (its ``layer_ms`` the
    kernels' time per decoder layer per micro-batch)."""
    with reference.trial_host_time(0.0):
        return [c for c in all_training_cases(kernel_level=True) if c.layer_ms > 0]


def main() -> int:
    kernel = kernel_cases()
    layer_ms = {c.row_id: c.layer_ms for c in kernel}
    planned = all_training_cases()
    head = "  ".join(
        f"{f'{lo:g}-{hi:g} ms' if hi != float('inf') else f'>= {lo:g} ms':>11}"
        for lo, hi in pairwise(BINS_MS)
    )
    print("Kernel time per decoder layer per micro-batch (kernel-level step, no host time); each")
    print("cell: median speed ratio (rows), dense rows, calibration and held out alike\n")
    print("measured / kernel-level speed")
    print(f"{'family':<9} {'rows':>5}  {head}")
    print("\n".join(table(kernel, layer_ms)))
    print("\nmeasured / planned speed (the catalog's shares and host times)")
    print(f"{'family':<9} {'rows':>5}  {head}")
    print("\n".join(table(planned, layer_ms)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
