"""Rank 0's dealing (ciphergrid.cluster): the other ranks are engines of the ``mpi`` kind, and
the composite engine's dealer deals them the job's ranges.

* **Each worker rank is an engine** (``RankEngine``, registered as the ``mpi`` kind for the job's
  time: ``registry.register_engine_kind``, its devices ``rank:1`` ... ``rank:N-1``): its
  ``run_range(a, b)`` has the rank read bytes [a, b) of the input, run them on its node's
  engines and write them at their offset in the partial file; its sessions' ``crypt`` send a
  range's bytes and take the result back (rank 0 sends the data).  A rank whose range fails
  takes no more ranges (its ``capability`` is None from then on).
* **One dealer**: a file job's ranges are a ``FileRanges`` work dealt by the scheduler's ``Run``
  (shares by expected speed, a self-scheduled tail, a failed or hung range dealt again); data
  rank 0 sends goes through ``CompositeEngine.stream`` over the rank engines (pieces read in
  order, each scheduled over the ranks, written in order or at their offset).  Rank 0 alone
  (one rank) is its own engine (``_Local``).
* **One thread speaks MPI**: the dealer runs in a thread of its own; rank 0's main thread is
  the ``Switchboard``, which sends what the dealer's threads post, hands each rank's answers to
  the thread waiting for them (a rank answers in order), acts on a signal (held: raised there)
  and on a worker's report of one.  When the job ends every wait still open is cancelled.
"""

from __future__ import annotations

import threading
import time

from .. import interrupts
from ..engines.base import Engine, Session
from ..errors import DeviceError, EngineFailureWarning
from .wire import (_DONE, _DOWN, _HALT, _HALTED, _READY, _SIGNALLED, _UP, POLL_MAX_S,
                   _next_message)

KIND = "mpi"
#: how long rank 0 waits for the dealer's thread once the job was stopped (a read of a silent
#: pipe there never returns; nothing in it speaks MPI)
DEALER_WAIT_S = 2.0


class _Cancelled(BaseException):
    """The job ended while a range was out (a signal, another failure)."""


class JobFault(Exception):
    """A range failed for the job, not for its rank (a sealed chunk that does not verify, a
    write of the output that failed: wire.OutputFailed): ``error`` ends the job on every rank,
    and the range is not dealt again."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def can_run(spec, mode, direction, **details):
    """The ``mpi`` kind's column: every block cipher as its mode runs (a rank runs it with its
    own engines, or OpenSSL); AEADs are not dealt to ranks."""
    if getattr(spec, "aead", None) is not None or mode is None:
        return None
    return "parallel" if mode.parallel(direction == "encrypt") else "serial"


class RankEngine(Engine):
    """One worker rank as an engine (see the module docstring).  ``line(msg)``: the rank's
    answer to ``msg`` (the switchboard's call, or a local runner's)."""

    kind = KIND
    #: a rank runs on a host of its own: the scheduler never judges it against the others alone
    apart = True

    def __init__(self, info, line):
        self.info, self.line = info, line
        self.broken: str | None = None
        self.bytes = 0
        self.lock = threading.Lock()

    def capability(self, req, nbytes=None):
        if self.broken is not None:
            return None
        return req.spec.capability(self.kind, req.encrypt)

    def session(self, req):
        return RankSession(self, req)

    def run_range(self, a: int, b: int) -> None:
        """Bytes [a, b) of the job's input, run by the rank into the partial file."""
        self._ask(("range", a, b))
        self._ran(b - a)

    def _ran(self, n: int) -> None:
        with self.lock:
            self.bytes += n

    def _ask(self, msg):
        if self.broken is not None:
            raise DeviceError(self.broken)
        reply = self.line(msg)
        if reply[0] == _DONE:
            return reply
        if reply[0] == _HALTED:   # (the job failed already: its fault ends it)
            raise JobFault(None)
        if reply[2] is not None:
            raise JobFault(reply[2])
        self.broken = reply[1]
        raise DeviceError(reply[1])


