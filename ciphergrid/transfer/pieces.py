"""A stream through a host-side cipher call, in pieces: the file path of the engines that
encipher host memory themselves (OpenSSL on the CPU's cores).

``threads`` workers each take the next piece of the input, encipher it in their own buffer
(allocated once, reused: no page faults after the first piece) and write it out.  Where an end
is a regular file it is read or written at the piece's offset (``preadv``/``pwrite``): read by
every worker at once, written by one worker at a time in any order (under a lock: the kernel
serialises buffered writes to one file on its inode lock anyway, and a writer waiting there spins
on a core where one waiting on our lock sleeps); a pipe, a terminal or a device is read in order
(one worker at a time, under a lock) and written in order (each worker waits for its turn).
So reading, enciphering and writing overlap across workers, which a plain ``cat`` (one thread,
one buffer) does not.

The mode decides what a piece needs from the ones before it (``Mode.reads_behind``: CBC
decryption takes the input block before the piece; a serial direction, CBC encryption, takes the
chaining value its predecessor produced, so those pieces are enciphered one after the other while
the reads and writes still overlap).

Interruption: the calling thread only waits.  A signal raised there (``interrupts``), or a
failure in a worker, stops every worker after its current read, encipherment or write; then the
exception goes up.  Progress (``progress(n)``) is reported for bytes written, in order where the
output is written in order, so the count of a write-through output is exact.
"""

from __future__ import annotations

import threading

from .. import interrupts
from ..errors import InvalidArgument
from . import files
from .._lazy import numpy_for

np = numpy_for(__name__)

#: bytes per piece: small enough for a few pieces per worker to stay in the last-level cache
#: between the read, the cipher and the write (docs/benchmarks.md, 'Files'): 1 MiB on a
#: disk filesystem (ext4), 4 MiB on a RAM disk
PIECE, PIECE_TMPFS = 1 << 20, 4 << 20
#: workers of the piece path: more only contend for the output's inode lock
#: (docs/benchmarks.md, 'Files')
WORKERS = 4
#: cores from which a regular input and output on a RAM disk are mapped instead (each worker
#: enciphers a range from one mapping into the other: no read or write copy at all; faster than
#: cat with many cores, slower than the pieces with few and on ext4: docs/benchmarks.md,
#: 'Figures moved from code comments')
MAPPED_MIN_CORES = 8
MAPPED_STEP = 16 << 20


def plan(ends, req, piece=None, threads=None, cores=None) -> tuple[str, int, int]:
    """("mapped" or "pieces", bytes per piece, workers) for these ends: the measured choice per
    filesystem type and core count (``cores``: None, this thread's runtime's thread budget),
    unless ``piece``/``threads`` are given."""
    if cores is None:
        from ..runtime import current

        cores = current().threads.budget
    tmpfs = ends.reg_out and files.fs_magic(ends.fd_out) == files.TMPFS_MAGIC
    if (tmpfs and ends.reg_in and ends.size and cores >= MAPPED_MIN_CORES and piece is None
            and req.mode.parallel(req.encrypt)):
        return "mapped", MAPPED_STEP, threads or min(16, cores)
    return "pieces", piece or (PIECE_TMPFS if tmpfs else PIECE), threads or min(WORKERS, cores)


class _Stop(Exception):
    """Raised inside a worker when the stream is being stopped."""


class _Turns:
    """Pieces passing a stage in order: ``wait(k)`` returns when piece k may go, ``done(k)``
    lets piece k + 1 go."""

    def __init__(self, stop: threading.Event, cond: threading.Condition):
        self.next = 0
        self.stop = stop
        self.cond = cond

    def wait(self, k: int) -> None:
        with self.cond:
            while self.next != k:
                if self.stop.is_set():
                    raise _Stop()
                self.cond.wait(0.05)
        if self.stop.is_set():
            raise _Stop()

    def done(self, k: int) -> None:
        with self.cond:
            self.next = k + 1
            self.cond.notify_all()


def _run_workers(n: int, body, stop: threading.Event, name: str, on_stop=None) -> None:
    """Run ``body(i)`` in ``n`` threads and wait for all of them.  A worker ends by returning or
    raising _Stop; the first other exception sets ``stop`` (and calls ``on_stop``), the others
    stop at their next look at it, and the exception is raised here once all have ended.  An
    exception in the waiting thread (a signal, held while the threads start) stops them the same
    way and goes on up after they ended (at most 10 s: each finishes the read, cipher call or write
    it is in).  The waiting is
    on an Event, not in Thread.join: a signal raised inside join() marks a running thread as
    stopped (CPython bpo-45274), and it would then not be waited for."""
    if n <= 0:
        return
    lock = threading.Lock()
    state = {"running": n, "error": None}
    finished = threading.Event()

    def halt() -> None:
        stop.set()
        if on_stop is not None:
            on_stop()

    def run(i: int) -> None:
        try:
            body(i)
        except _Stop:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            with lock:
                if state["error"] is None:
                    state["error"] = e
            halt()
        finally:
            with lock:
                state["running"] -= 1
                if state["running"] == 0:
                    finished.set()

    try:
        # (a signal while a thread starts would leave started workers unwaited for: held until
        # all have started, then raised here)
        with interrupts.deferred():
            for i in range(n):
                threading.Thread(target=run, args=(i,), name=f"ciphergrid-{name}-{i}",
                                 daemon=True).start()
        while not finished.wait(0.25):
            pass
    except BaseException:
        halt()
        finished.wait(10.0)
        raise
    if state["error"] is not None:
        raise state["error"]


