"""JSON documents of `topo` and `simulate` (the text reports render these)."""

from __future__ import annotations

from typing import Any

from fabriclens.fabric.simulate import Scenario, SimResult, expected_slowest_share
from fabriclens.fabric.topology import OPTIC_COST_PER_100G, FabricDesign


def _summary(d: FabricDesign) -> dict[str, Any]:
    return {
        "tiers": d.tiers,
        "leaves": d.leaves,
        "spines": d.spines,
        "cores": d.cores,
        "switches": d.switches,
        "radix_at_link_rate": d.radix,
        "leaf_ports_down_up": [d.leaf_down, d.leaf_up],
        "ports_used": d.ports_used,
        "ports_free": d.ports_total - d.ports_used,
        "cables": d.cables(),
        "transceivers": d.transceivers(),
        "bisection_bits_per_s": d.bisection_bits_per_s,
        "worst_case_switch_hops": d.worst_hops,
        "cost_relative": round(d.cost_relative, 1),
    }


def topo_doc(
    d: FabricDesign, network: str, growth: list[dict[str, Any]], storage: FabricDesign | None
) -> dict[str, Any]:
    """`topo --json`: ``design`` (what `simulate --fabric` and `plan --fabric` read back),
    ``summary``, ``growth``, ``storage`` and ``assumptions``."""
    doc: dict[str, Any] = {
        "network": network,
        "design": d.to_dict(),
        "summary": _summary(d),
        "growth": growth,
        "storage": None
        if storage is None
        else {"design": storage.to_dict(), "summary": _summary(storage)},
        "assumptions": [
            f"every link at {d.link_rate_bits_per_s / 1e9:g} Gbit/s; {d.switch_title} offers {d.radix} ports at that rate"
            if d.up_units == 1
            else f"NIC links at {d.link_rate_bits_per_s / 1e9:g} Gbit/s ({d.switch_title}: {d.radix} ports at that rate), "
            f"switch-to-switch links at {d.up_rate_bits_per_s / 1e9:g} Gbit/s: an uplink carries {d.up_units} NICs' "
            "worth, so hashed flows collide less (MegaScale, NSDI 2024, sec. 3.4)",
            *(
                [
                    f"leaf: {d.leaf_down} ports down, {d.leaf_up} up"
                    + (f" at {d.up_rate_bits_per_s / 1e9:g}G" if d.up_units > 1 else "")
                    + f" ({d.oversubscription:g}:1)",
                    "each leaf reaches every spine (port p to spine p mod spines); three tiers: aggregation switch j of every pod joins core plane j",
                ]
                if d.tiers >= 2
                else []
            ),
            *(
                [
                    "rail-optimized: NIC r of each server in a scalable unit on that unit's leaf r; three tiers: one pod per unit"
                ]
                if d.rail_leaves
                else []
            ),
            f"cost: switches x catalog cost + optics at {OPTIC_COST_PER_100G} per 100G transceiver + copper; relative estimates for ranking, not prices",
            *d.notes,
        ],
    }
    return doc


def simulate_doc(
    d: FabricDesign, network: str, r: SimResult, sc: Scenario, rows: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """`simulate --json`."""
    return {
        "network": network,
        "fabric": {
            "topology": d.topology,
            "servers": d.servers,
            "tiers": d.tiers,
            "switch": d.switch,
            "oversubscription": d.oversubscription,
        },
        "scenario": {
            "routing": sc.routing,
            "placement": sc.placement,
            "rail_aware": sc.rail_aware,
            "seed": sc.seed,
            "flows": sc.flows,
            "failed_links": [list(x) for x in sc.failed_links],
            "failed_spines": list(sc.failed_spines),
            "slow_servers": [list(x) for x in sc.slow_servers],
            "nic_spread": sc.nic_spread,
        },
        "collective": {
            "op": r.op,
            "pattern": r.pattern,
            "size_bytes": r.size_bytes,
            "ranks": r.ranks,
            "servers": r.servers,
            "flows": r.flows,
            "time_s": r.time_s,
            "model_time_s": r.model_time_s,
            "ratio_to_model": r.ratio,
            "busbw_bytes_per_s": r.busbw_bytes_per_s,
            "model_busbw_bytes_per_s": r.model_busbw_bytes_per_s,
            "slowest_flow_share": r.slowest_flow_share,
        },
        "busiest_links": [{"link": name, "utilisation": u} for name, u in r.busiest],
        "effects": rows,
        "assumptions": [
            "flow-level: max-min fair rates by progressive filling, not packets; the slowest flow ends each lock-step step",
            "links at line rate x the network's efficiency; NIC links also capped by what the GPUs' host links feed them",
            f"NCCL-like channels: one connection per NIC, rail-aligned between servers; {sc.flows} flow{'s' if sc.flows > 1 else ''} per connection, equal bytes, each hashed on its own",
            "ecmp: one uniformly random equal-cost choice per flow and hop (seeded); adaptive: every bundle acts as one pipe",
            "time = the model's latency + max(intra-node part, network part)",
            *(
                [
                    f"NICs spread: each at 1 - {sc.nic_spread:g} x |z| of its rate (z standard normal, "
                    f"seed {sc.seed}); the expected slowest of the job's {r.servers * d.nics_per_server} at "
                    f"{expected_slowest_share(r.servers * d.nics_per_server, sc.nic_spread):.0%}"
                ]
                if sc.nic_spread
                else []
            ),
        ],
    }
