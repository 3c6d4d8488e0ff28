"""The ``openssl speed -evp`` baseline of the benchmark: :func:`speed`, repeated in-place
EVP_CipherUpdate calls on buffers of one size, on one thread or many (``-multi``), through the C
helper loop when there is one (``libcrypto.speed_loop``)."""

from __future__ import annotations

import os
import threading
import time

from .. import registry
from ..errors import InvalidArgument, UnsupportedCipher
from ..engines.openssl import contexts
from ..engines.openssl.libcrypto import BACKEND_NAME, MAX_UPDATE
from ..engines.openssl.threads import run_all
from .._lazy import numpy_for

np = numpy_for(__name__)

__all__ = ["SpeedBuffers", "speed"]

class SpeedBuffers:
    """One ``size``-byte buffer per thread, filled with a random 64 KiB pattern (the content does
    not change a cipher's speed; os.urandom of threads x 256 MiB took longer than the timing).
    The caller keeps it between calls: repeats and the other thread counts of one size reuse
    the buffers (a new size replaces them)."""

    def __init__(self):
        self.size = None
        self.bufs: list = []

    def get(self, threads: int, size: int) -> list:
        if self.size != size:
            self.size, self.bufs = size, []
        bufs = self.bufs
        if len(bufs) < threads:
            block = np.frombuffer(os.urandom(min(size, 1 << 16)), dtype=np.uint8)
            for _ in range(threads - len(bufs)):
                b = np.empty(size, dtype=np.uint8)
                for off in range(0, size, block.size):
                    m = min(block.size, size - off)
                    b[off: off + m] = block[:m]
                bufs.append(b)
        return bufs[:threads]


def speed(name: str, size: int, *, threads: int = 1, seconds: float = 0.5,
          encrypt: bool = True, buffers: SpeedBuffers | None = None) -> float:
    """Throughput in bytes/s of repeated in-place EVP_CipherUpdate calls on ``size``-byte buffers,
    like ``openssl speed -evp NAME -bytes SIZE`` (with ``-multi threads``): every thread has its
    own buffer (random content), random key/IV and context; total bytes of all threads / wall time.
    ``buffers``: kept by the caller between calls (None: made for this call)."""
    spec = registry.lookup(name)
    size = int(size)
    threads = int(threads)
    if size < 1:
        raise InvalidArgument(f"size must be >= 1, got {size}")
    if size > MAX_UPDATE:
        raise InvalidArgument(f"size must be <= {MAX_UPDATE}, got {size}")
    if threads < 1:
        raise InvalidArgument(f"threads must be >= 1, got {threads}")
    if not contexts.has_evp(spec.name):
        raise UnsupportedCipher(f"{BACKEND_NAME} has no cipher {spec.name!r}")
    from ..request import make_request

    ctxs, bufs = [], []
    try:
        for _ in range(threads):
            key = os.urandom(spec.key_len)
            while spec.mode.key_count == 2 and key[: spec.key_size] == key[spec.key_size:]:
                key = os.urandom(spec.key_len)  # pragma: no cover
            iv = os.urandom(spec.iv_len) if spec.iv_len else None
            req = make_request(spec, key, iv, bool(encrypt))
            req.check_length(size)
            ctxs.append(contexts.Ctx(spec.name, key, iv, bool(encrypt)))
        bufs = (buffers or SpeedBuffers()).get(threads, size)
        # one untimed warm-up call per context (page faults, lazy init)
        for c, b in zip(ctxs, bufs):
            c.spin(b, size, 0.0)
        barrier = threading.Barrier(threads)
        start = [0.0]
        counts = [0] * threads

        def job(k):
            def run(cancel):
                try:
                    barrier.wait()
                except BaseException:
                    barrier.abort()  # an interrupt: release the threads still waiting
                    raise
                if k == 0:
                    start[0] = time.perf_counter()
                counts[k] = ctxs[k].spin(bufs[k], size, time.perf_counter() + seconds)
            return run

        run_all([job(k) for k in range(threads)])
        elapsed = time.perf_counter() - start[0]
    finally:
        for c in ctxs:
            c.free()
    return sum(counts) / max(elapsed, 1e-9)
