"""Communication ledger: every collective a step issues, per group, with its cost and overlap."""

from __future__ import annotations

from dataclasses import dataclass

from fabriclens.model.collectives import CollectiveEstimate, Fabric, Op, estimate_collective
from fabriclens.model.layout import Group


@dataclass(frozen=True, slots=True)
class CommEntry:
    """One kind of collective in a step: how many, how big, over which link, how long."""

    group: str  # tp, cp, ep, pp, dp, dp-expert
    op: Op
    size_bytes: float  # per call (nccl-tests size convention)
    count: float  # calls per step
    link: str  # nvlink, pcie, network
    time_s: float  # all calls of the step
    exposed_s: float  # the part not hidden behind compute
    busbw_bytes_per_s: float
    bottleneck: str
    note: str = ""

    @property
    def bytes_per_step(self) -> float:
        """Buffer bytes the step hands to this collective (size x count)."""
        return self.size_bytes * self.count


def collective_for(group: Group, op: Op, size_bytes: float, fabric: Fabric) -> CollectiveEstimate:
    """Cost of one collective of ``group``, with its placement and NIC sharing."""
    ranks = 2 if op == "send_recv" else group.size
    per_node = group.per_node if op != "send_recv" else (2 if not group.crosses_nodes else 1)
    return estimate_collective(
        op,
        size_bytes,
        ranks,
        fabric,
        ranks_per_node=per_node,
        concurrent_per_node=group.concurrent_per_node
        if op != "send_recv"
        else fabric.gpus_per_node,
    )


def entry(
    group: Group,
    op: Op,
    size_bytes: float,
    count: float,
    fabric: Fabric,
    overlap_window_s: float = 0.0,
    note: str = "",
    pieces: int = 1,
) -> CommEntry:
    """A ledger entry; ``overlap_window_s`` is compute time the calls can hide behind. A call
    issued as ``pieces`` collectives of ``size_bytes / pieces`` each (FSDP's and ZeRO-3's
    layer-by-layer gathers and scatters) pays each piece's latency; its size stays the whole
    buffer's, as nccl-tests would size one call over it."""
    est = collective_for(group, op, size_bytes / pieces, fabric)
    total = est.time_s * pieces * count
    exposed = max(0.0, total - overlap_window_s)
    return CommEntry(
        group=group.name,
        op=op,
        size_bytes=size_bytes,
        count=count,
        link=est.link,
        time_s=total,
        exposed_s=exposed,
        busbw_bytes_per_s=est.busbw_bytes_per_s,
        bottleneck=est.bottleneck,
        note=note,
    )
