"""Symptom walks: the checks for one symptom in the order an experienced engineer runs them
(data/symptoms.toml), applied to the findings doctor produced. The walk stops at the first step
with a warning or worse."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fabriclens.diagnose.engine import Finding
from fabriclens.errors import ExitStatus

NEEDS = {
    "nics",
    "gpu",
    "gpu-sample",
    "peer",
    "throughput",
    "logs",
    "services",
    "endpoint",
    "always",
}
STOPS = ("warning", "critical")


@dataclass(frozen=True)
class Step:
    """One check of a walk."""

    name: str
    needs: str
    rules: tuple[str, ...]
    manual: str


@dataclass(frozen=True)
class Walk:
    """The steps for one symptom."""

    symptom: str
    title: str
    steps: tuple[Step, ...]


@functools.cache
def walks() -> dict[str, Walk]:
    """Every symptom's walk, checked: known `needs`, at least one step."""
    raw = tomllib.loads(
        resources.files("fabriclens.diagnose.data").joinpath("symptoms.toml").read_text()
    )
    out = {}
    for symptom, body in raw.items():
        steps = tuple(
            Step(s["name"], s["needs"], tuple(s["rules"]), s["manual"]) for s in body["step"]
        )
        for s in steps:
            if s.needs not in NEEDS:
                raise RuntimeError(f"symptom {symptom}: step {s.name!r} needs unknown {s.needs!r}")
        if not steps:
            raise RuntimeError(f"symptom {symptom}: no steps")
        out[symptom] = Walk(symptom, body["title"], steps)
    return out


def walk(symptom: str, findings: list[Finding], ran: set[str]) -> dict[str, Any]:
    """Each step's status in order: "found" (a warning or worse among its rules: the walk stops
    there), "ok" (checked, nothing wrong), "not checked" (what it needs did not run: the manual
    command), "manual" (a step doctor does not run itself), "not reached" (after a stop)."""
    w = walks()[symptom]
    rows: list[dict[str, Any]] = []
    stopped: str | None = None
    for step in w.steps:
        hits = [f for f in findings if f.rule in step.rules]
        if stopped:
            status = "not reached"
        elif not step.rules:
            status = "manual"
        elif any(f.severity in STOPS for f in hits):  # evidence counts even from a partial run
            status, stopped = "found", step.name
        elif step.needs != "always" and step.needs not in ran:
            status = "not checked"
        else:
            status = "ok"
        rows.append({"step": step.name, "status": status, "findings": [f.rule for f in hits],
                     "evidence": [e for f in hits for e in f.evidence],
                     "manual": step.manual if status in ("not checked", "manual") else ""})  # fmt: skip
    if stopped:
        summary = f"stopped at '{stopped}': fix what it found first, then walk again"
    else:
        unchecked = [r["step"] for r in rows if r["status"] in ("not checked", "manual")]
        summary = "nothing wrong in the steps checked" + (
            f"; still to check by hand: {', '.join(unchecked)}" if unchecked else ""
        )
    return {
        "symptom": symptom,
        "title": w.title,
        "steps": rows,
        "stopped_at": stopped,
        "summary": summary,
    }


def walk_exit_status(walked: dict[str, Any], findings: list[Finding]) -> tuple[int, str]:
    """The exit status of `doctor --symptom`, which follows the question asked: 1 when the walk
    stopped at a step, 0 when it found nothing, whatever else the host shows; and the line that
    says so."""
    if walked["stopped_at"]:
        return int(
            ExitStatus.FINDINGS
        ), f"exit status 1 follows the symptom walk: it stopped at '{walked['stopped_at']}'"
    others = sum(1 for f in findings if f.severity in STOPS)
    note = "exit status 0 follows the symptom walk: it found nothing"
    if others:
        note += f"; the {others} other finding(s) at warning or worse below do not set it"
    return int(ExitStatus.OK), note
