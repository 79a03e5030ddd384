"""PyTorch ProcessGroupNCCL watchdog / error output -> timed-out collectives per rank.

Handles the newer format (`[rank1]:[E626 ...] [Rank 1] Watchdog caught collective operation
timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=..., NumelOut=..., Timeout(ms)=600000)
ran for 600020 milliseconds before timing out.` and `last enqueued NCCL work: 811, last completed
NCCL work: 807`) and older ones without SeqNum or sizes. Unknown lines are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fabriclens.parse._prefix import strip_prefixes

RANK_RE = re.compile(r"\[Rank (\d+)\]|\[rank(\d+)\]")
WORK_RE = re.compile(r"WorkNCCL\((?P<body>(?:[^()]|\([^)]*\))*)\)")
FIELD_RE = re.compile(r"(\w+(?:\(ms\))?)=([^,]+)")
RAN_RE = re.compile(r"ran for (\d+) milliseconds")
MAX_TIMEOUTS = 10_000
MAX_RANKS = 100_000  # ranks whose progress is kept (a hostile log cannot grow it without end)
PROGRESS_RE = re.compile(
    r"last enqueued NCCL work:\s*(-?\d+),\s*last completed NCCL work:\s*(-?\d+)"
)


@dataclass(frozen=True)
class Timeout:
    """One watchdog timeout."""

    rank: int | None
    op: str | None
    seq: int | None
    numel: int | None
    timeout_s: float | None
    ran_s: float | None
    line: str


@dataclass
class TorchLog:
    """Timeouts and per-rank progress."""

    timeouts: list[Timeout] = field(default_factory=list)
    last_completed: dict[int, int] = field(default_factory=dict)  # rank -> last completed work
    last_enqueued: dict[int, int] = field(default_factory=dict)

    def extend(self, later: TorchLog) -> None:
        """Add what the next part of the same log says (read on its own)."""
        self.timeouts.extend(later.timeouts[: max(0, MAX_TIMEOUTS - len(self.timeouts))])
        for rank, work in later.last_completed.items():
            if rank in self.last_completed or len(self.last_completed) < MAX_RANKS:
                self.last_completed[rank] = work
                self.last_enqueued[rank] = later.last_enqueued[rank]


def _rank(line: str) -> int | None:
    m = RANK_RE.search(line)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def _num(fields: dict[str, str], key: str) -> int | None:
    value = fields.get(key, "")
    return int(value) if value.lstrip("-").isdigit() else None


def parse_torch_log(lines: str | Iterable[str], log: TorchLog | None = None) -> TorchLog:
    """Parse PyTorch NCCL watchdog output: its text, or its lines one by one, as a file streams
    them (adds to ``log`` when given)."""
    out = log or TorchLog()
    for raw in lines.splitlines() if isinstance(lines, str) else lines:
        add_torch_line(out, raw)
    return out


def add_torch_lines(out: TorchLog, lines: Sequence[str]) -> None:
    """Add a batch of lines (skipped at once when none holds the words read here)."""
    text = "\n".join(lines)
    if "Watchdog caught" in text or "last enqueued" in text:
        for raw in lines:
            add_torch_line(out, raw)


def add_torch_line(out: TorchLog, raw: str) -> None:
    """Add one line of PyTorch output to ``out``."""
    if "Watchdog caught" not in raw and "last enqueued" not in raw:
        return  # the only lines read here (stripping prefixes cannot make either appear)
    line = strip_prefixes(raw.rstrip()).strip()
    if "Watchdog caught collective operation timeout" in line:
        # a progress bar or another message can sit in front of PyTorch's text
        line = line[max(0, line.find("[E ", 0, line.find("Watchdog caught"))) :]
        fields: dict[str, str] = {}
        if (w := WORK_RE.search(line)) is not None:
            fields = {k: v.strip() for k, v in FIELD_RE.findall(w.group("body"))}
        ran = RAN_RE.search(line)
        timeout_ms = _num(fields, "Timeout(ms)")
        if len(out.timeouts) < MAX_TIMEOUTS:  # bounded memory on a huge log
            out.timeouts.append(
                Timeout(
                    rank=_rank(line) if _rank(line) is not None else _rank(raw),
                    op=fields.get("OpType"),
                    seq=_num(fields, "SeqNum"),
                    numel=_num(fields, "NumelIn"),
                    timeout_s=timeout_ms / 1000 if timeout_ms is not None else None,
                    ran_s=int(ran.group(1)) / 1000 if ran else None,
                    line=line,
                )
            )
    if (p := PROGRESS_RE.search(line)) is not None:
        rank = _rank(line) if _rank(line) is not None else _rank(raw)
        if rank is not None and (rank in out.last_completed or len(out.last_completed) < MAX_RANKS):
            out.last_enqueued[rank] = int(p.group(1))
            out.last_completed[rank] = int(p.group(2))
