"""One file over many nodes: ``mpiexec -n N ciphergrid encrypt|decrypt ... --mpi`` (mpi4py).

Seed 002's resource manager as an MPI job (docs/mpi.md):

* **rank 0 is the manager**: it checks the arguments, the key (a passphrase is asked and derived
  there only) and the output (``fileio.Output``: the one-process command's rules and words), and
  deals the message out in ranges (``--mpi-range``, default 64 MiB, on the mode's grain) to
  whichever worker asks next, so a slow worker never holds the job; it takes no range itself
  (one rank alone: it runs them all);
* **the other ranks are workers**: each reads its ranges of the input file and writes them into
  the partial output file itself (positioned I/O: the files are on a filesystem every node sees),
  running them on its node's engines (``--device``: ``auto``, a GPU, ``all`` for the scheduler
  over every device of the node);
* **rank 0 sends the data** instead where the files are not for the workers to open: an input
  that is not a regular file, an output written through (stdout, a FIFO, a device), ``--mpi-send``;
* **nothing partial**: the workers' output is ``.NAME.ciphergrid-partial`` in the output's folder,
  renamed to NAME by rank 0 only after every range was confirmed.  Rank 0 removes it on any
  failure or signal it sees, and a sentinel process it starts (outside the job, so that MPI's
  SIGKILL of every rank does not reach it) removes it when rank 0 ends without naming it; a later
  run on the same output removes one that a lost node left (and says so);
* **one outcome**: every rank ends with rank 0's exit code; only rank 0 says why.  A worker that
  gets a signal tells rank 0, which ends the job as if it had got it;
* **faults**: a worker whose range fails is told to stop and its range is dealt to another one
  (``CIPHERGRID_FAULT=mpi:RANK:fail:BYTES`` makes rank RANK fail once it has run BYTES;
  ``mpi:RANK:kill:BYTES`` kills it, which ends the MPI job; ``mpi:RANK:hang:BYTES`` stops it);
* CBC encryption (serial) runs on one worker, as one range.

The keys go from rank 0 to the workers inside MPI's messages (never on a command line, never
logged), as the request's fields.
"""

from __future__ import annotations

import os
import pickle
import signal
import stat
import subprocess
import sys
import time

from .errors import DeviceError, Error, InvalidArgument

#: bytes per range dealt (on the mode's grain)
RANGE = 64 << 20
#: the longest sleep between two looks for a message (a manager or a worker waiting)
POLL_MAX_S = 0.001
#: ranges a worker holds at once (the file mode): one running, the next already in its queue
IN_FLIGHT = 2
PARTIAL_SUFFIX = ".ciphergrid-partial"
#: how long a worker that got a signal waits for rank 0 to end the job, and rank 0 for every
#: worker to answer that it ends
SIGNAL_WAIT_S = 10.0

_READY, _DONE, _FAILED, _BROKEN = "ready", "done", "failed", "broken"
_SIGNALLED, _ENDED = "signalled", "ended"   # a worker got a signal; a worker has the outcome
#: message tags: a worker's reports; rank 0's ranges and stops; the job's outcome; the plan
_UP, _DOWN, _END, _PLAN = 0, 1, 2, 3


def partial_path(out: str) -> str:
    """The partial output of ``out``: ``.NAME.ciphergrid-partial`` in the same folder."""
    folder, name = os.path.split(os.path.abspath(out))
    return os.path.join(folder, f".{name}{PARTIAL_SUFFIX}")


def run(args, encrypt: bool, keying) -> str:
    """The command on this rank: "ok" on every rank, or the job's error raised on every rank
    (rank 0's, with its message; the others' silenced, so that the command line exits with
    rank 0's code everywhere and says why once).  ``keying``: the command line's key reader
    (cli.keying._keying), run on rank 0 only."""
    comm = _world(InvalidArgument)
    _noted.update(on=False, signum=None, raised=False, now=False)
    if comm.rank != 0:
        _noting()
    plan = _share_plan(comm, lambda: _Job.for_command(args, encrypt, keying), True)
    summary = _execute(comm, plan, args.device, command=True)
    if comm.rank == 0 and args.verbose:
        print(f"ciphergrid: {plan['cipher']} {'encrypt' if encrypt else 'decrypt'} over "
              f"{comm.size} ranks: {summary}", file=sys.stderr)
    return "ok"


