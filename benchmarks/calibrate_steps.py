"""A network's measured step costs, ring and tree, from the calibration rows of the collectives
that ran on it.

    PYTHONPATH=src python benchmarks/calibrate_steps.py

The collective model (model/collectives.py) prices a ring's steps and a tree's levels with NCCL's
tuner constants. Where published sweeps on one network measure more, the catalog carries it:

* ``ring_step_s``: every step of a ring across nodes costs at least that (``net_step_floor``):
  each step moves a message across every node boundary and the ring advances at its slowest
  link's pace;
* ``tree_step_s``: every level of an all-reduce tree across nodes costs at least that, each way
  (``tree_level_s``): what a tree's fixed cost, growing with its depth, measures.

A network gets a value only from enough multi-node rows (at least MIN_ROWS calibration rows), and
its ``*_step_source`` says so ("measured: ..."). This prints, for each such network and kind, the
misfit of its calibration rows (the sum of |log(measured / modelled busbw)|) at every value of
the kind's grid, the other kind at its catalog value, and marks the least; the catalog carries
the least, and tests/unit/test_net_steps.py recomputes it. Held-out rows are never read here;
benchmarks/accuracy.py judges the result.
"""

from __future__ import annotations

import math

import reference
from fabriclens.catalog import find_network, networks

MIN_ROWS = 10  # multi-node calibration rows a network needs before a step is measured
GRIDS_US = {  # the values tried, in us: 1 us apart
    "ring_step_s": tuple(float(us) for us in range(1, 31)),
    "tree_step_s": tuple(float(us) for us in range(1, 121)),
}


def measured_networks(kind: str = "ring_step_s") -> list[str]:
    """Catalog networks whose ``kind`` of step is measured from their calibration rows."""
    return [n.name for n in networks() if getattr(n, kind)]


def calibration_rows(network: str) -> list[dict[str, str]]:
    """The multi-node calibration rows of collectives_more.csv that ran on ``network``."""
    return [
        row
        for row in reference._rows("collectives_more.csv")
        if not row["exclude"]
        and row["split"] == "calibration"
        and row["network"] == network
        and int(row["nodes"] or 1) > 1
    ]


def step_misfit(network: str, step_us: float, kind: str = "ring_step_s") -> float:
    """How far ``network``'s calibration rows fall from the model at ``step_us`` a step of
    ``kind``."""
    steps = {kind: step_us * 1e-6}
    return sum(
        abs(math.log(case.measured / case.predicted))
        for case in (reference.collective_case(row, steps) for row in calibration_rows(network))
    )


def fit_step_us(network: str, kind: str = "ring_step_s") -> tuple[float, list[tuple[float, float]]]:
    """The grid value with the least misfit, and the misfit at every grid value."""
    table = [(us, step_misfit(network, us, kind)) for us in GRIDS_US[kind]]
    return min(table, key=lambda row: row[1])[0], table


def main() -> int:
    off = 0
    for kind in GRIDS_US:
        for name in measured_networks(kind):
            rows = calibration_rows(name)
            catalog_us = getattr(find_network(name), kind) * 1e6
            print(f"{name} {kind}: {len(rows)} multi-node calibration rows")
            if len(rows) < MIN_ROWS:
                print(f"  under {MIN_ROWS} rows: NOT ENOUGH ROWS to measure it\n")
                off += 1
                continue
            best, table = fit_step_us(name, kind)
            print("   us   misfit")
            for us, misfit in table:
                print(f"{us:>5.0f} {misfit:>8.3f}{'  <- least' if us == best else ''}")
            differs = abs(best - catalog_us) > 1e-9
            off += differs
            print(
                f"catalog {catalog_us:g} us: "
                f"{'CATALOG DIFFERS: update networks.toml' if differs else 'sets the catalog value'}\n"
            )
    return 1 if off else 0


if __name__ == "__main__":
    raise SystemExit(main())
