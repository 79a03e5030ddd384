"""Errors and exit statuses, mapped to exit codes in exactly one place (the CLI)."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Process exit statuses shared by every command."""

    OK = 0
    FINDINGS = 1  # doctor / bench verdicts at warning or worse
    USAGE = 2  # bad input: one clear line on stderr, no traceback
    FAILURE = 3  # the tool itself failed


class FabricLensError(Exception):
    """Base class for errors the tool reports to the user."""

    exit_status = ExitStatus.FAILURE

    def __init__(self, problem: str, fix: str | None = None) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The one line shown to the user: the problem, then how to fix it."""
        return f"{self.problem} — {self.fix}" if self.fix else self.problem


class InputError(FabricLensError):
    """The user's input (a flag, a file, a name) is wrong; exit status 2."""

    exit_status = ExitStatus.USAGE
