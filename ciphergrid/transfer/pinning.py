"""Page-locking caller memory in place (CUDA ``cudaHostRegister``) so that the DMA engines read
and write it directly: registrations of one buffer piece by piece (:class:`_HostRegs`), what a run
sees of them (:class:`PinView`), the registration cache kept between runs (:class:`_PinCache`:
one per runtime, ``Runtime.pins``; a backend's is its runtime's, :func:`pins_of`) and
``with pinned(backend, arr):``.  CUDA's registrations are the process's: memory one runtime keeps
locked is refused to another's registration, whose run then stages its copies.

Pieces are ``TransferSettings.pin_grain`` bytes (``CIPHERGRID_PIN_GRAIN``, default
:data:`ciphergrid.settings.PIN_GRAIN`, 64 MiB; at least the chunk) on a page-aligned grid; the
cache keeps up to ``TransferSettings.pin_cache`` bytes (``CIPHERGRID_PIN_CACHE``) locked.
"""

from __future__ import annotations

import functools
import mmap
import os
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass

from .. import settings as _settings
from .staging import transfer_mode
from .._lazy import numpy_for

np = numpy_for(__name__)

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def pin_cache_limit(settings: _settings.TransferSettings | None = None) -> int:
    """Bytes of caller memory kept page-locked between runs (``CIPHERGRID_PIN_CACHE``; 0: none)."""
    return settings.pin_cache if settings is not None else _settings.pin_cache_bytes()


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
    locking would fault them in one by one.  One write per page, of the byte's own value (faster
    than MADV_POPULATE_WRITE: docs/benchmarks.md 4b)."""
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


class PinView:
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


def _domain(backend):
    """Whose registrations a backend sees: CUDA's are portable (every GPU of the process sees
    them as page-locked: one registration serves every GPU's pipeline, where a second one of the
    same pages would be refused), so all its backends share one domain; others, each its own."""
    return getattr(backend, "pin_domain", None) or id(backend)


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

    def view(self, backend, arr: np.ndarray, grain: int) -> PinView:
        if getattr(backend, "host_is_pinned", lambda a: False)(arr):
            return PinView(None)
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
                return PinView(regs, 0)
            key = (_domain(backend), id(owner))
            regs = self.entries.get(key)
            if regs is not None and self._current(backend, owner) is None:
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
            return PinView(regs, int(arr.ctypes.data) - int(owner.ctypes.data))

    def done(self, view: PinView, limit: int | None = None) -> None:
        """The end of a run's use of ``view``; ``limit``: the cache's size in bytes (None: the
        environment's, :func:`pin_cache_limit`)."""
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
            if limit is None:
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

    def _current(self, backend, owner):
        """The cached registrations of ``owner``'s memory on ``backend``, or None (none, or
        stale: the owner was resized, or its id reused).  Under the lock."""
        regs = self.entries.get((_domain(backend), id(owner)))
        if regs is None or (_domain(regs.b) != _domain(backend) or regs.base != owner.ctypes.data
                            or regs.n != owner.nbytes or regs.owner_ref() is not owner):
            return None
        return regs

    def copy_ranges(self, backend, arr, lo: int, hi: int) -> list[tuple[int, int]]:
        """Bytes [lo, hi) of host array ``arr`` cut at the edges of the cached registrations of
        its memory on ``backend``: one DMA must not span two registrations (CUDA refuses it:
        cudaErrorInvalidValue), and a buffer the pipeline locked chunk by chunk stays locked in
        those pieces for later runs of any kind.  [(lo, hi)] when none is cached."""
        if hi <= lo:
            return []
        owner = _owner(arr) if isinstance(arr, np.ndarray) else None
        if owner is None:
            return [(lo, hi)]
        with self.lock:
            regs = self._current(backend, owner)
            if regs is None:
                return [(lo, hi)]
            o = int(arr.ctypes.data) - regs.base
            return [(a - o, z - o) for a, z in regs.split(o + lo, o + hi)]


def pins_of(backend) -> _PinCache:
    """The registration cache of the runtime that made ``backend`` (devices.backend), else of
    this thread's runtime."""
    rt = getattr(backend, "runtime", None)
    if rt is None:
        from ..runtime import current

        rt = current()
    pins = rt.pins
    if pins is None:
        with rt.lock:
            if rt.pins is None:
                rt.pins = _PinCache()
            pins = rt.pins
    return pins


def copy_ranges(backend, arr, lo: int, hi: int) -> list[tuple[int, int]]:
    """See _PinCache.copy_ranges (the cache of ``backend``'s runtime)."""
    return pins_of(backend).copy_ranges(backend, arr, lo, hi)


class pinned:
    """``with pinned(backend, arr):`` keeps ``arr`` page-locked (CUDA) for the whole block.

    Runs inside the block register nothing for it; on exit it stays in the registration cache
    (see :class:`_PinCache`) or, with the cache off, is unlocked.  Elsewhere it does nothing.
    """

    def __init__(self, backend, arr: np.ndarray, *,
                 settings: _settings.TransferSettings | None = None):
        self.b = backend
        self.arr = arr
        self.limit = None if settings is None else settings.pin_cache  # None: the environment's
        self.view = None
        self.pins = None

    def __enter__(self):
        if transfer_mode(self.b) == "register" and self.arr.nbytes:
            self.pins = pins_of(self.b)
            self.view = self.pins.view(self.b, self.arr, max(PAGE, self.arr.nbytes + PAGE))
            if not self.view.acquire(0, self.arr.nbytes):
                self.pins.done(self.view, self.limit)
                self.view = None
        return self.arr

    def split(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """[lo, hi) of the array cut where a DMA must not cross (registration edges)."""
        return [(lo, hi)] if self.view is None else self.view.split(lo, hi)

    def __exit__(self, *exc):
        if self.view is not None:
            self.view.release(0, self.arr.nbytes)
            self.pins.done(self.view, self.limit)
            self.view = None
        return False


__all__ = ["PAGE", "copy_ranges", "pinned", "pin_cache_limit", "pins_of"]
