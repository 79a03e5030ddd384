"""Each training framework's share of the kernel-level step, from the calibration rows only.

    PYTHONPATH=src python benchmarks/calibrate_frameworks.py

The kernel-level step (model/step.py) runs every kernel at its published achievable rate (MAMF
GEMMs, FlashAttention, streaming HBM) and lays communication out as Megatron-Core does. A
framework that dispatches eagerly from Python, fuses little and hooks FSDP around every layer
reaches less of it, and how much less is not something a kernel figure can tell. So this is the
constant the planner calibrates (with eager PyTorch's host time, below): for each framework and
GPU generation with at least MIN_ROWS calibration rows, the median of measured / predicted speed
(time rows inverted) over those rows, the prediction made at the kernel level. Held-out rows are never read here; they
judge the result (benchmarks/accuracy.py). The catalog (frameworks.toml) carries the values this
prints, and tests/unit/test_framework_calibration.py recomputes them.

NVIDIA's tuned recipes (NeMo, Megatron-Bridge, Megatron-LM's published runs) run the kernels
the kernel-level step prices and reach the largest share of it; they were once taken as the step
itself (1.0), which their FP8 rows on H100 bear out, but their BF16 rows on H100 (about 0.91)
and their GB200 rows (about 0.83) do not, so they are calibrated like every other framework. A
framework without MIN_ROWS calibration rows on any generation is not calibrated at all: it keeps
the kernel-level step (1.0).

Eager PyTorch also carries a host time per decoder layer per micro-batch (frameworks.toml
layer_host_ms): Python, the dispatcher and FSDP's hooks launch each of a layer's few hundred
forward and backward ops, at a few to tens of microseconds each, and the GPU waits for some of it;
its published runs fall further below the kernel-level step the smaller a layer's kernels are
(most at under 8 ms of GPU work per layer and micro-batch). The value is the one that makes its
calibration rows agree best with one share per generation: on a grid of HOST_GRID_MS, the least
sum of |log(measured / predicted speed)| about each generation's median, the shares then taken at
it by the rule above. The other frameworks fuse their elementwise work and price none.

Mixture-of-experts rows set no share: the shares come from dense rows. What the kernel-level
step leaves out of a MoE layer -- the chain of small kernels around its GEMMs, permutations and
all-to-all (routing, sorting, dispatch bookkeeping) and the dispatcher's device-to-host sync --
is host time per MoE layer per micro-batch (model/moe.py MOE_LAYER_HOST_MS), calibrated here
on the MoE calibration rows of every framework, planned at the catalog's shares: the value on
MOE_HOST_GRID_MS with the least sum of |log(measured / planned speed)|. It sets the level of
those rows (the shares do not), so the fit is about zero, not about a median. The MoE rows'
medians at the kernel level are printed apart, for the README's statement of what remains.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import reference
from fabriclens.catalog.load import share_owner
from fabriclens.model.moe import MOE_LAYER_HOST_MS
from reference import Case, all_training_cases

MIN_ROWS = 10  # fewer calibration rows than this: the generation takes its nearest neighbour's
HOST_GRID_MS = tuple(i * 0.25 for i in range(25))  # 0 to 6 ms per layer per micro-batch
MOE_HOST_GRID_MS = HOST_GRID_MS  # per MoE layer per micro-batch
REFERENCE = "nemo"  # NVIDIA's tuned recipes: the kernels the kernel-level step runs


@dataclass(frozen=True)
class Calibration:
    """One framework on one GPU generation."""

    framework: str
    generation: str
    share: float  # median measured / kernel-level predicted speed
    rows: int
    sources: int

    @property
    def calibrated(self) -> bool:
        """Enough rows to set the catalog value."""
        return self.rows >= MIN_ROWS


# units of the rows that measure a time, not a speed: a training step, a decode token
TIME_UNITS = ("s", "ms")


def speed_ratio(case: Case) -> float:
    """Measured speed over predicted speed (a time row's ratio is inverted: s/iteration,
    ms/token)."""
    if case.unit.split("/")[0].strip() in TIME_UNITS:
        return case.predicted / case.measured
    return case.measured / case.predicted


def calibration_groups(cases: list[Case], moe: bool = False) -> dict[tuple[str, str], list[Case]]:
    """The calibration rows of dense models (or, with ``moe``, of MoE models), grouped by the
    framework that owns their share and by GPU generation."""
    groups: dict[tuple[str, str], list[Case]] = {}
    for case in cases:
        if case.split == "calibration" and case.framework and case.moe == moe:
            # a framework that takes its share from its base is calibrated with it
            owner = share_owner(case.framework)
            groups.setdefault((owner, case.generation), []).append(case)
    return groups


def calibrate(cases: list[Case], moe: bool = False) -> list[Calibration]:
    """The median speed ratio of each framework and generation over its calibration rows."""
    groups = calibration_groups(cases, moe)
    return [
        Calibration(
            fw,
            gen,
            statistics.median(speed_ratio(c) for c in rows),
            len(rows),
            len({c.source.split(" ")[0] for c in rows}),
        )
        for (fw, gen), rows in sorted(groups.items())
    ]


@dataclass(frozen=True)
class Spread:
    """How far one framework's calibration rows fall from the calibrated step."""

    framework: str
    moe: bool
    low: float  # 5th percentile of measured / planned speed
    high: float  # 95th percentile
    runs: int


