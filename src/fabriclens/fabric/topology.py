"""Size a fabric: leaves, spines, cores, ports, cables, optics, bisection and relative cost.

Every link runs at the NIC rate unless the switch-to-switch links are given a faster rate
(``uplink_rate``, a multiple of the NIC rate up to the switch's native rate: MegaScale splits each
400G leaf port into two 200G NIC links under 400G uplinks, so two hashed flows fit one uplink); a
switch offers ``Switch.ports_at(rate)`` ports at a rate (its breakout, e.g. a 64x800G switch as
128x400G). A leaf splits its ports, counted at the NIC rate, into ``down`` (to NICs) and ``up``
(to spines) as ``down / up = oversubscription``; an uplink at m x the NIC rate takes m of them. Each layer of switches joins the
one above as a *bundle*: port ``p`` of a lower switch goes to upper switch ``p % uppers``, so a
leaf reaches every spine (more than one link per spine when it has more uplinks than there are
spines), as the DGX SuperPOD and Clos designs are wired.

* every layout but ``rail-only``: NICs that fit one switch's ports go on that one switch (one
  tier, no uplinks: 8 DGX H100 on a 64-port QM9700);
* ``rail-optimized``: NIC r of every server in a scalable unit (SU: as many servers as a leaf has
  down ports) goes to that SU's leaf r; two tiers while the leaves fit the spines' radix, then
  three tiers with one pod per SU (the DGX SuperPOD layout beyond 8 SUs); an SU is cabled whole
  (every leaf's uplinks) even when part full, as the SuperPOD's are;
* ``leaf-spine``: servers packed into leaves (top of rack), two tiers;
* ``fat-tree``: packed leaves, pods of leaves and aggregation switches, and cores in planes
  (aggregation switch j of every pod joins plane j); ``core_oversubscription`` is the
  aggregation layer's down/up ratio (Llama 3's 1:7);
* ``rail-only``: one switch per rail, no spines (cross-rail traffic goes through NVLink).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from fabriclens.catalog.schema import Switch
from fabriclens.errors import InputError

TOPOLOGIES = ("rail-optimized", "leaf-spine", "fat-tree", "rail-only")
# Estimates for ranking designs only (the networks table's unit: a 100GbE node port = 1.0):
# one optical transceiver per 100 Gbit/s of its rate, and a copper (DAC) cable.
OPTIC_COST_PER_100G = 0.5
DAC_COST = 0.2


MAX_OVERSUBSCRIPTION = 64.0  # one uplink for 64 downlinks: beyond that a leaf is an island


def _uppers(lowers: int, up: int, radix: int) -> int:
    """Fewest upper switches for ``lowers`` switches of ``up`` ports each, wired port p ->
    upper p % n, such that no upper switch needs more than ``radix`` ports; 0 if none does."""
    if lowers * up == 0:
        return 0
    for n in range(max(1, math.ceil(lowers * up / radix)), up + 1):
        if lowers * math.ceil(up / n) <= radix:
            return n
    return 0


def _split(radix: int, ratio: float) -> tuple[int, int]:
    """Down and up ports of a switch whose down/up bandwidth ratio is ``ratio``."""
    down = int(radix * ratio / (1 + ratio) + 1e-9)
    return down, radix - down


@dataclass(frozen=True)
class FabricDesign:
    """A sized fabric. Counts are switches and links at the link rate; see the module doc."""

    topology: str
    servers: int
    gpus_per_server: int
    nics_per_server: int
    link_rate_bits_per_s: float
    switch: str
    switch_title: str
    switch_cost_relative: float
    switch_native_rate_bits_per_s: float
    radix: int  # ports per switch at the link rate
    oversubscription: float
    core_oversubscription: float
    rail_leaves: bool
    tiers: int
    leaf_down: int
    leaf_up: int
    servers_per_leaf: int  # rail layouts: servers per SU (per leaf of each rail)
    leaves: int
    leaves_per_pod: int
    pods: int
    spines_per_pod: int  # two tiers: all spines; three: aggregation switches per pod
    spine_up: int  # three tiers: uplinks per aggregation switch
    cores_per_plane: int
    notes: tuple[str, ...] = field(default=())
    # switch-to-switch links' rate; 0: the NIC rate (leaf_up, spine_up count links at this rate)
    uplink_rate_bits_per_s: float = 0.0

    @property
    def optical_to_servers(self) -> bool:
        """Servers reach their switches over optics: rail layouts span racks (a rack's servers
        go to every rail's switch), packed leaves sit in the rack (copper)."""
        return self.topology in ("rail-optimized", "rail-only")

    @property
    def up_rate_bits_per_s(self) -> float:
        """Line rate of a switch-to-switch link."""
        return self.uplink_rate_bits_per_s or self.link_rate_bits_per_s

    @property
    def up_units(self) -> int:
        """NIC-rate ports one switch-to-switch link takes."""
        return round(self.up_rate_bits_per_s / self.link_rate_bits_per_s)

    @property
    def up_bw_bytes_per_s(self) -> float:
        """One switch-to-switch link's line rate in bytes/s."""
        return self.up_rate_bits_per_s / 8

    @property
    def endpoints(self) -> int:
        """NIC ports on the fabric."""
        return self.servers * self.nics_per_server

    @property
    def spines(self) -> int:
        """Spine (two tiers) or aggregation (three tiers) switches."""
        return self.pods * self.spines_per_pod if self.tiers >= 2 else 0

    @property
    def cores(self) -> int:
        """Core switches (three tiers)."""
        return self.spines_per_pod * self.cores_per_plane if self.tiers == 3 else 0

    @property
    def switches(self) -> int:
        """All switches."""
        return self.leaves + self.spines + self.cores

    @property
    def leaf_spine_links(self) -> int:
        """Cables between leaves and spines."""
        return self.leaves * self.leaf_up if self.tiers >= 2 else 0

    @property
    def spine_core_links(self) -> int:
        """Cables between aggregation and core switches."""
        return self.spines * self.spine_up if self.tiers == 3 else 0

    @property
    def ports_used(self) -> int:
        """Switch ports (counted at the link rate) with a cable in them."""
        return self.endpoints + 2 * self.up_units * (self.leaf_spine_links + self.spine_core_links)

    @property
    def ports_total(self) -> int:
        """Switch ports (at the link rate) on all switches."""
        return self.switches * self.radix

    @property
    def link_bw_bytes_per_s(self) -> float:
        """One link's line rate in bytes/s."""
        return self.link_rate_bits_per_s / 8

    @property
    def bisection_bits_per_s(self) -> float:
        """Line-rate bandwidth across the worst cut into two halves of the servers."""
        rate, up = self.link_rate_bits_per_s, self.up_rate_bits_per_s
        cut = self.endpoints / 2 * rate
        if self.tiers >= 2:
            cut = min(cut, self.leaf_spine_links / 2 * up)
        if self.tiers == 3:
            cut = min(cut, self.spine_core_links / 2 * up)
        if self.tiers == 1 and self.rail_leaves and self.nics_per_server > 1:
            cut = self.endpoints / 2 * rate  # rails are separate switches: same-rail traffic only
        return cut

    @property
    def worst_hops(self) -> int:
        """Switches on the longest shortest path between two NICs of the same rail."""
        return {1: 1, 2: 3, 3: 5}[self.tiers]

    def cables(self) -> dict[str, int]:
        """Cables by kind."""
        out = {}
        kind = "optical" if self.optical_to_servers else "copper DAC (in rack)"
        out[f"server-leaf, {kind}"] = self.endpoints
        if self.leaf_spine_links:
            out["leaf-spine, optical"] = self.leaf_spine_links
        if self.spine_core_links:
            out["spine-core, optical"] = self.spine_core_links
        return out

    def transceivers(self) -> dict[str, int]:
        """Optical transceivers by rate: NIC-side at the link rate, switch-side at the switch's
        native rate carrying ``native / link`` links each (breakout; uplinks at their own rate)."""
        link_g = f"{self.link_rate_bits_per_s / 1e9:g}G"
        native = self.switch_native_rate_bits_per_s
        per = max(1, round(native / self.link_rate_bits_per_s))
        per_up = max(1, round(native / self.up_rate_bits_per_s))
        native_g = f"{native / 1e9:g}G"
        uplink_ends = 2 * (self.leaf_spine_links + self.spine_core_links)
        nic_ends = self.endpoints if self.optical_to_servers else 0
        out: dict[str, int] = {}
        if self.optical_to_servers:
            out[f"{link_g} (NIC side)"] = self.endpoints
        if uplink_ends or nic_ends:
            # one ceiling over both: a native port's breakout legs are shared
            out[f"{native_g} (switch side)"] = math.ceil(
                nic_ends / per + uplink_ends / per_up - 1e-9
            )
        return out

    @property
    def cost_relative(self) -> float:
        """Switches + optics + copper, in the networks table's unit (estimates; for ranking)."""
        optics = 0.0
        for kind, n in self.transceivers().items():
            optics += n * float(kind.split("G")[0]) / 100 * OPTIC_COST_PER_100G
        dac = 0 if self.optical_to_servers else self.endpoints * DAC_COST
        return self.switches * self.switch_cost_relative + optics + dac

    # --- where each NIC sits (vectorised by the simulator) ---

    def leaf_of(self, server: Any, rail: Any) -> Any:
        """Leaf index of NIC ``rail`` of ``server`` (ints or numpy arrays)."""
        if self.rail_leaves:
            return (server // self.servers_per_leaf) * self.nics_per_server + rail
        return server // self.servers_per_leaf

    def to_dict(self) -> dict[str, Any]:
        """Plain fields (the ``topo --json`` ``design`` object; ``from_dict`` reads it back)."""
        doc = asdict(self)
        doc["notes"] = list(self.notes)
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> FabricDesign:
        """Rebuild from ``to_dict``'s output; InputError when a field is missing or wrong."""
        names = set(cls.__dataclass_fields__)
        optional = {"notes", "uplink_rate_bits_per_s"}  # files from before these fields
        missing = sorted(names - set(doc) - optional)
        if missing:
            raise InputError(
                f"fabric file lacks {', '.join(missing[:3])}",
                "give the JSON that `fabriclens topo --json` writes",
            )
        kw = {k: doc[k] for k in names if k in doc}
        kw["notes"] = tuple(doc.get("notes", ()))
        try:
            design = cls(**kw)
        except TypeError as exc:
            raise InputError(
                f"fabric file: {exc}", "give `fabriclens topo --json` output"
            ) from None
        if design.topology not in TOPOLOGIES or design.tiers not in (1, 2, 3):
            raise InputError(
                "fabric file has an unknown topology", "regenerate it with topo --json"
            )
        return design


def design_fabric(
    servers: int,
    nics_per_server: int,
    link_rate_bits_per_s: float,
    switch: Switch,
    topology: str = "rail-optimized",
    oversubscription: float = 1.0,
    core_oversubscription: float = 1.0,
    gpus_per_server: int = 8,
    uplink_rate_bits_per_s: float | None = None,
) -> FabricDesign:
    """Size the fabric; InputError (one line with the fix) when it cannot be built.
    ``uplink_rate_bits_per_s``: switch-to-switch links at this rate (a multiple of the NIC rate the
    switch offers ports at); None: the NIC rate."""
    if topology not in TOPOLOGIES:
        raise InputError(f"unknown topology {topology!r}", f"use one of {', '.join(TOPOLOGIES)}")
    if servers < 1 or nics_per_server < 1 or gpus_per_server < 1:
        raise InputError(
            "servers, NICs and GPUs per server must be at least 1", "give positive counts"
        )
    for name, ratio in (
        ("--oversubscription", oversubscription),
        ("--core-oversubscription", core_oversubscription),
    ):
        if not ratio >= 1:
            raise InputError(
                f"{name} {ratio:g} is below 1 (more uplink than downlink bandwidth buys nothing)",
                f"give {name} 1 (non-blocking) or more, e.g. 3 for 3:1",
            )
        if ratio > MAX_OVERSUBSCRIPTION:
            raise InputError(
                f"{name} {ratio:g} leaves a leaf no uplink worth the name",
                f"give {name} between 1 and {MAX_OVERSUBSCRIPTION:g} (e.g. 3 for 3:1)",
            )
    if not link_rate_bits_per_s > 0:
        raise InputError(
            f"a NIC rate of {link_rate_bits_per_s / 1e9:g} Gbit/s carries nothing",
            "give the NICs' rate, e.g. --nic-rate 400G",
        )
    k = switch.ports_at(link_rate_bits_per_s)
    if k < 2:
        raise InputError(
            f"{switch.title} has no port of {link_rate_bits_per_s / 1e9:g} Gbit/s or faster",
            "choose a faster --switch (fabriclens catalog switches) or a slower NIC",
        )
    up_rate = uplink_rate_bits_per_s or link_rate_bits_per_s
    m = round(up_rate / link_rate_bits_per_s)
    if m < 1 or abs(m * link_rate_bits_per_s - up_rate) > 1e-6 * up_rate:
        raise InputError(
            f"--uplink-rate {up_rate / 1e9:g}G is not a multiple of the {link_rate_bits_per_s / 1e9:g}G NIC rate",
            f"give the NIC rate or a multiple of it, e.g. {2 * link_rate_bits_per_s / 1e9:g}G",
        )
    k_up = switch.ports_at(up_rate)  # an upper switch's ports at the uplink rate
    if k_up < 2:
        raise InputError(
            f"{switch.title} has no port of {up_rate / 1e9:g} Gbit/s",
            "give an --uplink-rate the switch offers (its native rate or a breakout of it)",
        )
    rail = topology in ("rail-optimized", "rail-only")
    notes: list[str] = []
    common: dict[str, Any] = dict(
        topology=topology, servers=servers, gpus_per_server=gpus_per_server,
        nics_per_server=nics_per_server, link_rate_bits_per_s=link_rate_bits_per_s,
        switch=switch.name, switch_title=switch.title, switch_cost_relative=switch.cost_relative,
        switch_native_rate_bits_per_s=switch.native_rate_bits_per_s, radix=k,
        oversubscription=oversubscription, core_oversubscription=core_oversubscription,
        rail_leaves=rail, uplink_rate_bits_per_s=0.0 if m == 1 else up_rate,
    )  # fmt: skip
    if topology == "rail-only":
        if servers > k:
            raise InputError(
                f"rail-only joins each rail on one {switch.name} of {k} ports: {servers} servers do not fit",
                "use --topology rail-optimized (adds spines) or a larger switch",
            )
        return FabricDesign(
            **common, tiers=1, leaf_down=k, leaf_up=0, servers_per_leaf=k,
            leaves=nics_per_server, leaves_per_pod=nics_per_server, pods=1, spines_per_pod=0,
            spine_up=0, cores_per_plane=0, notes=tuple(notes),
        )  # fmt: skip
    if servers * nics_per_server <= k:
        # one switch takes every NIC: no leaf needs an uplink, whatever the layout asked for
        return FabricDesign(
            **{**common, "rail_leaves": False}, tiers=1, leaf_down=k, leaf_up=0,
            servers_per_leaf=k // nics_per_server, leaves=1, leaves_per_pod=1, pods=1,
            spines_per_pod=0, spine_up=0, cores_per_plane=0,
            notes=(f"one {switch.name} takes all {servers * nics_per_server} NICs "
                   f"({k} ports): no spines",),
        )  # fmt: skip
    down, up_units = _split(k, oversubscription)
    up = up_units // m  # uplinks at the uplink rate, m NIC-rate ports each
    if up < 1:
        raise InputError(
            f"a {switch.name} leaf has {up_units} NIC-rate ports left for uplinks, fewer than one "
            f"{up_rate / 1e9:g}G uplink",
            "lower --oversubscription or the --uplink-rate",
        )
    if rail:
        per_leaf = down  # servers per SU
        leaves = math.ceil(servers / per_leaf) * nics_per_server
        if servers < per_leaf:  # one SU, part full: cabled whole, as the reference designs do
            need = math.ceil(math.ceil(servers / oversubscription - 1e-9) / m)
            if need < up:
                notes.append(
                    f"{servers} servers of an SU's {per_leaf}: the SU is cabled whole ({up} "
                    f"uplinks per leaf, as DGX SuperPOD's SUs are); {need} per leaf carry these "
                    f"servers at the same ratio, {(up - need) * leaves} leaf-spine cables fewer "
                    "until the SU grows"
                )
    else:
        per_leaf = down // nics_per_server
        if per_leaf < 1:
            raise InputError(
                f"a {switch.name} leaf has {down} down ports, fewer than a server's {nics_per_server} NICs",
                "use --topology rail-optimized or a switch with more ports",
            )
        leaves = math.ceil(servers / per_leaf)
    if leaves == 1:
        return FabricDesign(
            **common, tiers=1, leaf_down=down, leaf_up=up, servers_per_leaf=per_leaf,
            leaves=1, leaves_per_pod=1, pods=1, spines_per_pod=0, spine_up=0, cores_per_plane=0,
            notes=("one leaf holds every server: no spines",),
        )  # fmt: skip
    spines = _uppers(leaves, up, k_up)
    if topology != "fat-tree" and spines:
        return FabricDesign(
            **common, tiers=2, leaf_down=down, leaf_up=up, servers_per_leaf=per_leaf,
            leaves=leaves, leaves_per_pod=leaves, pods=1, spines_per_pod=spines, spine_up=0,
            cores_per_plane=0, notes=tuple(notes),
        )  # fmt: skip
    if topology == "leaf-spine":
        raise InputError(
            f"{leaves} leaves exceed what two tiers of {switch.name} ({k_up} ports) can join (at most {k_up})",
            "use --topology fat-tree (three tiers) or a larger switch",
        )
    # three tiers: pods of leaves and aggregation switches, cores above in planes
    agg_down, agg_up = _split(k_up, core_oversubscription)
    # rail: one SU per pod, as the DGX SuperPOD grows past 8 SUs; packed: each leaf one link to
    # each of its pod's aggregation switches
    per_pod = nics_per_server if rail else min(leaves, agg_down)
    aggs = _uppers(per_pod, up, agg_down)
    pods = math.ceil(leaves / per_pod)
    if topology == "fat-tree" and pods == 1:
        return FabricDesign(
            **common, tiers=2, leaf_down=down, leaf_up=up, servers_per_leaf=per_leaf,
            leaves=leaves, leaves_per_pod=leaves, pods=1, spines_per_pod=_uppers(leaves, up, k_up),
            spine_up=0, cores_per_plane=0, notes=("one pod holds every leaf: two tiers",),
        )  # fmt: skip
    cores = _uppers(pods, agg_up, k_up) if aggs else 0
    if not aggs or not cores:
        raise InputError(
            f"{servers} servers need more than three tiers of {switch.name} ({k} ports at "
            f"{link_rate_bits_per_s / 1e9:g}G)",
            "use a larger switch, fewer servers or more oversubscription",
        )
    leaves = pods * per_pod
    return FabricDesign(
        **common, tiers=3, leaf_down=down, leaf_up=up, servers_per_leaf=per_leaf, leaves=leaves,
        leaves_per_pod=per_pod, pods=pods, spines_per_pod=aggs, spine_up=agg_up,
        cores_per_plane=cores, notes=tuple(notes),
    )  # fmt: skip


def growth_table(
    servers: int,
    nics_per_server: int,
    link_rate_bits_per_s: float,
    switch: Switch,
    topology: str,
    oversubscription: float = 1.0,
    core_oversubscription: float = 1.0,
    uplink_rate_bits_per_s: float | None = None,
) -> list[dict[str, Any]]:
    """Designs for a doubling series of server counts around ``servers``: switches per tier and
    where the next tier becomes necessary (``tiers`` changes; None where it cannot be built)."""
    counts = sorted({max(1, servers // 4), max(1, servers // 2), servers}
                    | {servers * 2**i for i in range(1, 6)})  # fmt: skip
    rows = []
    for n in counts:
        try:
            d = design_fabric(n, nics_per_server, link_rate_bits_per_s, switch, topology,
                              oversubscription, core_oversubscription,
                              uplink_rate_bits_per_s=uplink_rate_bits_per_s)  # fmt: skip
        except InputError:
            rows.append({"servers": n, "tiers": None, "leaves": None, "spines": None, "cores": None,
                         "cost_relative": None})  # fmt: skip
            continue
        rows.append({"servers": n, "tiers": d.tiers, "leaves": d.leaves, "spines": d.spines,
                     "cores": d.cores, "cost_relative": round(d.cost_relative, 1)})  # fmt: skip
    return rows
