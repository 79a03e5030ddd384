"""Collective cost model: alpha-beta with nccl-tests bus-bandwidth conventions.

For an operation on ``n`` ranks moving a buffer of ``size_bytes`` (for all_gather and
reduce_scatter: the total array, as nccl-tests counts it), nccl-tests defines

    algbw = size / time,   busbw = algbw * factor(op, n)

with factor 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all,
and 1 for broadcast and send_recv. A bandwidth-optimal algorithm moves size * factor bytes
through each rank's slowest link, so time = latency + size * factor / busbw_achievable, and
busbw_achievable is what each link can carry:

* inside one node, the link's line rate x its efficiency (NCCL's own topology figures);
  NVLink SHARP (NVLS) all_reduce instead reaches algbw = nvls_algbw_fraction x line rate;
* across nodes (ring), every ring crosses each node boundary once in each direction, so the
  bus bandwidth is the node's NIC bandwidth: nics_per_node x NIC rate x efficiency, shared by
  the groups that run at the same time on that node; all_to_all sends (n - g)/n of every
  rank's data off-node, so it gets the NIC bandwidth divided among the node's g ranks;
* a GPU reaches the NICs over its host link (PCIe x16, GPUDirect RDMA), so one group's share of
  a node's network is at most g x that link's achievable bandwidth: one GPU cannot drive eight
  400G NICs through a Gen5 x16 link (~48 GB/s, about one 400G NIC).

Latency: ring algorithms take steps proportional to n (2(n-1) for all_reduce); a tree
all_reduce takes 2 log2(nodes) network steps at 0.92 of the ring's bandwidth (NCCL's tuner
discounts an all-reduce tree so); the cheaper one is used, as NCCL's tuner does. On exactly two
nodes with NVLink SHARP, NVLSTree reduces inside each node's switch and sends the buffer across
once each way, beyond the ring's network bound (nccl-tests#196, nccl#1221).
What grows with scale across nodes (NCCL src/graph/tuning.cc, ncclTopoTuneModel):

* a ring's network steps each pay the NIC's alpha plus the switches on the path, which grow with
  the tiers the job spans: one leaf (one switch), leaf-spine (three), three tiers (five), from
  the node count and the switch radix (``fabric_tiers``);
* every step of a ring that spans nodes moves a message across each node boundary, and the ring
  advances at its slowest link's pace; NCCL's tuner charges its intra-node steps at least its
  network post overhead ("inter-node rings still have to launch nsteps * net overhead"), and
  where published sweeps measure a step's cost on a network (catalog ``ring_step_s``: AWS EFA on
  p5, 8 us, where NCCL's constants give about 3.6), every step costs at least that
  (``net_step_floor``); where they measure what a level of an all-reduce tree adds, each level
  pays it too (catalog ``tree_step_s``: p5, 43 us each way, twice for Simple, ``tree_level_s``);
* large messages run NCCL's Simple protocol, whose steps are slower than the low-latency
  protocols' (per-step latencies from NCCL's hwLat table), at full bandwidth; the low-latency
  protocol (LL128) keeps the catalog's alphas at 120/128 of the bandwidth. The ring's time is
  the cheaper of the two, as NCCL's tuner picks per size.

Routing congestion is not a term here: the fabric simulator (benchmarks/scale_curve.py) finds a
ring in fabric order under InfiniBand's static (D-mod-k) routing tables contention-free on two
tiers at every node count; designs and placements that do collide are simulated with
``plan --fabric`` / ``fabriclens simulate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from fabriclens.catalog.schema import IntraLink, Network
from fabriclens.errors import InputError

Op = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv",
             "reduce", "gather", "scatter"]  # fmt: skip
OPS: tuple[Op, ...] = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "send_recv",
    "reduce",
    "gather",
    "scatter",
)
# How nccl-tests, NCCL and users spell the ops (`alltoall`, `AllReduce`, `all-gather`, `p2p`)
OP_ALIASES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
              "alltoall": "all_to_all", "sendrecv": "send_recv", "p2p": "send_recv"}  # fmt: skip


def op_name(text: str) -> str:
    """The model's name for an op as it is spelled (case, `-` or `_`, nccl-tests' and NCCL's
    names): unchanged but for case and separators when it is none of them."""
    word = text.strip().lower().replace("-", "_")
    return OP_ALIASES.get(word.replace("_", ""), word)


# nccl-tests' bus factor (n-1)/n: every rank's share but its own crosses a link once
P2P_OPS = ("all_to_all", "send_recv")  # point-to-point in NCCL: algorithm "direct"
SHARE_OPS = ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter")
# gather and scatter (nccl-tests builds them from grouped sends and receives, as PyTorch does):
# the root receives (or sends) every other rank's share, the node's through NVLink, the rest
# through the one NIC its GPU uses for point-to-point traffic
ROOT_OPS = ("gather", "scatter")

# Fixed cost of launching one collective (kernel launch, proxy hand-off). Estimate: NCCL's
# tuner uses base latencies of a few microseconds per algorithm/protocol.
BASE_LATENCY_S = 6e-6

# NCCL's tuner (src/graph/tuning.cc, NCCL 2.18-2.19): Ring/Simple base latency 8.4 us, a network
# step 14 us (hwLat[NET][RING][SIMPLE]); on several nodes an intra-node step costs at least the
# network post overhead, 1 us x 3 for Simple ("inter-node rings still have to launch nsteps *
# net overhead"); LL128 reaches 120/128 of the bus bandwidth.
SIMPLE_BASE_LATENCY_S = 8.4e-6
SIMPLE_NET_STEP_S = 14e-6
SIMPLE_NET_OVERHEAD_S = 3e-6
LL128_BW_FRACTION = 120 / 128
# NCCL's tuner prices an all-reduce tree at 0.92 of its graph bandwidth ("if (coll ==
# ncclFuncAllReduce) busBw = std::min(busBw * .92, ...)", src/graph/tuning.cc)
TREE_ALLREDUCE_BW_FRACTION = 0.92
# ...and caps it per channel (perChMaxTreeBws, GB/s, by GPU generation, for two nodes and for
# three or more; NCCL src/graph/tuning.cc at 2.28.3, the same at NVIDIA/nccl 5067397c). Across
# nodes a tree channel runs through one NIC, so a node's tree has one channel per NIC and the
# cap binds where the NICs are fast: Blackwell on 8 x 400G, 8 x 42.8 = 342 GB/s on two nodes and
# 8 x 24 = 192 from three, where the ring reaches ~389 (together-nccl-tests slinky sweeps: tree
# 338.6 on two nodes, 191.7-195.6 on 4-60; reference cm178); Hopper on 4 x 400G RoCE at five
# nodes, 4 x 36 = 144 (nccl#1368: 150 GB/s, the ring 190).
# NVLSTree on two nodes likewise: perChMaxNVLSTreeBws (NCCL 2.28.3), one channel per GPU of the
# node ("NVLS channels correspond to GPUs pulling from NVLS", maxChannels = the node's GPUs, at
# most 32: src/graph/search.cc). 8 H100s: 8 x 57.7 = 462 GB/s, where the link-bound estimate
# gave 514 and published two-node runs on 8 x 400G-class NICs give 430-487 (reference cm028,
# cm075-cm098, cm142-cm165, cm182).
NVLS_TREE_CHANNEL_BW = {"hopper": 57.7e9, "blackwell": 96.0e9}  # two nodes, bytes/s per channel
NVLS_MAX_CHANNELS = 32.0  # NCCL_MAX_NVLS_ARITY (src/include/device.h)
TREE_CHANNEL_BW = {  # generation: (two nodes, three or more), bytes/s per channel
    "volta": (18.5e9, 10.0e9),
    "ampere": (23.6e9, 17.8e9),
    "hopper": (41.4e9, 36.0e9),
    "blackwell": (42.8e9, 24.0e9),
}
# A tree's two protocols, as NCCL's tuner prices them (src/graph/tuning.cc at 2.28.3 and at
# NVIDIA/nccl 5067397c): LL128 at 120/128 of the tree's bandwidth and under its own per-channel
# cap (perChMaxTreeLL128Bws: Hopper 36.7 GB/s on two nodes, 29.0 from three; Blackwell 31.67 and
# 20.0), at the low latency; Simple at the whole bandwidth, a step across the network costing at
# least hwLat[NET][TREE][SIMPLE] (14 us) and one inside the node hwLat[NVLINK][TREE][SIMPLE]
# (4 us), from baseLat[TREE][SIMPLE] (8.4 us), over the tree's levels as the low-latency tree's
# are counted (so Simple's latency is never below LL128's, as in NCCL's table). NCCL enables
# LL128 across nodes on Hopper and Blackwell wherever the NIC sits at most a PCIe switch (or PXN)
# from the GPU, on Ampere and Volta up to a PCIe switch: every node the catalog describes. The
# faster protocol for the size wins, as NCCL's tuner picks (AWS's tuner plugin picks Tree LL128
# on p5 up to 30-512 MiB by rank count: aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp,
# region_init_internal_p5_p5e).
TREE_LL128_CHANNEL_BW = {  # generation: (two nodes, three or more), bytes/s per channel
    "volta": (20.0e9, 20.0e9),
    "ampere": (20.0e9, 20.0e9),
    "hopper": (36.7e9, 29.0e9),
    "blackwell": (31.67e9, 20.0e9),
}
TREE_SIMPLE_NET_STEP_S = 14e-6
TREE_SIMPLE_INTRA_STEP_S = 4e-6
# NVLSTree (NVLink SHARP inside each node, a tree between nodes): hwLat[NVLINK][NVLS_TREE] 25 us
# and hwLat[NET][NVLS_TREE] 14 us (NCCL src/graph/tuning.cc, 2.19-2.21). NCCL's staff: "On two
# nodes, NCCL uses the tree (or nvlstree) algorithm which can indeed go beyond the network
# bottleneck" (nccl-tests#196).
NVLS_TREE_INTRA_S = 25e-6
NVLS_TREE_NET_STEP_S = 14e-6
# A ring inside one node as NCCL's tuner prices it (src/graph/tuning.cc, 2.19-2.21): base latency
# baseLat[RING][proto] plus a hardware latency hwLat[NVLINK or PCI][RING][proto] per step; LL
# (8-byte stores each carrying a 4-byte flag) moves half the bus bandwidth ("busBw * .5"),
# LL128 120/128 of it, Simple all of it. The fastest protocol for the size wins, as NCCL's does.
NCCL_RING_PROTOCOLS = (  # (name, base latency, per-step latency on NVLink, on PCIe, bw share)
    ("LL", 6.6e-6, 0.6e-6, 1.0e-6, 0.5),
    ("LL128", 14.0e-6, 1.9e-6, 2.5e-6, LL128_BW_FRACTION),
    ("Simple", 8.4e-6, 3.4e-6, 5.7e-6, 1.0),
)
# NCCL runs reduce and broadcast as a pipelined ring only (src/device/reduce.h, broadcast.h):
# every link carries the buffer once, busbw = algbw
NCCL_RING_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
# NVLink SHARP inside one node: the same tuner prices NVLS (Simple) at hwLat[NVLINK][NVLS] 25 us
# and no base latency (tuning.cc, 2.19-2.21; 23 us in 2.18): the all-reduce of 1-16 MiB on
# 8 x H100 runs well below the switch's bandwidth (Azure ND H100 v5: 44 GB/s busbw at 1 MiB).
NVLS_INTRA_S = 25e-6
# Inference engines reduce tensor-parallel activations inside a node with their own kernel, not
# NCCL: vLLM's CustomAllreduce (world sizes 2, 4, 6, 8; tensors up to 8 MiB; peer-to-peer access,
# and NVLink when more than two GPUs: vllm/distributed/device_communicators/custom_all_reduce.py)
# and the same kind in SGLang and TensorRT-LLM. Each GPU signals its peers, waits for them and
# reads their buffers: one-shot, a launch and two link latencies with (ranks - 1) x size read
# per GPU; two-shot for larger tensors, a reduce-scatter then an all-gather.
CUSTOM_ALL_REDUCE_MAX_BYTES = 8192 * 1024
CUSTOM_ALL_REDUCE_RANKS = (2, 4, 6, 8)
# Switch traversal latency per hop, cable included. Estimate: cut-through InfiniBand switches
# forward in ~0.1-0.2 us and Ethernet ASICs in ~0.5-1 us, plus ~0.5 us per 100 m of fibre.
SWITCH_HOP_LATENCY_S = 0.5e-6
# Switches on the longest path between two NICs of one rail, by tiers (leaf / leaf-spine / 3).
SWITCH_HOPS = {1: 1, 2: 3, 3: 5}
# Ports per switch at the NIC rate when the fabric names none: a 64-port 400G switch (NVIDIA
# QM9700 datasheet: 64 NDR ports; Broadcom Tomahawk 4: 64 x 400GbE).
DEFAULT_SWITCH_RADIX = 64


def fabric_tiers(nodes: int, nics_per_node: int, radix: int) -> int:
    """Switch tiers a job of ``nodes`` spans on a non-blocking fabric of ``radix``-port switches:
    1 while one leaf per rail holds every node (radix/2 nodes: a DGX SuperPOD scalable unit is
    32 nodes on 64-port leaves), 2 while a two-level Clos holds the NICs (radix^2/2 endpoints),
    else 3 (a three-level fat tree holds radix^3/4; Al-Fares et al., SIGCOMM 2008)."""
    if nodes <= max(1, radix // 2):
        return 1
    if nodes * max(1, nics_per_node) <= radix * radix // 2:
        return 2
    return 3


def bus_factor(op: Op, ranks: int) -> float:
    """nccl-tests bus-bandwidth factor: busbw = algbw * bus_factor(op, ranks)."""
    if ranks <= 1:
        return 0.0 if op != "send_recv" else 1.0
    if op == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if op in SHARE_OPS:
        return (ranks - 1) / ranks
    return 1.0


def ring_steps(op: Op, ranks: int) -> int:
    """Steps of a ring collective over ``ranks`` ranks, as NCCL's tuner counts them: 2(n-1) for
    all_reduce (reduce-scatter, then all-gather), n-1 for the others, one for send_recv."""
    if op == "send_recv":
        return 1
    return 2 * (ranks - 1) if op == "all_reduce" else max(1, ranks - 1)


@dataclass(frozen=True, slots=True)
class Fabric:
    """What connects the GPUs: one intra-node link type, one NIC type, NICs per node, and each
    GPU's host link (its path to the NICs)."""

    intra: IntraLink
    network: Network | None
    gpus_per_node: int
    nics_per_node: int = 1
    host: IntraLink | None = None  # each GPU's PCIe link to the host and NICs; None: not capped
    switch_radix: int = DEFAULT_SWITCH_RADIX  # ports per fabric switch at the NIC rate
    generation: str = ""  # the GPUs' generation, for NCCL's per-generation caps; "": unknown

    def tree_channel_rate(self, nodes: float, protocol: str = "Simple") -> float:
        """NCCL's per-channel rate of an all-reduce tree across ``nodes`` nodes for this
        generation, bytes/s: TREE_CHANNEL_BW for Simple, the smaller of it and
        TREE_LL128_CHANNEL_BW for LL128; inf for an unknown generation or no network."""
        rates = TREE_CHANNEL_BW.get(self.generation)
        if rates is None or self.network is None:
            return math.inf
        rate = rates[0] if nodes <= 2 else rates[1]
        if protocol == "LL128":
            ll128 = TREE_LL128_CHANNEL_BW[self.generation]
            rate = min(rate, ll128[0] if nodes <= 2 else ll128[1])
        return rate

    def tree_channel_cap(
        self, nodes: float, concurrent: float = 1.0, protocol: str = "Simple"
    ) -> float:
        """NCCL's cap on an all-reduce tree, bytes/s of bus bandwidth: one channel per NIC the
        group has, at most one per GPU (``concurrent`` groups share a node's NICs), at
        ``tree_channel_rate``. Two NICs per GPU add none: 16 x 100G on 8 A100s run a two-node
        all_reduce at 180-238 GB/s busbw, 8 channels' 189, not 16's 378 (reference cm138-cm147)."""
        channels = max(1.0, self.tree_nics() / max(1.0, concurrent))
        return channels * self.tree_channel_rate(nodes, protocol)

    def tree_nics(self) -> float:
        """The NICs an all-reduce tree gets a channel for: one per GPU at most."""
        return float(min(self.nics_per_node, self.gpus_per_node))

    def nvls_tree_channel_rate(self) -> float:
        """NCCL's per-channel rate of a two-node NVLSTree for this generation
        (NVLS_TREE_CHANNEL_BW), bytes/s; inf for an unknown generation."""
        return NVLS_TREE_CHANNEL_BW.get(self.generation, math.inf)

    def nvls_tree_cap(self, gpus: float) -> float:
        """NCCL's cap on a two-node NVLSTree, bytes/s of bus bandwidth: one channel per GPU of
        the node (at most NVLS_MAX_CHANNELS) at ``nvls_tree_channel_rate``."""
        return min(gpus, NVLS_MAX_CHANNELS) * self.nvls_tree_channel_rate()

    def tiers(self, nodes: int) -> int:
        """Switch tiers a job of ``nodes`` nodes spans (``fabric_tiers``)."""
        return fabric_tiers(nodes, self.nics_per_node, self.switch_radix)

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1:
            raise InputError(
                f"{self.gpus_per_node} GPUs per node", "give --gpus-per-node 1 or more"
            )
        if self.network is not None and self.nics_per_node < 1:
            raise InputError(
                f"{self.nics_per_node} NICs per node cannot reach the network",
                "give --nics-per-node 1 or more",
            )

    def intra_busbw(self) -> float:
        """Achievable bus bandwidth of the intra-node link, bytes/s per GPU."""
        return self.intra.bw_bytes_per_s * self.intra.efficiency

    def nvls_algbw(self) -> float:
        """Algorithm bandwidth of an NVLink SHARP all-reduce inside one node, bytes/s (the
        in-switch reduction's rate; 0 where the link has no NVLS)."""
        return self.intra.bw_bytes_per_s * self.intra.nvls_algbw_fraction

    def node_net_bw(self) -> float:
        """Achievable network bandwidth out of one node (all its NICs), bytes/s."""
        if self.network is None:
            return 0.0
        return self.nics_per_node * self.network.bw_bytes_per_s * self.network.efficiency

    def gpu_net_bw(self) -> float:
        """Achievable bandwidth between one GPU and the NICs over its host link, bytes/s (inf
        when the fabric names no host link)."""
        if self.host is None:
            return math.inf
        return self.host.bw_bytes_per_s * self.host.efficiency