def _world(error):
    try:
        from mpi4py import MPI
    except ImportError:
        raise error("--mpi needs mpi4py and an MPI library: pip install 'ciphergrid[mpi]' "
                    "(docs/mpi.md)") from None
    return MPI.COMM_WORLD


def crypt_file(src: str, dst: str, cipher: str, key, iv=None, *, encrypt: bool = True, comm=None,
               device: str = "auto", sector_size=None, start_sector=None, allow_weak: bool = False,
               range_bytes: int = RANGE, sync: bool = True) -> dict:
    """For programs that are MPI jobs already: every rank of ``comm`` (default COMM_WORLD) calls
    this with the same arguments (collective).  Rank 0 checks them and deals ``src`` in ranges
    to the other ranks, which encipher them on their node's ``device`` into ``dst``'s partial
    file; ``dst`` appears when every range is done.  Returns {"bytes", "summary"} on every rank;
    raises the same error on every rank when the job failed."""
    comm = comm or _world(DeviceError)

    def job():
        from .api import _request

        req = _request(cipher, bytes(key), bytes(iv) if iv is not None else None, encrypt, None,
                       sector_size, start_sector, False, None, allow_weak)
        if not os.path.isfile(src):
            raise InvalidArgument(f"the input must be a regular file, not {src}")
        return _Job.for_files(req, src, 0, os.path.getsize(src), dst, b"", range_bytes, sync)

    plan = _share_plan(comm, job, False)
    return {"bytes": plan["n"], "summary": _execute(comm, plan, device, command=False)}


def _share_plan(comm, make_job, command: bool):
    """Rank 0 makes the job (``make_job``) and sends its plan to every rank; a failure there
    ends every rank (_end).  The plan, on every rank; rank 0's
    ``plan["job"]``: its job (not sent)."""
    if comm.rank == 0:
        try:
            job = make_job()
        except BaseException as e:
            _tell(comm, _PLAN, None, _portable(e))
            _end(comm, e, command)
        _tell(comm, _PLAN, job.plan, None)
        job.plan["job"] = job
        return job.plan
    plan, err = _await(comm, _PLAN)
    if plan is None:
        _end(comm, err, command)
    return plan


