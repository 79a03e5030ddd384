"""Plotly figures of the CLI's JSON documents. Each function takes a document as the CLI prints
it and returns figures as JSON strings for ``Plotly.newPlot`` (plotly draws them; nothing here
draws). Numbers are plotted as the document holds them, so a chart shows the CLI's figures."""

from __future__ import annotations

import itertools
import math
from typing import Any

import plotly.graph_objects as go

Figure = tuple[str, str]  # (id, plotly JSON)

LAYOUT: dict[str, Any] = {
    "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
    "height": 360,
    "template": "plotly_white",
    "legend": {"orientation": "h", "y": -0.2},
}


def _fig(key: str, traces: list[Any], title: str, **layout: Any) -> Figure:
    fig = go.Figure(traces)
    fig.update_layout(**(LAYOUT | {"title": {"text": title}} | layout))
    return key, fig.to_json(validate=False)


def plan_figures(docs: list[dict[str, Any]]) -> list[Figure]:
    """Network comparison (step time), step-time breakdown and memory ledger."""
    nets = [d["network"] for d in docs]
    out = []
    if len(docs) > 1:
        out.append(_fig("comparison", [go.Bar(
            x=nets, y=[d["step"]["time_s"] for d in docs], name="step time (s)",
            text=[d["bottleneck"] for d in docs], hovertemplate="%{x}: %{y} s<br>bottleneck %{text}",
        )], "Network comparison: step time (s)", yaxis={"title": "s"}))  # fmt: skip
    parts = [
        k
        for k in ("compute_s", "comm_exposed_s", "bubble_s", "optimizer_s")
        if k in docs[0]["step"]
    ]
    out.append(_fig("step", [go.Bar(x=nets, y=[d["step"][k] for d in docs], name=k.removesuffix("_s").replace("_", " "))
                             for k in parts], "Step-time breakdown (s)", barmode="stack", yaxis={"title": "s"}))  # fmt: skip
    parts = list(docs[0]["memory"]["per_gpu_bytes"])
    traces: list[Any] = [go.Bar(x=nets, y=[d["memory"]["per_gpu_bytes"].get(k, 0) / 1e9 for d in docs],
                                name=k.replace("_", " ")) for k in parts]  # fmt: skip
    traces.append(go.Scatter(x=nets, y=[d["memory"]["capacity_bytes"] / 1e9 for d in docs],
                             mode="markers+lines", name="GPU memory", line={"dash": "dash"}))  # fmt: skip
    out.append(
        _fig("memory", traces, "Memory ledger per GPU (GB)", barmode="stack", yaxis={"title": "GB"})
    )
    return out


def search_figures(doc: dict[str, Any]) -> list[Figure]:
    nets = doc.get("networks", [])
    return [_fig("search", [go.Bar(x=[n["network"] for n in nets], y=[n["best_time_s"] for n in nets],
                                   name="best step time (s)")], "Fastest layout per network: step time (s)")]  # fmt: skip


def capacity_figures(doc: dict[str, Any]) -> list[Figure]:
    opts = (doc.get("tp_choice") or {}).get("options") or []
    if not opts:
        return []
    x = [f"tp{o['tp']}" for o in opts]
    tpot = [o.get("tpot_s", o["decode_step_s"]) for o in opts]  # older documents: the step
    return [_fig("capacity", [go.Bar(x=x, y=tpot, name="time per output token under load (s)"),
                              go.Bar(x=x, y=[o["ttft_s"] for o in opts], name="time to first token (s)")],
                 "Replica size: time per output token and TTFT (s)", barmode="group")]  # fmt: skip


def transfer_figures(doc: dict[str, Any]) -> list[Figure]:
    rows = [(k, v) for k, v in _flat_seconds(doc)]
    if not rows:
        return []
    return [_fig("transfer", [go.Bar(x=[k for k, _ in rows], y=[v for _, v in rows], name="seconds")],
                 "Time to move it (s)")]  # fmt: skip


