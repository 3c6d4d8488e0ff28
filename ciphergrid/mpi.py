"""One file over many nodes: ``mpiexec -n N ciphergrid encrypt|decrypt ... --mpi`` (mpi4py).

Seed 002's resource manager as an MPI job (docs/mpi.md):

* **rank 0 is the manager**: it checks the arguments and the key (a passphrase is asked and
  derived there only), makes the output's partial file, and deals the message out in ranges
  (``--mpi-range``, default 64 MiB, on the mode's grain) to whichever worker asks next, so a slow
  worker never holds the job; it takes no range itself (one rank alone: it runs them all);
* **the other ranks are workers**: each reads its ranges of the input file and writes them into
  the partial output file itself (positioned I/O: the files are on a filesystem every node sees),
  running them on its node's engines (``--device``: ``auto``, a GPU, ``all`` for the scheduler
  over every device of the node);
* **nothing partial**: the output is written as ``.NAME.ciphergrid-partial`` in the output's
  folder and renamed to NAME by rank 0 only after every range was confirmed; rank 0 removes it on
  any failure it sees, and a later run on the same output removes one a crash left (and says so);
* **faults**: a worker whose range fails is told to stop and its range is dealt to another one
  (``CIPHERGRID_FAULT=mpi:RANK:fail:BYTES`` makes rank RANK fail once it has run BYTES;
  ``mpi:RANK:kill:BYTES`` kills it, which ends the MPI job: no output under the name);
* CBC encryption (serial) runs on one worker, as one range.

The keys go from rank 0 to the workers inside MPI's messages (never on a command line, never
logged), as the request's fields.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from .errors import DeviceError, Error, InvalidArgument

#: bytes per range dealt (on the mode's grain)
RANGE = 64 << 20
#: the manager's longest sleep between two looks for a worker's message
POLL_MAX_S = 0.001
#: ranges a worker holds at once (the file mode): one running, the next already in its queue
IN_FLIGHT = 2
PARTIAL_SUFFIX = ".ciphergrid-partial"

_READY, _DONE, _FAILED, _BROKEN = "ready", "done", "failed", "broken"


def partial_path(out: str) -> str:
    """The partial output of ``out``: ``.NAME.ciphergrid-partial`` in the same folder."""
    folder, name = os.path.split(os.path.abspath(out))
    return os.path.join(folder, f".{name}{PARTIAL_SUFFIX}")


def run(args, encrypt: bool, keying) -> str:
    """The command on this rank: "ok", "usage" (rank 0 refused the arguments: it raised, the
    others return this) or "failed" (the job failed: rank 0 said why).  ``keying``: the command
    line's key reader (cli._keying), run on rank 0 only."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise InvalidArgument("--mpi needs mpi4py and an MPI library: pip install "
                              "'ciphergrid[mpi]' (docs/mpi.md)") from None
    comm = MPI.COMM_WORLD
    plan, err, local = None, None, None
    if comm.rank == 0:
        try:
            plan, local = _make_plan(args, encrypt, comm.size, keying)
        except BaseException as e:   # (said once, by rank 0; the workers stop quietly -- and
            err = e                  # are told, whatever it was: else they wait for ever)
    plan = comm.bcast(plan, root=0)
    if plan is None:
        if err is not None:
            raise err
        return "usage"
    try:
        code = _execute(comm, plan, args.device, local)
    finally:
        if local is not None:
            local.close()
    if comm.rank == 0 and code == 0 and args.verbose:
        summary = (local.plan if local is not None else plan).get("summary", "")
        print(f"ciphergrid: {plan['cipher']} {'encrypt' if encrypt else 'decrypt'} over "
              f"{comm.size} ranks: {summary}", file=sys.stderr)
    return "ok" if code == 0 else "failed"


