"""The scheduler (engines/composite.py): one request over several engines at once.

On every machine: OpenSSL (``native``) and the OpenCL CPU device where present, with the split's
grain made small (64 KiB) so that kilobytes give many ranges.  The bytes equal the one reference
for every splittable mode, both directions, at sizes around the ranges' edges, in place too; a
failed or hung engine (the documented fault switch, CIPHERGRID_FAULT) costs rework, not bytes;
CBC encryption still runs serially on one engine; the command line with ``--device`` lists; a
Ctrl-C mid-run leaves no output."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ciphergrid
from ciphergrid.engines import composite
from ciphergrid.engines.scheduler import run as sched_run
from ciphergrid.engines.scheduler import speeds, units
from ciphergrid.runtime import Runtime
from ciphergrid.testing import oracle
from conftest import absent_spec, all_devices

CPU = next((d.spec for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
#: the engines of the tests: OpenSSL and, where present, the OpenCL CPU device
PAIR = "native" + (f",{CPU}" if CPU else "")
GRAIN = 64 << 10
#: why a test that needs the scheduler skips where PAIR is OpenSSL alone (the GPU suite selects
#: no OpenCL CPU device): one device is no scheduler (no faults injected, no speeds measured)
ONE_ENGINE = "one engine present (no OpenCL CPU device): a single device bypasses the scheduler"


@pytest.fixture(autouse=True)
def rt(monkeypatch):
    """Each test in a runtime of its own (no speeds measured, none read or written on disk),
    with small ranges."""
    monkeypatch.setattr(units, "GRAIN", GRAIN)
    monkeypatch.setattr(sched_run, "HANG_INJECTED_S", 3.0)
    monkeypatch.setattr(sched_run, "HANG_MIN_S", 0.25)
    monkeypatch.setattr(sched_run, "HANG_FACTOR", 2.0)
    monkeypatch.delenv("CIPHERGRID_FAULT", raising=False)
    with Runtime("test") as r:
        r.calibration.update(loaded=True, saved=1e18)
        yield r


def _inputs(name, n, rng):
    key, iv, opts = oracle.random_inputs(name, rng.randbytes, 4096)
    return key, iv, opts, np.frombuffer(rng.randbytes(n), dtype=np.uint8)


CASES = [("aes-128-ctr", 5 * GRAIN + 7), ("aes-128-ctr", 4 * GRAIN), ("aes-256-ecb", 3 * GRAIN + 16),
         ("aes-128-cbc", 6 * GRAIN - 16), ("aes-128-xts", 5 * GRAIN + 4096 + 20),
         ("camellia-128-ctr", 3 * GRAIN + 1), ("des-ede3-cbc", 2 * GRAIN + 8), ("seed-ecb", GRAIN - 16)]


@pytest.mark.parametrize("name,n", CASES)
@pytest.mark.parametrize("encrypt", [True, False])
def test_split_equals_one_engine(name, n, encrypt, rng):
    key, iv, opts, data = _inputs(name, n, rng)
    want = oracle.crypt(name, key, iv, data.tobytes(), encrypt, **opts)
    st = ciphergrid.SchedulerStats()
    f = ciphergrid.encrypt if encrypt else ciphergrid.decrypt
    got = f(data, name, key, iv, device=PAIR, stats=st, **opts)
    assert got.tobytes() == want
    assert sum(e.bytes for e in st.engines.values()) == n and not st.failures
    # in place (out= the input): every range's input kept until it is committed
    buf = data.copy()
    f(buf, name, key, iv, device=PAIR, out=buf, **opts)
    assert buf.tobytes() == want


def test_ranges_spread_over_the_engines(rng):
    if CPU is None:
        pytest.skip("one engine present (no OpenCL CPU device)")
    key, iv, _, data = _inputs("aes-128-ctr", 64 * GRAIN, rng)
    st = ciphergrid.SchedulerStats()
    ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=PAIR, stats=st)
    assert set(st.engines) == {"native", CPU}
    assert all(e.ranges >= 1 and e.bytes > 0 for e in st.engines.values()), st.engines
    assert abs(sum(st.share().values()) - 1) < 1e-9


def test_cbc_encryption_stays_serial_on_one_engine(rng):
    key, iv, _, data = _inputs("aes-128-cbc", 3 * GRAIN, rng)
    st = ciphergrid.SchedulerStats()
    got = ciphergrid.encrypt(data, "aes-128-cbc", key, iv, device=PAIR, stats=st)
    assert got.tobytes() == oracle.encrypt(data.tobytes(), "aes-128-cbc", key, iv)
    assert len(st.engines) == 1 and next(iter(st.engines.values())).ranges == 1


def test_all_on_this_machine(rng):
    """``all``: every GPU and one CPU engine (OpenSSL where it has the cipher, else the OpenCL
    CPU device: never both on the same cores)."""
    key, iv, _, data = _inputs("aes-128-ctr", 3 * GRAIN, rng)
    st = ciphergrid.SchedulerStats()
    got = ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device="all", stats=st)
    assert got.tobytes() == oracle.encrypt(data.tobytes(), "aes-128-ctr", key, iv)
    gpus = {d.spec for d in all_devices() if d.kind == "gpu" and d.runtime == "cuda"}
    assert set(st.engines) <= gpus | {"native"} and "native" in st.engines
    r = ciphergrid.route.route(ciphergrid.api._request("present-80-ctr", bytes(10), bytes(8), True,
                                                       None, None, None, False, None, True), "all", 1 << 20)
    members = {e.info.spec for e in r.engine.engines}
    assert "native" not in members and (CPU is None or CPU in members or members)


@pytest.mark.parametrize("victim", ["native", "cpu"])
@pytest.mark.parametrize("what", ["fail", "hang"])
def test_failed_or_hung_engine_costs_rework_not_bytes(victim, what, rng, monkeypatch, rt):
    """The fault switch: the victim fails (raises) or hangs on its first range (its share: the
    two engines are made to look equally fast, so that each starts with one); that range runs
    again on the other engine, the output is whole, one warning and the stats say so; a hang is
    noticed within HANG_FACTOR x the range's expected time (HANG_MIN_S at least; both made small
    here), long before it ends."""
    if CPU is None:
        pytest.skip("one engine present (no OpenCL CPU device)")
    spec = CPU if victim == "cpu" else victim
    name = "aes-128-ctr"
    key, iv, _, data = _inputs(name, 48 * GRAIN, rng)
    want = oracle.encrypt(data.tobytes(), name, key, iv)
    ciphergrid.encrypt(data, name, key, iv, device=PAIR)         # both engines measured
    native = next(v for k, v in rt.speeds.items() if k[0] == "native")
    rt.speeds.update({k: native for k in list(rt.speeds) if k[0] == CPU})
    monkeypatch.setenv("CIPHERGRID_FAULT", f"{spec}:{what}:0")
    st = ciphergrid.SchedulerStats()
    t0 = time.perf_counter()
    with pytest.warns(ciphergrid.EngineFailureWarning, match=spec):
        got = ciphergrid.encrypt(data, name, key, iv, device=PAIR, stats=st)
    took = time.perf_counter() - t0
    assert got.tobytes() == want
    assert st.engines[spec].failed and len(st.failures) == 1
    # at most one range run again: the largest is an engine's first share, (1 - TAIL) of the bytes
    assert 0 < st.rework_bytes <= (1 - units.TAIL) * data.nbytes
    if what == "hang":
        assert "hung" in st.failures[0] and took < sched_run.HANG_INJECTED_S


def test_watchdog_keeps_the_workers_error():
    """The last worker's failure sets the job's error and its thread ends while the watchdog
    waits: the watchdog reports that error, not its own safety net's "units not run" (CI saw
    the race under load on 2026-11-29)."""
    run = object.__new__(sched_run.Run)
    gone = threading.Thread(target=lambda: None)
    gone.start()
    gone.join()

    class Cv(threading.Condition):
        def wait(self, timeout=None):           # the worker's failure, during the wait
            run.error = ciphergrid.DeviceError("every engine failed: a; b")
            return True

    run.cv, run.done, run.n, run.error, run.owner = Cv(), 0, 8, None, {}
    run._watch([gone])
    assert str(run.error) == "every engine failed: a; b"


def test_every_engine_failing_raises(rng, monkeypatch):
    if CPU is None:
        pytest.skip(ONE_ENGINE)
    key, iv, _, data = _inputs("aes-128-ctr", 4 * GRAIN, rng)
    monkeypatch.setenv("CIPHERGRID_FAULT", ",".join(f"{s}:fail:0" for s in PAIR.split(",")))
    with pytest.raises(ciphergrid.DeviceError, match="every engine failed"):
        ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=PAIR)
    monkeypatch.setenv("CIPHERGRID_FAULT", "native:explode:1")
    with pytest.raises(ciphergrid.InvalidArgument, match="CIPHERGRID_FAULT"):
        ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=PAIR)


def test_context_over_several_engines(rng):
    key, iv, _, data = _inputs("aes-128-ctr", 5 * GRAIN + 3, rng)
    with ciphergrid.Cipher("aes-128-ctr", key, iv, device=PAIR) as c:
        ctx = c.encryptor()
        out = b"".join(ctx.update(data[a:a + 2 * GRAIN + 5]) for a in range(0, data.nbytes, 2 * GRAIN + 5))
        out += ctx.finalize()
    assert out == oracle.encrypt(data.tobytes(), "aes-128-ctr", key, iv)


def test_speeds_kept_for_the_next_process(rng, monkeypatch, tmp_path, rt):
    """A run's measured speeds go to the cache folder; a new process splits its first call by
    them (not by the defaults)."""
    if CPU is None:
        pytest.skip(ONE_ENGINE)
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path))
    rt.calibration["saved"] = 0.0
    key, iv, _, data = _inputs("aes-128-ctr", 8 * GRAIN, rng)
    ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=PAIR)
    assert (tmp_path / "scheduler-speeds.json").exists()    # (written after the first range)
    speeds.save(rt)                                         # (and as it is now)
    seen = dict(rt.speeds)
    fresh = Runtime("next process")
    eng = ciphergrid.route.engine("native")
    speed, measured = speeds.expected_speed(eng, "aes-128-ctr", True, fresh)
    assert measured and speed == seen[speeds.speed_key(eng, "aes-128-ctr", True)]


def test_bad_device_lists():
    with pytest.raises(ciphergrid.InvalidArgument, match="name each device once"):
        ciphergrid.encrypt(bytes(16), "aes-128-ctr", bytes(16), bytes(16), device="native,native")
    with pytest.raises(ciphergrid.DeviceNotFound):
        ciphergrid.Cipher("aes-128-ctr", bytes(16), bytes(16), device=f"native,{absent_spec('cuda')}")


def _cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "ciphergrid", *args], capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=120, **kw)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache folder of the test's own: no speeds measured by earlier runs."""
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path / "cache"))


