"""A team's size turned into concurrent streams, with every assumption stated.

Requests arrive at lambda = people x share active in the busiest hour x requests per active
person. Each takes W = TTFT + (output tokens - 1) x TPOT, as the capacity plan predicts at its
batch. Little's law gives the mean number in flight, L = lambda x W; with independent
(Poisson) arrivals the number in flight at a moment is Poisson-distributed with mean L whatever
the distribution of W (the M/G/infinity queue), so the plan sizes for a high quantile of it,
not for the mean. W depends on the batch and the batch on the streams: the two are iterated to
a fixed point (W only grows, bounded by the latency target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from fabriclens.catalog.schema import ModelSpec
from fabriclens.errors import InputError
from fabriclens.plan.capacity import CapacityPlan, plan_capacity

ACTIVE_SHARE = 0.5
ACTIVE_SHARE_SOURCE = (
    "assumption: half the team uses the model within its busiest hour "
    "(people in one time zone, working the same hours)"
)
REQUESTS_PER_ACTIVE_PERSON_PER_S = 20 / 3600
REQUESTS_SOURCE = (
    "assumption: one chat turn every 3 minutes while someone is using it; "
    "coding agents and tools send many more (set --request-rate)"
)
QUANTILE = 0.95
QUANTILE_SOURCE = (
    "M/G/infinity: with Poisson arrivals the requests in flight are Poisson-distributed with mean "
    "lambda x W; sized so that 19 moments in 20 of the busiest hour find a free stream"
)
MAX_ROUNDS = 12


@dataclass(frozen=True, slots=True)
class TeamAssumption:
    """One stated input of the team sizing: its value, unit and where it comes from."""

    name: str
    value: float
    unit: str
    source: str


@dataclass(frozen=True, slots=True)
class TeamDemand:
    """A team turned into concurrent streams."""

    people: int
    arrivals_per_s: float
    request_s: float  # mean duration of one request at the planned batch
    mean_concurrency: float  # Little's law
    streams: int  # the quantile of concurrent requests the plan serves
    assumptions: tuple[TeamAssumption, ...]

    def doc(self) -> dict[str, Any]:
        """The JSON ``team`` block."""
        return {
            "people": self.people,
            "arrivals_per_s": round(self.arrivals_per_s, 6),
            "request_s": round(self.request_s, 4),
            "mean_concurrency": round(self.mean_concurrency, 4),
            "streams": self.streams,
            "assumptions": [
                {"name": a.name, "value": a.value, "unit": a.unit, "source": a.source}
                for a in self.assumptions
            ],
        }


def poisson_quantile(mean: float, q: float) -> int:
    """Smallest k with P(X <= k) >= q for X ~ Poisson(mean)."""
    if mean <= 0:
        return 0
    cdf, k = 0.0, 0
    while True:  # terms in log space: exp(-mean) underflows beyond mean ~ 745
        cdf += math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1))
        if cdf >= q or k > mean + 50 * math.sqrt(mean) + 50:
            return k
        k += 1


def plan_team_capacity(
    spec: ModelSpec,
    gpu_name: str,
    *,
    people: int,
    active_share: float | None = None,
    requests_per_person_per_s: float | None = None,
    quantile: float | None = None,
    **capacity: Any,
) -> tuple[CapacityPlan, TeamDemand]:
    """Size an inference deployment for a team of ``people``; returns the plan for the streams
    the team needs and how they were derived. ``capacity`` goes to :func:`plan_capacity`."""
    if people < 1:
        raise InputError(f"--team must be at least 1 (got {people})", "give the number of people")
    share = ACTIVE_SHARE if active_share is None else active_share
    rate = (
        REQUESTS_PER_ACTIVE_PERSON_PER_S
        if requests_per_person_per_s is None
        else requests_per_person_per_s
    )
    q = QUANTILE if quantile is None else quantile
    if not 0 < share <= 1:
        raise InputError(
            f"--active-share {share:g} is not in (0, 1]", "give a share such as 0.5 or 50%"
        )
    if not rate > 0:
        raise InputError("--request-rate must be positive", "write it like --request-rate 20/h")
    if not 0 < q < 1:
        raise InputError(
            f"--concurrency-quantile {q:g} is not in (0, 1)", "give a quantile such as 0.95"
        )
    arrivals = people * share * rate
    plan = plan_capacity(spec, gpu_name, users=1, **capacity)
    request_s = plan.request_s
    for _ in range(MAX_ROUNDS):
        streams = max(1, poisson_quantile(arrivals * request_s, q))
        if streams <= plan.users:
            break
        plan = plan_capacity(spec, gpu_name, users=streams, **capacity)
        request_s = max(request_s, plan.request_s)
    out = plan.output_tokens
    team = TeamDemand(
        people=people,
        arrivals_per_s=arrivals,
        request_s=request_s,
        mean_concurrency=arrivals * request_s,
        streams=plan.users,
        assumptions=(
            TeamAssumption("active_share", share, "share of the team in the busiest hour",
                           ACTIVE_SHARE_SOURCE if active_share is None else "set by --active-share"),
            TeamAssumption("requests_per_active_person_per_h", round(rate * 3600, 6), "requests per hour",
                           REQUESTS_SOURCE if requests_per_person_per_s is None else "set by --request-rate"),
            TeamAssumption("prompt_tokens", plan.prompt_tokens, "tokens per request",
                           "--prompt-tokens (default 1024: a question with a page of context; assumption)"),
            TeamAssumption("output_tokens", out, "tokens per response",
                           "--output-tokens (default 500: a long answer; assumption)"),
            TeamAssumption("request_s", round(request_s, 4), "seconds per request",
                           f"predicted: TTFT {plan.ttft_s:.3g} s + {max(0, out - 1)} x "
                           f"{plan.tpot_s * 1e3:.3g} ms per token at batch {plan.batch} (prefills of newcomers included)"),
            TeamAssumption("concurrency_quantile", q, "quantile of requests in flight",
                           QUANTILE_SOURCE if quantile is None else "set by --concurrency-quantile"),
        ),
    )  # fmt: skip
    lead = (
        f"team of {people}: {share:.0%} active in the busiest hour x {rate * 3600:.3g} requests per hour "
        f"= {arrivals * 3600:.3g} requests per hour; each takes {request_s:.3g} s, so "
        f"{arrivals * request_s:.3g} in flight on average (Little's law) and {plan.users} at the "
        f"{q:.0%} quantile (Poisson)"
    )
    return replace(plan, assumptions=(lead, *plan.assumptions)), team
