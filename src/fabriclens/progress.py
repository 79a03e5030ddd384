"""Progress as an observer: a long operation reports how far it is through a callback its caller
passes, and never prints. The CLI turns the reports into a bar on a terminal's stderr.

A ``Progress`` is called ``progress(done, total, doing)``: ``done`` of ``total`` steps are finished
and ``doing`` names the step starting now; a last call with ``done == total`` and ``doing == ""``
says the operation is over. Counts are absolute, so an operation that skips steps (a peer that
does not answer needs no path-MTU probe) jumps ahead instead of leaving the count short.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, doing: str) -> None:
    """The observer that ignores every report."""
    return None
