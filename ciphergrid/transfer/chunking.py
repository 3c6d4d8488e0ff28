"""Chunk size and depth of the streaming pipeline, per device: resolved, cached, overridable.

Where a setting comes from, first match wins (:func:`resolve`):

1. the caller: ``chunk_bytes=`` / ``depth=`` keyword arguments (the CLI's ``--chunk-size`` and
   ``--depth`` flags end up here);
2. the settings: ``TransferSettings.chunk_bytes`` / ``.depth``, from ``CIPHERGRID_CHUNK_SIZE``
   (bytes, binary suffixes allowed: ``8Mi``, ``64M``) and ``CIPHERGRID_DEPTH`` (reported as
   "environment");
3. the tuning cache, a JSON file (``TransferSettings.tuning_cache``: ``CIPHERGRID_TUNING_CACHE``,
   else ``$XDG_CACHE_HOME/ciphergrid/tuning.json``, else ``~/.cache/ciphergrid/tuning.json``)
   keyed by :func:`device_key` (runtime, device name, driver version): what
   :func:`ciphergrid.transfer.autotune.autotune` measured;
4. built-in defaults per device kind (:data:`DEFAULTS`).

A caller that passes ``tune=`` (a callable that measures the device and writes the cache) has an
untuned GPU tuned the first time it streams a message of at least :data:`AUTOTUNE_MIN_BYTES`,
unless ``TransferSettings.autotune`` is off (``CIPHERGRID_AUTOTUNE=0``).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .. import settings as _settings
from ..errors import InvalidArgument
from ..settings import MiB, check_chunk, check_depth, parse_bytes

#: (chunk_bytes, depth) when nothing else says
DEFAULTS = {"gpu": (16 * MiB, 4), "cpu": (4 * MiB, 3), "accelerator": (16 * MiB, 4)}
#: a GPU with no cache entry is tuned the first time it streams at least this much
AUTOTUNE_MIN_BYTES = 256 * MiB

_lock = threading.Lock()


@dataclass(frozen=True)
class Tuned:
    chunk_bytes: int
    depth: int
    source: str          # "argument" | "environment" | "cache" | "default" (per field, joined by +)


# ------------------------------------------------------------------------------- the cache
def cache_path(settings: _settings.TransferSettings | None = None) -> Path:
    return Path((settings or _settings.transfer()).tuning_cache)


def device_key(info) -> str:
    """Runtime, device name and driver version: a new driver or board is tuned afresh."""
    ex = getattr(info, "extra", None) or {}
    driver = ex.get("driver") or ""
    rt = ex.get("runtime") or ex.get("opencl") or ""
    return "|".join(str(x) for x in (info.runtime, info.name, getattr(info, "platform", ""),
                                     driver, rt))


def load_cache(settings: _settings.TransferSettings | None = None) -> dict:
    try:
        with open(cache_path(settings), encoding="utf-8") as f:
            doc = json.load(f)
        return doc.get("devices", {}) if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def cached(info, settings: _settings.TransferSettings | None = None) -> dict | None:
    e = load_cache(settings).get(device_key(info))
    if not isinstance(e, dict):
        return None
    try:
        check_chunk(e["chunk_bytes"])
        check_depth(e["depth"])
    except (KeyError, TypeError, ValueError, InvalidArgument):
        return None
    return e


def store(info, chunk_bytes: int, depth: int, *,
          settings: _settings.TransferSettings | None = None, **extra) -> Path:
    """Write (atomically) the entry of one device into the cache; returns the file's path."""
    path = cache_path(settings)
    with _lock:
        devs = load_cache(settings)
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
def resolve(info, chunk_bytes=None, depth=None, *, nbytes: int | None = None, tune=None,
            settings: _settings.TransferSettings | None = None) -> Tuned:
    """The chunk size and depth to use on device ``info`` (see the module docstring).
    ``tune``: a callable that tunes this device (writes its cache entry), run for an untuned GPU
    and a message of ``nbytes`` >= AUTOTUNE_MIN_BYTES; None: never tune.  ``settings`` None: the
    environment's."""
    opts = settings or _settings.transfer()
    src = {}
    if chunk_bytes is not None:
        chunk, src["chunk"] = check_chunk(parse_bytes(chunk_bytes)), "argument"
    elif opts.chunk_bytes is not None:
        chunk, src["chunk"] = check_chunk(opts.chunk_bytes), "environment"
    else:
        chunk = None
    if depth is not None:
        dep, src["depth"] = check_depth(depth), "argument"
    elif opts.depth is not None:
        dep, src["depth"] = check_depth(opts.depth), "environment"
    else:
        dep = None
    if chunk is None or dep is None:
        e = cached(info, opts)
        if (e is None and tune is not None and info.kind == "gpu"
                and nbytes is not None and nbytes >= AUTOTUNE_MIN_BYTES and opts.autotune):
            try:
                tune()
                e = cached(info, opts)
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
    return Tuned(chunk, dep, a if a == b else f"{a}+{b}")


__all__ = ["Tuned", "resolve", "cache_path", "device_key", "cached", "store", "load_cache",
           "DEFAULTS", "AUTOTUNE_MIN_BYTES"]
