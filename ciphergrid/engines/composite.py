"""The composite engine: one request over several engines at once (the scheduler).

``device="all"`` (every GPU, CUDA before the OpenCL view of the same card, and the host's best CPU
engine) or a list (``"cuda:0,native"``) routes here.  A message is cut into ranges on the mode's
split grain (a block; XTS: a data unit; ``Request.at`` makes each range a message of its own,
so the bytes equal one engine's), and:

* **shares by speed, then a self-scheduled tail**: each engine first takes one contiguous range
  sized by its expected speed (``speeds``: measured in earlier runs of this process, else a
  default per kind of device) for ``1 - TAIL`` of the bytes; the rest is handed out from one
  queue in shrinking pieces to whichever engine is free, so an engine slower than expected
  never holds the job;
* **faults**: a range whose engine raises is put back in the queue and run by another (the
  engine takes no more ranges); a range running past ``HANG_FACTOR`` x its expected time (and at
  least ``HANG_MIN_S``; never the last engine standing) is declared hung and run by another the
  same way.  Out of place, the
  ranges are written straight into the destination: a hung engine that wakes up later can only
  write its range's bytes again, computed from an input nobody changed (the engines are
  deterministic).  In place, that input is gone once another engine wrote the range, so every
  range is **fenced**: written into its worker's own buffer and committed (copied into the
  destination) only while it is still that worker's; the input of a range is kept until the range
  is committed.  ``CIPHERGRID_SCHED_FENCE=copy`` fences every run (bench scheduler measures what
  it costs: docs/benchmarks.md);
* **faults injected** for tests and demonstrations: ``CIPHERGRID_FAULT=SPEC:fail:BYTES`` (the
  engine ``SPEC`` raises once it has run ``BYTES``) or ``SPEC:hang:BYTES`` (it stops for
  ``HANG_INJECTED_S`` seconds); several separated by commas;
* CBC encryption (serial) runs on one engine; XTS without ``sector_size`` (one data unit) too;
* AEAD batches (``seal`` / ``open``) are split by whole messages the same way (``_Messages``:
  each engine seals or opens its ranges, the tags and the verified mask gathered in order);
* a GPU-resident array (``crypt_resident``, ``_Resident``) over several CUDA GPUs: its own GPU
  runs its ranges in place, the others through peer copies in pieces, overlapped.

What happened is kept in a :class:`SchedulerStats` (each engine's bytes, ranges, failures, the rework),
filled in for the caller that passes one (``stats=`` of the API) and warned about
(``EngineFailureWarning``) when an engine failed.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import DeviceError, EngineFailureWarning, InvalidArgument, UnsupportedCipher
from ..runtime import current
from ..settings import injected_faults, load_cache_json, save_cache_json
from .base import Engine, Session, Sessions

#: the share of the bytes handed out as a self-scheduled tail (the rest: by expected speed)
TAIL = 0.15
#: the smallest piece of the tail, and the grain ranges are cut on (bytes; rounded to the unit):
#: a GPU's range is a pipeline of its own, efficient from a few MiB on
GRAIN = 4 << 20
#: host threads each device engine's pipeline keeps when OpenSSL runs beside it (one core budget)
CORES_PER_DEVICE = 2
#: a range running longer than this many times its expected time (and HANG_MIN_S) is hung;
#: an engine not yet measured in this process (its first range may build its kernels) gets
#: HANG_UNMEASURED_S at least
HANG_FACTOR = 4.0
HANG_MIN_S = 2.0
HANG_UNMEASURED_S = 60.0
#: ... and an engine measured only by earlier processes, at its first range in this one (that range
#: sets up its session: keys, kernels, pipeline buffers), this
HANG_COLD_S = 10.0
#: how long an injected hang lasts
HANG_INJECTED_S = 30.0
#: bytes per piece of a file or pipe (each piece scheduled over the engines)
STREAM_PIECE = 256 << 20
#: bytes per second expected of an engine never measured (by device kind; GPU-resident data on
#: the engine's own GPU, on another through peer copies)
DEFAULT_SPEED = {"gpu": 20e9, "native": 2e9, "cpu": 0.2e9, "resident": 300e9, "peer": 100e9}
#: GPU-resident data: the smallest range (a range costs a few launches and a synchronization),
#: and the pieces a range on another GPU is copied in, run and copied back in (overlapped)
RESIDENT_GRAIN = 256 << 20
PEER_PIECE = 64 << 20
PEER_SLOTS = 3
#: GPU-resident data: the tail's share (each range costs a synchronization of its GPU: a few
#: large ranges; measured on 4 H200s, 4 GiB AES-128-CTR on GPU 0 over all four, 2026-11-28:
#: 460 GB/s at 64 MiB ranges and TAIL, 510 at 256 MiB, 535 with a 5 % tail)
RESIDENT_TAIL = 0.05

#: the cache folder's file of the speeds measured
CALIBRATION_FILE = "scheduler-speeds.json"
#: seconds between two writes of the calibration file
SAVE_EVERY_S = 10.0


def _key(engine, name: str, encrypt: bool, path: str = "array") -> tuple:
    return (engine.info.spec, engine.info.name, name, bool(encrypt), path)


def _load(rt) -> None:
    """The speeds measured by earlier processes on this machine (the cache folder's
    CALIBRATION_FILE), into runtime ``rt``: a user's first large call is split by them, not
    measured."""
    rt.calibration["loaded"] = True
    try:
        for r in load_cache_json(CALIBRATION_FILE, []):
            rt.speeds.setdefault((r["spec"], r["name"], r["cipher"], bool(r["encrypt"]),
                                  r.get("path", "array")), float(r["bytes_per_s"]))
    except (KeyError, TypeError, ValueError):
        pass


def _save(rt) -> None:
    save_cache_json(CALIBRATION_FILE, [{"spec": k[0], "name": k[1], "cipher": k[2], "encrypt": k[3],
                                        "path": k[4], "bytes_per_s": v}
                                       for k, v in rt.speeds.items()])
    rt.calibration["saved"] = time.monotonic()


def expected_speed(engine, name: str, encrypt: bool, rt=None, path: str = "array") -> tuple[float, bool]:
    """(bytes per second, measured?): what ``engine`` ran cipher ``name`` at in that direction on
    this machine (the last runs, smoothed; kept in runtime ``rt``, default the current one, and
    across processes in the cache folder), else a default for its kind of device.  ``path``:
    where the data lives ("array": host memory; "resident": on the engine's own GPU;
    "peer:SPEC": on GPU SPEC, through peer copies)."""
    rt = rt or current()
    key = _key(engine, name, encrypt, path)
    with rt.lock:
        if not rt.calibration["loaded"]:
            _load(rt)
        v = rt.speeds.get(key)
    if v is not None:
        return v, True
    if path != "array":
        return DEFAULT_SPEED[path.partition(":")[0]], False
    return DEFAULT_SPEED["native" if engine.info.runtime == "native" else engine.info.kind], False


def _measured(rt, engine, name: str, encrypt: bool, nbytes: int, seconds: float,
              path: str = "array", grain: int = GRAIN) -> None:
    """A range's speed, into the smoothed figure (half the old, half the new); the figures
    written to the cache folder at most every SAVE_EVERY_S."""
    if nbytes < grain or seconds <= 0:
        return
    key = _key(engine, name, encrypt, path)
    v = nbytes / seconds
    with rt.lock:
        rt.calibration.setdefault("warm", set()).add(key)
        old = rt.speeds.get(key)
        rt.speeds[key] = v if old is None else 0.5 * old + 0.5 * v
        if time.monotonic() - rt.calibration["saved"] > SAVE_EVERY_S:
            _save(rt)


@dataclass
class EngineStats:
    spec: str
    bytes: int = 0               # committed
    ranges: int = 0
    seconds: float = 0.0         # busy time of its worker
    failed: str | None = None    # why it stopped taking ranges (an error, a hang)


@dataclass
class SchedulerStats:
    """What a scheduled run did: per engine (``engines``: spec -> EngineStats), the bytes run
    again after a failure (``rework_bytes``), the failures (``failures``: messages)."""

    engines: dict = field(default_factory=dict)
    rework_bytes: int = 0
    failures: list = field(default_factory=list)
    seconds: float = 0.0

    def ran(self, spec: str, nbytes: int, seconds: float) -> None:
        """One engine ran ``nbytes`` as one range (an unscheduled run)."""
        es = self.engines.setdefault(spec, EngineStats(spec))
        es.bytes += nbytes
        es.ranges += 1
        es.seconds += seconds
        self.seconds += seconds

    def share(self) -> dict:
        """Each engine's share of the committed bytes."""
        total = sum(e.bytes for e in self.engines.values()) or 1
        return {s: e.bytes / total for s, e in self.engines.items()}