class _Shared:
    """What the workers of one piece stream share: the stop flag (and the condition its waiters
    wait on), the next piece's index (``next``; ``eof`` once a pipe's input ended: both read and
    set under ``lock``), the output's in-order turns, the bytes written (``progress(n)`` told of
    each write)."""

    def __init__(self, ends, progress, npieces: int | None):
        self.ends, self.progress, self.npieces = ends, progress, npieces
        self.stop = threading.Event()
        self.cond = threading.Condition()
        self.writes = _Turns(self.stop, self.cond)
        self.lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.next, self.eof, self.written = 0, False, 0

    def wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def claim(self, step: int) -> tuple[int, int, int] | None:
        """A regular input's next piece of ``step`` bytes: (its index, its offset, its bytes),
        or None where none is left."""
        with self.lock:
            k = self.next
            if k >= self.npieces:
                return None
            self.next = k + 1
        lo = k * step
        return k, lo, min(step, self.ends.size - lo)

    def read_at(self, view: memoryview, lo: int) -> None:
        """``view`` filled from the regular input at ``lo``; InvalidArgument where it ends
        sooner than its size said (files.read_piece)."""
        files.read_piece(self.ends, view, lo)

    def write(self, k: int, view: memoryview, offset: int) -> None:
        """Piece ``k``'s output: a regular output's at ``offset`` (one pwrite at a time: see the
        module doc), else in order."""
        ends = self.ends
        if ends.reg_out:
            with self._write_lock:
                files.write_all(ends.fd_out, view, ends.base_out + offset)
            self._wrote(len(view))
            return
        self.writes.wait(k)
        try:
            files.write_all(ends.fd_out, view, None)
            self._wrote(len(view))
        finally:
            self.writes.done(k)

    def _wrote(self, m: int) -> None:
        with self.lock:
            self.written += m
            if self.progress is not None:
                self.progress(m)

    def run(self, threads: int, body, name: str, dst) -> int:
        """``body(i)`` on ``threads`` workers (:func:`_run_workers`); a regular output's offset
        left after what was written; returns the bytes written."""
        _run_workers(threads, body, self.stop, name, on_stop=self.wake)
        if self.ends.reg_out:
            files.seek_to(dst, self.ends.fd_out, self.ends.base_out + self.written)
        return self.written


def overlapped(pieces, process, write, *, inputs: list, outputs: list) -> None:
    """Read, work and write at once over reused buffers, each stage in a thread of its own (the
    calling thread only waits: :func:`_run_workers`, so a signal or a stage's failure stops the
    others after their current step, then goes up).

    ``pieces(take)`` yields ``(buffer, bytes, final)`` in order, each buffer from ``take()`` (the
    ``inputs``, handed back once processed); ``process(buffer, bytes, final, out)`` returns the
    view of ``out`` (one of ``outputs``) to write; ``write(view)`` writes them in order.  The
    last piece is the one marked final."""
    import queue

    stop = threading.Event()
    free_in, free_out, full, done = (queue.Queue() for _ in range(4))
    for b in inputs:
        free_in.put(b)
    for b in outputs:
        free_out.put(b)

    def get(q):
        while True:
            try:
                return q.get(timeout=0.05)
            except queue.Empty:
                if stop.is_set():
                    raise _Stop from None

    def body(i: int) -> None:
        if i == 0:                                  # the reader
            for item in pieces(lambda: get(free_in)):
                full.put(item)
                if item[2] or stop.is_set():
                    return
        elif i == 1:                                # the work
            while True:
                buf, n, final = get(full)
                out = get(free_out)
                view = process(buf, n, final, out)
                free_in.put(buf)
                done.put((out, view, final))
                if final:
                    return
        else:                                       # the writer
            while True:
                out, view, final = get(done)
                write(view)
                free_out.put(out)
                if final:
                    return

    _run_workers(3, body, stop, "stage")


