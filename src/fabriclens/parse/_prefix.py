"""Prefixes that launchers, loggers and forum posts put in front of tool output.

Seen in real posts: Open MPI `[1,0]<stdout>:`, srun -l ` 0: `, torchrun `[rank3]:`, custom
launchers `[trainer0|0]:`, Ray `(pid=123) ` / `(RayWorker pid=123, ip=10.0.0.1) `, pdsh
`10.0.0.1: ` or `node01: ` before an NCCL line, timestamps `[2024-03-13 22:26:02] `, colour codes
and their residue `[0m `, a log viewer's line numbers `[80746] `, and `> ` quoting. They can be
stacked (`10.0.0.1: [rank0]: ...`), so they are removed repeatedly from the start of the line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# `++` and `*+` are possessive: what follows each can never be what the repeat would give up,
# so they match what `+` and `*` match, and a line failing an alternative fails it at once.
# Each alternative starts with one character or class (`\s\s*+`, not `\s+`), and those with
# the same first character are grouped: the engine skips an alternative whose first character
# differs without entering it. Of those, only the last (a pdsh host) can match where another
# does, and it stays last: the order changes no match, and the commonest (a time stamp) is
# tried first.
PREFIX_RE = re.compile(
    r"""^(?:
      \s\s*+
    | \x1b\[[0-9;]*+[A-Za-z]                              # colour escape
    | \[(?:
          \d{4}-\d\d-\d\d[ T][\d:.,]++\]\s?               # [2024-03-13 22:26:02]
        | [0-9;]*+m\s?                                    # colour residue without ESC
        | \d++(?:,\d++)*+\]<\w++>:\s?                     # mpirun --tag-output
        | (?:rank|trainer|worker|node|host)\s?\d++(?:\|\d+)?\]:\s?  # torchrun and friends
        | \d++\]\s(?=\S)(?!finished\ c|joined\ b)          # a viewer's line number [80746] (not a desync report's [7])
        )
    | \((?:\w+\s+)?pid=\d++(?:,\s*ip=[\w.:]+)?\)\s?       # Ray
    | rank\d++:\s*                                        # rank3:
    | \d(?:
          \d{3}-\d\d-\d\d[ T]\d\d:\d\d:[\d.,]++(?:Z|[+-]\d\d:?\d\d)?\s  # 2024-03-13T22:26:02.123Z
        | \d*+:\s(?!\[[\w/.-]{0,400}Horovod)              # srun -l (not Horovod's `1: [HorovodAllreduce_..`)
        | \d{0,2}\.(?:\d{1,3}\.){2}\d{1,3}:\s             # pdsh with addresses
        )
    | >\s?                                                # quoted in a post
    | [\w.-][\w.-]*+:\s+(?=[\w.-]*\s?:\w+:\d+\s)          # pdsh host: before host:pid:tid
    )""",
    re.X,
)
# the older name: launcher prefixes only; kept for callers outside the log readers
LAUNCHER_RE = PREFIX_RE
# Up to eight stacked prefixes in one match (each takes at least one character); nothing
# follows the repetition, so a match never backtracks into it: linear in the line
PREFIXES_RE = re.compile(r"(?:" + PREFIX_RE.pattern.removeprefix("^") + r"){1,8}", re.X)


# The same for a batch of lines joined by newlines: no whitespace class crosses a newline, and
# each line's rest is taken whole (a scan of every position for a line start costs several
# times more)
_LINE_REST_RE = re.compile(
    r"^(?:" + PREFIX_RE.pattern.removeprefix("^").replace(r"\s", r"[^\S\n]") + r"){0,8}(.*)",
    re.X | re.M,
)


def strip_prefixes_all(lines: Sequence[str]) -> list[str]:
    """``strip_prefixes(line.rstrip())`` of each line, in one pass of the pattern over the
    batch instead of one call per line (a batch with a line holding a newline: one by one)."""
    if not lines:
        return []
    rests: list[str] = _LINE_REST_RE.findall("\n".join([line.rstrip() for line in lines]))
    if len(rests) != len(lines):
        return [strip_prefixes(line.rstrip()) for line in lines]
    return rests


def strip_prefixes(line: str) -> str:
    """The line without any of the known prefixes (up to eight stacked ones)."""
    m = PREFIXES_RE.match(line)
    return line[m.end() :] if m else line


def strip_launcher(line: str) -> str:
    """The line without known prefixes (the name earlier readers use)."""
    return strip_prefixes(line)


# GitHub auto-links `file.cc:101` in a pasted log as a Markdown link, and a copy of the rendered
# post keeps its source: `transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN ...`
MARKDOWN_LINK_RE = re.compile(r"\[([^\]\s]{1,200})\]\(https?://[^)\s]{0,300}\)")


def unlink_markdown(lines: Sequence[str]) -> list[str]:
    """Lines with each Markdown link replaced by its text (callers look for `](http` first)."""
    return [MARKDOWN_LINK_RE.sub(r"\1", line) if "](http" in line else line for line in lines]


def unlinked(batch: list[str], text: str) -> tuple[list[str], str]:
    """A batch of log lines and their text (joined by newlines), its Markdown links read as their
    text: what every log reader is given (``logs`` and ``doctor --from`` alike)."""
    if "](http" not in text:
        return batch, text
    lines = unlink_markdown(batch)
    return lines, "\n".join(lines)
