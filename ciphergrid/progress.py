"""A progress bar (bytes, GB/s, ETA) on a terminal; silent when stderr is not a TTY or --quiet."""

from __future__ import annotations

import sys


class Progress:
    def __init__(self, total: int | None, *, quiet: bool = False, label: str = "ciphergrid"):
        self.total = total
        self.enabled = not quiet and sys.stderr.isatty()
        self.label = label
        self._p = None
        self._task = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import (BarColumn, DownloadColumn, Progress as RP, TextColumn,
                                       TimeRemainingColumn, TransferSpeedColumn)

            self._p = RP(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                         TransferSpeedColumn(), TimeRemainingColumn(), transient=True,
                         console=__import__("rich.console").console.Console(stderr=True))
            self._p.__enter__()
            self._task = self._p.add_task(self.label, total=self.total)
        return self

    def advance(self, n: int) -> None:
        if self._p is not None:
            self._p.advance(self._task, n)

    def __exit__(self, *exc):
        if self._p is not None:
            self._p.__exit__(*exc)
        return False
