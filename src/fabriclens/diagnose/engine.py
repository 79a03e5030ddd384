"""Facts from parsed logs, rules from data/rules.toml, findings with their evidence."""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fabriclens.conditions import check_known, holds
from fabriclens.parse.nccl_log import WC_STATUS, NcclLog
from fabriclens.parse.torch_log import TorchLog

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
FACTS = {
    "transport", "ib_devices", "ib_no_device", "libibverbs_failed", "gdr", "nccl_warnings",
    "completion_errors", "retry_exceeded", "watchdog_timeouts", "stragglers",
    "ib_disabled_by_env", "p2p_disabled_by_env", "socket_forced_by_env", "logs_read",
}  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """One diagnosis rule. Log rules (rules.toml) name the facts whose source lines are quoted
    as evidence; host rules (host_rules.toml) hold one evidence template filled with the facts of
    the subject in their ``scope`` (a NIC, an RDMA port, a GPU, a peer ...)."""

    id: str
    severity: str
    when: dict[str, Any]
    symptom: str
    cause: str
    check: tuple[str, ...]
    fix: str
    evidence: tuple[str, ...]
    scope: str = ""


@dataclass(frozen=True)
class Finding:
    """A rule that fired, with the evidence behind it."""

    rule: str
    severity: str
    symptom: str
    cause: str
    check: tuple[str, ...]
    fix: str
    evidence: tuple[str, ...]


def load_rules(filename: str, known: Mapping[str, set[str]]) -> tuple[Rule, ...]:
    """The [[rule]] entries of a rules file in diagnose/data, each checked: a known severity, and
    conditions only on facts its scope provides (``known`` maps scope -> facts; "" for unscoped
    rules). A broken rules file is our bug, so it raises."""
    text = resources.files("fabriclens.diagnose").joinpath("data", filename).read_text("utf-8")
    out = []
    for raw in tomllib.loads(text)["rule"]:
        if raw["severity"] not in SEVERITY_ORDER:
            raise RuntimeError(f"rule {raw['id']}: unknown severity {raw['severity']!r}")
        scope = raw.get("scope", "")
        check_known(raw["id"], raw["when"], known[scope])
        evidence = raw.get("evidence", ())
        out.append(Rule(raw["id"], raw["severity"], dict(raw["when"]), raw["symptom"], raw["cause"],
                        tuple(raw.get("check", ())), raw.get("fix", ""),
                        (evidence,) if isinstance(evidence, str) else tuple(evidence), scope))  # fmt: skip
    return tuple(out)


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The built-in log rules, checked against the facts the engine provides."""
    return load_rules("rules.toml", {"": FACTS})


def stragglers(torch: TorchLog) -> list[int]:
    """Ranks whose last completed work is behind the others (needs at least two ranks)."""
    done = torch.last_completed
    if len(done) < 2 or min(done.values()) == max(done.values()):
        return []
    low = min(done.values())
    return sorted(r for r, v in done.items() if v == low)


def facts(nccl: NcclLog, torch: TorchLog) -> dict[str, Any]:
    """Facts the rules look at."""
    env = nccl.env
    return {
        "transport": nccl.transport or "",
        "ib_devices": len(nccl.ib_devices),
        "ib_no_device": nccl.ib_no_device,
        "libibverbs_failed": nccl.libibverbs_failed,
        "gdr": "unknown" if nccl.gdr is None else ("on" if nccl.gdr else "off"),
        "nccl_warnings": len(nccl.warnings),
        "completion_errors": len(nccl.completion_errors),
        "retry_exceeded": sum(1 for s, _ in nccl.completion_errors if s == 12),
        "watchdog_timeouts": len(torch.timeouts),
        "stragglers": len(stragglers(torch)),
        "ib_disabled_by_env": env.get("NCCL_IB_DISABLE", "0") not in ("0", ""),
        "p2p_disabled_by_env": env.get("NCCL_P2P_DISABLE", "0") not in ("0", ""),
        "socket_forced_by_env": "NCCL_NET" in env and env["NCCL_NET"].lower() == "socket",
        "logs_read": nccl.lines + len(torch.timeouts) + len(torch.last_completed),
    }


def _evidence(name: str, nccl: NcclLog, torch: TorchLog) -> list[str]:
    if name in nccl.evidence:
        return [nccl.evidence[name]]
    if name == "warnings":
        return nccl.warnings[:5]
    if name == "completion_errors":
        return [
            f"{line}  [{WC_STATUS.get(s, f'status {s}')}]" for s, line in nccl.completion_errors[:5]
        ]
    if name == "timeouts":
        out = []
        for t in torch.timeouts[:5]:
            parts = [f"rank {t.rank}" if t.rank is not None else "rank ?", t.op or "op ?"]
            if t.seq is not None:
                parts.append(f"SeqNum {t.seq}")
            if t.numel is not None:
                parts.append(f"{t.numel:,} elements")
            if t.timeout_s is not None:
                parts.append(f"timeout {t.timeout_s:g} s")
            out.append(", ".join(parts))
        return out
    if name == "stragglers":
        behind = stragglers(torch)
        lead = max(torch.last_completed.values()) if torch.last_completed else 0
        return [
            f"rank {r}: last completed work {torch.last_completed[r]} (others up to {lead})"
            for r in behind
        ]
    if name == "env":
        return [f"{k}={v}" for k, v in sorted(nccl.env.items())]
    if name == "socket_ifaces" and nccl.socket_ifaces:
        return [f"NET/Socket interfaces: {', '.join(nccl.socket_ifaces)}"]
    return []


def diagnose(nccl: NcclLog, torch: TorchLog) -> list[Finding]:
    """Findings, most severe first."""
    values = facts(nccl, torch)
    found = []
    for rule in rules():
        if holds(rule.when, values):
            evidence = [line for name in rule.evidence for line in _evidence(name, nccl, torch)]
            found.append(
                Finding(
                    rule.id,
                    rule.severity,
                    rule.symptom,
                    rule.cause,
                    rule.check,
                    rule.fix,
                    tuple(evidence),
                )
            )
    return sorted(found, key=lambda f: SEVERITY_ORDER[f.severity])