# -- rank 0: the job --------------------------------------------------------------------------------
class _Job:
    """Rank 0's side of a job: the plan every rank gets, the output (``fileio.Output``: replaced
    when everything succeeded, or written through), the sentinel of a partial file the workers
    write by name, and the sender when rank 0 sends the data."""

    def __init__(self, plan, out, sentinel=None, sender=None):
        self.plan, self.out, self.sentinel, self.sender = plan, out, sentinel, sender

    @classmethod
    def for_command(cls, args, encrypt: bool, keying) -> "_Job":
        """The command line's job: its request, input and output, checked as the one-process
        command checks them and in the same words (``keying``: the command line's key reader;
        its passphrase header too)."""
        from . import aeads
        from .api import _request
        from .cli.keying import _salted as salted
        from .fileio import Input
        from .registry import known, lookup
        from .settings import parse_bytes

        if not known(args.cipher) and aeads.is_aead(args.cipher):
            raise InvalidArgument(f"--mpi: {args.cipher.strip().lower()} is an AEAD: AEADs and "
                                  "sealed files do not run under --mpi yet")
        spec = lookup(args.cipher)
        if args.base64 or args.pad:
            raise InvalidArgument("--mpi: --base64 and --pad are not supported")
        src = Input(args.infile)
        try:
            kg = keying(args, spec, encrypt, src)
            if kg.phrase is not None and spec.mode.paddable:
                raise InvalidArgument(f"--mpi: {spec.name} with a passphrase is padded (openssl "
                                      "enc); give --key-file, or a mode without padding")
            size = src.size
            header = salted(args, spec, kg, encrypt, src.read)
            offset = size - src.size if size is not None else 0   # (a header read: skipped)
            req = _request(spec.name, kg.key, kg.iv, encrypt, None, args.sector_size,
                           args.start_sector, args.constant_time, None, args.allow_weak)
            step = parse_bytes(args.mpi_range, "--mpi-range") if args.mpi_range else RANGE
            sync = not args.no_sync
            if (not args.mpi_send and not src.is_stdin and src.regular
                    and _regular_or_new(args.outfile)):
                n = src.size
                src.close()
                return cls.for_files(req, args.infile, offset, n, args.outfile, header, step, sync)
            return cls._sending(req, src, args.outfile, header, step, sync)
        except BaseException:
            src.close()
            raise

    @classmethod
    def for_files(cls, req, src: str, offset: int, n: int, out: str, header: bytes, step: int,
                  sync: bool) -> "_Job":
        """The workers read ``src`` and write the partial file of ``out`` themselves."""
        from .fileio import Output

        _admit(req, n)
        output = Output(out, sync=sync, named=_fresh_partial)
        try:
            if output.kind != "replace":   # (made a FIFO or a device meanwhile)
                raise OSError(f"--out {out}: not a regular file any more")
            os.ftruncate(output.fd, len(header) + req.out_len(n))
            if header:
                os.pwrite(output.fd, header, 0)
            partial = partial_path(output.target)
            sentinel = _Sentinel(partial)
        except BaseException:
            output.abort()
            raise
        plan = _plan(req, os.path.abspath(src), offset, n, partial, len(header), step)
        return cls(plan, output, sentinel)

    @classmethod
    def _sending(cls, req, src, out, header: bytes, step: int, sync: bool) -> "_Job":
        """Rank 0 reads the input and writes the output: a replaced file (anonymous until named,
        as without --mpi), or one written through in order."""
        from .fileio import Output

        n = src.size
        if n is None and req.limit_refuses:
            raise InvalidArgument(f"--mpi: {req.spec.name} over an input of unknown size (its "
                                  "block limit must be counted): give a file, or --allow-weak")
        if n is not None:
            _admit(req, n)
        output = Output(out, size=None if n is None else len(header) + req.out_len(n), sync=sync)
        try:
            if header:
                output.write(header)
            plan = _plan(req, None, 0, n, None, len(header), step)
            return cls(plan, output, sender=_Sender(plan, src, output))
        except BaseException:
            output.abort()
            raise

    def commit(self) -> None:
        if self.sender is not None:
            self.sender.finish()
        self.out.commit()

    def abort(self) -> None:
        self.out.abort()

    def close(self) -> None:
        if self.sender is not None:
            self.sender.close()
        if self.sentinel is not None:
            self.sentinel.close()


def _regular_or_new(path) -> bool:
    """Whether ``--out path`` is a file the workers may write (a regular file, or none yet)."""
    if path in (None, "-"):
        return False
    target = os.path.realpath(path)
    if target.startswith(("/proc/", "/dev/fd/")):
        return False
    try:
        return stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _admit(req, n: int) -> None:
    """What the input's size decides, before any output."""
    req.admit(n)
    req.check_length(n)


def _fresh_partial(target: str) -> str:
    """The partial file's name for ``target``, a stale one (a run that could not end) removed."""
    partial = partial_path(target)
    if os.path.lexists(partial):
        os.unlink(partial)
        print(f"ciphergrid: warning: removed {partial}, left by an earlier run that did not "
              "end", file=sys.stderr)
    return partial


