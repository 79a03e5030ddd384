"""nccl-tests output (all_reduce_perf, all_gather_perf, ...) -> typed rows.

Handles what real logs contain: launcher prefixes (`[1,0]<stdout>:` from mpirun
--tag-output, `0: ` from srun -l, `rank0:`, a `[0]` tag before each chunk of output, even inside a
row), a diff's `+` before each row (a table pasted from a README change), the current 13-column layout (size count type redop
root, then time algbw busbw #wrong twice), older layouts without `redop`/`root`, `N/A` in
#wrong, and the `#  Rank N Group G Pid P on HOST device D [BUS] NAME` lines that tell how many
ranks ran on which hosts and GPUs. Lines it does not recognise are counted, never fatal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabriclens.model.collectives import op_name

# (the host's spaces taken whole, `\s++`, before the look at the row: a `\s+` that gave them
# back one by one to a `\s*` in the look-ahead was quadratic on a line of spaces)
PREFIX_RE = re.compile(
    r"^\s*(?:\[\d+(?:,\d+)*\]<\w+>:|\d+:\s|rank\d+:\s*|\S+?:\s++(?=\d+\s+\d+\s))"
)
# current `#  Rank 0 Group 0 Pid 1 on host device 0 [0x1b] NAME` and old lines without `Group`
RANK_RE = re.compile(
    r"#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.+?)\s*$"
)
COMMAND_RE = re.compile(r"\b(\w+?)_perf(?:_mpi)?\b")
VERSION_RE = re.compile(
    r"nccl-tests version (\S+).*?nccl-library=(\d+)|NCCL version (\d+\.\d+\.\d+\S*)"
    r"|RCCL version\s*:?\s*(\d+\.\d+\.\d+\S*)"  # rccl-tests' header block
)
# NCCL's INFO line naming its network plugin, where a paste keeps NCCL_DEBUG=INFO output
NETWORK_RE = re.compile(r"NCCL INFO Using network (\S[^\r\n]{0,40}?)\s*$")
# the test's own failure line (common.h)
FAILURE_RE = re.compile(r"Test (?:CUDA|NCCL|HIP|RCCL) failure \S+ '[^']*'?")
# the ops as the tests' binaries, their headers (`# Collective test starting: all_reduce_perf`)
# and rccl-tests' banners (`#AllReduce RCCL Test`) spell them
OP_RE = re.compile(
    r"\b(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|send_?recv|reduce|gather"
    r"|scatter|hypercube)(?:_perf)?\b",
    re.I,
)
PLAIN_OP_RE = re.compile(
    r"\b(all_reduce|all_gather|reduce_scatter|alltoall|sendrecv|broadcast)\b", re.I
)
TYPES = {
    "float",
    "half",
    "double",
    "int8",
    "uint8",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "bfloat16",
    "fp8_e4m3",
    "fp8_e5m2",
    "int",
    "char",
}


@dataclass(frozen=True, slots=True)
class Row:
    """One message size: out-of-place and in-place results (in-place may be absent)."""

    size_bytes: int
    count: int
    dtype: str
    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    wrong: int | None  # None for N/A
    inplace_time_us: float | None = None
    inplace_algbw_GBps: float | None = None
    inplace_busbw_GBps: float | None = None
    reduces: bool = False  # the row names a reduction operator (sum, prod, max, ...)
    root: int | None = None  # the root column: a rank (broadcast, reduce, gather, scatter), -1
    # for the rest, None where the layout has no root column
    error: float | None = None  # old layouts: max numerical deviation instead of #wrong
    inplace_wrong: int | None = None

    @property
    def rooted(self) -> bool:
        """The row names a root rank: broadcast, reduce, gather or scatter."""
        return self.root is not None and self.root >= 0

    @property
    def best_busbw_GBps(self) -> float:
        """The better of out-of-place and in-place bus bandwidth."""
        return max(self.busbw_GBps, self.inplace_busbw_GBps or 0.0)


# Bounds a file of many runs pasted together cannot pass: one sweep is ~30 rows per op, one
# `#  Rank` line per GPU (the largest jobs have ~100,000)
MAX_ROWS = 10_000
MAX_RANK_LINES = 131_072
# Bus bandwidth no link delivers: 100 TB/s, some 50 times an NVLink 5 GPU's 1.8 TB/s. A row at or
# above it, or with a negative time or bandwidth, was edited or corrupted: it is counted
# (implausible_rows) and left out, never judged.
MAX_PLAUSIBLE_GBPS = 100_000.0


@dataclass
class NcclTestsRun:
    """Everything read from one nccl-tests log."""

    op: str | None = None
    rows: list[Row] = field(default_factory=list)
    ranks: dict[int, tuple[str, int, str]] = field(
        default_factory=dict
    )  # rank -> host, device, GPU name
    avg_busbw_GBps: float | None = None
    out_of_bounds: str | None = None
    unparsed_lines: int = 0
    headers: int = 0  # `# nThread` lines: more than one means separate runs were pasted together
    rank_lines: list[tuple[int, str, int, str]] = field(
        default_factory=list
    )  # rank, host, dev, bus id
    ops_seen: list[str] = field(default_factory=list)  # every op named by a command or header
    runs_after_rows: int = 0  # commands or headers that come after result rows (a second run)
    size_restarts: int = 0  # rows whose size is smaller than the row before (interleaved runs)
    cut_rows: int = 0  # rows that stop after the out-of-place columns
    elided: bool = False  # the poster replaced rows with `...`
    version: str | None = None
    transport: str | None = None  # `NCCL INFO Using network IB` / Socket / AWS Libfabric, if pasted
    # the test's own failure line (common.h: `host: Test CUDA failure common.cu:389 'an illegal
    # memory access was encountered'`, `Test NCCL failure ... 'unhandled system error / ...'`)
    failure: str | None = None
    has_error_column: bool = False  # the old `error` (float deviation) layout
    columns_seen: bool = False  # the `# size count type ... busbw` column header
    dropped_rows: int = 0  # result rows past MAX_ROWS (a file of many runs): counted only
    implausible_rows: int = 0  # rows with values no run prints (implausible): left out

    @property
    def world_size(self) -> int:
        """Ranks in the run: those the header lists, or more where a listed rank's number says so
        (a paste that keeps only the last `#  Rank 143 ...` line ran 144); 0 without a header."""
        return max(len(self.ranks), max(self.ranks, default=-1) + 1)

    @property
    def header_complete(self) -> bool:
        """Every rank of the run is listed (so its hosts are all the run's hosts)."""
        return len(self.ranks) == self.world_size

    @property
    def hosts(self) -> list[str]:
        """Distinct hosts, in rank order."""
        return list(dict.fromkeys(h for h, _, _ in (self.ranks[r] for r in sorted(self.ranks))))

    @property
    def gpu_names(self) -> list[str]:
        """Distinct GPU names."""
        return list(dict.fromkeys(name for _, _, name in self.ranks.values()))


# a diff's added line (`+   4194304 ...`, a table pasted from a README change)
DIFF_RE = re.compile(r"^\+(?=\s)")
# a rank tag (`[0]`) that a launcher puts before each chunk of output, so that it may also
# stand inside a row where the output was written in pieces (`... -1[0]    1626.5 ...`)
TAG_RE = re.compile(r"^\s*(\[\d+\])(?!<)\s?")


def _strip_prefix(line: str) -> str:
    if line.lstrip().startswith("#"):
        return line.lstrip()
    line = DIFF_RE.sub("", line, count=1)
    if (tag := TAG_RE.match(line)) is not None:
        line = line[tag.end() :].replace(tag.group(1), " ")
        if line.lstrip().startswith("#"):
            return line.lstrip()
    return PREFIX_RE.sub("", line, count=1).lstrip()


def _float(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _is_float_format(token: str) -> bool:
    return any(c in token for c in ".eE") and _float(token) is not None


def _parse_row(tokens: list[str]) -> Row | None:
    """A data row: size count type [redop [root]] time algbw busbw wrong [time algbw busbw wrong]."""
    if len(tokens) < 7 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    size, count, dtype = int(tokens[0]), int(tokens[1]), tokens[2]
    if dtype.lower() not in TYPES:
        return None
    rest = tokens[3:]
    # skip redop and root when present: redop is a word, root an integer (-1 when unused)
    reduces = False
    while rest and _float(rest[0]) is None and rest[0].upper() != "N/A":
        reduces = reduces or rest[0].lower() in ("sum", "prod", "max", "min", "avg", "premulsum")
        rest = rest[1:]
    numeric = [t for t in rest if _float(t) is not None or t.upper() == "N/A"]
    if len(numeric) != len(rest):
        return None
    root = None
    if len(rest) >= 9 or len(rest) == 5:  # root present (-1 when the op has none)
        root = int(_float(rest[0]) or 0)
        rest = rest[1:]
    if len(rest) < 4:
        return None
    values = [_float(t) for t in rest[:3]]
    if any(v is None for v in values):
        return None
    error, inplace_wrong = None, None
    if rest[3].upper() == "N/A":
        wrong = None
    elif _is_float_format(rest[3]):  # the old `error` column: a deviation, not a count
        wrong, error = None, _float(rest[3])
        if len(rest) >= 8 and _is_float_format(rest[7]):
            error = max(error or 0.0, _float(rest[7]) or 0.0)
    else:
        wrong = int(_float(rest[3]) or 0)
        if len(rest) >= 8 and rest[7].isdigit():
            inplace_wrong = int(rest[7])
    inplace = [_float(t) for t in rest[4:7]] if len(rest) >= 7 else [None, None, None]
    t, a, b = (float(v) for v in values)  # type: ignore[arg-type]
    return Row(
        size, count, dtype, t, a, b, wrong,
        inplace_time_us=inplace[0], inplace_algbw_GBps=inplace[1], inplace_busbw_GBps=inplace[2],
        reduces=reduces, root=root, error=error, inplace_wrong=inplace_wrong,
    )  # fmt: skip


def implausible(row: Row) -> bool:
    """Values no nccl-tests run prints: a negative time or bandwidth, a bus bandwidth at or above
    MAX_PLAUSIBLE_GBPS, or a time of zero beside a bus bandwidth (out-of-place or in-place). The
    algorithm bandwidth is not bounded: one rank's in-place call is a no-op that real runs print
    at millions of GB/s."""
    for time_us, algbw, busbw in (
        (row.time_us, row.algbw_GBps, row.busbw_GBps),
        (row.inplace_time_us, row.inplace_algbw_GBps, row.inplace_busbw_GBps),
    ):
        if any(v is not None and v < 0 for v in (time_us, algbw, busbw)):
            return True
        if busbw is not None and (busbw >= MAX_PLAUSIBLE_GBPS or (busbw > 0 and time_us == 0)):
            return True
    return False


def parse_nccl_tests(lines: str | Iterable[str]) -> NcclTestsRun:
    """Parse nccl-tests output (its text, or its lines one by one, as a file streams them);
    unknown lines are counted in ``unparsed_lines``."""
    run = NcclTestsRun()
    for raw in lines.splitlines() if isinstance(lines, str) else lines:
        line = _strip_prefix(raw.rstrip())
        if not line.strip():
            continue
        if (v := VERSION_RE.search(line)) is not None and run.version is None:
            run.version = (
                v.group(3)
                or (f"RCCL {v.group(4)}" if v.group(4) else None)
                or f"nccl-tests {v.group(1)}, NCCL library {v.group(2)}"
            )
        if "Using network" in line and (net := NETWORK_RE.search(line)) is not None:
            run.transport = run.transport or net.group(1)
        if run.failure is None and "failure" in line and (f := FAILURE_RE.search(line)) is not None:
            run.failure = f.group(0)[:300]
        if line.startswith("#"):
            rank = RANK_RE.match(line)
            if rank and len(run.rank_lines) < MAX_RANK_LINES:
                r, host, dev, bus, name = rank.groups()
                run.ranks[int(r)] = (host, int(dev), name)
                run.rank_lines.append((int(r), host, int(dev), bus))
            elif "Avg bus bandwidth" in line:
                value = _float(line.split(":")[-1].strip())
                run.avg_busbw_GBps = value
            elif "Out of bounds values" in line:
                run.out_of_bounds = line.split(":", 1)[-1].strip()
            elif "nThread" in line:
                run.headers += 1
                run.runs_after_rows += 1 if run.rows else 0
            elif "busbw" in line:
                run.columns_seen = True
                run.has_error_column = run.has_error_column or " error " in f" {line} "
            elif (m := COMMAND_RE.search(line)) is not None or (
                m := OP_RE.search(line)
            ) is not None:
                _op_seen(run, m.group(1), closing="test concluded" in line)
            continue
        if line.strip() in ("...", "…") or line.strip().startswith("..."):
            run.elided = True
            continue
        row = _parse_row(line.split())
        if row is not None and implausible(row):
            run.implausible_rows += 1
        elif row is not None:
            if run.rows and row.size_bytes < run.rows[-1].size_bytes:
                run.size_restarts += 1
            if row.inplace_busbw_GBps is None:
                run.cut_rows += 1
            if len(run.rows) < MAX_ROWS:
                run.rows.append(row)
            else:
                run.dropped_rows += 1
        else:
            # NCCL's INFO lines and their tuning tables (`Broadcast |  1  2 ...`) name every op
            m = COMMAND_RE.search(line) or (
                None if " INFO " in line or "|" in line else PLAIN_OP_RE.search(line)
            )
            if m is not None:
                if run.rows:
                    run.runs_after_rows += 1
                _op_seen(run, m.group(1))
            run.unparsed_lines += 1
    return run


def _op_seen(run: NcclTestsRun, word: str, closing: bool = False) -> None:
    """An op named by a command line or a header (`alltoall_perf`, `# Collective test starting: ...`);
    ``closing``: the footer `# Collective test concluded: ...`, which names the op of the rows
    above it (a paste may keep only that)."""
    m = OP_RE.fullmatch(word.lower()) or OP_RE.search(word.lower())
    if m is None:
        return
    op = op_name(m.group(1))
    if len(run.ops_seen) < MAX_RANK_LINES:
        run.ops_seen.append(op)
    if run.op is None and (not run.rows or closing):
        run.op = op
