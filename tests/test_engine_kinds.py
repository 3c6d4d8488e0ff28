"""Engine kinds are open: a kind declared here and nowhere else (a pure-Python engine that runs
the oracle, ``ciphergrid.testing.oracle``, with a fake device of its own) is registered for this
module only (``registry.register_engine_kind`` / ``unregister_engine_kind``), and the capability
table, the device specs, ``route``, the public API, Cipher contexts and the scheduler take it
without a project file edited -- as tests/test_toy_cipher.py does for algorithms."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ciphergrid
from ciphergrid import aeads, registry, route
from ciphergrid.backends.base import DeviceInfo
from ciphergrid.engines.base import Engine, Session
from ciphergrid.request import make_request
from ciphergrid.testing import oracle

TOY = DeviceInfo(spec="toy", runtime="toy", name="the oracle in Python", kind="cpu",
                 compute_units=1, memory=1 << 30)


class ToySession(Session):
    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None) -> None:
        r = self.req.at(first_block, chain) if (first_block or chain is not None) else self.req
        got = oracle.crypt(r.spec, r.key, r.iv, np.asarray(src).tobytes(), r.encrypt,
                           sector_size=r.sector_size, start_sector=r.start_sector)
        np.asarray(dst).reshape(-1).view(np.uint8)[:] = np.frombuffer(got, np.uint8)
        self.engine.ran.append((r.spec.name, first_block, len(got)))


class ToyEngine(Engine):
    kind = "toy"

    def __init__(self, info):
        self.info = info
        self.ran = []

    def session(self, req):
        return ToySession(self, req)


def can_run(spec, mode, direction, **details):
    """Block ciphers but XTS, as their mode runs (CBC encryption serial); no AEAD."""
    if getattr(spec, "aead", None) is not None or mode.name == "xts":
        return None
    return "parallel" if mode.parallel(direction == "encrypt") else "serial"


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path / "cache"))  # (no speeds kept)
    registry.register_engine_kind("toy", ToyEngine, can_run, devices=lambda: (TOY,),
                                  label="the oracle in Python (a test's)")
    try:
        yield
    finally:
        registry.unregister_engine_kind("toy")


def _req(name, encrypt=True):
    spec = registry.lookup(name)
    return make_request(spec, os.urandom(spec.key_len), os.urandom(spec.iv_len) or None, encrypt)


def test_a_kind_is_a_column_of_the_capability_table(toy):
    assert [k.name for k in registry.engine_kinds()][:3] == ["device", "openssl", "composite"]
    caps = registry.lookup("aes-128-cbc").capabilities()
    assert caps["encrypt"]["toy"] == "serial" and caps["decrypt"]["toy"] == "parallel"
    assert registry.lookup("aes-128-xts").capability("toy", True) is None
    assert aeads.spec("aes-128-gcm").capabilities()["encrypt"] == {
        "device": "parallel", "openssl": "parallel", "toy": None}
    with pytest.raises(ValueError, match="registered already"):
        registry.register_engine_kind("toy", ToyEngine, can_run)
    with pytest.raises(ValueError, match="registered already"):   # (OpenCL is the device kind's)
        registry.register_engine_kind("toy2", ToyEngine, can_run, runtimes=("opencl",))


def test_requests_route_to_the_kind_and_run_there(toy, rng):
    assert TOY in ciphergrid.devices()
    req = _req("aes-128-ctr")
    plan = route.route(req, "toy", 5000)
    assert isinstance(plan.engine, ToyEngine) and plan.device == "toy" and plan.how == "parallel"
    assert plan.reason == "" and plan.fallback is None
    assert plan.describe() == "aes-128-ctr encrypt on toy"
    data = rng.data(5000)
    assert ciphergrid.encrypt(data, "aes-128-ctr", req.key, req.iv, device="toy") == \
        oracle.encrypt(data, "aes-128-ctr", req.key, req.iv)
    assert route.engine("toy").ran == [("aes-128-ctr", 0, 5000)]
    # a context in pieces: later pieces start at a block of the message (Request.at), CBC's
    # carried chaining value included
    key, iv = rng.randbytes(16), rng.randbytes(16)
    sealed = oracle.encrypt(data[:4096], "aes-128-cbc", key, iv)
    d = ciphergrid.Cipher("aes-128-cbc", key, iv, device="toy").decryptor()
    assert b"".join(d.update(sealed[i:i + 1000]) for i in range(0, 4096, 1000)) + d.finalize() \
        == data[:4096]
    assert any(first for name, first, _ in route.engine("toy").ran if name == "aes-128-cbc")
    # serial work goes to OpenSSL, saying why; what the kind cannot run too
    serial = route.route(_req("aes-128-cbc"), "toy", 4096)
    assert serial.device == "native" and serial.fallback == "toy" and "serial" in serial.reason
    xts = route.route(_req("aes-128-xts"), "toy", 4096)
    assert xts.device == "native" and "toy cannot run" in xts.reason


def test_the_scheduler_takes_the_kind_beside_openssl(toy, rng):
    data = rng.data(256 << 10)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    plan = route.route(_req("aes-128-ctr"), "toy,native", len(data))
    assert plan.engine.kind == "composite"
    assert [s for s, _ in plan.shares] == ["toy", "native"]
    assert abs(sum(f for _, f in plan.shares) - 1) < 1e-9
    stats = ciphergrid.SchedulerStats()
    got = ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device="toy,native", stats=stats)
    assert got == oracle.encrypt(data, "aes-128-ctr", key, iv)
    assert stats.engines["toy"].bytes > 0 and not stats.failures
    assert sum(e.bytes for e in stats.engines.values()) == len(data)


def test_unregistered_kinds_are_gone(toy):
    route.engine("toy")
    registry.unregister_engine_kind("toy")
    assert TOY not in ciphergrid.devices()
    assert "toy" not in registry.lookup("aes-128-ctr").capabilities()["encrypt"]
    assert all(e.info.spec != "toy" for e in ciphergrid.runtime.current().engines.values())
    with pytest.raises(ciphergrid.Error):
        route.engine("toy")
    with pytest.raises(ValueError, match="unknown engine kind"):
        registry.lookup("aes-128-ctr").capability("toy", True)