def test_cli_file_over_several_engines(tmp_path, rng, own_cache):
    key, iv, _, data = _inputs("aes-128-ctr", 3 * (1 << 20) + 11, rng)
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data.tobytes())
    p = _cli("encrypt", "-c", "aes-128-ctr", "--key", key.hex(), "--iv", iv.hex(), "--in", str(src),
             "--out", str(dst), "--device", PAIR, "-v", "--quiet")
    assert p.returncode == 0, p.stderr.decode()
    assert dst.read_bytes() == oracle.encrypt(data.tobytes(), "aes-128-ctr", key, iv)
    assert f"on {PAIR}" in p.stderr.decode()
    # a pipe too (stdin to stdout)
    p = _cli("decrypt", "-c", "aes-128-ctr", "--key", key.hex(), "--iv", iv.hex(), "--device", PAIR,
             "--quiet", input=dst.read_bytes())
    assert p.returncode == 0 and p.stdout == data.tobytes(), p.stderr.decode()


def test_cli_interrupt_leaves_no_output(tmp_path, own_cache):
    """Ctrl-C while an engine hangs (the fault switch; not yet measured in that cache folder, so
    not declared hung for a minute): exit 130, no output file, nothing left."""
    if CPU is None:
        pytest.skip(ONE_ENGINE)
    (tmp_path / "run").mkdir()
    src, dst = tmp_path / "run" / "in", tmp_path / "run" / "out"
    src.write_bytes(os.urandom(8 << 20))
    spec = "native"   # (the engine that would do most of the work hangs: the run is still going)
    proc = subprocess.Popen([sys.executable, "-m", "ciphergrid", "encrypt", "-c", "aes-128-ctr",
                             "--key", "00" * 16, "--iv", "00" * 16, "--in", str(src), "--out", str(dst),
                             "--device", PAIR, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "CIPHERGRID_FAULT": f"{spec}:hang:0"})
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 130, err.decode()
    assert not dst.exists() and sorted(p.name for p in (tmp_path / "run").iterdir()) == ["in"]


