"""The OpenSSL engine's threads: runs of jobs on a runtime's worker pool (runtime.Threads: its
budget, a new pool in a forked child) that share a cancel event, and the cut of a message into
parts for them.

A job is a callable ``job(cancel)`` that looks at ``cancel`` (a threading.Event) between steps of
at most :data:`STEP` bytes (:func:`check_cancel`); :func:`run_all` returns only when no job of its
run is inside OpenSSL any more, interrupted or not, so the callers may free the EVP contexts right
after.
"""

from __future__ import annotations

import threading

#: smallest amount of work (bytes) given to one thread; smaller inputs run in the calling thread
MIN_CHUNK = 1 << 20
#: bytes a worker processes between two looks at its run's cancel flag (an interrupt stops every
#: worker within one step, a small fraction of a second, before the contexts are freed)
STEP = 32 << 20


def host_threads(threads=None):
    """``threads`` (a runtime.Threads), else this thread's runtime's."""
    if threads is not None:
        return threads
    from ...runtime import current

    return current().threads


class Cancelled(Exception):
    """A worker stopped because its run was cancelled (another part failed, or an interrupt)."""


def check_cancel(cancel) -> None:
    """Raise :class:`Cancelled` when ``cancel`` (a threading.Event, or None) is set."""
    if cancel is not None and cancel.is_set():
        raise Cancelled()


class _Never:
    """The cancel event of a run with nobody to cancel it (one job): never set."""

    @staticmethod
    def is_set() -> bool:
        return False


NEVER = _Never()


def run_all(jobs, threads=None) -> None:
    """Run callables ``job(cancel)``: the first in this thread, the rest on the pool of
    ``threads`` (a runtime.Threads; None: this thread's runtime's); wait for all, then raise the
    first error.

    A failure or an interrupt (KeyboardInterrupt, a signal turned into an exception) sets
    ``cancel``: the other workers stop at their next step.  This returns only when no worker is
    inside OpenSSL any more, even when interrupted while waiting: the callers free the EVP
    contexts right after, and the interpreter may be about to exit."""
    if len(jobs) == 1:   # (no other worker to stop: an interrupt reaches this one directly)
        jobs[0](NEVER)
        return
    cancel = threading.Event()
    from concurrent.futures import wait

    pool = host_threads(threads).pool(len(jobs) - 1)
    futures = [pool.submit(j, cancel) for j in jobs[1:]]
    first_exc = None
    try:
        jobs[0](cancel)
    except BaseException as e:  # noqa: BLE001 - re-raised after the others stopped
        first_exc = e
        cancel.set()
    while True:
        try:
            wait(futures)
            break
        except BaseException as e:  # noqa: BLE001 - interrupted while waiting: wait again
            cancel.set()
            if first_exc is None:
                first_exc = e
    if first_exc is not None:
        raise first_exc
    for f in futures:
        f.result()


def split(n: int, unit: int, threads: int, min_chunk: int | None = None) -> list[tuple[int, int]]:
    """Cut n bytes into (offset, length) parts on ``unit`` boundaries, each >= min_chunk
    (except when there is only one), at most ``threads`` of them; a tail shorter than ``unit``
    goes with the last part."""
    min_chunk = MIN_CHUNK if min_chunk is None else min_chunk
    nfull = n // unit
    parts = min(threads, max(1, n // max(1, min_chunk)), max(1, nfull))
    if parts <= 1:
        return [(0, n)]
    base, extra = divmod(nfull, parts)
    out = []
    off = 0
    for k in range(parts):
        length = (base + (1 if k < extra else 0)) * unit
        out.append((off, length))
        off += length
    last_off, last_len = out[-1]
    out[-1] = (last_off, last_len + (n - off))
    return out


def ranges(weights, threads: int) -> list[tuple[int, int]]:
    """Cut items 0..len(weights)-1 (messages, chunks) into at most ``threads`` non-empty
    (first, end) ranges of about equal total weight."""
    import numpy as np

    m = len(weights)
    if threads <= 1 or m <= 1:
        return [(0, m)]
    cum = np.cumsum(weights)
    cuts = [0] + [int(np.searchsorted(cum, cum[-1] * k / threads)) for k in range(1, threads)]
    cuts.append(m)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