def spreads(cases: list[Case], calibrated: set[str]) -> list[Spread]:
    """The 5th and 95th percentile of measured / planned speed over each calibrated
    framework's calibration rows (dense and MoE apart, GPU generations together), planned at
    the catalog's shares; a framework or kind with under MIN_ROWS rows gets none."""
    groups: dict[tuple[str, bool], list[float]] = {}
    for case in cases:
        if case.split == "calibration" and case.framework:
            owner = share_owner(case.framework)
            if owner in calibrated:
                groups.setdefault((owner, case.moe), []).append(speed_ratio(case))
    out = []
    for (fw, moe), ratios in sorted(groups.items()):
        if len(ratios) >= MIN_ROWS:
            out.append(Spread(fw, moe, *spread_of(ratios), len(ratios)))
    return out


def band_agrees(band: tuple[float, float, int] | None, low: float, high: float, runs: int) -> bool:
    """The catalog's spread is the one derived: the same runs, each bound within 0.005."""
    return (
        band is not None
        and band[2] == runs
        and all(abs(a - b) <= 0.005 for a, b in zip(band[:2], (low, high), strict=True))
    )


def band_shown(band: tuple[float, float, int] | None) -> str:
    """A catalog spread as the scripts print it: `0.72-1.23`, or `none`."""
    return f"{band[0]:.2f}-{band[1]:.2f}" if band else "none"


def spread_of(ratios: list[float]) -> tuple[float, float]:
    """The 5th and 95th percentile of measured / planned speed ratios (the likely range)."""
    cuts = statistics.quantiles(ratios, n=20, method="inclusive")
    return cuts[0], cuts[-1]


def host_misfit(layer_host_ms: float) -> float:
    """How far eager PyTorch's dense calibration rows fall from one share per generation when
    each layer costs ``layer_host_ms`` of host time per micro-batch: the sum of |log(measured /
    kernel-level speed) - the generation's median| over generations with MIN_ROWS rows."""
    with reference.trial_host_time(layer_host_ms):
        cases = all_training_cases(kernel_level=True)
    misfit = 0.0
    for (owner, _), rows in calibration_groups(cases).items():
        logs = [math.log(speed_ratio(case)) for case in rows]
        if owner == reference.HOST_OWNER and len(logs) >= MIN_ROWS:
            middle = statistics.median(logs)
            misfit += sum(abs(x - middle) for x in logs)
    return misfit


def fit_layer_host_ms() -> tuple[float, list[tuple[float, float]]]:
    """The grid value of eager PyTorch's host time per layer with the least misfit, and the
    misfit at every grid value."""
    table = [(ms, host_misfit(ms)) for ms in HOST_GRID_MS]
    return min(table, key=lambda row: row[1])[0], table


def moe_host_misfit(moe_host_ms: float) -> float:
    """How far the MoE calibration rows fall from their measured speed when each MoE layer costs
    ``moe_host_ms`` of host time per micro-batch: the sum of |log(measured / planned speed)|,
    planned at the catalog's shares."""
    with reference.trial_moe_host_time(moe_host_ms):
        cases = all_training_cases()
    return sum(
        abs(math.log(speed_ratio(case)))
        for rows in calibration_groups(cases, moe=True).values()
        for case in rows
    )


def fit_moe_layer_host_ms() -> tuple[float, list[tuple[float, float]]]:
    """The grid value of the MoE layers' host time with the least misfit, and the misfit at
    every grid value."""
    table = [(ms, moe_host_misfit(ms)) for ms in MOE_HOST_GRID_MS]
    return min(table, key=lambda row: row[1])[0], table


