"""Fleet baselines: many nodes' `doctor --json` and `bench ... --json` results merged, each
metric's median and MAD across nodes, and the nodes that fall outside them, ranked (pure).

A node is an outlier on a metric when it is worse than the fleet's median by more than three
robust deviations, where a deviation is 1.4826 x MAD (the standard deviation for normal data)
but at least 5% of the median (a fleet of identical nodes has MAD 0; 1% off is not news) and at
least 1 for counters. Only the bad direction counts: a NIC faster than the rest is not a finding.

A counter that reads zero on nearly every node (at least 3 in 4 of the others) is the exception:
its median and MAD are both 0, so no deviation can be measured, and any count above zero on one
node (one critical finding, two link-downs, three ACK timeouts) is what sets that node apart.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from fabriclens.units import format_number

Z_LIMIT = 3.0
MIN_NODES = 3
ZERO_SHARE = 0.75  # of the other nodes reading 0 for a count above 0 to stand out


def metrics_of(
    doc: dict[str, Any], node: str, left_out: list[str] | None = None
) -> dict[str, dict[str, tuple[float, bool]]]:
    """node -> {metric: (value, higher_is_better)} from one JSON document of any kind we write.
    Every metric is a speed, a bandwidth, a time or a count: a negative or non-finite value is
    none that fabriclens writes (an edited or corrupted file), so it is left out and, when
    ``left_out`` is given, named there (the CLI's JSON reader refuses NaN and Infinity first)."""
    out: dict[str, dict[str, tuple[float, bool]]] = {}

    def put(n: str, name: str, value: Any, higher: bool) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value) or value < 0:
                if left_out is not None:
                    left_out.append(f"{n}: {name} reads {value:.6g}, which no run writes")
                return
            out.setdefault(n, {})[name] = (float(value), higher)

    if "interfaces" in doc and "findings" in doc:  # doctor
        for i in doc["interfaces"]:
            if i.get("physical"):
                put(node, f"{i['name']} speed Mb/s", i.get("speed_mbps"), True)
                for key in ("errors", "crc_errors", "drops", "errors_new", "drops_new"):
                    put(node, f"{i['name']} {key}", i.get(key), False)
        for p in doc.get("rdma_ports", []):
            port = f"{p['device']}/{p['port']}"
            put(node, f"{port} active", 1.0 if p.get("port_active") else 0.0, True)
            for key in (
                "symbol_errors",
                "link_downed",
                "ack_timeouts",
                "out_of_sequence",
                "errors_new",
                "flaps_new",
            ):
                put(node, f"{port} {key}", p.get(key), False)
        for sev in ("critical", "warning"):
            put(
                node,
                f"{sev} findings",
                sum(1 for f in doc["findings"] if f.get("severity") == sev),
                False,
            )
    elif "plateau_busbw_GBps" in doc and "sizes" in doc and "hosts" in doc:  # bench collective
        if (
            len(doc["hosts"]) == 1
        ):  # a node's own (intra-node) run; a multi-node run is the job's, not a node's
            put(
                node,
                f"{doc['op']} busbw GB/s ({doc['ranks']} ranks)",
                doc["plateau_busbw_GBps"],
                True,
            )
    elif "node_median_GBps" in doc:  # bench p2p: one file covers many nodes
        for h, bw in doc["node_median_GBps"].items():
            put(h, "p2p median pair GB/s", bw, True)
    elif "best_goodput_bits_per_s" in doc:  # bench net
        put(node, "tcp goodput Mbit/s", doc["best_goodput_bits_per_s"] / 1e6, True)
        p50 = (doc.get("rtt") or {}).get("p50_s")
        put(node, "tcp rtt ms", p50 * 1e3 if isinstance(p50, int | float) else None, False)
    return out


def baselines(
    nodes: dict[str, dict[str, tuple[float, bool]]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per metric: median, MAD and node count; and the outliers, worst first."""
    names = sorted({m for ms in nodes.values() for m in ms})
    table: dict[str, Any] = {}
    outliers: list[dict[str, Any]] = []
    for name in names:
        values = {n: ms[name][0] for n, ms in nodes.items() if name in ms}
        higher = next(ms[name][1] for ms in nodes.values() if name in ms)
        if len(values) < MIN_NODES:
            table[name] = {
                "nodes": len(values),
                "median": None,
                "mad": None,
                "higher_is_better": higher,
            }
            continue
        med = statistics.median(values.values())
        mad = statistics.median(abs(v - med) for v in values.values())
        counter = all(float(v).is_integer() for v in values.values()) and not higher
        scale = max(1.4826 * mad, 0.05 * abs(med), 1.0 if counter else 1e-12)
        table[name] = {"nodes": len(values), "median": med, "mad": mad, "higher_is_better": higher}
        zeros = sum(1 for v in values.values() if v == 0)
        for n, v in values.items():
            worse = (med - v) if higher else (v - med)
            z = worse / scale
            others_zero = zeros - (v == 0)
            lone_count = (
                counter and med == 0 and v > 0 and others_zero >= ZERO_SHARE * (len(values) - 1)
            )
            if lone_count:
                evidence = (
                    f"{n}: {name} {_plain(v)} where {others_zero} of the other {len(values) - 1} "
                    "nodes read 0"
                )
            elif z > Z_LIMIT:
                evidence = (
                    f"{n}: {name} {_plain(v)} against a fleet median of {_plain(med)} (MAD {_plain(mad)}); "
                    f"{z:.1f} robust deviations {'below' if higher else 'above'}"
                )
            else:
                continue
            outliers.append({"node": n, "metric": name, "value": v, "median": med, "mad": mad, "z": z,
                             "evidence": evidence})  # fmt: skip
    outliers.sort(key=lambda o: o["z"], reverse=True)
    return table, outliers


def _plain(value: float) -> str:
    """A count in full (12,345,678); anything else to 6 figures, never as 1.2e+07."""
    return f"{value:,.0f}" if float(value).is_integer() else format_number(value, 6)


def rank_nodes(outliers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nodes with at least one outlying metric, the most deviant first."""
    by: dict[str, list[dict[str, Any]]] = {}
    for o in outliers:
        by.setdefault(o["node"], []).append(o)
    return sorted(({"node": n, "metrics": len(os_), "worst_z": max(o["z"] for o in os_),
                    "evidence": [o["evidence"] for o in os_]} for n, os_ in by.items()),
                  key=lambda r: (r["metrics"], r["worst_z"]), reverse=True)  # fmt: skip
