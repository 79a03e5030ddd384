"""A progress bar on stderr while a long command runs, only where someone watches: stderr is a
terminal and the output is not JSON (pipes, files and --json stay clean). The library reports
through a ``fabriclens.progress.Progress`` callback; this draws it."""

from __future__ import annotations

import sys
from typing import Any

from fabriclens.progress import Progress


class NoProgress:
    """Draws nothing: the bar for pipes, files and --json."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self, name: str, total: int | None) -> int:
        """A new bar; returns its handle."""
        return 0

    def advance(self, task: int) -> None:
        return None

    def update(self, task: int, done: int, total: int, doing: str) -> None:
        return None

    def observer(self, name: str) -> Progress:
        """A ``Progress`` callback that draws one bar: "name done/total: doing"."""
        task: list[int] = []

        def report(done: int, total: int, doing: str) -> None:
            if not task:
                task.append(self.start(name, total))
            label = f"{name} {done}/{total}"
            self.update(task[0], done, total, f"{label}: {doing}" if doing else label)

        return report


class RichProgress(NoProgress):
    """rich's progress bar on stderr, removed once the command is done."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import Progress as Bar

        self.bar: Any = Bar(console=Console(stderr=True), transient=True)

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def start(self, name: str, total: int | None) -> int:
        return int(self.bar.add_task(name, total=total))

    def advance(self, task: int) -> None:
        self.bar.advance(task)

    def update(self, task: int, done: int, total: int, doing: str) -> None:
        self.bar.update(task, completed=done, total=total, description=doing)


def terminal_progress(json_out: bool) -> NoProgress:
    """A rich bar when stderr is a terminal and the output is not JSON; else one that draws nothing."""
    return RichProgress() if sys.stderr.isatty() and not json_out else NoProgress()
