"""PyTorch ProcessGroupNCCL watchdog / error output -> timed-out collectives per rank.

Handles the newer format (`[rank1]:[E626 ...] [Rank 1] Watchdog caught collective operation
timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=..., NumelOut=..., Timeout(ms)=600000)
ran for 600020 milliseconds before timing out.` and `last enqueued NCCL work: 811, last completed
NCCL work: 807`) and older ones without SeqNum or sizes. Unknown lines are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from fabriclens.parse._prefix import strip_prefixes, unlinked
from fabriclens.parse.nccl_log import BATCH_LINES, batched

RANK_RE = re.compile(r"\[Rank (\d+)\]|\[rank(\d+)\]")
# the rank inside its process group, and the group: "[Rank 1]" after a "[rank13]:" prefix (PyTorch
# 2.2+ prints the global rank first), "[PG 3 Rank 5]", "[PG ID 11 PG GUID 119 Rank 1]"
GROUP_RANK_RE = re.compile(
    r"\[(?:PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>\d+))?(?:\([^)\]]{0,80}\))? )?Rank (?P<rank>\d+)\]"
)
GLOBAL_PREFIX_RE = re.compile(r"\[rank(\d+)\]:")
# the watchdog's own stack frame: present where a log keeps only the C++ trace of a timeout
TIMEOUT_FRAME = "ProcessGroupNCCL::WorkNCCL::checkTimeout"
# the closing parenthesis is optional: a pasted log wraps long lines ("Timeo" / "ut(ms)=600000)"),
# and the fields before the break still name the collective
WORK_RE = re.compile(r"WorkNCCL\((?P<body>(?:[^()]|\([^)]*\))*)\)?")
WORK_CLOSED_RE = re.compile(r"WorkNCCL\((?:[^()]|\([^)]*\))*\)")
FIELD_RE = re.compile(r"(\w+(?:\(ms\))?)=([^,]+)")
RAN_RE = re.compile(r"ran for (\d+) milliseconds")
MAX_TIMEOUTS = 10_000
MAX_RANKS = 100_000  # ranks whose progress is kept (a hostile log cannot grow it without end)
MAX_FRAMES = 10  # watchdog stack frames kept as evidence
PROGRESS_RE = re.compile(
    r"last enqueued NCCL work:\s*(-?\d+),\s*last completed NCCL work:\s*(-?\d+)"
)

# the prefix of a vLLM worker's lines: Ray's `(RayWorkerVllm pid=5085)`, `(RayWorkerWrapper
# pid=...)`, vLLM's multiprocessing `(VllmWorkerProcess pid=...)` and V1's `(VllmWorker rank=1 ...)`
VLLM_WORKER_RE = re.compile(r"\((?:RayWorkerVllm|RayWorkerWrapper|VllmWorkerProcess|VllmWorker)\b")


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
    group_rank: int | None = None  # the rank inside its process group, where the line tells both
    vllm_worker: bool = False  # printed by a vLLM worker process (Ray's or vLLM's own prefix)


@dataclass
class TorchLog:
    """Timeouts and per-rank progress."""

    timeouts: list[Timeout] = field(default_factory=list)
    last_completed: dict[int, int] = field(default_factory=dict)  # rank -> last completed work
    last_enqueued: dict[int, int] = field(default_factory=dict)
    groups: dict[int, str] = field(default_factory=dict)  # rank -> its progress line's group
    group_ranks: dict[int, int] = field(default_factory=dict)  # rank -> its rank in that group
    timeout_frames: list[str] = field(default_factory=list)  # the watchdog's stack frames seen
    # for joining parts read on their own: the first line read (the part before may end with a
    # watchdog line wrapped into it), and a timeout read from a last line cut short (its index
    # and line), to be read again with the line that follows
    first_line: str | None = None
    open_end: int | None = None
    open_raw: str = ""

    def extend(self, later: TorchLog) -> None:
        """Add what the next part of the same log says (read on its own)."""
        if self.open_end is not None and later.first_line is not None:
            _close_wrapped(self, later.first_line)
        if self.first_line is None:
            self.first_line = later.first_line
        start = len(self.timeouts)
        self.timeouts.extend(later.timeouts[: max(0, MAX_TIMEOUTS - len(self.timeouts))])
        if later.open_end is not None and start + later.open_end < len(self.timeouts):
            self.open_end, self.open_raw = start + later.open_end, later.open_raw
        for rank, work in later.last_completed.items():
            if rank in self.last_completed or len(self.last_completed) < MAX_RANKS:
                self.last_completed[rank] = work
                self.last_enqueued[rank] = later.last_enqueued[rank]
                if rank in later.groups:
                    self.groups[rank] = later.groups[rank]
                if rank in later.group_ranks:
                    self.group_ranks[rank] = later.group_ranks[rank]
        self.timeout_frames.extend(
            later.timeout_frames[: max(0, MAX_FRAMES - len(self.timeout_frames))]
        )


def _rank(line: str) -> int | None:
    m = RANK_RE.search(line)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def _rank_of(raw: str, line: str) -> int | None:
    """The process's global rank: PyTorch's "[rankN]:" prefix where the raw line has one (the
    "[Rank n]" after it is the rank inside the process group), else the rank the text names."""
    m = GLOBAL_PREFIX_RE.search(raw)
    if m is not None:
        return int(m.group(1))
    rank = _rank(line)
    return rank if rank is not None else _rank(raw)


def _group_rank(line: str) -> tuple[str | None, int | None]:
    """The process group (its GUID, else its id) and the rank inside it, where the line says so:
    a "[PG ...]" marker, or a "[Rank n]" after a "[rankN]:" prefix (a bare "[Rank n]" of older
    PyTorch is the global rank, read by _rank)."""
    m = GROUP_RANK_RE.search(line)
    if m is None:
        return None, None
    if m.group("pg") is not None:
        return m.group("guid") or f"pg{m.group('pg')}", int(m.group("rank"))
    if GLOBAL_PREFIX_RE.search(line[: m.start()]):
        return None, int(m.group("rank"))
    return None, None


def _num(fields: dict[str, str], key: str) -> int | None:
    """A field's number; None when absent, or -1 printed as an unsigned 64-bit count (a coalesced
    group of operations has no one size: `NumelIn=18446744073709551615`)."""
    value = fields.get(key, "")
    number = int(value) if value.lstrip("-").isdigit() else None
    return None if number is None or number >= 2**63 or number < 0 else number


def parse_torch_log(lines: str | Iterable[str], log: TorchLog | None = None) -> TorchLog:
    """Parse PyTorch NCCL watchdog output: its text, or its lines one by one, as a file streams
    them (adds to ``log`` when given)."""
    out = log or TorchLog()
    for batch in batched(lines.splitlines() if isinstance(lines, str) else lines, BATCH_LINES):
        add_torch_lines(out, *unlinked(batch, "\n".join(batch)))
    return out


def add_torch_lines(out: TorchLog, lines: Sequence[str], text: str | None = None) -> None:
    """Add a batch of lines (skipped at once when none holds the words read here); ``text``:
    the lines joined by newlines, where the caller has it."""
    if not lines:
        return
    if out.first_line is None:
        out.first_line = lines[0]
    if out.open_end is not None:  # the last batch ended inside a wrapped watchdog line
        _close_wrapped(out, lines[0])
    text = "\n".join(lines) if text is None else text
    places = sorted(_places(text, ("Watchdog caught", "last enqueued", TIMEOUT_FRAME)))
    if not places:
        return
    if len(lines) != text.count("\n") + 1:  # a line holding a newline itself: one by one
        for raw in lines:
            add_torch_line(out, raw)
        return
    # only the lines holding one of the words: a line's number is the newlines before its word
    number, counted, last = 0, 0, -1
    for at in places:
        number += text.count("\n", counted, at)
        counted = at
        if number != last:
            raw = lines[number]
            cut = _cut_short(raw)
            if cut and number + 1 < len(lines):
                raw += lines[number + 1]  # wrapped at the terminal's width, inside a word
            before = len(out.timeouts)
            add_torch_line(out, raw)
            if cut and number + 1 == len(lines) and len(out.timeouts) > before:
                out.open_end, out.open_raw = before, raw  # its rest is in the next batch
            last = number


def _close_wrapped(out: TorchLog, rest: str) -> None:
    """Read again the timeout of a watchdog line cut short at the end of a batch or a part, with
    ``rest``, the line that follows it."""
    at, raw = out.open_end, out.open_raw
    out.open_end, out.open_raw = None, ""
    if at is None or at >= len(out.timeouts):
        return
    joined = TorchLog()
    add_torch_line(joined, raw + rest)
    if joined.timeouts:
        out.timeouts[at] = joined.timeouts[0]


def _cut_short(raw: str) -> bool:
    """A watchdog line whose `WorkNCCL(...)` does not close on it: a paste wrapped at the
    terminal's width (`..., OpTy` then `pe=BROADCAST, ...` on the next line)."""
    at = raw.find("WorkNCCL(")
    return at >= 0 and WORK_CLOSED_RE.match(raw, at) is None


