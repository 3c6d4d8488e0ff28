"""The device engine: our kernels on one OpenCL or CUDA device (through ``backends/``).

Host arrays go through the transfer layer's pipeline (``transfer/``: chunks overlapped on three
queues); GPU-resident arrays (CUDA) are enciphered where they are; files stream through the
pipeline too.  A session keeps its KeyedProgram (keys expanded and uploaded once) for every piece
it runs.
"""

from __future__ import annotations

import time

import numpy as np

from ..aeads.base import Batch
from ..devices import backend as _backend
from ..errors import DeviceError
from ..program import DeviceChain, KeyedProgram
from ..transfer import runs
from .base import Engine, Session



class DeviceSession(Session):
    def __init__(self, engine: "DeviceEngine", req):
        super().__init__(engine, req)
        self.kp = KeyedProgram(engine.backend, req)
        self._streams: list = []   # CuPy streams crypt_resident queued work on (close waits)

    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None) -> None:
        req = self.req.at(first_block, chain) if first_block else self.req
        n = src.nbytes
        req.check_length(n)
        if n == 0:
            return
        if not req.mode.device_runs(req, n):
            raise DeviceError(f"{req.spec.name}: data units that are not whole blocks need "
                              "ciphertext stealing in every unit, which the device kernels do not do")
        layout = req.mode.layout(req, n)
        tail = None
        if layout is not None and layout.tail_start < n:  # read before an in-place run
            tail = src[layout.tail_start:].tobytes()
        runs.run_chunks(self.kp, src.reshape(-1).view(np.uint8), dst, layout, req=req,
                        chunk_bytes=self.engine.chunk_bytes, depth=self.engine.depth,
                        settings=self.engine.settings)
        if tail is not None:
            dst[layout.tail_start:] = np.frombuffer(req.mode.tail(req, layout, tail), dtype=np.uint8)

    def crypt_resident(self, src, dst, first_block: int = 0, chain=None,
                       wait: bool = True) -> None:
        """Blocks from ``first_block`` on of GPU-resident ``src`` into ``dst`` (CuPy arrays on
        this CUDA device, as ``DeviceEngine.crypt_resident``) with the session's keys, on CuPy's
        current stream; ``wait``: finished before this returns.  ``chain``: CBC's chaining value,
        bytes or this session's :meth:`device_chain` (read and left holding the next one on the
        device: one launch a piece)."""
        import cupy

        held = chain if getattr(chain, "on_device", False) else None
        if held is not None and held.b is not self.kp.b:   # (another device's: through the host)
            held, chain = None, held.value()
        if held is not None:
            req = self.req    # (CBC's blocks from the chain on: numbered from 0, the IV unused)
        else:
            req = self.req.at(first_block, chain) if first_block else self.req
        req.check_length(src.nbytes)
        if src.nbytes == 0:
            return
        with self.kp.b.dev:
            s = cupy.cuda.get_current_stream()
            if not any(x is s for x in self._streams):
                self._streams.append(s)
            resident(self.kp, req, src, dst, s, chain=held)
            if wait:
                s.synchronize()

    def device_chain(self, chain):
        """The chaining value ``chain`` (bytes; None: the request's IV; a DeviceChain) kept on
        this session's device between a context's GPU-resident pieces (program.DeviceChain),
        for :meth:`crypt_resident`: ``chain`` itself where it is one of this device's."""
        if getattr(chain, "on_device", False):
            if chain.b is self.kp.b:
                return chain
            chain = chain.value()
        return DeviceChain(self.kp.b, self.req.block_size, self.req.iv if chain is None else chain)

    def close(self) -> None:
        streams, self._streams = self._streams, []
        if streams:   # (the keys' zeroing waits, on the device, for pieces still queued there)
            b = self.kp.b
            b.after(self.kp._upload_queue, [b.marker(s) for s in streams])
        self.kp.close()