@dataclass(frozen=True, slots=True)
class CollectiveEstimate:
    """Predicted cost of one collective."""

    op: Op
    size_bytes: float
    ranks: int
    nodes: int
    time_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    latency_s: float
    # "intra-node link", "network", "host link", "tree channels" (NCCL's per-channel tree cap),
    # "latency" or "none"
    bottleneck: str
    link: str  # "nvlink", "pcie", "network", "none"
    algorithm: str  # "ring", "tree", "nvls", "nvls_tree", "direct", "custom", "none"
    # of the bus bandwidth the chosen protocol and algorithm reach (LL, LL128, an all-reduce tree)
    protocol_bw_fraction: float = 1.0
    # NCCL's protocol the model runs a ring or tree in: "LL", "LL128" or "Simple"; "" for NVLS,
    # NVLSTree and point-to-point (Simple, the only one they run) and an engine's own kernel
    protocol: str = ""


def _none(op: Op, size: float, ranks: int) -> CollectiveEstimate:
    return CollectiveEstimate(op, size, ranks, 1, 0.0, 0.0, 0.0, 0.0, "none", "none", "none")


def _pick(candidates: list[tuple[float, float, str]], wanted: str) -> tuple[float, float, str]:
    """The forced algorithm if available, else the fastest; ring unless another saves >5%."""
    for cand in candidates:
        if cand[2] == wanted or (wanted == "nvls" and cand[2] == "nvls_tree"):
            return cand
    if wanted not in ("auto", ""):
        return candidates[0]
    best = min(candidates)
    return candidates[0] if candidates[0][0] <= best[0] * 1.05 else best


