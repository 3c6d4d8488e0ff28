"""A progress bar (bytes, GB/s, ETA) on a terminal, ending in a one-line summary; silent when
stderr is not a TTY or with --quiet."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int | None, *, quiet: bool = False, label: str = "ciphergrid",
                 verb: str = "processed", device: str | None = None):
        self.total = total
        self.enabled = not quiet and sys.stderr.isatty()
        self.label = label
        self.verb = verb
        self.device = device
        self.done = 0
        self._p = None
        self._task = None
        self._t0 = 0.0

    def __enter__(self):
        self._t0 = time.perf_counter()
        if self.enabled:
            from rich.progress import (BarColumn, DownloadColumn, Progress as RP, TextColumn,
                                       TimeRemainingColumn, TransferSpeedColumn)

            # (bytes in binary units, as the summary line; speed in decimal, as its GB/s)
            self._p = RP(TextColumn("{task.description}"), BarColumn(),
                         DownloadColumn(binary_units=True), TransferSpeedColumn(), TimeRemainingColumn(), transient=True,
                         console=__import__("rich.console").console.Console(stderr=True))
            self._p.__enter__()
            self._task = self._p.add_task(self.label, total=self.total)
        return self

    def advance(self, n: int) -> None:
        self.done += n
        if self._p is not None:
            self._p.advance(self._task, n)

    def summary(self) -> str:
        """``encrypted 256.0 MiB in 0.42 s (0.64 GB/s) on cuda:0``."""
        dt = max(time.perf_counter() - self._t0, 1e-9)
        where = f" on {self.device}" if self.device else ""
        return (f"{self.verb} {_size(self.done)} in {dt:.2f} s ({self.done / dt / 1e9:.2f} GB/s)"
                f"{where}")

    def __exit__(self, exc_type, *rest):
        if self._p is not None:
            self._p.__exit__(exc_type, *rest)
            if exc_type is None:
                print(f"ciphergrid: {self.summary()}", file=sys.stderr)
        return False


def _size(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):.1f} {unit}"
    return f"{n} B"
