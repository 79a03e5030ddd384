"""nccl-tests output (all_reduce_perf, all_gather_perf, ...) -> typed rows.

Handles what real logs contain: launcher prefixes (`[1,0]<stdout>:` from mpirun
--tag-output, `0: ` from srun -l, `rank0:`), the current 13-column layout (size count type redop
root, then time algbw busbw #wrong twice), older layouts without `redop`/`root`, `N/A` in
#wrong, and the `#  Rank N Group G Pid P on HOST device D [BUS] NAME` lines that tell how many
ranks ran on which hosts and GPUs. Lines it does not recognise are counted, never fatal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PREFIX_RE = re.compile(
    r"^\s*(?:\[\d+(?:,\d+)*\]<\w+>:|\d+:\s|rank\d+:\s*|\S+?:\s+(?=\s*\d+\s+\d+\s))"
)
RANK_RE = re.compile(
    r"#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.+?)\s*$"
)
OP_RE = re.compile(
    r"(all_reduce|all_gather|reduce_scatter|alltoall|all_to_all|broadcast|sendrecv|send_recv|reduce|gather|scatter|hypercube)(?:_perf)?",
    re.I,
)
OPS = {"alltoall": "all_to_all", "sendrecv": "send_recv"}
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

    @property
    def best_busbw_GBps(self) -> float:
        """The better of out-of-place and in-place bus bandwidth."""
        return max(self.busbw_GBps, self.inplace_busbw_GBps or 0.0)


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

    @property
    def world_size(self) -> int:
        """Ranks listed in the header (0 when the header is missing)."""
        return len(self.ranks)

    @property
    def hosts(self) -> list[str]:
        """Distinct hosts, in rank order."""
        return list(dict.fromkeys(h for h, _, _ in (self.ranks[r] for r in sorted(self.ranks))))

    @property
    def gpu_names(self) -> list[str]:
        """Distinct GPU names."""
        return list(dict.fromkeys(name for _, _, name in self.ranks.values()))


def _strip_prefix(line: str) -> str:
    if line.lstrip().startswith("#"):
        return line.lstrip()
    return PREFIX_RE.sub("", line, count=1).lstrip()


def _float(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


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
    if len(rest) >= 9 or len(rest) == 5:  # root present
        rest = rest[1:]
    if len(rest) < 4:
        return None
    values = [_float(t) for t in rest[:3]]
    if any(v is None for v in values):
        return None
    wrong = None if rest[3].upper() == "N/A" else int(_float(rest[3]) or 0)
    inplace = [_float(t) for t in rest[4:7]] if len(rest) >= 7 else [None, None, None]
    t, a, b = (float(v) for v in values)  # type: ignore[arg-type]
    return Row(
        size, count, dtype, t, a, b, wrong,
        inplace_time_us=inplace[0], inplace_algbw_GBps=inplace[1], inplace_busbw_GBps=inplace[2],
        reduces=reduces,
    )  # fmt: skip


def parse_nccl_tests(text: str) -> NcclTestsRun:
    """Parse nccl-tests output; unknown lines are counted in ``unparsed_lines``."""
    run = NcclTestsRun()
    for raw in text.splitlines():
        line = _strip_prefix(raw.rstrip())
        if not line.strip():
            continue
        if line.startswith("#"):
            rank = RANK_RE.match(line)
            if rank:
                run.ranks[int(rank.group(1))] = (rank.group(2), int(rank.group(3)), rank.group(4))
            elif "Avg bus bandwidth" in line:
                value = _float(line.split(":")[-1].strip())
                run.avg_busbw_GBps = value
            elif "Out of bounds values" in line:
                run.out_of_bounds = line.split(":", 1)[-1].strip()
            elif run.op is None and (m := OP_RE.search(line)):
                run.op = OPS.get(m.group(1).lower(), m.group(1).lower())
            continue
        row = _parse_row(line.split())
        if row is not None:
            run.rows.append(row)
        else:
            if run.op is None and (m := OP_RE.search(line)):
                run.op = OPS.get(m.group(1).lower(), m.group(1).lower())
            run.unparsed_lines += 1
    return run
