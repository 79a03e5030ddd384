"""Team sizing: people -> requests per second -> streams in flight (Little's law, Poisson)."""

from __future__ import annotations

import math

import pytest

from fabriclens.catalog import find_model
from fabriclens.errors import InputError
from fabriclens.plan.team import plan_team_capacity, poisson_quantile


@pytest.mark.parametrize(
    ("mean", "q", "expected"),
    [
        # Poisson CDF tables: P(X<=2 | 1) = 0.920, P(X<=3 | 1) = 0.981
        (1.0, 0.95, 3),
        # P(X<=14 | 10) = 0.917, P(X<=15 | 10) = 0.951
        (10.0, 0.95, 15),
        (0.01, 0.95, 0),
    ],
)
def test_poisson_quantile_matches_tables(mean: float, q: float, expected: int) -> None:
    assert poisson_quantile(mean, q) == expected


def test_poisson_quantile_of_a_large_mean_is_the_normal_one() -> None:
    """Mean 1000: the normal approximation gives 1000 + 1.645 x sqrt(1000) = 1052 (within 2)."""
    assert poisson_quantile(1000.0, 0.95) == pytest.approx(1000 + 1.645 * math.sqrt(1000), abs=2)


def test_team_becomes_streams_by_littles_law() -> None:
    spec = find_model("llama-3.1-8b")
    plan, team = plan_team_capacity(spec, "h100-sxm", people=200, output_tokens=500)
    # 200 people x 50% active x 20 requests/h
    assert team.arrivals_per_s == pytest.approx(200 * 0.5 * 20 / 3600)
    assert team.request_s == pytest.approx(plan.ttft_s + 499 * plan.estimate.decode_step_s)
    assert team.mean_concurrency == pytest.approx(team.arrivals_per_s * team.request_s)
    assert team.streams == plan.users == poisson_quantile(team.mean_concurrency, 0.95)
    assert plan.users > team.mean_concurrency
    names = {a.name: a for a in team.assumptions}
    assert set(names) >= {"active_share", "requests_per_active_person_per_h", "prompt_tokens",
                          "output_tokens", "request_s", "concurrency_quantile"}  # fmt: skip
    assert "assumption" in names["active_share"].source
    assert names["request_s"].source.startswith("predicted")
    assert plan.assumptions[0].startswith("team of 200")


def test_team_assumptions_can_be_overridden_and_say_so() -> None:
    spec = find_model("llama-3.1-8b")
    _, small = plan_team_capacity(spec, "h100-sxm", people=100, output_tokens=300)
    _, busy = plan_team_capacity(spec, "h100-sxm", people=100, output_tokens=300,
                                         active_share=1.0, requests_per_person_per_s=2 / 60)  # fmt: skip
    assert busy.arrivals_per_s == pytest.approx(100 * 2 / 60)
    assert busy.streams > small.streams
    sources = {a.name: a.source for a in busy.assumptions}
    assert sources["active_share"] == "set by --active-share"
    assert sources["requests_per_active_person_per_h"] == "set by --request-rate"
    with pytest.raises(InputError, match="--active-share"):
        plan_team_capacity(spec, "h100-sxm", people=10, output_tokens=300, active_share=1.5)
    with pytest.raises(InputError, match="--team"):
        plan_team_capacity(spec, "h100-sxm", people=0, output_tokens=300)
