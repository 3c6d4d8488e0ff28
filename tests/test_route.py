"""The one decision point (route.py) and the keyed objects' reuse: who runs a request, why, and
that a Cipher sets its keys up once per device and direction and wipes them when released."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ciphergrid
from ciphergrid import aeads, registry, route
from ciphergrid.errors import InvalidArgument
from ciphergrid.request import aead_request, make_request


def _req(name, encrypt=True, **kw):
    spec = registry.lookup(name)
    key = bytes(range(spec.key_len)) if spec.mode.key_count == 1 else bytes(range(spec.key_len))[::-1]
    iv = None if (not spec.iv_len or kw.get("sector_size")) else bytes(spec.iv_len)
    return make_request(spec, key, iv, encrypt, **kw)


def _gpus():
    return [d for d in ciphergrid.devices() if d.kind == "gpu"]


def test_capability_table_for_aes():
    caps = registry.lookup("aes-128-cbc").capabilities()
    assert caps == {"encrypt": {"device": "serial", "openssl": "serial"},
                    "decrypt": {"device": "parallel", "openssl": "parallel"}}
    for name in ("aes-128-ctr", "aes-256-xts", "aes-192-ecb"):
        caps = registry.lookup(name).capabilities()
        assert all(caps[d][e] == "parallel" for d in caps for e in caps[d]), name


def test_auto_prefers_a_gpu_for_large_parallel_requests_else_openssl():
    r = route.route(_req("aes-128-ctr"), "auto", 4 << 20)
    if _gpus():
        assert r.engine.kind == "device" and r.engine.info.kind == "gpu"
    else:
        assert r.engine.kind == "openssl" and r.how == "parallel"
    small = route.route(_req("aes-128-ctr"), "auto", 1000)
    assert small.engine.kind == "openssl"


def test_files_of_aes_go_to_openssl_on_hosts_that_keep_up(monkeypatch):
    """A stream (file, pipe) of a cipher the CPU has instructions for goes to OpenSSL from
    AUTO_FILES_OPENSSL_MIN_CORES cores on, whatever GPU is present; other ciphers, arrays, and
    hosts with fewer cores keep the usual order."""
    from ciphergrid.runtime import Runtime

    monkeypatch.setattr(route, "_cpu_flags", lambda: frozenset({"aes", "sse2"}))
    with Runtime("16 cores", threads=16):   # (the runtime's thread budget is the host's cores)
        r = route.route(_req("aes-128-ctr"), "auto", 4 << 30, path="stream")
        assert r.engine.kind == "openssl" and r.how == "parallel" and "on 16 cores" in r.choice
        assert route.host_keeps_up_with_files(registry.lookup("aes-256-xts"))
        assert not route.host_keeps_up_with_files(registry.lookup("camellia-128-ctr"))  # no cpu_flag
    with Runtime("4 cores", threads=4):
        assert not route.host_keeps_up_with_files(registry.lookup("aes-128-ctr"))
    with Runtime("16 cores", threads=16):
        monkeypatch.setattr(route, "_cpu_flags", lambda: frozenset({"sse2"}))
        assert not route.host_keeps_up_with_files(registry.lookup("aes-128-ctr"))


def test_serial_requests_go_to_openssl_with_a_reason():
    dev = next((d.spec for d in ciphergrid.devices() if d.runtime != "native"), None)
    if dev is None:
        pytest.skip("no kernel device present")
    r = route.route(_req("aes-128-cbc", True), dev, 1 << 20)
    assert r.engine.kind == "openssl" and r.how == "serial"
    assert "serial" in r.reason and dev in r.reason
    assert route.route(_req("aes-128-cbc", False), dev, 1 << 20).engine.info.spec == dev


def test_units_a_device_cannot_run_go_to_openssl_with_a_reason():
    dev = next((d.spec for d in ciphergrid.devices() if d.runtime != "native"), None)
    if dev is None:
        pytest.skip("no kernel device present")
    req = _req("aes-128-xts", sector_size=100, start_sector=0)
    r = route.route(req, dev, 1000)
    assert r.engine.kind == "openssl" and "cannot run" in r.reason
    assert route.route(req, dev, 100).engine.info.spec == dev  # one unit: the device steals its tail


def test_explicit_native_and_bad_paths():
    assert route.route(_req("aes-128-ecb"), "native", 1 << 30).engine.kind == "openssl"
    with pytest.raises(InvalidArgument):
        route.route(_req("aes-128-ecb"), "native", 16, path="resident")
    with pytest.raises(InvalidArgument):
        route.route(_req("aes-128-ecb"), "auto", 16, path="sideways")


def test_cipher_sets_keys_up_once(device, monkeypatch):
    """Many contexts and updates of one Cipher: one session (one key expansion and upload) per
    direction and device; close() wipes them."""
    from ciphergrid.engines import base

    made, closed = [], []
    real_session = {}

    def count(cls):
        orig = cls.session

        def session(self, req):
            s = orig(self, req)
            made.append((req.encrypt, self.info.spec))
            c = s.close
            s.close = lambda: (closed.append(1), c())[1]
            return s
        real_session[cls] = orig
        monkeypatch.setattr(cls, "session", session)

    from ciphergrid.engines.device import DeviceEngine
    from ciphergrid.engines.openssl import OpenSSLEngine

    count(DeviceEngine)
    count(OpenSSLEngine)
    assert issubclass(DeviceEngine, base.Engine)
    key, iv = os.urandom(16), os.urandom(16)
    data = np.frombuffer(os.urandom(5000), np.uint8)
    c = ciphergrid.Cipher("aes-128-ctr", key, iv, device=device)
    outs = []
    for _ in range(3):
        e = c.encryptor()
        outs.append(b"".join(e.update(data[i: i + 700]) for i in range(0, 5000, 700)) + e.finalize())
    d = c.decryptor()
    back = d.update(outs[0]) + d.finalize()
    from ciphergrid.testing import oracle

    assert outs[0] == outs[1] == outs[2] == oracle.encrypt(data.tobytes(), "aes-128-ctr", key, iv)
    assert back == data.tobytes()
    assert sorted(made) == [(False, made[0][1]), (True, made[0][1])]
    c.close()
    assert len(closed) == 2


def test_serial_runs_take_the_serial_implementation():
    """CBC encryption (serial: one work-item) of a cipher whose "fast" kernel does many blocks
    per step takes the cipher's serial_implementation; decryption, other modes and an explicit
    implementation (constant_time=True included) keep theirs."""
    spec = registry.lookup("misty1-cbc")
    key, iv = bytes(16), bytes(8)
    assert make_request(spec, key, iv, True).impl == spec.algorithm.serial_implementation == "tables"
    assert make_request(spec, key, iv, False).impl is None
    assert make_request(registry.lookup("misty1-ctr"), key, iv, True).impl is None
    assert make_request(spec, key, iv, True, impl="ct").impl == "ct"
    assert make_request(registry.lookup("aes-128-cbc"), bytes(16), bytes(16), True).impl is None


def test_auto_sends_host_aead_work_to_a_gpu_where_it_beats_openssl():
    """Host data of an AEAD that OpenSSL also has: a batch from AUTO_GPU_MIN_BYTES on, one
    message from the AEAD's gpu_one_message_min on and only while it fits a quarter of the
    GPU's memory (it moves whole); the predicate alone (CI has no GPU)."""
    from types import SimpleNamespace

    from ciphergrid import aeads

    gpu = SimpleNamespace(memory=80 << 30, runtime="cuda")
    gcm, chacha = aeads.spec("aes-128-gcm"), aeads.spec("chacha20-poly1305")
    takes = route._gpu_takes_host_aead
    for spec in (gcm, chacha):
        assert takes(spec, gpu, route.AUTO_GPU_MIN_BYTES, 2)
        assert not takes(spec, gpu, route.AUTO_GPU_MIN_BYTES - 1, 1000)
        assert not takes(spec, gpu, 21 << 30, 1)          # one message past a quarter
        assert takes(spec, gpu, 1 << 30, 65536)
    assert gcm.aead.gpu_one_message_min > route.AUTO_GPU_MIN_BYTES  # OpenSSL's one core wins below
    assert not takes(gcm, gpu, 4 << 20, 1) and takes(gcm, gpu, 32 << 20, 1)
    assert takes(chacha, gpu, 4 << 20, 1)
    assert not takes(gcm, SimpleNamespace(memory=80 << 30, runtime="opencl"), 1 << 30, 65536)
    # without a GPU nothing changes: OpenSSL
    r = route.route(aead_request(gcm, nonce_len=12, tag_length=16, count=65536), "auto", 1 << 30)
    if not _gpus():
        assert r.engine.kind == "openssl"
    # a file's message (the command line) goes to OpenSSL where it has the AEAD, GPU or not
    for spec in (gcm, chacha):
        r = route.route(aead_request(spec, nonce_len=12, tag_length=16), "auto", 1 << 30,
                        path="stream")
        assert r.engine.kind == "openssl"