def _make_plan(args, encrypt: bool, size: int, keying) -> dict:
    """Rank 0: the request, the input's data offset and size, the partial output made."""
    from . import keys
    from .fileio import Input
    from .registry import lookup
    from .request import make_request
    from .settings import parse_bytes

    spec = lookup(args.cipher)
    if args.base64 or args.pad:
        raise InvalidArgument("--mpi: --base64 and --pad are not supported")
    # the workers read and write the files themselves where they can (a regular input, an
    # output named); else (a pipe, stdin, stdout, --mpi-send) this rank sends them the data
    send = bool(args.mpi_send) or not (args.infile and os.path.isfile(args.infile) and args.outfile)
    src = Input(args.infile)
    keep = False
    try:
        kg = keying(args, spec, encrypt, src)
        header, offset = b"", 0
        if kg.phrase is not None:
            if spec.mode.paddable:
                raise InvalidArgument(f"--mpi: {spec.name} with a passphrase is padded (openssl "
                                      "enc); give --key-file, or a mode without padding")
            if encrypt:
                salt = keys.new_salt()
                header = keys.make_header(salt)
            else:
                head = src.read(len(keys.SALT_MAGIC) + keys.SALT_LEN)
                salt = keys.parse_header(head)
                offset = len(head)
            kg.key, kg.iv = keys.derive(kg.phrase, salt, spec.key_len, spec.iv_len,
                                        pbkdf2=args.pbkdf2, iterations=args.iter or keys.DEFAULT_ITER,
                                        md=kg.md)
        n = src.size if send else os.path.getsize(args.infile) - offset
        req = make_request(spec, kg.key, kg.iv, encrypt, None, args.sector_size,
                           args.start_sector, "ct" if args.constant_time else None, args.allow_weak)
        step = parse_bytes(args.mpi_range, "--mpi-range") if args.mpi_range else RANGE
        if not send:
            return _plan(req, args.infile, offset, n, args.outfile, header, step,
                         not args.no_sync), None
        if n is None and req.limit_refuses:
            raise InvalidArgument(f"--mpi: {spec.name} over an input of unknown size (its block "
                                  "limit must be counted): give a file, or --allow-weak")
        plan = _plan(req, None, offset, n, args.outfile, header, step, not args.no_sync)
        local = _Sender(plan, src, header)
        keep = True
        return plan, local
    finally:
        if not keep:
            src.close()


