"""Accuracy of the planner against published measurements (reference/ in this repository).

Run: make bench  (or: python benchmarks/accuracy.py)
Targets (issue): collectives <= 10% median, training iteration time <= 10% median,
decode speed <= 15% median.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import (
    Case,
    collective_cases,
    inference_cases,
    median_abs_error,
    training_cases,
)

TARGETS = {"collectives.csv": 0.10, "training.csv": 0.10, "inference.csv": 0.15}


def show(title: str, cases: list[Case], target: float) -> bool:
    print(f"\n{title}")
    print(f"  {'case':62s} {'measured':>10s} {'predicted':>10s} {'error':>8s}  unit")
    for c in cases:
        print(
            f"  {c.name[:62]:62s} {c.measured:10.4g} {c.predicted:10.4g} {100 * c.error:+7.1f}%  {c.unit}"
        )
    med = median_abs_error(cases)
    ok = med <= target
    print(
        f"  median |error| {100 * med:.1f}% (target <= {100 * target:.0f}%) {'OK' if ok else 'MISSED'}"
    )
    return ok


def main() -> int:
    results = [
        show(
            "collectives.csv — all-reduce bus bandwidth",
            list(collective_cases()),
            TARGETS["collectives.csv"],
        ),
        show(
            "training.csv — iteration time / MFU", list(training_cases()), TARGETS["training.csv"]
        ),
        show(
            "inference.csv — decode tokens/s (batch 1)",
            list(inference_cases()),
            TARGETS["inference.csv"],
        ),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
