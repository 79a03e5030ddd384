"""What `logs` and `doctor` share: reading log files, findings as JSON, the exit status."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from fabriclens.diagnose.engine import SEVERITY_ORDER, Finding
from fabriclens.errors import ExitStatus, InputError
from fabriclens.parse.nccl_log import NcclLog, parse_nccl_log
from fabriclens.parse.torch_log import TorchLog, parse_torch_log


def read_logs(paths: list[Path]) -> tuple[NcclLog, TorchLog]:
    """Parse every file as NCCL and PyTorch output (one file per rank is fine)."""
    nccl, torch = NcclLog(), TorchLog()
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror}", "check the path") from None
        parse_nccl_log(text, nccl)
        parse_torch_log(text, torch)
    return nccl, torch


def findings_doc(findings: list[Finding]) -> list[dict[str, Any]]:
    """Findings, most severe first, as JSON objects."""
    ordered = sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])
    return [{**asdict(f), "check": list(f.check), "evidence": list(f.evidence)} for f in ordered]


def exit_for(findings: list[Finding]) -> None:
    """Exit status 1 when any finding is a warning or worse."""
    if any(f.severity in ("warning", "critical") for f in findings):
        raise typer.Exit(int(ExitStatus.FINDINGS))
