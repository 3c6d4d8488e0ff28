"""Streaming host data through one device: chunked, overlapped, both bus directions at once.

A message (a numpy array, a file, a pipe) is cut into chunks of whole blocks.  Chunk ``i`` uses
device slot ``s = i mod depth`` (``d_in[s]``, ``d_out[s]``) and goes through five steps::

    prepare   worker threads   host side of chunk i: page-lock its range of the caller's arrays
                               (CUDA: hostRegister, piecewise, ahead of the copies), or copy it /
                               read it from the file into a pinned staging buffer
    H2D       queue "up"       d_in[s]  <- host bytes       after K(i - depth): d_in[s] is free
    K         queue "compute"  d_out[s] <- mode(d_in[s])    after H2D(i) and D2H(i - depth)
    D2H       queue "down"     host     <- d_out[s]         after K(i)
    finish    worker threads   after D2H(i): copy the staging buffer out / write it to the file,
                               unregister the host pages, release the staging buffer

The three queues are separate in-order OpenCL command queues or CUDA streams, ordered only by the
events above, so H2D(i+1), K(i) and D2H(i-1) run at once, and the bus carries both directions at
the same time.  When the host has nothing to do per chunk (every page of both arrays already
page-locked, or a CPU device) the calling thread enqueues all chunks at once and waits once, for
the last D2H ("inline"); otherwise prepare/finish run in worker threads and the calling thread
only enqueues, its one wait being for a permit (a chunk whose finish step is done: the staging
buffer or host pages about to be reused).  The end of a GPU run is waited for by sleeping through
most of the expected time and polling the last event (a blocking wait's wake-up costs runs of a
few MiB a third of their time); host waits otherwise block (CUDA events with blocking sync: no
core spins).  A message shorter than SPLIT chunks is cut into SPLIT smaller ones so that its copies
overlap too.

Block offsets, CTR counters, CBC chaining values (the ciphertext block before the chunk, from the
INPUT, taken before any chunk of an in-place run is written) and XTS tweak positions are carried
across chunk boundaries, so every chunking gives the bytes of a one-shot call.  What the pipeline
does not do itself: the XTS ciphertext-stealing tail of an array (DeviceEngine.crypt does it with
modes.xts_tail after the run; a stream does it at its last chunk), padding, CBC encryption and XTS
over one data unit (the CLI keeps CipherContext for those).

Host memory and copies
----------------------
* CUDA: an ordinary numpy array is page-locked in place (``cudaHostRegister``, flag 0) in pieces
  of PIN_GRAIN (64 MiB) on a page-aligned grid, by the prepare threads while earlier chunks are on
  the bus; the DMA engines then read and write the caller's arrays directly and the host copies no
  byte.  A copy never spans two registrations (CUDA refuses that): it is cut at piece edges.
  Registrations are kept in a cache (:class:`_PinCache`) while the array that owns the memory
  lives (a weak reference unregisters it just before numpy frees it), up to
  ``CIPHERGRID_PIN_CACHE`` bytes (default min(RAM/4, 64 GiB); ``0``: unregister after each run),
  so a reused buffer costs nothing after its first run.  Memory numpy does not own (bytes, mmap)
  is unregistered after the run.  Registering costs about 0.012 core-s/GB (+0.012 to unregister)
  for memory already touched, and fresh pages must be faulted in first (about 0.17 s/GiB); memory
  CuPy allocated page-locked (cupyx.empty_pinned, :func:`host_buffer`) is used as it is, and
  ``with pinned(backend, arr):`` locks an array for a block.  A piece that cannot be registered
  (pages shared with another registration, limits) falls back to staging for its chunks.
* OpenCL on a GPU: OpenCL cannot page-lock caller memory, so chunks are staged through pinned
  (``CL_MEM_ALLOC_HOST_PTR``, mapped) buffers with a numpy copy on each side: two host memcpy per
  byte (about 0.08 core-s/GB each), done by the worker threads in parallel with the bus.
* OpenCL on a CPU device (PoCL): host memory is device memory; the caller's arrays are handed to
  the runtime directly (no staging copy).
* Files: a regular output of known size is reserved (``posix_fallocate``: a full disk fails
  there, cleanly) and mapped (``mmap``); writes to one file would serialise on the inode lock.
  When the input is a regular file too and the runtime page-locks caller memory (CUDA), the input
  is mapped read-only as well and the run is the array run above between the two mappings, with
  ``CIPHERGRID_MAPPED_LOCK`` saying which of them to page-lock: ``none`` (the default: the worker
  threads copy both through the pinned slots), ``in``, ``out`` or ``both`` (the device reads the
  input's page-cache pages and writes the output's, each chunk's pages locked as it comes, the
  output's first faulted in by the worker threads, one write per page, where the driver would
  fault them one by one).  Locking a file's pages is not free: on the H200 host it runs at ~67
  GB/s and unlocking at 80-190 GB/s, serialised in the driver, which made ``both`` the slowest
  choice for a file read once (docs/benchmarks.md, section 4).  Otherwise reader threads ``preadv``
  (regular files, at offsets, in parallel) or ``readv`` (pipes, in order) into pinned slots, and
  the D2H goes into the mapped output (page-locked; else one copy from the slot by the finish
  threads; ``CIPHERGRID_STREAM_MMAP=out`` forces this way).  Other outputs (pipes, O_APPEND,
  ``CIPHERGRID_STREAM_MMAP=0``) get
  ``pwrite``/``write`` from the slot, in which the device worked in place.
* A new output on a RAM disk (tmpfs) has its pages zero-filled by the kernel as they are first
  touched; the CLI has them faulted in by background threads (:func:`prefault_output`) while the
  device starts up, and waits for those before the stream begins.

``transfer=`` ("auto", "direct", "staged") overrides the choice (tests use it to run every path).
"""

from __future__ import annotations

import errno
import fcntl
import functools
import mmap
import os
import queue
import stat
import threading
import time
import weakref
from collections import OrderedDict, deque
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from . import tuning
from .errors import DeviceError, InvalidArgument

U64 = np.uint64
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TRANSFERS = ("auto", "direct", "staged")
PIN_CACHE_ENV = "CIPHERGRID_PIN_CACHE"

#: bytes per page-lock registration piece (at least the chunk): few, large registrations
#: (``CIPHERGRID_PIN_GRAIN`` overrides it)
PIN_GRAIN = 64 << 20
#: the end of a GPU run is polled for at most this long before blocking (see _wait_last)
SPIN_S = 0.0015
#: a message of fewer chunks than this is cut into this many (see Pipeline._chunk_for)
SPLIT = 8
#: a message at most this large runs as one chunk
MIN_SPLIT = {"gpu": 1 << 20, "cpu": 64 << 10, "accelerator": 1 << 20}