def estimate_collective(
    op: Op,
    size_bytes: float,
    ranks: int,
    fabric: Fabric,
    ranks_per_node: int | None = None,
    concurrent_per_node: int = 1,
    algorithm: str = "auto",
) -> CollectiveEstimate:
    """Predict time, algbw and busbw of one collective on ``ranks`` ranks.

    ``ranks_per_node``: how many of the group's ranks share a node (default: as many as fit).
    ``concurrent_per_node``: how many such groups run at once on a node and share its NICs
    (e.g. the tp data-parallel groups of a node, each doing its gradient all-reduce).
    ``algorithm``: "auto" (the fastest, as NCCL's tuner picks), or force "ring", "tree" or
    "nvls" (like NCCL_ALGO); a forced algorithm the hardware lacks falls back to ring.
    """
    if ranks <= 1 or size_bytes <= 0:
        return _none(op, size_bytes, ranks)
    g = min(ranks, ranks_per_node or fabric.gpus_per_node, fabric.gpus_per_node)
    nodes = math.ceil(ranks / g)
    factor = bus_factor(op, ranks)
    intra_bw = fabric.intra_busbw()
    intra_lat = fabric.intra.latency_s
    link_kind = fabric.intra.kind

    if nodes == 1:
        candidates: list[tuple[float, float, str]] = []  # (time, latency, algorithm)
        steps = ring_steps(op, ranks)
        proto_fraction = 1.0
        ring_protocol = ""
        if op in NCCL_RING_OPS and intra_bw > 0:
            ring = [(base + steps * (nvl if link_kind == "nvlink" else pci), share, name)
                    for name, base, nvl, pci, share in NCCL_RING_PROTOCOLS]  # fmt: skip
            lat, proto_fraction, ring_protocol = min(
                ring, key=lambda r: r[0] + size_bytes * factor / (intra_bw * r[1])
            )
            bw_time = size_bytes * factor / (intra_bw * proto_fraction)
        else:  # point-to-point (all_to_all, send_recv): a launch and a hop per step
            lat = BASE_LATENCY_S + steps * intra_lat
            bw_time = size_bytes * factor / intra_bw if intra_bw > 0 else math.inf
        # NCCL runs all_to_all and send/recv as point-to-point transfers, not a ring
        candidates.append((lat + bw_time, lat, "direct" if op in P2P_OPS else "ring"))
        if op == "all_reduce" and fabric.intra.nvls and ranks > 2:
            nvls_algbw = fabric.nvls_algbw()
            candidates.append((NVLS_INTRA_S + size_bytes / nvls_algbw, NVLS_INTRA_S, "nvls"))
        time_s, lat, algorithm = _pick(candidates, algorithm)
        bottleneck = "latency" if lat > time_s / 2 else "intra-node link"
        algbw = size_bytes / time_s
        return CollectiveEstimate(
            op,
            size_bytes,
            ranks,
            1,
            time_s,
            algbw,
            algbw * factor,
            lat,
            bottleneck,
            link_kind,
            algorithm,
            proto_fraction if algorithm == "ring" else 1.0,
            ring_protocol if algorithm == "ring" else "",
        )

    if fabric.network is None:
        raise ValueError("a collective across nodes needs a network")
    net = fabric.network
    if op in ROOT_OPS:
        return _root_collective(op, size_bytes, ranks, g, nodes, fabric)
    nic_share = fabric.node_net_bw() / max(1, concurrent_per_node)
    node_bw = min(nic_share, g * fabric.gpu_net_bw())  # the group's g GPUs' host links
    if op == "all_to_all":
        # each rank's off-node share (n-g)/n crosses the NICs the node's g ranks share
        net_busbw = node_bw / g * (ranks - 1) / max(1, ranks - g)
    elif op == "send_recv":
        # one rank's point-to-point traffic rides one NIC (rail), shared if groups outnumber NICs
        net_busbw = min(nic_rate(fabric), node_bw)
    else:
        net_busbw = node_bw
    busbw = min(intra_bw, net_busbw) if g > 1 else net_busbw
    bottleneck = "network" if net_busbw <= intra_bw or g == 1 else "intra-node link"
    if bottleneck == "network" and node_bw < nic_share:
        bottleneck = "host link"

    all_steps = ring_steps(op, ranks)
    net_steps = 1 if op == "send_recv" else 2 * nodes if op == "all_reduce" else nodes
    hop_s = SWITCH_HOPS[fabric.tiers(nodes)] * SWITCH_HOP_LATENCY_S
    proto_fraction = 1.0
    ring_protocol = ""
    intra_steps = all_steps - net_steps
    floor = net_step_floor(intra_lat, net)
    ring_lat = (
        BASE_LATENCY_S + net_steps * (max(net.latency_s, floor) + hop_s) + intra_steps * floor
    )
    ring_time = ring_lat + size_bytes * factor / busbw
    if op != "send_recv":
        # low-latency protocol (LL128) vs Simple, the cheaper as NCCL's tuner picks
        ring_time = ring_lat + size_bytes * factor / (busbw * LL128_BW_FRACTION)
        simple_lat = (
            SIMPLE_BASE_LATENCY_S
            + net_steps * (max(net.latency_s, SIMPLE_NET_STEP_S, floor) + hop_s)
            + intra_steps * max(floor, SIMPLE_NET_OVERHEAD_S)
        )
        simple_time = simple_lat + size_bytes * factor / busbw
        if simple_time < ring_time:
            ring_time, ring_lat, ring_protocol = simple_time, simple_lat, "Simple"
        else:
            proto_fraction, ring_protocol = LL128_BW_FRACTION, "LL128"
    candidates = [(ring_time, ring_lat, "direct" if op in P2P_OPS else "ring")]
    tree_fraction = 1.0
    tree_capped = nvls_capped = False
    tree_protocol = ""
    if op in ("all_reduce", "broadcast"):
        depth = tree_depth(nodes)
        mult = 2 if op == "all_reduce" else 1
        tree_lat = BASE_LATENCY_S + mult * (depth * tree_level_s(net) + (g - 1) * intra_lat)
        # NCCL's tree moves the whole buffer up and down once: the ring's bus-equivalent volume,
        # at NCCL's own discount for an all-reduce tree (TREE_ALLREDUCE_BW_FRACTION)
        tree_fraction = TREE_ALLREDUCE_BW_FRACTION if op == "all_reduce" else 1.0
        tree_bw = busbw * tree_fraction
        if (
            op == "all_reduce"
            and nodes == 2
            and not fabric.intra.nvls
            and fabric.tree_channel_rate(2) < math.inf
        ):
            # two nodes: each node's NICs carry the buffer once each way, where a ring carries
            # 2(n-1)/n of it, so the tree goes beyond the ring's network bound ("On two nodes,
            # NCCL uses the tree ... which can indeed go beyond the network bottleneck",
            # nccl-tests#196; 2 x p4d, 4 x 100G EFA: 77-78 GB/s busbw on a 50 GB/s node,
            # reference cm095, cm166, cm167); each GPU's link inside the node carries it once.
            # NCCL's per-channel caps bound it (TREE_CHANNEL_BW); RCCL's trees, without them,
            # are not taken to (2 x 8 MI300X stay at the ring's bound, reference cm193-cm198);
            # with NVLink SHARP, NCCL's two-node tree is NVLSTree, priced below
            two_node = min(node_bw, intra_bw) if g > 1 else node_bw
            tree_bw = max(tree_bw, two_node * factor * tree_fraction)
        if op == "all_reduce":
            # NCCL's per-channel caps (TREE_CHANNEL_BW), and the tree's two protocols: LL128 at
            # the low latency under its own cap, Simple at the whole bandwidth with Simple's
            # per-step latencies (TREE_LL128_CHANNEL_BW); the faster for the size
            simple_bw = min(tree_bw, fabric.tree_channel_cap(nodes, concurrent_per_node))
            ll128_bw = min(
                tree_bw * LL128_BW_FRACTION,
                fabric.tree_channel_cap(nodes, concurrent_per_node, "LL128"),
            )
            simple_lat = SIMPLE_BASE_LATENCY_S + mult * (
                depth * tree_level_s(net, simple=True)
                + (g - 1) * max(intra_lat, TREE_SIMPLE_INTRA_STEP_S)
            )
            ll128_time = tree_lat + size_bytes * factor / ll128_bw
            simple_time = simple_lat + size_bytes * factor / simple_bw
            if simple_time < ll128_time:
                tree_capped = simple_bw < tree_bw
                tree_bw, tree_lat, tree_protocol = simple_bw, simple_lat, "Simple"
            else:
                tree_capped = ll128_bw < tree_bw * LL128_BW_FRACTION
                tree_bw, tree_protocol = ll128_bw, "LL128"
            tree_fraction = tree_bw / busbw
        candidates.append((tree_lat + size_bytes * factor / tree_bw, tree_lat, "tree"))
    if op == "all_reduce" and nodes == 2 and g > 1 and fabric.intra.nvls:
        # NVLSTree on two nodes: NVLink SHARP reduces inside each node, and each node's NICs
        # carry the buffer once each way, where a ring carries 2(n-1)/n of it; the in-switch
        # reduction caps it (nccl#1221: 430 GB/s busbw with NVLS on 2 x 8 H100, 330 off)
        # and NCCL's per-channel cap (NVLS_TREE_CHANNEL_BW), a bus bandwidth: busbw = algbw x factor
        link_algbw = min(node_bw, fabric.nvls_algbw())
        tree_algbw = min(link_algbw, fabric.nvls_tree_cap(g) / factor)
        nvls_capped = tree_algbw < link_algbw
        # NCCL's tuner: NVLS_TREE latency = intraLat + 2 log2(nodes) interLat
        nvls_lat = NVLS_TREE_INTRA_S + 2 * (max(net.latency_s, NVLS_TREE_NET_STEP_S) + hop_s)
        candidates.append((nvls_lat + size_bytes / tree_algbw, nvls_lat, "nvls_tree"))
    time_s, lat, algorithm = _pick(candidates, algorithm)
    if (algorithm == "tree" and tree_capped) or (algorithm == "nvls_tree" and nvls_capped):
        bottleneck = "tree channels"
    if lat > time_s / 2:
        bottleneck = "latency"
    algbw = size_bytes / time_s
    return CollectiveEstimate(
        op,
        size_bytes,
        ranks,
        nodes,
        time_s,
        algbw,
        algbw * factor,
        lat,
        bottleneck,
        "network",
        algorithm,
        {"ring": proto_fraction, "direct": proto_fraction, "tree": tree_fraction}.get(
            algorithm, 1.0
        ),
        {"ring": ring_protocol, "tree": tree_protocol}.get(algorithm, ""),
    )