def _plan(req, src, offset: int, n, partial, out_offset: int, step: int) -> dict:
    """The plan every rank gets.  ``src`` None: rank 0 sends the data (``n`` None: until the
    input ends)."""
    unit = req.mode.split_unit(req)
    if unit is None:
        # serial: one range, one worker -- or, sent, ranges one after the other (each waits
        # for the one before: its chaining value)
        step = max(n or 1, 1) if src is not None else max(req.block_size, step // req.block_size
                                                          * req.block_size)
    else:
        step = max(unit, step // unit * unit)
    return {"cipher": req.spec.name, "key": bytes(req.key), "iv": bytes(req.iv) if req.iv else None,
            "encrypt": req.encrypt, "sector_size": req.sector_size,
            "start_sector": req.start_sector or None, "impl": req.impl, "allow_weak": req.allow_weak,
            "in": src, "in_offset": offset, "n": n, "partial": partial, "out_offset": out_offset,
            "step": step, "send": src is None, "serial": unit is None}


class _Sentinel:
    """A process outside the MPI job that removes the partial file when rank 0 ends without
    naming it (MPI's SIGKILL of every rank after one died, or a SIGKILL of rank 0).  It waits for
    the end of a pipe that only rank 0 holds; the file it removes is the one made (same inode)."""

    _CODE = ("import os, sys\n"
             "while os.read(0, 512):\n"
             "    pass\n"
             "try:\n"
             "    st = os.stat(sys.argv[1])\n"
             "    if (st.st_dev, st.st_ino) == (int(sys.argv[2]), int(sys.argv[3])):\n"
             "        os.unlink(sys.argv[1])\n"
             "except OSError:\n"
             "    pass\n")

    def __init__(self, path: str):
        st = os.stat(path)
        r, self.w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", self._CODE, path, str(st.st_dev), str(st.st_ino)],
                stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
        except BaseException:
            os.close(self.w)
            raise
        finally:
            os.close(r)

    def close(self) -> None:
        if self.w is not None:
            os.close(self.w)
            self.w = None
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass


# -- messages -------------------------------------------------------------------------------------
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
    with a worker) and holds off signals.  ``noted``: a signal noted meanwhile is raised
    (Interrupted) here, before a message is taken."""
    from mpi4py import MPI

    pause = 0.00005
    st = status if status is not None else MPI.Status()
    while True:
        if noted:
            _raise_noted()
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


#: the command's signals while its job runs (_noting): on, the first one's number, raised yet,
#: raised where it lands (a wait on the input: _interruptible)
_noted = {"on": False, "signum": None, "raised": False, "now": False}


def _note(signum, frame) -> None:
    if _noted["signum"] is None:
        _noted["signum"] = signum
        if _noted["now"]:
            _raise_noted()


class _interruptible:
    """A block where a signal is raised where it lands (rank 0 waiting on its input: a pipe may
    stay silent for ever)."""

    def __enter__(self):
        _raise_noted()
        _noted["now"] = True

    def __exit__(self, *exc):
        _noted["now"] = False


def _noting() -> None:
    """The command, from the plan on: a signal is noted, not raised where it lands; it is raised
    where the rank looks for messages or between two ranges (_raise_noted), so that it never
    cuts a message's receipt, a range's report or the job's ending in two."""
    from .interrupts import SIGNALS

    if _noted["on"]:
        return
    _noted["on"] = True
    for sig in SIGNALS:
        signal.signal(sig, _note)


def _raise_noted() -> None:
    """The signal noted, raised once (Interrupted)."""
    from .interrupts import Interrupted

    if _noted["signum"] is not None and not _noted["raised"]:
        _noted["raised"] = True
        raise Interrupted(_noted["signum"])


def _next_message(comm, st):
    """Rank 0: the next worker's message (``st``: its source).  A worker that got a signal:
    the job ends as if rank 0 had got it."""
    from .interrupts import Interrupted

    msg = _poll(comm, _any_source(), (_UP,), st)[1]
    if msg[0] == _SIGNALLED:
        raise Interrupted(msg[1])
    return msg


def _any_source():
    from mpi4py import MPI

    return MPI.ANY_SOURCE


