"""Judge a measured TCP goodput against what the link should give (pure).

A percentage of an expectation only means something when the test crossed that link: over
loopback no link is involved, and a result well above the expectation says the traffic took
another path (a local or virtual one) or the expectation names a slower link than the one in use.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabriclens.units import format_number, format_rate

# Above this share of the expected goodput the expectation, not the link, is wrong: TCP cannot
# beat the wire, and 10% covers shaping bursts and rounding in the expected figure.
OVER_EXPECTED = 1.1
OK_SHARE = 0.9
WARNING_SHARE = 0.6


@dataclass(frozen=True)
class GoodputVerdict:
    """``efficiency``: measured / expected, None when there is nothing meaningful to divide by;
    ``level``: ok | warning | critical; ``verdict``: one line for a human."""

    efficiency: float | None
    level: str
    verdict: str


def judge_goodput(
    best_bits_per_s: float, expected_bits_per_s: float | None, *, loopback: bool
) -> GoodputVerdict:
    """The verdict on the best goodput measured (bit/s) against the expected goodput (bit/s or
    None), for a test to a loopback address (``loopback``) or across a network."""
    best = format_rate(best_bits_per_s)
    if loopback:
        return GoodputVerdict(
            None,
            "ok",
            f"{best} over loopback: no physical link to judge against "
            "(run it against another host to test the network)",
        )
    if not expected_bits_per_s:
        return GoodputVerdict(None, "ok", f"{best} (give --expect to judge it)")
    eff = best_bits_per_s / expected_bits_per_s
    expected = format_rate(expected_bits_per_s)
    if eff > OVER_EXPECTED:
        return GoodputVerdict(
            round(eff, 4),
            "warning",
            f"{best} is {format_number(eff, 2)}x the {expected} the link should give: the test did "
            "not cross that link (a local or virtual path), or --expect names a slower link than "
            "the one in use",
        )
    level = "ok" if eff >= OK_SHARE else ("warning" if eff >= WARNING_SHARE else "critical")
    return GoodputVerdict(
        round(eff, 4), level, f"{best} is {100 * eff:.0f}% of the {expected} the link should give"
    )