def _flat_seconds(doc: Any, prefix: str = "") -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if (
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and k.endswith("_s")
                and math.isfinite(v)
            ):
                out.append((f"{prefix}{k}", float(v)))
            elif isinstance(v, dict):
                out += _flat_seconds(v, f"{prefix}{k}.")
    return out


def datapath_figures(doc: dict[str, Any]) -> list[Figure]:
    stages = doc.get("stages") or []
    return [_fig("datapath", [go.Bar(x=[s["name"] for s in stages], y=[100 * s["utilisation"] for s in stages],
                                     name="utilisation %")], "Data path: each stage's utilisation (%)",
                 yaxis={"title": "%"})]  # fmt: skip


def fabric_figure(design: dict[str, Any], summary: dict[str, Any]) -> Figure:
    """The fabric drawn by tier: servers, leaves, spines (and cores), with their links (at most
    32 drawn per tier; the title gives the real counts)."""
    tiers = [("servers", int(design.get("servers", 0))), ("leaves", int(summary.get("leaves", 0))),
             ("spines", int(summary.get("spines", 0))), ("cores", int(summary.get("cores", 0)))]  # fmt: skip
    tiers = [(n, c) for n, c in tiers if c > 0]
    # one of a kind in the singular; a lone leaf is the fabric's one switch
    one = {"servers": "server", "leaves": "switch", "spines": "spine", "cores": "core"}
    label = {n: one[n] if c == 1 else n for n, c in tiers}
    shown = {n: min(c, 32) for n, c in tiers}
    pos: dict[str, list[tuple[float, float]]] = {}
    for level, (name, _count) in enumerate(tiers):
        k = shown[name]
        pos[name] = [((i + 0.5) / k, float(level)) for i in range(k)]
    ex: list[float | None] = []
    ey: list[float | None] = []
    for (lower, _), (upper, _) in itertools.pairwise(tiers):
        for i, (x0, y0) in enumerate(pos[lower]):
            ups = (
                pos[upper]
                if lower != "servers" or design.get("rail_leaves")
                else [pos[upper][i % len(pos[upper])]]
            )
            for x1, y1 in ups:
                ex += [x0, x1, None]
                ey += [y0, y1, None]
    traces: list[Any] = [go.Scatter(x=ex, y=ey, mode="lines", line={"width": 0.5, "color": "#9aa"},
                                    hoverinfo="skip", showlegend=False)]  # fmt: skip
    for name, count in tiers:
        xs, ys = zip(*pos[name], strict=True)
        traces.append(go.Scatter(x=list(xs), y=list(ys), mode="markers", name=f"{count} {label[name]}",
                                 marker={"size": 12, "symbol": "square" if name == "servers" else "circle"}))  # fmt: skip
    title = " · ".join(f"{c} {label[n]}" for n, c in tiers) + (
        " (32 drawn per tier)" if any(c > 32 for _, c in tiers) else ""
    )
    return _fig("fabric", traces, f"Fabric: {title}", xaxis={"visible": False},
                yaxis={"visible": False}, height=420)  # fmt: skip


def topo_figures(doc: dict[str, Any]) -> list[Figure]:
    out = [fabric_figure(doc.get("design", {}), doc.get("summary", {}))]
    growth = doc.get("growth") or []
    if growth:
        out.append(_fig("growth", [go.Scatter(x=[g["servers"] for g in growth], y=[g["cost_relative"] for g in growth],
                                              mode="lines+markers", name="relative cost")],
                        "Cost as the cluster grows", xaxis={"title": "servers"}))  # fmt: skip
    return out


def simulate_figures(doc: dict[str, Any]) -> list[Figure]:
    links = doc.get("busiest_links") or []
    out = [_fig("utilisation", [go.Bar(x=[lr["link"] for lr in links], y=[100 * lr["utilisation"] for lr in links],
                                       name="utilisation %")], "Busiest links: utilisation (%)", yaxis={"title": "%"})]  # fmt: skip
    c = doc.get("collective") or {}
    if "time_s" in c:
        out.append(_fig("sim-vs-model", [go.Bar(x=["simulated", "planner's model"], y=[c["time_s"], c["model_time_s"]],
                                                name="time (s)")], f"{c.get('op', '')}: simulated vs model (s)"))  # fmt: skip
    return out


