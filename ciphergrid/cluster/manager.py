"""Rank 0, the manager (ciphergrid.cluster): the ranges dealt to the workers as they ask (or
run alone), a failed worker's ranges dealt again; the sender, when rank 0 reads the input and
writes the output itself."""

from __future__ import annotations

import os
import sys
import time

from .. import interrupts
from ..errors import DeviceError
from .wire import _DONE, _DOWN, _FAILED, _READY, IN_FLIGHT, _next_message
from .worker import _positioned, _ranges, _request, _Runner, make_runner


def _alone(plan, device) -> None:
    runner = make_runner(plan, device, 0)
    try:
        for a, b in _ranges(plan):
            interrupts.check()
            runner.run(a, b)
    finally:
        runner.close()
    plan["summary"] = f"rank 0 alone on {runner.device}"


def _manage(comm, plan) -> None:
    """Rank 0: deal the ranges to the workers, IN_FLIGHT each (the next one waits in a worker's
    queue while it runs one: the manager's answer is hidden behind the range); re-deal a failed
    worker's ranges.  Raises when every worker failed."""
    from mpi4py import MPI

    queue = _ranges(plan)
    done = 0
    total = len(queue)
    handling, dealing = 0.0, 0.0   # the manager's own work on the messages; the dealing's span
    live, ready, devices, failures = _check_in(comm)
    shares = {w: 0 for w in range(1, comm.size)}
    inflight: dict = {w: [] for w in ready}   # each live worker's ranges, oldest first

    def deal() -> None:   # (one range each first, then a second each)
        for depth in range(1, IN_FLIGHT + 1):
            for w in ready:
                if w in live and len(inflight[w]) < depth and queue:
                    rng = queue.pop(0)
                    inflight[w].append(rng)
                    comm.send(("range",) + rng, dest=w, tag=_DOWN)

    try:
        t_start, t0 = time.perf_counter(), None
        while True:
            deal()
            if t0 is not None:
                handling += time.perf_counter() - t0
            if done == total or not live:
                break
            st = MPI.Status()
            msg = _next_message(comm, st)
            t0 = time.perf_counter()
            w = st.Get_source()
            rng = (msg[1], msg[2])
            if msg[0] == _DONE:
                done += 1
                shares[w] += rng[1] - rng[0]
                inflight[w].remove(rng)
            elif msg[0] == _FAILED:
                if len(msg) > 4 and msg[4] is not None:   # (the input's fault: the job fails)
                    raise msg[4]
                queue[:0] = inflight.pop(w)   # (its ranges first, in their order)
                live.discard(w)
                failures.append(f"rank {w}: {msg[3]}")
                comm.send(("stop",), dest=w, tag=_DOWN)
        dealing = time.perf_counter() - t_start
    finally:
        for w in live:   # (every live worker waits for a message: the ones parked too)
            comm.send(("stop",), dest=w, tag=_DOWN)
    if done != total:
        raise DeviceError("every worker failed: " + "; ".join(failures))
    n = plan["n"] or 1
    plan["summary"] = ", ".join(f"rank {w} ({devices.get(w, '?')}) {v / n:.0%}"
                                for w, v in sorted(shares.items())) + (
        f"; the manager's work {1e6 * handling / max(1, total):.0f} us per range, "
        f"{handling / dealing if dealing else 0:.2%} of the dealing") + (
        f"; failures: {'; '.join(failures)}" if failures else "")
    _warn_rework(failures)


def _warn_rework(failures) -> None:
    if failures:
        print("ciphergrid: warning: " + "; ".join(failures) + " (their ranges were run again "
              "by the others; the output is whole)", file=sys.stderr)


def _check_in(comm):
    """Rank 0: every worker checks in first (its engines set up, or why not), as seed 002's
    hosts did.  (live workers, the ready ones in rank order, their devices, the failures)."""
    from mpi4py import MPI

    live, waiting, devices, failures = set(range(1, comm.size)), [], {}, []
    for _ in range(comm.size - 1):
        st = MPI.Status()
        msg = _next_message(comm, st)
        w = st.Get_source()
        if msg[0] == _READY:
            devices[w] = msg[1]
            waiting.append(w)
        else:
            live.discard(w)
            failures.append(f"rank {w}: {msg[1]}")
            comm.send(("stop",), dest=w, tag=_DOWN)
    return live, sorted(waiting), devices, failures


