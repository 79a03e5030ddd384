"""What `logs` and `doctor` share: reading log files, findings as JSON, the exit status."""

from __future__ import annotations

import itertools
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from fabriclens.diagnose.engine import SEVERITY_ORDER, Finding
from fabriclens.errors import ExitStatus
from fabriclens.inputs import (
    MAX_LOG_BYTES,
    iter_line_blocks,
    line_starts,
    regular_file_size,
    too_large,
)
from fabriclens.parse._prefix import unlinked
from fabriclens.parse.nccl_log import BATCH_LINES, NcclLog, add_nccl_lines
from fabriclens.parse.torch_log import TorchLog, add_torch_lines

# A log this large is read in parts, one per CPU (up to MAX_LOG_PARTS), the first by this
# process: reading costs a few microseconds per line in Python, a 1 GB log about 10 million lines.
PARALLEL_MIN_BYTES = 64 * 10**6
MAX_LOG_PARTS = 4


def read_logs(
    paths: list[Path], max_bytes: int = MAX_LOG_BYTES, parallel_min_bytes: int = PARALLEL_MIN_BYTES
) -> tuple[NcclLog, TorchLog]:
    """Parse every file as NCCL and PyTorch output (one file per rank is fine), streamed line by
    line; ``max_bytes`` caps each file. A file of ``parallel_min_bytes`` or more is read in
    parts by several processes and the parts joined in order (``NcclLog.extend``)."""
    nccl, torch = NcclLog(), TorchLog()
    too_big = f"give `logs --max-input SIZE` over {max_bytes:,} bytes"
    for path in paths:
        size = regular_file_size(path)
        parts = _cpus() if size is not None and size >= parallel_min_bytes else 1
        if parts > 1 and size is not None and size > max_bytes:
            raise too_large(path, "log", max_bytes, too_big)
        cuts = line_starts(path, parts, "log") if parts > 1 else []
        # one part when the file is small or its lines too long to cut it
        for part_nccl, part_torch in (
            _read_in_parts(path, cuts, max_bytes, too_big)
            if len(cuts) > 2
            else [_read_part(path, 0, None, max_bytes, too_big)]
        ):
            nccl.extend(part_nccl)
            torch.extend(part_torch)
    return nccl, torch


def _cpus() -> int:
    """CPUs to read a large log on: 1 in a process with other threads (the dashboard runs
    commands in its own threads), where forking workers is not safe."""
    import threading

    if threading.active_count() > 1:
        return 1
    try:
        return max(1, min(MAX_LOG_PARTS, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return max(1, min(MAX_LOG_PARTS, os.cpu_count() or 1))


def _read_part(
    path: Path, start: int, stop: int | None, max_bytes: int, too_big: str
) -> tuple[NcclLog, TorchLog]:
    nccl, torch = NcclLog(), TorchLog()
    for lines in iter_line_blocks(path, "log", max_bytes, too_big=too_big, start=start, stop=stop):
        for at in range(0, len(lines), BATCH_LINES):
            batch = lines[at : at + BATCH_LINES]
            # both readers search the batch as one text first
            batch, text = unlinked(batch, "\n".join(batch))
            add_nccl_lines(nccl, batch, text)
            add_torch_lines(torch, batch, text)
    return nccl, torch


def _read_in_parts(
    path: Path, cuts: list[int], max_bytes: int, too_big: str
) -> list[tuple[NcclLog, TorchLog]]:
    """The parts between ``cuts``, in order: the first read here, the others by forked
    workers (read here too when no process can be started)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ranges = list(itertools.pairwise(cuts))
    try:
        with ProcessPoolExecutor(len(ranges) - 1, mp_context=multiprocessing.get_context("fork")) as pool:  # fmt: skip
            later = [pool.submit(_read_part, path, a, b, max_bytes, too_big) for a, b in ranges[1:]]  # fmt: skip
            first = _read_part(path, *ranges[0], max_bytes, too_big)
            return [first, *(f.result() for f in later)]
    except (BrokenProcessPool, OSError):
        return [_read_part(path, a, b, max_bytes, too_big) for a, b in ranges]


def findings_doc(findings: list[Finding]) -> list[dict[str, Any]]:
    """Findings, most severe first, as JSON objects."""
    ordered = sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])
    return [{**asdict(f), "check": list(f.check), "evidence": list(f.evidence)} for f in ordered]


def exit_for(findings: list[Finding]) -> None:
    """Exit status 1 when any finding is a warning or worse."""
    if any(f.severity in ("warning", "critical") for f in findings):
        raise typer.Exit(int(ExitStatus.FINDINGS))
