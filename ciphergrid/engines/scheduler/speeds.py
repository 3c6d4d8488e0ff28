"""The scheduler's calibration: the speed each engine ran each cipher at, per direction and
path, smoothed over its last ranges, kept in the runtime and, across processes, in the cache
folder (CALIBRATION_FILE); a default per kind of device for an engine never measured.
"""

from __future__ import annotations

import time

from ...runtime import current
from ...settings import load_cache_json, save_cache_json

#: bytes per second expected of an engine never measured (by device kind; GPU-resident data on
#: the engine's own GPU, on another through peer copies)
DEFAULT_SPEED = {"gpu": 20e9, "native": 2e9, "cpu": 0.2e9, "resident": 300e9, "peer": 100e9}

#: the cache folder's file of the speeds measured
CALIBRATION_FILE = "scheduler-speeds.json"
#: seconds between two writes of the calibration file
SAVE_EVERY_S = 10.0


def speed_key(engine, name: str, encrypt: bool, path: str = "array") -> tuple:
    return (engine.info.spec, engine.info.name, name, bool(encrypt), path)


def load(rt) -> None:
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


def save(rt) -> None:
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
    key = speed_key(engine, name, encrypt, path)
    with rt.lock:
        if not rt.calibration["loaded"]:
            load(rt)
        v = rt.speeds.get(key)
    if v is not None:
        return v, True
    if path != "array":
        return DEFAULT_SPEED[path.partition(":")[0]], False
    return DEFAULT_SPEED["native" if engine.info.runtime == "native" else engine.info.kind], False


def record(rt, engine, name: str, encrypt: bool, nbytes: int, seconds: float, path: str,
           grain: int) -> None:
    """A range's speed, into the smoothed figure (half the old, half the new); the figures
    written to the cache folder at most every SAVE_EVERY_S."""
    if nbytes < grain or seconds <= 0:
        return
    key = speed_key(engine, name, encrypt, path)
    v = nbytes / seconds
    with rt.lock:
        rt.calibration.setdefault("warm", set()).add(key)
        old = rt.speeds.get(key)
        rt.speeds[key] = v if old is None else 0.5 * old + 0.5 * v
        if time.monotonic() - rt.calibration["saved"] > SAVE_EVERY_S:
            save(rt)
