"""Measuring the best chunk size and depth of a device: :func:`autotune` times the copy-only
strawman through the pipeline (the bus, not the cipher, is what the chunk size and depth have to
hide) for a grid of chunk sizes and depths, takes among the settings within :data:`TOLERANCE` of
the best throughput the chunk nearest :data:`PREFERRED_CHUNK` (then its fastest depth), and writes
the tuning cache (:mod:`ciphergrid.transfer.chunking`).

It runs by itself the first time a GPU streams a message of at least
``chunking.AUTOTUNE_MIN_BYTES`` with no cache entry (:func:`ciphergrid.transfer.runs.pipeline_for`
hands it to ``chunking.resolve`` as ``tune``; ``CIPHERGRID_AUTOTUNE=0`` turns that off), and on
demand through ``ciphergrid bench pipeline --retune``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import settings as _settings
from ..errors import DeviceError
from ..settings import GiB, KiB, MiB
from .chunking import store
from .driver import Pipeline
from .staging import host_buffer

#: among settings within TOLERANCE of the best, autotune takes the chunk nearest this (log scale):
#: messages shorter than 8 chunks are cut finer anyway (driver.SPLIT), and on a GPU 16-32 MiB
#: give the best plateau with the lowest host CPU (docs/benchmarks.md, 'Figures moved from code
#: comments'); a much smaller chunk wins only when clearly faster
PREFERRED_CHUNK = {"gpu": 16 * MiB, "accelerator": 16 * MiB, "cpu": 1 * MiB}
#: settings within this fraction of the best throughput count as ties (see PREFERRED_CHUNK)
TOLERANCE = 0.015
#: the grid autotune tries (GPU / quick)
GRID_CHUNKS = [2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB]
GRID_DEPTHS = [3, 4, 6]
QUICK_CHUNKS = [64 * KiB, 256 * KiB, 1 * MiB]
QUICK_DEPTHS = [2, 3]


def autotune(backend, *, quick: bool = False, chunks=None, depths=None, total_bytes=None,
             write: bool = True, log=None,
             settings: _settings.TransferSettings | None = None) -> dict:
    """Time the copy pipeline over a grid of (chunk, depth); cache and return the choice.

    Returns ``{"chunk_bytes", "depth", "gbps", "grid": [[chunk, depth, GB/s], ...]}`` (and
    ``"path"``, the cache file written).  ``settings`` None: the environment's (the cache file,
    the host threads).
    """
    info = backend.info
    chunks = sorted(chunks or (QUICK_CHUNKS if quick else GRID_CHUNKS))
    depths = sorted(depths or (QUICK_DEPTHS if quick else GRID_DEPTHS))
    if total_bytes is None:
        total_bytes = 8 * max(chunks) if quick else max(1 * GiB, 8 * max(chunks))
    mem = getattr(info, "memory", 0) or 0
    if mem:  # keep the device slots well inside the device's memory
        chunks = [c for c in chunks if 2 * c * max(depths) <= mem // 4] or chunks[:1]
    src = host_buffer(backend, total_bytes)
    dst = host_buffer(backend, total_bytes)
    block = np.frombuffer(np.random.default_rng(1).bytes(min(total_bytes, 1 << 20)), np.uint8)
    for lo in range(0, total_bytes, block.nbytes):
        src[lo: lo + block.nbytes] = block[: total_bytes - lo]
    grid = []
    for c in chunks:
        for d in depths:
            p = Pipeline(backend, chunk_bytes=c, depth=d, settings=settings)
            try:
                p.copy(src, dst)  # warm-up: allocations, compilation, first touch
                best = float("inf")
                for _ in range(2 if quick else 3):
                    t0 = time.perf_counter()
                    p.copy(src, dst)
                    best = min(best, time.perf_counter() - t0)
            finally:
                p.close()
            gbps = total_bytes / best / 1e9
            grid.append([c, d, round(gbps, 3)])
            if log:
                log(f"tune {info.spec}: chunk {c >> 10} KiB depth {d}: {gbps:.2f} GB/s")
    if not np.array_equal(src, dst):
        raise DeviceError(f"the copy pipeline on {info} returned wrong bytes while tuning")
    top = max(g[2] for g in grid)
    ok = [g for g in grid if g[2] >= (1 - TOLERANCE) * top]
    pref = PREFERRED_CHUNK.get(info.kind, 16 * MiB)
    c = min({g[0] for g in ok}, key=lambda x: (abs(math.log2(x / pref)), x))
    _, d, gbps = max((g for g in ok if g[0] == c), key=lambda g: g[2])
    res = {"chunk_bytes": c, "depth": d, "gbps": gbps, "grid": grid, "total_bytes": total_bytes}
    if write:
        res["path"] = str(store(info, c, d, settings=settings, gbps=gbps, grid=grid, quick=quick))
    return res


__all__ = ["autotune"]
