"""Communication ledger: every collective a step issues, per group, with its cost and overlap."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

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
    call_overhead_s: float = 0.0,
) -> CommEntry:
    """A ledger entry; ``overlap_window_s`` is compute time the calls can hide behind. A call
    issued as ``pieces`` collectives of ``size_bytes / pieces`` each (FSDP's and ZeRO-3's
    layer-by-layer gathers and scatters) pays each piece's latency, and ``call_overhead_s``
    besides (host work around each piece); its size stays the whole buffer's, as nccl-tests
    would size one call over it."""
    est = collective_for(group, op, size_bytes / pieces, fabric)
    total = (est.time_s + call_overhead_s) * pieces * count
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


# Megatron-Core DDP's default bucket: "max(40000000, 1000000 * dp_size) parameters (larger DP sizes
# need larger buckets to ensure collectives do not become latency-bound)", dp_size counting the
# context-parallel ranks too (megatron/core/distributed/distributed_data_parallel_config.py,
# bucket_size; distributed_data_parallel.py)
MEGATRON_BUCKET_MIN_PARAMS = 40e6
MEGATRON_BUCKET_PARAMS_PER_DP_RANK = 1e6


# PyTorch DistributedDataParallel's default bucket: bucket_cap_mb=25 MiB of gradient
# (torch/nn/parallel/distributed.py; nanotron's ModelArgs.ddp_bucket_cap_mb = 25 passes the same)
DDP_BUCKET_BYTES = 25 * 2**20


def bucket_params(grad_buckets: str, dp_cp: int, grad_bytes: float = 2.0, zero: int = 0) -> float:
    """Parameters per data-parallel bucket of the gradients' reduction (catalog GRAD_BUCKETS) at
    ZeRO stage ``zero`` with gradients of ``grad_bytes``; infinite: one call."""
    if grad_buckets == "megatron-core":
        return max(MEGATRON_BUCKET_MIN_PARAMS, MEGATRON_BUCKET_PARAMS_PER_DP_RANK * dp_cp)
    if ddp_buckets(grad_buckets, zero):
        return DDP_BUCKET_BYTES / grad_bytes
    return math.inf


def ddp_buckets(grad_buckets: str, zero: Any) -> Any:
    """Whether the gradients' reduction runs in PyTorch DDP's buckets at ZeRO stage ``zero`` (an
    int, or an array of them for the vectorised model): "ddp" at ZeRO-0, "ddp-all-stages" below
    ZeRO-3."""
    if grad_buckets == "ddp":
        return zero == 0
    if grad_buckets == "ddp-all-stages":
        return zero < 3
    return zero < 0  # never, in the shape of ``zero``


def gather_bucket_params(grad_buckets: str, dp_cp: int) -> float:
    """Parameters per call of the updated weights' gather (ZeRO-1/2): Megatron-Core's buckets,
    else one call (DDP buckets only the gradients; nanotron gathers with one coalesced call)."""
    return bucket_params(grad_buckets, dp_cp) if grad_buckets == "megatron-core" else math.inf


def bucket_count(params: float, per_bucket: float) -> int:
    """How many buckets ``params`` parameters fill (at least one)."""
    return 1 if math.isinf(per_bucket) else max(1, math.ceil(params / per_bucket))


def bucketed_exposed_s(bucket_s: float, buckets: int, window_s: float) -> float:
    """The exposed part of ``buckets`` calls of ``bucket_s`` each, issued one after another as
    their gradients become ready, evenly over a ``window_s`` of backward (or, mirrored, needed
    evenly over a forward): bucket k is ready at k/B of the window, the last at its end, so the
    calls finish at max(the window + one call, one window slice + every call). Without a window
    the whole is exposed, and so is a single bucket; many small ones tend to the first-order
    max(0, total - window), but never expose less than the last call."""
    total = bucket_s * buckets
    if window_s <= 0:
        return total
    return max(bucket_s, total - window_s + window_s / buckets)


def bucketed_entry(
    group: Group,
    op: Op,
    size_bytes: float,
    element_bytes: float,
    per_bucket: float,
    fabric: Fabric,
    overlap_window_s: float = 0.0,
    note: str = "",
) -> CommEntry:
    """A data-parallel reduction or gather of ``size_bytes`` (elements of ``element_bytes``) in
    buckets of ``per_bucket`` parameters (bucket_params); one bucket of the whole keeps the
    first-order overlap of :func:`entry`."""
    if math.isinf(per_bucket):
        return entry(group, op, size_bytes, 1, fabric, overlap_window_s, note)
    buckets = bucket_count(size_bytes / element_bytes, per_bucket)
    # the buckets are entry's pieces, each paying its latency; only their overlap differs
    calls = entry(group, op, size_bytes, 1, fabric, pieces=buckets)
    return replace(
        calls,
        exposed_s=bucketed_exposed_s(calls.time_s / buckets, buckets, overlap_window_s),
        note=f"{note}, in {buckets} bucket{'s' if buckets > 1 else ''}",
    )
