"""Chunk size and depth of the streaming pipeline, per device: tuned once, cached, overridable.

Where a setting comes from, first match wins:

1. the caller: ``chunk_bytes=`` / ``depth=`` keyword arguments (the CLI's ``--chunk-size`` and
   ``--depth`` flags end up here);
2. the environment: ``CIPHERGRID_CHUNK_SIZE`` (bytes, binary suffixes allowed: ``8Mi``, ``64M``)
   and ``CIPHERGRID_DEPTH``;
3. the tuning cache, a JSON file (``CIPHERGRID_TUNING_CACHE``, else
   ``$XDG_CACHE_HOME/ciphergrid/tuning.json``, else ``~/.cache/ciphergrid/tuning.json``) keyed by
   :func:`device_key` (runtime, device name, driver version): what :func:`autotune` measured;
4. built-in defaults per device kind (:data:`DEFAULTS`).

:func:`autotune` times the copy-only strawman through the pipeline (the bus, not the cipher, is what
the chunk size and depth have to hide) for a grid of chunk sizes and depths, takes among the settings within :data:`TOLERANCE` of
the best throughput the chunk nearest :data:`PREFERRED_CHUNK` (then its fastest depth), and writes
the cache.  It runs by itself the first time a GPU streams a message of at least
:data:`AUTOTUNE_MIN_BYTES` with no cache entry (``CIPHERGRID_AUTOTUNE=0`` turns that off), and on
demand through ``ciphergrid bench pipeline --retune``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .errors import InvalidArgument

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

ENV_CHUNK = "CIPHERGRID_CHUNK_SIZE"
ENV_DEPTH = "CIPHERGRID_DEPTH"
ENV_CACHE = "CIPHERGRID_TUNING_CACHE"
ENV_AUTOTUNE = "CIPHERGRID_AUTOTUNE"

#: (chunk_bytes, depth) when nothing else says
DEFAULTS = {"gpu": (16 * MiB, 4), "cpu": (4 * MiB, 3), "accelerator": (16 * MiB, 4)}
#: among settings within TOLERANCE of the best, autotune takes the chunk nearest this (log scale):
#: messages shorter than 8 chunks are cut finer anyway (pipeline.SPLIT), and on an H200 16-32 MiB
#: gave the best plateau with the lowest host CPU; a much smaller chunk wins only when clearly faster
PREFERRED_CHUNK = {"gpu": 16 * MiB, "accelerator": 16 * MiB, "cpu": 1 * MiB}
#: limits on what any source may ask for
MIN_CHUNK, MAX_CHUNK = 4 * KiB, 1 * GiB
MIN_DEPTH, MAX_DEPTH = 1, 64
#: a GPU with no cache entry is tuned the first time it streams at least this much
AUTOTUNE_MIN_BYTES = 256 * MiB
#: settings within this fraction of the best throughput count as ties (see PREFERRED_CHUNK)
TOLERANCE = 0.015
#: the grid autotune tries (GPU / quick)
GRID_CHUNKS = [2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB]
GRID_DEPTHS = [3, 4, 6]
QUICK_CHUNKS = [64 * KiB, 256 * KiB, 1 * MiB]
QUICK_DEPTHS = [2, 3]

_lock = threading.Lock()
_SUFFIX = {"": 1, "b": 1, "k": KiB, "ki": KiB, "kib": KiB, "kb": KiB, "m": MiB, "mi": MiB,
           "mib": MiB, "mb": MiB, "g": GiB, "gi": GiB, "gib": GiB, "gb": GiB}


@dataclass(frozen=True)
class Settings:
    chunk_bytes: int
    depth: int
    source: str          # "argument" | "environment" | "cache" | "default" (per field, joined by +)


def parse_bytes(text, what: str = "chunk size") -> int:
    """'4096' -> 4096, '64Ki' / '64K' / '64KiB' -> 65536, '8M' -> 8 MiB (binary multiples)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _SUFFIX:
        raise InvalidArgument(f"bad {what} {text!r}: expected e.g. 65536, 64Ki, 8Mi, 1Gi")
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def check_chunk(n: int) -> int:
    n = int(n)
    if not MIN_CHUNK <= n <= MAX_CHUNK:
        raise InvalidArgument(f"chunk size must be between {MIN_CHUNK} and {MAX_CHUNK} bytes, got {n}")
    return n


def check_depth(n: int) -> int:
    n = int(n)
    if not MIN_DEPTH <= n <= MAX_DEPTH:
        raise InvalidArgument(f"pipeline depth must be between {MIN_DEPTH} and {MAX_DEPTH}, got {n}")
    return n


# ------------------------------------------------------------------------------- the cache
def cache_path() -> Path:
    p = os.environ.get(ENV_CACHE)
    if p:
        return Path(p)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ciphergrid" / "tuning.json"


def device_key(info) -> str:
    """Runtime, device name and driver version: a new driver or board is tuned afresh."""
    ex = getattr(info, "extra", None) or {}
    driver = ex.get("driver") or ""
    rt = ex.get("runtime") or ex.get("opencl") or ""
    return "|".join(str(x) for x in (info.runtime, info.name, getattr(info, "platform", ""),
                                     driver, rt))