class CompositeEngine(Engine):
    """Several engines as one (see the module docstring)."""

    kind = "composite"

    def __init__(self, engines, spec: str | None = None, *, fence: str = "direct"):
        from ..backends.base import DeviceInfo

        if not engines:
            raise InvalidArgument("a composite engine needs at least one engine")
        if fence not in ("copy", "direct"):
            raise InvalidArgument(f"fence must be 'copy' or 'direct', not {fence!r}")
        self.engines = list(engines)
        self.fence = fence
        #: the runtime it was made in (its workers are threads of their own: handed it, they
        #: keep the speeds where the caller's runtime does)
        self.rt = current()
        spec = spec or ",".join(e.info.spec for e in self.engines)
        self.info = DeviceInfo(spec=spec, runtime="composite",
                               name=" + ".join(e.info.spec for e in self.engines), kind="composite",
                               compute_units=sum(e.info.compute_units for e in self.engines),
                               memory=sum(e.info.memory for e in self.engines))

    def members(self, req, nbytes: int | None = None) -> list:
        """The engines that run ``req`` in parallel (none: a serial request, run by one)."""
        return [e for e in self.engines if e.capability(req, nbytes) == "parallel"]

    def capability(self, req, nbytes=None):
        if self.members(req, nbytes):
            return "parallel"
        caps = [e.capability(req, nbytes) for e in self.engines]
        return "serial" if "serial" in caps else None

    def session(self, req) -> "CompositeSession":
        return CompositeSession(self, req)

    # -- AEAD batches: ranges of whole messages ----------------------------------------------------
    def seal(self, batch, impl: str | None = None, beside=None, stats: SchedulerStats | None = None):
        """Every message of ``batch`` encrypted, the messages spread over the engines; the tags."""
        from .base import start_beside

        start_beside(beside)
        return self._batch(batch, None, impl, stats)

    def open(self, batch, tags, impl: str | None = None, stats: SchedulerStats | None = None):
        """Every message decrypted and its tag checked by the engine that ran it (the others'
        plaintext zeroed); the mask of those that verified."""
        return self._batch(batch, tags, impl, stats)

    def _batch(self, batch, tags, impl, stats):
        stats = stats if stats is not None else SchedulerStats()
        work = _Messages(batch, tags, impl)
        if work.n == 0 or len(self.engines) == 1:
            eng = self.engines[0]
            t0 = time.perf_counter()
            out = eng.seal(batch, impl) if batch.encrypt else eng.open(batch, tags, impl)
            stats.ran(eng.info.spec, int(batch.off[-1]), time.perf_counter() - t0)
            return out
        _Run(work, self.engines, stats, self.fence, self.rt).go()
        return work.result

    def stream(self, req, src, dst, *, progress=None, chunk_bytes=None, depth=None,
               nbytes: int | None = None) -> int:
        """A file or pipe in pieces (transfer.pieces: read, enciphered, written; ``depth``
        workers, default 2, so that one piece's reading and writing overlap another's
        enciphering), each piece scheduled over the engines (``chunk_bytes``: bytes per piece,
        default STREAM_PIECE)."""
        from ..transfer import pieces

        def crypt(r, a, b):   # (the pieces are memoryviews of the workers' buffers)
            self.crypt(r, np.frombuffer(a, dtype=np.uint8), np.frombuffer(b, dtype=np.uint8))

        return pieces.stream(req, src, dst, crypt,
                             piece=chunk_bytes or STREAM_PIECE, threads=depth or 2,
                             progress=progress)

    def crypt(self, req, src, dst, stats: SchedulerStats | None = None) -> None:
        with self.session(req) as s:
            s.crypt(src, dst, stats=stats)

    def crypt_resident(self, req, src, dst, wait: bool = True,
                       stats: SchedulerStats | None = None) -> None:
        """GPU-resident ``src`` (a CuPy array) into ``dst`` on the same GPU over the member GPUs
        (``_Resident``); finished when this returns (``wait`` is always true here)."""
        import cupy

        stats = stats if stats is not None else SchedulerStats()
        n = src.nbytes
        req.check_length(n)
        if n == 0:
            return
        with cupy.cuda.Device(src.device.id):
            cupy.cuda.get_current_stream().synchronize()   # (the caller's producer first)
        members = [e for e in self.members(req, n) if e.info.runtime == "cuda"]
        unit = req.mode.split_unit(req)
        if len(members) < 2 or unit is None:   # (route puts the data's own GPU among the engines)
            eng = next(e for e in self.engines if e.backend.dev.id == src.device.id)
            eng.crypt_resident(req, src, dst, True, stats=stats)
            return
        with self.session(req) as s:
            _Run(_Resident(s, req, 0, unit, src.reshape(-1), dst.reshape(-1)), members, stats,
                 self.fence, self.rt).go()