def stream(req, src, dst, crypt, *, piece: int | None = None, threads: int | None = None,
           progress=None, cores: int | None = None) -> int:
    """Encipher ``src`` into ``dst`` (binary file objects or descriptors) with
    ``crypt(req_at_piece, src_array, dst_array)``; returns the bytes written.

    ``crypt`` enciphers one piece in the calling worker thread (a Request from
    ``req.at(first_block, chain)``; ``src_array`` and ``dst_array`` may be the same array: the
    piece is enciphered in place where the mode allows).  ``piece``: bytes per piece (rounded to
    whole blocks / data units); ``threads``: workers; either None: :func:`plan`'s measured choice
    for the ends' filesystem and ``cores`` (the engine's thread budget; None: this thread's
    runtime's), which may map both files instead."""
    ends = files.ends(src, dst)
    for fd in (ends.fd_in, ends.fd_out):
        files.widen_pipe(fd)
    how, piece, threads = plan(ends, req, piece, threads, cores)
    if how == "mapped":
        done = _mapped(req, ends, crypt, threads, progress)
        if done is not None:
            files.seek_to(dst, ends.fd_out, ends.base_out + done)
            return done
    bs = req.block_size
    unit = req.sector_size or bs
    piece = max(unit, piece // unit * unit)
    size = ends.size
    if size is not None:
        npieces = -(-size // piece)
        threads = max(1, min(threads, npieces or 1))
    else:
        npieces = None
        threads = max(1, threads)
    mode = req.mode
    behind = mode.reads_behind(req)                 # CBC decryption: the input block before
    serial = not mode.parallel(req.encrypt)         # CBC encryption: the chain of the output
    in_place = not serial
    sh = _Shared(ends, progress, npieces)
    ciphers = _Turns(sh.stop, sh.cond)
    state = {"tail": req.iv if behind else None, "chain": None}

    def claim(buf: memoryview):
        """The next piece: (index, bytes in it, the chaining value it starts with)."""
        if ends.reg_in:
            got = sh.claim(piece)
            if got is None:
                return None
            k, lo, m = got
            sh.read_at(memoryview(buf)[bs: bs + m], lo)
            tail = None
            if behind:
                if k == 0:
                    tail = req.iv
                else:
                    got = files.read_full(ends.fd_in, memoryview(buf)[:bs], ends.base_in + lo - bs)
                    if got != bs:
                        raise InvalidArgument("the input changed while it was read")
                    tail = bytes(buf[:bs])
            return k, m, tail
        with sh.lock:  # a pipe: one reader at a time, in order
            if sh.eof or sh.stop.is_set():
                return None
            k = sh.next
            m = files.read_full(ends.fd_in, memoryview(buf)[bs: bs + piece], None)
            if m < piece:
                sh.eof = True
            if m == 0:
                return None
            sh.next = k + 1
            tail = state["tail"]
            if behind and m >= bs:
                state["tail"] = bytes(buf[bs + m - bs: bs + m])
            return k, m, tail

    def work(i: int) -> None:
        # byte buffers (no numpy on the command line's OpenSSL path: see _lazy), one block in
        # front: room for the tail read
        buf = memoryview(bytearray(bs + piece))
        out = buf if in_place else memoryview(bytearray(bs + piece))
        while not sh.stop.is_set():
            got = claim(buf)
            if got is None:
                return
            k, m, tail = got
            lo = k * piece
            if mode.whole_blocks and m % bs:  # a partial block ends the input (a pipe's size is
                req.check_length(lo + m)      # unknown until then): raises, naming its whole length
            piece_in, piece_out = buf[bs: bs + m], out[bs: bs + m]
            if serial:
                ciphers.wait(k)
                crypt(req.at(lo // bs, state["chain"]) if k else req, piece_in, piece_out)
                state["chain"] = mode.carry(req, piece_in, piece_out)
                ciphers.done(k)
            else:
                crypt(req.at(lo // bs, tail) if k else req, piece_in, piece_out)
            if sh.stop.is_set():
                return
            sh.write(k, piece_out, lo)

    return sh.run(threads, work, "piece", dst)


def _mapped(req, ends, crypt, threads: int, progress) -> int | None:
    """The input and the output mapped (the output reserved first: a full disk fails here), each
    worker enciphering ranges of MAPPED_STEP from one mapping into the other; None where either
    cannot be mapped (the caller takes the piece path)."""
    size = ends.size
    out_map, out = files.map_output(ends.fd_out, ends.base_out, size, "", array=False)
    if out is None:
        return None
    in_map, inp = files.map_input(ends.fd_in, ends.base_in, size, array=False)
    if inp is None:
        del out
        files.close_map(out_map)
        return None
    bs = req.block_size
    unit = req.sector_size or bs
    step = max(unit, MAPPED_STEP // unit * unit)
    n = -(-size // step)
    stop = threading.Event()
    lock = threading.Lock()
    nxt = [0]
    bufs = [inp, out]   # the workers' views; dropped before the mappings close
    del inp, out

    def work(i: int) -> None:
        src, dst = bufs
        while not stop.is_set():
            with lock:
                k = nxt[0]
                nxt[0] = k + 1
            if k >= n:
                return
            lo = k * step
            hi = min(size, lo + step)
            first = lo // bs
            crypt(req.at(first, req.mode.chain_at(req, src, first)) if lo else req,
                  src[lo:hi], dst[lo:hi])
            if progress is not None:
                with lock:
                    progress(hi - lo)

    try:
        _run_workers(min(threads, n), work, stop, "map")
    finally:
        bufs.clear()
        files.close_map(in_map)
        files.close_map(out_map)
    return size


__all__ = ["stream", "plan", "PIECE", "PIECE_TMPFS", "WORKERS"]
