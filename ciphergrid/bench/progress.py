"""Progress of a long benchmark on stderr: which row runs, how many are left and the time left.

A bar (rich) when stderr is a terminal.  The time left is also said in a line of its own once
the first step ran (the steps left at the first step's pace) and, without a terminal, at most
every :data:`EVERY_S` seconds after that.  Loud messages (a failed row) go through
:meth:`Progress.log`, which always prints to stderr, above the bar when there is one.
"""

from __future__ import annotations

import sys
import time

from .preflight import duration_text

#: seconds between the lines that say the time left (no terminal)
EVERY_S = 60.0
#: no line for a time left shorter than this
QUIET_BELOW_S = 10.0


class Progress:
    def __init__(self, total: int, *, enabled: bool | None = None, stream=None, name: str = "bench"):
        self.total = total
        self.done = 0
        self.name = name
        self._t0 = time.monotonic()
        self._said = None   # when the time left was last said
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._rich = None
        self._task = None
        if enabled:
            try:
                from rich.console import Console
                from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)
            except ImportError:
                enabled = False
            else:
                self._rich = RichProgress(
                    TextColumn("[bold]bench[/bold]"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[left]} left"),
                    TimeElapsedColumn(),
                    TextColumn("eta"),
                    TimeRemainingColumn(),
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
        now = time.monotonic()
        if self._said is None or (self._rich is None and now - self._said >= EVERY_S):
            self._said = now
            text = self.eta_text(now)
            if text:
                self.log(text)

    def eta_text(self, now: float | None = None) -> str | None:
        """``bench api: 3 of 120 steps in 4.1 s; ~3 min left`` (None: nothing left to say)."""
        left = self.total - self.done
        if self.done <= 0 or left <= 0:
            return None
        spent = (now if now is not None else time.monotonic()) - self._t0
        eta = spent / self.done * left
        if eta < QUIET_BELOW_S:
            return None
        return (f"{self.name}: {self.done} of {self.total} steps in {spent:.1f} s; "
                f"{duration_text(eta)} left")

    def log(self, message: str) -> None:
        """Always printed to stderr (above the progress bar when one is shown)."""
        if self._rich is not None:
            self._rich.console.print(message, markup=False, highlight=False)
        else:
            print(message, file=self.stream, flush=True)
