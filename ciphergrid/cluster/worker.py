"""A worker rank (ciphergrid.cluster): the ranges rank 0's dealer sends it read, run on its
node's engines (its own Runtime's route) a plan's step at a time and written at their offset,
or run on the bytes rank 0 sent; its answers, in order, until the job's end."""

from __future__ import annotations

import errno
import os
import signal
import threading
import time

from ..errors import DeviceError, Error, InvalidArgument, InvalidTag
from .wire import (_BROKEN, _DONE, _DOWN, _END, _FAILED, _HALT, _HALTED, _READY, _SIGNALLED, _UP,
                   OUTPUT_ERRNOS, SIGNAL_WAIT_S, OutputFailed, _poll, _portable)


def _request(plan):
    from ..registry import lookup
    from ..request import make_request

    return make_request(lookup(plan["cipher"]), plan["key"], plan["iv"], plan["encrypt"], None,
                        plan["sector_size"], plan["start_sector"], plan["impl"], plan["allow_weak"])


def make_runner(plan, device: str, rank: int):
    """This rank's runner of the plan's ranges: a block cipher's (_Runner), or a sealed file's
    chunks (_SealedRunner)."""
    if plan.get("sealed") is not None:
        return _SealedRunner(plan, device, rank)
    return _Runner(plan, device, rank)