class CompositeSession(Session):
    """``crypt(src, dst, first_block, chain)`` over the composite's engines; a member's session
    is made once, the first time it takes a range, and kept (its keys set up once)."""

    def __init__(self, engine: CompositeEngine, req):
        super().__init__(engine, req)
        self._sessions = Sessions()

    def _member(self, eng):
        def make():
            s = eng.session(self.req)
            devices = sum(e.kind == "device" for e in self.engine.engines)
            if hasattr(s, "threads") and devices:   # (OpenSSL beside device pipelines)
                s.threads = max(1, (os.cpu_count() or 1) - CORES_PER_DEVICE * devices)
            return s

        return self._sessions.get(eng.info.spec, make)

    def close(self) -> None:
        self._sessions.close()

    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None,
              stats: SchedulerStats | None = None) -> None:
        req = self.req.at(first_block, chain) if first_block else self.req
        n = src.nbytes
        req.check_length(n)
        stats = stats if stats is not None else SchedulerStats()
        if n == 0:
            return
        members = self.engine.members(req, n)
        unit = req.mode.split_unit(req)
        if len(members) == 1:   # nothing to schedule (and nobody to re-run a failed range)
            members[0].crypt(req, src, dst, stats=stats)
            return
        if not members or unit is None:
            # serial (CBC encryption) or not splittable (one XTS data unit): the fastest one
            pool = members or [e for e in self.engine.engines if e.capability(req, n)]
            if not pool:
                raise UnsupportedCipher(f"no engine of {self.engine.info.spec} runs {req.spec.name}")
            eng = max(pool, key=lambda e: expected_speed(e, req.spec.name, req.encrypt,
                                                         self.engine.rt)[0])
            eng.crypt(req, src, dst, stats=stats)
            return
        _Run(_Bytes(self, req, first_block, unit, src, dst), members, stats, self.engine.fence,
             self.engine.rt).go()


