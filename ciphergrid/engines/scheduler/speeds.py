"""The scheduler's calibration: the speed each engine ran each cipher at, per direction and
path, smoothed over its last ranges, kept in the runtime and, across processes, in the cache
folder (CALIBRATION_FILE); a default per kind of device for an engine never measured.

And whether the engines together beat the fastest of them alone (``choose``, ``judged``): per
class of job (cipher, direction, set of engines, ``shape``), the rate of the last jobs run
together and of each member run alone, smoothed.  Engines can run slower together than the
fastest alone (on host memory both need, the host engine's threads take the bandwidth a GPU's
copies need): where the rate together is below (1 - SLOWER) x the fastest member's alone, the
class's jobs run on that member alone, the others standing by (they take its ranges only if it
fails or hangs), and the choice says so (``SchedulerStats.choice``, the plan's ``describe``).
How a class is learnt: its first warm job runs together, the next ones on each member alone (a
probe each; only the members whose ranges ran at PROBE_SHARE or more of the fastest's: a member
far slower is not the faster alone), the later ones as the rates say; every REPROBE_EVERY-th
judged job runs the other way once, so that a change of load is seen.  Jobs under
JUDGE_MIN_BYTES, jobs on one engine and jobs on data resident on a GPU are not judged (they are
dealt by speed).  Kept in the runtime and in the cache folder (TOGETHER_FILE).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ...runtime import current
from ...settings import load_cache_json, save_cache_json

#: bytes per second expected of an engine never measured (by device kind; GPU-resident data on
#: the engine's own GPU, on another through peer copies)
DEFAULT_SPEED = {"gpu": 20e9, "native": 2e9, "cpu": 0.2e9, "resident": 300e9, "peer": 100e9}

#: the cache folder's file of the speeds measured
CALIBRATION_FILE = "scheduler-speeds.json"
#: seconds between two writes of the calibration file
SAVE_EVERY_S = 10.0

#: the cache folder's file of the rates together and alone (``choose``)
TOGETHER_FILE = "scheduler-together.json"
#: a job of fewer bytes is not judged (it runs together): too short to time as a whole
JUDGE_MIN_BYTES = 64 << 20
#: the engines run together unless that is slower than the fastest member alone by this much
SLOWER = 0.03
#: every this many judged jobs of a class, one runs the way not chosen (together, or alone)
REPROBE_EVERY = 16
#: a member is timed alone (probed) where its ranges ran at this share of the fastest's or more
PROBE_SHARE = 0.1


def speed_key(engine, name: str, encrypt: bool, path: str = "array") -> tuple:
    return (engine.info.spec, engine.info.name, name, bool(encrypt), path)


def load(rt) -> None:
    """The speeds measured by earlier processes on this machine (the cache folder's
    CALIBRATION_FILE, and TOGETHER_FILE's rates together and alone), into runtime ``rt``: a
    user's first large call is split by them, not measured."""
    rt.calibration["loaded"] = True
    classes = rt.calibration.setdefault("together", {})
    try:
        for r in load_cache_json(TOGETHER_FILE, []):
            key = (r["cipher"], bool(r["encrypt"]), tuple(tuple(e) for e in r["engines"]),
                   tuple(r["shape"]))
            classes.setdefault(key, {"together": r["together"], "jobs": int(r["jobs"]),
                                     "alone": {str(k): float(v) for k, v in r["alone"].items()},
                                     "probe": [str(p) for p in r["probe"]], "at": 0})
    except (KeyError, TypeError, ValueError, AttributeError):
        pass
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
    save_cache_json(TOGETHER_FILE, [{"cipher": k[0], "encrypt": k[1], "engines": k[2],
                                     "shape": k[3], "together": v["together"], "jobs": v["jobs"],
                                     "alone": v["alone"], "probe": v["probe"]}
                                    for k, v in rt.calibration.get("together", {}).items()])
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


# -- together or alone -------------------------------------------------------------------------
@dataclass
class Choice:
    """How one scheduled job runs: on member ``alone`` (its spec) by itself, the others standing
    by, or together (None); ``why``, said in ``SchedulerStats.choice``; its class ``key`` (None:
    not judged), its ``nbytes``, and whether the engines that run it were ``warm`` (a job that
    sets up an engine's session is not timed)."""

    alone: str | None = None
    why: str = ""
    key: tuple | None = None
    nbytes: int = 0
    warm: bool = False
    probe: tuple = ()     # the members to time alone, the fastest ranges first


def _band(n: float) -> int:
    """A size's class: sizes within a factor of four of each other mostly share one."""
    return int(math.log2(max(1.0, n))) // 2


def shape(kind: str, nbytes: int, count: int | None = None, fenced: bool = False) -> tuple:
    """The shape part of a job's class: ``kind`` ("bytes": a message's bytes; "messages": an
    AEAD batch; "message": one AEAD message in ranges), the band of its bytes, of a batch the
    band of its messages' mean length (else -1), and whether its ranges are fenced (copied
    into the output: in place, or CIPHERGRID_SCHED_FENCE=copy)."""
    mean = _band(nbytes / max(1, count or 1)) if kind == "messages" else -1
    return kind, _band(nbytes), mean, bool(fenced)


def engines_key(engines) -> tuple:
    return tuple(sorted((e.info.spec, e.info.name) for e in engines))


def _work_shape(work, members) -> tuple | None:
    """(kind, bytes, count) of a scheduled ``work`` on host data; None for data on a GPU."""
    from .units import Bytes, Messages

    if any(work.path(e) != "array" for e in members):
        return None
    if isinstance(work, Messages):
        return "messages", int(work.off[-1]), work.n
    # (else a message's bytes, or one AEAD message in ranges of its blocks: message_range)
    return ("bytes" if isinstance(work, Bytes) else "message"), work.n, None


def _gb(v: float) -> str:
    return f"{v / 1e9:.3g}"


def _decide(v: dict | None, probes: bool = True) -> tuple[str | None, str]:
    """(the member to run alone or None, why) from a class's rates ``v``: each member to
    probe is timed alone first.  ``probes``: whether the probes and the re-probes are taken (a
    plan's description says the rule only)."""
    if v is None or v["together"] is None:
        return None, "together (the first of its class: its rate together is measured)"
    t = v["together"]
    pending = [s for s in v["probe"] if s not in v["alone"]]
    if pending or not v["alone"]:
        if not probes or not pending:
            return None, ""
        return pending[0], (f"{pending[0]} alone, a probe (together {_gb(t)} GB/s; "
                            f"{pending[0]} alone not measured)")
    best = max(v["alone"], key=v["alone"].get)
    a = v["alone"][best]
    slower = t < (1 - SLOWER) * a
    again = probes and (v["jobs"] + 1) % REPROBE_EVERY == 0
    if slower and not again:
        return best, f"{best} alone: together {_gb(t)} GB/s < {_gb(a)} alone (memory bound)"
    if slower:
        return None, (f"together, a re-probe (one job in {REPROBE_EVERY}; {best} alone chosen: "
                      f"together {_gb(t)} GB/s < {_gb(a)} alone)")
    if again:
        return best, (f"{best} alone, a re-probe (one job in {REPROBE_EVERY}; together chosen: "
                      f"{_gb(t)} GB/s, {best} alone {_gb(a)})")
    return None, f"together: {_gb(t)} GB/s, {best} alone {_gb(a)}"


def choose(rt, work, members, fenced: bool = False) -> Choice:
    """How the scheduled ``work`` runs over ``members`` (``fenced``: its ranges copied into the
    output): together, or on one of them alone (the module docstring's rule)."""
    found = _work_shape(work, members) if len(members) > 1 else None
    if found is None or found[1] < JUDGE_MIN_BYTES:
        return Choice()
    kind, nbytes, count = found
    key = (work.name, bool(work.encrypt), engines_key(members), shape(kind, nbytes, count, fenced))
    speeds = {e.info.spec: expected_speed(e, work.name, work.encrypt, rt)[0] for e in members}
    top = max(speeds.values())
    probe = tuple(s for s in sorted(speeds, key=speeds.get, reverse=True)
                  if speeds[s] >= PROBE_SHARE * top)
    with rt.lock:
        v = rt.calibration.setdefault("together", {}).get(key)
        if v is not None:   # (a member's ranges may have been slow only while it was cold)
            v["probe"] += [s for s in probe if s not in v["probe"]]
        alone, why = _decide(v)
        warm = rt.calibration.get("warm", set())
        runs = [e for e in members if alone in (None, e.info.spec)]
        hot = all(speed_key(e, work.name, work.encrypt) in warm for e in runs)
    return Choice(alone, why, key, nbytes, hot, probe)


def judged(rt, choice: Choice, seconds: float) -> None:
    """A judged job's rate (its bytes over its wall time), into its class's rate together or
    its member's alone (half the old, half the new); the members to probe are those of any
    of its class's jobs (``choose`` adds them).  Written to the cache folder when the class's
    choice changes, else at most every SAVE_EVERY_S."""
    if choice.key is None or not choice.warm or seconds <= 0:
        return
    rate = choice.nbytes / seconds
    with rt.lock:
        classes = rt.calibration.setdefault("together", {})
        v = classes.setdefault(choice.key, {"together": None, "alone": {}, "jobs": 0, "at": 0,
                                            "probe": list(choice.probe)})
        before = _decide(v, probes=False)[0]
        if choice.alone is None:
            old = v["together"]
        else:
            old = v["alone"].get(choice.alone)
        new = rate if old is None else 0.5 * old + 0.5 * rate
        if choice.alone is None:
            v["together"] = new
        else:
            v["alone"][choice.alone] = new
        v["jobs"] += 1
        v["at"] = rt.calibration["clock"] = rt.calibration.get("clock", 0) + 1
        now = time.monotonic()
        changed = _decide(v, probes=False)[0] != before
        last = rt.calibration["saved"]
        if last <= now and (changed or now - last > SAVE_EVERY_S):
            save(rt)


def verdict(rt, name: str, encrypt: bool | None, engines, kind: str, nbytes: int | None,
            count: int | None = None, fenced: bool = False) -> str:
    """What the rates say of a job of this class (its latest class where ``encrypt`` or
    ``count`` is None), "" where it was not judged: "SPEC alone: together T GB/s < A alone
    (memory bound)", or "together: ...".  A plan's description says it."""
    if nbytes is None or nbytes < JUDGE_MIN_BYTES or len(engines) < 2:
        return ""
    want = shape(kind, nbytes, count, fenced)
    ekey = engines_key(engines)
    with rt.lock:
        if not rt.calibration["loaded"]:
            load(rt)
        found = [v for (c, enc, ek, sh), v in rt.calibration.get("together", {}).items()
                 if c == name and ek == ekey and encrypt in (None, enc) and sh[:2] == want[:2]
                 and sh[3] == want[3] and (count is None or sh == want)]
        v = max(found, key=lambda x: x["at"], default=None)
        return _decide(v, probes=False)[1] if v is not None and v["together"] else ""


def clock(rt) -> int:
    """The count of jobs judged in ``rt`` so far."""
    with rt.lock:
        return rt.calibration.get("clock", 0)


def latest_verdict(rt, name: str, encrypt: bool, since: int = 0) -> str:
    """``verdict``'s words for the unfenced class of ``name`` in that direction judged last in
    ``rt``, after ``clock`` was ``since`` ("" where none was): what bench scheduler's table says
    after a set's runs."""
    with rt.lock:
        found = [v for (c, enc, _, sh), v in rt.calibration.get("together", {}).items()
                 if c == name and enc == encrypt and not sh[3] and v["together"]
                 and v["at"] > since]
        v = max(found, key=lambda x: x["at"], default=None)
        return _decide(v, probes=False)[1] if v is not None else ""
