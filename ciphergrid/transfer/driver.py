"""The pipeline driver: chunks of a message through one device on three queues.

:class:`Pipeline` owns the device slots, the three queues (up, compute, down), the staging pool
and the worker threads of one backend, and runs one message at a time: an array
(:meth:`Pipeline.run_array`, :meth:`~Pipeline.crypt`, :meth:`~Pipeline.copy`) or a stream
(:meth:`Pipeline.stream`: :mod:`ciphergrid.transfer.streams`, the file side in
:mod:`ciphergrid.transfer.files`).  A job says what the device does to each chunk
(:mod:`ciphergrid.transfer.jobs`): :class:`CipherJob` (a mode kernel of a KeyedProgram) or
:class:`CopyJob` (the copy-only strawman).  The chunks are a job kind of the one pipeline
(:mod:`ciphergrid.transfer.flight`: their order, overlap, ends and failures; an AEAD batch's
pieces are the other, :mod:`ciphergrid.transfer.batches`).  The data path is described in
:mod:`ciphergrid.transfer`.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from .. import settings as _settings
from ..errors import InvalidArgument
from . import chunking
from .flight import Lanes, fly, fly_threaded
from .jobs import Chunk, CipherJob, CopyJob, copy_job, flat_uint8
from .pinning import pins_of
from .staging import Staging, transfer_mode
from .streams import PipelineStreams
from .workers import Workers

#: the end-to-end rate a job kind's first large run is expected at (bytes/s; see _wait_last)
RATE_GUESS = 40e9
#: the end of a GPU run is polled for at most this long before blocking (see _wait_last)
SPIN_S = 0.0015
#: a message of fewer chunks than this is cut into this many (see Pipeline._chunk_for)
SPLIT = 8
#: a message at most this large runs as one chunk
MIN_SPLIT = {"gpu": 1 << 20, "cpu": 64 << 10, "accelerator": 1 << 20}


class _Slot:
    __slots__ = ("d_in", "d_out", "ev_k", "ev_d2h")

    def __init__(self, d_in, d_out):
        self.d_in, self.d_out = d_in, d_out
        self.ev_k = None
        self.ev_d2h = None


class _Chunks:
    """The block ciphers' job kind of the one pipeline (transfer/flight.py): chunk ``seq`` of a
    message, made by ``produce`` (its host side: staged or page-locked), through the job's
    kernel in device slot ``seq mod depth`` (``Pipeline._enqueue``: H2D, kernel, D2H on the
    three queues), then ``finish`` (its host side after D2H) and its buffers released."""

    __slots__ = ("pipe", "job", "produce", "finish", "progress", "launched")

    def __init__(self, pipe, job, produce, finish, progress):
        self.pipe, self.job, self.produce, self.finish = pipe, job, produce, finish
        self.progress = progress
        self.launched = 0

    def stage(self, seq: int):
        return self.produce(seq)

    def launch(self, ch: Chunk, seq: int) -> None:
        self.pipe._enqueue(self.job, ch, seq)
        self.launched += 1

    def retire(self, ch: Chunk) -> None:
        try:
            if ch.ev is not None:
                self.pipe.b.wait(ch.ev)
            self.finish(ch)
            if self.progress is not None:
                self.progress(ch.nbytes + len(ch.extra))
        finally:
            self.abort(ch)

    def abort(self, ch: Chunk) -> None:
        """Release the chunk's page-locked ranges and staging buffers."""
        if ch.src_pins is not None:
            ch.src_pins.release(ch.lo, ch.lo + ch.nbytes)
            ch.src_pins = None
        if ch.dst_pins is not None:
            ch.dst_pins.release(ch.lo, ch.lo + ch.nbytes)
            ch.dst_pins = None
        staging = self.pipe._staging
        for i in ch.bufs:
            staging.put(i)
        ch.bufs = []