# -- every rank ---------------------------------------------------------------------------------------
def _execute(comm, plan, device: str, command: bool) -> str:
    """Every rank: its part of the plan (manager, worker, or alone).  Returns the job's summary
    on every rank when the output is named; raises rank 0's error on every rank otherwise
    (``command``: the command line's; its workers silenced, its signals noted: _noting)."""
    if command:
        _noting()
    if comm.rank == 0:
        job, outcome = plan["job"], None
        try:
            if plan["send"]:
                job.sender.manage(comm, device)
            elif comm.size == 1:
                _alone(plan, device)
            else:
                _manage(comm, plan)
            job.commit()
        except BaseException as e:
            job.abort()
            if job.out.kind == "through" and not isinstance(e, BrokenPipeError):
                e.ciphergrid_written = (job.out.written, job.out.name)   # (the command line's note)
            outcome = e
        finally:
            job.close()
        summary = plan.get("summary", "")
        _tell(comm, _END, _portable(outcome), summary)
        _end(comm, outcome, command)
        return summary
    end = _work(comm, plan, device)
    outcome, summary = end if end is not None else _await(comm, _END)
    _end(comm, outcome, command)
    return summary


def _end(comm, e, command: bool) -> None:
    """Every rank, once the job's outcome ``e`` (None: success) is known everywhere: each worker
    receives what it was sent and did not take (the ranges dealt ahead) and tells rank 0 it
    ends; rank 0 waits for that from each (MPI's ending fails on a message left unreceived, and
    MPICH's mpiexec then kills every rank).  Then ``e`` is raised on every rank (``command``:
    the command line's, a worker's message dropped, and signals ignored from here on: one sent
    to every rank may reach this one late).  The command stopped by a signal: every rank ends
    with 128 + N through MPI's ending (SystemExit: the interpreter's exit finalizes MPI), so
    that MPICH's mpiexec reports that code and not its kill of the ranks left; rank 0 says it,
    once.  A worker that does not answer rank 0 in SIGNAL_WAIT_S: the error is raised as it is
    (mpiexec ends the rest)."""
    from . import interrupts

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
        """The fault switch (mpi:RANK:fail|kill|hang:BYTES): this rank fails, dies or stops
        once it ran BYTES."""
        if self.fault is not None and self.ran + nbytes > self.fault[1]:
            if self.fault[0] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault[0] == "hang":
                raise _Stalled()
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


def _alone(plan, device) -> None:
    runner = _Runner(plan, device, 0)
    try:
        for a, b in _ranges(plan):
            _raise_noted()
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
        from .fileio import read_exact

        with _interruptible():
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
                    _raise_noted()
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


def _work(comm, plan, device):
    """A worker: ask, run, report, until told to stop; the job's outcome if rank 0 sent it
    meanwhile (else None: it comes next).  A signal here is sent to rank 0, which ends the job
    for every rank."""
    from .interrupts import Interrupted

    runner = None
    try:
        try:
            runner = _Runner(plan, device, comm.rank)
        except (Error, OSError) as e:
            comm.send((_BROKEN, f"{type(e).__name__}: {e}"[:300]), dest=0, tag=_UP)
            return _stopped(comm)
        comm.send((_READY, runner.device), dest=0, tag=_UP)
        while True:
            tag, msg = _poll(comm, 0, (_END, _DOWN))
            if tag == _END:
                return msg
            if msg[0] not in ("range", "data"):
                return None
            a = msg[1]
            b = msg[2] if msg[0] == "range" else a + len(msg[2])
            try:
                if msg[0] == "range":
                    runner.run(a, b)
                    reply = (_DONE, a, b)
                else:
                    reply = (_DONE, a, b, runner.crypt(a, msg[2], msg[3]))
            except (Error, OSError) as e:
                comm.send((_FAILED, a, b, f"{type(e).__name__}: {e}"[:300]), dest=0, tag=_UP)
                return _stopped(comm)
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


def _stopped(comm):
    """A worker out of the job: the ranges dealt to it ahead dropped until its stop (or the
    job's outcome, returned)."""
    while True:
        tag, msg = _poll(comm, 0, (_END, _DOWN))
        if tag == _END:
            return msg
        if msg[0] == "stop":
            return None
