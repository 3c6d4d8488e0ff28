"""A keyed program on one device: the mode kernels of a cipher compiled once per device and
implementation, a request's key schedules expanded on the host and uploaded once (into buffers of
the device's key ring, reused from program to program), enqueued for any range of blocks, and
wiped from the device when released.

``KeyedProgram(backend, req)`` is what every device path uses: the one-shot and GPU-resident calls,
the streaming contexts (kept across updates), the transfer pipeline (one per stream) and the bench.
"""

from __future__ import annotations

import threading

import numpy as np

from .backends.base import defines_prefix, program_source
from .errors import DeviceError


def program_source_for(spec, impl: str | None = None, extra: dict | None = None) -> str:
    """The source of the mode kernels for a cipher, key size and implementation (``extra``:
    more defines, for the development scripts)."""
    alg = spec.algorithm
    im = alg.implementation(impl)
    defines = {**alg.defines(spec.key_size), **im.defines, "CG_BATCH": im.batch}
    if im.max_registers:
        defines["CG_MAX_REGS"] = im.max_registers
    if im.local_size:
        defines["CG_LOCAL_SIZE"] = im.local_size  # launches use exactly this (KeyedProgram)
    defines.update(extra or {})
    return defines_prefix(defines) + program_source(im.file, "modes.cl")


def build_program(backend, spec, impl: str | None = None):
    """Compile (once per backend) the mode kernels for a cipher, key size and implementation."""
    key = ("modes", spec.algorithm.name, spec.key_size, impl or "fast")
    prg = backend.cached_program(key)  # (no source text is made for a program already built)
    if prg is not None:
        return prg
    im = spec.algorithm.implementation(impl)
    return backend.build(program_source_for(spec, impl), key=key, local_size=im.local_size,
                         max_registers=im.max_registers)


def build_copy_program(backend):
    return backend.build(program_source(None, "copy.cl"), key=("copy",))


#: held while a backend's key ring is made
_RING_MADE = threading.Lock()


class KeyRing:
    """A backend's device buffers for key schedules and a keyed program's scratch (XTS's segment
    tweaks), reused by its keyed programs instead of an allocation each: a program takes one (the
    smallest that holds what it needs) and gives it back at close() once its zeroing is queued,
    so nothing of a key stays in a buffer after its program.  A buffer given back with its
    zeroing still queued on a queue is taken again only for work on that same queue (it runs
    behind the zeroing); one whose queue was waited for, by any.  The ring keeps the latest
    buffers given back, at most SLOTS of at most KEPT_BYTES together; each holds a power of two
    of bytes, at least MIN_BYTES.  A buffer let go with its zeroing still queued on another
    queue than the one it was allocated for has that queue finished first: CuPy's pool gives
    freed memory back to its allocation's stream, which is not ordered behind the zeroing."""

    SLOTS = 8
    MIN_BYTES = 4096
    KEPT_BYTES = 32 << 20

    def __init__(self, backend):
        from collections import deque

        self.b = backend
        self.lock = threading.Lock()
        #: (capacity, buffer, queue or None: idle, the queue it was allocated for), the oldest
        #: first
        self.free: list = []
        #: buffers given back and not yet filed into ``free``: give() never waits for the lock
        #: (a program collected while this thread holds it, in take(), gives its buffers back
        #: from its finalizer), the next take() or give() that holds it files them
        self.back = deque()

    def take(self, nbytes: int, queue) -> tuple:
        """(buffer, capacity, the queue it was allocated for) of at least ``nbytes`` for work on
        ``queue``."""
        found = None
        with self.lock:
            gone = self._file()
            best = None
            for i, (cap, buf, q, _) in enumerate(self.free):
                if cap >= nbytes and (q is None or q is queue) and (
                        best is None or cap < self.free[best][0]):
                    best = i
            if best is not None:
                cap, buf, _, home = self.free.pop(best)
                found = (buf, cap, home)
        self._let_go(gone)
        if found is not None:
            return found
        cap = max(self.MIN_BYTES, 1 << (max(int(nbytes), 1) - 1).bit_length())
        return self.b.alloc(cap), cap, queue

    def give(self, slots, queue) -> None:
        """Buffers (buffer, capacity, home queue) zeroed on ``queue`` (None: zeroed and waited
        for); the oldest let go (released, their queues not held) past SLOTS or KEPT_BYTES, and
        a buffer larger than KEPT_BYTES not kept.  Filed at once where the lock is free, else by
        whoever holds it next."""
        self.back.extend((cap, buf, queue, home) for buf, cap, home in slots)
        if not self.lock.acquire(blocking=False):
            return
        try:
            gone = self._file()
        finally:
            self.lock.release()
        self._let_go(gone)

    def _file(self) -> list:
        """(under the lock) The buffers given back filed into ``free``; those let go returned."""
        free, gone = self.free, []
        while self.back:
            entry = self.back.popleft()
            (free if entry[0] <= self.KEPT_BYTES else gone).append(entry)
        total = sum(f[0] for f in free)
        while len(free) > self.SLOTS or total > self.KEPT_BYTES:
            gone.append(free.pop(0))
            total -= gone[-1][0]
        return gone

    def _let_go(self, gone) -> None:
        """Buffers let go: a queue still zeroing one that is not its allocation's is finished
        first (outside the lock)."""
        waited = []
        for _, _, q, home in gone:
            if q is not None and q is not home and not any(w is q for w in waited):
                waited.append(q)
                try:
                    self.b.finish(q)
                except Exception:  # noqa: BLE001 - a failed queue runs nothing more
                    pass


