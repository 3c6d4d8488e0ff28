"""Sealed files (C2SP chunked encryption, formats/cobblestone.py) from file to file in pieces: the
command line's ``seal`` and ``open``.

A piece is a run of whole chunks (:data:`PIECE` bytes of plaintext, its sealed form
``PIECE // CHUNK`` sealed chunks), so piece k's chunks are numbered from k × PIECE // CHUNK and
it lies at a known offset on both sides.  Workers (:func:`plan`: one per core the process may run
on where OpenSSL's C loop runs the chunks) each take the next piece, read it into their own buffer
(allocated once, reused), seal or open it on their own thread (``Sealer.seal_at`` /
``Opener.open_at``, the GIL released) into their own output buffer, and write it.  As in
:mod:`.pieces`: a regular input is read at the piece's offset by every worker at once, a pipe in
order under a lock; a regular output is written at the piece's offset, one write at a time under
a lock, a pipe or a terminal in order.  The piece that ends the input is the final one (its last
chunk shorter, possibly empty); a pipe's final piece is the first that reads short.

Opening: each piece's tags are checked before any of its plaintext is written; a piece that does
not verify stops every worker (its plaintext zeroed) and raises InvalidTag.  A regular input's
length is checked before anything is read (a sealed length or InvalidTag).

A device between two regular files (opening: into an unlinked output) takes no pieces here: both
files are mapped and the whole message is one call, its chunks one AEAD batch (:func:`mapped`).

One worker (one core) is the calling thread itself (:func:`_alone`): no thread is started,
each piece read, sealed or opened, and written in turn, a write and its count never torn apart
by a signal (``interrupts.deferred``).
"""

from __future__ import annotations

import os

from . import files

#: plaintext bytes per piece (whole chunks): a few pieces per worker stay in the last-level cache
#: between the read, the cipher and the write
PIECE = 1 << 20
#: the batch path (a device): a piece is one AEAD batch of the format
BATCH_PIECE = 64 << 20


def cores() -> int:
    """This thread's runtime's thread budget: the cores the process may run on (an affinity
    mask, ``taskset``, limits them) unless the runtime says fewer.  Where the runtime module is
    not imported yet (the command line's file commands) no runtime was made or entered: the
    budget is the default runtime's, the usable cores, read without making it."""
    import sys

    if "ciphergrid.runtime" not in sys.modules:
        from ..settings import usable_cores

        return usable_cores()
    from ..runtime import current

    return current().threads.budget