def resident(kp, req, src, dst, s, chain=None) -> None:
    """``req``'s mode over GPU-resident ``src`` into ``dst`` with the keys of ``kp``, queued on
    the CuPy stream ``s``: the kernel where the arrays are (a copy first only of an unaligned
    input or for in-place CBC decryption), CTR's last partial block and XTS's stolen tail through
    small buffers; no launch records an event.  ``chain``: CBC's DeviceChain, else the chaining
    value is ``req``'s IV."""
    n = src.nbytes
    mode = req.mode
    src_at, dst_at = src.data.ptr, dst.data.ptr
    if src_at % 16 or (dst_at == src_at and mode.reads_behind(req)):
        src = src.copy()  # unaligned view, or in-place CBC decryption (block i reads i-1)
    if dst_at % 16:
        import cupy

        out = cupy.empty_like(dst)
    else:
        out = dst
    layout = mode.layout(req, n)
    tail = None
    if layout is not None and layout.tail_start < n:
        import cupy

        tail = cupy.asnumpy(src[layout.tail_start:]).tobytes()
    if layout is not None:
        if layout.kernel_blocks:
            kp.enqueue(src, out, layout.kernel_blocks, 0, s, layout=layout, req=req, record=False)
    else:
        bs = kp.bs
        full = n // bs
        if full:
            kp.enqueue(src, out, full, 0, s, req=req, record=False,
                       chain=chain if chain is not None else mode.chain_at(req, None, 0))
        if n % bs:  # CTR: the last partial block through a one-block buffer
            import cupy

            t_in = cupy.zeros(16, dtype=cupy.uint8)
            t_in[: n - full * bs] = src[full * bs:]
            t_out = cupy.empty(16, dtype=cupy.uint8)
            kp.enqueue(t_in, t_out, 1, full, s, req=req, record=False)
            out[full * bs:] = t_out[: n - full * bs]
    if tail is not None:
        import cupy

        out[layout.tail_start:] = cupy.asarray(
            np.frombuffer(req.mode.tail(req, layout, tail), dtype=np.uint8))
    if out is not dst:
        dst[...] = out


def _resident_job(b, drv, batch, src, dst, text: int, queue) -> bool:
    """DeviceEngine.aead_resident's job of ``batch`` on ``queue`` (device_aead/rows.py's
    ``run``): the tag after the text in ``dst``; decryption's received tag after the text in
    ``src``, whether it verified (``dst`` zeroed where not)."""
    from .device_aead import rows

    if batch.encrypt:
        rows.run(b, drv, batch, queue, dst, tag_to=(dst, text))
        return True
    return bool(rows.run(b, drv, batch, queue, dst, tags_from=(src, text))[0])


