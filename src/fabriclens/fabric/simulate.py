"""Simulate one collective on a designed fabric and set it beside the alpha-beta model.

Time = the model's latency term + the longest of: the intra-node part (size x bus factor /
intra-node bus bandwidth, when a server holds more than one rank) and the network part (each
flow's bytes / its max-min fair rate; the slowest flow ends the step). On a non-blocking fabric
with ideal routing every flow gets its NIC's achievable rate and this equals the model.

A connection between two NICs may be several flows to the fabric (``Scenario.flows``): NCCL
opens one connection per channel, and ``NCCL_IB_QPS_PER_CONNECTION`` splits each into queue
pairs, each with its own RoCE UDP source port (and, with Meta's E-ECMP, its own destination QP
in the hash). The connection's bytes are spread evenly over its flows, so it ends with the
slowest of them; each flow is hashed on its own. InfiniBand's static tables route by destination,
so its flows share one path whatever their number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fabriclens.errors import InputError
from fabriclens.fabric.flows import build_flows
from fabriclens.fabric.maxmin import max_min_rates
from fabriclens.fabric.placement import place_servers
from fabriclens.fabric.routing import link_space, route
from fabriclens.fabric.topology import FabricDesign
from fabriclens.model.collectives import (
    ROOT_OPS,
    Fabric,
    Op,
    bus_factor,
    estimate_collective,
)

MAX_FLOWS_PER_CONNECTION = 64
EFFECT_SPREAD = 0.05  # the effects table's what-if: NIC rates 5% apart (illustrative)
# The Llama 3 Herd of Models (2024) §3.3.1: the collective library opens 16 network flows between
# two GPUs instead of one, and Enhanced-ECMP hashes them apart.
QP_SCALED_FLOWS = 16
DEFAULT_PATTERN = {"all_reduce": "ring", "all_gather": "ring", "reduce_scatter": "ring",
                   "broadcast": "ring", "reduce": "ring", "all_to_all": "all_to_all",
                   "send_recv": "pipeline", "gather": "root", "scatter": "root"}  # fmt: skip


@dataclass(frozen=True)
class Scenario:
    """What to simulate, beyond the design: routing, placement and what is broken."""

    routing: str = "ecmp"
    placement: str = "topology"
    rail_aware: bool = False
    seed: int = 0
    failed_links: tuple[tuple[int, int], ...] = ()
    failed_spines: tuple[int, ...] = ()
    slow_servers: tuple[tuple[int, float], ...] = ()
    flows: int = 1  # flows per NIC-to-NIC connection of a step (channels per NIC x QPs)
    # each NIC reaches 1 - nic_spread x |z| of its rate (z standard normal, drawn with the seed):
    # links that differ; a ring runs at its slowest (expected_slowest_share)
    nic_spread: float = 0.0


@dataclass(frozen=True)
class SimResult:
    """One simulated collective."""

    op: str
    pattern: str
    size_bytes: float
    ranks: int
    servers: int
    flows: int
    time_s: float
    model_time_s: float
    busbw_bytes_per_s: float
    model_busbw_bytes_per_s: float
    slowest_flow_share: float  # slowest connection's rate / a NIC link's capacity
    utilisation: np.ndarray[Any, Any] = field(repr=False)  # per link, at the max-min rates
    labels: tuple[str, ...] = field(repr=False, default=())  # busiest links, named
    busiest: tuple[tuple[str, float], ...] = ()

    @property
    def ratio(self) -> float:
        """Simulated time / model time."""
        return self.time_s / self.model_time_s if self.model_time_s > 0 else math.nan


def nic_spread_factors(nics: int, spread: float, seed: int) -> np.ndarray[Any, Any] | None:
    """Each NIC's share of its rate, 1 - spread x |z| (z standard normal, seeded), at least 5%;
    None without a spread."""
    if spread <= 0:
        return None
    z = np.random.default_rng([seed, 0x5EED]).standard_normal(nics)
    return np.maximum(0.05, 1.0 - spread * np.abs(z))


def expected_slowest_share(links: int, spread: float) -> float:
    """The expected share of its rate the slowest of ``links`` NICs reaches under
    ``nic_spread_factors``: 1 - spread x E[max of ``links`` half-normal |z|], the expectation
    integrated numerically (E[max] = integral of 1 - erf(x / sqrt 2) ** links over x >= 0)."""
    if spread <= 0 or links < 1:
        return 1.0
    step, x, total = 1e-3, 0.0, 0.0
    while x < 12.0:
        total += (1.0 - math.erf((x + step / 2) / math.sqrt(2.0)) ** links) * step
        x += step
    return max(0.05, 1.0 - spread * total)


def simulate_collective(
    design: FabricDesign,
    fabric: Fabric,
    op: Op,
    size_bytes: float,
    ranks: int,
    scenario: Scenario = Scenario(),
    pattern: str | None = None,
    top: int = 5,
) -> SimResult:
    """Simulate ``op`` of ``size_bytes`` on ``ranks`` ranks (filling servers' GPUs in order)."""
    if fabric.network is None:
        raise InputError("simulating a fabric needs a network", "give --network")
    if fabric.nics_per_node != design.nics_per_server:
        raise InputError(
            f"the fabric has {design.nics_per_server} NICs per server, the job {fabric.nics_per_node}",
            "use the same NIC count in topo and simulate",
        )
    g = min(ranks, fabric.gpus_per_node)
    if ranks % g:
        raise InputError(
            f"{ranks} ranks do not fill servers of {g} GPUs", "use a multiple of --gpus-per-server"
        )
    if not 1 <= scenario.flows <= MAX_FLOWS_PER_CONNECTION:
        raise InputError(
            f"{scenario.flows} flows per connection",
            f"give --flows between 1 and {MAX_FLOWS_PER_CONNECTION} (NCCL channels per NIC x QPs)",
        )
    n_srv = ranks // g
    pattern = pattern or DEFAULT_PATTERN[op]
    if (pattern == "root") != (op in ROOT_OPS):
        raise InputError(
            f"the {pattern} pattern does not run {op}",
            f"leave out --pattern ({op} runs as {DEFAULT_PATTERN[op]}); root is for gather and "
            "scatter only",
        )
    algo = "tree" if pattern == "tree" else "ring"
    est = estimate_collective(op, size_bytes, ranks, fabric, ranks_per_node=g, algorithm=algo)
    servers = place_servers(n_srv, design.servers, scenario.placement, scenario.seed)
    if not 0 <= scenario.nic_spread < 1:
        raise InputError(
            f"NIC spread {scenario.nic_spread:g}", "give --nic-spread between 0 and 99%, e.g. 5%"
        )
    host = g * fabric.gpu_net_bw() / design.nics_per_server  # what the GPUs' host links feed a NIC
    factors = nic_spread_factors(design.endpoints, scenario.nic_spread, scenario.seed)
    space = link_space(design, fabric.network.efficiency, scenario.failed_links,
                       scenario.failed_spines, scenario.slow_servers, host, factors)  # fmt: skip
    nic_bw = design.link_bw_bytes_per_s * fabric.network.efficiency
    net_s, share = 0.0, 1.0
    util = np.zeros(space.capacity.size)
    n_flows = 0
    if n_srv > 1:
        fl = build_flows(pattern, op, size_bytes, servers, g, design.nics_per_server,
                         scenario.rail_aware, scenario.flows)  # fmt: skip
        f, li, w = route(space, fl.src_nic, fl.dst_nic, scenario.routing, scenario.seed)
        n_flows = fl.src_nic.size
        cap = space.capacity
        rate = max_min_rates(f, li, w, cap, n_flows)
        if np.any(rate <= 0):
            raise InputError("a flow gets no bandwidth (a failed path)", "fail fewer links")
        net_s = float(np.max(fl.volume_bytes / rate))
        # a connection's flows carry equal bytes: it moves at flows x its slowest flow's rate
        share = float(np.min(rate)) * scenario.flows / min(nic_bw, host)
        if pattern == "root":  # every flow ends at the root's NIC, whose one GPU feeds it
            root_bw = min(nic_bw, fabric.gpu_net_bw())
            net_s = max(net_s, float(np.sum(fl.volume_bytes)) / root_bw)
            share = float(np.sum(fl.volume_bytes)) / net_s / root_bw
        load = np.bincount(li, weights=w * rate[f], minlength=cap.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            util = np.where(space.capacity > 0, load / space.capacity, 0.0)
    factor = bus_factor(op, ranks)
    intra_s = size_bytes * factor / fabric.intra_busbw() if g > 1 and op != "send_recv" else 0.0
    if pattern == "hierarchical":
        intra_s = 2 * size_bytes * (g - 1) / g / fabric.intra_busbw() if g > 1 else 0.0
        net_s += intra_s
    elif pattern == "root":  # the root's own server: (g-1)/n of the buffer over NVLink
        intra_s = size_bytes * (g - 1) / ranks / fabric.intra_busbw() if g > 1 else 0.0
    # the share of the bandwidth the model's protocol and algorithm reach (LL128's 120/128, an
    # all-reduce tree's discount) slows both parts
    time_s = est.latency_s + max(intra_s, net_s) / est.protocol_bw_fraction
    physical = util[: space.off["agg_lu"]] if scenario.routing != "adaptive" else util
    order = np.argsort(-physical, kind="stable")[:top]
    busiest = tuple((space.label(int(i)), float(physical[i])) for i in order if physical[i] > 0)
    algbw = size_bytes / time_s
    return SimResult(op, pattern, size_bytes, ranks, n_srv, n_flows, time_s, est.time_s,
                     algbw * (factor or 1.0), est.busbw_bytes_per_s, share, util,
                     busiest=busiest)  # fmt: skip


def effects(
    design: FabricDesign,
    fabric: Fabric,
    op: Op,
    size_bytes: float,
    ranks: int,
    scenario: Scenario,
    redesign: Any,
) -> list[dict[str, Any]]:
    """The same collective with one thing changed at a time: routing, flows per connection,
    uplink rate, oversubscription, rail layout, a failed link, a failed spine, a slow server.
    ``redesign(**changes)`` rebuilds the design (the caller holds the catalog switch). Each row:
    what changed, time, ratio to base."""
    base = simulate_collective(design, fabric, op, size_bytes, ranks, scenario)
    rows = [{"change": "as designed", "time_s": base.time_s, "vs_base": 1.0}]

    def add(name: str, d: FabricDesign, sc: Scenario) -> None:
        try:
            r = simulate_collective(d, fabric, op, size_bytes, ranks, sc)
        except InputError as exc:
            rows.append({"change": name, "time_s": None, "vs_base": None, "note": exc.problem})
            return
        rows.append({"change": name, "time_s": r.time_s, "vs_base": r.time_s / base.time_s})

    other = "adaptive" if scenario.routing == "ecmp" else "ecmp"
    add(f"{other} routing", design, replace(scenario, routing=other))
    if scenario.routing == "ecmp":
        # Llama 3's RoCE cluster: 16 flows between two GPUs, hashed apart by E-ECMP
        more = QP_SCALED_FLOWS if scenario.flows < QP_SCALED_FLOWS else 1
        add(
            f"{more} flow{'s' if more > 1 else ''} per connection (queue pairs)",
            design,
            replace(scenario, flows=more),
        )
    if scenario.routing != "adaptive" and design.tiers >= 2:
        # MegaScale's split: the same leaf bandwidth as half as many uplinks at twice the rate,
        # where the switch offers such ports (hashed flows then collide less)
        fat = design.up_units == 1
        try:
            changed = redesign(
                uplink_rate_bits_per_s=2 * design.link_rate_bits_per_s if fat else None
            )
        except InputError:
            changed = None
        if changed is not None:
            name = "uplinks at 2x the NIC rate" if fat else "uplinks at the NIC rate"
            add(name, changed, scenario)
    ratio = 3.0 if design.oversubscription == 1 else 1.0
    try:
        add(f"{ratio:g}:1 oversubscription", redesign(oversubscription=ratio), scenario)
    except InputError as exc:
        rows.append(
            {
                "change": f"{ratio:g}:1 oversubscription",
                "time_s": None,
                "vs_base": None,
                "note": exc.problem,
            }
        )
    if design.topology in ("rail-optimized", "leaf-spine"):
        topo = "leaf-spine" if design.topology == "rail-optimized" else "rail-optimized"
        try:
            add(f"{topo} instead", redesign(topology=topo), scenario)
        except InputError as exc:
            rows.append(
                {"change": f"{topo} instead", "time_s": None, "vs_base": None, "note": exc.problem}
            )
    if design.tiers >= 2:
        add(
            "one leaf uplink failed (leaf 0, port 0)",
            design,
            replace(scenario, failed_links=((0, 0),)),
        )
        add("one spine failed (spine 0)", design, replace(scenario, failed_spines=(0,)))
    add(
        "one slow server (server 0 NICs at 50%)",
        design,
        replace(scenario, slow_servers=((0, 0.5),)),
    )
    if scenario.nic_spread:
        add("NICs all at their rate (no spread)", design, replace(scenario, nic_spread=0.0))
    else:
        add(
            f"NIC rates spread {EFFECT_SPREAD:.0%} (each 1 - {EFFECT_SPREAD:g}|z|)",
            design,
            replace(scenario, nic_spread=EFFECT_SPREAD),
        )
    return rows


def simulated_network(design: FabricDesign, fabric: Fabric, gpus: int) -> tuple[Fabric, str]:
    """``fabric`` with its network efficiency scaled by what the designed fabric gives a ring
    all_reduce of the job's servers (ECMP, servers in fabric order): the planner's network
    collectives then take the simulated times. Returns the fabric and a note saying so."""
    if fabric.network is None or gpus <= fabric.gpus_per_node:
        return fabric, "fabric file: the job fits one server; no network traffic to simulate"
    r = simulate_collective(design, fabric, "all_reduce", float(2**30), gpus, Scenario())
    share = min(1.0, r.slowest_flow_share)
    net = fabric.network
    derated = replace(
        net,
        efficiency=net.efficiency * share,
        efficiency_source=f"{net.efficiency_source}; x {share:.2f} simulated on the designed fabric",
    )
    note = (
        f"network collectives use the simulated fabric ({design.topology}, {design.tiers} tier{'s' if design.tiers > 1 else ''}, "
        f"{design.switch}, {design.oversubscription:g}:1, ECMP): a 1 GiB ring all_reduce on "
        f"{gpus} GPUs gets {share:.0%} of the NIC rate, {r.ratio:.2f}x the flat model's time"
    )
    return replace(fabric, network=derated), note


LEDGER_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def simulate_ledger(
    design: FabricDesign,
    fabric: Fabric,
    comm: list[dict[str, Any]],
    ranks: int,
    scenario: Scenario = Scenario(),
) -> list[dict[str, Any]]:
    """A plan's communication ledger (``plan --json``'s ``comm``: per-step ``time_s`` and
    ``exposed_s`` of each group's collective) with every collective that crosses the network
    simulated on ``design``: its op at its per-call size over the job's ``ranks``, and the
    planner's time scaled by simulated / model time for that op. What the planner hid behind
    compute stays hidden up to the same window; the rest is exposed. Entries on NVLink/PCIe
    are kept as they are (``factor`` 1), and so are pipeline sends and broadcasts (``simulated``
    False): their flows are a few stage boundaries, not the job-wide pattern this proxy runs."""
    cache: dict[tuple[str, float], SimResult] = {}
    out = []
    for c in comm:
        row = {
            k: c[k] for k in ("group", "op", "size_bytes", "count", "link", "time_s", "exposed_s")
        }
        row["simulated"] = c["link"] == "network" and c["op"] in LEDGER_OPS
        if not row["simulated"]:
            out.append(
                row | {"factor": 1.0, "sim_time_s": c["time_s"], "sim_exposed_s": c["exposed_s"]}
            )
            continue
        key = (c["op"], float(c["size_bytes"]))
        if key not in cache:
            cache[key] = simulate_collective(
                design, fabric, c["op"], c["size_bytes"], ranks, scenario
            )
        factor = cache[key].ratio
        time_s = c["time_s"] * factor
        window = c["time_s"] - c["exposed_s"]  # how much of it compute hid in the plan
        out.append(row | {"factor": factor, "sim_time_s": time_s,
                          "sim_exposed_s": max(0.0, time_s - window)})  # fmt: skip
    return out
