"""Links of a designed fabric and the paths flows take over them.

Directed links, each cable two: NIC->leaf and leaf->NIC; leaf port p -> spine and back; (three
tiers) aggregation uplink q -> core and back. Routing:

* ``ecmp``: each switch picks one of its equal-cost uplinks by a hash of the flow (modelled as
  an independent uniform draw per flow and hop from a seeded generator), and the spine picks one
  of its parallel links down to the destination leaf the same way;
* ``static``: InfiniBand's destination-based forwarding tables (OpenSM's fat-tree / D-mod-k
  routing, Zahavi et al., "Optimized InfiniBand fat-tree routing for shift all-to-all
  communication patterns", 2010): every switch sends traffic for a destination up the port
  given by the destination's position under its leaf, so flows to different NICs of one leaf
  never share an uplink, and a shift pattern (a ring in fabric order) runs without contention;
* ``adaptive``: ideal adaptive routing / packet spraying: a flow spreads evenly over every
  equal-cost link, so a bundle (a leaf's uplinks, a pod's core links) acts as one pipe of the
  bundle's live capacity.

Failures (a leaf-spine cable, a whole spine) take links out: ECMP re-hashes the affected flows
over the surviving paths; adaptive routing loses the capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fabriclens.errors import InputError
from fabriclens.fabric.topology import FabricDesign

ROUTINGS = ("ecmp", "static", "adaptive")


@dataclass(frozen=True)
class LinkSpace:
    """Link ids and capacities (bytes/s) of a fabric, with what failed."""

    design: FabricDesign
    capacity: np.ndarray[Any, Any]
    alive_up: np.ndarray[Any, Any]  # (leaves, leaf_up) bool: leaf-spine cable works
    off: dict[str, int]

    def label(self, i: int) -> str:
        """Human name of link ``i``."""
        d, o = self.design, self.off
        nics, u = d.nics_per_server, max(1, d.leaf_up)
        s_pp = max(1, d.spines_per_pod)
        if i < o["nic_dn"]:
            return f"server {i // nics} NIC {i % nics} -> leaf {d.leaf_of(i // nics, i % nics)}"
        if i < o["lu"]:
            e = i - o["nic_dn"]
            return f"leaf {d.leaf_of(e // nics, e % nics)} -> server {e // nics} NIC {e % nics}"
        if i < o["ld"]:
            leaf, p = divmod(i - o["lu"], u)
            return f"leaf {leaf} -> spine {leaf // d.leaves_per_pod * s_pp + p % s_pp} (port {p})"
        if i < o["au"]:
            leaf, p = divmod(i - o["ld"], u)
            return f"spine {leaf // d.leaves_per_pod * s_pp + p % s_pp} -> leaf {leaf} (port {p})"
        a = max(1, d.spine_up)
        if i < o["ad"]:
            g, q = divmod(i - o["au"], a)
            return (
                f"spine {g} -> core {g % s_pp * d.cores_per_plane + q % max(1, d.cores_per_plane)}"
            )
        if i < o["agg_lu"]:
            g, q = divmod(i - o["ad"], a)
            return (
                f"core {g % s_pp * d.cores_per_plane + q % max(1, d.cores_per_plane)} -> spine {g}"
            )
        if i < o["agg_ld"]:
            return f"leaf {i - o['agg_lu']} uplinks (bundle)"
        if i < o["agg_pu"]:
            return f"leaf {i - o['agg_ld']} downlinks from spines (bundle)"
        if i < o["agg_pd"]:
            return f"pod {i - o['agg_pu']} core uplinks (bundle)"
        if i < o["end"]:
            return f"pod {i - o['agg_pd']} core downlinks (bundle)"
        return f"flow cap {i - o['end']}"


def link_space(
    design: FabricDesign,
    efficiency: float = 1.0,
    failed_links: tuple[tuple[int, int], ...] = (),
    failed_spines: tuple[int, ...] = (),
    slow_servers: tuple[tuple[int, float], ...] = (),
    nic_cap_bytes_per_s: float = float("inf"),
    nic_factors: np.ndarray[Any, Any] | None = None,
) -> LinkSpace:
    """The fabric's links at ``efficiency`` x line rate; ``failed_links`` are (leaf, uplink
    port) cables, ``failed_spines`` spine indices, ``slow_servers`` (server, rate factor);
    ``nic_cap_bytes_per_s`` caps each NIC link (what the GPUs' host links can feed it);
    ``nic_factors`` scales each NIC link (one factor per NIC, both directions)."""
    d = design
    e, leaves, u = d.endpoints, d.leaves, d.leaf_up if d.tiers >= 2 else 0
    g, a, pods = d.spines, d.spine_up if d.tiers == 3 else 0, d.pods
    off: dict[str, int] = {"nic_up": 0, "nic_dn": e, "lu": 2 * e, "ld": 2 * e + leaves * u}
    off["au"] = off["ld"] + leaves * u
    off["ad"] = off["au"] + g * a
    off["agg_lu"] = off["ad"] + g * a
    off["agg_ld"] = off["agg_lu"] + leaves
    off["agg_pu"] = off["agg_ld"] + leaves
    off["agg_pd"] = off["agg_pu"] + pods
    off["end"] = off["agg_pd"] + pods
    bw = d.up_bw_bytes_per_s * efficiency  # switch-to-switch links
    cap = np.full(off["end"], bw)
    cap[: 2 * e] = min(d.link_bw_bytes_per_s * efficiency, nic_cap_bytes_per_s)
    if nic_factors is not None:
        cap[:e] *= nic_factors
        cap[e : 2 * e] *= nic_factors
    alive = np.ones((leaves, max(u, 1)), dtype=bool)
    if u:
        s_pp = d.spines_per_pod
        for leaf, port in failed_links:
            if not (0 <= leaf < leaves and 0 <= port < u):
                raise InputError(
                    f"--fail-link {leaf}:{port} is not a leaf uplink (leaves 0-{leaves - 1}, ports 0-{u - 1})",
                    "give LEAF:PORT within the design",
                )
            alive[leaf, port] = False
        for spine in failed_spines:
            if not 0 <= spine < g:
                raise InputError(
                    f"--fail-spine {spine}: the design has spines 0-{g - 1}",
                    "give a spine index in range",
                )
            pod, local = divmod(spine, s_pp)
            rows = slice(pod * d.leaves_per_pod, (pod + 1) * d.leaves_per_pod)
            alive[rows, local::s_pp] = False
        dead = np.flatnonzero(~alive[:, :u].ravel())
        cap[off["lu"] + dead] = 0.0
        cap[off["ld"] + dead] = 0.0
    elif failed_links or failed_spines:
        raise InputError(
            "a one-tier fabric has no uplinks to fail", "drop --fail-link/--fail-spine"
        )
    for server, factor in slow_servers:
        if not (0 <= server < d.servers and 0 < factor <= 1):
            raise InputError(
                f"--slow-node {server}:{factor:g} is out of range",
                "give SERVER:FACTOR with FACTOR in (0, 1]",
            )
        ids = server * d.nics_per_server + np.arange(d.nics_per_server)
        cap[ids] *= factor
        cap[off["nic_dn"] + ids] *= factor
    cap[off["agg_lu"] : off["agg_ld"]] = alive[:, :u].sum(axis=1) * bw if u else 0.0
    cap[off["agg_ld"] : off["agg_pu"]] = cap[off["agg_lu"] : off["agg_ld"]]
    pod_up = g * a // max(1, pods) * bw
    cap[off["agg_pu"] : off["end"]] = pod_up
    return LinkSpace(design, cap, alive, off)


def _pick(h: np.ndarray[Any, Any], count: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.asarray(h % np.maximum(count, 1), dtype=np.int64)


def route(
    space: LinkSpace,
    src_nic: np.ndarray[Any, Any],
    dst_nic: np.ndarray[Any, Any],
    routing: str = "ecmp",
    seed: int = 0,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Incidence (flow, link, weight) of the flows' paths."""
    if routing not in ROUTINGS:
        raise InputError(f"unknown routing {routing!r}", f"use one of {', '.join(ROUTINGS)}")
    d, o = space.design, space.off
    nics = d.nics_per_server
    n = src_nic.size
    fid = np.arange(n)
    leaf_s = d.leaf_of(src_nic // nics, src_nic % nics)
    leaf_d = d.leaf_of(dst_nic // nics, dst_nic % nics)
    parts = [(fid, src_nic, np.ones(n)), (fid, o["nic_dn"] + dst_nic, np.ones(n))]
    cross = np.flatnonzero(leaf_s != leaf_d)
    if cross.size and d.tiers == 1:
        raise InputError(
            "a flow crosses rails on a fabric without spines",
            "use --rail-aware (PXN) on a rail-only fabric, or design rail-optimized",
        )
    if cross.size:
        pod_s, pod_d = leaf_s // d.leaves_per_pod, leaf_d // d.leaves_per_pod
        inter = cross[pod_s[cross] != pod_d[cross]]
        if routing == "adaptive":
            one = np.ones(cross.size)
            parts += [
                (cross, o["agg_lu"] + leaf_s[cross], one),
                (cross, o["agg_ld"] + leaf_d[cross], one),
            ]
            one = np.ones(inter.size)
            parts += [
                (inter, o["agg_pu"] + pod_s[inter], one),
                (inter, o["agg_pd"] + pod_d[inter], one),
            ]
        else:
            static = None
            if routing == "static":  # D-mod-k: the destination's port under its leaf
                pos = (dst_nic // nics) % d.servers_per_leaf
                if not d.rail_leaves:
                    pos = pos * nics + dst_nic % nics
                static = np.repeat(pos[:, None], 4, axis=1).astype(np.int64)
            parts += _ecmp(space, cross, inter, leaf_s, leaf_d, pod_s, pod_d, seed, static)
    f = np.concatenate([p[0] for p in parts])
    li = np.concatenate([p[1] for p in parts])
    w = np.concatenate([p[2] for p in parts])
    return f, li, w


def _ecmp(
    space: LinkSpace,
    cross: np.ndarray[Any, Any],
    inter: np.ndarray[Any, Any],
    leaf_s: np.ndarray[Any, Any],
    leaf_d: np.ndarray[Any, Any],
    pod_s: np.ndarray[Any, Any],
    pod_d: np.ndarray[Any, Any],
    seed: int,
    static: np.ndarray[Any, Any] | None = None,
) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """ECMP paths, or (``static``: a per-flow port key) destination-based static tables."""
    d, o = space.design, space.off
    u, s_pp = d.leaf_up, d.spines_per_pod
    if static is None:
        rng = np.random.default_rng(seed)
        h = rng.integers(0, 1 << 62, size=(leaf_s.size, 4), dtype=np.int64)
    else:
        h = static
    up = h[cross, 0] % u
    spine = up % s_pp
    down = spine + s_pp * _pick(h[cross, 1], (u - spine + s_pp - 1) // s_pp)
    is_inter = pod_s[cross] != pod_d[cross]
    alive = space.alive_up
    bad = np.flatnonzero(~alive[leaf_s[cross], up] | (~is_inter & ~alive[leaf_d[cross], down]))
    for b in bad:  # re-hash over the paths that survive (few flows)
        ls, ld = leaf_s[cross[b]], leaf_d[cross[b]]
        ok_up = np.flatnonzero(alive[ls, :u])
        if not is_inter[b]:
            ok_up = ok_up[[alive[ld, s::s_pp][:u].any() for s in ok_up % s_pp]]
        if ok_up.size == 0:
            raise InputError(f"the failures cut leaf {ls} off from leaf {ld}", "fail fewer links")
        up[b] = ok_up[h[cross[b], 2] % ok_up.size]
        spine[b] = up[b] % s_pp
        ports = np.arange(spine[b], u, s_pp)
        ports = ports[alive[ld, ports]] if not is_inter[b] else ports
        down[b] = ports[h[cross[b], 3] % ports.size]
    one = np.ones(cross.size)
    parts = [(cross, o["lu"] + leaf_s[cross] * u + up, one)]
    intra = ~is_inter
    parts.append((cross[intra], o["ld"] + leaf_d[cross[intra]] * u + down[intra], one[intra]))
    if inter.size:
        a, cp = d.spine_up, d.cores_per_plane
        j = up[is_inter] % s_pp  # the leaf uplink decides the aggregation switch
        q = h[inter, 1] % a
        core = q % cp
        q_dst = core + cp * _pick(h[inter, 2], (a - core + cp - 1) // cp)
        p_dst = j + s_pp * _pick(h[inter, 3], (u - j + s_pp - 1) // s_pp)
        g_src = pod_s[inter] * s_pp + j
        g_dst = pod_d[inter] * s_pp + j
        one = np.ones(inter.size)
        parts += [
            (inter, o["au"] + g_src * a + q, one),
            (inter, o["ad"] + g_dst * a + q_dst, one),
            (inter, o["ld"] + leaf_d[inter] * u + p_dst, one),
        ]
    return parts