def runs_on(sch, device: str, piece: int = BATCH_PIECE) -> tuple[bool, str, str]:
    """Where a sealed file's chunks run for ``device`` (a spec, or auto): (True, "native", "")
    where OpenSSL's C loop runs them on this process's cores, else (False, the device, route's
    reason or "") for its AEAD batches of ``piece`` bytes."""
    from ..formats import cobblestone as cb

    if cb._native(sch, device, "stream", piece, piece // cb.CHUNK):
        return True, "native", ""
    from .. import aeads
    from ..request import aead_request
    from ..route import route

    r = route(aead_request(aeads.spec(sch.aead), nonce_len=cb.NONCE, tag_length=cb.TAG,
                           count=piece // cb.CHUNK), device, piece)
    return False, r.device, r.reason or ""


def plan(engine, piece: int | None = None, threads: int | None = None,
         native: bool | None = None) -> tuple[int, int, int]:
    """(plaintext bytes per piece, workers, OpenSSL threads per piece) for a Sealer or Opener:
    where its chunks run in OpenSSL's C loop, small pieces and a worker per core (or
    ``CIPHERGRID_HOST_THREADS`` where it is set), each piece on its worker's thread; else (a
    device's batch path) a batch per piece, two workers (one reads and writes while the other's
    batch runs), the batch spread as the device does.  ``native``: :func:`_native`'s answer
    for ``engine`` where the caller has it."""
    from .. import settings
    from ..formats import cobblestone as cb

    if threads is None:
        threads = settings.host_threads_asked()

    if native is None:
        native = _native(engine)
    if piece is None:
        piece = PIECE if native else BATCH_PIECE
    piece = max(cb.CHUNK, piece // cb.CHUNK * cb.CHUNK)
    if threads is None:
        threads = cores() if native else 2
    return piece, max(1, threads), 1 if native else None


def one_batch(src, dst, seal: bool) -> bool:
    """Whether a device's sealed file from ``src`` to ``dst`` (descriptors or binary file
    objects, from their current offsets) is ONE AEAD batch over the mapped files
    (:func:`mapped`) rather than batches of a piece each: the one rule :func:`mapped`, the
    command line's -v and the service's reply follow.  (A file the kernel will not map still
    takes the pieces.)"""
    return bool(_mapped_bytes(files.ends(src, dst), seal))


def _mapped_bytes(ends, seal: bool) -> int:
    """The bytes :func:`mapped` writes between ``ends``, or 0 where it does not apply: a pipe
    or another non-regular end, an empty input, ``CIPHERGRID_STREAM_MMAP`` 0 or ``out``;
    opening: an output with a name (a piece's plaintext lands before its tags are compared,
    so only into a file no one can open, the CLI's --out)."""
    from .. import settings
    from ..formats import cobblestone as cb

    size = ends.size
    if not (size and ends.reg_in and ends.reg_out):
        return 0
    if settings.transfer().stream_mmap in ("0", "out"):
        return 0
    if not seal and os.fstat(ends.fd_out).st_nlink:
        return 0
    return cb.sealed_length(size) - cb.HEADER if seal else cb.message_length(cb.HEADER + size)


def workers(native: bool, size: int | None, seal: bool,
            threads: int | None = None) -> tuple[int, bool]:
    """(the workers :func:`seal` (``seal``) or :func:`open_` runs for an input of ``size`` bytes
    from its offset (None: a pipe) where :func:`mapped` does not take it: :func:`plan`'s, no
    more than the input's pieces; whether each piece's call runs alone, :func:`_solo`)."""
    from ..formats import cobblestone as cb

    piece, threads, _ = plan(None, None, threads, native)
    step = piece if seal else piece // cb.CHUNK * cb.SEALED_CHUNK
    return (threads if size is None else min(threads, _pieces(size, step))), _solo(threads)


def _solo(threads: int) -> bool:
    """Whether each piece's ``seal_at`` / ``open_at`` call says it runs alone (no other thread
    sealing or opening meanwhile): the plan has one worker (``threads``, before the input's
    pieces cut it)."""
    return threads == 1


def _pieces(size: int, step: int) -> int:
    """The pieces of ``step`` bytes of an input of ``size`` bytes: the last shorter, possibly
    empty."""
    return size // step + 1


def said(native: bool, reason: str, whole: bool, workers: int, piece: int = BATCH_PIECE, *,
         sch, alone: bool | None = None) -> str:
    """How a sealed file of scheme ``sch`` runs its chunks, as -v says it (in process and from
    a service's reply): OpenSSL's place and its ``workers`` (pyca's Cobblestone loop where the
    pieces' calls take it, formats/lone.py ``runs``: each piece one OpenSSL thread, ``alone``
    as :func:`workers` says, None: :func:`_solo` of ``workers``; else OpenSSL's C loop), or a
    device's one batch over the mapped files (``whole``: :func:`one_batch`) or its batches of
    ``piece`` bytes; route's ``reason`` after it."""
    if native:
        from ..formats import lone

        if alone is None:
            alone = _solo(workers)
        loop = "pyca's Cobblestone loop" if lone.runs(sch, 1, alone) else "OpenSSL's C loop"
        return f"{loop}, {workers} worker{'s' if workers != 1 else ''}"
    how = ("the whole message one AEAD batch over the mapped files" if whole
           else f"AEAD batches of {_size(piece)}")
    return how + (f", {reason}" if reason else "")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


def _native(engine) -> bool:
    """Whether a Sealer's or Opener's chunks run in OpenSSL's C loop (cobblestone._native for
    its batch pieces)."""
    from ..formats import cobblestone as cb

    return cb._native(engine.sch, engine.device, engine.path, BATCH_PIECE, BATCH_PIECE // cb.CHUNK)


def mapped(src, dst, engine, seal: bool, progress=None, native: bool | None = None) -> int | None:
    """A device's sealed file between two regular files as ``ciphergrid encrypt``'s stream runs
    one (transfer/streams.py): both mapped (transfer/files.py: the input read-only, the output
    reserved, a new RAM-disk output faulted in ahead by threads), the whole message ONE call of
    ``engine`` (a Sealer from chunk 0, or an Opener: its texts one AEAD batch whose pieces the
    device reads from and writes into the mappings, transfer/batches.py); the output left just
    past what was written.  Returns the bytes written, or None where this does not apply (OpenSSL
    runs the chunks, a pipe, an empty input, ``CIPHERGRID_STREAM_MMAP`` 0 or ``out``, a file that
    cannot be mapped; opening: an output with a name, since a piece's plaintext is there before
    its tags are compared, zeroed where they fail).  Opening checks the input's length before
    anything is read.  ``native``: :func:`_native`'s answer for ``engine`` where the caller has
    it."""
    from .. import settings
    from ..formats import cobblestone as cb

    if _native(engine) if native is None else native:
        return None
    how = settings.transfer().stream_mmap
    ends = files.ends(src, dst)
    size = ends.size
    n = _mapped_bytes(ends, seal)
    if not n:
        return None
    in_map, inp = files.map_input(ends.fd_in, ends.base_in, size)
    if in_map is None:
        return None
    out_map = out = ahead = None
    try:
        ahead = files.prefault_output(ends.fd_out, n, new=True)   # (while the device starts)
        cb._plan(engine.sch, engine.device, min(n, size), max(1, size // cb.SEALED_CHUNK), seal)
        if ahead is not None:
            ahead.wait()
        out_map, out = files.map_output(ends.fd_out, ends.base_out, n, how)
        if out_map is None:
            return None
        if seal:
            engine.seal_at(0, inp, size, True, out)
        else:
            engine.open_at(0, inp, size, True, out)
    finally:
        if ahead is not None:
            ahead.close()
        del inp, out
        files.close_map(in_map)
        if out_map is not None:
            files.close_map(out_map)
    files.seek_to(dst, ends.fd_out, ends.base_out + n)
    if progress is not None:
        progress(n)
    return n


def seal(src, dst, sealer, *, piece: int | None = None, threads: int | None = None,
         progress=None) -> int:
    """The rest of ``src`` sealed by ``sealer`` (formats.cobblestone.Sealer, its header already
    written) into ``dst`` (binary file objects or descriptors); returns the bytes written.
    ``progress(n)``: bytes written, in order where the output is written in order.  A device's
    between two regular files: ``mapped``."""
    from ..formats import cobblestone as cb

    native = _native(sealer)
    done = mapped(src, dst, sealer, True, progress, native)
    if done is not None:
        return done
    piece, threads, per = plan(sealer, piece, threads, native)
    q = piece // cb.CHUNK
    return _run(src, dst, piece, q * cb.SEALED_CHUNK, q, threads, progress,
                lambda first, a, m, final, b: sealer.seal_at(first, a, m, final, b, per, _solo(threads)),
                None)


def open_(src, dst, opener, *, piece: int | None = None, threads: int | None = None,
          progress=None) -> int:
    """The rest of ``src`` (the sealed chunks: the header already read) opened by ``opener``
    (formats.cobblestone.Opener) into ``dst``; returns the bytes written.  InvalidTag where the
    message does not verify or is cut short (nothing more written).  A device's between two
    regular files: ``mapped``."""
    from ..formats import cobblestone as cb

    native = _native(opener)
    done = mapped(src, dst, opener, False, progress, native)
    if done is not None:
        return done
    piece, threads, per = plan(opener, piece, threads, native)
    q = piece // cb.CHUNK
    return _run(src, dst, q * cb.SEALED_CHUNK, piece, q, threads, progress,
                lambda first, a, m, final, b: opener.open_at(first, a, m, final, b, per, _solo(threads)),
                lambda size: cb.message_length(cb.HEADER + size))


def _run(src, dst, in_step: int, out_step: int, q: int, threads: int, progress, work,
         check) -> int:
    """Pieces of ``in_step`` input bytes (``q`` chunks) turned by ``work(first chunk, in, bytes,
    final, out)`` (returns the bytes it wrote) into at most ``out_step`` bytes each."""
    ends = files.ends(src, dst)
    for fd in (ends.fd_in, ends.fd_out):
        files.widen_pipe(fd)
    size = ends.size
    if size is not None:
        if check is not None:
            check(size)                       # (InvalidTag before anything is read)
        npieces = _pieces(size, in_step)
        threads = min(threads, npieces)
    else:
        npieces = None
    # a worker's buffers: a piece's, or the whole input's where it is shorter (a chunk's output
    # for each of its chunks begun, and one more: the final chunk)
    in_len = in_step if size is None else min(in_step, size)
    out_len = min(out_step, (in_len // (in_step // q) + 1) * (out_step // q))
    if threads == 1:
        return _alone(ends, dst, in_step, out_step, q, npieces, progress, work, in_len, out_len)
    from .pieces import _Shared

    sh = _Shared(ends, progress, npieces)

    def claim(buf: memoryview):
        """The next piece: (its index, its bytes, whether it is the final one), or None."""
        if ends.reg_in:
            got = sh.claim(in_step)
            if got is None:
                return None
            k, lo, want = got
            sh.read_at(buf[:want], lo)
            return k, want, k == npieces - 1
        with sh.lock:                         # a pipe: one reader at a time, in order
            if sh.eof or sh.stop.is_set():
                return None
            k = sh.next
            got = files.read_full(ends.fd_in, buf, None)
            sh.next = k + 1
            sh.eof = got < in_step
            return k, got, got < in_step

    def body(i: int) -> None:
        buf = memoryview(bytearray(in_len))
        out = memoryview(bytearray(out_len))
        while not sh.stop.is_set():
            got = claim(buf)
            if got is None:
                return
            k, m, final = got
            n = work(k * q, buf, m, final, out)
            if sh.stop.is_set():
                return
            sh.write(k, out[:n], k * out_step)
            if final:
                return

    return sh.run(threads, body, "sealed", dst)


def _alone(ends, dst, in_step: int, out_step: int, q: int, npieces: int | None, progress, work,
           in_len: int, out_len: int) -> int:
    """:func:`_run`'s pieces on one worker, the calling thread: read in order (a regular input
    at each piece's offset), turned by ``work``, written in order; returns the bytes written."""
    from .. import interrupts

    buf = memoryview(bytearray(in_len))
    out = memoryview(bytearray(out_len))
    written = k = 0
    while True:
        if ends.reg_in:
            lo = k * in_step
            got = min(in_step, ends.size - lo)
            files.read_piece(ends, buf[:got], lo)
            final = k == npieces - 1
        else:
            got = files.read_full(ends.fd_in, buf, None)
            final = got < in_step
        n = work(k * q, buf, got, final, out)
        with interrupts.deferred():   # (a signal waits until the count below is made)
            files.write_all(ends.fd_out, out[:n], ends.base_out + k * out_step if ends.reg_out
                            else None)
            written += n
            if progress is not None:
                progress(n)
        k += 1
        if final:
            break
    if ends.reg_out:
        files.seek_to(dst, ends.fd_out, ends.base_out + written)
    return written


__all__ = ["seal", "open_", "mapped", "one_batch", "said", "workers", "plan", "runs_on", "cores",
           "PIECE", "BATCH_PIECE"]