class RankSession(Session):
    """A request on a rank: ``crypt`` sends the range's bytes (the request at its first block:
    its IV and start sector; the rank holds the keys) and writes the answer into ``dst``."""

    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None) -> None:
        import numpy as np

        r = self.req.at(first_block, chain) if first_block else self.req
        data = np.asarray(src).reshape(-1).view(np.uint8).tobytes()
        out = self.engine._ask(("data", r.iv, r.start_sector, data))[1]
        np.asarray(dst).reshape(-1).view(np.uint8)[:] = np.frombuffer(out, dtype=np.uint8)
        self.engine._ran(len(data))


class FileRanges:
    """A file job's bytes as the dealer's units (the protocol of engines/scheduler/units.py):
    ranges cut on the smaller of the plan's step and the scheduler's grain (units.GRAIN), on the
    plan's unit (the mode's grain; a sealed file's: whole chunks), each read, run (a step at a
    time) and written by the rank dealt it; a serial mode's message is one range.  A job fault
    (JobFault) is kept (``fault``) and ends the dealing: ``halt()`` has the other ranks leave the
    ranges they run at their next step, and the ranges left are passed over."""

    in_place = False

    def __init__(self, plan):
        from ..engines.scheduler.units import GRAIN, TAIL

        self.n, unit = plan["n"], plan["unit"]
        self.grain = max(1, self.n) if plan["serial"] else \
            max(unit, min(plan["step"], GRAIN) // unit * unit)
        self.name = plan["cipher"]
        sealed = plan.get("sealed")
        self.encrypt = sealed["seal"] if sealed is not None else plan["encrypt"]
        self.tail = TAIL
        self.fault = None
        self.halt = lambda: None
        self.lock = threading.Lock()

    def weight(self, a: int, b: int) -> int:
        return b - a

    def cut(self, a: int, b: int, nbytes: int) -> int:
        from ..engines.scheduler.units import Bytes

        return Bytes.cut(self, a, b, nbytes)

    def path(self, eng) -> str:
        return "array"

    def tail_share(self) -> float:
        return self.tail

    def buffer(self, eng, a: int, b: int):
        return None

    def run(self, eng, a: int, b: int, out) -> None:
        if self.fault is not None:
            return
        try:
            eng.run_range(a, b)
        except JobFault as e:
            with self.lock:
                first = self.fault is None
                # (a range left for a halt is no fault of its own; one never comes before one)
                self.fault = self.fault or e.error or DeviceError("a rank left its range unasked")
            if first:
                self.halt()

    def commit(self, a: int, b: int, out) -> None:
        pass


class _Slot:
    def __init__(self):
        self.done = threading.Event()
        self.reply = None


class Switchboard:
    """Rank 0's MPI traffic, in its main thread (see the module docstring)."""

    def __init__(self, comm):
        self.comm = comm
        self.lock = threading.Lock()
        self.outbox: list = []       # (rank, message, slot) posted by the dealer's threads
        self.waiting: dict = {}      # rank -> its slots sent, oldest first
        self.ended = False
        self.handling = 0.0          # the main thread's own work on the messages
        self.replies = 0
        #: the sends not yet received: a rank sending its answer waits for rank 0 to take it,
        #: so rank 0 never waits in a send (each is kept until the rank has received it)
        self.sends: list = []

    def line(self, rank: int):
        return lambda msg: self.call(rank, msg)

    def halt(self, ranks, ident=None) -> None:
        """(a dealer's thread) The job failed: each of ``ranks`` leaves the range it runs at its
        next step (it answers that range _HALTED).  ``ident``: the job's (plan["halt_id"]): a
        rank drops a halt of another job, one sent late by a job of the same communicator."""
        with self.lock:
            if not self.ended:
                self.outbox += [(rank, ("halt", ident), None) for rank in ranks]

    def call(self, rank: int, msg):
        """(a dealer's thread) ``msg`` sent to ``rank``; its answer."""
        slot = _Slot()
        with self.lock:
            if self.ended:
                raise _Cancelled()
            self.outbox.append((rank, msg, slot))
        while not slot.done.wait(0.05):
            if self.ended:
                raise _Cancelled()
        return slot.reply

    def here(self, answer):
        """Rank 0's own line (alone): ``answer(msg)`` in the dealer's thread, none once the job
        ended."""
        def line(msg):
            if self.ended:
                raise _Cancelled()
            return answer(msg)

        return line

    def end(self) -> None:
        """Every open wait cancelled; nothing posted from now on is sent."""
        with self.lock:
            self.ended = True

    def pump(self, finished: threading.Event) -> None:
        """(the main thread) Until ``finished``: the posted messages sent, the answers handed
        over; a signal held, or one a worker reports, raised here."""
        from mpi4py import MPI

        from ..interrupts import Interrupted

        comm, st, pause = self.comm, MPI.Status(), 0.00005
        while not finished.is_set():
            interrupts.check()
            busy = False
            with self.lock:
                out, self.outbox = self.outbox, []
            for rank, msg, slot in out:
                t0 = time.perf_counter()
                if slot is not None:
                    self.waiting.setdefault(rank, []).append(slot)
                self.sends.append(comm.isend(msg, dest=rank, tag=_DOWN if slot is not None else _HALT))
                self.handling += time.perf_counter() - t0
                busy = True
            if self.sends:
                self.sends = [r for r in self.sends if not r.Test()]
            if comm.Iprobe(source=MPI.ANY_SOURCE, tag=_UP, status=st):
                t0 = time.perf_counter()
                rank = st.Get_source()
                msg = comm.recv(source=rank, tag=_UP)
                if msg[0] == _SIGNALLED:
                    raise Interrupted(msg[1])
                waiting = self.waiting.get(rank)
                if waiting:
                    slot = waiting.pop(0)
                    slot.reply = msg
                    slot.done.set()
                    self.replies += 1
                self.handling += time.perf_counter() - t0
                busy = True
            if busy:
                pause = 0.00005
                continue
            finished.wait(pause)
            pause = min(pause * 2, POLL_MAX_S)


def check_in(comm):
    """Every worker checks in first (its engines set up, or why not).  ({rank: (device, kind)}
    of the ready ones, the failures)."""
    from mpi4py import MPI

    ready, failures = {}, []
    for _ in range(comm.size - 1):
        st = MPI.Status()
        msg = _next_message(comm, st)
        if msg[0] == _READY:
            ready[st.Get_source()] = (msg[1], msg[2])
        else:
            failures.append(f"rank {st.Get_source()}: {msg[1]}")
    return ready, failures


def _infos(ready: dict) -> list:
    from ..backends.base import DeviceInfo

    return [DeviceInfo(spec=f"rank:{w}", runtime=KIND, name=device,
                       kind=kind if kind in ("gpu", "cpu") else "native", compute_units=1,
                       memory=0, extra={"rank": w})
            for w, (device, kind) in sorted(ready.items())]


def deal(comm, job, device: str) -> None:
    """Rank 0: the job's ranges dealt to the ranks (or run here alone); ``job.plan["summary"]``
    says who ran what.  Raises the job's error (a signal: Interrupted)."""
    from ..registry import register_engine_kind, unregister_engine_kind
    from ..route import engine_of

    plan = job.plan
    board = Switchboard(comm)
    failures: list = []
    local = None
    if comm.size == 1:
        from .worker import _Local

        local = _Local(plan, device)
        ready, lines = {0: (local.device, local.kind)}, {0: board.here(local.answer)}
    else:
        ready, failures = check_in(comm)
        lines = {w: board.line(w) for w in ready}
    infos = _infos(ready)
    register_engine_kind(KIND, lambda info: RankEngine(info, lines[info.extra["rank"]]), can_run,
                         devices=lambda: tuple(infos), label="the ranks of an MPI job")
    try:
        engines = [engine_of(info) for info in infos]
        if not engines:
            raise DeviceError("every worker failed: " + "; ".join(failures))
        if failures:
            import warnings

            warnings.warn("ciphergrid: " + "; ".join(failures) + " (the other ranks run the "
                          "job; the output is whole)", EngineFailureWarning, stacklevel=2)
        outcome: dict = {}
        finished = threading.Event()

        def dealer() -> None:
            try:
                _dealing(job, engines, failures,
                         (lambda: None) if local is not None
                         else lambda: board.halt(ready, plan.get("halt_id")))
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                outcome["error"] = e
            finally:
                finished.set()

        t0 = time.perf_counter()
        threading.Thread(target=dealer, name="ciphergrid-mpi-dealer", daemon=True).start()
        try:
            board.pump(finished)
        finally:
            job.sends = board.sends   # (received by the ranks as the job ends: completed then)
            board.end()
            # (rank 0's own runner is closed once the dealer is out of it: never under a range)
            if finished.wait(DEALER_WAIT_S) and local is not None:
                local.close()
        if "error" in outcome:
            raise outcome["error"]
        _summary(plan, engines, board, time.perf_counter() - t0, failures, local)
    finally:
        unregister_engine_kind(KIND)


def _dealing(job, engines, failures: list, halt) -> None:
    """(the dealer's thread) The job over the rank engines (``halt()``: a job fault has the
    ranks leave their ranges)."""
    from ..engines.composite import CompositeEngine
    from ..engines.scheduler.run import Run, SchedulerStats
    from ..runtime import current

    plan = job.plan
    try:
        if plan["send"]:
            from ..engines.composite import STREAM_PIECE
            from .worker import _request

            # (a piece: a step per rank, at most the composite's piece unless the step is more)
            piece = max(plan["step"], min(plan["step"] * len(engines), STREAM_PIECE))
            CompositeEngine(engines, spec=KIND).stream(
                _request(plan), job.source.f, job.out.fd, progress=job.out.count,
                chunk_bytes=piece, depth=2)
            return
        work = FileRanges(plan)
        work.halt = halt
        if work.n == 0:
            _empty(engines)
        else:
            Run(work, engines, SchedulerStats(), "direct", current()).go()
        if work.fault is not None:
            raise work.fault
    except JobFault as e:
        raise e.error from None
    except DeviceError:
        broken = [f"{e.info.spec}: {e.broken}" for e in engines if e.broken is not None]
        if len(broken) == len(engines):
            raise DeviceError("every worker failed: " + "; ".join(failures + broken)) from None
        raise


def _empty(engines) -> None:
    """An empty message: one range [0, 0) (a sealed file's final chunk), on the first rank that
    runs it."""
    for eng in engines:
        try:
            eng.run_range(0, 0)
            return
        except DeviceError:
            continue
    raise DeviceError("every worker failed")


def _summary(plan, engines, board, seconds: float, failures: list, local) -> None:
    total = sum(e.bytes for e in engines) or 1
    shares = ", ".join(f"rank {e.info.extra['rank']} ({e.info.name}) {e.bytes / total:.0%}"
                       for e in engines)
    if local is not None:
        plan["summary"] = f"rank 0 alone on {local.device}"
    elif plan["send"]:
        plan["summary"] = f"rank 0 sent {sum(e.bytes for e in engines)} bytes; {shares}"
    else:
        plan["summary"] = (
            f"{shares}; the manager's work {1e6 * board.handling / max(1, board.replies):.0f} us "
            f"per range, {board.handling / seconds if seconds else 0:.2%} of the dealing")
    broken = failures + [f"{e.info.spec}: {e.broken}" for e in engines if e.broken is not None]
    if broken:
        plan["summary"] += "; failures: " + "; ".join(broken)
