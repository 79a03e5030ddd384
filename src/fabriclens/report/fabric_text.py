"""Terminal rendering of `topo` and `simulate`."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from fabriclens.report.text import assumptions_block
from fabriclens.units import format_bw, format_rate, format_time


def _kv(title: str, rows: list[tuple[str, str]]) -> Table:
    t = Table(title=title, box=box.SIMPLE, title_justify="left", show_header=False)
    t.add_column("")
    t.add_column("", justify="right")
    for k, v in rows:
        t.add_row(k, v)
    return t


def _summary_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("tiers", str(s["tiers"])),
        ("leaves / spines / cores", f"{s['leaves']} / {s['spines']} / {s['cores']}"),
        ("ports used / free", f"{s['ports_used']} / {s['ports_free']}"),
        ("leaf ports down / up", "{} / {}".format(*s["leaf_ports_down_up"])),
    ]
    rows += [(f"cables: {k}", str(v)) for k, v in s["cables"].items()]
    rows += [(f"transceivers {k}", str(v)) for k, v in s["transceivers"].items()]
    rows += [
        ("bisection bandwidth", format_rate(s["bisection_bits_per_s"])),
        ("worst-case switch hops", str(s["worst_case_switch_hops"])),
        ("relative cost (estimate)", f"{s['cost_relative']:,.0f}"),
    ]
    return rows


def topo_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`topo`: the design, its growth table and assumptions."""
    d = doc["design"]
    head = Text(
        f"{d['topology']} fabric: {d['servers']} servers x {d['nics_per_server']} NICs at "
        f"{d['link_rate_bits_per_s'] / 1e9:g}G ({doc['network']}), {d['switch_title']}"
    )
    out: list[RenderableType] = [head, _kv("Design", _summary_rows(doc["summary"]))]
    if doc.get("storage"):
        out.append(
            _kv(
                "Storage / front-end network (leaf-spine)", _summary_rows(doc["storage"]["summary"])
            )
        )
    g = Table(title="Growth", box=box.SIMPLE_HEAD, title_justify="left")
    for c in ("servers", "tiers", "leaves", "spines", "cores", "relative cost"):
        g.add_column(c, justify="right")
    prev = None
    for row in doc["growth"]:
        if row["tiers"] is None:
            g.add_row(str(row["servers"]), "too big", "", "", "", "")
            continue
        mark = " <- next tier" if prev is not None and row["tiers"] > prev else ""
        prev = row["tiers"]
        g.add_row(
            str(row["servers"]),
            f"{row['tiers']}{mark}",
            str(row["leaves"]),
            str(row["spines"]),
            str(row["cores"]),
            f"{row['cost_relative']:,.0f}",
        )
    out += [g, assumptions_block(doc["assumptions"])]
    if doc.get("plots"):
        out.append(Text("diagram: " + ", ".join(doc["plots"])))
    return out


def simulate_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`simulate`: the collective beside the model, the busiest links and the effects."""
    c, f, sc = doc["collective"], doc["fabric"], doc["scenario"]
    out: list[RenderableType] = [
        Text(
            f"{c['op']} ({c['pattern']}) of {c['size_bytes'] / 1e9:g} GB on {c['ranks']} ranks "
            f"({c['servers']} servers, {c['flows']} flows, {sc.get('flows', 1)} per connection); "
            f"{f['topology']} {f['tiers']}-tier "
            f"{f['switch']} {f['oversubscription']:g}:1, {sc['routing']} routing, {sc['placement']} placement"
        ),
        _kv(
            "Simulated vs model",
            [
                ("simulated time", format_time(c["time_s"])),
                ("model time (flat fabric)", format_time(c["model_time_s"])),
                ("ratio", f"{c['ratio_to_model']:.2f}x"),
                ("simulated busbw", format_bw(c["busbw_bytes_per_s"])),
                ("model busbw", format_bw(c["model_busbw_bytes_per_s"])),
                ("slowest connection / NIC rate", f"{c['slowest_flow_share']:.0%}"),
            ],
        ),
    ]
    if doc["busiest_links"]:
        t = Table(title="Busiest links", box=box.SIMPLE_HEAD, title_justify="left")
        t.add_column("link")
        t.add_column("utilisation", justify="right")
        for row in doc["busiest_links"]:
            t.add_row(row["link"], f"{row['utilisation']:.0%}")
        out.append(t)
    if doc.get("effects"):
        t = Table(title="Effect of one change", box=box.SIMPLE_HEAD, title_justify="left")
        for col in ("change", "time", "vs as designed"):
            t.add_column(col, justify="left" if col == "change" else "right")
        for row in doc["effects"]:
            if row["time_s"] is None:
                t.add_row(row["change"], "n/a", row.get("note", ""))
            else:
                t.add_row(row["change"], format_time(row["time_s"]), f"{row['vs_base']:.2f}x")
        out.append(t)
    out.append(assumptions_block(doc["assumptions"]))
    if doc.get("plots"):
        out.append(Text("heat map: " + ", ".join(doc["plots"])))
    return out


def simulate_plan_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`simulate --plan`: each collective of the plan, flat model vs the designed fabric."""
    f, sc = doc["fabric"], doc["scenario"]
    out: list[RenderableType] = [
        Text(
            f"{doc['plan']} on {f['topology']} {f['tiers']}-tier {f['switch']} "
            f"{f['oversubscription']:g}:1 ({f['servers']} servers), {sc['routing']} routing, "
            f"{sc['placement']} placement, {sc.get('flows', 1)} flow(s) per connection"
        )
    ]
    t = Table(title="Communication per step", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("group", "op", "link", "plan time", "fabric factor", "simulated", "exposed"):
        t.add_column(col, justify="left" if col in ("group", "op", "link") else "right")
    for r in doc["comm"]:
        factor = (
            f"{r['factor']:.2f}x"
            if r["simulated"]
            else ("not simulated" if r["link"] == "network" else "in the node")
        )
        t.add_row(r["group"], r["op"], r["link"], format_time(r["time_s"]), factor,
                  format_time(r["sim_time_s"]), format_time(r["sim_exposed_s"]))  # fmt: skip
    out.append(t)
    change = doc["sim_step_time_s"] / doc["step_time_s"] - 1 if doc["step_time_s"] else 0.0
    out.append(Text(f"Step {format_time(doc['step_time_s'])} on the flat model, "
                    f"{format_time(doc['sim_step_time_s'])} on this fabric ({change:+.1%})"))  # fmt: skip
    out.append(assumptions_block(doc["assumptions"]))
    return out
