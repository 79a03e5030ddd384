"""Routing efficiency of a ring reduce_scatter against node count, from the fabric simulator.

    PYTHONPATH=src python benchmarks/scale_curve.py

For 8x H100 nodes with 8 x 400G NDR NICs on a two-tier rail-optimized fabric of 64-port switches
(QM9700), prints the slowest ring flow's share of a NIC (mean of 5 seeds) under InfiniBand's
static destination-based routing tables and under per-flow ECMP hashing, with servers in fabric
order and at random (what a busy scheduler hands out), and with 16 flows per connection hashed
apart (Llama 3's E-ECMP), then the simulated and modelled busbw
beside the published curve of github.com/NVIDIA/nccl/issues/1229 (reference/collectives_more.csv
cm018-cm023). The model (model/collectives.py) carries no congestion term: in fabric order, under
static tables, the share is 1.0 at every node count here, so nothing falls with scale but latency.

Then every published series with a stated message size (reference.scale_series: one cluster, one
collective and algorithm, three or more node counts): the change of busbw from its smallest node
count, published, modelled (the row's algorithm) and simulated (servers in fabric order under
static routing; and at random under ECMP with 16 flows per connection), and the model's error in
percentage points.
"""

from __future__ import annotations

import statistics

from fabriclens.catalog import find_gpu, find_switch
from fabriclens.fabric.simulate import Scenario, simulate_collective
from fabriclens.fabric.topology import design_fabric
from fabriclens.model.collectives import estimate_collective
from fabriclens.plan.planner import resolve_fabric
from reference import ScalePoint, collective_fabric, scale_series

NCCL_1229 = {4: 360, 8: 345, 16: 320, 32: 300, 64: 280, 128: 260}
SIZE = 8 * 2**30
# (routing, placement, flows per connection): 16 flows is Llama 3's E-ECMP setting (§3.3.1)
SCENARIOS = [("static", "topology", 1), ("ecmp", "topology", 1), ("static", "random", 1),
             ("ecmp", "random", 1), ("ecmp", "random", 16)]  # fmt: skip


def series_changes(points: list[ScalePoint], simulate: bool = True) -> list[tuple[float, ...]]:
    """Per node count: (nodes, published change, model change, fabric-order simulated change,
    scattered ECMP simulated change) from the series' first node count (nan when not simulated)."""
    first = points[0].row
    # the largest run names the network (a one-node run may not)
    fab = collective_fabric(points[-1].row)
    gpn, nics = fab.gpus_per_node, fab.nics_per_node
    size, op = int(first["size_bytes"]), first["op"]
    design = None
    if simulate and fab.network is not None:  # one NVLink domain (NVL72) has no network
        switch = find_switch("qm9700")
        design = design_fabric(points[-1].nodes, nics, fab.network.rate_bits_per_s, switch,
                               "rail-optimized", gpus_per_server=gpn)  # fmt: skip
    rows, base = [], None
    for p in points:
        ranks = p.nodes * gpn
        model = estimate_collective(op, size, ranks, fab, algorithm=first["algorithm"])  # type: ignore[arg-type]
        sims = [float("nan"), float("nan")]
        if design is not None:
            order = simulate_collective(design, fab, op, size, ranks,  # type: ignore[arg-type]
                                        Scenario(routing="static", placement="topology"))  # fmt: skip
            scattered = [
                simulate_collective(design, fab, op, size, ranks,  # type: ignore[arg-type]
                                    Scenario(routing="ecmp", placement="random", seed=s, flows=16))
                for s in range(3)
            ]  # fmt: skip
            sims = [order.busbw_bytes_per_s,
                    statistics.mean(r.busbw_bytes_per_s for r in scattered)]  # fmt: skip
        values = (p.busbw_gbps, model.busbw_bytes_per_s, *sims)
        base = base or values
        rows.append((p.nodes, *(100 * (v / b - 1) for v, b in zip(values, base, strict=True))))
    return rows


def published_series() -> None:
    """Every published series with a stated size, beside the model and the simulator."""
    print(
        "\npublished series with a stated message size: change of busbw from the first node count"
    )
    for name, points in scale_series().items():
        source = points[0].row["source"].split(" (")[0]
        excluded = " (excluded from accuracy: congested)" if points[0].row["exclude"] else ""
        print(f"\n{name}{excluded}\n  {source}")
        print(f"  {'nodes':>5} {'busbw':>7} {'published':>9} {'model':>7} {'sim order':>9} "
              f"{'sim ECMP':>9} {'model err':>9}")  # fmt: skip
        for p, (nodes, pub, model, order, ecmp) in zip(points, series_changes(points), strict=True):
            print(f"  {nodes:>5.0f} {p.busbw_gbps:7.1f} {pub:+8.1f}% {model:+6.1f}% {order:+8.1f}% "
                  f"{ecmp:+8.1f}% {model - pub:+7.1f}pp")  # fmt: skip


def main() -> int:
    design = design_fabric(256, 8, 400e9, find_switch("qm9700"), "rail-optimized")
    head = " ".join(f"{r[:4]}/{p[:4]}/q{q:<2d}" for r, p, q in SCENARIOS)
    print(f"{'nodes':>5} {head}  {'sim busbw':>9} {'model':>6} {'published':>9}")
    for nodes, published in NCCL_1229.items():
        gpus = nodes * 8
        fab = resolve_fabric(find_gpu("h100-sxm"), gpus, network_name="ndr-ib", nics_per_node=8)[0]
        shares, sim = [], 0.0
        for routing, placement, flows in SCENARIOS:
            runs = [
                simulate_collective(design, fab, "reduce_scatter", SIZE, gpus,
                                    Scenario(routing=routing, placement=placement, seed=s,
                                             flows=flows))
                for s in range(5)
            ]  # fmt: skip
            shares.append(statistics.mean(r.slowest_flow_share for r in runs))
            if (routing, placement) == ("static", "topology"):
                sim = statistics.mean(r.busbw_bytes_per_s for r in runs) / 1e9
        model = estimate_collective("reduce_scatter", SIZE, gpus, fab).busbw_bytes_per_s / 1e9
        cells = " ".join(f"{s:13.3f}" for s in shares)
        print(f"{nodes:>5} {cells}  {sim:9.1f} {model:6.1f} {published:9d}")
    # the source states no message size: how the model's decline (latency from NCCL's tuner
    # constants, growing with the ring's steps) depends on the size assumed
    sizes = [2**30, 2 * 2**30, 4 * 2**30, 8 * 2**30]
    print(
        "\nchange of busbw from 4 nodes, model (ring latency only) by message size, and published"
    )
    print(
        f"{'nodes':>5} " + " ".join(f"{s / 2**30:>7.0f} GiB" for s in sizes) + f" {'published':>10}"
    )
    first: dict[int, float] = {}
    for nodes, published in NCCL_1229.items():
        fab = resolve_fabric(
            find_gpu("h100-sxm"), nodes * 8, network_name="ndr-ib", nics_per_node=8
        )[0]
        cells = []
        for size in sizes:
            bw = estimate_collective("reduce_scatter", size, nodes * 8, fab).busbw_bytes_per_s
            first.setdefault(size, bw)
            cells.append(f"{100 * (bw / first[size] - 1):+10.1f}%")
        print(f"{nodes:>5} " + " ".join(cells) + f" {100 * (published / NCCL_1229[4] - 1):+10.1f}%")
    published_series()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
