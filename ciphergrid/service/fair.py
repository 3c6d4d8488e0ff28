"""Fairness between the service's jobs: bytes shared by weight (``weight`` in the policy).

Each job is cut into slices (a stream: its chunks as they are done; a buffer: SLICE bytes at a
time) and asks for its turn before each (:meth:`Fair.take`).  The rule is deficit round-robin's
in virtual time: a job's clock advances by ``bytes / weight`` for what it ran, and a job may run
only while its clock is at most QUANTUM ahead of the slowest competing job's.  So over any stretch
in which several jobs compete, each gets bytes in proportion to its weight (two equal clients:
half each), and a new job -- a small request arriving behind another client's 100 GiB job --
starts at the others' clock and runs at once.

A job that has not asked for a turn for IDLE_S (it waits for its input: a slow pipe) does not
hold the others back, and when it comes back it gets no more than one quantum of credit.
"""

from __future__ import annotations

import threading
import time

#: bytes (at weight 1) a job may run ahead of the slowest competing job
QUANTUM = 64 << 20
#: a job silent for this long is not competing (it waits for its input or its reader)
IDLE_S = 0.25
#: a buffer job's slice (bytes): how often it asks for its turn
SLICE = 64 << 20


class Fair:
    def __init__(self, quantum: int = QUANTUM, idle_s: float = IDLE_S):
        self.quantum, self.idle_s = quantum, idle_s
        self.cv = threading.Condition()
        self.jobs: dict = {}     # job -> [weight, virtual clock, last seen]

    def join(self, job, weight: float) -> None:
        with self.cv:
            now = time.monotonic()
            live = self._competing(None, now)
            self.jobs[job] = [float(weight), min(live) if live else 0.0, now]

    def leave(self, job) -> None:
        with self.cv:
            self.jobs.pop(job, None)
            self.cv.notify_all()

    def _competing(self, job, now) -> list:
        return [vt for k, (w, vt, seen) in self.jobs.items() if k is not job and now - seen < self.idle_s]

    def take(self, job, nbytes: int) -> float:
        """Wait for ``job``'s turn to run ``nbytes``, then count them; the seconds waited."""
        t0 = time.monotonic()
        with self.cv:
            me = self.jobs[job]
            others = self._competing(job, t0)
            if others and t0 - me[2] >= self.idle_s:   # (back from idling: one quantum of credit)
                me[1] = max(me[1], min(others) - self.quantum)
            while True:
                now = time.monotonic()
                me[2] = now
                others = self._competing(job, now)
                if not others or me[1] <= min(others) + self.quantum:
                    break
                self.cv.wait(0.02)
            me[1] += nbytes / me[0]
            me[2] = time.monotonic()
            self.cv.notify_all()
        return time.monotonic() - t0
