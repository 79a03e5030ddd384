"""Terminal rendering of the inference-endpoint commands: `http` and `bench serve`."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from fabriclens.units import counted, format_time


def http_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens http` output: a waterfall of the median request, then where the time goes."""
    from fabriclens.report.phases import PHASE_LABELS, PHASES

    table = Table(title=f"{doc['method']} {doc['url']} · {counted(doc['requests'], 'request')} · status {sorted(set(map(str, doc['status'])))}",
                  box=box.SIMPLE_HEAD, title_justify="left")  # fmt: skip
    for col in ("phase", "p50", "p90", "p99", "waterfall (p50)"):
        table.add_column(col, justify="right" if col in ("p50", "p90", "p99") else "left")
    total = sum(doc["phases_s"][p]["p50"] for p in PHASES) or 1.0
    start = 0.0
    for p in PHASES:
        s = doc["phases_s"][p]
        width, offset = 40 * s["p50"] / total, 40 * start / total
        start += s["p50"]
        bar = " " * int(offset) + "█" * max(1 if s["p50"] > 0 else 0, round(width))
        table.add_row(
            PHASE_LABELS[p],
            format_time(s["p50"]),
            format_time(s["p90"]),
            format_time(s["p99"]),
            bar,
        )
    text = Text()
    text.append("Time to first byte ", style="bold")
    text.append(f"{format_time(doc['ttfb_s']['p50'])}")
    if doc["ttft_s"]:
        text.append(" · time to first token ", style="bold")
        text.append(f"{format_time(doc['ttft_s']['p50'])} · {doc['tokens_seen']} streamed events")
        if doc["usage_tokens"] is not None:
            text.append(f" · {doc['usage_tokens']} tokens by the server's count")
    text.append(" · total ", style="bold")
    text.append(f"{format_time(doc['total_s']['p50'])}\n")
    text.append("Slowest phase: ", style="bold")
    text.append(doc["where"])
    if doc.get("body_capped"):
        text.append("\nBody cap: ", style="bold yellow")
        text.append(doc["body_capped"])
    out: list[RenderableType] = [table, text]
    att = doc.get("attribution")
    if att:
        parts = Table(
            title="Where the time to the first token goes (medians)",
            box=box.SIMPLE_HEAD,
            title_justify="left",
        )
        for col in ("part", "time", "how"):
            parts.add_column(col, justify="right" if col == "time" else "left")
        for p in att["parts"]:
            parts.add_row(p["part"], format_time(p["seconds"]), p["how"])
        note = Text()
        note.append("Verdict: ", style="bold")
        note.append(att["verdict"] + "\n")
        note.append(f"Method: {att['method']}", style="dim")
        out += [parts, note]
    return out  # fmt: skip


def _ms(stats: dict[str, float] | None, key: str) -> str:
    return "-" if not stats else f"{1e3 * stats[key]:.1f}"


def bench_serve_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens bench serve` output: one row per load level, then errors, planner, client cost."""
    table = Table(title=f"{doc['api']} · {doc['url']} · model {doc['model']} · {doc['mode']}",
                  box=box.SIMPLE_HEAD, title_justify="left")  # fmt: skip
    cols = ("load", "ok/sent", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "TPOT p50", "e2e p50",
            "tokens/s", "req/s", "goodput")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="left" if col == "load" else "right")
    notes = Text()
    for r in doc["results"]:
        load = f"c={r['concurrency']}" if r["concurrency"] is not None else f"{r['rate']:g} req/s"
        good = r["goodput"]
        table.add_row(load, f"{r['completed']}/{r['requests']}", _ms(r["ttft_s"], "p50"), _ms(r["ttft_s"], "p99"),
                      _ms(r["itl_s"], "p50"), _ms(r["itl_s"], "p99"), _ms(r["tpot_s"], "p50"), _ms(r["e2e_s"], "p50"),
                      f"{r['output_tokens_per_s']:,.0f}", f"{r['requests_per_s']:.2f}",
                      f"{100 * good['fraction']:.0f}%" if good["slo_s"] else "-")  # fmt: skip
        exp = r.get("expected")
        if exp:
            table.add_row(f"  planner: {exp['gpus']}x {exp['gpu']}", "", "-", "", "", "", f"{1e3 * exp['tpot_s']:.1f}", "",
                          f"{exp['output_tokens_per_s']:,.0f}", "", "", style="dim")  # fmt: skip
        if r["ttft_s"] and r.get("ttft_server_s"):
            net = r["ttft_s"]["p50"] - r["ttft_server_s"]["p50"]
            notes.append(f"{load}: TTFT p50 {_ms(r['ttft_s'], 'p50')} ms = {1e3 * net:.1f} ms network path "
                         f"(2 round trips) + {_ms(r['ttft_server_s'], 'p50')} ms at the server\n")  # fmt: skip
        if r["errors"]:
            kinds = ", ".join(f"{n} {k}" for k, n in r["errors"].items())
            notes.append(f"{load}: errors: {kinds}\n", style="red")
    table.caption = "times in ms; ITL over tokens (a chunk of k tokens gives k gaps of 1/k); TPOT = (last - first token) / (tokens - 1)"
    first = doc["results"][0] if doc["results"] else None
    if first and first.get("token_count"):
        notes.append(f"Token counts: {first['token_count']}")
        notes.append(
            f" · connect p50 {_ms(first['connect_s'], 'p50')} ms (the path's round trip, inside TTFT)\n"
        )
    spec = doc.get("server_speculation") or {}
    if spec.get("reported"):
        accept = spec["accept_length"]
        notes.append("Server: ", style="bold")
        tree = (
            (
                f", a tree of top-{spec['topk']}"
                + (
                    f", {spec['draft_tokens']} positions verified"
                    if spec.get("draft_tokens")
                    else ""
                )
            )
            if spec.get("topk", 1) > 1
            else ""
        )
        notes.append(f"speculative decoding ({spec['algorithm'] or 'drafts'}), {spec['spec_tokens']} draft "
                     f"token(s) a step{tree}, accept length "
                     f"{'not yet measured' if accept is None else format(accept, '.2f')} ({spec['source']})"
                     + ("; the planner rows plan it" if any((r.get("expected") or {}).get("speculation")
                                                          for r in doc["results"]) else "")
                     + (f"; {spec['note']}" if spec.get("note") else "") + "\n")  # fmt: skip
    cost = doc["client_overhead"]
    if cost["per_chunk_ms"] is not None:
        notes.append("Client overhead: ", style="bold")
        notes.append(f"{1e3 * cost['per_chunk_ms']:.0f} µs per chunk handled, event-loop lag p99 "
                     f"{cost['loop_lag_p99_ms']:.2f} ms — the figures above are the server's, not the tool's\n")  # fmt: skip
    if doc.get("plot"):
        notes.append(f"Plot: {doc['plot']}\n")
    for a in doc["assumptions"]:
        notes.append(f"· {a}\n", style="dim")
    return [table, notes]  # fmt: skip
