"""Progress of a long benchmark on stderr: which row runs and how many are left.

Shown with rich, and only when stderr is a terminal; otherwise silent.  Loud messages (a failed
row) go through :meth:`Progress.log`, which always prints to stderr, above the bar when there is one.
"""

from __future__ import annotations

import sys


class Progress:
    def __init__(self, total: int, *, enabled: bool | None = None, stream=None):
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._rich = None
        self._task = None
        if enabled:
            try:
                from rich.console import Console
                from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                           TextColumn, TimeElapsedColumn)
            except ImportError:
                enabled = False
            else:
                self._rich = RichProgress(
                    TextColumn("[bold]bench[/bold]"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[left]} left"),
                    TimeElapsedColumn(),
                    TextColumn("{task.description}"),
                    console=Console(file=self.stream),
                    transient=True,
                )
        self.enabled = enabled

    def __enter__(self) -> "Progress":
        if self._rich is not None:
            self._rich.start()
            self._task = self._rich.add_task("", total=self.total, left=self.total)
        return self

    def __exit__(self, *exc) -> None:
        if self._rich is not None:
            self._rich.stop()

    def row(self, label: str) -> None:
        """Announce the row about to run."""
        if self._rich is not None:
            self._rich.update(self._task, description=label)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._rich is not None:
            self._rich.update(self._task, advance=n, left=max(self.total - self.done, 0))

    def log(self, message: str) -> None:
        """Always printed to stderr (above the progress bar when one is shown)."""
        if self._rich is not None:
            self._rich.console.print(message, markup=False, highlight=False)
        else:
            print(message, file=self.stream, flush=True)