def test_route_returns_a_plan_that_says_and_runs_itself():
    """route() returns a Plan (Route is its old name): -v's line (describe), the fallback, and
    run() for the array path, which gives the oracle's bytes."""
    from ciphergrid.plan import Plan
    from ciphergrid.testing import oracle

    req = _req("aes-128-ctr")
    p = route.route(req, "native", 4096)
    assert isinstance(p, Plan) and route.Route is Plan
    assert p.path == "array" and p.request is req and p.fallback is None and p.choice == ""
    assert p.describe() == "aes-128-ctr encrypt on native"
    assert p.shares == [("native", 1.0)] and p.engines == [p.engine]
    auto = route.route(req, "auto", 1000)
    assert auto.describe().startswith(f"aes-128-ctr encrypt on {auto.device} (chosen by auto: ")
    data = np.frombuffer(os.urandom(1000), np.uint8)
    dst = np.empty_like(data)
    auto.run(data, dst)
    assert dst.tobytes() == oracle.encrypt(data.tobytes(), "aes-128-ctr", req.key, req.iv)
    dec = route.route(_req("aes-128-ctr", False), "auto", 1000)
    assert dec.describe().startswith("aes-128-ctr decrypt on ")
    areq = aead_request(aeads.spec("aes-128-gcm"), encrypt=False, nonce_len=12, tag_length=16)
    a = route.route(areq, "native", 1000)
    assert a.describe() == "aes-128-gcm decrypt on native" and a.request is areq


