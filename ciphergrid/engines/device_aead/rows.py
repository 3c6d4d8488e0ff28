"""Resident jobs (Job's ``resident`` mode: data that lie on the device, the caller's queue):
``run``, the one way they start and end (DeviceEngine.aead_resident's one message, and the
batches below); and a batch of AEAD messages with each message's tag after its text (a sealed
message's chunks, formats/resident.py) as ONE such job.

Message i (i < m - 1) is ``chunk`` bytes, the last one shorter (possibly empty); in the
interleaved form message i's text starts at ``at`` + i (``chunk`` + ``tag``) and its tag
follows it.  The kernels take contiguous texts: the interleaved side moves through ONE
device-to-device 2-D copy per run of rows (``copy_rows``: CUDA's memcpy2D, OpenCL's
rectangular copy), the contiguous side is read or written where it lies.

* ``seal_rows``: contiguous plaintext -> interleaved ciphertext and tags; the texts' copy into
  the rows runs beside GHASH (GCM: on a queue of its own, once the key streams are written);
  the tags go from the job's scratch straight into their places on the device, before the key
  material (the tags with it) is zeroed; nothing is waited for on CUDA.
* ``open_rows``: interleaved -> contiguous plaintext; the rows' copies run on a queue of their
  own while the host makes the job (its tables go up beside them); the computed and received
  tags come down in one wait and are compared in constant time (aeads.base.verify); where any
  fails, or on any error, the whole output is zeroed before this returns: no plaintext is
  released unless every tag verified.
"""

from __future__ import annotations

from ..._lazy import numpy_for
from ...aeads.base import Batch, verify
from ...transfer.flight import drain
from .job import span

np = numpy_for(__name__)

I64 = np.int64


