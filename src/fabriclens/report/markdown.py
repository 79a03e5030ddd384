"""Findings as Markdown, for pasting into a ticket or a chat: plain text, no terminal styling."""

from __future__ import annotations

from typing import Any

_SEVERITY_MARK = {"critical": "CRITICAL", "warning": "WARNING", "info": "info"}


def _cell(value: object) -> str:
    """One table cell: pipes escaped, newlines flattened, empty as a dash."""
    text = "-" if value is None or value == "" else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _code(text: str) -> str:
    """Inline code that survives backticks inside it."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def findings_markdown(findings: list[dict[str, Any]]) -> list[str]:
    """Findings in the order given (most severe first), each with cause, evidence, checks, fix."""
    if not findings:
        return ["No findings."]
    lines: list[str] = []
    for f in findings:
        lines.append(f"### {_SEVERITY_MARK[f['severity']]}: {f['symptom']}")
        lines.append("")
        if f["cause"]:
            lines.append(f"- **Cause:** {f['cause']}")
        lines += [f"- **Evidence:** {_code(e)}" for e in f["evidence"]]
        lines += [f"- **Check:** {_code(c)}" for c in f["check"]]
        if f["fix"]:
            lines.append(f"- **Fix:** {f['fix']}")
        lines.append(f"- Rule: `{f['rule']}`")
        lines.append("")
    return lines[:-1]


def _counts(findings: list[dict[str, Any]]) -> str:
    n = {s: sum(1 for f in findings if f["severity"] == s) for s in _SEVERITY_MARK}
    return f"{n['critical']} critical, {n['warning']} warning, {n['info']} info"


def doctor_markdown(doc: dict[str, Any]) -> str:
    """`fabriclens doctor --markdown`."""
    lines = ["# fabriclens doctor", "", f"Findings: {_counts(doc['findings'])}.", ""]
    sampled = next((n["sample_s"] for n in doc["interfaces"] if n.get("sample_s")), None)
    lines += ["## Network interfaces" + (f" (rates over {sampled:.1f} s)" if sampled else ""), ""]
    header = ["name", "state", "speed Mb/s", "supports Mb/s", "MTU", "errors", "drops"]
    header += ["rx Mb/s", "tx Mb/s", "new errors", "new drops"] if sampled else []
    rows: list[list[object]] = []
    for n in doc["interfaces"]:
        rows.append([n["name"] + ("" if n["physical"] else " (virtual)"), n["nic_state"], n["speed_mbps"] or None,
                     n["max_speed_mbps"] or None, n["mtu"], n["errors"], n["drops"]])  # fmt: skip
        if sampled:
            rows[-1] += [f"{n['rx_bits_per_s'] / 1e6:.1f}", f"{n['tx_bits_per_s'] / 1e6:.1f}",
                         n["errors_new"], n["drops_new"]]  # fmt: skip
    lines += _table(header, rows)
    if doc["rdma_ports"]:
        lines += ["", "## RDMA ports", ""]
        lines += _table(
            ["device", "port", "state", "physical", "link layer"],
            [[p["device"], p["port"], p["state"], p["phys_state"], p["link_layer"]]
             for p in doc["rdma_ports"]],
        )  # fmt: skip
    if doc.get("services"):
        lines += ["", "## Inference servers listening", ""]
        lines += _table(["service", "port", "addresses", "localhost only"],
                        [[s["service"], s["port"], s["addresses"], "yes" if s["loopback_only"] else "no"]
                         for s in doc["services"]])  # fmt: skip
    if doc.get("peers"):
        lines += ["", "## Path to peers", ""]
        lines += _table(["peer", "answered", "loss %", "RTT ms (median)", "jitter ms", "TCP connect ms", "path MTU", "interface MTU"],
                        [[p["peer"], f"{p['received']}/{p['sent']}", p["loss_pct"], _round(p["rtt_ms"]), _round(p["jitter_ms"]),
                          _round(p["tcp_connect_ms"]), p["path_mtu"], p["iface_mtu"]] for p in doc["peers"]])  # fmt: skip
    lines += ["", "## Findings", "", *findings_markdown(doc["findings"])]
    return "\n".join(lines) + "\n"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def logs_markdown(doc: dict[str, Any]) -> str:
    """`fabriclens logs --markdown`."""
    nccl = doc["nccl"]
    lines = ["# fabriclens logs", "", f"Files: {', '.join(_code(f) for f in doc['files'])}", ""]
    lines += _table(
        ["NCCL", "transport", "HCAs", "sockets on", "GPUDirect RDMA"],
        [[nccl["version"], nccl["transport"], ", ".join(nccl["ib_devices"]),
          ", ".join(nccl["socket_ifaces"]), None if nccl["gdr"] is None else ("on" if nccl["gdr"] else "off")]],
    )  # fmt: skip
    lines += ["", f"Findings: {_counts(doc['findings'])}.", "", *findings_markdown(doc["findings"])]
    return "\n".join(lines) + "\n"
