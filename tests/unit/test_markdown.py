"""Markdown output of `doctor` and `logs`: well-formed tables, one section per finding, escaping."""

from __future__ import annotations

import json

import pytest
from markdown_it import MarkdownIt

from conftest import FIXTURES
from fabriclens.cli.app import run
from fabriclens.report.markdown import doctor_markdown, findings_markdown

TREE = FIXTURES / "sysfs-roce-degraded"


def _tables(text: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts, read back by a CommonMark+tables parser."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            tables[-1].append([])
        elif tok.type == "inline" and tokens[i - 1].type in ("th_open", "td_open"):
            tables[-1][-1].append(tok.content)
    return tables


def test_doctor_markdown_matches_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["doctor", "--sys-root", str(TREE), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert run(["doctor", "--sys-root", str(TREE), "--markdown"]) == 1
    text = capsys.readouterr().out
    nics, ports = _tables(text)
    assert [row[0] for row in nics[1:]] == [
        n["name"] + ("" if n["physical"] else " (virtual)") for n in doc["interfaces"]
    ]
    assert all(len(row) == 7 for row in nics) and all(len(row) == 5 for row in ports)
    assert [row[0] for row in ports[1:]] == [p["device"] for p in doc["rdma_ports"]]
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == [
        f"### {f['severity'].upper() if f['severity'] != 'info' else 'info'}: {f['symptom']}"
        for f in doc["findings"]
    ]


def test_a_pipe_in_a_value_does_not_split_the_cell() -> None:
    doc = {"interfaces": [{"name": "a|b", "physical": True, "nic_state": "up", "speed_mbps": 0,
                           "max_speed_mbps": None, "mtu": 1500, "errors": 0, "drops": 0}],
           "rdma_ports": [], "findings": []}  # fmt: skip
    (table,) = _tables(doctor_markdown(doc))
    assert table[1][:3] == ["a|b", "up", "-"]
    assert doctor_markdown(doc).rstrip().endswith("No findings.")


def test_backticks_in_evidence_stay_inside_code() -> None:
    finding = {"rule": "r", "severity": "warning", "symptom": "s", "cause": "", "fix": "",
               "evidence": ["NCCL said `oops`"], "check": ["grep x"]}  # fmt: skip
    text = "\n".join(findings_markdown([finding]))
    tokens = MarkdownIt("commonmark").parse(text)
    codes = [c.content for t in tokens if t.children for c in t.children if c.type == "code_inline"]
    assert codes == ["NCCL said `oops`", "grep x", "r"]


def test_logs_markdown_and_the_format_clash(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(FIXTURES / "samples" / "nccl-debug-socket-fallback.log")
    assert run(["logs", log, "--markdown"]) == 1
    text = capsys.readouterr().out
    assert _tables(text)[0][1][1] == "Socket" and "Rule: `nccl-socket-no-ib`" in text
    assert run(["logs", log, "--markdown", "--json"]) == 2
    assert "choose one output format" in capsys.readouterr().err
