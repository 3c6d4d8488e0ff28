"""One scheduled run (``Run``): a piece of work's units dealt to the member engines' workers --
a first share each by expected speed, then a self-scheduled tail from one queue -- a watchdog
that declares hung ranges, failed or hung ranges run again by the others, every range committed
only while still its worker's; what happened in a ``SchedulerStats``.  A job the calibration
judges better run by one member alone (``speeds.choose``) is dealt to that member whole, the
others standing by: they take ranges only once it has failed or hung.
"""

from __future__ import annotations

import threading
import time
import warnings
from dataclasses import dataclass, field

from ...errors import DeviceError, EngineFailureWarning
from ...settings import injected_faults
from .speeds import Choice, choose, expected_speed, judged, record, speed_key

#: a range running longer than this many times its expected time (and HANG_MIN_S) is hung;
#: an engine not yet measured in this process (its first range may build its kernels) gets
#: HANG_UNMEASURED_S at least
HANG_FACTOR = 4.0
HANG_MIN_S = 2.0
HANG_UNMEASURED_S = 60.0
#: ... and an engine measured only by earlier processes, at its first range in this one (that range
#: sets up its session: keys, kernels, pipeline buffers), this
HANG_COLD_S = 10.0
#: how long an injected hang lasts
HANG_INJECTED_S = 30.0


@dataclass
class EngineStats:
    spec: str
    bytes: int = 0               # committed
    ranges: int = 0
    seconds: float = 0.0         # busy time of its worker
    failed: str | None = None    # why it stopped taking ranges (an error, a hang)


@dataclass
class SchedulerStats:
    """What a scheduled run did: per engine (``engines``: spec -> EngineStats), the bytes run
    again after a failure (``rework_bytes``), the failures (``failures``: messages); how the
    last scheduled job ran and why (``choice``: together, or ``alone`` on one member because
    together was slower; "" for a job too small to judge)."""

    engines: dict = field(default_factory=dict)
    rework_bytes: int = 0
    failures: list = field(default_factory=list)
    seconds: float = 0.0
    choice: str = ""
    alone: str | None = None

    def ran(self, spec: str, nbytes: int, seconds: float) -> None:
        """One engine ran ``nbytes`` as one range (an unscheduled run)."""
        es = self.engines.setdefault(spec, EngineStats(spec))
        es.bytes += nbytes
        es.ranges += 1
        es.seconds += seconds
        self.seconds += seconds

    def share(self) -> dict:
        """Each engine's share of the committed bytes."""
        total = sum(e.bytes for e in self.engines.values()) or 1
        return {s: e.bytes / total for s, e in self.engines.items()}


