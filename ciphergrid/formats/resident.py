"""Sealed messages whose data lie on a GPU (C2SP chunked encryption, formats/cobblestone.py):
``encrypt`` / ``decrypt`` of a CuPy array (or any CUDA array ``buffers.gpu_array`` takes) give
a CuPy array; host data go to formats/cobblestone.py's one-shots.

Where the route's plan for the chunks (route.route, path "resident") is a CUDA device holding
the arrays, the whole message -- its whole chunks and the shorter final one -- is ONE batch of
AES-GCM messages on that device, on CuPy's current stream (engines/device_aead/rows.py: the
texts read or written where they lie, the sealed side moved by one 2-D copy on the device, the
tags put in their places there).  No text crosses the bus: the header (the key derivation and
the commitment are the host's), the job's tables and the derived key's round keys go up, an
opening's tags come down.  Sealing returns once queued (CuPy arrays in and out); opening
checks the commitment first (the header comes down), then every chunk's tag, and releases
nothing unless all verify: a failure zeroes the output and raises ChunkFailed naming the first
chunk that failed.  Where the plan is a host engine, the message goes through host copies.
"""

from __future__ import annotations

import os

from .. import buffers
from .._lazy import numpy_for
from ..errors import InvalidArgument, InvalidTag
from . import cobblestone as cs

np = numpy_for(__name__)


def encrypt(data, key: bytes, context: bytes = b"", *, aes256: bool = False,
            salt: bytes | None = None, device: str = "auto", out=None):
    """``data`` sealed (salt || commitment || chunks): GPU data into a GPU array (``out``,
    sealed_length(n) bytes, when given) on the device the route's plan names; host data as
    formats/cobblestone.py's ``encrypt`` (bytes)."""
    gpu = buffers.gpu_array(data)
    if gpu is None:
        _host_only(out)
        return cs.encrypt(data, key, context, aes256=aes256, salt=salt, device=device)
    arr, wrap = gpu
    sch = cs.scheme(aes256)
    n = arr.nbytes
    m = n // cs.CHUNK + 1
    if m > cs.MAX_CHUNKS:
        raise InvalidArgument("the message passes the spec's 2^38 chunks")
    salt = os.urandom(cs.SALT) if salt is None else bytes(salt)
    k, base, commitment = cs.derive(sch, bytes(key), salt, bytes(context))
    dst = buffers.gpu_output(out, cs.sealed_length(n), arr)
    p = _plan(sch, True, n, m, device, arr)
    import cupy

    with arr.device:
        if _resident(p, arr, dst):
            from ..engines.device_aead import rows

            dst[:cs.HEADER].set(np.frombuffer(salt + commitment, dtype=np.uint8))
            rows.seal_rows(p.engine, sch.aead, k, cs.nonces(base, 0, m), arr, n, dst, cs.HEADER,
                           cs.CHUNK, cs.TAG, _impl(p))
            if not buffers.cupy_only(data, out):
                cupy.cuda.get_current_stream().synchronize()
        else:
            cupy.cuda.get_current_stream().synchronize()   # (the caller's work on it is done)
            dst.set(np.frombuffer(cs.encrypt(cupy.asnumpy(arr), key, context, aes256=aes256,
                                             salt=salt, device=p.device), dtype=np.uint8))
    return out if out is not None else wrap(dst, False)


def decrypt(sealed, key: bytes, context: bytes = b"", *, aes256: bool = False,
            device: str = "auto", out=None):
    """The message of ``sealed``: of GPU data a GPU array (``out``, message_length bytes, when
    given), nothing released unless every chunk verifies (InvalidTag: ``out`` zeroed); of host
    data formats/cobblestone.py's ``decrypt`` (bytes)."""
    gpu = buffers.gpu_array(sealed)
    if gpu is None:
        _host_only(out)
        return cs.decrypt(sealed, key, context, aes256=aes256, device=device)
    ct, wrap = gpu
    sch = cs.scheme(aes256)
    n = cs.message_length(ct.nbytes)
    m = n // cs.CHUNK + 1
    dst = buffers.gpu_output(out, n, ct)
    import cupy

    with ct.device:
        header = cupy.asnumpy(ct[:cs.HEADER]).tobytes()   # (on the current stream, waited for)
        try:
            op = cs.Opener(sch, key, context, header, device=device)
            op._check(0, ct.nbytes - cs.HEADER, True)
        except InvalidTag:
            dst.fill(0)
            raise
        p = _plan(sch, False, n, m, device, ct)
        if _resident(p, ct, dst):
            from ..engines.device_aead import rows

            ok = rows.open_rows(p.engine, sch.aead, op.key, cs.nonces(op.base, 0, m), ct,
                                cs.HEADER, n, dst, cs.CHUNK, cs.TAG, _impl(p))
            if not ok.all():   # (the output is zeroed already)
                op._failed(np.zeros(0, dtype=np.uint8), int(np.flatnonzero(~ok)[0]))
        else:
            cupy.cuda.get_current_stream().synchronize()
            try:
                pt = cs.decrypt(cupy.asnumpy(ct), key, context, aes256=aes256, device=p.device)
            except InvalidTag:
                dst.fill(0)
                raise
            dst.set(np.frombuffer(pt, dtype=np.uint8))
    return out if out is not None else wrap(dst, False)


def _host_only(out) -> None:
    if out is not None:
        raise InvalidArgument("out= takes GPU arrays (for GPU-resident data) only")


def _plan(sch, encrypt: bool, n: int, m: int, device: str, arr):
    """The plan (route.route, path "resident") of a GPU-resident message's ``m`` chunks, ``n``
    bytes of text: on the array's own CUDA device unless ``device`` names another."""
    from .. import aeads
    from ..request import aead_request
    from ..route import route

    want = (device or "auto").strip().lower()
    dev = f"cuda:{arr.device.id}" if want in ("auto", "gpu", "cuda") else want
    return route(aead_request(aeads.spec(sch.aead), encrypt=encrypt, nonce_len=cs.NONCE,
                              tag_length=cs.TAG, count=m), dev, n, path="resident")


def _resident(p, *arrays) -> bool:
    """Whether plan ``p`` runs these GPU arrays where they lie (a CUDA device holding them)."""
    runs = getattr(p.engine, "runs_resident", None)
    return p.path == "resident" and runs is not None and runs(*arrays)


def _impl(p):
    return getattr(p.request, "impl", None)
