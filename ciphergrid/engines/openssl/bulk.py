"""A whole message on every core of the host: :func:`crypt` (one-shot, any bytes-like or numpy
data, the public entry of tests and benchmarks) and :func:`run` (a validated Request over host
arrays: what the engine's sessions call).

ECB, CBC and CTR are cut into parts on block boundaries, one EVP context per part started at its
block (``Request.at``: the mode's state there), spread over the thread pool; a serial direction
(CBC encryption) runs on one.  XTS goes to :mod:`.xts`.

Semantics follow ``openssl enc -nopad``: no padding is ever added or removed here.  XTS without a
sector size treats the whole buffer as one data unit whose tweak is ``iv`` (OpenSSL semantics);
with ``sector_size=S`` the buffer is a run of S-byte units with dm-crypt ``plain64`` tweaks.
"""

from __future__ import annotations

import ctypes
import sys

from ... import buffers, registry
from ...errors import InvalidArgument
from . import contexts, xts
from .threads import host_threads, split
from ..._lazy import numpy_for

np = numpy_for(__name__)

__all__ = ["crypt", "run"]


def crypt(name: str, key: bytes, iv: bytes | None, data, encrypt: bool, *,
          threads: int | None = None, sector_size: int | None = None, start_sector: int = 0,
          out=None):
    """Encrypt or decrypt ``data`` with the OpenSSL cipher ``name`` (no padding).

    Returns ``bytes``, or ``out`` (filled in) when a preallocated buffer is given.  The result is
    byte-identical to ``openssl enc -<name> -nopad`` and to pyca cryptography.  Large inputs are
    split over ``threads`` threads (default: the runtime's thread budget) in parts of at least ``threads.MIN_CHUNK``.
    XTS: without ``sector_size`` the whole input is one data unit with tweak ``iv``; with
    ``sector_size=S`` (usually a multiple of 16; any S >= 16 works) unit n has the tweak
    ``(start_sector + n)`` as 16 little-endian bytes (dm-crypt plain64), ``iv`` must be None, and
    the last unit may be shorter than S but not shorter than 16 bytes.  Arguments are checked by
    ``request.make_request`` (the same checks as every engine).
    """
    from ...request import make_request

    try:
        key = bytes(key)
    except TypeError:
        raise InvalidArgument("key must be bytes-like") from None
    req = make_request(registry.lookup(name), key, iv, encrypt, sector_size=sector_size,
                       start_sector=start_sector if sector_size is not None else None)
    host = host_threads()
    if threads is None:
        threads = host.budget
    threads = int(threads)
    if threads < 1:
        raise InvalidArgument(f"threads must be >= 1, got {threads}")
    src = buffers.as_u8(data)
    n = src.size
    req.check_length(n)
    if out is not None:
        result = out
        dst = buffers.out_array(out, n)
    else:
        result, dst = _new_output(n)
    if n == 0:
        return result if out is not None else b""
    run(req, src, dst, threads, host)
    if out is not None:
        return result
    return bytes(result) if isinstance(result, bytearray) else result


def run(req, src, dst, threads: int, host=None) -> None:
    """A validated request over ``src`` into ``dst`` (flat uint8 arrays or byte memoryviews of
    the same size, checked for the mode's lengths; ``dst`` may be ``src``) on ``threads``
    threads (of ``host``'s pool: a runtime.Threads; None: this thread's runtime's)."""
    if req.sector_size is not None or req.mode.key_count == 2:  # XTS
        a = buffers.as_u8(src)
        xts.run(req, a, a if dst is src else buffers.as_u8(dst), threads, host)
    else:
        _block_modes(req, src, dst, threads, host)


def _block_modes(req, src, dst, threads, host) -> None:
    """ECB, CBC, CTR: the message cut into parts on block boundaries, one EVP context each,
    started at its block (Request.at: the mode's state there); a serial direction on one."""
    bs = req.block_size
    if not req.mode.parallel(req.encrypt):
        threads = 1  # CBC encryption is serial
    parts = split(src.nbytes, bs, threads)
    # each part's request (CBC decryption reads the block before it: now, before an in-place run)
    reqs = {off: req.at(off // bs, req.mode.chain_at(req, src, off // bs)) for off, _ in parts}
    name = req.spec.name

    def make(part):
        r = reqs[part[0]]
        return contexts.Ctx(name, r.key, r.iv, r.encrypt)

    contexts.run_parts(parts, make, contexts.update_final(src, dst), host)


# --- a fresh output ------------------------------------------------------------------------

def _new_bytes_factory():
    """Allocate a fresh ``bytes`` of n bytes and a writable view of it, without a final copy.

    On CPython a bytes object made by PyBytes_FromStringAndSize(NULL, n) is private until it is
    returned, so filling it in place is safe (this is what CPython's own C code does).  The trick
    is checked once here and used for large sizes only; otherwise a bytearray is copied.
    """
    if sys.implementation.name != "cpython":
        return None
    try:
        fn = ctypes.pythonapi.PyBytes_FromStringAndSize
        fn.restype = ctypes.py_object
        fn.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
        mem = ctypes.pythonapi.PyMemoryView_FromMemory
        mem.restype = ctypes.py_object
        mem.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
        offset = bytes.__basicsize__ - 1
        probe = fn(None, 64)
        ctypes.memset(id(probe) + offset, 0x5A, 64)
        if probe != b"\x5a" * 64:
            return None
    except Exception:  # pragma: no cover - exotic interpreters
        return None

    def make(n: int):
        b = fn(None, n)
        # a writable memoryview on the private buffer (PyBUF_WRITE = 0x200); b stays referenced
        # by the caller for as long as the view is used
        return b, np.frombuffer(mem(id(b) + offset, n, 0x200), dtype=np.uint8)

    return make


_MAKE_BYTES = _new_bytes_factory()
_BYTES_TRICK_MIN = 1 << 16


def _new_output(n: int):
    """(result object, writable uint8 view) for a fresh output of n bytes."""
    if _MAKE_BYTES is not None and n >= _BYTES_TRICK_MIN:
        return _MAKE_BYTES(n)
    ba = bytearray(n)
    return ba, np.frombuffer(ba, dtype=np.uint8)
