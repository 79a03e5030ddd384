"""Terminal rendering of `bench collective` (a table like nccl-tests) and `bench p2p`."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from fabriclens.units import format_decimal_bytes

LEVEL_STYLE = {"ok": "green", "warning": "yellow", "critical": "red", "unjudged": ""}


def _sizes_table(doc: dict[str, Any]) -> Table:
    """One op's rows: a size each."""
    table = Table(title=f"{doc['op']} · {doc['ranks']} ranks on {len(doc['hosts'])} host(s) · {doc['backend']} · {doc['dtype']}",
                  box=box.SIMPLE_HEAD, title_justify="left")  # fmt: skip
    for col in (
        "size",
        "time (us)",
        "p99 (us)",
        "CV",
        "algbw GB/s",
        "busbw GB/s",
        "slowest rank",
        "#wrong",
    ):
        table.add_column(col, justify="right")
    for r in doc["sizes"]:
        table.add_row(format_decimal_bytes(r["size_bytes"]), f"{r['time_us']:,.1f}", f"{r['p99_us']:,.1f}", f"{r['cv']:.2f}",
                      f"{r['algbw_GBps']:.3f}", f"{r['busbw_GBps']:.3f}", str(r["slowest_rank"]),
                      "-" if r["wrong"] is None else str(r["wrong"]))  # fmt: skip
    return table


def _verdict(text: Text, label: str, doc: dict[str, Any]) -> None:
    """An op's verdict line, in its level's colour, and its next checks."""
    text.append(label, style="bold")
    text.append(doc["verdict"] + "\n", style=LEVEL_STYLE.get(doc["level"], ""))
    for c in doc["next_checks"]:
        text.append(f"  next: {c}\n")


def _assumptions(text: Text, doc: dict[str, Any]) -> None:
    for a in doc["assumptions"]:
        text.append(f"· {a}\n", style="dim")


def bench_collective_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    text = Text()
    text.append("Plateau busbw ", style="bold")
    text.append(
        f"{doc['plateau_busbw_GBps']:.3f} GB/s (sizes within 4x of {format_decimal_bytes(doc['plateau_size_bytes'])})"
    )
    if doc["expected_busbw_GBps"] is not None:
        text.append(
            f" · expected {doc['expected_busbw_GBps']:.3f} GB/s · efficiency {100 * doc['efficiency']:.0f}%"
        )
    text.append("\n")
    _verdict(text, "Verdict: ", doc)
    if doc.get("plot"):
        text.append(f"Plot: {doc['plot']}\n")
    _assumptions(text, doc)
    return [_sizes_table(doc), text]


def bench_collectives_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """Several ops from one launch (--op all): a summary row per op, then each op's sizes and
    verdict, the assumptions once."""
    ops = doc["ops"]
    first = ops[0]
    summary = Table(title=f"{len(ops)} ops · {first['ranks']} ranks on {len(first['hosts'])} host(s) · {first['backend']} · {first['dtype']}",
                    box=box.SIMPLE_HEAD, title_justify="left")  # fmt: skip
    for col in ("op", "plateau busbw GB/s", "expected GB/s", "efficiency", "#wrong", "level"):
        summary.add_column(col, justify="left" if col in ("op", "level") else "right")
    for d in ops:
        wrong = [r["wrong"] for r in d["sizes"] if r["wrong"] is not None]
        summary.add_row(
            d["op"],
            f"{d['plateau_busbw_GBps']:.3f}",
            "-" if d["expected_busbw_GBps"] is None else f"{d['expected_busbw_GBps']:.3f}",
            "-" if d["efficiency"] is None else f"{100 * d['efficiency']:.0f}%",
            str(sum(wrong)) if wrong else "-",
            Text(d["level"], style=LEVEL_STYLE.get(d["level"], "")),
        )
    out: list[RenderableType] = [summary]
    for d in ops:
        verdict = Text()
        _verdict(verdict, f"{d['op']}: ", d)
        out += [_sizes_table(d), verdict]
    notes = Text()
    _assumptions(notes, first)
    return [*out, notes]


def bench_p2p_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    n = doc["ranks"]
    table = Table(title=f"pairwise bandwidth (GB/s) · {n} ranks · {format_decimal_bytes(doc['size_bytes'])} each way · {doc['rounds']} rounds",
                  box=box.SIMPLE_HEAD, title_justify="left")  # fmt: skip
    table.add_column("rank (host)")
    for j in range(n):
        table.add_column(str(j), justify="right")
    for i in range(n):
        table.add_row(
            f"{i} ({doc['hosts'][i]})",
            *("-" if v is None else f"{v:.3f}" for v in doc["matrix_GBps"][i]),
        )
    text = Text()
    if doc["median_GBps"] is not None:
        text.append(f"Median pair {doc['median_GBps']:.3f} GB/s. Worst pairs: ", style="bold")
        text.append(", ".join(f"{p['ranks'][0]}-{p['ranks'][1]} {p['GBps']:.3f} ({100 * p['of_median']:.0f}%)"
                              for p in doc["worst_pairs"][:5]) + "\n")  # fmt: skip
    if doc["suspect_nodes"]:
        text.append("Suspect nodes (every pair slow): ", style="bold red")
        text.append(
            ", ".join(
                f"{h} ({doc['node_median_GBps'][h]:.3f} GB/s median)" for h in doc["suspect_nodes"]
            )
            + "\n"
        )
    else:
        text.append("No node is slow with all its peers.\n")
    if doc.get("median_latency_us") is not None:
        text.append(
            f"Latency ({doc['latency_bytes']} B, one way, median of 20 round trips / 2): ",
            style="bold",
        )
        text.append(f"median pair {doc['median_latency_us']:.0f} us; worst " + ", ".join(
            f"{p['ranks'][0]}-{p['ranks'][1]} {p['us']:.0f} us" for p in doc["worst_latency_pairs"][:5]) + "\n")  # fmt: skip
        if doc["latency_suspect_nodes"]:
            text.append(
                "Slow to answer (median pair latency over 2x the typical node's): ",
                style="bold red",
            )
            text.append(
                ", ".join(
                    f"{h} ({doc['node_median_latency_us'][h]:.0f} us)"
                    for h in doc["latency_suspect_nodes"]
                )
                + "\n"
            )
    for note in doc.get("notes", []):
        text.append(f"Note: {note}\n", style="dim")
    return [table, text]


def fleet_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens fleet`: the suspect nodes with their evidence, then the baselines."""
    text = Text()
    text.append(f"{len(doc['nodes'])} nodes, {len(doc['metrics'])} metrics. ", style="bold")
    if not doc["suspect_nodes"]:
        text.append("No node falls outside the fleet's baselines.\n")
    if doc.get("left_out"):
        text.append(
            f"\n{len(doc['left_out'])} value(s) left out: negative, so the file "
            "was edited or corrupted (give each node's own --json output):\n",
            style="yellow",
        )
        for line in doc["left_out"][:20]:
            text.append(f"  {line}\n")
    for s in doc["suspect_nodes"]:
        text.append(f"\n{s['node']}", style="bold red")
        text.append(f" — {s['metrics']} metric(s) outside the baseline\n")
        for e in s["evidence"]:
            text.append(f"  {e}\n")
    table = Table(title="Fleet baselines", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("metric", "nodes", "median", "MAD", "better"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name, m in doc["metrics"].items():
        med = "-" if m["median"] is None else f"{m['median']:,.6g}"
        mad = "-" if m["mad"] is None else f"{m['mad']:,.3g}"
        table.add_row(
            name, str(m["nodes"]), med, mad, "higher" if m["higher_is_better"] else "lower"
        )
    return [text, table]
