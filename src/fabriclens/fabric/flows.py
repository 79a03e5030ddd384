"""The network flows of one collective step, server to server, NIC to NIC.

NCCL runs one channel per NIC; a channel's traffic between two servers leaves by NIC c and
arrives at NIC c (rail-aligned, as rings and trees are built on rail-optimised fabrics). Volumes
are bytes per flow for the whole collective; the step ends when the slowest flow ends (ring and
tree steps are lock-step).

* ``ring`` (all_reduce, all_gather, reduce_scatter, broadcast): server i -> i+1 on each NIC,
  each flow ``size x bus_factor / nics``;
* ``tree`` (all_reduce): two complementary binary trees over the servers (NCCL's double binary
  tree), each carrying half of every channel's share up and down its edges;
* ``hierarchical`` (all_reduce): reduce-scatter inside the server, a ring per rail over the
  servers carrying ``size / g x 2(N-1)/N``, all-gather inside;
* ``all_to_all``: every GPU sends ``size / n`` to every other GPU; GPU a's data for GPU b leaves
  by a's NIC, or by b's rail when ``rail_aware`` (NCCL's PXN: NVLink first);
* ``pipeline`` (send_recv): stage server i sends ``size`` to i+1 on every NIC (each GPU its own).
* ``root`` (gather; scatter runs it reversed): every GPU of the other servers sends ``size / n``
  to the root (GPU 0 of the first server) from its own NIC to the root's, rail 0; with
  ``rail_aware`` (PXN) a server's GPUs hand their shares to its rail-0 GPU over NVLink first.

``flows`` > 1 splits every connection into that many flows of equal bytes (NCCL channels per NIC
x queue pairs per connection), each routed on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fabriclens.errors import InputError
from fabriclens.model.collectives import bus_factor

PATTERNS = ("ring", "tree", "hierarchical", "all_to_all", "pipeline", "root")
MAX_FLOWS = 4_000_000  # memory guard: ~100 bytes per flow-link entry


@dataclass(frozen=True)
class FlowSet:
    """Flows as arrays: NIC ids (server x nics + rail) and bytes."""

    src_nic: np.ndarray[Any, Any]
    dst_nic: np.ndarray[Any, Any]
    volume_bytes: np.ndarray[Any, Any]

    def split(self, flows: int) -> FlowSet:
        """Each connection as ``flows`` flows of equal bytes, side by side."""
        if flows == 1:
            return self
        return FlowSet(np.repeat(self.src_nic, flows), np.repeat(self.dst_nic, flows),
                       np.repeat(self.volume_bytes / flows, flows))  # fmt: skip


def _tree_parents(n: int, shift: int) -> np.ndarray[Any, Any]:
    """Parent of each of n positions in a binary tree (root -1); ``shift`` rotates which
    server sits where, so the second tree's leaves are the first one's inner nodes."""
    pos = (np.arange(n) + shift) % n
    parent_pos = np.where(pos == 0, -1, (pos - 1) // 2)
    order = (np.arange(n) - shift) % n  # server at each position
    return np.where(parent_pos < 0, -1, order[np.maximum(parent_pos, 0)])


def build_flows(
    pattern: str,
    op: str,
    size_bytes: float,
    servers: np.ndarray[Any, Any],
    gpus_used: int,
    nics: int,
    rail_aware: bool = False,
    flows: int = 1,
) -> FlowSet:
    """Flows of one collective of ``len(servers) x gpus_used`` ranks; ``servers`` in rank order;
    each connection split into ``flows`` flows."""
    n_srv = len(servers)
    ranks = n_srv * gpus_used
    c = np.arange(nics)
    if pattern not in PATTERNS:
        raise InputError(f"unknown pattern {pattern!r}", f"use one of {', '.join(PATTERNS)}")
    if pattern in ("ring", "hierarchical", "pipeline"):
        nxt = np.roll(servers, -1)
        pairs = np.arange(n_srv if pattern != "pipeline" else n_srv - 1)
        if pattern == "ring":
            vol = size_bytes * bus_factor(op, ranks) / nics  # type: ignore[arg-type]
        elif pattern == "hierarchical":
            vol = size_bytes / gpus_used * 2 * (n_srv - 1) / n_srv * gpus_used / nics
        else:
            vol = size_bytes * gpus_used / nics
        src = (servers[pairs][:, None] * nics + c[None, :]).ravel()
        dst = (nxt[pairs][:, None] * nics + c[None, :]).ravel()
        return FlowSet(src, dst, np.full(src.size, vol)).split(flows)
    if pattern == "root":
        others = servers[1:]
        per_gpu = size_bytes / ranks
        if rail_aware:
            src, each = others * nics, per_gpu * gpus_used
        else:
            rail = np.arange(gpus_used) * nics // gpus_used
            src, each = (others[:, None] * nics + rail[None, :]).ravel(), per_gpu
        dst = np.full(src.size, servers[0] * nics)
        if op == "scatter":
            src, dst = dst, src
        return FlowSet(src, dst, np.full(src.size, each)).split(flows)
    if pattern == "tree":
        chunk = size_bytes / nics / 2  # each channel's share, half on each tree
        srcs, dsts = [], []
        for ch in range(nics):
            for tree in (0, 1):
                parent = _tree_parents(n_srv, tree * (n_srv // 2))
                child = np.flatnonzero(parent >= 0)
                s_child, s_par = servers[child], servers[parent[child]]
                srcs += [s_child * nics + ch, s_par * nics + ch]  # reduce up, broadcast down
                dsts += [s_par * nics + ch, s_child * nics + ch]
        src, dst = np.concatenate(srcs), np.concatenate(dsts)
        return FlowSet(src, dst, np.full(src.size, chunk)).split(flows)
    # all_to_all
    per_pair = size_bytes / ranks  # each GPU sends this to each other GPU
    if rail_aware:
        count = n_srv * (n_srv - 1) * nics
    else:
        count = n_srv * (n_srv - 1) * gpus_used * gpus_used
    if count * flows > MAX_FLOWS:
        raise InputError(
            f"all_to_all on {n_srv} servers makes {count * flows:,} flows (the simulator stops at {MAX_FLOWS:,})",
            "simulate fewer servers, or use --rail-aware (one flow per server pair and rail)",
        )
    i, j = np.nonzero(~np.eye(n_srv, dtype=bool))
    if rail_aware:
        src = (servers[i][:, None] * nics + c[None, :]).ravel()
        dst = (servers[j][:, None] * nics + c[None, :]).ravel()
        return FlowSet(src, dst, np.full(src.size, per_pair * gpus_used * gpus_used / nics)).split(
            flows
        )
    a = np.arange(gpus_used)
    rail = a * nics // gpus_used
    src = (servers[i][:, None, None] * nics + rail[None, :, None]).repeat(gpus_used, 2).ravel()
    dst = (servers[j][:, None, None] * nics + rail[None, None, :]).repeat(gpus_used, 1).ravel()
    return FlowSet(src, dst, np.full(src.size, per_pair)).split(flows)