def net_step_floor(intra_lat: float, net: Network) -> float:
    """What every step of a ring that spans nodes costs at least: the intra-node link's latency,
    or a step's measured cost on this network (catalog ``ring_step_s``) when that is longer; a
    step across a node boundary costs the network's latency when that is longer still. Every
    step moves a message across each node boundary and the ring advances at its slowest link's
    pace."""
    return max(intra_lat, net.ring_step_s)


def tree_depth(nodes: int) -> int:
    """Levels of an all-reduce tree across ``nodes`` nodes, each way, as the model counts them:
    ceil(log2(nodes)) + 1."""
    return math.ceil(math.log2(nodes)) + 1 if nodes > 1 else 0


def tree_levels(est: CollectiveEstimate) -> int:
    """The levels a tree level's added cost (catalog ``tree_step_s``) is charged at in ``est``:
    up and down for an all-reduce, down for a broadcast, twice under Simple (tree_level_s); 0 for
    a tree inside one node."""
    ways = 2 if est.op == "all_reduce" else 1
    return ways * tree_depth(est.nodes) * (2 if est.protocol == "Simple" else 1)


def tree_level_s(net: Network, simple: bool = False) -> float:
    """What one level of an all-reduce tree across nodes costs each way: the network's latency
    (at least NCCL's 14 us for Simple) plus what a level adds on this network (catalog
    ``tree_step_s``), twice for Simple, as NCCL's tuner adds a net plugin's reported latency to
    each level and, for Simple, again for its flush (src/graph/tuning.cc: interLat +=
    latencyInter; "Also add the flush extra latency")."""
    if simple:
        return max(net.latency_s, TREE_SIMPLE_NET_STEP_S) + 2 * net.tree_step_s
    return net.latency_s + net.tree_step_s


