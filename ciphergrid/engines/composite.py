"""The composite engine: one request over several engines at once (the scheduler).

``device="all"`` (every GPU, CUDA before the OpenCL view of the same card, and the host's best CPU
engine) or a list (``"cuda:0,native"``) routes here.  A message is cut into ranges on the mode's
split grain (a block; XTS: a data unit; ``Request.at`` makes each range a message of its own,
so the bytes equal one engine's), and:

* **shares by speed, then a self-scheduled tail**: each engine first takes one contiguous range
  sized by its expected speed (``speeds``: measured in earlier runs of this process, else a
  default per kind of device) for ``1 - units.TAIL`` of the bytes; the rest is handed out from one
  queue in shrinking pieces to whichever engine is free, so an engine slower than expected
  never holds the job;
* **faults**: a range whose engine raises is put back in the queue and run by another (the engine
  takes no more ranges); a range running past ``run.HANG_FACTOR`` x its expected time (and at
  least ``run.HANG_MIN_S``; never the last engine standing) is declared hung and run by another
  the same way.  Out of place, the ranges are written straight into the destination: a hung engine
  that wakes up later can only write its range's bytes again, computed from an input nobody
  changed (the engines are deterministic).  In place, that input is gone once another engine wrote
  the range, so every range is **fenced**: written into its worker's own buffer and committed
  (copied into the destination) only while it is still that worker's; the input of a range is kept
  until the range is committed.  ``CIPHERGRID_SCHED_FENCE=copy`` fences every run (bench scheduler
  measures what it costs: docs/benchmarks.md);
* **faults injected** for tests and demonstrations: ``CIPHERGRID_FAULT=SPEC:fail:BYTES`` (the
  engine ``SPEC`` raises once it has run ``BYTES``) or ``SPEC:hang:BYTES`` (it stops for
  ``run.HANG_INJECTED_S`` seconds); several separated by commas;
* **together or alone** (``speeds.choose``): engines that share the host's memory can run slower
  together than the fastest of them alone; the calibration times whole jobs of at least
  ``speeds.JUDGE_MIN_BYTES`` together and on each member alone (those not far slower), per class
  of job, and where together is more than ``speeds.SLOWER`` below the fastest alone, the class's
  jobs run on that member alone (the others stand by for its failure), re-probed one job in
  ``speeds.REPROBE_EVERY``; ``verdict`` says it for a plan's description (``-v``).
* CBC encryption (serial) runs on one engine; XTS without ``sector_size`` (one data unit) too;
* AEAD batches (``seal`` / ``open``) are split by whole messages the same way
  (``units.Messages``: each engine seals or opens its ranges, the tags and the verified mask
  gathered in order); a composite made with ``message_ranges`` (route.route of an AEADRequest:
  one long message of GCM or ChaCha20-Poly1305) splits one message into ranges of its blocks
  (``message_range.MessageText``: each engine runs its range's text and returns the range's
  partial MAC, the host folds them into the tag);
* a GPU-resident array (``crypt_resident``, ``resident.Resident``) over several CUDA GPUs: its
  own GPU runs its ranges in place, the others through peer copies in pieces, overlapped.

The engine and its sessions are here; the parts are engines/scheduler/: ``run`` (the dealing,
the watchdog, ``SchedulerStats``), ``units`` (a message's bytes, an AEAD batch's messages),
``resident`` (GPU-resident data over several GPUs), ``speeds`` (the calibration).

What happened is kept in a :class:`SchedulerStats` (each engine's bytes, ranges, failures, the rework,
and ``choice``: whether the job ran together or on one member alone, and why), filled in for the
caller that passes one (``stats=`` of the API) and warned about (``EngineFailureWarning``) when
an engine failed.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InvalidArgument, UnsupportedCipher
from ..runtime import current
from .base import Engine, Session, Sessions
from .scheduler.resident import Resident
from .scheduler.run import EngineStats, Run, SchedulerStats
from .scheduler.speeds import expected_speed, verdict
from .scheduler.units import Bytes, Messages

__all__ = ["CompositeEngine", "CompositeSession", "EngineStats", "SchedulerStats",
           "expected_speed"]

#: host threads each device engine's pipeline keeps when OpenSSL runs beside it (one core budget)
CORES_PER_DEVICE = 2
#: bytes per piece of a file or pipe (each piece scheduled over the engines)
STREAM_PIECE = 256 << 20


class CompositeEngine(Engine):
    """Several engines as one (see the module docstring)."""

    kind = "composite"

    def __init__(self, engines, spec: str | None = None, *, fence: str = "direct",
                 message_ranges: bool = False):
        from ..backends.base import DeviceInfo

        if not engines:
            raise InvalidArgument("a composite engine needs at least one engine")
        if fence not in ("copy", "direct"):
            raise InvalidArgument(f"fence must be 'copy' or 'direct', not {fence!r}")
        self.engines = list(engines)
        self.fence = fence
        #: one AEAD message runs in ranges of its blocks over the engines (every one runs them:
        #: message_range.engine_runs_ranges)
        self.message_ranges = message_ranges
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

    def verdict(self, cipher: str, encrypt: bool | None, nbytes: int | None,
                path: str = "array", count: int | None = None) -> str:
        """What the calibration says of a job of ``nbytes`` (a batch: of ``count`` messages) of
        ``cipher`` on these engines: "SPEC alone: together ... < ... alone (memory bound)", or
        "together: ..."; "" where such jobs were not judged (speeds.verdict).  A stream's jobs
        are its pieces."""
        from ..aeads import is_aead

        if path == "resident" or nbytes is None:
            return ""
        if path == "stream":
            nbytes = min(nbytes, STREAM_PIECE)
        kind = ("bytes" if not is_aead(cipher) else "message" if self.message_ranges
                else "messages")
        return verdict(self.rt, cipher, encrypt, self.engines, kind, nbytes, count,
                       self.fence == "copy")

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
        if (self.message_ranges and batch.count == 1 and impl is None
                and int(batch.off[-1]) > 0):
            return self._ranges(batch, tags, stats)
        work = Messages(batch, tags, impl)
        if work.n == 0 or len(self.engines) == 1:
            eng = self.engines[0]
            t0 = time.perf_counter()
            out = eng.seal(batch, impl) if batch.encrypt else eng.open(batch, tags, impl)
            stats.ran(eng.info.spec, int(batch.off[-1]), time.perf_counter() - t0)
            return out
        Run(work, self.engines, stats, self.fence, self.rt).go()
        return work.result

    def _ranges(self, batch, tags, stats):
        """One message in ranges of its blocks over every engine (MessageText)."""
        from .scheduler.message_range import MessageText

        try:
            work = MessageText(batch, tags)
            Run(work, self.engines, stats, self.fence, self.rt).go()
            return work.result()
        except BaseException:
            batch.dst[:int(batch.off[-1])] = 0   # (no partial output of a failed message)
            raise

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
        (``Resident``); finished when this returns (``wait`` is always true here)."""
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
            Run(Resident(s, req, 0, unit, src.reshape(-1), dst.reshape(-1)), members, stats,
                 self.fence, self.rt).go()


class CompositeSession(Session):
    """``crypt(src, dst, first_block, chain)`` over the composite's engines; a member's session
    is made once, the first time it takes a range, and kept (its keys set up once)."""

    def __init__(self, engine: CompositeEngine, req):
        super().__init__(engine, req)
        self._sessions = Sessions()
        #: the member running the current job by itself (Run.alone), if one does
        self._alone: str | None = None

    def _member(self, eng):
        alone = self._alone == eng.info.spec

        def make():
            s = eng.session(self.req)
            devices = sum(e.kind == "device" for e in self.engine.engines)
            host = getattr(eng, "host", None)   # (OpenSSL beside device pipelines: its budget
            if host is not None and devices and not alone:   # less the cores they take)
                s.threads = host.share(CORES_PER_DEVICE * devices)
            return s

        return self._sessions.get((eng.info.spec, alone), make)

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
        run = Run(Bytes(self, req, first_block, unit, src, dst), members, stats,
                  self.engine.fence, self.engine.rt)
        self._alone = run.choice.alone   # (alone, its session takes the whole thread budget)
        run.go()
