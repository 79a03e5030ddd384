"""A network's cost per ring step, from the calibration rows of the collectives that ran on it.

    PYTHONPATH=src python benchmarks/calibrate_ring_step.py

The collective model (model/collectives.py) prices a ring's steps with NCCL's tuner constants,
and where published sweeps on one network measure what a step of a ring across nodes costs, it
charges every step at least that (catalog ``ring_step_s``, ``net_step_floor``): each step moves a
message across every node boundary and the ring advances at its slowest link's pace. A network
gets the value only from enough multi-node rows (at least MIN_ROWS calibration rows), and its
``ring_step_source`` says so ("measured: ..."). This prints, for each such network, the misfit of
its calibration rows (the sum of |log(measured / modelled busbw)|) at every value of STEP_GRID_US
and marks the least; the catalog carries the least, and tests/unit/test_ring_step.py
recomputes it. Held-out rows are never read here; benchmarks/accuracy.py judges the result.
"""

from __future__ import annotations

import math

import reference
from fabriclens.catalog import find_network, networks

MIN_ROWS = 10  # multi-node calibration rows a network needs before its step is measured
STEP_GRID_US = tuple(float(us) for us in range(1, 31))  # 1 to 30 us per ring step


def measured_networks() -> list[str]:
    """Catalog networks whose ring step is measured from their calibration rows."""
    return [n.name for n in networks() if n.ring_step_s]


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


def step_misfit(network: str, step_us: float) -> float:
    """How far ``network``'s calibration rows fall from the model at ``step_us`` a ring step."""
    return sum(
        abs(math.log(case.measured / case.predicted))
        for case in (
            reference.collective_case(row, step_us * 1e-6) for row in calibration_rows(network)
        )
    )


def fit_step_us(network: str) -> tuple[float, list[tuple[float, float]]]:
    """The grid value with the least misfit, and the misfit at every grid value."""
    table = [(us, step_misfit(network, us)) for us in STEP_GRID_US]
    return min(table, key=lambda row: row[1])[0], table


def main() -> int:
    off = 0
    for name in measured_networks():
        rows = calibration_rows(name)
        catalog_us = find_network(name).ring_step_s * 1e6
        print(f"{name}: {len(rows)} multi-node calibration rows")
        if len(rows) < MIN_ROWS:
            print(f"  under {MIN_ROWS} rows: NOT ENOUGH ROWS to measure its ring step\n")
            off += 1
            continue
        best, table = fit_step_us(name)
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
