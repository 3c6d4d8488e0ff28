"""Two runtimes in one process share nothing (ciphergrid/runtime.py): engines, backends and what
hangs off them (cached pipelines, copy jobs, AEAD drivers), the page-lock cache, the host threads,
device discovery, the use policy's state, the library's service use, the scheduler's speeds; a runtime is per thread, and the library's default is what code that enters
none gets."""
from __future__ import annotations

import os
import threading
import warnings

import numpy as np
import pytest

import ciphergrid
from ciphergrid import request, route
from ciphergrid.devices import backend
from ciphergrid.runtime import Runtime, current, default
from ciphergrid.testing import oracle
from conftest import all_devices

CPU = next((d for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)


def test_engines_and_backends_per_runtime():
    base = route.engine("native")
    with Runtime("a") as a:
        ea = route.engine("native")
        assert current() is a and ea is route.engine("native")   # (one per device and runtime)
    with Runtime("b") as b:
        eb = route.engine("native")
    assert current() is default() and len({id(base), id(ea), id(eb)}) == 3
    assert a.engines == {"native": ea} and b.engines == {"native": eb}
    if CPU is None:
        return
    with a:
        ba = backend(CPU)
    with b:
        bb = backend(CPU)
    assert ba is not bb and a.backends[CPU.spec] is ba
    # what hangs off a backend is its own: the cached pipelines and the AEAD drivers
    pa = ba.owned("pipelines", lambda: ({}, threading.Lock()))
    pb = bb.owned("pipelines", lambda: ({}, threading.Lock()))
    assert pa is not pb
    data = np.frombuffer(os.urandom(3 << 20), dtype=np.uint8)
    key, iv = os.urandom(16), os.urandom(16)
    with a:
        x = ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=CPU.spec)
        da = route.engine(CPU.spec).aead_driver("aes-128-gcm")
    with b:
        y = ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=CPU.spec)
        db = route.engine(CPU.spec).aead_driver("aes-128-gcm")
    assert x.tobytes() == y.tobytes() == oracle.encrypt(data.tobytes(), "aes-128-ctr", key, iv)
    assert da is not db and pa[0] and pb[0] and not set(map(id, pa[0].values())) & set(map(id, pb[0].values()))


def test_policy_state_per_runtime():
    """A warning said in one runtime is said again in another; one runtime's suspension (the
    self-test, the benchmark) does not cover another's requests."""
    msg = "a test warning of test_runtime"
    with Runtime("a") as a, warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        request.warn_once(msg)
        request.warn_once(msg)
        with request.weak_use_allowed():
            assert request.policy_suspended()
            with Runtime("b"):
                assert not request.policy_suspended()
                request.warn_once(msg)
    assert [str(x.message) for x in w] == [msg, msg] and msg in a.policy.warned
    assert msg not in default().policy.warned and not request.policy_suspended()


def test_runtime_is_per_thread():
    seen = {}
    rt = Runtime("thread")

    def other():
        with rt:
            seen["in"] = current()
            barrier.wait()
            barrier.wait()

    barrier = threading.Barrier(2)
    t = threading.Thread(target=other)
    t.start()
    barrier.wait()
    assert current() is default()                # (the other thread's runtime is its own)
    barrier.wait()
    t.join()
    assert seen["in"] is rt


def test_scheduler_speeds_per_runtime(monkeypatch, tmp_path):
    if CPU is None:
        pytest.skip("one engine present (no OpenCL CPU device)")
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path))
    data = np.frombuffer(os.urandom(8 << 20), dtype=np.uint8)
    before = dict(default().speeds)
    with Runtime("a") as a:
        ciphergrid.encrypt(data, "aes-128-ctr", bytes(16), bytes(16), device=f"native,{CPU.spec}")
    with Runtime("b") as b:
        b.calibration["loaded"] = True           # (nothing read from the cache folder)
        assert not b.speeds
    assert a.speeds and default().speeds == before


def test_pins_threads_and_discovery_per_runtime(monkeypatch):
    """The page-lock cache, the host threads (budget, OpenSSL's pool, the thread beside the
    devices) and device discovery's answers are each runtime's own; the OpenSSL engine runs on
    its runtime's budget and pool."""
    from ciphergrid import aead_tables
    from ciphergrid.devices import resolve
    from ciphergrid.engines.openssl import threads as workers
    from ciphergrid.transfer import pinning

    seen = []
    real = workers.run_all

    def run_all(jobs, host=None):
        seen.append((len(jobs), host))
        return real(jobs, host)

    monkeypatch.setattr(workers, "run_all", run_all)
    data = np.frombuffer(os.urandom(4 << 20), dtype=np.uint8)
    key, iv = os.urandom(16), os.urandom(16)
    a, b = Runtime("a", threads=2), Runtime("b", threads=3)
    for rt in (a, b):
        with rt:
            assert pinning.pins_of(None) is rt.pins and route.engine("native").host is rt.threads
            x = ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device="native")
            assert x.tobytes() == oracle.encrypt(data.tobytes(), "aes-128-ctr", key, iv)
            check = aead_tables.Beside(lambda: None)
            check.result()
            assert check.threads is rt.threads
            assert resolve("native").spec == "native" and "native" in rt.devices.resolved
    assert seen == [(2, a.threads), (3, b.threads)]
    assert a.pins is not b.pins and default().pins is not a.pins
    assert a.threads._pool is not b.threads._pool and a.threads._beside is not b.threads._beside
    assert a.devices.by_runtime["native"] is not b.devices.by_runtime["native"]


def test_service_use_per_runtime(monkeypatch, tmp_path):
    """A service's runtime never calls a service; in_process() covers its runtime only."""
    from ciphergrid import service

    monkeypatch.setenv("CIPHERGRID_SERVICE", str(tmp_path / "none.sock"))
    with Runtime("serving", serving=True):
        assert service.for_library() is None
    with Runtime("a") as a, service.in_process():
        assert service.for_library() is None and a.service.in_process == 1
        with Runtime("b") as b:
            assert b.service.in_process == 0
            with pytest.raises(ciphergrid.Error):   # (this one would call the service)
                service.for_library()
    assert a.service.in_process == 0


def test_scheduler_gives_openssl_its_budget_less_the_pipelines():
    """Beside a device's pipeline, OpenSSL's share of a composite request runs on its runtime's
    thread budget less the cores the pipeline takes (CORES_PER_DEVICE)."""
    if CPU is None:
        pytest.skip("one engine present (no OpenCL CPU device)")
    from ciphergrid.engines.composite import CORES_PER_DEVICE, CompositeEngine

    req = request.make_request(ciphergrid.registry.lookup("aes-128-ctr"), bytes(16), bytes(16), True)
    for budget in (6, 9):
        with Runtime("budget", threads=budget):
            e = CompositeEngine([route.engine("native"), route.engine(CPU.spec)], spec="native,cpu")
            with e.session(req) as s:
                assert s._member(e.engines[0]).threads == budget - CORES_PER_DEVICE
