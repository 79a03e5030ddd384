"""What `logs` and `doctor` share: reading log files, findings as JSON, the exit status."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from fabriclens.diagnose.engine import SEVERITY_ORDER, Finding
from fabriclens.errors import ExitStatus
from fabriclens.inputs import MAX_LOG_BYTES, iter_lines
from fabriclens.parse.nccl_log import NcclLog, add_nccl_line
from fabriclens.parse.torch_log import TorchLog, add_torch_line


def read_logs(paths: list[Path], max_bytes: int = MAX_LOG_BYTES) -> tuple[NcclLog, TorchLog]:
    """Parse every file as NCCL and PyTorch output (one file per rank is fine), streamed line by
    line; ``max_bytes`` caps each file."""
    nccl, torch = NcclLog(), TorchLog()
    for path in paths:
        for raw in iter_lines(
            path, "log", max_bytes, too_big=f"give `logs --max-input SIZE` over {max_bytes:,} bytes"
        ):
            add_nccl_line(nccl, raw)
            add_torch_line(torch, raw)
    return nccl, torch


def findings_doc(findings: list[Finding]) -> list[dict[str, Any]]:
    """Findings, most severe first, as JSON objects."""
    ordered = sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])
    return [{**asdict(f), "check": list(f.check), "evidence": list(f.evidence)} for f in ordered]


def exit_for(findings: list[Finding]) -> None:
    """Exit status 1 when any finding is a warning or worse."""
    if any(f.severity in ("warning", "critical") for f in findings):
        raise typer.Exit(int(ExitStatus.FINDINGS))
