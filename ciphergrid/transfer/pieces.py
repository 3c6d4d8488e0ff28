"""A stream through a host-side cipher call, in pieces: the file path of the engines that
encipher host memory themselves (OpenSSL on the CPU's cores).

``threads`` workers each take the next piece of the input, encipher it in their own buffer
(allocated once, reused: no page faults after the first piece) and write it out.  Where an end
is a regular file it is read or written at the piece's offset (``preadv``/``pwrite``), by every
worker at once; a pipe, a terminal or a device is read in order (one worker at a time, under a
lock) and written in order (each worker waits for its turn).  So reading, enciphering and
writing overlap across workers, and a regular file pair is read and written in parallel, which
a plain ``cat`` (one thread, one buffer) is not.

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

import os
import threading

import numpy as np

from ..errors import InvalidArgument
from . import files

#: bytes per piece: small enough for a few pieces per worker to stay in the last-level cache
#: between the read, the cipher and the write (measured: docs/benchmarks.md, files)
PIECE = 4 << 20


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


def stream(req, src, dst, crypt, *, piece: int | None = None, threads: int | None = None,
           progress=None) -> int:
    """Encipher ``src`` into ``dst`` (binary file objects or descriptors) with
    ``crypt(req_at_piece, src_array, dst_array)``; returns the bytes written.

    ``crypt`` enciphers one piece in the calling worker thread (a Request from
    ``req.at(first_block, chain)``; ``src_array`` and ``dst_array`` may be the same array: the
    piece is enciphered in place where the mode allows).  ``piece``: bytes per piece (rounded to
    whole blocks / data units); ``threads``: workers (default: the CPU count)."""
    ends = files.ends(src, dst)
    for fd in (ends.fd_in, ends.fd_out):
        files.widen_pipe(fd)
    bs = req.block_size
    unit = req.sector_size or bs
    piece = max(unit, (piece or PIECE) // unit * unit)
    size = ends.size
    if size is not None:
        npieces = -(-size // piece)
        threads = max(1, min(threads or os.cpu_count() or 1, npieces or 1))
    else:
        npieces = None
        threads = max(1, threads or os.cpu_count() or 1)
    mode = req.mode
    behind = mode.reads_behind(req)                 # CBC decryption: the input block before
    serial = not mode.parallel(req.encrypt)         # CBC encryption: the chain of the output
    in_place = not serial
    stop = threading.Event()
    cond = threading.Condition()
    ciphers, writes = _Turns(stop, cond), _Turns(stop, cond)
    state = {"next": 0, "eof": False, "tail": req.iv if behind else None, "chain": None,
             "written": 0, "error": None}
    lock = threading.Lock()

    def claim(buf: np.ndarray):
        """The next piece: (index, bytes in it, the chaining value it starts with)."""
        if ends.reg_in:
            with lock:
                k = state["next"]
                if k >= npieces:
                    return None
                state["next"] = k + 1
            lo = k * piece
            want = min(piece, size - lo)
            m = files.read_full(ends.fd_in, memoryview(buf)[bs: bs + want], ends.base_in + lo)
            if m != want:
                raise InvalidArgument(f"the input changed while it was read (it ends at {lo + m} of {size} bytes)")
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
        with lock:  # a pipe: one reader at a time, in order
            if state["eof"] or stop.is_set():
                return None
            k = state["next"]
            m = files.read_full(ends.fd_in, memoryview(buf)[bs: bs + piece], None)
            if m < piece:
                state["eof"] = True
            if m == 0:
                return None
            state["next"] = k + 1
            tail = state["tail"]
            if behind and m >= bs:
                state["tail"] = bytes(buf[bs + m - bs: bs + m])
            return k, m, tail

    def work(i: int) -> None:
        buf = np.empty(bs + piece, np.uint8)          # one block in front: room for the tail read
        out = buf if in_place else np.empty(bs + piece, np.uint8)
        try:
            while not stop.is_set():
                got = claim(buf)
                if got is None:
                    return
                k, m, tail = got
                lo = k * piece
                piece_in, piece_out = buf[bs: bs + m], out[bs: bs + m]
                if serial:
                    ciphers.wait(k)
                    crypt(req.at(lo // bs, state["chain"]) if k else req, piece_in, piece_out)
                    state["chain"] = mode.carry(req, piece_in, piece_out)
                    ciphers.done(k)
                else:
                    crypt(req.at(lo // bs, tail) if k else req, piece_in, piece_out)
                if stop.is_set():
                    return
                if ends.reg_out:
                    files.write_all(ends.fd_out, memoryview(piece_out), ends.base_out + lo)
                    with lock:
                        state["written"] += m
                        if progress is not None:
                            progress(m)
                else:
                    writes.wait(k)
                    try:
                        files.write_all(ends.fd_out, memoryview(piece_out), None)
                        with lock:
                            state["written"] += m
                            if progress is not None:
                                progress(m)
                    finally:
                        writes.done(k)
        except _Stop:
            return
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            with lock:
                if state["error"] is None:
                    state["error"] = e
            stop.set()
            with cond:
                cond.notify_all()
        finally:
            with lock:
                state["running"] -= 1
                if state["running"] == 0:
                    finished.set()

    # The calling thread waits on an Event, not in Thread.join: a signal raised inside join()
    # marks a running thread as stopped (CPython bpo-45274), and it would then not be waited for.
    finished = threading.Event()
    state["running"] = threads
    workers = [threading.Thread(target=work, args=(i,), name=f"ciphergrid-piece-{i}", daemon=True)
               for i in range(threads)]
    for t in workers:
        t.start()
    try:
        while not finished.wait(0.25):
            pass
    except BaseException:
        stop.set()
        with cond:
            cond.notify_all()
        finished.wait(10.0)  # each worker finishes the read, cipher call or write it is in
        raise
    if state["error"] is not None:
        raise state["error"]
    if ends.reg_out:
        files.seek_to(dst, ends.fd_out, ends.base_out + state["written"])
    return state["written"]


__all__ = ["stream", "PIECE"]
