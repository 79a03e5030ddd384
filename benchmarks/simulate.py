"""Speed of the flow simulator: a ring all_reduce on 1,024 and 16,384 GPUs over a two-tier
fabric, the numpy max-min beside a pure-Python progressive filling of the same flows (same run).

    PYTHONPATH=src python benchmarks/simulate.py

Targets: 1,024 GPUs <= 1 s, 16,384 GPUs <= 30 s (end to end: design, placement, flows, routing,
max-min, report). Exit 1 when a target is missed.
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np

from fabriclens.catalog import find_gpu, find_switch
from fabriclens.fabric.maxmin import max_min_rates, max_min_rates_python
from fabriclens.fabric.simulate import Scenario, simulate_collective
from fabriclens.fabric.topology import design_fabric
from fabriclens.plan.planner import resolve_fabric

CASES = [(1024, "qm9700", 1.0), (16384, "q3400", 30.0)]  # GPUs, switch (two tiers), target s


def main() -> int:
    ok = True
    print(
        f"{'GPUs':>6} {'switch':>7} {'routing':>8} {'flows':>6} {'links':>7} {'numpy s':>8} {'python s':>9} {'target':>7}"
    )
    for gpus, switch, target in CASES:
        for routing in ("ecmp", "adaptive"):
            t0 = time.perf_counter()
            d = design_fabric(gpus // 8, 8, 400e9, find_switch(switch), "rail-optimized")
            fab = resolve_fabric(
                find_gpu("h100-sxm"), gpus, network_name="ndr-ib", nics_per_node=8
            )[0]
            r = simulate_collective(
                d, fab, "all_reduce", 2**30, gpus, Scenario(routing=routing, placement="random")
            )
            numpy_s = time.perf_counter() - t0
            # the same max-min, flows and paths, in plain Python
            from fabriclens.fabric.flows import build_flows
            from fabriclens.fabric.placement import place_servers
            from fabriclens.fabric.routing import link_space, route

            space = link_space(d, fab.network.efficiency if fab.network else 1.0)
            fl = build_flows(
                "ring", "all_reduce", 2**30, place_servers(gpus // 8, d.servers, "random"), 8, 8
            )
            f, li, w = route(space, fl.src_nic, fl.dst_nic, routing, 0)
            paths: list[list[tuple[int, float]]] = [[] for _ in range(fl.src_nic.size)]
            for a, b, c in zip(f.tolist(), li.tolist(), w.tolist(), strict=True):
                paths[a].append((b, c))
            t1 = time.perf_counter()
            slow = max_min_rates_python(paths, space.capacity.tolist())
            python_s = time.perf_counter() - t1
            fast = max_min_rates(f, li, w, space.capacity, fl.src_nic.size)
            assert np.allclose(fast, slow)
            ok &= numpy_s <= target
            print(f"{gpus:>6} {switch:>7} {routing:>8} {r.flows:>6} {space.capacity.size:>7} "
                  f"{numpy_s:>8.3f} {python_s:>9.3f} {target:>6.0f}s")  # fmt: skip
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of this process): {peak_mib:.0f} MiB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