def copy_rows(b, dst, dst_at: int, dst_pitch: int, src, src_at: int, src_pitch: int,
              width: int, count: int, queue) -> None:
    """Enqueue on ``queue`` the copy of ``count`` rows of ``width`` bytes from device buffer
    ``src`` (the first at byte ``src_at``, the next ``src_pitch`` bytes on) into ``dst`` (from
    ``dst_at``, every ``dst_pitch`` bytes): CuPy arrays on CUDA, buffers on OpenCL, each whole
    from its first byte; ONE copy."""
    if count <= 0 or width <= 0:
        return
    if count == 1:
        src_pitch = dst_pitch = width
    if _cuda(b):
        import cupy

        with b.dev:   # (cudaMemcpyDeviceToDevice: 3)
            cupy.cuda.runtime.memcpy2DAsync(dst.data.ptr + dst_at, dst_pitch,
                                            src.data.ptr + src_at, src_pitch, width, count, 3,
                                            queue.ptr)
        return
    import pyopencl as cl

    from ...backends.opencl import buffer_root

    # (sub-buffers as their parents at an offset: PoCL's rectangular copies fault on them)
    src, o = buffer_root(src)
    dst, d = buffer_root(dst)
    src_at, dst_at = src_at + o, dst_at + d
    if count == 1:
        cl.enqueue_copy(queue, dst, src, src_offset=src_at, dst_offset=dst_at, byte_count=width)
        return
    # (each origin as a byte within a row and a row: offsets past the first row as rows)
    cl.enqueue_copy(queue, dst, src, src_origin=(src_at % src_pitch, src_at // src_pitch, 0),
                    dst_origin=(dst_at % dst_pitch, dst_at // dst_pitch, 0),
                    region=(width, count, 1), src_pitches=(src_pitch, src_pitch * count),
                    dst_pitches=(dst_pitch, dst_pitch * count))


def _queue(engine):
    """The queue a resident job of ``engine`` runs on: CuPy's current stream of its device
    (CUDA), else the backend's default queue."""
    b = engine.backend
    if engine.info.runtime == "cuda":
        import cupy

        with b.dev:
            return cupy.cuda.get_current_stream()
    return b.default_queue


def _batch(name: str, encrypt: bool, tag: int, key: bytes, nonces: np.ndarray, chunk: int,
           n: int, src, dst) -> Batch:
    """The batch of m = len(nonces) messages: ``chunk`` bytes each, the last ``n`` - (m - 1)
    ``chunk``; one key, no AAD."""
    m = int(nonces.shape[0])
    off = np.arange(m + 1, dtype=I64) * chunk
    off[-1] = n
    keys = np.frombuffer(bytes(key), dtype=np.uint8).reshape(1, -1).copy()
    return Batch(name, encrypt, tag, keys, np.zeros(m, dtype=np.int32),
                 np.ascontiguousarray(nonces, dtype=np.uint8), np.zeros(0, dtype=np.uint8),
                 np.zeros(m + 1, dtype=I64), src, off, dst)


def _shape(m: int, n: int, chunk: int) -> int:
    """Bytes of the last message (InvalidArgument where ``n`` is no such batch's)."""
    last = n - (m - 1) * chunk
    if m < 1 or not 0 <= last < chunk:
        from ...errors import InvalidArgument

        raise InvalidArgument(f"{n} bytes are not {m - 1} messages of {chunk} bytes and a "
                              "shorter last one")
    return last


def run(b, drv, batch: Batch, queue, out, *, tag_to=None, tags_from=None,
        enqueue=None, after=None) -> np.ndarray:
    """A resident job of ``batch`` on driver ``drv`` and ``queue``, its kernels launched by
    ``enqueue(job)`` (None: Job.enqueue), ended there (Job.settle); ``after``: events of other
    queues writing its input texts (Job's ``after``).  Encryption's tags put by
    ``tag_to``; decryption's computed tags and the received ones (``tags_from``) downloaded in
    one wait and compared in constant time (aeads.base.verify).
    The mask of the messages that verified (encryption: all).  When decrypting, any tag that
    fails, or any error, zeroes ``out`` (the device buffer of the output texts, all of it)
    before this returns or raises: no unverified plaintext stays."""
    job = drv.prepare(batch, queue, resident=True, after=after)
    try:
        try:
            job.enqueue() if enqueue is None else enqueue(job)
        except BaseException:
            job.abort()
            raise
        if batch.encrypt:
            job.settle(tag_to=tag_to)
            return np.ones(batch.count, dtype=bool)
        got, received = job.settle(tags_from=tags_from)
        # (the constant-time comparison; the output is zeroed below, on the device)
        ok = verify(_Marks(batch.count), got, received)
    except BaseException:
        if not batch.encrypt:
            _zero(b, out, queue)
        raise
    if not ok.all():
        _zero(b, out, queue)
    return ok


class _Marks:
    """What ``verify`` zeroes when the device output is zeroed apart: nothing on the host."""

    def __init__(self, count: int):
        self.count = count
        self.off = np.zeros(count + 1, dtype=I64)
        self.dst = np.zeros(0, dtype=np.uint8)


def _zero(b, buf, queue) -> None:
    """Zero a device output and wait for it (best effort after an error)."""
    try:
        if getattr(buf, "nbytes", None) or getattr(buf, "size", 0):
            b.zero(buf, queue, wait=True)
    except Exception:
        pass


def seal_rows(engine, name: str, key: bytes, nonces: np.ndarray, src, n: int, dst, at: int,
              chunk: int, tag: int, impl: str | None = None) -> None:
    """Messages of contiguous plaintext ``src`` (``n`` bytes: see the module docstring) sealed
    into ``dst`` from byte ``at``, each text followed by its ``tag``-byte tag, as ONE resident
    job on ``engine`` (a DeviceEngine) with ``nonces`` (m x nonce bytes); queued on the
    caller's stream (CUDA: nothing waited for)."""
    b = engine.backend
    m = int(nonces.shape[0])
    last = _shape(m, n, chunk)
    full, row = m - 1, chunk + tag
    drv = engine.aead_driver(name, impl)
    q = _queue(engine)
    with _on(b):
        texts = b.alloc(n + 32)   # (the kernels' read-ahead past the texts: whole blocks)
        batch = _batch(name, True, tag, key, nonces, chunk, n, span(src, 0, n),
                       span(texts, 0, n))

        moved = []

        def texts_to_rows(buf, queue) -> None:
            copy_rows(b, dst, at, row, buf, 0, chunk, chunk, full, queue)
            copy_rows(b, dst, at + full * row, row, buf, full * chunk, chunk, last, 1, queue)

        def enqueue(job) -> None:
            # a job whose text and tag kernels launch apart (GCM's): the key streams first,
            # then the texts' copy into the rows on a queue of its own while GHASH and the tags
            # run (they only read the texts), the caller's queue waiting for it after them
            if not (job.tags_apart and full):
                job.enqueue()
                return
            lo, hi = job.cuts[0], job.cuts[-1]
            job.launch(q, lo, hi, tags=False)
            side = b.owned(("aead rows", "copies"), b.queue)
            b.after(side, [b.marker(q)])
            try:
                texts_to_rows(job.texts_out, side)
                moved.append(side)
                job.launch(q, lo, hi, texts=False)
                b.after(q, [b.marker(side)])
            except BaseException:   # (the copy done before the job's buffers go)
                b.finish(side)
                raise

        def place(tags, width: int) -> None:
            if not moved:
                texts_to_rows(texts, q)
            copy_rows(b, dst, at + chunk, row, tags, 0, width, tag, full, q)
            copy_rows(b, dst, at + full * row + last, row, tags, full * width, width, tag, 1, q)

        try:
            run(b, drv, batch, q, None, tag_to=place, enqueue=enqueue)
        finally:
            batch.wipe()


def open_rows(engine, name: str, key: bytes, nonces: np.ndarray, src, at: int, n: int, dst,
              chunk: int, tag: int, impl: str | None = None) -> np.ndarray:
    """Interleaved messages in ``src`` from byte ``at`` (see the module docstring; ``n`` bytes
    of text in all) opened into contiguous ``dst`` as ONE resident job on ``engine``: the mask
    of the messages whose tags verified.  Where any fails, or on any error, ``dst`` is zeroed
    (all of it) before this returns or raises."""
    b = engine.backend
    m = int(nonces.shape[0])
    last = _shape(m, n, chunk)
    full, row = m - 1, chunk + tag
    drv = engine.aead_driver(name, impl)
    q = _queue(engine)
    with _on(b):
        # the texts and tags taken out of the rows on a queue of its own (after the caller's
        # work on ``q``), while the host makes the job and its tables go up on ``q``; its
        # kernels wait for them
        side = b.owned(("aead rows", "copies"), b.queue)
        try:
            texts, rec = b.alloc(n + 32), b.alloc(m * tag)
            b.after(side, [b.marker(q)])
            copy_rows(b, texts, 0, chunk, src, at, row, chunk, full, side)
            copy_rows(b, texts, full * chunk, chunk, src, at + full * row, row, last, 1, side)
            copy_rows(b, rec, 0, tag, src, at + chunk, row, tag, full, side)
            copy_rows(b, rec, full * tag, tag, src, at + full * row + last, row, tag, 1, side)
            copied = b.marker(side)
            batch = _batch(name, False, tag, key, nonces, chunk, n, span(texts, 0, n),
                           span(dst, 0, n))
        except BaseException:
            drain(b, side)
            _zero(b, dst, q)
            raise

        try:
            # (the job's copy of the texts, or its kernels reading them, wait for the copies;
            # its tables go up before)
            return run(b, drv, batch, q, dst, tags_from=(rec, 0), after=[copied])
        except BaseException:   # (the copies done before their buffers go)
            drain(b, side)
            raise
        finally:
            batch.wipe()


def _cuda(b) -> bool:
    return b.info.runtime == "cuda"


def _on(b):
    """The context of ``b``'s device (CUDA: its device current), else nothing."""
    from contextlib import nullcontext

    return b.dev if _cuda(b) else nullcontext()
