"""The file side of a stream: what the two ends are (regular files at offsets, pipes in order),
mapping them (the output reserved and mapped read-write, the input read-only), the read and write
loops, and the RAM-disk prefault of a new output (:func:`prefault_output`, :class:`Prefault`).

The driver (:meth:`ciphergrid.transfer.driver.Pipeline.stream`) decides which of these a stream
uses; this module knows files, not chunks or devices.
"""

from __future__ import annotations

import errno
import os
import stat

from .. import settings as _settings
from ..fileio import TMPFS_MAGIC, appends, fs_magic
from .._lazy import numpy_for

#: the page size (mmap.PAGESIZE, as pinning.PAGE: the file path imports no page-locking); fcntl,
#: mmap and threading are imported by the functions below that use them (a pipe's; O_APPEND is
#: read by fileio.appends)
PAGE = os.sysconf("SC_PAGE_SIZE")

np = numpy_for(__name__)


# ------------------------------------------------------------------------------------ stream ends
class Ends:
    """The two ends of a stream, as :func:`ends` found them: the descriptors; ``reg_in``, a
    regular file read at offsets (preadv), by several threads; ``base_in``, the input's offset
    where reading starts; ``size``, the bytes to read from a regular file (None: to the end, a
    pipe); ``reg_out``, written at offsets (pwrite, a mapping) in any order; ``base_out``, the
    output's offset where writing starts.  (A plain class: a named tuple's is made by ``eval``,
    typing's compiles each field's annotation, at every start-up.)"""

    __slots__ = ("fd_in", "fd_out", "reg_in", "base_in", "size", "reg_out", "base_out")

    def __init__(self, fd_in: int, fd_out: int, reg_in: bool, base_in: int, size: int | None,
                 reg_out: bool, base_out: int):
        self.fd_in, self.fd_out, self.reg_in, self.base_in = fd_in, fd_out, reg_in, base_in
        self.size, self.reg_out, self.base_out = size, reg_out, base_out


def ends(src, dst) -> Ends:
    """The descriptors of ``src`` and ``dst`` (binary file objects or descriptors; ``dst``
    flushed), whether each is read / written at offsets, from where, and the input's size."""
    fd_in = src if isinstance(src, int) else src.fileno()
    fd_out = dst if isinstance(dst, int) else dst.fileno()
    if not isinstance(dst, int):
        dst.flush()
    st_in = os.fstat(fd_in)
    reg_in = stat.S_ISREG(st_in.st_mode)
    base_in = os.lseek(fd_in, 0, os.SEEK_CUR) if reg_in else 0
    size = max(0, st_in.st_size - base_in) if reg_in else None
    # pwrite at offsets only where it means that (O_APPEND would append out of order)
    reg_out = _writes_at_offsets(fd_out)
    base_out = os.lseek(fd_out, 0, os.SEEK_CUR) if reg_out else 0
    return Ends(fd_in, fd_out, reg_in, base_in, size, reg_out, base_out)


#: fcntl's F_SETPIPE_SZ (Linux): the size of a pipe's buffer
F_SETPIPE_SZ = 1031