def _places(text: str, words: Sequence[str]) -> Iterator[int]:
    """Where each of ``words`` stands in ``text``."""
    for word in words:
        at = text.find(word)
        while at >= 0:
            yield at
            at = text.find(word, at + len(word))


def _timeout(raw: str, line: str) -> Timeout:
    """The timeout a watchdog line reports (``line``: its text from PyTorch's `[E `)."""
    fields: dict[str, str] = {}
    if (w := WORK_RE.search(line)) is not None:
        fields = {k: v.strip() for k, v in FIELD_RE.findall(w.group("body"))}
    ran = RAN_RE.search(line)
    timeout_ms = _num(fields, "Timeout(ms)")
    return Timeout(
        rank=_rank_of(raw, line),
        op=fields.get("OpType"),
        seq=_num(fields, "SeqNum"),
        numel=_num(fields, "NumelIn"),
        timeout_s=timeout_ms / 1000 if timeout_ms is not None else None,
        ran_s=int(ran.group(1)) / 1000 if ran else None,
        line=line,
        group_rank=_group_rank(raw)[1],
        vllm_worker=VLLM_WORKER_RE.search(raw[: raw.find("Watchdog")]) is not None,
    )


def add_torch_line(out: TorchLog, raw: str) -> None:
    """Add one line of PyTorch output to ``out``."""
    if TIMEOUT_FRAME in raw:
        if len(out.timeout_frames) < MAX_FRAMES:
            out.timeout_frames.append(raw.strip()[:300])
        return
    if "Watchdog caught" not in raw and "last enqueued" not in raw:
        return  # the only lines read here (stripping prefixes cannot make either appear)
    line = strip_prefixes(raw.rstrip()).strip()
    if "Watchdog caught collective operation timeout" in line:
        # a progress bar or another message can sit in front of PyTorch's text
        line = line[max(0, line.find("[E ", 0, line.find("Watchdog caught"))) :]
        if len(out.timeouts) < MAX_TIMEOUTS:  # bounded memory (and time) on a huge log
            out.timeouts.append(_timeout(raw, line))
    if (p := PROGRESS_RE.search(line)) is not None:
        rank = _rank_of(raw, line)
        if rank is not None and (rank in out.last_completed or len(out.last_completed) < MAX_RANKS):
            out.last_enqueued[rank] = int(p.group(1))
            out.last_completed[rank] = int(p.group(2))
            group, group_rank = _group_rank(raw)
            if group is not None:
                out.groups[rank] = group
            if group_rank is not None:
                out.group_ranks[rank] = group_rank