class _Sender:
    """Rank 0 when it sends the data (a pipe, stdin, an output written through, --mpi-send), as
    seed 002's manager did: it reads the input in ranges and deals each with its bytes to the
    next worker that asks (two per worker in flight at most; a serial mode's one at a time, each
    after the one before, whose output gives its chaining value), and writes the results: at
    their place in a replaced output, or in order to one written through."""

    def __init__(self, plan, src, out):
        self.plan, self.src, self.out = plan, src, out
        self.req = _request(plan)
        self.ahead: dict = {}    # results written through waiting for the ones before them
        self.next = 0            # written through: the next byte to write
        self.total = 0

    def close(self) -> None:
        self.src.close()

    def _read(self, k: int) -> bytes:
        from ..fileio import read_exact

        with interrupts.interruptible():
            return read_exact(self.src.read, k)

    def _write(self, a: int, out: bytes) -> None:
        if self.out.kind == "replace":
            if _positioned(os.pwritev, self.out.fd, out, self.plan["out_offset"] + a) != len(out):
                raise OSError(f"cannot write {self.out.name}: a write stopped short (disk full?)")
            return
        self.ahead[a] = out
        while self.next in self.ahead:
            piece = self.ahead.pop(self.next)
            self.out.write(piece)
            self.next += len(piece)

    def _chain(self, a: int, prev_in, prev_out):
        if not a or not self.req.mode.carries:
            return None
        return self.req.mode.carry(self.req, prev_in, prev_out)

    def finish(self) -> None:
        """Every range written: a replaced output of unknown size cut where its data ended."""
        if self.out.kind == "replace" and self.plan["n"] is None:
            os.ftruncate(self.out.fd, self.plan["out_offset"] + self.total)

    def manage(self, comm, device) -> None:
        from mpi4py import MPI

        plan, req = self.plan, self.req
        step, serial = plan["step"], plan["serial"]
        if comm.size == 1:   # (alone: it runs the ranges itself)
            runner = _Runner(plan, device, 0)
            try:
                pos, prev_in, prev_out = 0, None, None
                while True:
                    interrupts.check()
                    data = self._read(step)
                    if len(data) < step:
                        req.check_length(pos + len(data))
                    if not data and pos:
                        break
                    out = runner.crypt(pos, data, self._chain(pos, prev_in, prev_out))
                    self._write(pos, out)
                    prev_in, prev_out, pos = data, out, pos + len(data)
                    if len(data) < step:
                        break
            finally:
                runner.close()
            self._done(pos, {0: pos}, [])
            return
        live, waiting, _, failures = _check_in(comm)
        shares = {w: 0 for w in range(1, comm.size)}
        pending: dict = {}   # a -> (data, chain, worker)
        again: list = []     # (a, data, chain) to deal again
        pos, eof, prev_in, prev_out = 0, False, None, None
        try:
            while True:
                limit = 1 if serial else 2 * max(1, len(live))
                while waiting and (again or (not eof and len(pending) < limit)):
                    if again:
                        a, data, chain = again.pop(0)
                    else:
                        data = self._read(step)
                        if len(data) < step:
                            eof = True
                            req.check_length(pos + len(data))
                            if not data and pos:
                                break
                        a, chain = pos, self._chain(pos, prev_in, prev_out)
                        prev_in, pos = data, pos + len(data)
                    w = waiting.pop(0)
                    pending[a] = (data, chain, w)
                    comm.send(("data", a, data, chain), dest=w, tag=_DOWN)
                if eof and not pending and not again:
                    break
                if not live:
                    raise DeviceError("every worker failed: " + "; ".join(failures))
                st = MPI.Status()
                msg = _next_message(comm, st)
                w = st.Get_source()
                if msg[0] == _DONE:
                    a = msg[1]
                    data = pending.pop(a)[0]
                    self._write(a, msg[3])
                    shares[w] += len(data)
                    if serial:
                        prev_out = msg[3]
                    waiting.append(w)
                elif msg[0] == _FAILED:
                    a = msg[1]
                    data, chain, _ = pending.pop(a)
                    again.append((a, data, chain))
                    live.discard(w)
                    failures.append(f"rank {w}: {msg[3]}")
                    comm.send(("stop",), dest=w, tag=_DOWN)
        finally:
            for w in live:
                comm.send(("stop",), dest=w, tag=_DOWN)
        self._done(pos, shares, failures)

    def _done(self, total: int, shares: dict, failures: list) -> None:
        self.total = total
        n = total or 1
        self.plan["summary"] = (f"rank 0 sent {total} bytes; " + ", ".join(
            f"rank {w} {v / n:.0%}" for w, v in sorted(shares.items())))
        _warn_rework(failures)