def _aead_batch(name, count, rng):
    from cryptography.hazmat.primitives.ciphers import aead as pyca

    klen = ciphergrid.aeads.spec(name).aead.key_length(name)
    key = rng.randbytes(klen)
    msgs = [rng.randbytes(rng.randrange(0, 3 * GRAIN // 8)) for _ in range(count)]
    nonces = [i.to_bytes(12, "big") for i in range(count)]
    aads = [rng.randbytes(rng.randrange(0, 40)) for _ in range(count)]
    cls = pyca.AESGCM if name.endswith("gcm") else pyca.ChaCha20Poly1305
    want = [cls(key).encrypt(n, m, a) for n, m, a in zip(nonces, msgs, aads)]
    return key, msgs, nonces, aads, want


@pytest.mark.parametrize("name", ["aes-128-gcm", "chacha20-poly1305"])
def test_aead_batch_split_by_messages(name, rng):
    """A batch spread over the engines by whole messages: pyca's bytes; decryption checks each
    tag on the engine that ran it (one flipped tag fails exactly its message)."""
    key, msgs, nonces, aads, want = _aead_batch(name, 160, rng)
    r = ciphergrid.encrypt_batch(msgs, name, key=key, nonces=nonces, aad=aads, device=PAIR)
    assert r.messages == want
    bad = list(want)
    bad[41] = bad[41][:-1] + bytes([bad[41][-1] ^ 1])
    d = ciphergrid.decrypt_batch(bad, name, key=key, nonces=nonces, aad=aads, device=PAIR)
    assert d.failed == [41] and [m for i, m in enumerate(d.messages) if i != 41] == \
        [m for i, m in enumerate(msgs) if i != 41]


@pytest.mark.parametrize("victim", ["native", "cpu"])
def test_aead_batch_engine_failing(victim, rng, monkeypatch, rt):
    if CPU is None:
        pytest.skip("one engine present (no OpenCL CPU device)")
    spec = CPU if victim == "cpu" else victim
    name = "aes-128-gcm"
    key, msgs, nonces, aads, want = _aead_batch(name, 160, rng)
    ciphergrid.encrypt_batch(msgs, name, key=key, nonces=nonces, aad=aads, device=PAIR)
    native = next(v for k, v in rt.speeds.items() if k[0] == "native" and k[2] == name)
    rt.speeds.update({k: native for k in list(rt.speeds) if k[0] == CPU})
    monkeypatch.setenv("CIPHERGRID_FAULT", f"{spec}:fail:0")
    with pytest.warns(ciphergrid.EngineFailureWarning, match=spec):
        r = ciphergrid.encrypt_batch(msgs, name, key=key, nonces=nonces, aad=aads, device=PAIR)
    assert r.messages == want


# -- GPU-resident data over several GPUs (a host of two CUDA GPUs or more; the GPU suite) ----------
CUDA_GPUS = [d.spec for d in all_devices() if d.kind == "gpu" and d.runtime == "cuda"]
several_gpus = pytest.mark.skipif(len(CUDA_GPUS) < 2, reason="fewer than two CUDA GPUs present")
RESIDENT = [("aes-128-ctr", 9 * GRAIN + 5), ("aes-128-cbc", 8 * GRAIN), ("aes-128-xts", 7 * GRAIN + 4096 + 20),
            ("camellia-128-ecb", 16 * GRAIN)]


@several_gpus
@pytest.mark.parametrize("name,n", RESIDENT)
@pytest.mark.parametrize("encrypt", [True, False])
def test_resident_split_over_gpus(name, n, encrypt, rng, monkeypatch):
    """A CuPy array on the first GPU with ``device="all"``: its ranges run there and on every other
    GPU through peer copies (small ranges and pieces here, so that each GPU takes some: a range
    is four pieces, more than the ring of PEER_SLOTS buffers), the bytes equal the one
    reference, in place too."""
    import cupy

    monkeypatch.setattr(composite, "RESIDENT_GRAIN", GRAIN)
    monkeypatch.setattr(composite, "PEER_PIECE", GRAIN // 4)
    key, iv, opts, data = _inputs(name, n, rng)
    want = oracle.crypt(name, key, iv, data.tobytes(), encrypt, **opts)
    f = ciphergrid.encrypt if encrypt else ciphergrid.decrypt
    with cupy.cuda.Device(int(CUDA_GPUS[0].split(":")[1])):
        g = cupy.asarray(data)
    st = ciphergrid.SchedulerStats()
    got = f(g, name, key, iv, device="all", stats=st, **opts)
    assert got.device.id == g.device.id and cupy.asnumpy(got).tobytes() == want
    assert sum(e.bytes for e in st.engines.values()) == n and not st.failures
    if ciphergrid.registry.lookup(name).mode.parallel(encrypt):   # (CBC encryption: one GPU)
        assert set(st.engines) == set(CUDA_GPUS)
        assert sum(e.ranges > 0 for e in st.engines.values()) >= 2, st.engines
    f(g, name, key, iv, device="all", out=g, **opts)
    assert cupy.asnumpy(g).tobytes() == want


@several_gpus
@pytest.mark.parametrize("where", ["host", "resident"])
def test_gpu_failing_mid_job_costs_rework_not_bytes(where, rng, monkeypatch, rt):
    """The fault switch on the second GPU (it fails after its first range): host data over every
    engine, and a CuPy array on the first GPU over every GPU: whole, correct output."""
    import cupy

    monkeypatch.setattr(composite, "RESIDENT_GRAIN", GRAIN)
    monkeypatch.setattr(composite, "PEER_PIECE", GRAIN // 4)
    name = "aes-128-ctr"
    key, iv, _, data = _inputs(name, 64 * GRAIN, rng)
    want = oracle.encrypt(data.tobytes(), name, key, iv)
    monkeypatch.setenv("CIPHERGRID_FAULT", f"{CUDA_GPUS[1]}:fail:{GRAIN}")
    st = ciphergrid.SchedulerStats()
    with pytest.warns(ciphergrid.EngineFailureWarning, match=CUDA_GPUS[1]):
        if where == "host":
            got = ciphergrid.encrypt(data, name, key, iv, device="all", stats=st)
        else:
            with cupy.cuda.Device(int(CUDA_GPUS[0].split(":")[1])):
                got = cupy.asnumpy(ciphergrid.encrypt(cupy.asarray(data), name, key, iv,
                                                      device="all", stats=st))
    assert got.tobytes() == want
    assert st.engines[CUDA_GPUS[1]].failed and st.rework_bytes > 0