# ------------------------------------------------------------------------------------ the pipeline
class Pipeline(PipelineStreams):
    """Device slots and three queues on one backend; runs arrays and streams through them.

    A Pipeline runs one message at a time (``pipeline_for`` hands out cached ones).
    """

    def __init__(self, backend, *, chunk_bytes=None, depth=None, transfer: str = "auto",
                 threads: int | None = None, settings: _settings.TransferSettings | None = None):
        self.b = backend
        #: the transfer options (None: the environment's, read at construction and at each run)
        self.settings = settings
        opts = self._opts()
        st = chunking.resolve(backend.info, chunk_bytes, depth, settings=opts)
        self.chunk_bytes = st.chunk_bytes
        self.depth = st.depth
        self.settings_source = st.source
        self.transfer = transfer_mode(backend, transfer)
        self.threads = threads or opts.host_threads
        self.q_up = backend.queue()
        self.q_k = backend.queue()
        self.q_down = backend.queue()
        self.lanes = Lanes(backend, self.q_up, [self.q_k], self.q_down)
        self._slots: list[_Slot] = []
        self._slot_cap = 0
        self._scratch = None
        self._scratch_cap = 0
        self._staging: Staging | None = None
        self.lock = threading.Lock()
        self.stats: dict = {}
        #: bytes per host-registration piece (None: max(chunk, settings.pin_grain)); tests make
        #: it small
        self.pin_grain: int | None = None
        self._workers = None
        #: bytes/s end to end per job kind (``job.rate_key``), learnt from large runs (for
        #: _wait_last: a slow cipher's rate must not make a fast one's wait oversleep)
        self._rates: dict = {}

    def __repr__(self) -> str:
        return (f"Pipeline({self.b.info.spec}, chunk={self.chunk_bytes}, depth={self.depth}, "
                f"transfer={self.transfer})")

    def _opts(self) -> _settings.TransferSettings:
        return self.settings if self.settings is not None else _settings.transfer()

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
            self._staging = Staging(self.b, cap)

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
        """Drive chunks ``produce(0), produce(1), ...`` (None: no more) through the device: the
        one pipeline (transfer/flight.py) with the chunks as its job kind."""
        self._ensure(cap, job.scratch_bytes(cap // job.bs))
        kind = _Chunks(self, job, produce, finish, progress)
        t0 = time.perf_counter()
        if inline:
            # Nothing for worker threads to do (no staging copy, every page already locked):
            # enqueue every chunk from this thread - the device orders the three queues through
            # the events, the host waits once, for the last copy back.
            def ending(done: list) -> None:
                evs = [c.ev for c in done if c.ev is not None]
                if evs:  # in-order D2H queue: the last copy back ends last
                    self._wait_last(evs[-1], sum(c.nbytes for c in done), t0,
                                    getattr(job, "rate_key", "copy"))
                for c in done:
                    c.ev = None

            try:
                fly(kind, self.lanes, ending=ending)
            finally:
                self._forget_events()
                self.stats = {"chunks": kind.launched, "seconds": time.perf_counter() - t0,
                              "cap": cap, "inline": True}
            return
        # worker threads: the pipeline's own (kept between runs) when any thread may take any
        # chunk; fresh single threads when order matters (a pipe) - those die with the run
        own = nprep == self.threads and nfin == self.threads
        if own:
            if self._workers is None:
                self._workers = (Workers(self.threads, "prep"),
                                 Workers(self.threads, "finish"))
            prep, fin = self._workers
        else:
            prep, fin = Workers(nprep, "prep"), Workers(nfin, "finish")
        ok = False
        try:
            fly_threaded(kind, self.lanes, permits=permits, prep=prep, fin=fin,
                         abort_wait=abort_wait)
            ok = True
        finally:
            if not own:
                prep.shutdown(wait=ok, timeout=None if ok else 1.0)
                fin.shutdown(wait=ok, timeout=None if ok else 1.0)
            self._forget_events()
            self.stats = {"chunks": kind.launched, "seconds": time.perf_counter() - t0,
                          "cap": cap}

    def _wait_last(self, ev, nbytes: int, t0: float, key=None) -> None:
        """Wait for the run's last event: sleep through most of the expected time, then poll
        briefly (a blocking wait's wake-up can cost a GPU run of a few MiB a third of its time),
        then block.  Only where the device is a GPU and the backend can poll."""
        b = self.b
        if b.info.kind == "cpu" or b.query(ev) is None:
            b.wait(ev)
            return
        rate = self._rates.get(key, RATE_GUESS)
        left = nbytes / rate - (time.perf_counter() - t0)
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
            self._rates[key] = max(1e9, min(1e12, 0.7 * rate + 0.3 * nbytes / dt))

    def _forget_events(self) -> None:
        """Drop the slots' last events (all complete now): an OpenCL copy event keeps its host
        array alive, and a finished run must not hold the caller's memory."""
        for sl in self._slots:
            sl.ev_k = sl.ev_d2h = None

    def _abort_device(self) -> None:
        """Let every enqueued copy and kernel end before host memory is released or reused."""
        self.lanes.drain()

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
        limit = None
        if mode == "register":
            opts = self._opts()
            limit = opts.pin_cache
            grain = self.pin_grain or max(cap, opts.pin_grain)
            pins = pins_of(self.b)
            in_pins = pins.view(self.b, data, grain) if lock[0] else None
            out_pins = pins.view(self.b, out, grain) if lock[1] else None
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
                    pins.done(v, limit)
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
        data = flat_uint8(data)
        out = np.empty(data.nbytes, np.uint8) if out is None else flat_uint8(out)
        if out.nbytes != data.nbytes:
            raise InvalidArgument(f"out holds {out.nbytes} bytes, the input {data.nbytes}")
        if data.nbytes == 0:
            return out
        job = copy_job(self.b)
        chunk = self._chunk_for(data.nbytes, 16)
        n = data.nbytes
        plan = [(lo, min(chunk, n - lo), lo // 16, -(-min(chunk, n - lo) // 16))
                for lo in range(0, n, chunk)]
        self.run_array(job, data, out, plan, progress=progress)
        return out


__all__ = ["Pipeline", "CipherJob", "CopyJob", "Chunk", "copy_job", "flat_uint8"]
