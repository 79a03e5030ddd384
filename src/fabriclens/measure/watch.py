"""`fabriclens watch`: one sample of GPU utilisation and network throughput, and what the two
together say about the job: compute-bound, communication-bound, input-bound or idle.

The verdict for one sample (thresholds stated in VERDICTS):
  communication-bound  GPUs under 50% busy while a link runs at 60% or more of its capacity
                       (the GPUs wait while the network is saturated), or GPUs "100% busy" at
                       under 40% of their power limit while a link carries 30% or more (NCCL
                       kernels spinning on the network read as busy)
  compute-bound        GPUs 80% busy or more, drawing real power
  input-bound          GPUs under 50% busy and the links well below capacity: the GPUs wait
                       on something that is not the network (data loading, the CPU, storage)
  idle                 GPUs at 10% or less and links under 10%
  busy                 between these (50-80% busy): nothing stands out
  GPUs waiting         GPUs under 50% busy, and no link's capacity is known (virtual devices,
                       no --link-speed): whether the network is the cause is not judged
Without GPUs the verdict is about the network alone: "network busy" at 60% or more of a link's
capacity, "network idle" under 10% (or under 1 Mbit/s where no capacity is known), else
"network in use".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

VERDICTS = {
    "communication-bound": "GPUs wait while the network is saturated: the network holds the job back",
    "compute-bound": "GPUs busy at real power: the network is not the limit now",
    "input-bound": "GPUs wait but the network is not saturated: data loading, CPU or storage",
    "idle": "GPUs and network idle",
    "busy": "GPUs partly busy, network not saturated",
    "GPUs waiting": "GPUs wait; no link capacity known, so the network is not judged (give --link-speed)",
    "network busy": "no GPUs read; a link runs at 60% or more of its capacity",
    "network in use": "no GPUs read; the links carry traffic below 60% of capacity",
    "network idle": "no GPUs read; the links are idle",
}


@dataclass(frozen=True)
class LinkRate:
    """One NIC or RDMA port over one interval."""

    name: str
    rx_bits_per_s: float
    tx_bits_per_s: float
    capacity_bits_per_s: float | None

    @property
    def load(self) -> float | None:
        """The busier direction as a share of capacity (None when the capacity is unknown)."""
        if not self.capacity_bits_per_s:
            return None
        return max(self.rx_bits_per_s, self.tx_bits_per_s) / self.capacity_bits_per_s


def link_rate(
    name: str,
    then: dict[str, int],
    now: dict[str, int],
    seconds: float,
    capacity_bits_per_s: float | None,
    rx: str = "rx_bytes",
    tx: str = "tx_bytes",
    bits_per_unit: int = 8,
) -> LinkRate:
    """Rates from two counter readings (a counter that went backwards counts as zero).
    RDMA ports count 4-byte words: ``rx="port_rcv_data"``, ``bits_per_unit=32``."""

    def rate(key: str) -> float:
        return (
            max(0, now.get(key, 0) - then.get(key, 0)) * bits_per_unit / seconds
            if seconds > 0
            else 0.0
        )

    return LinkRate(name, rate(rx), rate(tx), capacity_bits_per_s)


IDLE_BITS_PER_S = 1e6  # a link without a known capacity counts as idle below this


def verdict(
    gpu_util_pct: float | None,
    gpu_power_share: float | None,
    net_load: float | None,
    peak_bits_per_s: float = 0.0,
) -> str:
    """The verdict for one sample: mean GPU utilisation (None: no GPUs), mean power as a share of
    the limit, the busiest link's load (None: no capacity known) and its rate."""
    load = net_load or 0.0
    if gpu_util_pct is None:
        if net_load is None:
            return "network idle" if peak_bits_per_s < IDLE_BITS_PER_S else "network in use"
        return "network busy" if load >= 0.6 else "network idle" if load < 0.1 else "network in use"
    spinning = gpu_util_pct >= 80 and gpu_power_share is not None and gpu_power_share < 0.4
    if (gpu_util_pct < 50 and load >= 0.6) or (spinning and load >= 0.3):
        return "communication-bound"
    if gpu_util_pct >= 80 and not spinning:
        return "compute-bound"
    quiet = load < 0.1 if net_load is not None else peak_bits_per_s < IDLE_BITS_PER_S
    if gpu_util_pct <= 10 and quiet:
        return "idle"
    if gpu_util_pct < 50:
        return "input-bound" if net_load is not None else "GPUs waiting"
    return "busy"


def sample_doc(
    elapsed_s: float, gpus: list[dict[str, Any]], links: list[LinkRate]
) -> dict[str, Any]:
    """One sample as recorded (JSON lines): GPUs, links, and its verdict."""
    utils = [g["util_pct"] for g in gpus if g.get("util_pct") is not None]
    shares = [
        g["power_w"] / g["power_limit_w"]
        for g in gpus
        if g.get("power_w") is not None and g.get("power_limit_w")
    ]
    loads = [lr.load for lr in links if lr.load is not None]
    util = sum(utils) / len(utils) if utils else None
    share = sum(shares) / len(shares) if shares else None
    load = max(loads) if loads else None
    peak = max((max(lr.rx_bits_per_s, lr.tx_bits_per_s) for lr in links), default=0.0)
    return {
        "t_s": round(elapsed_s, 3),
        "gpus": gpus,
        "links": [
            {
                "name": lr.name,
                "rx_bits_per_s": round(lr.rx_bits_per_s),
                "tx_bits_per_s": round(lr.tx_bits_per_s),
                "capacity_bits_per_s": lr.capacity_bits_per_s,
                "load": round(lr.load, 4) if lr.load is not None else None,
            }
            for lr in links
        ],
        "gpu_util_pct": round(util, 1) if util is not None else None,
        "gpu_power_share": round(share, 3) if share is not None else None,
        "net_load": round(load, 4) if load is not None else None,
        "verdict": verdict(util, share, load, peak),
    }


def running_verdict(samples: list[dict[str, Any]], window: int = 10) -> str:
    """The most common verdict over the last ``window`` samples (the latest wins a tie)."""
    recent: list[str] = [s["verdict"] for s in samples[-window:]]
    if not recent:
        return "no samples yet"
    counts = Counter(recent)
    top = max(counts.values())
    return next(v for v in reversed(recent) if counts[v] == top)


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole run: share of time per verdict, the overall verdict, peaks."""
    if not samples:
        return {"samples": 0, "verdict": "no samples", "shares": {}, "meaning": ""}
    counts = Counter(s["verdict"] for s in samples)
    overall: str = max(counts, key=lambda v: (counts[v], v))
    utils = [s["gpu_util_pct"] for s in samples if s["gpu_util_pct"] is not None]
    loads = [s["net_load"] for s in samples if s["net_load"] is not None]
    peak_bits = max(
        (max(lr["rx_bits_per_s"], lr["tx_bits_per_s"]) for s in samples for lr in s["links"]),
        default=0,
    )
    return {
        "samples": len(samples),
        "duration_s": samples[-1]["t_s"],
        "verdict": overall,
        "meaning": VERDICTS[overall],
        "shares": {v: round(n / len(samples), 3) for v, n in counts.most_common()},
        "gpu_util_mean_pct": round(sum(utils) / len(utils), 1) if utils else None,
        "net_load_mean": round(sum(loads) / len(loads), 4) if loads else None,
        "peak_link_bits_per_s": peak_bits,
    }