def host_threads() -> int:
    """Worker threads per side (prepare / finish) for host copies, registration and file I/O."""
    env = os.environ.get("CIPHERGRID_HOST_THREADS")
    if env:
        try:
            return max(1, min(64, int(env)))
        except ValueError:
            raise InvalidArgument(f"CIPHERGRID_HOST_THREADS must be an integer, got {env!r}") from None
    return max(1, min(8, (os.cpu_count() or 2) // 2))


# ------------------------------------------------------------------------------------ host memory
def host_buffer(backend, nbytes: int) -> np.ndarray:
    """A page-locked host array (uint8) of ``nbytes`` for the fastest, copy-free transfers."""
    return backend.pinned(int(nbytes))


def transfer_mode(backend, transfer: str = "auto") -> str:
    """How chunks reach the device: "register" (page-lock caller memory), "any" (hand caller
    memory to the runtime as it is) or "staging" (copy through pinned buffers)."""
    if transfer not in TRANSFERS:
        raise InvalidArgument(f"transfer must be one of {', '.join(TRANSFERS)}, got {transfer!r}")
    native = getattr(backend, "host_transfer_mode", lambda: "staging")()
    if transfer == "staged":
        return "staging"
    if transfer == "direct":
        return native if native != "staging" else "any"
    return native


def _pin_grain() -> int:
    env = os.environ.get("CIPHERGRID_PIN_GRAIN")
    return max(PAGE, tuning.parse_bytes(env, "CIPHERGRID_PIN_GRAIN")) if env else PIN_GRAIN


def pin_cache_limit() -> int:
    """Bytes of caller memory kept page-locked between runs (``CIPHERGRID_PIN_CACHE``; 0: none)."""
    env = os.environ.get(PIN_CACHE_ENV)
    if env:
        return max(0, tuning.parse_bytes(env, PIN_CACHE_ENV))
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 16 << 30
    return min(ram // 4, 64 << 30)


def _owner(arr: np.ndarray):
    """The ndarray that owns ``arr``'s memory, or None when another object (bytes, mmap) does."""
    o = arr
    while isinstance(o, np.ndarray) and not o.flags.owndata:
        o = o.base
    return o if isinstance(o, np.ndarray) and o.flags.owndata else None


def _base(arr: np.ndarray):
    """The object at the end of ``arr``'s base chain (an mmap for a mapped file)."""
    o = arr
    while isinstance(o, np.ndarray) and o.base is not None:
        o = o.base
    while isinstance(o, memoryview):
        o = o.obj
    return o


def _populate_write(addr: int, n: int) -> None:
    """Fault in (writable) the pages of [addr, addr + n) of a shared file mapping, so that locking
    them does not: several threads do this for their chunks at once, where the driver's page
    locking would fault them in one by one.  One write per page, of the byte's own value (16
    threads: 64 GB/s on the H200 host's huge-page tmpfs, where MADV_POPULATE_WRITE gave 7.5-31)."""
    import ctypes

    a = addr - addr % PAGE
    v = np.frombuffer((ctypes.c_uint8 * (n + addr - a)).from_address(a), np.uint8)[::PAGE]
    np.bitwise_or(v, 0, out=v)


@dataclass
class _Piece:
    ref: int = 0
    status: str = "pending"   # pending | ok | failed


class _HostRegs:
    """Page-lock registrations of one host buffer, piece by piece.

    Pieces lie on a grid of ``grain`` bytes starting at the buffer's first page, so neighbours
    never share a page (cudaHostRegister refuses overlaps) and one DMA never spans two
    registrations (cudaMemcpyAsync refuses that: :meth:`split` cuts copies at piece edges).
    ``acquire`` registers what a chunk needs (the first caller of a piece registers it, others
    wait), ``release`` drops the references; unless the buffer is retained by the cache, a piece
    is unregistered when nobody holds it.
    """

    def __init__(self, backend, base: int, n: int, grain: int, *, readonly: bool = False,
                 populate: bool = False):
        self.b = backend
        self.base, self.n = base, n
        self.readonly = readonly     # a read-only mapping: lock it for device reads only
        self.populate = populate     # a fresh file mapping: fault its pages in before locking
        self.origin = base - base % PAGE
        self.grain = max(PAGE, -(-int(grain) // PAGE) * PAGE)
        self.cond = threading.Condition(threading.RLock())
        self.pieces: dict[int, _Piece] = {}
        self.failed = False
        self.retain = False          # the cache keeps it: pieces stay locked at ref 0
        self.active = 0              # runs (and pinned() blocks) using it now
        self.registered_bytes = 0    # registrations made (for the stats)
        self.locked_bytes = 0        # bytes locked right now
        #: thread-seconds spent faulting pages in, locking and unlocking (for the stats)
        self.seconds = {"populate": 0.0, "register": 0.0, "unregister": 0.0}
        self.owner_ref = None

    def _range(self, k: int) -> tuple[int, int]:
        a = max(self.base, self.origin + k * self.grain)
        z = min(self.base + self.n, self.origin + (k + 1) * self.grain)
        return a, z

    def _keys(self, lo: int, hi: int) -> range:
        o = self.origin
        return range((self.base + lo - o) // self.grain, (self.base + hi - 1 - o) // self.grain + 1)

    def split(self, lo: int, hi: int) -> list[tuple[int, int]]:
        out = []
        for k in self._keys(lo, hi):
            a, z = self._range(k)
            out.append((max(lo, a - self.base), min(hi, z - self.base)))
        return out

    def covered(self, lo: int, hi: int) -> bool:
        """Whether bytes [lo, hi) are page-locked already (a retained registration)."""
        with self.cond:
            return all((pc := self.pieces.get(k)) is not None and pc.status == "ok"
                       for k in self._keys(lo, hi))

    def acquire(self, lo: int, hi: int) -> bool:
        if hi <= lo:
            return True
        if self.failed:
            return False
        got = []
        for k in self._keys(lo, hi):
            with self.cond:
                pc = self.pieces.get(k)
                while pc is not None and pc.status == "closing":  # being unlocked: wait, redo
                    self.cond.wait()
                    pc = self.pieces.get(k)
                mine = pc is None
                if mine:
                    pc = self.pieces[k] = _Piece()
                pc.ref += 1
                while not mine and pc.status == "pending":
                    self.cond.wait()
            if mine:
                a, z = self._range(k)
                t0 = time.perf_counter()
                if self.populate:
                    _populate_write(a, z - a)
                t1 = time.perf_counter()
                try:
                    ok = bool(self.b.register_host(a, z - a, readonly=self.readonly)
                              if self.readonly else self.b.register_host(a, z - a))
                except Exception:
                    ok = False
                t2 = time.perf_counter()
                with self.cond:
                    pc.status = "ok" if ok else "failed"
                    self.seconds["populate"] += t1 - t0
                    self.seconds["register"] += t2 - t1
                    if ok:
                        self.registered_bytes += z - a
                        self.locked_bytes += z - a
                    self.cond.notify_all()
            got.append(k)
            if pc.status != "ok":
                self.failed = True
                self._drop(got)
                return False
        return True

    def release(self, lo: int, hi: int) -> None:
        if hi > lo:
            self._drop(list(self._keys(lo, hi)))

    def _drop(self, keys) -> None:
        gone = []
        with self.cond:
            for k in keys:
                pc = self.pieces.get(k)
                if pc is None or pc.status == "closing":
                    continue
                pc.ref -= 1
                if pc.ref <= 0 and (pc.status != "ok" or not self.retain):
                    if pc.status == "ok":
                        pc.status = "closing"  # unlocked below, outside the lock
                        gone.append(k)
                    else:
                        del self.pieces[k]
        if not gone:
            return
        # unlocking takes as long as locking: other threads go on registering meanwhile
        t0 = time.perf_counter()
        for k in gone:
            self._unregister(k)
        with self.cond:
            self.seconds["unregister"] += time.perf_counter() - t0
            for k in gone:
                self.pieces.pop(k, None)
            self.cond.notify_all()

    def _unregister(self, k: int) -> None:
        a, z = self._range(k)
        try:
            self.b.unregister_host(a)
        except Exception:
            pass
        with self.cond:
            self.locked_bytes -= z - a

    def close(self) -> None:
        """Unregister every piece still locked."""
        with self.cond:
            for k, pc in list(self.pieces.items()):
                if pc.status == "ok":
                    self._unregister(k)
            self.pieces.clear()
            self.cond.notify_all()


class _PinView:
    """What a run sees of a host array: acquire/release/split in the array's byte offsets."""

    def __init__(self, regs: _HostRegs | None, offset: int = 0):
        self.regs, self.off = regs, offset   # regs None: the memory is page-locked already

    def acquire(self, lo, hi) -> bool:
        return True if self.regs is None else self.regs.acquire(self.off + lo, self.off + hi)

    def release(self, lo, hi) -> None:
        if self.regs is not None:
            self.regs.release(self.off + lo, self.off + hi)

    def covered(self, lo, hi) -> bool:
        return self.regs is None or hi <= lo or self.regs.covered(self.off + lo, self.off + hi)

    def split(self, lo, hi) -> list[tuple[int, int]]:
        if self.regs is None:
            return [(lo, hi)]
        return [(a - self.off, z - self.off) for a, z in self.regs.split(self.off + lo, self.off + hi)]


class _PinCache:
    """Registrations of caller buffers, kept between runs (least recently used first out).

    An ndarray that owns its memory is registered once and stays page-locked while it lives (a
    weak reference unregisters it just before numpy frees the memory), up to
    :func:`pin_cache_limit` bytes; a buffer that numpy does not own (bytes, mmap) is unregistered
    at the end of each run.  A run that finds the owner's data moved (``ndarray.resize``) drops the
    stale registration first.
    """

    def __init__(self):
        self.lock = threading.RLock()
        self.entries: "OrderedDict[tuple, _HostRegs]" = OrderedDict()

    def view(self, backend, arr: np.ndarray, grain: int) -> _PinView:
        if getattr(backend, "host_is_pinned", lambda a: False)(arr):
            return _PinView(None)
        owner = _owner(arr)
        with self.lock:
            if owner is None:  # bytes, an mmap (a file): registered for this run only
                # a mapped file: read-only (the input: locked for device reads only), or fresh
                # pages to fault in first (the output); other memory is locked as it always was
                mapped = isinstance(_base(arr), mmap.mmap)
                ro = mapped and not arr.flags.writeable
                regs = _HostRegs(backend, int(arr.ctypes.data), int(arr.nbytes), grain,
                                 readonly=ro, populate=mapped and not ro)
                regs.active += 1
                return _PinView(regs, 0)
            key = (id(backend), id(owner))
            regs = self.entries.get(key)
            if regs is not None and (regs.b is not backend or regs.base != owner.ctypes.data
                                     or regs.n != owner.nbytes or regs.owner_ref() is not owner):
                del self.entries[key]  # stale: the owner was resized, or its id reused
                regs.close()
                regs = None
            if regs is None:
                regs = _HostRegs(backend, int(owner.ctypes.data), int(owner.nbytes), grain)
                regs.retain = True
                regs.owner_ref = weakref.ref(owner, functools.partial(self._gone, key, regs))
                self.entries[key] = regs
            self.entries.move_to_end(key)
            regs.active += 1
            return _PinView(regs, int(arr.ctypes.data) - int(owner.ctypes.data))

    def done(self, view: _PinView) -> None:
        regs = view.regs
        if regs is None:
            return
        with self.lock:
            regs.active -= 1
            if regs.active <= 0:
                regs.failed = False  # a later run may try again
            if not regs.retain:
                if regs.active <= 0:
                    regs.close()
                return
            limit = pin_cache_limit()
            total = sum(r.locked_bytes for r in self.entries.values())
            for key, r in list(self.entries.items()):
                if total <= limit:
                    break
                if r.active <= 0:
                    total -= r.locked_bytes
                    del self.entries[key]
                    r.close()

    def _gone(self, key, regs, _ref) -> None:
        """The owner array is being freed: unregister before its memory goes."""
        with self.lock:
            if self.entries.get(key) is regs:
                del self.entries[key]
        regs.close()

    def clear(self) -> None:
        with self.lock:
            for regs in self.entries.values():
                regs.close()
            self.entries.clear()

    def locked_bytes(self) -> int:
        with self.lock:
            return sum(r.locked_bytes for r in self.entries.values())


PINS = _PinCache()


class pinned:
    """``with pinned(backend, arr):`` keeps ``arr`` page-locked (CUDA) for the whole block.

    Runs inside the block register nothing for it; on exit it stays in the registration cache
    (see :class:`_PinCache`) or, with the cache off, is unlocked.  Elsewhere it does nothing.
    """

    def __init__(self, backend, arr: np.ndarray):
        self.b = backend
        self.arr = arr
        self.view = None

    def __enter__(self):
        if transfer_mode(self.b) == "register" and self.arr.nbytes:
            self.view = PINS.view(self.b, self.arr, max(PAGE, self.arr.nbytes + PAGE))
            if not self.view.acquire(0, self.arr.nbytes):
                PINS.done(self.view)
                self.view = None
        return self.arr

    def split(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """[lo, hi) of the array cut where a DMA must not cross (registration edges)."""
        return [(lo, hi)] if self.view is None else self.view.split(lo, hi)

    def __exit__(self, *exc):
        if self.view is not None:
            self.view.release(0, self.arr.nbytes)
            PINS.done(self.view)
            self.view = None
        return False


# ------------------------------------------------------------------------------------ threads
class _Workers:
    """A few daemon threads running submitted calls in FIFO order (one thread: strictly in order).

    Daemon threads, so that a thread blocked reading a pipe cannot keep an interrupted CLI alive.
    """

    def __init__(self, n: int, name: str):
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._loop, name=f"cg-{name}-{i}", daemon=True)
                        for i in range(max(1, n))]
        for t in self.threads:
            t.start()

    def submit(self, fn, *args) -> Future:
        f: Future = Future()
        self.q.put((f, fn, args))
        return f

    def _loop(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            f, fn, args = item
            if not f.set_running_or_notify_cancel():
                continue
            try:
                f.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the driver
                f.set_exception(e)
            del item, f, fn, args  # an idle thread must not keep the last chunk's arrays alive

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        for _ in self.threads:
            self.q.put(None)
        if wait:
            for t in self.threads:
                t.join(timeout)


# ------------------------------------------------------------------------------------ chunks
@dataclass(eq=False)
class Chunk:
    index: int
    lo: int                       # byte offset in the message (input and output)
    nbytes: int                   # bytes moved each way (the device's part of the chunk)
    first_block: int = 0
    nblocks: int = 0
    chain: bytes | None = None    # CBC: the ciphertext block before the chunk (or the IV)
    last: bool = False
    src: np.ndarray | None = None  # host bytes uploaded
    dst: np.ndarray | None = None  # host bytes downloaded into
    src_pins: "_PinView | None" = None
    dst_pins: "_PinView | None" = None
    bufs: list = field(default_factory=list)   # staging buffers this chunk holds
    copy_out: bool = False        # dst is a staging buffer to copy into the caller's array
    extra: bytes = b""            # host-computed output right after the device part (XTS tail)
    ev: object = None             # the D2H event


class _Slot:
    __slots__ = ("d_in", "d_out", "ev_k", "ev_d2h")

    def __init__(self, d_in, d_out):
        self.d_in, self.d_out = d_in, d_out
        self.ev_k = None
        self.ev_d2h = None


class _Staging:
    """Pinned host buffers of one capacity, allocated on first need, recycled through a free list."""

    def __init__(self, backend, cap: int):
        self.b = backend
        self.cap = cap
        self.bufs: list[np.ndarray] = []
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()

    def take(self) -> int:
        try:
            return self.free.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            self.bufs.append(host_buffer(self.b, self.cap))
            return len(self.bufs) - 1

    def put(self, i: int) -> None:
        self.free.put(i)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.bufs[i]


# ------------------------------------------------------------------------------------ jobs
class CipherJob:
    """The mode kernel of one KeyedProgram on a range of blocks of the message of ``req`` (by
    default the program's own request; a split passes ``Request.at``'s)."""

    def __init__(self, kp, layout=None, req=None):
        self.kp = kp
        self.req = req or kp.req
        self.bs = kp.bs
        self.layout = layout
        if layout is None and self.req.sector_size:  # a stream in data units: the grid of units
            self.layout = self.req.mode.layout(self.req, self.req.sector_size)

    def scratch_bytes(self, chunk_blocks: int) -> int:
        return self.req.mode.scratch_bytes(self.req, self.layout, chunk_blocks)

    def enqueue(self, ch: Chunk, d_in, d_out, scratch, queue_, wait_for):
        return self.kp.enqueue(d_in, d_out, ch.nblocks, ch.first_block, queue_, chain=ch.chain,
                               layout=self.layout, scratch=scratch, wait_for=wait_for, req=self.req)


class CopyJob:
    """The copy-only strawman kernel (kernels/copy.cl): the pipeline with no cipher."""

    bs = 16
    req = None
    layout = None

    def __init__(self, backend):
        from .program import build_copy_program

        self.b = backend
        self.prg = build_copy_program(backend)
        self._items = None

    def scratch_bytes(self, chunk_blocks: int) -> int:
        return 0

    def enqueue(self, ch: Chunk, d_in, d_out, scratch, queue_, wait_for):
        n = -(-ch.nbytes // 16)
        if self._items is None:
            try:
                self._items = self.b.resident_items(self.prg, "cg_copy")
            except Exception:
                self._items = max(1, self.b.info.compute_units) * 2048
        return self.b.launch(self.prg, "cg_copy", min(n, self._items), [d_in, d_out, U64(n)],
                             queue_, wait_for=wait_for)


# ------------------------------------------------------------------------------------ the pipeline
class Pipeline:
    """Device slots and three queues on one backend; runs arrays and streams through them.

    A Pipeline runs one message at a time (``pipeline_for`` hands out cached ones).
    """

    def __init__(self, backend, *, chunk_bytes=None, depth=None, transfer: str = "auto",
                 threads: int | None = None):
        self.b = backend
        st = tuning.settings(backend.info, chunk_bytes, depth)
        self.chunk_bytes = st.chunk_bytes
        self.depth = st.depth
        self.settings_source = st.source
        self.transfer = transfer_mode(backend, transfer)
        self.threads = threads or host_threads()
        self.q_up = backend.queue()
        self.q_k = backend.queue()
        self.q_down = backend.queue()
        self._slots: list[_Slot] = []
        self._slot_cap = 0
        self._scratch = None
        self._scratch_cap = 0
        self._staging: _Staging | None = None
        self.lock = threading.Lock()
        self.stats: dict = {}
        #: bytes per host-registration piece (None: max(chunk, PIN_GRAIN)); tests make it small
        self.pin_grain: int | None = None
        self._workers = None
        self._rate = 40e9  # bytes/s end to end, learnt from large runs (for _wait_last)

    def __repr__(self) -> str:
        return (f"Pipeline({self.b.info.spec}, chunk={self.chunk_bytes}, depth={self.depth}, "
                f"transfer={self.transfer})")

    def close(self) -> None:
        if self._workers is not None:
            for w in self._workers:
                w.shutdown(wait=False)
            self._workers = None
        self._slots = []
        self._slot_cap = 0
        self._scratch = None
        self._staging = None

    # -- resources -------------------------------------------------------------------------------
    def _ensure(self, cap: int, scratch: int) -> None:
        cap = -(-max(cap, 16) // 16) * 16
        if cap > self._slot_cap or len(self._slots) != self.depth:
            self._slots = []
            self._slots = [_Slot(self.b.alloc(cap), self.b.alloc(cap)) for _ in range(self.depth)]
            self._slot_cap = cap
        if scratch > self._scratch_cap:
            self._scratch = self.b.alloc(scratch)
            self._scratch_cap = scratch
        if self._staging is None or self._staging.cap < cap:
            self._staging = _Staging(self.b, cap)

    def _chunk_for(self, n: int, align: int) -> int:
        """The chunk size for an n-byte message: a message of fewer than SPLIT chunks is cut into
        SPLIT pieces (not below MIN_SPLIT), so that its copies overlap too."""
        chunk = max(align, self.chunk_bytes // align * align)
        floor = MIN_SPLIT.get(self.b.info.kind, 1 << 20)
        if n <= floor:
            return max(align, -(-n // align) * align) if n <= chunk else chunk
        if n < chunk * SPLIT:
            want = max(floor, -(-n // SPLIT))
            chunk = min(chunk, max(align, -(-want // align) * align))
        return chunk

    # -- the engine room ------------------------------------------------------------------------
    def _run(self, job, produce, finish, *, permits: int, nprep: int, nfin: int, cap: int,
             progress=None, inline: bool = False, abort_wait: float | None = None) -> None:
        """Drive chunks ``produce(0), produce(1), ...`` (None: no more) through the device."""
        b = self.b
        chunk_blocks = cap // job.bs
        self._ensure(cap, job.scratch_bytes(chunk_blocks))
        staging = self._staging
        t0 = time.perf_counter()
        nchunks = 0

        def retire(ch: Chunk) -> None:
            try:
                if ch.ev is not None:
                    b.wait(ch.ev)
                finish(ch)
                if progress is not None:
                    progress(ch.nbytes + len(ch.extra))
            finally:
                _release(ch)

        def _release(ch: Chunk) -> None:
            if ch.src_pins is not None:
                ch.src_pins.release(ch.lo, ch.lo + ch.nbytes)
                ch.src_pins = None
            if ch.dst_pins is not None:
                ch.dst_pins.release(ch.lo, ch.lo + ch.nbytes)
                ch.dst_pins = None
            for i in ch.bufs:
                staging.put(i)
            ch.bufs = []

        if inline:
            # Nothing for worker threads to do (no staging copy, every page already locked):
            # enqueue every chunk from this thread - the device orders the three queues through
            # the events, the host waits once, for the last copy back.
            done: list[Chunk] = []
            try:
                while True:
                    ch = produce(nchunks)
                    if ch is None:
                        break
                    done.append(ch)
                    self._enqueue(job, ch, nchunks)
                    nchunks += 1
                    if ch.last:
                        break
                evs = [c.ev for c in done if c.ev is not None]
                if evs:  # in-order D2H queue: the last copy back ends last
                    self._wait_last(evs[-1], sum(c.nbytes for c in done), t0)
                while done:
                    ch = done.pop(0)
                    ch.ev = None
                    retire(ch)
            except BaseException:
                self._abort_device()
                for ch in done:
                    _release(ch)
                raise
            finally:
                self._forget_events()
                self.stats = {"chunks": nchunks, "seconds": time.perf_counter() - t0, "cap": cap,
                              "inline": True}
            return

        sem = threading.Semaphore(permits)
        # worker threads: the pipeline's own (kept between runs) when any thread may take any
        # chunk; fresh single threads when order matters (a pipe) - those die with the run
        own = nprep == self.threads and nfin == self.threads
        if own:
            if self._workers is None:
                self._workers = (_Workers(self.threads, "prep"), _Workers(self.threads, "finish"))
            prep, fin = self._workers
        else:
            prep, fin = _Workers(nprep, "prep"), _Workers(nfin, "finish")
        pending: deque[Future] = deque()
        finishing: deque[Future] = deque()
        failure: list[BaseException] = []

        def reap(block: bool = False) -> None:
            while finishing and (finishing[0].done() or block):
                f = finishing.popleft()
                e = f.exception()
                if e is not None:
                    raise e

        def check_finishers() -> None:
            for f in list(finishing):
                if f.done() and f.exception() is not None:
                    raise f.exception()

        def produce_guarded(i: int):
            try:
                ch = produce(i)
            except BaseException:
                sem.release()
                raise
            if ch is None:
                sem.release()
            return ch

        def finish_guarded(ch: Chunk):
            try:
                retire(ch)
            finally:
                sem.release()

        i = 0
        stop = False
        try:
            while True:
                while not stop:
                    if pending:
                        if not sem.acquire(blocking=False):
                            break
                    else:
                        while not sem.acquire(timeout=0.05):
                            check_finishers()
                    pending.append(prep.submit(produce_guarded, i))
                    i += 1
                if not pending:
                    break
                ch = pending.popleft().result()
                if ch is None:
                    stop = True
                    continue
                if ch.last:
                    stop = True
                try:
                    self._enqueue(job, ch, nchunks)
                except BaseException:
                    _release(ch)
                    sem.release()
                    raise
                nchunks += 1
                finishing.append(fin.submit(finish_guarded, ch))
                reap()
            reap(block=True)
        except BaseException as e:
            failure.append(e)
            raise
        finally:
            if failure:
                for f in pending:
                    if not f.cancel():
                        try:
                            ch = f.result(timeout=abort_wait)
                            if ch is not None:
                                _release(ch)
                        except BaseException:
                            pass
                self._abort_device()
                for f in finishing:
                    try:
                        f.result(timeout=30)
                    except BaseException:
                        pass
            if not own:
                prep.shutdown(wait=not failure, timeout=None if not failure else 1.0)
                fin.shutdown(wait=not failure, timeout=None if not failure else 1.0)
            self._forget_events()
            self.stats = {"chunks": nchunks, "seconds": time.perf_counter() - t0, "cap": cap}

    def _wait_last(self, ev, nbytes: int, t0: float) -> None:
        """Wait for the run's last event: sleep through most of the expected time, then poll
        briefly (a blocking wait's wake-up can cost a GPU run of a few MiB a third of its time),
        then block.  Only where the device is a GPU and the backend can poll."""
        b = self.b
        if b.info.kind == "cpu" or b.query(ev) is None:
            b.wait(ev)
            return
        left = nbytes / self._rate - (time.perf_counter() - t0)
        if left > 2 * SPIN_S:  # (80%: an underestimated rate must not make us oversleep much)
            time.sleep(0.8 * (left - SPIN_S))
        end = time.perf_counter() + SPIN_S
        while time.perf_counter() < end:
            if b.query(ev):
                break
        else:
            b.wait(ev)
        dt = time.perf_counter() - t0
        if nbytes >= 64 * self.chunk_bytes // 8 and dt > 0:  # learn the rate on large runs
            self._rate = max(1e9, min(1e12, 0.7 * self._rate + 0.3 * nbytes / dt))

    def _forget_events(self) -> None:
        """Drop the slots' last events (all complete now): an OpenCL copy event keeps its host
        array alive, and a finished run must not hold the caller's memory."""
        for sl in self._slots:
            sl.ev_k = sl.ev_d2h = None

    def _abort_device(self) -> None:
        """Let every enqueued copy and kernel end before host memory is released or reused."""
        for q in (self.q_up, self.q_k, self.q_down):
            try:
                self.b.finish(q)
            except Exception:
                pass

    def _enqueue(self, job, ch: Chunk, seq: int) -> None:
        """H2D, kernel and D2H of one chunk on the three queues (no host-side wait)."""
        if ch.nblocks == 0:  # nothing for the device (an XTS stream's stolen tail only)
            ch.ev = None
            return
        b = self.b
        s = self._slots[seq % self.depth]
        wait = [s.ev_k] if s.ev_k is not None else None
        up = None
        for a, z in (ch.src_pins.split(ch.lo, ch.lo + ch.nbytes) if ch.src_pins is not None
                     else [(ch.lo, ch.lo + ch.nbytes)]):
            up = b.upload(s.d_in, ch.src[a - ch.lo: z - ch.lo], self.q_up, offset=a - ch.lo,
                          wait_for=wait)
            wait = None
        wait = [up] + ([s.ev_d2h] if s.ev_d2h is not None else [])
        scratch = self._scratch
        if job.layout is not None:
            need = 16 * job.layout.segments(ch.first_block, ch.nblocks)[1]
            if need > self._scratch_cap:  # (the bound says this cannot happen; stay correct)
                self._scratch = scratch = b.alloc(need)
                self._scratch_cap = need
        k = job.enqueue(ch, s.d_in, s.d_out, scratch, self.q_k, wait)
        down = None
        for a, z in (ch.dst_pins.split(ch.lo, ch.lo + ch.nbytes) if ch.dst_pins is not None
                     else [(ch.lo, ch.lo + ch.nbytes)]):
            down = b.download(ch.dst[a - ch.lo: z - ch.lo], s.d_out, self.q_down, offset=a - ch.lo,
                              wait_for=[k] if down is None else None)
        s.ev_k, s.ev_d2h = k, down
        ch.ev = down

    # -- arrays ---------------------------------------------------------------------------------
    def run_array(self, job, data: np.ndarray, out: np.ndarray, plan: list, *, chains=None,
                  progress=None, lock=(True, True)) -> None:
        """Run ``plan`` = [(lo, nbytes, first_block, nblocks), ...] from ``data`` into ``out``.
        ``lock``: whether to page-lock (CUDA) the input and the output; one not locked is staged
        (copied through pinned buffers by the worker threads)."""
        if not plan:
            return
        cap = max(nb for _, nb, _, _ in plan)
        cap = max(cap, max(nbl for _, _, _, nbl in plan) * job.bs)
        mode = self.transfer
        in_pins = out_pins = None
        if mode == "register":
            grain = self.pin_grain or max(cap, _pin_grain())
            in_pins = PINS.view(self.b, data, grain) if lock[0] else None
            out_pins = PINS.view(self.b, out, grain) if lock[1] else None
        regs0 = {id(v.regs): (v.regs, v.regs.registered_bytes, dict(v.regs.seconds))
                 for v in (in_pins, out_pins) if v is not None and v.regs is not None}
        last = len(plan) - 1

        def produce(i: int):
            if i > last:
                return None
            lo, nb, fb, nbl = plan[i]
            ch = Chunk(i, lo, nb, fb, nbl, chain=chains[i] if chains else None, last=i == last)
            hi = lo + nb
            if mode == "any" or (in_pins is not None and in_pins.acquire(lo, hi)):
                ch.src = data[lo:hi]
                ch.src_pins = in_pins
            else:
                k = self._staging.take()
                ch.bufs.append(k)
                ch.src = self._staging[k][:nb]
                np.copyto(ch.src, data[lo:hi])
            if mode == "any" or (out_pins is not None and out_pins.acquire(lo, hi)):
                ch.dst = out[lo:hi]
                ch.dst_pins = out_pins
            else:
                if not ch.bufs:
                    ch.bufs.append(self._staging.take())
                ch.dst = self._staging[ch.bufs[-1]][:nb]
                ch.copy_out = True
            return ch

        def finish(ch: Chunk) -> None:
            if ch.copy_out:
                np.copyto(out[ch.lo: ch.lo + ch.nbytes], ch.dst)

        n = data.nbytes
        inline = len(plan) == 1 or mode == "any" or (
            mode == "register" and in_pins is not None and out_pins is not None
            and in_pins.covered(0, n) and out_pins.covered(0, n))
        t = self.threads
        try:
            self._run(job, produce, finish, permits=self.depth + 2 * t, nprep=t, nfin=t, cap=cap,
                      progress=progress, inline=inline)
        finally:
            self.stats["transfer"] = mode
            for v in (in_pins, out_pins):
                if v is not None:
                    PINS.done(v)
            self.stats["registered_bytes"] = sum(r.registered_bytes - b0 for r, b0, _ in regs0.values())
            for what in ("populate", "register", "unregister"):  # thread-seconds, all threads
                self.stats[what + "_s"] = sum(r.seconds[what] - s0[what] for r, _, s0 in regs0.values())

    def crypt(self, kp, data: np.ndarray, out: np.ndarray, layout=None, *, req=None,
              progress=None, lock=(True, True)) -> None:
        """Mode kernel of ``kp`` over ``data`` into ``out`` (XTS: blocks up to
        layout.kernel_blocks; the caller does the stolen tail).  ``req``: the message's request
        when it is not the program's own (a split, Request.at)."""
        job = CipherJob(kp, layout, req)
        req = job.req
        n, bs = data.nbytes, kp.bs
        total = layout.kernel_blocks if layout is not None else -(-n // bs)
        if total == 0:
            return
        chunk = self._chunk_for(total * bs, bs)
        cb = chunk // bs
        plan = []
        for first in range(0, total, cb):
            nbl = min(cb, total - first)
            lo = first * bs
            plan.append((lo, min(nbl * bs, n - lo), first, nbl))
        # what each chunk needs at its first block (CBC: from the input, read before any chunk of
        # an in-place run can overwrite it; CBC encryption carries it on the device)
        chains = [req.mode.chain_at(req, data, first) for _, _, first, _ in plan]
        if all(c is None for c in chains):
            chains = None
        self.run_array(job, data, out, plan, chains=chains, progress=progress, lock=lock)

    def copy(self, data: np.ndarray, out: np.ndarray | None = None, *, progress=None) -> np.ndarray:
        """The copy-only strawman through the pipeline; returns ``out`` (= the input's bytes)."""
        data = _flat(data)
        out = np.empty(data.nbytes, np.uint8) if out is None else _flat(out)
        if out.nbytes != data.nbytes:
            raise InvalidArgument(f"out holds {out.nbytes} bytes, the input {data.nbytes}")
        if data.nbytes == 0:
            return out
        job = _copy_job(self.b)
        chunk = self._chunk_for(data.nbytes, 16)
        n = data.nbytes
        plan = [(lo, min(chunk, n - lo), lo // 16, -(-min(chunk, n - lo) // 16))
                for lo in range(0, n, chunk)]
        self.run_array(job, data, out, plan, progress=progress)
        return out

    def _stream_mapped(self, job, inp: np.ndarray, out: np.ndarray, progress) -> int:
        """:meth:`stream` between two mapped regular files (the whole input is known)."""
        n = inp.nbytes
        req = job.req
        if req is None:
            self.copy(inp, out, progress=progress)
            return n
        req.check_length(n)
        if not req.mode.device_runs(req, n):
            raise DeviceError(f"{req.spec.name}: these data units need stealing in every unit, "
                              "which the device kernels do not do (the router sends it to OpenSSL)")
        layout = req.mode.layout(req, n)
        tail = None
        if layout is not None and layout.tail_start < n:  # stealing: the host does the last unit
            tail = req.mode.tail(req, layout, inp[layout.tail_start:].tobytes())
        how = os.environ.get("CIPHERGRID_MAPPED_LOCK", "none")
        lock = (how in ("both", "in"), how in ("both", "out"))
        self.crypt(job.kp, inp, out, layout, req=req, progress=progress, lock=lock)
        if tail:
            out[layout.tail_start: layout.tail_start + len(tail)] = np.frombuffer(tail, np.uint8)
            if progress is not None:
                progress(len(tail))
        return n

    # -- streams --------------------------------------------------------------------------------
    def stream(self, job, src, dst, *, progress=None) -> int:
        """Read ``src`` to its end, run it through ``job``, write ``dst``; returns bytes written.

        ``src``/``dst``: binary file objects or file descriptors.  Regular files are read and
        written at offsets by several threads (preadv/pwrite); pipes in order by one.  ``job`` is
        a :class:`CopyJob` or a :class:`CipherJob` of a streamable mode (CTR, ECB and CBC
        decryption without padding, XTS with a sector size).
        """
        req = job.req
        if req is not None and not req.mode.streams(req):
            raise InvalidArgument(f"{req.spec.name} with these options needs the whole message "
                                  "(padding, or one XTS data unit): it does not stream")
        bs = job.bs
        align = (req.sector_size if req is not None else None) or bs
        cap = max(align, self.chunk_bytes // align * align)
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
        nchunks = -(-size // cap) if size is not None else None
        # A regular output of known size is mapped: the device's results go straight into the
        # page cache (D2H into the mapping when it can be page-locked, else one parallel copy
        # from the pinned slot), with no write() - writes to one file serialise in the kernel.
        out_map = out = out_pins = None
        how = os.environ.get("CIPHERGRID_STREAM_MMAP", "1")
        if size and reg_out and how != "0":
            try:
                end = base_out + size
                if os.fstat(fd_out).st_size < end:
                    # reserve the space: a full disk fails here, with ENOSPC, and not later as a
                    # SIGBUS on a store into the mapping
                    os.posix_fallocate(fd_out, base_out, size)
                start = base_out - base_out % mmap.ALLOCATIONGRANULARITY
                flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if how == "populate" else 0)
                out_map = _map_rw(fd_out, end - start, flags, start)
                out = np.frombuffer(out_map, np.uint8)[base_out - start: base_out - start + size]
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                    raise
                out_map = out = None
            except (ValueError, OverflowError):
                out_map = out = None
        if out is not None and reg_in and self.transfer == "register" and how not in ("0", "out"):
            # Both ends are mapped files: the device reads the input's pages and writes the
            # output's directly (both page-locked chunk by chunk, the output's pages faulted in by
            # several threads first), as for arrays in memory: no read(), no staging copy.
            try:
                start = base_in - base_in % mmap.ALLOCATIONGRANULARITY
                in_map = mmap.mmap(fd_in, base_in + size - start, mmap.MAP_SHARED, mmap.PROT_READ,
                                   offset=start)
            except (OSError, ValueError, OverflowError):
                in_map = None
            if in_map is not None:
                try:
                    inp = np.frombuffer(in_map, np.uint8)[base_in - start: base_in - start + size]
                    done = self._stream_mapped(job, inp, out, progress)
                    del inp
                finally:
                    _close_map(in_map)
                    del out
                    _close_map(out_map)
                _seek(dst, fd_out, base_out + done)
                return done
        if out is not None and self.transfer == "register":
            out_pins = PINS.view(self.b, out, self.pin_grain or max(cap, _pin_grain()))
        behind = req is not None and req.mode.reads_behind(req)  # CBC decryption
        state = {"chain": req.iv if behind else None, "done": False, "total": 0}
        self._ensure(cap, job.scratch_bytes(cap // bs))

        def read_full(view: memoryview, off: int | None) -> int:
            got = 0
            while got < len(view):
                if off is None:
                    k = os.readv(fd_in, [view[got:]])
                else:
                    k = os.preadv(fd_in, [view[got:]], off + got)
                if k == 0:
                    break
                got += k
            return got

        def produce(i: int):
            if nchunks is not None and i >= nchunks:
                return None
            if nchunks is None and state["done"]:
                return None
            lo = i * cap
            want = cap if size is None else min(cap, size - lo)
            k = self._staging.take()
            buf = self._staging[k]
            try:
                m = read_full(memoryview(buf)[:want], None if size is None else base_in + lo)
            except BaseException:
                self._staging.put(k)
                raise
            if size is not None and m != want:
                self._staging.put(k)
                raise InvalidArgument(f"the input changed size while it was read ({size} bytes "
                                      f"announced, {lo + m} found)")
            last = (i == nchunks - 1) if nchunks is not None else m < cap
            if size is None and last:
                state["done"] = True
            if m == 0:
                self._staging.put(k)
                if last and req is not None:
                    req.check_length(lo)
                return None
            ch = Chunk(i, lo, m, lo // bs, -(-m // bs), last=last)
            ch.bufs.append(k)
            if req is not None and req.mode.whole_blocks and m % bs:
                self._staging.put(k)
                ch.bufs = []
                req.check_length(lo + m)  # raises: a partial block at the end
            if behind:
                if size is None:  # in order (one reader)
                    ch.chain = state["chain"]
                    state["chain"] = bytes(buf[m - bs: m])
                else:
                    ch.chain = req.iv if lo == 0 else os.pread(fd_in, bs, base_in + lo - bs)
                    if len(ch.chain) != bs:
                        raise InvalidArgument("the input changed while it was read")
            elif req is not None and lo == 0:
                ch.chain = req.mode.chain_at(req, None, 0)  # (CBC encryption: the IV)
            if last and req is not None:
                n = lo + m
                req.check_length(n)
                lay = req.mode.layout(req, n)
                if lay is not None and lay.tail_start < n:
                    t = lay.tail_start - lo
                    ch.extra = req.mode.tail(req, lay, bytes(buf[t:m]))
                    ch.nblocks = lay.kernel_blocks - ch.first_block
                    ch.nbytes = ch.nblocks * bs
            ch.src = ch.dst = buf[: ch.nbytes]
            if out is not None:
                hi = lo + ch.nbytes
                if self.transfer == "any" or (out_pins is not None and out_pins.acquire(lo, hi)):
                    ch.dst = out[lo:hi]
                    ch.dst_pins = out_pins
                else:
                    ch.copy_out = True
            return ch

        def write_all(view: memoryview, off: int | None) -> None:
            done = 0
            while done < len(view):
                if off is None:
                    k = os.write(fd_out, view[done:])
                else:
                    k = os.pwrite(fd_out, view[done:], off + done)
                done += k

        def finish(ch: Chunk) -> None:
            buf = self._staging[ch.bufs[0]]
            if out is not None:
                lo, hi = ch.lo, ch.lo + ch.nbytes
                if ch.copy_out:
                    np.copyto(out[lo:hi], buf[: ch.nbytes])
                if ch.extra:
                    out[hi: hi + len(ch.extra)] = np.frombuffer(ch.extra, np.uint8)
                return
            if ch.extra:
                buf[ch.nbytes: ch.nbytes + len(ch.extra)] = np.frombuffer(ch.extra, np.uint8)
            total = ch.nbytes + len(ch.extra)
            write_all(memoryview(buf)[:total], base_out + ch.lo if reg_out else None)

        t = self.threads
        nprep = t if size is not None else 1
        nfin = t if reg_out else 1
        written = 0

        def count(k: int) -> None:
            nonlocal written
            written += k
            if progress is not None:
                progress(k)

        try:
            self._run(job, produce, finish, permits=self.depth + nprep + nfin, nprep=nprep,
                      nfin=nfin, cap=cap, progress=count, abort_wait=0.5)
        finally:
            if out_pins is not None:
                PINS.done(out_pins)
            if out_map is not None:
                del out
                _close_map(out_map)
        if reg_out:
            _seek(dst, fd_out, base_out + written)
        return written


#: a file system whose new pages are zero-filled when first mapped (tmpfs, shmem)
TMPFS_MAGIC = 0x01021994
#: outputs smaller than this are not faulted in ahead (see prefault_output)
PREFAULT_MIN = 256 << 20
PREFAULT_SLICE = 64 << 20


def _writes_at_offsets(fd: int) -> bool:
    """A regular file not opened O_APPEND: written at offsets (pwrite, a mapping) in any order."""
    return stat.S_ISREG(os.fstat(fd).st_mode) and not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND


def _fs_magic(fd: int) -> int | None:
    """``f_type`` of the file system holding ``fd`` (fstatfs; None where it cannot be read)."""
    try:
        import ctypes
        import struct

        buf = ctypes.create_string_buffer(256)
        if ctypes.CDLL(None, use_errno=True).fstatfs(fd, buf) != 0:
            return None
        return struct.unpack_from("l", buf)[0]  # struct statfs begins with its f_type (a long)
    except (OSError, AttributeError, ValueError):
        return None


class Prefault:
    """The pages of a new output file on a RAM disk, faulted in by background threads while the
    device starts (see :func:`prefault_output`).  ``wait()`` joins them, ``close()`` stops them.
    (Threads in a forked child instead, away from the parent's memory-map lock, measured the
    same on the H200 host.)"""

    def __init__(self, fd: int, offset: int, size: int, threads: int):
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
        pages in while the stream wrote others of the file slowed both threefold on the H200
        host)."""
        for t in self._threads:
            t.join()

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()
        self._threads = []
        if self._map is not None:
            self._arr = None
            _close_map(self._map)
            self._map = None


def prefault_output(f, size: int | None, threads: int | None = None) -> Prefault | None:
    """Start faulting in the pages of the output file ``f`` (a new, empty regular file) that a
    stream of ``size`` bytes will write, in background threads; None where that does not pay.

    On a RAM disk (tmpfs) a page of a new file is allocated and zero-filled when it is first
    touched: about 0.4 s of a 20 GiB stream's 1.1 s on the H200 host (docs/benchmarks.md §4c).
    The CLI starts this before the device starts up (imports, CUDA context, kernel), which the
    zero-filling then overlaps, and waits for it (:meth:`Prefault.wait`) before the stream.
    Threads only read the pages: bytes written meanwhile are safe.  ``CIPHERGRID_PREFAULT``:
    ``0`` turns it off; a size (``64Mi``) replaces PREFAULT_MIN, the smallest output that gets it.
    Not for a stream that has started: faulting in pages while it writes slows both.
    """
    env = os.environ.get("CIPHERGRID_PREFAULT", "").strip()
    least = PREFAULT_MIN if not env else tuning.parse_bytes(env, "CIPHERGRID_PREFAULT")
    if (size is None or size == 0 or least == 0 or size < least
            or os.environ.get("CIPHERGRID_STREAM_MMAP") == "0"):
        return None
    try:
        fd = f if isinstance(f, int) else f.fileno()
        # the outputs Pipeline.stream maps, when new and on a tmpfs
        if (not _writes_at_offsets(fd) or os.fstat(fd).st_size != 0
                or _fs_magic(fd) != TMPFS_MAGIC):
            return None
        base = os.lseek(fd, 0, os.SEEK_CUR)
    except (OSError, ValueError, AttributeError):
        return None
    try:
        return Prefault(fd, base, size, threads or min(16, os.cpu_count() or 1))
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        return None  # cannot map it (a write-only descriptor...): the stream faults as it goes


def _map_rw(fd: int, length: int, flags: int, offset: int) -> mmap.mmap:
    """A read-write shared mapping of ``fd``; a write-only descriptor (``open(path, "wb")``) is
    reopened read-write through /proc/self/fd first (a mapping needs read access)."""
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


def _seek(dst, fd: int, end: int) -> None:
    """Leave ``dst`` (a file object or its descriptor ``fd``) just past what the run wrote."""
    if isinstance(dst, int):
        os.lseek(fd, end, os.SEEK_SET)
    else:
        dst.seek(end)


def _close_map(m) -> None:
    try:
        m.close()
    except BufferError:  # a view still referenced somewhere: the GC unmaps it
        pass


def _flat(a) -> np.ndarray:
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        raise InvalidArgument("the pipeline needs C-contiguous arrays")
    return a.reshape(-1).view(np.uint8)


_copy_jobs: dict[int, CopyJob] = {}


def _copy_job(backend) -> CopyJob:
    j = _copy_jobs.get(id(backend))
    if j is None or j.b is not backend:
        j = _copy_jobs[id(backend)] = CopyJob(backend)
    return j


# ------------------------------------------------------------------------------------ cached pipelines
_pipes: dict[tuple, Pipeline] = {}
_pipes_lock = threading.Lock()


class _Lease:
    def __init__(self, pipe: Pipeline, owned: bool):
        self.pipe, self.owned = pipe, owned

    def __enter__(self) -> Pipeline:
        return self.pipe

    def __exit__(self, *exc):
        if self.owned:
            self.pipe.close()
        else:
            self.pipe.lock.release()
        return False


def pipeline_for(backend, chunk_bytes=None, depth=None, *, transfer: str = "auto",
                 nbytes: int | None = None) -> _Lease:
    """``with pipeline_for(backend, ...) as pipe:`` a cached Pipeline for these settings (a fresh
    one while the cached one is busy in another thread).  Settings resolve through
    :func:`tuning.settings` (arguments, environment, tuning cache, defaults); a GPU with no cache
    entry is tuned first when ``nbytes`` is large."""
    st = tuning.settings(backend.info, chunk_bytes, depth, backend=backend, nbytes=nbytes)
    key = (id(backend), st.chunk_bytes, st.depth, transfer)
    with _pipes_lock:
        pipe = _pipes.get(key)
        if pipe is None or pipe.b is not backend:
            pipe = _pipes[key] = Pipeline(backend, chunk_bytes=st.chunk_bytes, depth=st.depth,
                                          transfer=transfer)
    if pipe.lock.acquire(blocking=False):
        return _Lease(pipe, False)
    return _Lease(Pipeline(backend, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer=transfer),
                  True)


# ------------------------------------------------------------------------------------ entry points
def run_chunks(kp, data: np.ndarray, out: np.ndarray, layout, *, req=None, chunk_bytes=None,
               depth=None, transfer: str = "auto", progress=None) -> None:
    """The mode kernel of ``kp`` over ``data`` into ``out``, overlapped (see the module doc).

    ``chunk_bytes``/``depth`` None: the tuned or default settings of the device.
    """
    n = data.nbytes
    if n == 0:
        return
    with pipeline_for(kp.b, chunk_bytes, depth, transfer=transfer, nbytes=n) as pipe:
        pipe.crypt(kp, data, out, layout, req=req, progress=progress)


def copy(backend, data, out=None, *, chunk_bytes=None, depth=None, transfer: str = "auto"):
    """The copy-only strawman through the pipeline: returns a copy of ``data`` made on the device."""
    data = _flat(data)
    with pipeline_for(backend, chunk_bytes, depth, transfer=transfer, nbytes=data.nbytes) as pipe:
        return pipe.copy(data, out)


def stream_crypt(backend, req, src, dst, *, chunk_bytes=None, depth=None, progress=None,
                 nbytes: int | None = None) -> int:
    """Encrypt or decrypt file ``src`` into file ``dst`` on ``backend`` (see Pipeline.stream).
    ``nbytes``: the input's size when known (a large one may tune an untuned GPU first)."""
    from .program import KeyedProgram

    if not req.mode.streams(req):
        raise InvalidArgument(f"{req.spec.name} with these options does not stream")
    with KeyedProgram(backend, req) as kp, \
            pipeline_for(backend, chunk_bytes, depth, nbytes=nbytes) as pipe:
        return pipe.stream(CipherJob(kp), src, dst, progress=progress)


def stream_copy(backend, src, dst, *, chunk_bytes=None, depth=None, progress=None) -> int:
    with pipeline_for(backend, chunk_bytes, depth) as pipe:
        return pipe.stream(_copy_job(backend), src, dst, progress=progress)


__all__ = ["Pipeline", "CipherJob", "CopyJob", "Chunk", "run_chunks", "copy", "stream_crypt",
           "stream_copy", "pipeline_for", "host_buffer", "pinned",
           "transfer_mode", "pin_cache_limit", "PINS", "prefault_output", "Prefault"]
