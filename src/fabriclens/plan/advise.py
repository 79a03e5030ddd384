"""`advise`: a selection guide from rules in a data file, plus the planner across network tiers.

Rules (data/advise.toml) map facts about the situation to advice with its reason. Where the
user names a model and GPUs, the planner runs the job on every tier and recommends the cheapest
within a slack (default 10%) of the best time: a faster tier that buys less is over-buying.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from fabriclens.catalog import find_network
from fabriclens.conditions import check_known, holds
from fabriclens.errors import InputError
from fabriclens.plan.planner import Plan, make_plans
from fabriclens.plan.request import PlanRequest
from fabriclens.units import format_time

SCENARIOS = ("personal", "team-inference", "small-cluster", "large-cluster")
TIERS = ("10gbe", "25gbe", "100gbe", "100g-roce", "200g-roce", "400g-roce", "hdr-ib", "ndr-ib")


@dataclass(frozen=True)
class Facts:
    """What the rules look at."""

    scenario: str
    nodes: int
    network_engineer: bool = False
    cloud: bool = False
    utilisation: float = 0.5
    sensitive_data: bool = False
    workload: str = ""


@dataclass(frozen=True)
class Rule:
    """One rule of the selection guide."""

    id: str
    topic: str
    when: dict[str, Any]
    advice: str
    because: str
    watch: tuple[str, ...] = field(default_factory=tuple)
    # the NIC line rate (Gbit/s) a network-class rule advises at least; 0: none
    floor_gbit_per_s: float = 0.0

    def fires(self, facts: Facts) -> bool:
        """True when every condition holds (equality, or <fact>_min / <fact>_max bounds)."""
        return holds(self.when, asdict(facts))


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The built-in rules, checked against the facts they may name."""
    text = resources.files("fabriclens.plan").joinpath("data", "advise.toml").read_text("utf-8")
    known = set(Facts.__dataclass_fields__)
    out = []
    for raw in tomllib.loads(text)["rule"]:
        check_known(raw["id"], raw["when"], known)
        out.append(
            Rule(
                raw["id"],
                raw["topic"],
                dict(raw["when"]),
                raw["advice"],
                raw["because"],
                tuple(raw.get("watch", ())),
                float(raw.get("floor_gbit_per_s", 0.0)),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class TierRow:
    """One network tier for the user's job."""

    network: str
    time_s: float  # training step, or decode step for inference
    cost_relative: float
    fits: bool
    bottleneck: str
    comm_share: float
    verdict: str


@dataclass(frozen=True)
class Advice:
    """Everything `advise` says."""

    facts: Facts
    fired: tuple[Rule, ...]
    tiers: tuple[TierRow, ...]
    recommended: TierRow | None
    reason: str
    slack: float
    sensitivity: str
    assumptions: tuple[str, ...]


def _step_time(plan: Plan) -> tuple[float, float]:
    if plan.training is not None:
        return plan.training.time_s, plan.training.comm_share
    assert plan.inference is not None
    comm = sum(c.time_per_token_s for c in plan.inference.comm)
    return plan.inference.decode_step_s, comm / plan.inference.decode_step_s


def _below_guide(fired: tuple[Rule, ...], network: str, slack: float) -> str:
    """A sentence when the tier chosen for this job is below a fired rule's floor, so the guide
    and the tier table never silently disagree."""
    floors = [r for r in fired if r.floor_gbit_per_s > 0]
    if not floors:
        return ""
    rule = max(floors, key=lambda r: r.floor_gbit_per_s)
    rate = find_network(network).rate_bits_per_s / 1e9
    if rate >= rule.floor_gbit_per_s:
        return ""
    return (
        f"; that is below the guide's {rule.floor_gbit_per_s:g}G floor for this scenario "
        f"(rule {rule.id}): for this job alone it is within {100 * slack:.0f}% of the fastest "
        "tier; the floor is for the cluster's other jobs, checkpoints and growth"
    )


def advise(
    facts: Facts,
    request: PlanRequest | None = None,
    slack: float = 0.10,
    tiers: tuple[str, ...] = TIERS,
) -> Advice:
    """Apply the rules; with a request, also run the planner across ``tiers``."""
    if facts.scenario not in SCENARIOS:
        raise InputError(
            f"unknown scenario {facts.scenario!r}", f"use one of {', '.join(SCENARIOS)}"
        )
    if facts.nodes < 1:
        raise InputError(f"--nodes {facts.nodes} must be at least 1", "give the number of nodes")
    if not 0 <= slack <= 1:
        raise InputError(f"slack {slack:g} is outside 0..100%", "give a slack like 10%")
    fired = tuple(r for r in rules() if r.fires(facts))
    rows: list[TierRow] = []
    recommended: TierRow | None = None
    reason = ""
    notes: list[str] = []
    one_node = False
    if request is not None:
        plans = make_plans(PlanRequest(**{**request.__dict__, "networks": tiers}))
        notes += list(plans[0].defaults)
        timed = [(p, *_step_time(p)) for p in plans]
        fitting = [t for t in timed if (t[0].training or t[0].inference) and _fits(t[0])]
        best = min((t[1] for t in fitting), default=None)
        for plan, time_s, share in timed:
            rows.append(TierRow(plan.network_name, time_s, plan.network_cost, _fits(plan),
                                _bottleneck(plan), share, ""))  # fmt: skip
        if best is not None:
            ok = [r for r in rows if r.fits and r.time_s <= best * (1 + slack)]
            recommended = min(ok, key=lambda r: (r.cost_relative, r.time_s))
            verdicts = []
            for r in rows:
                if r is recommended:
                    v = "recommended"
                elif not r.fits:
                    v = "does not fit"
                elif r.time_s > best * (1 + slack):
                    v = f"too slow: +{100 * (r.time_s / best - 1):.0f}% time"
                elif r.cost_relative > recommended.cost_relative:
                    gain = 1 - r.time_s / recommended.time_s
                    extra = (
                        r.cost_relative / recommended.cost_relative - 1
                        if recommended.cost_relative
                        else float("inf")
                    )
                    v = f"over-buying: +{100 * extra:.0f}% network cost for {100 * gain:.1f}% faster"
                else:
                    v = "within slack"
                verdicts.append(v)
            rows = [
                TierRow(**{**r.__dict__, "verdict": v}) for r, v in zip(rows, verdicts, strict=True)
            ]
            recommended = next(r for r in rows if r.verdict == "recommended")
            what = "step" if request.workload != "inference" else "decode step (per token)"
            one_node = plans[0].nodes == 1
            if one_node:  # no tier is on the job's path: say so rather than rank them
                rows = [r if r is recommended else TierRow(**{**r.__dict__, "verdict": "same: one node"})
                        for r in rows]  # fmt: skip
                gpus = plans[0].request.gpus
                inside = f"{gpus} GPUs over {plans[0].intra.name}" if gpus > 1 else "1 GPU"
                reason = (
                    f"the job runs inside one node ({inside}): no network tier is on its path, so every tier gives "
                    f"the same {what} ({format_time(best)}); {recommended.network} is only the "
                    "cheapest: choose the tier for the cluster's other jobs, storage and growth"
                )
            else:
                reason = (
                    f"{recommended.network} is the cheapest tier within {100 * slack:.0f}% of the best {what} time "
                    f"({format_time(recommended.time_s)} vs {format_time(best)}); its bottleneck is {recommended.bottleneck} and "
                    f"exposed communication is {100 * recommended.comm_share:.0f}% of the time"
                )
            reason += _below_guide(fired, recommended.network, slack)
        else:
            reason = "the job does not fit in memory on any tier: add GPUs or shard more (fabriclens plan shows the ledger)"
    assumptions = (
        f"tiers compared: {', '.join(tiers)}, each with the same NICs per node",
        "network cost: NIC ports x relative per-port cost (estimates, for ranking only)",
        *notes,
    )
    sensitivity = ""
    fit_rows = [r for r in rows if r.fits]
    if len(fit_rows) >= 2 and not one_node:
        slow, fast = max(fit_rows, key=lambda r: r.time_s), min(fit_rows, key=lambda r: r.time_s)
        sensitivity = (
            f"network sensitivity of this job: {slow.time_s / fast.time_s:.2f}x between {slow.network} "
            f"({100 * slow.comm_share:.0f}% of the time in exposed communication) and {fast.network} "
            f"({100 * fast.comm_share:.0f}%)"
        )
    return Advice(facts, fired, tuple(rows), recommended, reason, slack, sensitivity, assumptions)


def _fits(plan: Plan) -> bool:
    est = plan.training or plan.inference
    return bool(est and est.memory.fits)


def _bottleneck(plan: Plan) -> str:
    if plan.training is not None:
        return plan.training.bottleneck
    assert plan.inference is not None
    return plan.inference.decode_bound