def calibrated_frameworks(cals: list[Calibration]) -> set[str]:
    """Frameworks with at least one calibrated generation; the others keep the kernel level."""
    return {c.framework for c in cals if c.calibrated}


def main() -> int:
    from fabriclens.catalog import find_framework

    best, table = fit_layer_host_ms()
    catalog_host = find_framework(reference.HOST_OWNER).layer_host_ms
    print(f"Host time per layer per micro-batch ({reference.HOST_OWNER}): misfit of its dense "
          "calibration rows to one share per generation")  # fmt: skip
    print("   ms   misfit")
    for ms, misfit in table:
        print(f"{ms:>5.2f} {misfit:>8.3f}{'  <- least' if ms == best else ''}")
    off = int(abs(catalog_host - best) > 1e-9)
    print(
        f"catalog {catalog_host:.2f} ms: "
        f"{'CATALOG DIFFERS: update frameworks.toml' if off else 'sets the catalog value'}\n"
    )
    moe_best, moe_table = fit_moe_layer_host_ms()
    print("Host time per MoE layer per micro-batch (every framework): misfit of the MoE "
          "calibration rows to their measured speed")  # fmt: skip
    print("   ms   misfit")
    for ms, misfit in moe_table:
        print(f"{ms:>5.2f} {misfit:>8.3f}{'  <- least' if ms == moe_best else ''}")
    moe_off = int(abs(MOE_LAYER_HOST_MS - moe_best) > 1e-9)
    off += moe_off
    print(
        f"model/moe.py MOE_LAYER_HOST_MS {MOE_LAYER_HOST_MS:.2f} ms: "
        f"{'MODEL DIFFERS: update model/moe.py' if moe_off else 'sets the model value'}\n"
    )
    print(f"{'framework':<10} {'generation':<10} {'rows':>4} {'sources':>7} {'median':>7} "
          f"{'catalog':>7}  use")  # fmt: skip
    cals = calibrate(all_training_cases(kernel_level=True))
    calibrated = calibrated_frameworks(cals)
    for cal in cals:
        catalog, taken = find_framework(cal.framework).efficiency_for(cal.generation)
        if cal.framework not in calibrated:
            agrees = catalog == 1.0
            off += not agrees
            use = (f"under {MIN_ROWS} rows on every generation: not calibrated, the kernel level"
                   if agrees else "CATALOG DIFFERS: an uncalibrated framework keeps 1.0")  # fmt: skip
        elif not cal.calibrated:
            use = f"under {MIN_ROWS} rows: {taken}'s value"
        else:
            agrees = abs(catalog - cal.share) <= 0.005
            off += not agrees
            use = "sets the catalog value" if agrees else "CATALOG DIFFERS: update frameworks.toml"
        print(f"{cal.framework:<10} {cal.generation:<10} {cal.rows:>4} {cal.sources:>7} "
              f"{cal.share:>7.3f} {catalog:>7.2f}  {use}")  # fmt: skip
    print("\nSpread: 5th and 95th percentile of measured / planned speed over the calibration "
          "rows, planned at the catalog's shares (the plan's likely range)")  # fmt: skip
    print(f"{'framework':<10} {'kind':<6} {'runs':>4} {'low':>6} {'high':>6} {'catalog':>13}  use")
    for sp in spreads(all_training_cases(), calibrated):
        band = find_framework(sp.framework).likely_range(sp.moe)
        agrees = band_agrees(band, sp.low, sp.high, sp.runs)
        off += not agrees
        print(f"{sp.framework:<10} {'MoE' if sp.moe else 'dense':<6} {sp.runs:>4} {sp.low:>6.3f} "
              f"{sp.high:>6.3f} {band_shown(band):>13}  "
              f"{'sets the catalog value' if agrees else 'CATALOG DIFFERS: update frameworks.toml'}")  # fmt: skip
    print("\nMixture-of-experts calibration rows (set no share: measured / kernel-level speed, "
          "the MoE host time included)")  # fmt: skip
    for cal in calibrate(all_training_cases(kernel_level=True), moe=True):
        print(f"{cal.framework:<10} {cal.generation:<10} {cal.rows:>4} {cal.sources:>7} "
              f"{cal.share:>7.3f}")  # fmt: skip
    return 1 if off else 0


if __name__ == "__main__":
    raise SystemExit(main())