# --- reports --------------------------------------------------------------------------------


def busbw_figure(doc: dict[str, Any]) -> list[Figure]:
    sizes = doc.get("sizes") or []
    traces: list[Any] = [go.Scatter(x=[s["size_bytes"] for s in sizes], y=[s["busbw_GBps"] for s in sizes],
                                    mode="lines+markers", name="measured busbw (GB/s)")]  # fmt: skip
    if doc.get("expected_busbw_GBps"):
        traces.append(go.Scatter(x=[sizes[0]["size_bytes"], sizes[-1]["size_bytes"]] if sizes else [],
                                 y=[doc["expected_busbw_GBps"]] * 2, mode="lines", name="expected (GB/s)",
                                 line={"dash": "dash"}))  # fmt: skip
    return [_fig("busbw", traces, f"{doc.get('op', 'collective')}: bus bandwidth by message size",
                 xaxis={"type": "log", "title": "bytes"}, yaxis={"title": "GB/s"})]  # fmt: skip


def net_figure(doc: dict[str, Any]) -> list[Figure]:
    runs = doc.get("runs") or []
    return [_fig("goodput", [go.Bar(x=[f"{r['streams']} stream(s)" for r in runs],
                                    y=[r["goodput_bits_per_s"] / 1e9 for r in runs], name="goodput (Gbit/s)")],
                 "TCP goodput (Gbit/s)")]  # fmt: skip


def p2p_figure(doc: dict[str, Any]) -> list[Figure]:
    m = doc.get("matrix_GBps") or []
    return [_fig("p2p", [go.Heatmap(z=m, colorscale="Viridis", colorbar={"title": "GB/s"})],
                 "Pairwise bandwidth (GB/s), rank x rank", xaxis={"title": "rank"}, yaxis={"title": "rank"})]  # fmt: skip


def serve_figure(doc: dict[str, Any]) -> list[Figure]:
    res = doc.get("results") or []
    x = [
        str(r.get("concurrency") if r.get("concurrency") is not None else r.get("rate"))
        for r in res
    ]
    traces = [go.Bar(x=x, y=[(r.get(k) or {}).get("p50") for r in res], name=f"{k.removesuffix('_s')} p50 (s)")
              for k in ("ttft_s", "tpot_s", "e2e_s")]  # fmt: skip
    return [_fig("serve", traces, "Latency by load level (p50, s)", barmode="group",
                 xaxis={"title": "concurrency" if res and res[0].get("concurrency") is not None else "rate"})]  # fmt: skip


def http_figure(doc: dict[str, Any]) -> list[Figure]:
    phases = doc.get("phases_s") or {}
    names = list(phases)
    return [_fig("phases", [go.Bar(y=names, x=[phases[n]["mean"] for n in names], orientation="h",
                                   name="mean (s)")], "Request phases (mean, s)",
                 yaxis={"autorange": "reversed"})]  # fmt: skip


def fleet_figure(doc: dict[str, Any]) -> list[Figure]:
    outliers = doc.get("outliers") or []
    if not outliers:
        return []
    nodes: dict[str, int] = {}
    for o in outliers:
        nodes[str(o.get("node"))] = nodes.get(str(o.get("node")), 0) + 1
    return [_fig("fleet", [go.Bar(x=list(nodes), y=list(nodes.values()), name="outlying metrics")],
                 "Outlying metrics per node")]  # fmt: skip


def watch_figure() -> Figure:
    """The live page's empty timeline; the page appends each sample with Plotly.extendTraces."""
    return _fig("live", [go.Scatter(x=[], y=[], mode="lines", name="GPU busy (%)"),
                         go.Scatter(x=[], y=[], mode="lines", name="busiest link (Mbit/s)", yaxis="y2")],
                "GPU utilisation and network throughput", xaxis={"title": "s"},
                yaxis={"title": "GPU busy %", "range": [0, 100]},
                yaxis2={"title": "Mbit/s", "overlaying": "y", "side": "right", "rangemode": "tozero"})  # fmt: skip
