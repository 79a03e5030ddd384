"""Launcher prefixes that mpirun and srun put in front of every line."""

from __future__ import annotations

import re

# `[1,0]<stdout>:` (mpirun --tag-output), `0: ` (srun -l), `rank3: `
LAUNCHER_RE = re.compile(r"^\s*(?:\[\d+(?:,\d+)*\]<\w+>:\s?|\d+:\s|rank\d+:\s*)")


def strip_launcher(line: str) -> str:
    """The line without a launcher prefix."""
    return LAUNCHER_RE.sub("", line, count=1)
