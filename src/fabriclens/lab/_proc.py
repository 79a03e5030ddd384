"""Which process is which: a PID alone is not an identity (PIDs are reused), so the lab records a
process's start time (/proc/PID/stat field 22, clock ticks since boot) and its network namespace
(the inode of /proc/PID/ns/net) when it starts it, and signals it only while all of them, and its
command line, still match. A namespace is identified by the inode of /run/netns/NAME likewise.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NETNS_DIR = Path("/run/netns")


@dataclass(frozen=True)
class ProcessId:
    """A process as the lab recorded it when it started it."""

    pid: int
    start_ticks: int  # /proc/PID/stat field 22
    netns_inode: int  # inode of /proc/PID/ns/net

    def to_json(self) -> dict[str, int]:
        """State JSON."""
        return {"pid": self.pid, "start_ticks": self.start_ticks, "netns_inode": self.netns_inode}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessId:
        """Inverse of :meth:`to_json` (KeyError/TypeError/ValueError when malformed)."""
        return cls(int(data["pid"]), int(data["start_ticks"]), int(data["netns_inode"]))


def parse_stat(text: str) -> tuple[str, int] | None:
    """(state letter, start time in ticks) from the text of /proc/PID/stat. The command name
    (field 2) is in parentheses and may itself hold spaces and parentheses: split after the
    last ')'."""
    _, sep, rest = text.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 20:
        return None
    try:
        return fields[0], int(fields[19])  # fields 3 and 22
    except ValueError:
        return None


def start_ticks(pid: int) -> int | None:
    """A live process's start time in clock ticks after boot; None when gone or a zombie."""
    try:
        parsed = parse_stat(Path(f"/proc/{pid}/stat").read_text(errors="replace"))
    except OSError:
        return None
    if parsed is None or parsed[0] in ("Z", "X"):
        return None
    return parsed[1]


def netns_inode_of_pid(pid: int) -> int | None:
    """Inode of a process's network namespace; None when gone."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def netns_inode(name: str) -> int | None:
    """Inode of a named network namespace (/run/netns/NAME); None when there is none."""
    try:
        return os.stat(NETNS_DIR / name).st_ino
    except OSError:
        return None


def cmdline(pid: int) -> str:
    """A process's command line, arguments joined by spaces; '' when gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def identify(pid: int) -> ProcessId | None:
    """The identity of a live process, to record when the lab starts it."""
    ticks, inode = start_ticks(pid), netns_inode_of_pid(pid)
    if ticks is None or inode is None:
        return None
    return ProcessId(pid, ticks, inode)


def matches(rec: ProcessId, *must_contain: str) -> bool:
    """True while ``rec.pid`` is still the process recorded: same start time, same network
    namespace, and a command line holding each of ``must_contain``."""
    if start_ticks(rec.pid) != rec.start_ticks or netns_inode_of_pid(rec.pid) != rec.netns_inode:
        return False
    line = cmdline(rec.pid)
    return all(m in line for m in must_contain)


def in_netns(pid: int, inode: int) -> bool:
    """True while ``pid`` runs inside the namespace with that inode."""
    return netns_inode_of_pid(pid) == inode


def terminate(pid: int, still_ours: Any = None) -> bool:
    """SIGTERM, wait up to 2 s, then SIGKILL — only after ``still_ours()`` (when given) says the
    PID is still the process meant. Returns whether a signal was sent."""
    if still_ours is not None and not still_ours():
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return True
        if start_ticks(pid) is None:
            return True
        time.sleep(0.02)
    if still_ours is None or still_ours():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return True