def key_ring(backend) -> KeyRing:
    """The backend's KeyRing (made on first use, kept on the backend object)."""
    ring = backend.__dict__.get("_cg_key_ring")
    if ring is None:
        with _RING_MADE:
            ring = backend.__dict__.get("_cg_key_ring")
            if ring is None:
                ring = backend._cg_key_ring = KeyRing(backend)
    return ring


class KeyedProgram:
    """One request's key schedules on one device, ready for ``enqueue`` over any block range.

    The round keys are uploaded on ``queue`` (default: the backend's) without waiting, and a
    launch on another queue waits for the uploads on the device (a launch on the upload queue is
    ordered after them anyway): where the runtime copies pageable memory before returning (CUDA)
    the host copies are zeroed at once and that wait is one marker, recorded at the first such
    launch; elsewhere (OpenCL) it is the upload's event, and the host copies, which the device
    reads later, are kept until ``close()``, which zeroes the device copies, finishes the queue
    and then zeroes them."""

    def __init__(self, backend, req, queue=None, *, record: bool = True,
                 first_bytes: int | None = None):
        self.b = backend
        #: whether launches return events (a caller that waits for the queue as a whole needs none)
        self.record = record
        self.req = req
        spec = req.spec
        self.bs = spec.block_size
        self.impl = im = spec.algorithm.implementation(req.impl)
        self.prg = build_program(backend, spec, req.impl)
        if im.local_size and backend.group_size(self.prg) != im.local_size:
            # the kernels may rely on it (aes_bs.cl's counter tiles)
            raise DeviceError(f"{spec.algorithm.name} implementation {req.impl or 'fast'!r} needs "
                              f"work-groups of {im.local_size} work-items; {backend.info} "
                              f"allows {backend.group_size(self.prg)}")
        self._ring = key_ring(backend)
        self._slots = []      # (buffer, capacity, home): key-ring buffers, given back at close()
        self._hold = []      # host arrays an asynchronous upload still reads (OpenCL)
        self._keys_host = []  # the same, of key schedules (zeroed by close())
        self._scratch = None  # (queue, buffer): the scratch kept for launches on that queue
        self.apow = None
        #: XTS: the segment tweaks kept on the device for later launches (modes/xts.py)
        self.tweaks = None
        #: held while a mode decides on and launches over state kept here (XTS's tweaks)
        self.lock = threading.Lock()
        self._queue = queue
        self._upload_queue = queue or backend.default_queue
        self._async = getattr(backend, "upload_copies_pageable", False)
        self._ready = None   # the marker after the uploads (a launch on another queue waits on it)
        #: the key schedules' buffers, by index (None: closed; a buffer is the ring's again)
        self.rk = None
        try:
            self._keyed(req.mode, first_bytes)
        except BaseException:
            self.close()   # (what was uploaded wiped, the ring's buffers given back)
            raise

    def _keyed(self, mode, first_bytes) -> None:
        req = self.req
        schedules = mode.schedules(req)
        #: what the mode worked out on the host for a first launch over ``first_bytes`` bytes
        #: from block 0: (what goes in the reserve with the keys (XTS: its segment tweaks, or
        #: None), the schedules uploaded now, by index, and the mode's own); the others are
        #: expanded and uploaded by :meth:`schedule` when a launch asks for them
        self.first = None
        head = None
        if first_bytes and mode.first_launch is not None:
            self.first = mode.first_launch(req, first_bytes)
        if self.first is None:
            self._later = None
            self.rk = self._upload_keys(schedules, None)
        else:
            head, now = self.first[0], self.first[1]
            self._later = {i: s for i, s in enumerate(schedules) if i not in now}
            try:
                up = self._upload_keys([schedules[i] for i in now], head)
            finally:
                if head is not None:
                    head[:] = bytes(len(head))
            self.rk = [None] * len(schedules)
            for i, buf in zip(now, up):
                self.rk[i] = buf
        if mode.prepare is not None:
            mode.prepare(self)

    def schedule(self, i: int, queue=None):
        """Key schedule ``i``'s buffer, for a launch on ``queue``.  One a first launch did
        without is expanded and uploaded now (wiped with the others): a launch on the upload
        queue runs behind its upload; for one on another queue it is waited for first."""
        self._open()
        buf = self.rk[i]
        if buf is None:
            buf = self._upload_keys([self._later.pop(i)], None, reserve=False)[0]
            if (queue or self.b.default_queue) is not self._upload_queue:
                self.b.finish(self._queue)
            self.rk[i] = buf
        return buf

    def _upload_keys(self, schedules, head: bytes | None = None, *, reserve: bool = True) -> list:
        """Every key schedule of the request in one device buffer of the backend's key ring
        (one upload and one zeroing: several schedules, XTS's two, at offsets of the backend's
        view alignment, each after the first a view); the buffers the kernels take, in
        ``schedules``' order.  The mode's ``scratch_reserve`` bytes after them are the first
        scratch of launches on the upload queue (a small call's, with nothing more to allocate
        or wipe)."""
        alg = self.req.spec.algorithm
        layout = self.impl.key_layout
        words = [alg.expand(key, decrypt, layout=layout) for key, decrypt in schedules]
        b = self.b
        reserve = self.req.mode.scratch_reserve if reserve else 0
        if len(words) == 1 and not reserve:
            host = words[0]
            offsets = None
        else:
            align = b.view_align
            offsets, total = [], 0
            for w in words:
                offsets.append(total)
                total += -(-w.nbytes // align) * align
            host = np.zeros(total + reserve, dtype=np.uint8)
            for w, off in zip(words, offsets):
                host[off: off + w.nbytes] = w.view(np.uint8)
                w.fill(0)
            if head:
                host[total: total + len(head)] = np.frombuffer(head, dtype=np.uint8)
        try:
            slot = self._ring.take(host.nbytes, self._upload_queue)
            self._slots.append(slot)
            buf = slot[0]
            ev = b.upload(buf, host, self._queue, record=not self._async)
        except BaseException:
            host.fill(0)
            for w in words:
                w.fill(0)
            raise
        if self._async:   # the runtime has its own copy by now
            host.fill(0)
            if offsets is not None:
                for w in words:
                    w.fill(0)
        else:             # the device reads it later: kept until close() has finished the queue
            self._keys_host.append(host)
            self._ready = ev
        if reserve:
            self._scratch = (self._upload_queue, b.view(buf, total, reserve), reserve)
        if offsets is None:
            return [buf]
        # (the schedule at offset 0: the buffer itself, a kernel reads it from its start)
        return [b.view(buf, off, w.nbytes) if off else buf for w, off in zip(words, offsets)]

    def scratch(self, nbytes: int, queue=None):
        """A device scratch buffer of at least ``nbytes`` for launches on ``queue``, from the
        key ring, kept with the program (wiped with it) and reused by its later launches on the
        same queue (they run in order there); another queue, or more bytes, gets another."""
        q = queue or self.b.default_queue
        kept = self._scratch
        if kept is not None and kept[0] is q and kept[2] >= nbytes:
            return kept[1]
        slot = self._ring.take(nbytes, q)     # (wiped and given back with the keys' buffers)
        self._slots.append(slot)
        self._scratch = (q, slot[0], slot[1])
        return slot[0]

    def host_block(self, block: bytes) -> np.ndarray:
        """``block`` as a 16-byte host array kept alive until close (an upload reads it later)."""
        arr = np.frombuffer(bytes(block).ljust(16, b"\0"), dtype=np.uint8).copy()
        self._hold.append(arr)
        return arr

    def enqueue(self, in_buf, out_buf, nblocks: int, first_block: int, queue=None, *,
                chain=None, layout=None, scratch=None, wait_for=None, req=None,
                record: bool | None = None):
        """Enqueue the mode kernel on blocks [first_block, first_block + nblocks) of the message.

        ``in_buf``/``out_buf`` hold exactly those blocks.  CBC needs ``chain`` (see
        Mode.chain_at), bytes or a :class:`DeviceChain`; XTS needs ``layout`` and a ``scratch``
        buffer of at least ``layout.scratch_bytes(nblocks)`` bytes (None: the program's own,
        which keeps its tweaks for later launches).  ``req``: a request with this program's key
        and other IV / start sector (a split: ``Request.at``).  ``record``: whether the launch
        returns an event (None: the program's ``record``)."""
        self._open()
        if (queue or self.b.default_queue) is not self._upload_queue:
            if self._ready is None and self._async:
                self._ready = self.b.marker(self._upload_queue)
            if self._ready is not None:   # (OpenCL: the uploads' own event)
                wait_for = list(wait_for or ()) + [self._ready]
        req = req or self.req
        return req.mode.enqueue(self, req, in_buf, out_buf, first_block, nblocks, queue,
                                chain=chain, layout=layout, scratch=scratch, wait_for=wait_for,
                                record=self.record if record is None else record)

    def _open(self) -> None:
        """A closed program launches nothing: its buffers are the key ring's, another
        program's keys may be in them."""
        if self.rk is None:
            raise DeviceError("a keyed program used after close()")

    def close(self, wait: bool = True) -> None:
        """Wipe the round keys (and the chaining value) on the device: every buffer zeroed on
        the upload queue, which is then waited for once.  ``wait=False`` (a CUDA stream that
        every later use of the memory is ordered on: CuPy's pool gives a freed block back only
        to its stream): the zeroing is queued behind the launches and not waited for.  The key
        ring's buffers go back to the ring once their zeroing is queued (a buffer whose zeroing
        failed is dropped, never reused)."""
        slots, self._slots = self._slots, []
        self.rk = self._later = None
        wiped = []
        for slot in slots:
            try:
                self.b.zero(slot[0], self._queue, wait=False)
                wiped.append(slot)
            except Exception:
                pass
        waited = False
        if slots and (wait or self._keys_host):
            try:
                self.b.finish(self._queue)
                waited = True
            except Exception:
                wiped = []
        if wiped:
            self._ring.give(wiped, None if waited else self._upload_queue)
        for host in self._keys_host:
            host.fill(0)
        self._keys_host = []
        self._hold = []
        self._scratch = None
        self.tweaks = None
        self._ready = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class DeviceChain:
    """CBC's chaining value kept on one device between the pieces of a message (a context's
    GPU-resident pieces): a buffer the kernels read it from and leave the next one in, so a
    piece needs no copy, no upload and no wait.  ``known``: the value while the host has it
    (the buffer not yet written), else None; :meth:`value` reads it back (waiting for the
    launches before it), for a piece that runs elsewhere."""

    #: what the modes test for (modes/cbc.py): a chain that lives on a device
    on_device = True

    def __init__(self, backend, block_size: int, value: bytes | None):
        self.b = backend
        self.bs = block_size
        self.buf = backend.alloc(16)
        self.known = None if value is None else bytes(value)
        self.queue = None    # the queue of the last launch that wrote it

    def value(self) -> bytes:
        if self.known is None:
            host = np.empty(16, dtype=np.uint8)
            self.b.wait(self.b.download(host, self.buf, self.queue))
            self.known = host[: self.bs].tobytes()
        return self.known