class DeviceEngine(Engine):
    """Runs modes on one OpenCL or CUDA device."""

    kind = "device"
    #: pipeline chunk size and depth; None: the device's tuned settings
    chunk_bytes: int | None = None
    depth: int | None = None
    #: the transfer layer's options (settings.TransferSettings); None: the environment's
    settings = None

    def __init__(self, info):
        self.info = info
        self.backend = _backend(info)

    @property
    def device(self):
        return self.info

    def capability(self, req, nbytes=None):
        if nbytes is not None and not req.mode.device_runs(req, nbytes):
            return None
        return super().capability(req, nbytes)

    def session(self, req) -> DeviceSession:
        return DeviceSession(self, req)

    def stream(self, req, src, dst, *, progress=None, chunk_bytes=None, depth=None,
               nbytes: int | None = None) -> int:
        return runs.stream_crypt(self.backend, req, src, dst, chunk_bytes=chunk_bytes,
                                 depth=depth, progress=progress, nbytes=nbytes,
                                 settings=self.settings)

    # -- GPU-resident data (CUDA backend): no host copies of the bulk data ---------------------------
    def crypt_resident(self, req, src, dst, wait: bool = True, stats=None) -> None:
        """``src`` through the mode into ``dst``: contiguous CuPy uint8 arrays on this device of
        the same size (``dst`` may be ``src``).  Only the < 32-byte tails of CTR and XTS stealing
        pass through small temporary buffers.  Everything runs on CuPy's current stream of the
        device, as CuPy's own operations do (so it is ordered after the array's producer: importing
        a foreign array, CUDA array interface or DLPack, made that stream wait for the producer's).
        ``wait``: finished before this returns; else queued on that stream like a CuPy operation
        (the round keys' zeroing too), and ordered before whatever is queued there next.
        ``stats``: a SchedulerStats told of the bytes (the seconds are the call's, queued or
        run)."""
        import cupy

        if self.info.runtime != "cuda":
            raise DeviceError("GPU-resident arrays need a CUDA device")
        n = src.nbytes
        if n == 0:
            return
        t0 = time.perf_counter() if stats is not None else 0.0
        with self.backend.dev:
            s = cupy.cuda.get_current_stream()
            kp = KeyedProgram(self.backend, req, queue=s, record=False, first_bytes=n)
            try:
                resident(kp, req, src, dst, s)
            finally:
                kp.close(wait)  # zeroes the keys on the stream (and waits for it)
        if stats is not None:
            stats.ran(self.info.spec, src.nbytes, time.perf_counter() - t0)

    # -- AEADs (aeads/): each name's driver built once per device and implementation ------------------
    def aead_driver(self, name: str, impl: str | None = None):
        from .. import aeads
        from . import device_aead

        return self.backend.owned(("aead", name, impl or "fast"),
                                  lambda: device_aead.build(self.backend, aeads.lookup(name), name,
                                                            impl))

    def _run_batch(self, batch, impl, received=None, beside=None):
        """The tags of ``batch`` (texts into ``batch.dst``), or with ``received`` the mask of the
        messages whose tag verified (aeads.base.verify): a large batch of host data on a GPU in
        pieces of whole messages, overlapped on several queues, each piece's tags compared as it
        is done (transfer/batches.py, which also starts ``beside`` once its pieces in flight are
        full; one long message in slices, where the driver cuts messages); else, and for
        GPU-resident texts, one job of the cached driver (``beside`` started first)."""
        from ..transfer import batches

        drv = self.aead_driver(batch.name, impl)
        if (self.info.kind != "gpu" or not isinstance(batch.src, np.ndarray)
                or not batches.overlaps(drv, int(batch.off[-1]), batch.count)):
            # (GPU-resident texts: no bus to overlap; pieces and slices only add host work and
            # launches, which halve a long message's rate: docs/benchmarks.md, 'Figures moved
            # from code comments')
            return batches.whole(drv, batch, received=received, beside=beside)
        return batches.run(self.backend, drv, batch, received=received, beside=beside)

    def runs_resident(self, *arrays) -> bool:
        """Whether :meth:`aead_resident` takes these GPU arrays where they lie: CuPy arrays on
        this CUDA device."""
        if self.info.runtime != "cuda":
            return False
        index = self.backend.index
        return all(getattr(getattr(a, "device", None), "id", None) == index for a in arrays)

    def aead_resident(self, name: str, encrypt: bool, key: bytes, nonce: bytes, aad: bytes,
                      tag_length: int, src, dst, text: int, impl: str | None = None,
                      stats=None) -> bool:
        """One message of AEAD ``name`` whose data lies on this device: ``src`` holds its text
        (``text`` bytes; decryption: then its tag), ``dst`` receives the output text
        (encryption: then the tag) -- CuPy arrays on CUDA (queued on CuPy's current stream of
        this device, as a CuPy operation is), buffers on OpenCL (on the backend's queue).  The
        kernels read and write these arrays where they lie, the layout's metadata comes from
        the driver's copy on the device, the tag is written on the device into ``dst`` after
        the text: the host does not wait for an encryption (CUDA).  Decryption waits for the
        tag and compares it in constant time: returns whether it verified; a failure (or any
        error) zeroes ``dst`` first.  The key material is wiped on the device and the host."""
        from .device_aead.job import span

        b = self.backend
        batch = Batch.one(name, encrypt, tag_length, key, nonce, aad, span(src, 0, text),
                          span(dst, 0, text), text)
        t0 = time.perf_counter()
        try:
            drv = self.aead_driver(name, impl)
            if self.info.runtime == "cuda":
                import cupy

                with b.dev:
                    ok = _resident_job(b, drv, batch, src, dst, text,
                                       cupy.cuda.get_current_stream())
            else:
                ok = _resident_job(b, drv, batch, src, dst, text, b.default_queue)
        finally:
            batch.wipe()
        if stats is not None:
            stats.ran(self.info.spec, text, time.perf_counter() - t0)
        return ok

    def seal(self, batch, impl: str | None = None, beside=None):
        """Encrypt every message of ``batch`` (aeads.base.Batch) into ``batch.dst``; the tags."""
        return self._run_batch(batch, impl, beside=beside)

    def open(self, batch, tags, impl: str | None = None):
        """Decrypt every message, compare its tag in constant time; the mask of those that
        verified (the others' plaintext is zeroed before this returns)."""
        return self._run_batch(batch, impl, received=tags)
