"""The protocol of an MPI job's ranks (ciphergrid.cluster): its constants, messages and tags,
waiting for a message without spinning, the command's signals noted and raised where a rank
looks for messages, and the job's ending on every rank."""

from __future__ import annotations

import errno
import os
import pickle
import signal
import sys
import time

from ..errors import DeviceError

#: the step (--mpi-range): bytes a worker runs at a time, on the mode's grain; ranges are dealt
#: on the smaller of this and the scheduler's grain
RANGE = 64 << 20
#: the longest sleep between two looks for a message (a manager or a worker waiting)
POLL_MAX_S = 0.001
PARTIAL_SUFFIX = ".ciphergrid-partial"
#: how long a worker that got a signal waits for rank 0 to end the job, and rank 0 for every
#: worker to answer that it ends
SIGNAL_WAIT_S = 10.0

#: a write of the job's output failing with one of these (a full disk, a quota, a file size
#: limit, an I/O error) fails the job on every rank (exit 4), not the rank that wrote it
OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)

_READY, _DONE, _FAILED, _BROKEN = "ready", "done", "failed", "broken"
_SIGNALLED, _ENDED = "signalled", "ended"   # a worker got a signal; a worker has the outcome
_HALTED = "halted"   # a worker left its range at a step: the job had failed (_HALT)
#: message tags: a worker's reports; rank 0's ranges and stops; the job's outcome; the plan;
#: the job failed (a JobFault): a worker leaves the range it runs at its next step
_UP, _DOWN, _END, _PLAN, _HALT = 0, 1, 2, 3, 4


class OutputFailed(OSError):
    """A rank's write of the job's output failed (OUTPUT_ERRNOS): the job's I/O error, its
    range not dealt again; rank 0 names the output in it."""


def _portable(e):
    """``e`` as it can travel to the other ranks (pickled), or a DeviceError with its words."""
    if e is None:
        return None
    try:
        pickle.dumps(e)
        return e
    except Exception:
        return DeviceError(str(e))


def _tell(comm, tag: int, *msg) -> None:
    """Rank 0 to every other rank (small messages: they are not waited for)."""
    for w in range(1, comm.size):
        try:
            comm.send(msg, dest=w, tag=tag)
        except Exception:
            if tag != _END:
                raise


def _poll(comm, source, tags, status=None, until=None, with_source=False, noted=True):
    """The next message with one of ``tags`` from ``source`` (``tags`` in order of precedence),
    as (tag, message[, its source]); None past ``until`` (a monotonic time).  Polled with short
    sleeps, not MPI's blocking receive, which spins a core (a manager usually shares its node
    with a worker) and holds off signals.  ``noted``: a signal held meanwhile (the command's
    ranks hold them: interrupts.hold) is raised here, before a message is taken."""
    from mpi4py import MPI

    from .. import interrupts

    pause = 0.00005
    st = status if status is not None else MPI.Status()
    while True:
        if noted:
            interrupts.check()
        for tag in tags:
            if comm.Iprobe(source=source, tag=tag, status=st):
                src = st.Get_source()
                msg = comm.recv(source=src, tag=tag)
                return (tag, msg, src) if with_source else (tag, msg)
        if until is not None and time.monotonic() > until:
            return None
        time.sleep(pause)
        pause = min(pause * 2, POLL_MAX_S)


def _await(comm, tag: int):
    return _poll(comm, 0, (tag,), noted=False)[1]


def _next_message(comm, st):
    """Rank 0: the next worker's message (``st``: its source).  A worker that got a signal:
    the job ends as if rank 0 had got it."""
    from ..interrupts import Interrupted

    msg = _poll(comm, _any_source(), (_UP,), st)[1]
    if msg[0] == _SIGNALLED:
        raise Interrupted(msg[1])
    return msg


def _any_source():
    from mpi4py import MPI

    return MPI.ANY_SOURCE


def _end(comm, e, command: bool, sends=()) -> None:
    """Every rank, once the job's outcome ``e`` (None: success) is known everywhere: each worker
    receives what it was sent and did not take (the ranges dealt ahead) and tells rank 0 it
    ends; rank 0 waits for that from each (MPI's ending fails on a message left unreceived, and
    MPICH's mpiexec then kills every rank), then completes its own sends still open (``sends``:
    _settle).  Then ``e`` is raised on every rank (``command``:
    the command line's, a worker's message dropped, and signals ignored from here on: one sent
    to every rank may reach this one late).  The command stopped by a signal: every rank ends
    with 128 + N through MPI's ending (SystemExit: the interpreter's exit finalizes MPI), so
    that MPICH's mpiexec reports that code and not its kill of the ranks left; rank 0 says it,
    once.  A worker that does not answer rank 0 in SIGNAL_WAIT_S: the error is raised as it is
    (mpiexec ends the rest)."""
    from .. import interrupts

    if command:
        interrupts.ending()
    if comm.rank != 0:
        _drain(comm)
        comm.send((_ENDED,), dest=0, tag=_UP)
        if e is None:
            return
        if not command:
            raise e
        if isinstance(e, KeyboardInterrupt):
            raise SystemExit(128 + getattr(e, "signum", signal.SIGINT))
        for f in (sys.stderr, sys.stdout):
            try:
                f.flush()
            except (OSError, ValueError):
                pass
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        raise e
    waiting, until = set(range(1, comm.size)), time.monotonic() + SIGNAL_WAIT_S
    while waiting:
        got = _poll(comm, _any_source(), (_UP,), until=until, with_source=True, noted=False)
        if got is None:
            break
        if got[1][0] == _ENDED:
            waiting.discard(got[2])
    _settle(sends, until)
    if e is None:
        return
    if command and isinstance(e, KeyboardInterrupt) and not waiting:
        signum = getattr(e, "signum", signal.SIGINT)
        written = getattr(e, "ciphergrid_written", None)
        print(f"ciphergrid: interrupted by {signal.Signals(signum).name}"
              + (f"; {written[0]} bytes were written to {written[1]}" if written else ""),
              file=sys.stderr)
        raise SystemExit(128 + signum)
    raise e


def _drain(comm) -> None:
    """A worker: receive what rank 0 sent and this rank did not take."""
    from mpi4py import MPI

    st = MPI.Status()
    while comm.Iprobe(source=0, tag=MPI.ANY_TAG, status=st):
        comm.recv(source=0, tag=st.Get_tag())


def _settle(sends, until: float) -> None:
    """Rank 0: its sends (MPI requests) completed before MPI's ending, which reports every
    request left open as a reference to the communicator on stderr.  A rank receives what it
    was sent before it answers that it ends, so each completes at once; one still open at
    ``until`` (its rank never answered) is cancelled and let go."""
    pause = 0.00005
    while True:
        sends = [r for r in sends if not r.Test()]
        if not sends or time.monotonic() > until:
            break
        time.sleep(pause)
        pause = min(pause * 2, POLL_MAX_S)
    for r in sends:
        try:
            r.Cancel()
            if not r.Test():
                r.Free()
        except Exception:  # noqa: BLE001 - the job ends either way
            pass
