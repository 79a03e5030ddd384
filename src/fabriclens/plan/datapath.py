"""The data path of a training node: storage -> storage network -> host memory -> PCIe -> GPU.

Each stage has a capacity and carries the job's input demand (tokens/s x bytes per token, or
images/s x bytes per image); the narrowest stage (highest demand / capacity) throttles the job:
step time x max(1, demand / capacity). Checkpoints are written by every node in parallel, bound
by the nodes' storage links or the storage system, whichever is smaller.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabriclens.catalog import find_gpu, find_link, find_network
from fabriclens.errors import InputError
from fabriclens.plan.transfer import link_goodput
from fabriclens.units import (
    counted,
    format_bw,
    format_decimal_bytes,
    format_number,
    format_rate,
    format_time,
)


@dataclass(frozen=True, slots=True)
class Stage:
    """One pipe of the data path."""

    name: str
    capacity_bytes_per_s: float
    demand_bytes_per_s: float
    note: str

    @property
    def utilisation(self) -> float:
        """Demand over capacity (above 1: this stage throttles the job)."""
        return (
            self.demand_bytes_per_s / self.capacity_bytes_per_s
            if self.capacity_bytes_per_s
            else 0.0
        )


@dataclass(frozen=True, slots=True)
class DatapathPlan:
    """The stages, the narrowest one, and checkpoint time."""

    stages: tuple[Stage, ...]
    demand_per_gpu_bytes_per_s: float
    nodes: int
    gpus_per_node: int
    checkpoint_bytes: float
    checkpoint_s: float | None
    advice: tuple[str, ...]

    @property
    def narrowest(self) -> Stage:
        """The stage with the highest utilisation."""
        return max(self.stages, key=lambda s: s.utilisation)

    @property
    def slowdown(self) -> float:
        """How much longer the job runs than if data arrived for free (>= 1)."""
        return max(1.0, self.narrowest.utilisation)


def plan_datapath(
    *,
    gpu: str,
    nodes: int,
    gpus_per_node: int,
    storage_network: str,
    demand_per_gpu_bytes_per_s: float,
    storage_bytes_per_s: float | None = None,
    storage_nics: int = 1,
    checkpoint_bytes: float = 0.0,
) -> DatapathPlan:
    """Stages of the input pipeline for ``nodes`` x ``gpus_per_node`` GPUs of ``gpu``."""
    if nodes < 1 or gpus_per_node < 1 or storage_nics < 1:
        raise InputError(
            "nodes, GPUs per node and storage NICs must be at least 1", "give positive counts"
        )
    if demand_per_gpu_bytes_per_s < 0:
        raise InputError(
            "the input rate must not be negative", "give a rate like --tokens-per-s 5000"
        )
    spec = find_gpu(gpu)
    pcie = find_link(spec.host_link)
    net = find_network(storage_network)
    goodput_bits, source = link_goodput(net, "tcp" if net.kind == "tcp" else "rdma")
    node_net = storage_nics * goodput_bits / 8
    per_node = demand_per_gpu_bytes_per_s * gpus_per_node
    stages = [
        Stage("storage network (per node)", node_net, per_node,
              f"{storage_nics} x {net.title}: {format_rate(goodput_bits)} each ({source})"),
        Stage("host memory -> GPU (PCIe, per GPU)", pcie.bw_bytes_per_s * pcie.efficiency, demand_per_gpu_bytes_per_s,
              f"{pcie.title} x {pcie.efficiency:.2g}"),
    ]  # fmt: skip
    if storage_bytes_per_s:
        stages.insert(0, Stage("storage system (all nodes)", storage_bytes_per_s, per_node * nodes,
                               f"{format_bw(storage_bytes_per_s)} in total, shared by {counted(nodes, 'node')}"))  # fmt: skip
    ckpt_s = None
    if checkpoint_bytes > 0:
        write = nodes * node_net
        if storage_bytes_per_s:
            write = min(write, storage_bytes_per_s)
        ckpt_s = checkpoint_bytes / write
    advice = []
    worst = max(stages, key=lambda st: st.utilisation)
    if worst.utilisation > 1:
        advice.append(
            f"the {worst.name} throttles the job: it must carry {format_decimal_bytes(worst.demand_bytes_per_s)}/s but "
            f"delivers {format_decimal_bytes(worst.capacity_bytes_per_s)}/s, so the job runs {format_number(worst.utilisation)}x longer than the GPUs allow"
        )
        if worst.name.startswith("storage network"):
            faster = [
                n
                for n in ("10gbe", "25gbe", "100gbe")
                if link_goodput(find_network(n), "tcp")[0] / 8 * storage_nics
                > worst.demand_bytes_per_s
            ]
            if faster:
                advice.append(
                    f"a {faster[0]} storage link would carry it; so would caching the dataset on local NVMe"
                )
    else:
        advice.append(
            f"the data path keeps up: the busiest pipe ({worst.name}) runs at {format_number(100 * worst.utilisation, 2)}%"
        )
    if ckpt_s is not None:
        advice.append(
            f"a checkpoint of {format_decimal_bytes(checkpoint_bytes)} takes {format_time(ckpt_s)} to write from all nodes at once"
        )
    return DatapathPlan(
        tuple(stages),
        demand_per_gpu_bytes_per_s,
        nodes,
        gpus_per_node,
        checkpoint_bytes,
        ckpt_s,
        tuple(advice),
    )
