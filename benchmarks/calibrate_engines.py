"""Each serving engine's spread: how far its published decode runs fall from the model.

    PYTHONPATH=src python benchmarks/calibrate_engines.py

Nothing here is fitted: the decode model has no calibrated constant (an engine's per-step and
per-layer overheads are estimates from its design, engines.toml). What this prints is how sure
a plan can be: for each engine with at least MIN_ROWS calibration rows in reference/, the 5th and
95th percentile of measured / planned speed over them (a time-per-token row inverted), the
likely range an inference plan prints beside its decode speed. The catalog carries the values
(engines.toml `spread`), tests/unit/test_inference.py re-derives them, and benchmarks/accuracy.py
counts the held-out rows that fall inside.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibrate_frameworks import MIN_ROWS, band_agrees, band_shown, speed_ratio, spread_of
from reference import Case, all_inference_cases


@dataclass(frozen=True)
class EngineSpread:
    """One engine's likely range."""

    engine: str
    low: float
    high: float
    runs: int


def engine_spreads(cases: list[Case]) -> list[EngineSpread]:
    """The 5th and 95th percentile of measured / planned speed over each engine's calibration
    rows; an engine with fewer than MIN_ROWS gets none. Held-out rows are never read."""
    groups: dict[str, list[float]] = {}
    for case in cases:
        if case.split == "calibration" and case.engine:
            groups.setdefault(case.engine, []).append(speed_ratio(case))
    return [
        EngineSpread(engine, *spread_of(ratios), len(ratios))
        for engine, ratios in sorted(groups.items())
        if len(ratios) >= MIN_ROWS
    ]


def main() -> int:
    from fabriclens.catalog import engines

    print("Serving engines: 5th and 95th percentile of measured / planned decode speed over the "
          "calibration rows (the plan's likely range)")  # fmt: skip
    print(f"{'engine':<10} {'runs':>4} {'low':>6} {'high':>6} {'catalog':>11}  use")
    derived = {s.engine: s for s in engine_spreads(all_inference_cases())}
    off = 0
    for engine in engines():
        band, sp = engine.likely_range(), derived.get(engine.name)
        if sp is None:
            agrees = band is None
            use = (
                f"under {MIN_ROWS} rows: no range" if agrees else "CATALOG DIFFERS: no rows for it"
            )
            off += not agrees
            print(f"{engine.name:<10} {'-':>4} {'-':>6} {'-':>6} {'none' if band is None else 'listed':>11}  {use}")  # fmt: skip
            continue
        agrees = band_agrees(band, sp.low, sp.high, sp.runs)
        off += not agrees
        print(f"{engine.name:<10} {sp.runs:>4} {sp.low:>6.3f} {sp.high:>6.3f} {band_shown(band):>11}  "
              f"{'sets the catalog value' if agrees else 'CATALOG DIFFERS: update engines.toml'}")  # fmt: skip
    return 1 if off else 0


if __name__ == "__main__":
    raise SystemExit(main())
