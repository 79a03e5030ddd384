"""Reports: any ``--json`` document of doctor, logs, bench import/collective/p2p/net/serve,
fleet or http, recognised by its keys and shown with its findings first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fabriclens.ui import figures

MAX_REPORT_BYTES = 16 * 2**20  # a report larger than this is refused (413)

# (kind, keys that identify it), most specific first
KINDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("doctor", frozenset({"interfaces", "rdma_ports", "findings"})),
    ("logs", frozenset({"nccl", "timeouts", "findings"})),
    ("fleet", frozenset({"nodes", "metrics", "outliers"})),
    ("bench p2p", frozenset({"matrix_GBps", "worst_pairs"})),
    ("bench serve", frozenset({"results", "mode", "api"})),
    ("bench net", frozenset({"runs", "tool", "host"})),
    ("bench import", frozenset({"sizes", "op", "unparsed_lines"})),
    ("bench collective", frozenset({"sizes", "op", "backend"})),
    ("http", frozenset({"phases_s", "url", "attribution"})),
    ("watch", frozenset({"samples", "verdict", "shares"})),
    ("plan", frozenset({"memory", "step", "comm", "network"})),
    ("topo", frozenset({"design", "summary", "growth"})),
    ("simulate", frozenset({"collective", "busiest_links", "scenario"})),
)

FIGURES: dict[str, Callable[[dict[str, Any]], list[figures.Figure]]] = {
    "bench import": figures.busbw_figure,
    "bench collective": figures.busbw_figure,
    "bench net": figures.net_figure,
    "bench p2p": figures.p2p_figure,
    "bench serve": figures.serve_figure,
    "http": figures.http_figure,
    "fleet": figures.fleet_figure,
    "topo": figures.topo_figures,
    "simulate": figures.simulate_figures,
}


def kind_of(doc: Any) -> str:
    """Which command printed ``doc`` ("" when none is recognised)."""
    if isinstance(doc, list) and doc and all(isinstance(d, dict) for d in doc):
        return "plan" if kind_of(doc[0]) == "plan" else ""
    if not isinstance(doc, dict):
        return ""
    return next((kind for kind, keys in KINDS if keys <= doc.keys()), "")


@dataclass
class Headline:
    """A finding, a verdict or a suspect, shown before the charts and tables."""

    severity: str
    title: str
    details: list[str] = field(default_factory=list)


SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2, "warn": 2, "info": 3, "ok": 4}


def headlines(kind: str, doc: Any) -> list[Headline]:
    """The report's findings, worst first."""
    out: list[Headline] = []
    if not isinstance(doc, dict):
        return out
    for f in doc.get("findings") or []:
        details = [f"cause: {f['cause']}"] if f.get("cause") else []
        details += [f"check: {c}" for c in f.get("check") or []]
        details += [f"fix: {f['fix']}"] if f.get("fix") else []
        details += [f"evidence: {e}" for e in f.get("evidence") or []]
        out.append(
            Headline(
                str(f.get("severity", "info")), str(f.get("symptom", f.get("rule", ""))), details
            )
        )
    if doc.get("verdict") and kind.startswith("bench"):
        level = doc.get("verdict_level", doc.get("level", "info"))  # the flags carry their own
        out.append(Headline(str(level), str(doc["verdict"]),
                            [f"next: {c}" for c in doc.get("next_checks") or []]))  # fmt: skip
        for flag in doc.get("flags") or []:  # bench import's: what is odd beside the plateau
            if isinstance(flag, dict) and flag.get("text"):
                out.append(Headline(str(flag.get("level", "info")), str(flag["text"])))
    for s in doc.get("suspect_nodes") or []:
        if isinstance(s, dict):
            out.append(
                Headline("warning", f"suspect node {s.get('node')}", list(s.get("evidence") or []))
            )
        else:
            out.append(Headline("warning", f"suspect node {s}"))
    for s in doc.get("latency_suspect_nodes") or []:
        out.append(Headline("warning", f"slow to answer: {s}"))
    if kind == "fleet" and doc.get("left_out"):  # values no run writes: an edited file
        out.append(Headline("warning", f"{len(doc['left_out'])} value(s) left out: negative, so the file was edited or corrupted",
                            [str(line) for line in doc["left_out"]]))  # fmt: skip
    if kind == "http" and doc.get("where"):
        out.append(Headline("info", f"most of the time: {doc['where']}"))
    if kind == "watch" and doc.get("verdict"):
        out.append(Headline("info", f"{doc['verdict']}: {doc.get('meaning', '')}"))
    return sorted(out, key=lambda h: SEVERITY_ORDER.get(h.severity.lower(), 3))


def report_figures(kind: str, doc: Any) -> list[figures.Figure]:
    if kind == "plan":
        return figures.plan_figures(doc if isinstance(doc, list) else [doc])
    fn = FIGURES.get(kind)
    return fn(doc) if fn is not None else []
