"""The one pipeline: jobs in flight on a device's queues, whatever their kind.

Two kinds of job go through it: a block cipher's chunks (transfer/driver.py: a range of a
message through a mode kernel in a device slot) and an AEAD batch's pieces (transfer/batches.py:
whole messages as one engines.device_aead Job, in slices).  A job kind says what its jobs do;
this module owns their order, their overlap, their ends and their failures.  A kind has:

* ``stage(seq)``: job ``seq``'s host side and inputs on their way up (None: there is none);
  a failure here leaves nothing of that job held;
* ``launch(job, seq)``: its kernels and downloads enqueued (each waiting, on the device, for
  what it reads; the host waits for nothing);
* ``retire(job)``: the host waits for it, takes its results and releases what it holds (also
  when the wait fails);
* ``abort(job)``: after a failure, once every queue has drained: what it holds released (its
  key material wiped).

:class:`Lanes` are the queues (uploads, kernels taken in turn, downloads); :func:`fly` drives
jobs from one thread, at most ``window`` in flight; :func:`fly_threaded` stages and retires them
on worker threads while the calling thread only launches, in order.  Either way a failure or an
interrupt drains every queue before any job's host memory is released, and every job staged is
retired or aborted.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future


class Lanes:
    """A pipeline's queues on ``backend``: ``up`` (uploads), ``kernels`` (one or several, job
    ``seq`` on ``kernels[seq % len]``), ``down`` (downloads)."""

    __slots__ = ("b", "up", "kernels", "down")

    def __init__(self, backend, up, kernels, down):
        self.b = backend
        self.up, self.kernels, self.down = up, list(kernels), down

    def kernel(self, seq: int):
        """The kernel queue of job ``seq``."""
        return self.kernels[seq % len(self.kernels)]

    @property
    def queues(self) -> tuple:
        return (self.up, *self.kernels, self.down)

    def drain(self) -> None:
        """Every queue drained (``drain``)."""
        drain(self.b, *self.queues)


def drain(backend, *queues) -> None:
    """Let every copy and kernel enqueued on ``queues`` (None: skipped) end, errors ignored:
    after a failure, before host memory is released or reused and before key material is
    wiped (a kernel still queued could write it after the wipe)."""
    for q in queues:
        if q is None:
            continue
        try:
            backend.finish(q)
        except Exception:
            pass


def fly(kind, lanes: Lanes, count: int | None = None, *, window: int | None = None,
        full=None, ending=None) -> int:
    """Stage and launch jobs 0, 1, ... of ``kind`` from this thread (``count`` of them, or
    until ``stage`` returns None or a job whose ``last`` is true), at most ``window`` in
    flight (None: all): when it is full, ``full()`` and the oldest retired.  After the last
    launch, ``ending(jobs)`` (the jobs in flight, oldest first), then each retired, oldest
    first.  On any failure the lanes drain and every job in flight is aborted.  Returns the
    number of jobs launched."""
    flight: deque = deque()
    seq = 0
    try:
        while count is None or seq < count:
            if window is not None and len(flight) >= window:
                if full is not None:
                    full()
                kind.retire(flight.popleft())
            job = kind.stage(seq)
            if job is None:
                break
            flight.append(job)
            kind.launch(job, seq)
            seq += 1
            if getattr(job, "last", False):
                break
        if ending is not None:
            ending(list(flight))
        while flight:
            job = flight.popleft()
            kind.retire(job)
    except BaseException:
        lanes.drain()
        for job in flight:
            kind.abort(job)
        raise
    return seq


def fly_threaded(kind, lanes: Lanes, *, permits: int, prep, fin,
                 abort_wait: float | None = None) -> int:
    """Stage jobs on the ``prep`` workers and retire them on the ``fin`` workers
    (transfer.workers.Workers), while this thread launches them in order; at most ``permits``
    jobs between the start of their staging and the end of their retiring (a permit frees a
    staging buffer or host pages for reuse).  On a failure: the jobs staged but not launched
    aborted (a staging still running waited for up to ``abort_wait`` seconds), the lanes
    drained, the retirings under way waited for.  Returns the number of jobs launched."""
    sem = threading.Semaphore(permits)
    pending: deque[Future] = deque()
    finishing: deque[Future] = deque()
    failed = False
    launched = 0

    def reap(block: bool = False) -> None:
        while finishing and (finishing[0].done() or block):
            e = finishing.popleft().exception()
            if e is not None:
                raise e

    def check_finishers() -> None:
        for f in list(finishing):
            if f.done() and f.exception() is not None:
                raise f.exception()

    def stage(i: int):
        try:
            job = kind.stage(i)
        except BaseException:
            sem.release()
            raise
        if job is None:
            sem.release()
        return job

    def retire(job) -> None:
        try:
            kind.retire(job)
        finally:
            sem.release()

    i = 0
    stop = False
    try:
        while True:
            while not stop:
                if pending:
                    if not sem.acquire(blocking=False):
                        break
                else:
                    while not sem.acquire(timeout=0.05):
                        check_finishers()
                pending.append(prep.submit(stage, i))
                i += 1
            if not pending:
                break
            job = pending.popleft().result()
            if job is None:
                stop = True
                continue
            if getattr(job, "last", False):
                stop = True
            try:
                kind.launch(job, launched)
            except BaseException:
                kind.abort(job)
                sem.release()
                raise
            launched += 1
            finishing.append(fin.submit(retire, job))
            reap()
        reap(block=True)
    except BaseException:
        failed = True
        raise
    finally:
        if failed:
            for f in pending:
                if not f.cancel():
                    try:
                        job = f.result(timeout=abort_wait)
                        if job is not None:
                            kind.abort(job)
                    except BaseException:
                        pass
            lanes.drain()
            for f in finishing:
                try:
                    f.result(timeout=30)
                except BaseException:
                    pass
    return launched