class _Bytes:
    """A message's bytes as a run's units: ranges cut on the mode's grain, each run through the
    engine's session of the request (``Request.at``), written into ``out``."""

    def __init__(self, session, req, first_block: int, unit: int, src, dst):
        # req: the message from block first_block on (the members' sessions hold the whole one)
        self.s, self.req, self.first = session, req, first_block
        self.src, self.dst = src.reshape(-1), dst.reshape(-1)
        self.n = self.src.nbytes
        self.grain = max(unit, self._grain_bytes() // unit * unit)
        self.name, self.encrypt = req.spec.name, req.encrypt
        self.in_place = self._overlap()
        self.chains = None
        if req.mode.reads_behind(req):
            # CBC decryption: the ciphertext block before every possible cut, read before any
            # range runs (an in-place run overwrites it)
            bs = req.block_size
            self.chains = {a: req.mode.chain_at(req, self._readable(), a // bs)
                           for a in range(0, self.n, self._chain_every())}

    def _grain_bytes(self) -> int:
        return GRAIN

    def _chain_every(self) -> int:
        """Bytes between the cuts a range may start at (the chaining values read up front)."""
        return self.grain

    def tail_share(self) -> float:
        return TAIL

    def _overlap(self) -> bool:
        return bool(np.may_share_memory(self.src, self.dst))

    def _readable(self):
        """The input as the mode's ``chain_at`` reads it (slices of host bytes)."""
        return self.src

    def path(self, eng) -> str:
        """Where the data lives for ``eng`` (the key of the speeds it is expected to run at)."""
        return "array"

    def weight(self, a: int, b: int) -> int:
        return b - a

    def cut(self, a: int, b: int, nbytes: int) -> int:
        """A cut in (a, b] about ``nbytes`` after a, on the grain (at least one grain)."""
        p = a + max(self.grain, nbytes // self.grain * self.grain)
        return b if b - p < self.grain else p

    def buffer(self, eng, a: int, b: int):
        """Where ``eng`` writes range [a, b) when the run is fenced (committed later)."""
        return np.empty(b - a, dtype=np.uint8)

    def run(self, eng, a: int, b: int, out) -> None:
        out = self.dst[a:b] if out is None else out
        chain = self.chains.get(a) if self.chains is not None else None
        self.s._member(eng).crypt(self.src[a:b], out, self.first + a // self.req.block_size, chain)

    def commit(self, a: int, b: int, out) -> None:
        self.dst[a:b] = out


class _DeviceWindow:
    """GPU-resident bytes as ``chain_at`` reads them: a slice comes back as host bytes."""

    def __init__(self, arr):
        self.arr = arr

    def __getitem__(self, sl):
        import cupy

        return cupy.asnumpy(self.arr[sl])


class _Resident(_Bytes):
    """A GPU-resident message (CuPy arrays on the *home* GPU) over several CUDA engines: the home
    engine runs its ranges where the data are; another GPU copies its range over the peer link in
    PEER_PIECE pieces, runs them and copies them back, the three overlapped on streams of its
    own.  Everything is finished when the run returns (ordered after the caller's stream: that
    stream is waited for first)."""

    def __init__(self, session, req, first_block, unit, src, dst):
        #: a piece copied to another GPU (a range is whole pieces: its cuts are on this grid)
        self.step = max(unit, PEER_PIECE // unit * unit)
        super().__init__(session, req, first_block, unit, src, dst)
        self.home = src.device.id

    def _grain_bytes(self) -> int:
        return self.step * max(1, RESIDENT_GRAIN // PEER_PIECE)

    def _chain_every(self) -> int:
        return self.step

    def tail_share(self) -> float:
        return RESIDENT_TAIL

    def _overlap(self) -> bool:
        a0, b0 = self.src.data.ptr, self.src.data.ptr + self.n
        a1, b1 = self.dst.data.ptr, self.dst.data.ptr + self.dst.nbytes
        return a0 < b1 and a1 < b0

    def _readable(self):
        return _DeviceWindow(self.src)

    def _is_home(self, eng) -> bool:
        return eng.backend.dev.id == self.home

    def path(self, eng) -> str:
        return "resident" if self._is_home(eng) else f"peer:cuda:{self.home}"

    def buffer(self, eng, a: int, b: int):
        import cupy

        with eng.backend.dev:
            return cupy.empty(b - a, dtype=cupy.uint8)


    def _at(self, a: int):
        """(first block, chain) of the message's byte ``a`` for the members' sessions."""
        chain = self.chains.get(a) if self.chains is not None else None
        return self.first + a // self.req.block_size, chain

    def run(self, eng, a: int, b: int, out) -> None:
        import cupy

        sess = self.s._member(eng)
        s_in, s_k, s_out = eng.backend.side_streams()
        dev = eng.backend.dev
        if self._is_home(eng):
            target = self.dst[a:b] if out is None else out
            with dev, s_k:
                sess.crypt_resident(self.src[a:b], target, *self._at(a), wait=True)
            return
        # another GPU: pieces copied in, run, copied out (into out, or straight into dst)
        _enable_peer(dev.id, self.home)
        step = self.step
        with dev:
            ring = [(cupy.empty(step, dtype=cupy.uint8), cupy.empty(step, dtype=cupy.uint8))
                    for _ in range(PEER_SLOTS)]
            freed = [None] * PEER_SLOTS   # the event after which a ring slot may be reused
            for k, p in enumerate(range(a, b, step)):
                q = min(b, p + step)
                bin_, bout = ring[k % PEER_SLOTS]
                if freed[k % PEER_SLOTS] is not None:
                    s_in.wait_event(freed[k % PEER_SLOTS])
                _copy(bin_[: q - p], self.src[p:q], s_in)
                got = s_in.record()
                s_k.wait_event(got)
                with s_k:
                    sess.crypt_resident(bin_[: q - p], bout[: q - p], *self._at(p), wait=False)
                ran = s_k.record()
                s_out.wait_event(ran)
                target = self.dst[p:q] if out is None else out[p - a:q - a]
                _copy(target, bout[: q - p], s_out)
                freed[k % PEER_SLOTS] = s_out.record()
            s_out.synchronize()

    def commit(self, a: int, b: int, out) -> None:
        import cupy

        with cupy.cuda.Device(self.home):
            s = cupy.cuda.Stream(non_blocking=True)
            _copy(self.dst[a:b], out, s)
            s.synchronize()


def _copy(dst, src, stream) -> None:
    """``dst[:] = src`` (contiguous CuPy uint8 arrays, on the same GPU or two) queued on ``stream``."""
    import cupy

    cupy.cuda.runtime.memcpyPeerAsync(dst.data.ptr, dst.device.id, src.data.ptr, src.device.id,
                                      src.nbytes, stream.ptr)


def _enable_peer(dev: int, peer: int) -> None:
    """Let GPU ``dev`` read and write GPU ``peer``'s memory directly (NVLink or PCIe peer to peer)
    where the two can; else peer copies go through the host (slower, still right)."""
    import cupy

    rt = cupy.cuda.runtime
    for a, b in ((dev, peer), (peer, dev)):
        if not rt.deviceCanAccessPeer(a, b):
            continue
        with cupy.cuda.Device(a):
            try:
                rt.deviceEnablePeerAccess(b)
            except rt.CUDARuntimeError as e:   # (already enabled: fine)
                if "PeerAccessAlreadyEnabled" not in str(e):
                    raise


class _Messages:
    """An AEAD batch's messages as a run's units (ranges of whole messages, ``Batch.part``),
    each sealed or opened by the engine itself; the tags (encryption) or the verified mask
    (decryption) gathered in message order."""

    def __init__(self, batch, tags_in, impl):
        self.b, self.tags_in, self.impl = batch, tags_in, impl
        self.grain = GRAIN
        self.n = batch.count
        self.name, self.encrypt = batch.name, batch.encrypt
        self.off = np.asarray(batch.off, dtype=np.int64)
        self.in_place = bool(np.may_share_memory(batch.src, batch.dst))
        self.result = (np.empty((self.n, batch.tag_length), dtype=np.uint8) if batch.encrypt
                       else np.zeros(self.n, dtype=bool))

    def weight(self, a: int, b: int) -> int:
        return int(self.off[b] - self.off[a]) + 64 * (b - a)   # (a message's own work, too)

    def cut(self, a: int, b: int, nbytes: int) -> int:
        """The message boundary in (a, b] about ``nbytes`` after message a (one message at
        least; what is left past it, if under GRAIN, goes too)."""
        target = self.off[a] + max(nbytes, 1)
        p = int(np.searchsorted(self.off, target, side="left"))
        p = min(b, max(a + 1, p))
        return b if self.weight(p, b) < GRAIN else p

    def path(self, eng) -> str:
        return "array"

    def tail_share(self) -> float:
        return TAIL

    def buffer(self, eng, a: int, b: int):
        return np.empty(int(self.off[b] - self.off[a]), dtype=np.uint8)

    def run(self, eng, a: int, b: int, out) -> None:
        part = self.b.part(a, b, out)
        if self.encrypt:
            self.result[a:b] = eng.seal(part, self.impl)
        else:
            self.result[a:b] = eng.open(part, self.tags_in[a:b], self.impl)

    def commit(self, a: int, b: int, out) -> None:
        self.b.dst[int(self.off[a]):int(self.off[b])] = out


class _Run:
    """One scheduled piece of work over the members: the ranges (of ``work``'s units), the
    workers, the watchdog."""

    def __init__(self, work, members, stats, fence: str, rt):
        self.w, self.members, self.stats, self.rt = work, members, stats, rt
        self.n = work.n
        self.total = work.weight(0, work.n)
        self.fence = "copy" if work.in_place else fence
        self.cv = threading.Condition()
        self.queue: list = []          # ranges (a, b) waiting, the first taken first
        self.owner: dict = {}          # range -> (worker index, started at, seconds before it is hung)
        self.done = 0                  # units committed
        self.error: BaseException | None = None
        self.faults = injected_faults()
        self.shares = self._shares()
        self.dead: set = set()         # workers that take no more ranges

    def _speed(self, i: int) -> tuple[float, bool]:
        eng = self.members[i]
        return expected_speed(eng, self.w.name, self.w.encrypt, self.rt, self.w.path(eng))

    def _shares(self) -> list:
        """Each worker's first range, by expected speed, for 1 - TAIL of the bytes; the rest
        queued as the tail."""
        speeds = [self._speed(i)[0] for i in range(len(self.members))]
        head = int(self.total * (1 - self.w.tail_share())) if len(self.members) > 1 else 0
        out, pos = [], 0
        for sp in speeds:
            size = int(head * sp / sum(speeds))
            end = self.w.cut(pos, self.n, size) if size >= self.w.grain and pos < self.n else pos
            out.append((pos, end) if end > pos else None)
            pos = end
        self._tail(pos, self.n)
        return out

    def _tail(self, a: int, b: int) -> None:
        """Queue [a, b) as pieces shrinking from 1/(2 x engines) of it down to the grain."""
        k = max(1, len(self.members))
        while a < b:
            end = self.w.cut(a, b, self.w.weight(a, b) // (2 * k))
            self.queue.append((a, end))
            a = end

    # -- the workers ---------------------------------------------------------------------------
    def go(self) -> None:
        t0 = time.perf_counter()
        for e in self.members:
            self.stats.engines.setdefault(e.info.spec, EngineStats(e.info.spec))
        threads = [threading.Thread(target=self._worker, args=(i,), daemon=True,
                                    name=f"ciphergrid-sched-{e.info.spec}")
                   for i, e in enumerate(self.members)]
        for t in threads:
            t.start()
        try:
            self._watch(threads)
        except BaseException:
            with self.cv:
                self.error = self.error or KeyboardInterrupt()
                self.cv.notify_all()
            raise
        finally:
            self.stats.seconds += time.perf_counter() - t0
        if self.error is not None:
            raise self.error
        if self.stats.failures:
            warnings.warn("ciphergrid: " + "; ".join(self.stats.failures)
                          + f" ({self.stats.rework_bytes} bytes run again elsewhere; the output is whole)",
                          EngineFailureWarning, stacklevel=5)

    def _take(self, i: int):
        """The next range for worker ``i`` (its share first), or None when there is none left.
        From the queue a worker takes at most what it runs in the time all the live workers
        need for everything queued (at the speeds expected of them): a slow engine takes a
        small piece, or none, and never holds the job's end."""
        with self.cv:
            while True:
                if self.error is not None or i in self.dead:
                    return None
                share = self.shares[i]
                if share is not None:
                    self.shares[i] = None
                    rng = share
                elif self.queue:
                    a, b = self.queue[0]
                    allow = self._allowance(i)
                    if allow < self.w.grain and len(self.dead) < len(self.members) - 1:
                        if self.owner:        # (others are working: leave it to them)
                            self.cv.wait(0.05)
                            continue
                        allow = self.w.weight(a, b)   # (nobody else is: take it anyway)
                    cut = self.w.cut(a, b, allow)
                    rng = (a, cut)
                    if cut < b:
                        self.queue[0] = (cut, b)
                    else:
                        self.queue.pop(0)
                elif self.owner or any(x is not None for x in self.shares):
                    # nothing queued, ranges still running or not yet started: wait (one may
                    # come back)
                    self.cv.wait(0.05)
                    continue
                else:
                    return None
                speed, measured = self._speed(i)
                eng = self.members[i]
                warm = _key(eng, self.w.name, self.w.encrypt, self.w.path(eng)) in \
                    self.rt.calibration.get("warm", ())
                least = HANG_UNMEASURED_S if not measured else HANG_MIN_S if warm else HANG_COLD_S
                limit = max(least, HANG_FACTOR * self.w.weight(*rng) / speed)
                self.owner[rng] = (i, time.monotonic(), limit)
                return rng

    def _allowance(self, i: int) -> int:
        """Bytes worker ``i`` can run while the live workers run everything queued."""
        live = [j for j in range(len(self.members)) if j not in self.dead]
        speeds = {j: self._speed(j)[0] for j in live}
        queued = sum(self.w.weight(a, b) for a, b in self.queue)
        return int(queued * speeds.get(i, 0) / (sum(speeds.values()) or 1))

    def _worker(self, i: int) -> None:
        eng = self.members[i]
        es = self.stats.engines[eng.info.spec]
        fault = self.faults.get(eng.info.spec)
        ran = 0
        while True:
            rng = self._take(i)
            if rng is None:
                return
            a, b = rng
            nbytes = self.w.weight(a, b)
            try:
                if fault is not None and ran + nbytes > fault[1]:
                    if fault[0] == "fail":
                        raise DeviceError(f"injected failure (CIPHERGRID_FAULT) after {ran} bytes")
                    time.sleep(HANG_INJECTED_S)
                    raise DeviceError("injected hang (CIPHERGRID_FAULT) ended")
                out = self.w.buffer(eng, a, b) if self.fence == "copy" else None
                t0 = time.perf_counter()
                self.w.run(eng, a, b, out)
                dt = time.perf_counter() - t0
                ran += nbytes
            except BaseException as e:  # this engine takes no more ranges; the range goes back
                self._failed(i, rng, f"{eng.info.spec} failed: {_brief(e)}",
                             fatal=not isinstance(e, Exception))
                return
            with self.cv:   # commit: only a range still this worker's (not declared hung)
                mine = (self.owner.get(rng, (None,))[0] == i and i not in self.dead
                        and self.error is None)
                if mine:
                    del self.owner[rng]
            if not mine:
                return
            if out is not None:
                self.w.commit(a, b, out)
            with self.cv:
                self.done += b - a
                es.bytes += nbytes
                es.ranges += 1
                es.seconds += dt
                self.cv.notify_all()
            _measured(self.rt, eng, self.w.name, self.w.encrypt, nbytes, dt, self.w.path(eng),
                      self.w.grain)

    def _requeue(self, i: int, rng, why: str) -> None:
        """(under the lock) Worker ``i`` takes no more ranges; ``rng``, if still its, goes back."""
        self.dead.add(i)
        self.stats.engines[self.members[i].info.spec].failed = why
        self.stats.failures.append(why)
        if self.owner.get(rng, (None,))[0] == i:
            del self.owner[rng]
            self.queue.insert(0, rng)
            self.stats.rework_bytes += self.w.weight(*rng)
        if len(self.dead) == len(self.members):
            self.error = self.error or DeviceError(
                "every engine failed: " + "; ".join(self.stats.failures))
        self.cv.notify_all()

    def _failed(self, i: int, rng, why: str, fatal: bool = False) -> None:
        with self.cv:
            if fatal:
                self.error = self.error or DeviceError(why)
            self._requeue(i, rng, why)

    def _watch(self, threads) -> None:
        """Wait until every unit is committed (or an error), declaring hung ranges on the way."""
        with self.cv:
            while self.done < self.n and self.error is None:
                self.cv.wait(0.02)
                if self.error is not None or self.done >= self.n:
                    break                       # (set while waiting: the workers' own word)
                if not any(t.is_alive() for t in threads):
                    self.error = DeviceError(   # (a safety net: the workers wait for each other)
                        f"the scheduler's workers ended with {self.n - self.done} units not run")
                    break
                now = time.monotonic()
                for rng, (i, started, limit) in list(self.owner.items()):
                    # (never the last engine standing: nobody would run its range instead)
                    if now - started > limit and len(self.dead) < len(self.members) - 1:
                        self._requeue(i, rng, f"{self.members[i].info.spec} hung: a range of "
                                              f"{self.w.weight(*rng)} bytes ran {now - started:.2f} s "
                                              f"(limit {limit:.2f} s)")


def _brief(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:200]
