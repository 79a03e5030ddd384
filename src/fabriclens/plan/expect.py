"""Measured collective bandwidth beside what the fabric should give, with a verdict.

The plateau is the large-message bus bandwidth (median over the sizes within 4x of the
largest), never the sweep average that nccl-tests prints, which includes 8-byte messages.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from fabriclens.catalog import find_gpu, gpus
from fabriclens.catalog.schema import Gpu
from fabriclens.errors import InputError
from fabriclens.model.collectives import OPS, estimate_collective
from fabriclens.parse.nccl_tests import NcclTestsRun
from fabriclens.plan.planner import resolve_fabric

OK_EFFICIENCY = 0.85
WARN_EFFICIENCY = 0.6


@dataclass(frozen=True)
class Verdict:
    """What the measurement says, against the model."""

    op: str
    ranks: int
    nodes: int
    gpus_per_node: int
    gpu: str
    network: str
    plateau_size_bytes: int
    plateau_busbw_GBps: float
    expected_busbw_GBps: float
    efficiency: float
    level: str  # ok, warning, critical
    verdict: str
    next_checks: tuple[str, ...]
    assumptions: tuple[str, ...]


def gpu_from_name(name: str) -> Gpu | None:
    """Match a device name as nccl-tests prints it ('NVIDIA H100 80GB HBM3') to the catalog."""
    wanted = name.lower().replace("nvidia", "").replace("geforce", "").strip()
    for gpu in gpus():
        if gpu.title.lower().replace("nvidia", "").replace("geforce", "").strip() == wanted:
            return gpu
    for alias_key in ("h200", "b200", "l40s", "rtx 4090", "rtx 3090", "rtx 5090"):
        if alias_key in wanted:
            return find_gpu(alias_key.replace(" ", "-"))
    if "h100" in wanted:
        return find_gpu("h100-pcie" if "pcie" in wanted else "h100-sxm")
    if "a100" in wanted:
        big = "80" in wanted
        pcie = "pcie" in wanted
        return find_gpu(f"a100-{'pcie' if pcie else 'sxm'}-{'80' if big else '40'}gb")
    return None


def infer_op(run: NcclTestsRun, ranks: int) -> str | None:
    """Tell the collective from busbw/algbw (nccl-tests' factor) and the reduction column:
    2(n-1)/n is all_reduce; (n-1)/n with a reduction is reduce_scatter, without all_gather."""
    if ranks < 2 or not run.rows:
        return None
    row = max(run.rows, key=lambda r: r.size_bytes)
    if row.algbw_GBps <= 0:
        return None
    ratio = row.busbw_GBps / row.algbw_GBps
    if abs(ratio - 2 * (ranks - 1) / ranks) < 0.02:
        return "all_reduce"
    if abs(ratio - (ranks - 1) / ranks) < 0.02:
        return "reduce_scatter" if row.reduces else "all_gather"
    return None


def plateau(run: NcclTestsRun) -> tuple[int, float]:
    """(size, busbw) of the large-message plateau: median over sizes within 4x of the largest."""
    if not run.rows:
        raise InputError(
            "no result rows found in the nccl-tests output", "give the file nccl-tests printed"
        )
    largest = max(r.size_bytes for r in run.rows)
    big = [r for r in run.rows if r.size_bytes * 4 >= largest]
    return largest, statistics.median(r.best_busbw_GBps for r in big)


def judge(
    run: NcclTestsRun,
    *,
    op: str | None = None,
    gpu: str | None = None,
    ranks: int | None = None,
    gpus_per_node: int | None = None,
    network: str | None = None,
    nics_per_node: int | None = None,
) -> Verdict:
    """Compare a parsed run with the collective model."""
    n = ranks or run.world_size
    name = op or run.op or infer_op(run, n)
    if name is None:
        raise InputError(
            "cannot tell which collective this is", "give --op all_reduce (or the op that ran)"
        )
    name = name.replace("-", "_")
    if name not in OPS:
        raise InputError(f"collective {name!r} is not modelled", f"use one of {', '.join(OPS)}")
    notes: list[str] = []
    if n < 2:
        raise InputError(
            "the number of ranks is unknown",
            "give --ranks (the header lines listing ranks are missing)",
        )
    spec = find_gpu(gpu) if gpu else (gpu_from_name(run.gpu_names[0]) if run.gpu_names else None)
    if spec is None:
        raise InputError("cannot tell which GPU ran", "give --gpu (fabriclens catalog gpus)")
    hosts = run.hosts
    gpn = gpus_per_node or (max(1, n // len(hosts)) if hosts else None)
    if gpus_per_node is None and hosts:
        notes.append(f"{len(hosts)} host(s) and {n} ranks in the log: {gpn} GPUs per node")
    fabric, more = resolve_fabric(
        spec, n, gpus_per_node=gpn, network_name=network, nics_per_node=nics_per_node
    )
    notes += more
    size, measured = plateau(run)
    est = estimate_collective(name, size, n, fabric)
    expected = est.busbw_bytes_per_s / 1e9
    eff = measured / expected if expected else 0.0
    crosses = est.nodes > 1
    if eff >= OK_EFFICIENCY:
        level, text = (
            "ok",
            f"busbw {measured:.1f} GB/s is {100 * eff:.0f}% of the {expected:.1f} GB/s expected",
        )
        checks: tuple[str, ...] = ()
    else:
        level = "warning" if eff >= WARN_EFFICIENCY else "critical"
        text = f"busbw {measured:.1f} GB/s is only {100 * eff:.0f}% of the {expected:.1f} GB/s expected"
        if crosses:
            checks = (
                "NCCL on sockets? run with NCCL_DEBUG=INFO and look for NET/IB (RDMA) rather than NET/Socket",
                "RoCE: PFC pause and ECN/CNP counters (ethtool -S, /sys/class/infiniband/*/ports/*/hw_counters)",
                "every NIC up at full speed (ibstatus / ethtool), one NIC per GPU in `nvidia-smi topo -m` (PIX)",
                "a slow node: fabriclens bench p2p (every pair, the slow node named)",
            )
        else:
            checks = (
                "`nvidia-smi topo -m`: are the GPUs joined by NV# links, or only PIX/PHB/SYS (PCIe)?",
                "`nvidia-smi nvlink -s`: every NVLink up",
                "NCCL_P2P_DISABLE / NCCL_NVLS_ENABLE set in the environment?",
                "PCIe links at full generation and width (nvidia-smi -q | grep -A3 'Link Width')",
            )
    if run.avg_busbw_GBps is not None:
        notes.append(f"the log's 'Avg bus bandwidth' ({run.avg_busbw_GBps:.2f} GB/s) averages every size, including tiny ones: "
                     "the plateau is the figure to compare")  # fmt: skip
    notes.append(
        f"plateau: median best-of-in/out-of-place busbw over sizes within 4x of {size:,} bytes"
    )
    notes.append(
        f"expected: {est.algorithm} on {fabric.intra.name}"
        + (
            f" and {fabric.network.name} x {fabric.nics_per_node}"
            if crosses and fabric.network
            else ""
        )
    )
    return Verdict(
        op=name, ranks=n, nodes=est.nodes, gpus_per_node=fabric.gpus_per_node, gpu=spec.name,
        network=fabric.network.name if fabric.network and crosses else "none", plateau_size_bytes=size,
        plateau_busbw_GBps=measured, expected_busbw_GBps=expected, efficiency=eff, level=level, verdict=text,
        next_checks=checks, assumptions=tuple(notes),
    )  # fmt: skip


def detected_network(
    rdma_ports: list[tuple[float, str]], nic_speed_mbps: int | None
) -> tuple[str | None, int | None, str]:
    """The network to judge a collective against, from what this node has: its active RDMA
    ports as (rate in Gbit/s, link layer), else the negotiated speed of the NIC that carries the
    job's traffic. Returns (network id or wire rate, NICs per node, how it was found); a network
    id is None when nothing fits (say so, never guess)."""
    from collections import Counter

    from fabriclens.catalog import networks

    if rdma_ports:
        (rate, layer), count = Counter(rdma_ports).most_common(1)[0]
        kind = "ib" if layer.lower() == "infiniband" else "roce"
        match = next(
            (n for n in networks() if n.kind == kind and n.rate_bits_per_s == rate * 1e9), None
        )
        how = f"{count} active {layer} RDMA port(s) at {rate:g} Gbit/s"
        if match is None:
            return None, count, f"{how}: no catalog network matches (give --network)"
        return match.name, count, f"{how} -> {match.name}"
    if nic_speed_mbps:
        match = next(
            (
                n
                for n in networks()
                if n.kind == "tcp" and n.rate_bits_per_s == nic_speed_mbps * 1e6
            ),
            None,
        )
        name = match.name if match else f"{nic_speed_mbps}mbit"
        return (
            name,
            1,
            f"no RDMA ports; the job's NIC negotiated {nic_speed_mbps:,} Mb/s -> {name} (TCP)",
        )
    return (
        None,
        None,
        "no RDMA ports and no physical NIC with a known speed on the job's route (give --network)",
    )
