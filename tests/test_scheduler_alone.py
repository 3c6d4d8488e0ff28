"""Together or alone (engines/scheduler/speeds.py: choose, judged, verdict): two engines that
share the host's memory can run slower together than the faster of them alone.  Two toy engines
of a kind registered here (a test's kind, as tests/test_engine_kinds.py does) share one "bus":
each runs at its own rate alone and at a fraction of it while the other runs.  Where sharing
costs (memory bound), the scheduler's jobs of that class move to the faster engine alone once
measured, and say so (``SchedulerStats.choice``, the plan's ``describe``); where it does not,
both keep running; one job in REPROBE_EVERY runs the other way; the engine running alone that
fails is replaced by the one standing by; the rates are kept for the next process."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry, route
from ciphergrid.backends.base import DeviceInfo
from ciphergrid.engines.base import Engine, Session
from ciphergrid.engines.scheduler import run as sched_run
from ciphergrid.engines.scheduler import speeds, units
from ciphergrid.request import make_request
from ciphergrid.runtime import Runtime
from ciphergrid.testing import oracle

FAST = DeviceInfo(spec="busfast", runtime="toybus", name="a toy engine (fast)", kind="cpu",
                  compute_units=1, memory=1 << 30)
SLOW = DeviceInfo(spec="busslow", runtime="toybus", name="a toy engine (slow)", kind="cpu",
                  compute_units=1, memory=1 << 30)
PAIR = f"{FAST.spec},{SLOW.spec}"
#: bytes per second of each alone
RATE = {FAST.spec: 60e6, SLOW.spec: 40e6}
JOB = 2 << 20


class Bus:
    """What the toy engines share: while both run, each runs at ``shared`` x its rate."""

    def __init__(self):
        self.lock = threading.Lock()
        self.busy = 0
        self.shared = 1.0


class BusSession(Session):
    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None) -> None:
        bus = self.engine.bus
        t = time.perf_counter()
        with bus.lock:
            bus.busy += 1
        try:
            r = self.req.at(first_block, chain) if (first_block or chain is not None) else self.req
            got = oracle.crypt(r.spec, r.key, r.iv, np.asarray(src).tobytes(), r.encrypt)
            left = float(len(got))
            while left > 0:   # (the bytes run at the rate of the moment: shared or not)
                with bus.lock:
                    rate = RATE[self.engine.info.spec] * (bus.shared if bus.busy > 1 else 1.0)
                time.sleep(min(0.002, max(0.0, left / rate - (time.perf_counter() - t))))
                now = time.perf_counter()
                left -= rate * (now - t)
                t = now
        finally:
            with bus.lock:
                bus.busy -= 1
        np.asarray(dst).reshape(-1)[:] = np.frombuffer(got, np.uint8)


class BusEngine(Engine):
    kind = "toybus"

    def __init__(self, info, bus):
        self.info, self.bus = info, bus

    def session(self, req):
        return BusSession(self, req)


def can_run(spec, mode, direction, **details):
    if getattr(spec, "aead", None) is not None or mode.name != "ctr":
        return None
    return "parallel"


@pytest.fixture
def bus(monkeypatch, tmp_path):
    """The toy kind registered over one bus, in a runtime of its own (nothing read from or
    written to the cache folder), jobs judged from 1 MiB, ranges of 64 KiB."""
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CIPHERGRID_FAULT", raising=False)
    monkeypatch.setattr(units, "GRAIN", 64 << 10)
    monkeypatch.setattr(speeds, "JUDGE_MIN_BYTES", 1 << 20)
    monkeypatch.setattr(sched_run, "HANG_INJECTED_S", 1.0)
    b = Bus()
    registry.register_engine_kind("toybus", lambda info: BusEngine(info, b), can_run,
                                  devices=lambda: (FAST, SLOW), label="toy engines on one bus")
    try:
        with Runtime("test") as rt:
            rt.calibration.update(loaded=True, saved=1e18)
            b.rt = rt
            yield b
    finally:
        registry.unregister_engine_kind("toybus")


def _jobs(n, rng):
    """``n`` jobs of JOB bytes over both engines: (stats, output right) of each."""
    key, iv = rng.randbytes(16), rng.randbytes(16)
    data = np.frombuffer(rng.randbytes(JOB), dtype=np.uint8)
    want = oracle.encrypt(data.tobytes(), "aes-128-ctr", key, iv)
    out = []
    for _ in range(n):
        st = ciphergrid.SchedulerStats()
        got = ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=PAIR, stats=st)
        out.append((st, bytes(got) == want))
    return out


def _plan():
    spec = registry.lookup("aes-128-ctr")
    return route.route(make_request(spec, bytes(16), bytes(16), True), PAIR, JOB)


def test_memory_bound_pair_runs_the_faster_alone_and_says_so(bus, rng):
    bus.shared = 0.25   # (together: 15 + 10 MB/s, below the faster's 60 alone)
    runs = _jobs(6, rng)
    assert all(ok for _, ok in runs)
    first, measured, p1, p2, *decided = [st for st, _ in runs]
    # the first job sets the engines up (not timed), the second is timed together, the next two
    # on each engine alone (the probes); from then on it runs on the faster alone
    assert first.alone is None and measured.alone is None and "first of its class" in first.choice
    assert {p1.alone, p2.alone} == {FAST.spec, SLOW.spec}
    assert "a probe" in p1.choice and "a probe" in p2.choice
    for st in decided:
        assert st.alone == FAST.spec
        assert st.choice.startswith(f"{FAST.spec} alone: together ") and \
            st.choice.endswith(" alone (memory bound)")
        assert st.engines[FAST.spec].bytes == JOB and st.engines[SLOW.spec].bytes == 0
        assert st.engines[FAST.spec].ranges == 1 and not st.failures
    key = next(iter(bus.rt.calibration["together"]))
    v = bus.rt.calibration["together"][key]
    assert v["together"] < (1 - speeds.SLOWER) * v["alone"][FAST.spec]
    # -v: the plan says it too
    said = _plan().describe()
    assert f"scheduled over {FAST.spec} + {SLOW.spec}; {FAST.spec} alone: together " in said
    assert "(memory bound)" in said


def test_pair_that_gains_together_keeps_both(bus, rng):
    bus.shared = 1.0   # (together: 60 + 40 MB/s)
    runs = _jobs(6, rng)
    assert all(ok for _, ok in runs)
    *_, p1, p2, a, b = [st for st, _ in runs]
    assert {p1.alone, p2.alone} == {FAST.spec, SLOW.spec}
    for st in (a, b):
        assert st.alone is None and st.choice.startswith("together: ")
        assert st.engines[FAST.spec].bytes > 0 and st.engines[SLOW.spec].bytes > 0
    assert "together: " in _plan().describe() and "alone (memory bound)" not in _plan().describe()


def test_one_job_in_reprobe_every_runs_the_other_way(bus, rng, monkeypatch):
    monkeypatch.setattr(speeds, "REPROBE_EVERY", 4)
    bus.shared = 0.25
    ran = [st.alone for st, ok in _jobs(9, rng) if ok]
    # judged jobs: together, two probes; the 4th and the 8th run together once; alone between
    assert len(ran) == 9 and ran[:2] == [None, None] and set(ran[2:4]) == {FAST.spec, SLOW.spec}
    assert ran[4:] == [None, FAST.spec, FAST.spec, FAST.spec, None]


def test_the_engine_running_alone_failing_costs_rework_not_bytes(bus, rng, monkeypatch):
    bus.shared = 0.25
    _jobs(5, rng)
    monkeypatch.setenv("CIPHERGRID_FAULT", f"{FAST.spec}:fail:0")
    with pytest.warns(ciphergrid.EngineFailureWarning, match=FAST.spec):
        (st, ok), = _jobs(1, rng)
    assert ok and st.alone == FAST.spec
    assert st.engines[SLOW.spec].bytes == JOB and st.rework_bytes == JOB


def test_small_jobs_are_not_judged(bus, rng, monkeypatch):
    monkeypatch.setattr(speeds, "JUDGE_MIN_BYTES", 2 * JOB)
    bus.shared = 0.25
    assert all(st.alone is None and st.choice == "" for st, _ in _jobs(3, rng))
    assert not bus.rt.calibration.get("together") and _plan().describe().endswith(
        f"(scheduled over {FAST.spec} + {SLOW.spec})")


def test_rates_kept_for_the_next_process(bus, rng):
    bus.shared = 0.25
    _jobs(5, rng)
    speeds.save(bus.rt)
    with Runtime("next") as rt:
        assert speeds.verdict(rt, "aes-128-ctr", True, [route.engine(FAST.spec),
                              route.engine(SLOW.spec)], "bytes", JOB).startswith(
            f"{FAST.spec} alone: together ")
        assert speeds.verdict(rt, "aes-128-ctr", False, [route.engine(FAST.spec),
                              route.engine(SLOW.spec)], "bytes", JOB) == ""


def test_classes_by_shape():
    """A batch's class is its bytes and its messages' mean length; sizes within a factor of
    four mostly share one; fenced runs (in place) are a class of their own."""
    assert speeds.shape("bytes", 4 << 30) == speeds.shape("bytes", 5 << 30)
    assert speeds.shape("bytes", 4 << 30) != speeds.shape("bytes", 1 << 30)
    batch = speeds.shape("messages", 4 << 30, 1 << 20)   # 1Mi x 4 KiB
    assert batch != speeds.shape("messages", 4 << 30, 4096) != speeds.shape("bytes", 4 << 30)
    assert speeds.shape("bytes", 4 << 30, fenced=True) != speeds.shape("bytes", 4 << 30)
