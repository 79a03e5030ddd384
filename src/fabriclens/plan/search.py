"""`search`: rank every layout that fits, say why each loses to the one above it, and put
network tiers on a Pareto front of step time against network cost."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, replace

from fabriclens.model.layout import TrainConfig
from fabriclens.model.step import StepEstimate
from fabriclens.plan.planner import evaluate_layouts, like_for_like
from fabriclens.plan.request import PlanRequest
from fabriclens.units import format_time


@dataclass(frozen=True)
class Ranked:
    """One layout in the ranking."""

    config: TrainConfig
    estimate: StepEstimate
    why_slower: str  # against the layout ranked just above ("" for the best)


@dataclass(frozen=True)
class NetworkResult:
    """The search on one network."""

    network: str
    cost_relative: float
    tried: int
    fitting: int
    top: tuple[Ranked, ...]
    notes: tuple[str, ...]

    @property
    def best_time_s(self) -> float:
        """Step time of the best layout (inf when nothing fits)."""
        return self.top[0].estimate.time_s if self.top else float("inf")


@dataclass(frozen=True)
class SearchResult:
    """Rankings per network, the Pareto front, and what each tier upgrade buys."""

    results: tuple[NetworkResult, ...]
    pareto: tuple[str, ...]
    upgrades: tuple[str, ...]
    layouts_evaluated: int
    elapsed_s: float


def whole_experts(cfg: TrainConfig) -> bool:
    """True when a layout keeps each expert whole beside tensor parallelism (--etp 1)."""
    return cfg.ep > 1 and cfg.tp > 1 and cfg.expert_tp == 1


def describe(cfg: TrainConfig) -> str:
    """A layout in one short line."""
    parts = [f"tp{cfg.tp}", f"pp{cfg.pp}", f"dp{cfg.dp}"]
    if cfg.ep > 1:
        parts.append(f"ep{cfg.ep}" + (" etp1" if whole_experts(cfg) else ""))
    if cfg.cp > 1:
        parts.append(f"cp{cfg.cp}")
    parts += [f"z{cfg.zero}", f"mb{cfg.micro_batch}", cfg.recompute]
    if cfg.interleave > 1:
        parts.append(f"v{cfg.interleave}")
    return " ".join(parts)


def _components(est: StepEstimate) -> dict[str, float]:
    parts: dict[str, float] = {
        "compute": est.compute_s - est.optimizer_s,
        "pipeline bubble": est.bubble_s,
        "optimizer": est.optimizer_s,
    }
    for c in est.comm:
        key = f"exposed {c.group} {c.op} ({c.link})"
        parts[key] = parts.get(key, 0.0) + c.exposed_s
    return parts


def why_slower(
    better: tuple[TrainConfig, StepEstimate], worse: tuple[TrainConfig, StepEstimate]
) -> str:
    """The biggest time component by which ``worse`` trails ``better``, with the layout change."""
    a, b = _components(better[1]), _components(worse[1])
    # in the steps' own order (a set's order follows string hashing, which changes between runs,
    # and two components can tie: a gather and its scatter take the same time)
    keys = [*a, *(k for k in b if k not in a)]
    deltas = {k: b.get(k, 0.0) - a.get(k, 0.0) for k in keys}
    key, delta = max(deltas.items(), key=lambda kv: kv[1])
    changed = [f"{name} {getattr(better[0], name)}->{getattr(worse[0], name)}"
               for name in ("tp", "pp", "dp", "ep", "zero", "micro_batch", "recompute", "interleave")
               if getattr(better[0], name) != getattr(worse[0], name)]  # fmt: skip
    # whole experts on one rank or the other, unless that is no change (TP 1 keeps them whole)
    if (whole_experts(better[0]) != whole_experts(worse[0])
            and better[0].expert_tp != worse[0].expert_tp):  # fmt: skip
        changed.insert(4, f"etp {better[0].expert_tp}->{worse[0].expert_tp}")
    total = worse[1].time_s - better[1].time_s
    what = ", ".join(changed) or "nothing"
    if total <= 5e-4 * better[1].time_s:  # within 0.05%: a tie
        diff = worse[1].memory.total_per_gpu_bytes - better[1].memory.total_per_gpu_bytes
        return f"ties with the one above ({what}); {abs(diff) / 2**30:.1f} GiB {'more' if diff > 0 else 'less'} memory per GPU"
    return f"+{format_time(total)}, mostly {key} (+{format_time(delta)}); changed: {what}"


def search(req: PlanRequest, networks: tuple[str | None, ...], top: int = 5) -> SearchResult:
    """Search every layout on every network."""
    t0 = time.perf_counter()
    results: list[NetworkResult] = []
    evaluated = 0
    plain = replace(like_for_like(req, networks), networks=())
    for net in networks:
        ev = evaluate_layouts(plain, net, wide=True, top=top)
        best = [(cfg, est) for cfg, est in ev.ranked if est.memory.fits]  # a pinned one may not
        tried, fitting, fabric, notes = ev.tried, ev.fitting, ev.fabric, ev.notes
        evaluated += tried
        ranked: list[Ranked] = []
        for i, (cfg, est) in enumerate(best):
            reason = why_slower(best[i - 1], (cfg, est)) if i else ""
            ranked.append(Ranked(cfg, est, reason))
        nodes = -(-req.gpus // fabric.gpus_per_node)
        cost = (
            fabric.network.cost_relative * fabric.nics_per_node * nodes
            if fabric.network and nodes > 1
            else 0.0
        )
        name = fabric.network.name if fabric.network else "none"
        results.append(NetworkResult(name, cost, tried, fitting, tuple(ranked), tuple(notes)))
    front: list[NetworkResult] = []
    for r in sorted((r for r in results if r.top), key=lambda r: (r.cost_relative, r.best_time_s)):
        if not front or r.best_time_s < front[-1].best_time_s:
            front.append(r)
    upgrades = []
    for lo, hi in itertools.pairwise(front):
        speed = lo.best_time_s / hi.best_time_s - 1
        cost = hi.cost_relative / lo.cost_relative - 1 if lo.cost_relative else float("inf")
        upgrades.append(
            f"{hi.network} over {lo.network}: +{100 * speed:.1f}% tokens/s for +{100 * cost:.0f}% network cost"
        )
    return SearchResult(
        tuple(results),
        tuple(r.network for r in front),
        tuple(upgrades),
        evaluated,
        time.perf_counter() - t0,
    )
