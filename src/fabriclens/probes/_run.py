"""The one subprocess wrapper: argument lists only (never a shell), always a timeout."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command did: status, output, and how a human would type it."""

    argv: tuple[str, ...]
    returncode: int  # -1: could not start; -2: timed out
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """True when the command exited 0."""
        return self.returncode == 0

    @property
    def timed_out(self) -> bool:
        """True when the command ran past its timeout and was killed."""
        return self.returncode == -2

    @property
    def command(self) -> str:
        """The command line as a human would type it (for reports, never executed)."""
        import shlex

        return shlex.join(self.argv)


def run_command(
    argv: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S, input_text: str | None = None
) -> CommandResult:
    """Run ``argv`` (no shell) with a timeout; never raises for absent tools or time-outs."""
    args = tuple(str(a) for a in argv)
    try:
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            input=input_text,
            check=False,
        )
    except FileNotFoundError as exc:
        return CommandResult(args, -1, "", f"{args[0]}: not found ({exc.strerror})")
    except PermissionError as exc:
        return CommandResult(args, -1, "", f"{args[0]}: permission denied ({exc.strerror})")
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return CommandResult(args, -2, out, f"timed out after {timeout_s:g} s")
    return CommandResult(args, proc.returncode, proc.stdout, proc.stderr)