class _Runner:
    """A rank's ranges: read from the input, run on this node's engines, written in place.
    ``halted()``: whether rank 0 asked this rank to leave its range (the job failed: _HALT),
    looked at between two steps."""

    halted = staticmethod(lambda: False)

    def __init__(self, plan, device: str, rank: int):
        from ..route import route
        from ..settings import injected_faults

        self.plan, self.rank = plan, rank
        self.req = _request(plan)
        self.fin = self.fout = None
        if not plan["send"]:
            self.fin = os.open(plan["in"], os.O_RDONLY | os.O_CLOEXEC)
            self.fout = os.open(plan["partial"], os.O_WRONLY | os.O_CLOEXEC)
        size = plan["step"] if plan["n"] is None else min(plan["n"], plan["step"])
        r = route(self.req, device, size or None)
        self.device, self.kind = r.device, r.engine.info.kind
        self.engine = r.engine
        self.session = r.engine.session(self.req)
        self.sent = (None, None)   # (the IV and start sector of the data sent last, its session)
        self.fault = injected_faults().get(f"mpi:{rank}")
        self.ran = 0

    def run_span(self, a: int, b: int) -> None:
        """Bytes [a, b) dealt to this rank, read, run and written a step at a time (a serial
        mode's chaining value carried from one step to the next)."""
        step, chain = self.plan["step"], None
        for x in range(a, max(a + 1, b), step):
            if x > a and self.halted():
                raise _Halted()
            chain = self.run(x, min(b, x + step), chain)

    def run(self, a: int, b: int, chain=None):
        """One step [a, b): the chaining value after it where the mode carries one."""
        import numpy as np

        self._injected(b - a)
        if b <= a:
            return None
        p = self.plan
        buf = np.empty(b - a, dtype=np.uint8)
        if _positioned(os.preadv, self.fin, buf, p["in_offset"] + a) != b - a:
            raise OSError(f"{p['in']}: the input changed size while it was read")
        bs, req = self.req.block_size, self.req
        if a and chain is None:
            chain = req.mode.chain_at(req, _FileWindow(self.fin, p["in_offset"]), a // bs)
        self.session.crypt(buf, buf, a // bs, chain)
        _write_out(self.fout, buf, p["out_offset"] + a)
        self.ran += b - a
        return req.mode.carry(req, None, buf) if p["serial"] else None

    def _injected(self, nbytes: int) -> None:
        """The fault switch (mpi:RANK:fail|kill|hang:BYTES): this rank fails, dies or stops
        once it ran BYTES."""
        if self.fault is not None and self.ran + nbytes > self.fault[1]:
            if self.fault[0] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault[0] == "hang":
                raise _Stalled()
            raise DeviceError(f"injected failure (CIPHERGRID_FAULT) on rank {self.rank}")

    def crypt(self, iv, start_sector: int, data: bytes) -> bytes:
        """Bytes rank 0 sent, as the message at their first block (its ``iv`` and
        ``start_sector``): their result."""
        import numpy as np

        from ..modes.base import replace

        self._injected(len(data))
        buf = np.frombuffer(bytearray(data), dtype=np.uint8)
        if buf.nbytes:
            if self.sent[0] != (iv, start_sector):
                if self.sent[1] is not None:
                    self.sent[1].close()
                req = replace(self.req, iv=iv, start_sector=start_sector)
                self.sent = ((iv, start_sector), self.engine.session(req))
            self.sent[1].crypt(buf, buf)
        self.ran += len(data)
        return buf.tobytes()

    def close(self) -> None:
        self.session.close()
        if self.sent[1] is not None:
            self.sent[1].close()
        for fd in (self.fin, self.fout):
            if fd is not None:
                os.close(fd)


class _SealedRunner(_Runner):
    """A rank's ranges of a sealed file: plaintext bytes [a, b) in whole chunks (the last range:
    the final chunk too), sealed or opened from their offsets in the input to theirs in the
    partial file, on this node's cores (OpenSSL's C loop) or device (AEAD batches)."""

    def __init__(self, plan, device: str, rank: int):
        from ..formats import cobblestone as cb
        from ..settings import injected_faults

        self.plan, self.rank = plan, rank
        s = plan["sealed"]
        sch = cb.scheme(s["aes256"])
        self.seal = s["seal"]
        if self.seal:
            self.engine = cb.Sealer(sch, s["key"], s["context"], salt=s["salt"], device=device,
                                    path="stream")
        else:
            self.engine = cb.Opener(sch, s["key"], s["context"], s["header"], device=device,
                                    path="stream")
        step = plan["step"]
        self.device = "native" if cb._native(sch, device, "stream", step, step // cb.CHUNK) \
            else device
        self.kind = "native" if self.device == "native" else "gpu"
        self.fin = os.open(plan["in"], os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.fout = os.open(plan["partial"], os.O_WRONLY | os.O_CLOEXEC)
        except BaseException:
            os.close(self.fin)
            raise
        self.fault = injected_faults().get(f"mpi:{rank}")
        self.ran = 0
        self.bufs = [bytearray(), bytearray()]   # (the range's input and output, reused)

    def _buf(self, i: int, n: int) -> memoryview:
        if len(self.bufs[i]) < n:
            self.bufs[i] = bytearray(n)
        return memoryview(self.bufs[i])[:n]

    def run(self, a: int, b: int, chain=None):
        from ..formats import cobblestone as cb

        self._injected(b - a)
        p = self.plan
        n, first, final = b - a, a // cb.CHUNK, b == p["n"]
        # the range sealed: a tag per whole chunk, and one for the final chunk where it ends here
        plain, sealed = (n, a), (n + (n // cb.CHUNK + final) * cb.TAG, first * cb.SEALED_CHUNK)
        (m_in, at_in), (m_out, at_out) = (plain, sealed) if self.seal else (sealed, plain)
        at_in, at_out = p["in_offset"] + at_in, p["out_offset"] + at_out
        src, dst = self._buf(0, m_in), self._buf(1, m_out)
        if _positioned(os.preadv, self.fin, src, at_in) != m_in:
            raise OSError(f"{p['in']}: the input changed size while it was read")
        if self.seal:
            k = self.engine.seal_at(first, src, n, final, dst)
        else:
            k = self.engine.open_at(first, src, m_in, final, dst)
        _write_out(self.fout, dst[:k], at_out)
        self.ran += n
        return None

    def crypt(self, iv, start_sector: int, data: bytes) -> bytes:
        raise InvalidArgument("--mpi: a sealed file's ranges are read by the workers")

    def close(self) -> None:
        os.close(self.fin)
        os.close(self.fout)


def _positioned(call, fd: int, buf, offset: int) -> int:
    """os.preadv / os.pwritev of all of ``buf`` at ``offset`` (one call moves at most ~2 GiB on
    Linux); the bytes moved (fewer: the file ended)."""
    view, done = memoryview(buf).cast("B"), 0
    while done < len(view):
        k = call(fd, [view[done:]], offset + done)
        if k <= 0:
            break
        done += k
    return done


def _write_out(fd: int, buf, offset: int) -> None:
    """All of ``buf`` written at ``offset`` of the partial output ``fd``: a full disk, a quota,
    a file size limit or an I/O error raised as the job's (OutputFailed: it is no rank's own)."""
    try:
        done = _positioned(os.pwritev, fd, buf, offset)
    except OSError as e:
        if e.errno in OUTPUT_ERRNOS:
            raise OutputFailed(e.errno, e.strerror) from None
        raise
    if done != memoryview(buf).nbytes:
        raise OutputFailed(errno.EIO, f"a write of {memoryview(buf).nbytes} bytes at {offset} "
                           "stopped short")


class _FileWindow:
    """The input file as ``chain_at`` reads it (a slice: bytes at those offsets)."""

    def __init__(self, fd: int, offset: int):
        self.fd, self.offset = fd, offset

    def __getitem__(self, sl):
        return os.pread(self.fd, sl.stop - sl.start, self.offset + sl.start)


def answer(runner, msg, broken):
    """A rank's answer to rank 0's ``msg`` ("range", a, b: run into the partial file; "data",
    iv, start sector, bytes: run and sent back), and why it is broken from now on (None: it is
    not).  A broken rank answers every range with its failure."""
    if broken is not None:
        return (_FAILED, broken, None), broken
    try:
        if msg[0] == "range":
            runner.run_span(msg[1], msg[2])
            return (_DONE,), None
        return (_DONE, runner.crypt(msg[1], msg[2], msg[3])), None
    except _Halted:   # (the job failed: its fault ends it)
        return (_HALTED,), None
    except (InvalidTag, OutputFailed) as e:   # (the input's or the output's: the job fails)
        return (_FAILED, str(e)[:300], _portable(e)), None
    except (Error, OSError) as e:
        why = f"{type(e).__name__}: {e}"[:300]
        return (_FAILED, why, None), why


class _Local:
    """Rank 0 alone: its own runner, answering as a worker rank does."""

    def __init__(self, plan, device: str):
        self.runner = make_runner(plan, device, 0)
        self.device, self.kind = self.runner.device, self.runner.kind
        self.broken = None
        self.lock = threading.Lock()

    def answer(self, msg):
        with self.lock:
            try:
                reply, self.broken = answer(self.runner, msg, self.broken)
            except _Stalled:
                reply = (_FAILED, "stalled (CIPHERGRID_FAULT)", None)
                self.broken = reply[1]
            return reply

    def close(self) -> None:
        self.runner.close()


def _work(comm, plan, device):
    """A worker: check in, then answer rank 0's ranges until the job's outcome comes, which it
    returns.  A signal here is sent to rank 0, which ends the job for every rank."""
    from ..interrupts import Interrupted

    runner = None
    try:
        try:
            runner = make_runner(plan, device, comm.rank)
        except (Error, OSError) as e:
            comm.send((_BROKEN, f"{type(e).__name__}: {e}"[:300]), dest=0, tag=_UP)
            return _await_end(comm, None, noted=True)
        runner.halted = lambda: _halt_asked(comm, plan.get("halt_id"))
        comm.send((_READY, runner.device, runner.kind), dest=0, tag=_UP)
        broken = None
        while True:
            tag, msg = _poll(comm, 0, (_END, _DOWN))
            if tag == _END:
                return msg
            try:
                reply, broken = answer(runner, msg, broken)
            except _Stalled:   # (it answers no more, but it hears the job's end and signals)
                return _await_end(comm, None, noted=True)
            comm.send(reply, dest=0, tag=_UP)
    except Interrupted as e:
        comm.send((_SIGNALLED, e.signum), dest=0, tag=_UP)
        end = _await_end(comm, time.monotonic() + SIGNAL_WAIT_S)
        if end is None:
            raise
        return end
    finally:
        if runner is not None:
            runner.close()


def _halt_asked(comm, ident) -> bool:
    """Whether rank 0 asked this rank to leave its range: a halt of this job (``ident``: its
    plan["halt_id"]) taken; another job's, sent late on the same communicator, taken and
    dropped."""
    while comm.Iprobe(source=0, tag=_HALT):
        if comm.recv(source=0, tag=_HALT)[1:2] == (ident,):
            return True
    return False


class _Halted(Exception):
    """Rank 0 asked this rank to leave its range: the job failed."""


def _await_end(comm, until, noted: bool = False):
    """A worker out of the job: the job's outcome message (None past ``until``), what rank 0
    deals meanwhile taken and dropped (a range sent with its bytes is a send that waits for its
    receipt)."""
    while True:
        got = _poll(comm, 0, (_END, _DOWN), until=until, noted=noted)
        if got is None or got[0] == _END:
            return got and got[1]


class _Stalled(Exception):
    """The fault switch's hang: the worker stops running ranges and answering them."""