def nic_rate(fabric: Fabric) -> float:
    """One NIC's achievable rate, bytes/s (0 without a network)."""
    net = fabric.network
    return 0.0 if net is None else net.bw_bytes_per_s * net.efficiency


def root_nic_bw(fabric: Fabric) -> float:
    """What one GPU moves through its NIC, bytes/s: the NIC's achievable rate, capped by the
    GPU's host link."""
    return min(nic_rate(fabric), fabric.gpu_net_bw())


def root_latency_s(fabric: Fabric, nodes: int) -> float:
    """A gather's or scatter's fixed cost across nodes: a launch and one network crossing (the
    sends and receives of the group run at once)."""
    net = fabric.network
    assert net is not None
    return BASE_LATENCY_S + net.latency_s + SWITCH_HOPS[fabric.tiers(nodes)] * SWITCH_HOP_LATENCY_S


def _root_collective(
    op: Op, size_bytes: float, ranks: int, g: int, nodes: int, fabric: Fabric
) -> CollectiveEstimate:
    """gather / scatter across nodes: the root's own node moves (g-1)/n of the buffer over
    NVLink while the other nodes' (n-g)/n crosses the root GPU's NIC; the slower sets the time."""
    intra_bw = fabric.intra_busbw()
    local_s = size_bytes * (g - 1) / ranks / intra_bw if g > 1 and intra_bw > 0 else 0.0
    nic = root_nic_bw(fabric)
    remote_s = size_bytes * (ranks - g) / ranks / nic
    lat = root_latency_s(fabric, nodes)
    time_s = lat + max(local_s, remote_s)
    if lat > time_s / 2:
        bottleneck = "latency"
    elif local_s > remote_s:
        bottleneck = "intra-node link"
    else:
        bottleneck = "host link" if fabric.gpu_net_bw() < nic_rate(fabric) else "network"
    algbw = size_bytes / time_s
    return CollectiveEstimate(op, size_bytes, ranks, nodes, time_s, algbw,
                              algbw * bus_factor(op, ranks), lat, bottleneck, "network", "direct")  # fmt: skip