def load_cache() -> dict:
    try:
        with open(cache_path(), encoding="utf-8") as f:
            doc = json.load(f)
        return doc.get("devices", {}) if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def cached(info) -> dict | None:
    e = load_cache().get(device_key(info))
    if not isinstance(e, dict):
        return None
    try:
        check_chunk(e["chunk_bytes"])
        check_depth(e["depth"])
    except (KeyError, TypeError, ValueError, InvalidArgument):
        return None
    return e


def store(info, chunk_bytes: int, depth: int, **extra) -> Path:
    """Write (atomically) the entry of one device into the cache; returns the file's path."""
    path = cache_path()
    with _lock:
        devs = load_cache()
        devs[device_key(info)] = {
            "chunk_bytes": int(chunk_bytes), "depth": int(depth), "device": info.spec,
            "name": info.name, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            **extra,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tuning-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"schema": "ciphergrid.tuning", "version": 1, "devices": devs}, f,
                          indent=1, sort_keys=True)
                f.write("\n")
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    return path


# ------------------------------------------------------------------------------- resolution
def settings(info, chunk_bytes=None, depth=None, *, backend=None, nbytes: int | None = None,
             allow_autotune: bool = True) -> Settings:
    """The chunk size and depth to use on device ``info`` (see the module docstring)."""
    src = {}
    if chunk_bytes is not None:
        chunk, src["chunk"] = check_chunk(parse_bytes(chunk_bytes)), "argument"
    elif os.environ.get(ENV_CHUNK):
        chunk, src["chunk"] = check_chunk(parse_bytes(os.environ[ENV_CHUNK], ENV_CHUNK)), "environment"
    else:
        chunk = None
    if depth is not None:
        dep, src["depth"] = check_depth(depth), "argument"
    elif os.environ.get(ENV_DEPTH):
        try:
            dep = check_depth(int(os.environ[ENV_DEPTH]))
        except ValueError:
            raise InvalidArgument(f"{ENV_DEPTH} must be an integer, got {os.environ[ENV_DEPTH]!r}") from None
        src["depth"] = "environment"
    else:
        dep = None
    if chunk is None or dep is None:
        e = cached(info)
        if (e is None and allow_autotune and backend is not None and info.kind == "gpu"
                and nbytes is not None and nbytes >= AUTOTUNE_MIN_BYTES
                and os.environ.get(ENV_AUTOTUNE, "1") != "0"):
            try:
                autotune(backend)
                e = cached(info)
            except Exception:  # tuning is an optimisation: never fail a call over it
                e = None
        if e is not None:
            if chunk is None:
                chunk, src["chunk"] = int(e["chunk_bytes"]), "cache"
            if dep is None:
                dep, src["depth"] = int(e["depth"]), "cache"
        d_chunk, d_depth = DEFAULTS.get(info.kind, DEFAULTS["gpu"])
        if chunk is None:
            chunk, src["chunk"] = d_chunk, "default"
        if dep is None:
            dep, src["depth"] = d_depth, "default"
    a, b = src["chunk"], src["depth"]
    return Settings(chunk, dep, a if a == b else f"{a}+{b}")


# ------------------------------------------------------------------------------- autotune
def autotune(backend, *, quick: bool = False, chunks=None, depths=None, total_bytes=None,
             write: bool = True, log=None) -> dict:
    """Time the copy pipeline over a grid of (chunk, depth); cache and return the choice.

    Returns ``{"chunk_bytes", "depth", "gbps", "grid": [[chunk, depth, GB/s], ...]}``.
    """
    import numpy as np

    from . import pipeline

    info = backend.info
    chunks = sorted(chunks or (QUICK_CHUNKS if quick else GRID_CHUNKS))
    depths = sorted(depths or (QUICK_DEPTHS if quick else GRID_DEPTHS))
    if total_bytes is None:
        total_bytes = 8 * max(chunks) if quick else max(1 * GiB, 8 * max(chunks))
    mem = getattr(info, "memory", 0) or 0
    if mem:  # keep the device slots well inside the device's memory
        chunks = [c for c in chunks if 2 * c * max(depths) <= mem // 4] or chunks[:1]
    src = pipeline.host_buffer(backend, total_bytes)
    dst = pipeline.host_buffer(backend, total_bytes)
    block = np.frombuffer(np.random.default_rng(1).bytes(min(total_bytes, 1 << 20)), np.uint8)
    for lo in range(0, total_bytes, block.nbytes):
        src[lo: lo + block.nbytes] = block[: total_bytes - lo]
    grid = []
    for c in chunks:
        for d in depths:
            p = pipeline.Pipeline(backend, chunk_bytes=c, depth=d)
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
        from .errors import DeviceError

        raise DeviceError(f"the copy pipeline on {info} returned wrong bytes while tuning")
    import math

    top = max(g[2] for g in grid)
    ok = [g for g in grid if g[2] >= (1 - TOLERANCE) * top]
    pref = PREFERRED_CHUNK.get(info.kind, 16 * MiB)
    c = min({g[0] for g in ok}, key=lambda x: (abs(math.log2(x / pref)), x))
    _, d, gbps = max((g for g in ok if g[0] == c), key=lambda g: g[2])
    res = {"chunk_bytes": c, "depth": d, "gbps": gbps, "grid": grid, "total_bytes": total_bytes}
    if write:
        res["path"] = str(store(info, c, d, gbps=gbps, grid=grid, quick=quick))
    return res


__all__ = ["Settings", "settings", "autotune", "cache_path", "device_key", "cached", "store",
           "parse_bytes", "DEFAULTS"]