class Run:
    """One scheduled piece of work over the members: the ranges (of ``work``'s units), the
    workers, the watchdog."""

    def __init__(self, work, members, stats, fence: str, rt):
        self.w, self.members, self.stats, self.rt = work, members, stats, rt
        self.n = work.n
        self.total = work.weight(0, work.n)
        self.fence = "copy" if work.in_place else fence
        self.cv = threading.Condition()
        self.queue: list = []          # ranges (a, b) waiting, the first taken first
        self.owner: dict = {}          # range -> (worker index, started at, seconds before it is hung)
        self.done = 0                  # units committed
        self.error: BaseException | None = None
        self.faults = injected_faults()
        # members on hosts of their own (``apart``: an MPI job's ranks) share no memory: together
        self.choice = Choice() if any(getattr(e, "apart", False) for e in members) else \
            choose(rt, work, members, self.fence == "copy")
        # the worker that runs the job by itself (the others stand by), or None: together
        self.alone = next((i for i, e in enumerate(members) if e.info.spec == self.choice.alone),
                          None)
        self.dead: set = set()         # workers that take no more ranges
        self.shares = self._shares()

    def _speed(self, i: int) -> tuple[float, bool]:
        eng = self.members[i]
        return expected_speed(eng, self.w.name, self.w.encrypt, self.rt, self.w.path(eng))

    def _shares(self) -> list:
        """Each worker's first range, by expected speed, for 1 - TAIL of the bytes; the rest
        queued as the tail."""
        if self.alone is not None:   # (all of it, one range where the work's cut allows)
            out = [None] * len(self.members)
            end = self.w.cut(0, self.n, self.total)
            out[self.alone] = (0, end)
            self._tail(end, self.n)
            return out
        speeds = [self._speed(i)[0] for i in range(len(self.members))]
        head = int(self.total * (1 - self.w.tail_share())) if len(self.members) > 1 else 0
        out, pos = [], 0
        for sp in speeds:
            size = int(head * sp / sum(speeds))
            end = self.w.cut(pos, self.n, size) if size >= self.w.grain and pos < self.n else pos
            out.append((pos, end) if end > pos else None)
            pos = end
        self._tail(pos, self.n)
        return out

    def _tail(self, a: int, b: int) -> None:
        """Queue [a, b) as pieces shrinking from 1/(2 x engines) of it down to the grain."""
        k = 1 if self.alone is not None else max(1, len(self.members))
        while a < b:
            end = self.w.cut(a, b, self.w.weight(a, b) // (2 * k))
            self.queue.append((a, end))
            a = end

    # -- the workers ---------------------------------------------------------------------------
    def go(self) -> None:
        t0 = time.perf_counter()
        for e in self.members:
            self.stats.engines.setdefault(e.info.spec, EngineStats(e.info.spec))
        self.stats.choice, self.stats.alone = self.choice.why, self.choice.alone
        threads = [threading.Thread(target=self._worker, args=(i,), daemon=True,
                                    name=f"ciphergrid-sched-{e.info.spec}")
                   for i, e in enumerate(self.members)]
        for t in threads:
            t.start()
        try:
            self._watch(threads)
        except BaseException:
            with self.cv:
                self.error = self.error or KeyboardInterrupt()
                self.cv.notify_all()
            raise
        finally:
            took = time.perf_counter() - t0
            self.stats.seconds += took
        if self.error is not None:
            raise self.error
        if not self.stats.failures:
            judged(self.rt, self.choice, took)
        if self.stats.failures:
            warnings.warn("ciphergrid: " + "; ".join(self.stats.failures)
                          + f" ({self.stats.rework_bytes} bytes run again elsewhere; the output is whole)",
                          EngineFailureWarning, stacklevel=5)

    def _take(self, i: int):
        """The next range for worker ``i`` (its share first), or None when there is none left.
        From the queue a worker takes at most what it runs in the time all the live workers
        need for everything queued (at the speeds expected of them): a slow engine takes a
        small piece, or none, and never holds the job's end."""
        with self.cv:
            while True:
                if self.error is not None or i in self.dead:
                    return None
                if self._standing_by(i):   # (until the one running alone fails or hangs)
                    if self.queue or self.owner or any(x is not None for x in self.shares):
                        self.cv.wait(0.05)
                        continue
                    return None
                share = self.shares[i]
                if share is not None:
                    self.shares[i] = None
                    rng = share
                elif self.queue:
                    a, b = self.queue[0]
                    allow = self._allowance(i)
                    if allow < self.w.grain and len(self.dead) < len(self.members) - 1:
                        if self.owner:        # (others are working: leave it to them)
                            self.cv.wait(0.05)
                            continue
                        allow = self.w.weight(a, b)   # (nobody else is: take it anyway)
                    cut = self.w.cut(a, b, allow)
                    rng = (a, cut)
                    if cut < b:
                        self.queue[0] = (cut, b)
                    else:
                        self.queue.pop(0)
                elif self.owner or any(x is not None for x in self.shares):
                    # nothing queued, ranges still running or not yet started: wait (one may
                    # come back)
                    self.cv.wait(0.05)
                    continue
                else:
                    return None
                speed, measured = self._speed(i)
                eng = self.members[i]
                warm = speed_key(eng, self.w.name, self.w.encrypt, self.w.path(eng)) in \
                    self.rt.calibration.get("warm", ())
                least = HANG_UNMEASURED_S if not measured else HANG_MIN_S if warm else HANG_COLD_S
                limit = max(least, HANG_FACTOR * self.w.weight(*rng) / speed)
                self.owner[rng] = (i, time.monotonic(), limit)
                return rng

    def _standing_by(self, i: int) -> bool:
        """(under the lock) Whether worker ``i`` waits while another runs the job alone."""
        return self.alone is not None and i != self.alone and self.alone not in self.dead

    def _allowance(self, i: int) -> int:
        """Bytes worker ``i`` can run while the live workers run everything queued."""
        live = [j for j in range(len(self.members)) if j not in self.dead and not self._standing_by(j)]
        speeds = {j: self._speed(j)[0] for j in live}
        queued = sum(self.w.weight(a, b) for a, b in self.queue)
        return int(queued * speeds.get(i, 0) / (sum(speeds.values()) or 1))

    def _worker(self, i: int) -> None:
        eng = self.members[i]
        es = self.stats.engines[eng.info.spec]
        fault = self.faults.get(eng.info.spec)
        ran = 0
        while True:
            rng = self._take(i)
            if rng is None:
                return
            a, b = rng
            nbytes = self.w.weight(a, b)
            try:
                if fault is not None and ran + nbytes > fault[1]:
                    if fault[0] == "fail":
                        raise DeviceError(f"injected failure (CIPHERGRID_FAULT) after {ran} bytes")
                    time.sleep(HANG_INJECTED_S)
                    raise DeviceError("injected hang (CIPHERGRID_FAULT) ended")
                out = self.w.buffer(eng, a, b) if self.fence == "copy" else None
                t0 = time.perf_counter()
                self.w.run(eng, a, b, out)
                dt = time.perf_counter() - t0
                ran += nbytes
            except BaseException as e:  # this engine takes no more ranges; the range goes back
                self._failed(i, rng, f"{eng.info.spec} failed: {_brief(e)}",
                             fatal=not isinstance(e, Exception))
                return
            with self.cv:   # commit: only a range still this worker's (not declared hung)
                mine = (self.owner.get(rng, (None,))[0] == i and i not in self.dead
                        and self.error is None)
                if mine:
                    del self.owner[rng]
            if not mine:
                return
            if out is not None:
                self.w.commit(a, b, out)
            with self.cv:
                self.done += b - a
                es.bytes += nbytes
                es.ranges += 1
                es.seconds += dt
                self.cv.notify_all()
            record(self.rt, eng, self.w.name, self.w.encrypt, nbytes, dt, self.w.path(eng),
                   self.w.grain)

    def _requeue(self, i: int, rng, why: str) -> None:
        """(under the lock) Worker ``i`` takes no more ranges; ``rng``, if still its, goes back."""
        self.dead.add(i)
        self.stats.engines[self.members[i].info.spec].failed = why
        self.stats.failures.append(why)
        if self.owner.get(rng, (None,))[0] == i:
            del self.owner[rng]
            self.queue.insert(0, rng)
            self.stats.rework_bytes += self.w.weight(*rng)
        if len(self.dead) == len(self.members):
            self.error = self.error or DeviceError(
                "every engine failed: " + "; ".join(self.stats.failures))
        self.cv.notify_all()

    def _failed(self, i: int, rng, why: str, fatal: bool = False) -> None:
        with self.cv:
            if fatal:
                self.error = self.error or DeviceError(why)
            self._requeue(i, rng, why)

    def _watch(self, threads) -> None:
        """Wait until every unit is committed (or an error), declaring hung ranges on the way."""
        with self.cv:
            while self.done < self.n and self.error is None:
                self.cv.wait(0.02)
                if self.error is not None or self.done >= self.n:
                    break                       # (set while waiting: the workers' own word)
                if not any(t.is_alive() for t in threads):
                    self.error = DeviceError(   # (a safety net: the workers wait for each other)
                        f"the scheduler's workers ended with {self.n - self.done} units not run")
                    break
                now = time.monotonic()
                for rng, (i, started, limit) in list(self.owner.items()):
                    # (never the last engine standing: nobody would run its range instead)
                    if now - started > limit and len(self.dead) < len(self.members) - 1:
                        self._requeue(i, rng, f"{self.members[i].info.spec} hung: a range of "
                                              f"{self.w.weight(*rng)} bytes ran {now - started:.2f} s "
                                              f"(limit {limit:.2f} s)")


def _brief(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:200]