def _plan(req, src, offset: int, n, out, header: bytes, step: int, sync: bool) -> dict:
    """Rank 0: the checks the size decides, the partial output made (a crash's removed), the
    plan every rank gets.  ``src`` None: rank 0 sends the data (``n`` None: until the input
    ends); ``out`` None: stdout."""
    if n is not None:
        req.admit(n)
        req.check_length(n)
    unit = req.mode.split_unit(req)
    if unit is None:
        # serial: one range, one worker -- or, sent, ranges one after the other (each waits
        # for the one before: its chaining value)
        step = max(n or 1, 1) if src is not None else max(req.block_size, step // req.block_size
                                                          * req.block_size)
    else:
        step = max(unit, step // unit * unit)
    partial = partial_path(out) if out else None
    if partial is not None:
        if os.path.exists(partial):
            os.unlink(partial)
            print(f"ciphergrid: warning: removed {partial}, left by an earlier run that did not "
                  "end", file=sys.stderr)
        fd = os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
        try:
            if n is not None:
                os.ftruncate(fd, len(header) + req.out_len(n))
            if header:
                os.pwrite(fd, header, 0)
        finally:
            os.close(fd)
    return {"cipher": req.spec.name, "key": bytes(req.key), "iv": bytes(req.iv) if req.iv else None,
            "encrypt": req.encrypt, "sector_size": req.sector_size,
            "start_sector": req.start_sector or None, "impl": req.impl, "allow_weak": req.allow_weak,
            "in": os.path.abspath(src) if src else None, "in_offset": offset, "n": n,
            "out": os.path.abspath(out) if out else None, "partial": partial,
            "out_offset": len(header), "step": step, "no_sync": not sync, "send": src is None,
            "serial": unit is None}


def _execute(comm, plan, device: str, local=None) -> int:
    """Every rank: its part of the plan (manager, worker, or alone); rank 0's result (0: done).
    ``local``: rank 0's _Sender when it sends the data."""
    if plan["send"] and comm.rank == 0:
        code = local.manage(comm, device)
    elif comm.size == 1:
        code = _alone(plan, device)
    elif comm.rank == 0:
        code = _manage(comm, plan)
    else:
        _work(comm, plan, device)
        code = 0
    return comm.bcast(code, root=0)


def crypt_file(src: str, dst: str, cipher: str, key, iv=None, *, encrypt: bool = True, comm=None,
               device: str = "auto", sector_size=None, start_sector=None, allow_weak: bool = False,
               range_bytes: int = RANGE, sync: bool = True) -> dict:
    """For programs that are MPI jobs already: every rank of ``comm`` (default COMM_WORLD) calls
    this with the same arguments (collective).  Rank 0 checks them and deals ``src`` in ranges
    to the other ranks, which encipher them on their node's ``device`` into ``dst``'s partial
    file; ``dst`` appears when every range is done.  Returns {"bytes", "summary"} on every rank;
    raises on every rank when the job failed (rank 0: the reason; the others: a DeviceError
    that says rank 0 has it)."""
    from mpi4py import MPI

    from .registry import lookup
    from .request import make_request

    comm = comm or MPI.COMM_WORLD
    plan, err = None, None
    if comm.rank == 0:
        try:
            req = make_request(lookup(cipher), bytes(key), bytes(iv) if iv is not None else None,
                               encrypt, None, sector_size, start_sector, None, allow_weak)
            if not os.path.isfile(src):
                raise InvalidArgument(f"the input must be a regular file, not {src}")
            plan = _plan(req, src, 0, os.path.getsize(src), dst, b"", range_bytes, sync)
            plan["send"] = False
        except BaseException as e:
            err = e
    plan = comm.bcast(plan, root=0)
    if plan is None:
        raise err if err is not None else DeviceError("rank 0 refused the job")
    code = _execute(comm, plan, device)
    if code != 0:
        raise DeviceError("the MPI job failed (rank 0 said why)")
    return {"bytes": plan["n"], "summary": comm.bcast(plan.get("summary", ""), root=0)}


def _request(plan):
    from .registry import lookup
    from .request import make_request

    return make_request(lookup(plan["cipher"]), plan["key"], plan["iv"], plan["encrypt"], None,
                        plan["sector_size"], plan["start_sector"], plan["impl"], plan["allow_weak"])


def _ranges(plan) -> list:
    n, step = plan["n"], plan["step"]
    return [(a, min(n, a + step)) for a in range(0, n, step)] or [(0, 0)]


class _Runner:
    """A rank's ranges: read from the input, run on this node's engines, written in place."""

    def __init__(self, plan, device: str, rank: int):
        from .route import route
        from .settings import injected_faults

        self.plan, self.rank = plan, rank
        self.req = _request(plan)
        self.fin = self.fout = None
        if not plan["send"]:
            self.fin = os.open(plan["in"], os.O_RDONLY | os.O_CLOEXEC)
            self.fout = os.open(plan["partial"], os.O_WRONLY | os.O_CLOEXEC)
        size = plan["step"] if plan["n"] is None else min(plan["n"], plan["step"])
        r = route(self.req, device, size or None)
        self.device = r.device
        self.session = r.engine.session(self.req)
        self.fault = injected_faults().get(f"mpi:{rank}")
        self.ran = 0

    def run(self, a: int, b: int) -> None:
        import numpy as np

        self._injected(b - a)
        if b <= a:
            return
        p = self.plan
        buf = np.empty(b - a, dtype=np.uint8)
        if _positioned(os.preadv, self.fin, buf, p["in_offset"] + a) != b - a:
            raise OSError(f"{p['in']}: the input changed size while it was read")
        bs = self.req.block_size
        chain = self.req.mode.chain_at(self.req, _FileWindow(self.fin, p["in_offset"]), a // bs) \
            if a else None
        self.session.crypt(buf, buf, a // bs, chain)
        if _positioned(os.pwritev, self.fout, buf, p["out_offset"] + a) != b - a:
            raise OSError(f"{p['partial']}: a write stopped short (disk full?)")
        self.ran += b - a

    def _injected(self, nbytes: int) -> None:
        """The fault switch (mpi:RANK:fail|kill:BYTES): this rank fails, or dies, once it ran BYTES."""
        if self.fault is not None and self.ran + nbytes > self.fault[1]:
            if self.fault[0] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise DeviceError(f"injected failure (CIPHERGRID_FAULT) on rank {self.rank}")

    def crypt(self, a: int, data: bytes, chain) -> bytes:
        """Range ``a`` sent by the manager: its bytes back."""
        import numpy as np

        self._injected(len(data))
        buf = np.frombuffer(bytearray(data), dtype=np.uint8)
        if buf.nbytes:
            self.session.crypt(buf, buf, a // self.req.block_size, chain)
        self.ran += len(data)
        return buf.tobytes()

    def close(self) -> None:
        self.session.close()
        for fd in (self.fin, self.fout):
            if fd is not None:
                os.close(fd)


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


class _FileWindow:
    """The input file as ``chain_at`` reads it (a slice: bytes at those offsets)."""

    def __init__(self, fd: int, offset: int):
        self.fd, self.offset = fd, offset

    def __getitem__(self, sl):
        return os.pread(self.fd, sl.stop - sl.start, self.offset + sl.start)


def _finish(plan) -> None:
    """Every range confirmed: the partial output synced and renamed to its name."""
    if not plan["no_sync"]:
        fd = os.open(plan["partial"], os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    os.replace(plan["partial"], plan["out"])


def _discard(plan) -> None:
    try:
        os.unlink(plan["partial"])
    except OSError:
        pass


def _alone(plan, device) -> int:
    runner = _Runner(plan, device, 0)
    try:
        for a, b in _ranges(plan):
            runner.run(a, b)
    except BaseException:
        runner.close()
        _discard(plan)
        raise
    runner.close()
    _finish(plan)
    plan["summary"] = f"rank 0 alone on {runner.device}"
    return 0


def _manage(comm, plan) -> int:
    """Rank 0: deal the ranges to the workers, IN_FLIGHT each (the next one waits in a worker's
    queue while it runs one: the manager's answer is hidden behind the range); re-deal a failed
    worker's ranges; rename at the end (or remove the partial output)."""
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
                    comm.send(("range",) + rng, dest=w, tag=1)

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
                queue[:0] = inflight.pop(w)   # (its ranges first, in their order)
                live.discard(w)
                failures.append(f"rank {w}: {msg[3]}")
                comm.send(("stop",), dest=w, tag=1)
        ok = done == total
        dealing = time.perf_counter() - t_start
    finally:
        for w in live:   # (every live worker waits for a message: the ones parked too)
            comm.send(("stop",), dest=w, tag=1)
    if not ok:
        _discard(plan)
        print("ciphergrid: error: every worker failed: " + "; ".join(failures), file=sys.stderr)
        return 1
    _finish(plan)
    n = plan["n"] or 1
    plan["summary"] = ", ".join(f"rank {w} ({devices.get(w, '?')}) {v / n:.0%}"
                                for w, v in sorted(shares.items())) + (
        f"; the manager's work {1e6 * handling / max(1, total):.0f} us per range, "
        f"{handling / dealing if dealing else 0:.2%} of the dealing") + (
        f"; failures: {'; '.join(failures)}" if failures else "")
    if failures:
        print("ciphergrid: warning: " + "; ".join(failures) + " (their ranges were run again "
              "by the others; the output is whole)", file=sys.stderr)
    return 0


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
            comm.send(("stop",), dest=w, tag=1)
    return live, sorted(waiting), devices, failures


def _next_message(comm, st):
    """The next worker's message (``st``: its source).  Polled with short sleeps, not MPI's
    blocking receive, which spins a core: the manager usually shares its node with a worker."""
    from mpi4py import MPI

    pause = 0.00005
    while not comm.Iprobe(source=MPI.ANY_SOURCE, tag=0, status=st):
        time.sleep(pause)
        pause = min(pause * 2, POLL_MAX_S)
    return comm.recv(source=st.Get_source(), tag=0)


class _Sender:
    """Rank 0 when it sends the data (a pipe, stdin, stdout, --mpi-send), as seed 002's manager
    did: it reads the input in ranges and deals each with its bytes to the next worker that
    asks (two per worker in flight at most; a serial mode's one at a time, each after the one
    before, whose output gives its chaining value), and writes the results: into the partial
    output file where they belong, or in order to a stream."""

    def __init__(self, plan, src, header: bytes):
        self.plan, self.src, self.header = plan, src, header
        self.req = _request(plan)
        self.fd = (os.open(plan["partial"], os.O_WRONLY | os.O_CLOEXEC) if plan["partial"]
                   else 1)
        self.ahead: dict = {}    # a stream's results waiting for the ones before them
        self.next = 0            # a stream: the next byte to write
        if header and self.fd == 1:
            _write_all(1, header)

    def close(self) -> None:
        self.src.close()
        if self.fd != 1:
            os.close(self.fd)

    def _read(self, k: int) -> bytes:
        parts, got = [], 0
        while got < k:
            b = self.src.read(k - got)
            if not b:
                break
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def _write(self, a: int, out: bytes) -> None:
        if self.fd != 1:
            if os.pwrite(self.fd, out, self.plan["out_offset"] + a) != len(out):
                raise OSError(f"{self.plan['partial']}: a write stopped short (disk full?)")
            return
        self.ahead[a] = out
        while self.next in self.ahead:
            piece = self.ahead.pop(self.next)
            _write_all(1, piece)
            self.next += len(piece)

    def _chain(self, a: int, prev_in, prev_out):
        if not a or not self.req.mode.carries:
            return None
        return self.req.mode.carry(self.req, prev_in, prev_out)

    def manage(self, comm, device) -> int:
        from mpi4py import MPI

        plan, req = self.plan, self.req
        step, serial = plan["step"], plan["serial"]
        if comm.size == 1:   # (alone: it runs the ranges itself)
            runner = _Runner(plan, device, 0)
            try:
                pos, prev_in, prev_out = 0, None, None
                while True:
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
            except BaseException:
                runner.close()
                if plan["partial"]:
                    _discard(plan)
                raise
            runner.close()
            return self._done(pos, {0: pos}, [])
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
                    comm.send(("data", a, data, chain), dest=w, tag=1)
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
                    comm.send(("stop",), dest=w, tag=1)
        except BaseException as e:
            if plan["partial"]:
                _discard(plan)
            if isinstance(e, (Error, OSError)):
                print(f"ciphergrid: error: {e}", file=sys.stderr)
                return 1
            raise
        finally:
            for w in live:
                comm.send(("stop",), dest=w, tag=1)
        return self._done(pos, shares, failures)

    def _done(self, total: int, shares: dict, failures: list) -> int:
        plan = self.plan
        if plan["partial"]:
            if plan["n"] is None:
                os.ftruncate(self.fd, plan["out_offset"] + total)
            _finish(plan)
        n = total or 1
        plan["summary"] = (f"rank 0 sent {total} bytes; " + ", ".join(
            f"rank {w} {v / n:.0%}" for w, v in sorted(shares.items())))
        if failures:
            print("ciphergrid: warning: " + "; ".join(failures) + " (their ranges were run "
                  "again by the others; the output is whole)", file=sys.stderr)
        return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        k = os.write(fd, view)
        view = view[k:]


def _work(comm, plan, device) -> None:
    """A worker: ask, run, report, until told to stop."""
    try:
        runner = _Runner(plan, device, comm.rank)
    except (Error, OSError) as e:
        comm.send((_BROKEN, f"{type(e).__name__}: {e}"[:300]), dest=0, tag=0)
        comm.recv(source=0, tag=1)
        return
    comm.send((_READY, runner.device), dest=0, tag=0)
    try:
        while True:
            msg = comm.recv(source=0, tag=1)
            if msg[0] not in ("range", "data"):
                return
            a = msg[1]
            b = msg[2] if msg[0] == "range" else a + len(msg[2])
            try:
                if msg[0] == "range":
                    runner.run(a, b)
                    reply = (_DONE, a, b)
                else:
                    reply = (_DONE, a, b, runner.crypt(a, msg[2], msg[3]))
            except (Error, OSError) as e:
                comm.send((_FAILED, a, b, f"{type(e).__name__}: {e}"[:300]), dest=0, tag=0)
                while comm.recv(source=0, tag=1)[0] != "stop":   # (a range dealt ahead: not ours now)
                    pass
                return
            comm.send(reply, dest=0, tag=0)
    finally:
        runner.close()
