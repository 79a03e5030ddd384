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
    from fabriclens.report.doctor_tables import STATUS_MARK, doctor_sections

    lines = ["# fabriclens doctor", "", f"Findings: {_counts(doc['findings'])}.", ""]
    if doc.get("walk"):
        w = doc["walk"]
        lines += [f"## Symptom: {w['title']}", ""]
        for i, step in enumerate(w["steps"], 1):
            lines.append(f"{i}. {step['step']}: **{STATUS_MARK[step['status']]}**")
            lines += [f"   - {_code(e)}" for e in step["evidence"] if step["status"] == "found"]
            lines += [f"   - by hand: {_code(step['manual'])}"] if step["manual"] else []
        lines += ["", f"**{w['summary']}**", ""]
        lines += [w["exit_note"], ""] if w.get("exit_note") else []
    for sec in doctor_sections(doc):
        lines += [f"## {sec.title}", "", *_table(sec.header, [list(r) for r in sec.rows]), ""]
    lines += ["## Findings", "", *findings_markdown(doc["findings"])]
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
    if "lines" in nccl:  # absent from a report saved before the counts were added
        found = nccl.get("other_lines_read", 0)
        lines += ["", f"Read {nccl['lines']:,} lines with NCCL's layout from {len(nccl['hosts']):,} host(s), "
                  f"{nccl['other_lines'] + found:,} other line(s)"
                  + (f" ({found:,} with something it reads)." if found else ".")]  # fmt: skip
    lines += ["", f"Findings: {_counts(doc['findings'])}.", "", *findings_markdown(doc["findings"])]
    return "\n".join(lines) + "\n"