def widen_pipe(fd: int, size: int = 1 << 20) -> int | None:
    """Grow the buffer of the pipe ``fd`` to ``size`` bytes (at most /proc/sys/fs/pipe-max-size,
    1 MiB by default; 64 KiB otherwise): fewer, larger reads and writes, and fewer wake-ups of
    the process on the other end.  Returns the new size, or None (not a pipe, not permitted)."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        try:
            with open("/proc/sys/fs/pipe-max-size") as f:
                size = min(size, int(f.read()))
        except (OSError, ValueError):
            pass
        import fcntl

        return fcntl.fcntl(fd, F_SETPIPE_SZ, size)
    except OSError:
        return None


def read_full(fd: int, view: memoryview, off: int | None) -> int:
    """Fill ``view`` from ``fd`` (``off`` None: in order, readv; else preadv at ``off``); returns
    the bytes read (fewer at the end of the input)."""
    got = 0
    while got < len(view):
        if off is None:
            k = os.readv(fd, [view[got:]])
        else:
            k = os.preadv(fd, [view[got:]], off + got)
        if k == 0:
            break
        got += k
    return got


def read_piece(ends: Ends, view: memoryview, lo: int) -> None:
    """``view`` filled from the regular input of ``ends`` at ``lo`` (from its base);
    InvalidArgument where the input ends sooner than its size said."""
    got = read_full(ends.fd_in, view, ends.base_in + lo) if len(view) else 0
    if got != len(view):
        from ..errors import InvalidArgument

        raise InvalidArgument(f"the input changed while it was read (it ends at {lo + got} "
                              f"of {ends.size} bytes)")


def write_all(fd: int, view: memoryview, off: int | None) -> None:
    """Write all of ``view`` to ``fd`` (``off`` None: in order, write; else pwrite at ``off``)."""
    done = 0
    while done < len(view):
        if off is None:
            k = os.write(fd, view[done:])
        else:
            k = os.pwrite(fd, view[done:], off + done)
        done += k


def map_output(fd: int, base: int, size: int, how: str, *, array: bool = True):
    """Reserve bytes [base, base + size) of the output ``fd`` (``posix_fallocate``: a full disk
    fails here, with ENOSPC, and not later as a SIGBUS on a store into the mapping) and map them
    read-write (``how`` "populate": MAP_POPULATE).  Returns (the mapping, a uint8 array of those
    bytes, or a memoryview with ``array=False``), or (None, None) where the file cannot be mapped;
    a full disk raises."""
    import mmap

    try:
        end = base + size
        if os.fstat(fd).st_size < end:
            os.posix_fallocate(fd, base, size)
        start = base - base % mmap.ALLOCATIONGRANULARITY
        flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if how == "populate" else 0)
        out_map = _map_rw(fd, end - start, flags, start)
        return out_map, _view(out_map, base - start, size, array)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        return None, None
    except (ValueError, OverflowError):
        return None, None


def map_input(fd: int, base: int, size: int, *, array: bool = True):
    """A read-only shared mapping of bytes [base, base + size) of the input ``fd``: (the mapping,
    a read-only uint8 array of those bytes, or a memoryview with ``array=False``), or (None, None)
    where it cannot be mapped."""
    import mmap

    try:
        start = base - base % mmap.ALLOCATIONGRANULARITY
        in_map = mmap.mmap(fd, base + size - start, mmap.MAP_SHARED, mmap.PROT_READ, offset=start)
    except (OSError, ValueError, OverflowError):
        return None, None
    return in_map, _view(in_map, base - start, size, array)


def _view(m, lo: int, size: int, array: bool):
    return np.frombuffer(m, np.uint8)[lo: lo + size] if array else memoryview(m)[lo: lo + size]


def _writes_at_offsets(fd: int) -> bool:
    """A regular file not opened O_APPEND: written at offsets (pwrite, a mapping) in any order."""
    return stat.S_ISREG(os.fstat(fd).st_mode) and not appends(fd)


def _map_rw(fd: int, length: int, flags: int, offset: int):
    """A read-write shared mapping of ``fd``; a write-only descriptor (``open(path, "wb")``) is
    reopened read-write through /proc/self/fd first (a mapping needs read access)."""
    import fcntl
    import mmap

    prot = mmap.PROT_READ | mmap.PROT_WRITE
    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_WRONLY:
        return mmap.mmap(fd, length, flags, prot, offset=offset)
    rw = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
    try:
        if not os.path.samestat(os.fstat(rw), os.fstat(fd)):
            raise OSError("the reopened descriptor is another file")
        return mmap.mmap(rw, length, flags, prot, offset=offset)
    finally:
        os.close(rw)  # the mapping keeps the file


def seek_to(dst, fd: int, end: int) -> None:
    """Leave ``dst`` (a file object or its descriptor ``fd``) just past what the run wrote."""
    if isinstance(dst, int):
        os.lseek(fd, end, os.SEEK_SET)
    else:
        dst.seek(end)


def close_map(m) -> None:
    try:
        m.close()
    except BufferError:  # a view still referenced somewhere: the GC unmaps it
        pass


# ------------------------------------------------------------------------------------ RAM disks
#: bytes each prefault thread takes at a time (outputs smaller than settings.PREFAULT_MIN, or
#: ``CIPHERGRID_PREFAULT``, are not faulted in ahead: see prefault_output)
PREFAULT_SLICE = 64 << 20


class Prefault:
    """The pages of a new output file on a RAM disk, faulted in by background threads while the
    device starts (see :func:`prefault_output`).  ``wait()`` joins them, ``close()`` stops them.
    (Threads in a forked child instead, away from the parent's memory-map lock, gain nothing:
    docs/benchmarks.md 4c.)"""

    def __init__(self, fd: int, offset: int, size: int, threads: int):
        import mmap
        import threading

        self._stop = threading.Event()
        os.posix_fallocate(fd, offset, size)  # a full RAM disk fails here, before any work
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        self._map = mmap.mmap(fd, offset + size - start, mmap.MAP_SHARED, mmap.PROT_READ,
                              offset=start)
        self._arr = np.frombuffer(self._map, np.uint8)[offset - start:]
        n = -(-size // PREFAULT_SLICE)
        self._threads = [threading.Thread(target=self._work, args=(i, threads, n), daemon=True,
                                          name=f"ciphergrid-prefault-{i}") for i in range(threads)]
        for t in self._threads:
            t.start()

    def _work(self, i: int, step: int, n: int) -> None:
        # Thread i reads one byte per page of slices i, i + step, ...: the front of the file, which
        # the stream writes first, comes first.  A read (never a write) of a page the stream may
        # already have written cannot change it.
        for k in range(i, n, step):
            if self._stop.is_set():
                return
            np.bitwise_or.reduce(self._arr[k * PREFAULT_SLICE: (k + 1) * PREFAULT_SLICE: PAGE])

    def wait(self) -> None:
        """Until every page is in: the stream must not start while the threads run (faulting
        pages in while the stream writes others of the file slows both: docs/benchmarks.md
        4c)."""
        for t in self._threads:
            t.join()

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()
        self._threads = []
        if self._map is not None:
            self._arr = None
            close_map(self._map)
            self._map = None


def prefault_output(f, size: int | None, threads: int | None = None, *,
                    settings: _settings.TransferSettings | None = None,
                    new: bool = False) -> Prefault | None:
    """Start faulting in the pages of the output file ``f`` (a new, empty regular file) that a
    stream of ``size`` bytes will write, in background threads; None where that does not pay.

    On a RAM disk (tmpfs) a page of a new file is allocated and zero-filled when it is first
    touched, a large part of a stream's time (docs/benchmarks.md 4c).
    The CLI starts this before the device starts up (imports, CUDA context, kernel), which the
    zero-filling then overlaps, and waits for it (:meth:`Prefault.wait`) before the stream.
    Threads only read the pages: bytes written meanwhile are safe.  ``settings.prefault_min``
    (``CIPHERGRID_PREFAULT``): the smallest output that gets it (PREFAULT_MIN), ``0`` turns it
    off, as does ``stream_mmap`` ``0`` (the stream then does not map the output).  ``settings``
    None: the environment's.  ``new``: the caller made the file for this run (it may have sized it
    already: ``fileio.Output.reserve``).  Not for a stream that has started: faulting in pages
    while it writes slows both.
    """
    opts = settings or _settings.transfer()
    least = opts.prefault_min
    if (size is None or size == 0 or least == 0 or size < least
            or opts.stream_mmap == "0"):
        return None
    try:
        fd = f if isinstance(f, int) else f.fileno()
        # the outputs Pipeline.stream maps, when new and on a tmpfs
        if (not _writes_at_offsets(fd) or (os.fstat(fd).st_size != 0 and not new)
                or fs_magic(fd) != TMPFS_MAGIC):
            return None
        base = os.lseek(fd, 0, os.SEEK_CUR)
    except (OSError, ValueError, AttributeError):
        return None
    try:
        if threads is None:
            from ..runtime import current

            threads = min(16, current().threads.budget)
        return Prefault(fd, base, size, threads)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        return None  # cannot map it (a write-only descriptor...): the stream faults as it goes


def run_stream(plan, src, dst, *, nbytes: int | None, fresh: bool, progress=None,
               chunk_bytes: int | None = None, depth: int | None = None) -> int:
    """A block request's stream on ``plan`` (route's, path "stream") from ``src`` into ``dst``
    (descriptors or binary file objects): the one way the command line and the service run it.
    A ``fresh`` output (made empty for this run) of ``nbytes`` is faulted in ahead where the plan
    says so (``plan.prefaults_output``: a device's stream; on a RAM disk); a service's plan is
    told ``fresh_output`` instead, and its service decides the same on its own plan.  The bytes
    written."""
    kw = dict(progress=progress, chunk_bytes=chunk_bytes, depth=depth, nbytes=nbytes)
    if plan.engine.kind == "remote":
        return plan.stream(src, dst, fresh_output=fresh, **kw)
    ahead = prefault_output(dst, nbytes, new=True) if fresh and plan.prefaults_output else None
    try:
        if ahead is not None:
            ahead.wait()
        return plan.stream(src, dst, **kw)
    finally:
        if ahead is not None:
            ahead.close()


__all__ = ["Ends", "ends", "widen_pipe", "read_full", "write_all", "map_output", "map_input", "seek_to",
           "close_map", "prefault_output", "Prefault", "run_stream", "TMPFS_MAGIC"]