def test_a_plan_falls_back_and_says_why():
    dev = next((d.spec for d in ciphergrid.devices() if d.runtime != "native"), None)
    if dev is None:
        pytest.skip("no kernel device present")
    p = route.route(_req("aes-128-cbc", True), dev, 1 << 20)
    assert p.fallback == dev and p.device == "native"
    assert p.describe() == f"aes-128-cbc encrypt on native ({p.reason})"
    assert route.route(_req("aes-128-cbc", False), dev, 1 << 20).fallback is None


@pytest.mark.parametrize("name,encrypt", [("aes-128-cbc", False), ("aes-128-cbc", True),
                                          ("aes-128-ctr", True)])
def test_a_plan_runs_in_place_in_slices_each_after_its_turn(name, encrypt):
    """Plan.run(slice_bytes=, turn=) (a service's fair slices): a parallel request in slices on
    the split grain, CBC decryption in place reading each next chaining block first; a serial
    one whole; either way the oracle's bytes and turns for every byte."""
    from ciphergrid.testing import oracle

    req = _req(name, encrypt)
    data = os.urandom(16 * 1000)
    buf = np.frombuffer(bytearray(data), np.uint8)
    turns = []
    plan = route.route(req, "native", buf.nbytes)
    plan.run(buf, buf, slice_bytes=3000, turn=turns.append)
    assert buf.tobytes() == oracle.crypt(name, req.key, req.iv, data, encrypt)
    assert sum(turns) == len(data)
    assert turns == ([len(data)] if plan.how == "serial" else [2992] * 5 + [1040])


def test_verbose_prints_the_plan(tmp_path, capsys):
    """The command line's -v line for a block cipher is the plan's describe()."""
    from ciphergrid.cli import main

    src, key = tmp_path / "in", tmp_path / "k"
    src.write_bytes(bytes(1000))
    key.write_text("00" * 16)
    assert main(["encrypt", "-c", "aes-128-ctr", "--key-file", str(key), "--iv", "00" * 16,
                 "--in", str(src), "--out", str(tmp_path / "out"), "-d", "native", "-q", "-v"]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        "ciphergrid: aes-128-ctr encrypt on native"