def estimate_engine_all_reduce(
    size_bytes: float, ranks: int, fabric: Fabric, ranks_per_node: int | None = None
) -> CollectiveEstimate:
    """A tensor-parallel all-reduce as an inference engine runs it: its custom one-shot or
    two-shot kernel inside a node where that kernel applies (CUSTOM_ALL_REDUCE_*), else NCCL."""
    per_node = ranks if ranks_per_node is None else ranks_per_node
    intra = fabric.intra
    usable = (
        ranks in CUSTOM_ALL_REDUCE_RANKS
        and per_node >= ranks  # the whole group inside one node
        and ranks <= fabric.gpus_per_node
        and intra.p2p
        and (intra.kind == "nvlink" or ranks == 2)
        and 0 < size_bytes <= CUSTOM_ALL_REDUCE_MAX_BYTES
        and fabric.intra_busbw() > 0
    )
    if not usable:
        return estimate_collective("all_reduce", size_bytes, ranks, fabric, ranks_per_node)
    bw, lat = fabric.intra_busbw(), intra.latency_s
    one_lat, two_lat = BASE_LATENCY_S + 2 * lat, BASE_LATENCY_S + 4 * lat
    time_s, lat_s = min(
        (one_lat + size_bytes * (ranks - 1) / bw, one_lat),
        (two_lat + size_bytes * 2 * (ranks - 1) / ranks / bw, two_lat),
    )
    algbw = size_bytes / time_s
    bottleneck = "latency" if lat_s > time_s / 2 else "intra-node link"
    return CollectiveEstimate("all_reduce", size_bytes, ranks, 1, time_s, algbw,
                              algbw * bus_factor("all_reduce", ranks), lat_s, bottleneck,
                              intra.kind, "custom")  # fmt: skip
