"""The streaming pipeline (ciphergrid.transfer), its tuning cache and the CLI's file streaming.

Runs on the OpenCL CPU device (PoCL) with tiny chunks, so that many chunks run: every mode across
chunk boundaries (CTR partial blocks and counter carries, CBC chaining from the input, XTS stealing
and sector units straddling chunks), depths 1..4, every host-transfer path (direct, staged, and
CUDA's page-locking emulated on PoCL, with checks that no DMA touches unregistered memory), arrays,
files and pipes, the CLI (atomic output on failure and Ctrl-C, --quiet), the tuning cache and
``ciphergrid bench pipeline``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ciphergrid
from ciphergrid.request import make_request
from ciphergrid import registry, settings
from ciphergrid.transfer import autotune, chunking, driver, files, pinning, runs, staging
from ciphergrid.errors import DeviceNotFound, Error, InvalidArgument, InvalidLength

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ciphergrid.__file__)))
KiB = 1024


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(autouse=True)
def _isolated_tuning(tmp_path, monkeypatch):
    """No test reads or writes the user's tuning cache or inherits pipeline settings."""
    monkeypatch.setenv(settings.ENV_TUNING_CACHE, str(tmp_path / "tuning.json"))
    monkeypatch.delenv(settings.ENV_CHUNK, raising=False)
    monkeypatch.delenv(settings.ENV_DEPTH, raising=False)
    monkeypatch.setenv(settings.ENV_AUTOTUNE, "0")
    monkeypatch.setenv(settings.ENV_PIN_CACHE, "0")  # registrations end with each run (checked)


@pytest.fixture(scope="module")
def cl():
    """The engine of the OpenCL CPU device (PoCL)."""
    from ciphergrid.route import engine as get_engine

    try:
        eng = get_engine("cpu")
    except (DeviceNotFound, Error) as e:
        pytest.skip(f"no OpenCL CPU device: {e}")
    return eng


class RegisteringBackend:
    """The PoCL backend behaving like CUDA: ordinary host memory must be page-locked
    (register_host) before a copy may touch it.  Every copy is checked against the registered
    ranges; overlapping registrations fail as cudaHostRegister does; ``fail_at`` makes the n-th
    registration fail (the pipeline must fall back to staging)."""

    def __init__(self, inner, fail_at=()):
        self._b = inner
        self.info = inner.info
        self.lock = threading.Lock()
        self.regs: dict[int, int] = {}
        self.pinned_ranges: list[tuple[int, int]] = []
        self.calls = 0
        self.fail_at = set(fail_at)
        self.violations: list[str] = []
        self.registered_total = 0

    def __getattr__(self, name):
        return getattr(self._b, name)

    def host_transfer_mode(self):
        return "register"

    def pinned(self, nbytes):
        arr = self._b.pinned(nbytes)
        a = arr.ctypes.data
        self.pinned_ranges.append((a, a + max(nbytes, 1)))
        return arr

    def host_staging(self, nbytes):   # (CUDA's staging is page-locked: cuda.py)
        return self.pinned(nbytes)

    def host_is_pinned(self, arr):
        return self._pinned(arr.ctypes.data) and self._pinned(arr.ctypes.data + max(arr.nbytes, 1) - 1)

    def _pinned(self, ptr):
        return any(a <= ptr < z for a, z in self.pinned_ranges)

    def register_host(self, ptr, nbytes, readonly=False):
        page = pinning.PAGE
        with self.lock:
            self.calls += 1
            if self.calls in self.fail_at:
                return False
            lo, hi = ptr // page, (ptr + nbytes - 1) // page
            for p, n in self.regs.items():
                if not (hi < p // page or lo > (p + n - 1) // page):
                    return False  # cudaErrorHostMemoryAlreadyRegistered
            self.regs[ptr] = nbytes
            self.registered_total += nbytes
            return True

    def unregister_host(self, ptr):
        with self.lock:
            if ptr not in self.regs:
                self.violations.append(f"unregister of {ptr:#x}: not registered")
            self.regs.pop(ptr, None)

    def _check(self, host, what):
        a, n = host.ctypes.data, host.nbytes
        with self.lock:
            if any(p <= a and a + n <= p + m for p, m in self.regs.items()):
                return
            if self._pinned(a) and self._pinned(a + n - 1):
                return
            self.violations.append(f"{what} of {n} bytes at {a:#x}: not page-locked")

    def upload(self, buf, host, queue=None, **kw):
        if queue is not None:  # (the pipeline's queues; keys go up synchronously on the default)
            self._check(host, "upload")
        return self._b.upload(buf, host, queue, **kw)

    def download(self, host, buf, queue=None, **kw):
        if queue is not None:
            self._check(host, "download")
        return self._b.download(host, buf, queue, **kw)


def _pipe(backend, chunk, depth, transfer="auto", grain=None):
    p = driver.Pipeline(backend, chunk_bytes=chunk, depth=depth, transfer=transfer)
    p.pin_grain = grain
    return p


def _crypt(pipe, name, key, iv, data: bytes, encrypt=True, sector=None, start=None, out=None):
    """DeviceEngine.crypt's logic on a given Pipeline (XTS tail on the host after the run)."""
    from ciphergrid.program import KeyedProgram

    spec = registry.lookup(name)
    p = make_request(spec, key, iv, encrypt, None, sector, start)
    arr = np.frombuffer(data, np.uint8).copy()
    p.check_length(arr.nbytes)
    res = arr if out == "inplace" else np.empty_like(arr)
    lay = p.mode.layout(p, arr.nbytes)
    tail = arr[lay.tail_start:].tobytes() if lay is not None and lay.tail_unit >= 0 else None
    with KeyedProgram(pipe.b, p) as kp:
        pipe.crypt(kp, arr, res, lay)
    if tail is not None:
        res[lay.tail_start:] = np.frombuffer(p.mode.tail(p, lay, tail), np.uint8)
    return res.tobytes()


TRANSFERS = ["direct", "staged", "register"]


def _backend(cl, transfer, **kw):
    if transfer == "register":
        return RegisteringBackend(cl.backend, **kw), "auto"
    return cl.backend, transfer


# --------------------------------------------------------------------------- the copy strawman
@pytest.mark.parametrize("transfer", TRANSFERS)
@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_copy_pipeline_returns_the_input(cl, transfer, depth, rng):
    b, tr = _backend(cl, transfer)
    pipe = _pipe(b, 4 * KiB, depth, tr, grain=8 * KiB)
    for n in (1, 15, 4095, 4096, 4097, 3 * 4096 + 1, 65537):
        data = np.frombuffer(rng.data(n), np.uint8)
        out = pipe.copy(data)
        assert np.array_equal(out, data), (n, pipe.stats)
    if transfer == "register":
        assert not b.violations, b.violations[:3]
        assert not b.regs, "registrations leaked"
        assert b.registered_total > 0


def test_copy_module_function_and_chunk_count(cl, rng):
    data = np.frombuffer(rng.data(100_000), np.uint8)
    assert np.array_equal(runs.copy(cl.backend, data, chunk_bytes=4096, depth=3), data)
    pipe = _pipe(cl.backend, 4096, 3)
    pipe.copy(data)
    assert pipe.stats["chunks"] == -(-100_000 // 4096)


# --------------------------------------------------------------------------- modes across chunks
CTR_SIZES = [1, 15, 16, 17, 4095, 4096, 4097, 3 * 4096 + 1, 5 * 4096 + 9]


@pytest.mark.parametrize("name", ["aes-128-ctr", "aes-256-ctr"])
@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_ctr_across_chunks(cl, name, depth, rng, ref, diff):
    key = rng.key(name)
    pipe = _pipe(cl.backend, 4096, depth)
    for iv in (rng.iv(name), b"\xff" * 15 + b"\xf0", b"\x00" * 8 + b"\xff" * 8):  # counter carries
        for n in CTR_SIZES:
            pt = rng.data(n)
            got = _crypt(pipe, name, key, iv, pt)
            want = ref.encrypt(pt, name, key, iv)
            assert got == want, f"{name} n={n} depth={depth} iv={iv.hex()}: {diff(got, want)}"


@pytest.mark.parametrize("transfer", TRANSFERS)
@pytest.mark.parametrize("name", ["aes-128-ecb", "aes-192-ecb"])
def test_ecb_across_chunks(cl, name, transfer, rng, ref, diff):
    key = rng.key(name)
    b, tr = _backend(cl, transfer)
    for depth in (1, 3):
        pipe = _pipe(b, 4096, depth, tr, grain=4096)
        for n in (16, 4096 - 16, 4096, 4096 + 16, 7 * 4096 + 48):
            pt = rng.data(n)
            for enc in (True, False):
                got = _crypt(pipe, name, key, None, pt, enc)
                want = ref.crypt(enc, pt, name, key)
                assert got == want, f"{name} enc={enc} n={n}: {diff(got, want)}"
    if transfer == "register":
        assert not b.violations, b.violations[:3]
        assert not b.regs


@pytest.mark.parametrize("transfer", TRANSFERS)
@pytest.mark.parametrize("name", ["aes-128-cbc", "aes-256-cbc"])
def test_cbc_decrypt_chains_across_chunks(cl, name, transfer, rng, ref, diff):
    key, iv = rng.key(name), rng.iv(name)
    b, tr = _backend(cl, transfer)
    for depth in (1, 2, 4):
        pipe = _pipe(b, 4096, depth, tr, grain=4096)
        for n in (16, 4096, 4096 + 16, 5 * 4096 + 32):
            ct = rng.data(n)
            want = ref.decrypt(ct, name, key, iv)
            for out in (None, "inplace"):  # the chain comes from the INPUT, even in place
                got = _crypt(pipe, name, key, iv, ct, False, out=out)
                assert got == want, f"{name} n={n} depth={depth} {out}: {diff(got, want)}"
    if transfer == "register":
        assert not b.violations, b.violations[:3]
        assert not b.regs


@pytest.mark.parametrize("name", ["aes-128-xts", "aes-256-xts"])
def test_xts_one_unit_stealing_at_the_end(cl, name, rng, ref, diff):
    key, iv = rng.key(name), rng.iv(name)
    for depth in (1, 3):
        pipe = _pipe(cl.backend, 4096, depth)
        for n in (16, 17, 31, 4096 + 1, 3 * 4096 + 7, 3 * 4096 + 15, 9 * 4096, 40 * 1024 + 5):
            pt = rng.data(n)
            for enc in (True, False):
                got = _crypt(pipe, name, key, iv, pt, enc)
                want = ref.crypt(enc, pt, name, key, iv)
                assert got == want, f"{name} enc={enc} n={n} depth={depth}: {diff(got, want)}"


@pytest.mark.parametrize("transfer", TRANSFERS)
@pytest.mark.parametrize("sector,start", [(512, 2**40 + 7), (1040, 2**64 - 3), (16, 5),
                                          (20 * 1024, 2**100 - 1)])
def test_xts_sectors_across_chunks(cl, sector, start, transfer, rng, ref, diff):
    name = "aes-256-xts"
    key = rng.key(name)
    b, tr = _backend(cl, transfer)
    pipe = _pipe(b, 4096, 3, tr, grain=4096)
    sizes = [sector, 3 * sector, 7 * sector + 17, 11 * sector + 16 + 5]
    for n in sizes:
        if n > 200_000 or 0 < n % sector < 16:
            continue
        pt = rng.data(n)
        for enc in (True, False):
            got = _crypt(pipe, name, key, None, pt, enc, sector, start)
            want = ref.crypt(enc, pt, name, key, sector_size=sector, start_sector=start)
            assert got == want, f"sector={sector} n={n} enc={enc}: {diff(got, want)}"
    if transfer == "register":
        assert not b.violations, b.violations[:3]
        assert not b.regs


def test_engine_crypt_uses_pipeline_settings(cl, rng, ref, monkeypatch):
    """DeviceEngine.crypt (the API's path) honours the chunk/depth settings and out=."""
    from ciphergrid.engines.device import DeviceEngine

    monkeypatch.setenv(settings.ENV_CHUNK, "4Ki")
    monkeypatch.setenv(settings.ENV_DEPTH, "2")
    name = "aes-128-ctr"
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(50_001)
    got = ciphergrid.encrypt(pt, name, key, iv, device="cpu")
    assert got == ref.encrypt(pt, name, key, iv)
    eng = DeviceEngine(cl.device)
    p = make_request(registry.lookup(name), key, iv, True)
    arr = np.frombuffer(pt, np.uint8).copy()
    eng.crypt(p, arr, arr)  # in place
    assert arr.tobytes() == ref.encrypt(pt, name, key, iv)
    with pytest.raises(InvalidArgument):
        ciphergrid.encrypt(arr, name, key, iv, device="cpu", out=np.empty(5, np.uint8))
    with pytest.raises(InvalidArgument):  # overlapping without being the input
        ciphergrid.encrypt(arr[16:], name, key, iv, device="cpu", out=arr[:-16])


def test_registration_failure_falls_back_to_staging(cl, rng, ref, diff):
    name = "aes-128-ctr"
    key, iv = rng.key(name), rng.iv(name)
    b = RegisteringBackend(cl.backend, fail_at={3, 4, 5})
    pipe = _pipe(b, 4096, 3, grain=4096)
    pt = rng.data(20 * 4096 + 3)
    got = _crypt(pipe, name, key, iv, pt)
    assert got == ref.encrypt(pt, name, key, iv), diff(got, ref.encrypt(pt, name, key, iv))
    assert not b.violations, b.violations[:3]
    assert not b.regs


def test_prepinned_memory_is_not_registered(cl, rng):
    b = RegisteringBackend(cl.backend)
    pipe = _pipe(b, 4096, 3, grain=4096)
    src, dst = staging.host_buffer(b, 30_000), staging.host_buffer(b, 30_000)
    src[:] = np.frombuffer(rng.data(30_000), np.uint8)
    pipe.copy(src, dst)
    assert np.array_equal(src, dst)
    assert b.calls == 0 and not b.violations
    arr = np.frombuffer(rng.data(30_000), np.uint8).copy()
    with pinning.pinned(b, arr):  # locked once, for many runs
        assert len(b.regs) >= 1
        for _ in range(2):
            pipe.copy(arr, dst)
        assert np.array_equal(arr, dst)
    assert not b.regs and not b.violations


def test_worker_errors_propagate_and_release(cl, rng):
    """An exception in a finish step ends the run with that exception and leaks nothing."""
    b = RegisteringBackend(cl.backend)
    pipe = _pipe(b, 4096, 3, grain=4096)
    data = np.frombuffer(rng.data(40_000), np.uint8)
    calls = {"n": 0}
    real = pipe._run

    def run(job, produce, finish, **kw):
        def bad_finish(ch):
            calls["n"] += 1
            if calls["n"] == 4:
                raise RuntimeError("injected")
            finish(ch)
        return real(job, produce, bad_finish, **kw)

    pipe._run = run
    with pytest.raises(RuntimeError, match="injected"):
        pipe.copy(data)
    assert not b.regs and not b.violations
    pipe._run = real
    assert np.array_equal(pipe.copy(data), data)  # the pipeline is still usable


# --------------------------------------------------------------------------- streams
def _stream(cl, job_name, data: bytes, *, key=None, iv=None, encrypt=True, sector=None, start=None,
            pipe_in=False, pipe_out=False, tmp_path=None, chunk=4096, depth=3, transfer="auto"):
    from ciphergrid.program import KeyedProgram

    b, transfer = _backend(cl, transfer)
    pipe = _pipe(b, chunk, depth, transfer)
    src_path, dst_path = tmp_path / "s.in", tmp_path / "s.out"
    threads = []
    if pipe_in:
        r, w = os.pipe()

        def feed():
            with os.fdopen(w, "wb") as f:
                for i in range(0, len(data), 777):
                    f.write(data[i: i + 777])
        threads.append(threading.Thread(target=feed, daemon=True))
        src = os.fdopen(r, "rb")
    else:
        src_path.write_bytes(data)
        src = open(src_path, "rb")
    sink = bytearray()
    if pipe_out:
        r2, w2 = os.pipe()

        def drain():
            with os.fdopen(r2, "rb") as f:
                while True:
                    b = f.read(5000)
                    if not b:
                        return
                    sink.extend(b)
        threads.append(threading.Thread(target=drain, daemon=True))
        dst = os.fdopen(w2, "wb")
    else:
        dst = open(dst_path, "wb")
    for t in threads:
        t.start()
    try:
        if job_name == "copy":
            n = pipe.stream(driver.CopyJob(b), src, dst)
        else:
            p = make_request(registry.lookup(job_name), key, iv, encrypt, None, sector, start)
            with KeyedProgram(b, p) as kp:
                n = pipe.stream(driver.CipherJob(kp), src, dst)
    finally:
        src.close()
        dst.close()
        for t in threads:
            t.join(10)
    out = bytes(sink) if pipe_out else dst_path.read_bytes()
    assert n == len(out)
    if isinstance(b, RegisteringBackend):
        assert not b.violations, b.violations
        assert not b.regs  # whatever was locked for the run is unlocked after it
        if os.environ.get("CIPHERGRID_MAPPED_LOCK", "none") != "none":
            assert b.registered_total > 0
    return out


@pytest.mark.parametrize("pipes,transfer,mapped,lock", [
    ((False, False), "auto", "1", "none"), ((False, False), "staged", "1", "none"),
    ((False, False), "auto", "0", "none"), ((True, True), "auto", "1", "none"),
    ((True, False), "staged", "1", "none"), ((False, False), "register", "1", "none"),
    ((False, False), "register", "1", "both"), ((False, False), "register", "1", "in"),
    ((False, False), "register", "1", "out")],
    ids=["files", "files-staged", "files-pwrite", "pipes", "pipe-to-file", "files-mapped-copied",
         "files-mapped-locked", "files-mapped-input-locked", "files-mapped-output-locked"])
def test_streams_every_streamable_mode(cl, pipes, transfer, mapped, lock, rng, ref, diff, tmp_path,
                                       monkeypatch):
    pin, pout = pipes
    monkeypatch.setenv("CIPHERGRID_STREAM_MMAP", mapped)
    monkeypatch.setenv("CIPHERGRID_MAPPED_LOCK", lock)
    kw = dict(pipe_in=pin, pipe_out=pout, tmp_path=tmp_path, transfer=transfer)
    data = rng.data(9 * 4096 + 7)
    assert _stream(cl, "copy", data, **kw) == data
    name = "aes-128-ctr"
    key, iv = rng.key(name), rng.iv(name)
    got = _stream(cl, name, data, key=key, iv=iv, **kw)
    assert got == ref.encrypt(data, name, key, iv), diff(got, ref.encrypt(data, name, key, iv))
    whole = data[: len(data) // 16 * 16]
    name = "aes-256-ecb"
    key = rng.key(name)
    assert _stream(cl, name, whole, key=key, **kw) == ref.encrypt(whole, name, key)
    name = "aes-192-cbc"
    key, iv = rng.key(name), rng.iv(name)
    assert _stream(cl, name, whole, key=key, iv=iv, encrypt=False, **kw) == ref.decrypt(whole, name, key, iv)
    name = "aes-128-xts"
    key = rng.key(name)
    for sector, n in ((512, 9 * 512 + 40), (1040, 13 * 1040), (4096, 4096 * 2 + 16 + 3)):
        d = rng.data(n)
        for enc in (True, False):
            got = _stream(cl, name, d, key=key, encrypt=enc, sector=sector, start=99, **kw)
            want = ref.crypt(enc, d, name, key, sector_size=sector, start_sector=99)
            assert got == want, f"xts sector={sector} n={n} enc={enc}: {diff(got, want)}"


def test_stream_errors(cl, rng, tmp_path):
    with pytest.raises(InvalidLength):  # ECB: trailing bytes at the very end
        _stream(cl, "aes-128-ecb", rng.data(5 * 4096 + 3), key=rng.key("aes-128-ecb"),
                tmp_path=tmp_path)
    with pytest.raises(InvalidLength):  # XTS: a last unit shorter than one block
        _stream(cl, "aes-128-xts", rng.data(3 * 512 + 5), key=rng.key("aes-128-xts"), sector=512,
                tmp_path=tmp_path, pipe_in=True)
    from ciphergrid.program import KeyedProgram

    p = make_request(registry.lookup("aes-128-xts"), rng.key("aes-128-xts"), rng.iv("aes-128-xts"), True)
    assert not p.mode.streams(p)  # one data unit: stealing needs its end
    with KeyedProgram(cl.backend, p) as kp, pytest.raises(InvalidArgument):
        with runs.pipeline_for(cl.backend) as pipe:
            pipe.stream(driver.CipherJob(kp), os.open(os.devnull, os.O_RDONLY), 1)
    # CBC streams both ways: decryption reads the block before each chunk, serial encryption
    # carries the chaining value on the device (or through OpenSSL's pieces)
    for enc in (True, False):
        r = make_request(registry.lookup("aes-128-cbc"), bytes(16), bytes(16), enc)
        assert r.mode.streams(r)


# --------------------------------------------------------------------------- tuning
def test_tuning_cache_written_honoured_and_overridden(cl, monkeypatch, tmp_path):
    info = cl.device
    s = chunking.resolve(info)
    assert s.source == "default" and (s.chunk_bytes, s.depth) == chunking.DEFAULTS[info.kind]
    res = autotune.autotune(cl.backend, quick=True, chunks=[4 * KiB, 16 * KiB], depths=[2, 3],
                          total_bytes=128 * KiB)
    path = tmp_path / "tuning.json"
    assert res["path"] == str(path) and path.exists()
    doc = json.loads(path.read_text())
    entry = doc["devices"][chunking.device_key(info)]
    assert (entry["chunk_bytes"], entry["depth"]) == (res["chunk_bytes"], res["depth"])
    assert len(entry["grid"]) == 4
    # honoured
    s = chunking.resolve(info)
    assert (s.chunk_bytes, s.depth, s.source) == (res["chunk_bytes"], res["depth"], "cache")
    assert driver.Pipeline(cl.backend).chunk_bytes == res["chunk_bytes"]
    # a hand-edited entry is honoured too
    entry["chunk_bytes"], entry["depth"] = 12 * KiB, 5
    path.write_text(json.dumps(doc))
    p = driver.Pipeline(cl.backend)
    assert (p.chunk_bytes, p.depth, p.settings_source) == (12 * KiB, 5, "cache")
    # the environment overrides the cache, arguments override both
    monkeypatch.setenv(settings.ENV_CHUNK, "8Ki")
    s = chunking.resolve(info)
    assert (s.chunk_bytes, s.depth, s.source) == (8 * KiB, 5, "environment+cache")
    monkeypatch.setenv(settings.ENV_DEPTH, "2")
    assert chunking.resolve(info).source == "environment"
    s = chunking.resolve(info, chunk_bytes="64Ki", depth=4)
    assert (s.chunk_bytes, s.depth, s.source) == (64 * KiB, 4, "argument")
    # bad values are one-line errors
    monkeypatch.setenv(settings.ENV_DEPTH, "many")
    with pytest.raises(InvalidArgument):
        chunking.resolve(info)
    with pytest.raises(InvalidArgument):
        chunking.resolve(info, chunk_bytes="12 parsecs", depth=2)
    with pytest.raises(InvalidArgument):
        chunking.resolve(info, chunk_bytes=100, depth=2)
    # a corrupt cache is ignored, not fatal
    monkeypatch.delenv(settings.ENV_CHUNK)
    monkeypatch.delenv(settings.ENV_DEPTH)
    path.write_text("{not json")
    assert chunking.resolve(info).source == "default"


def test_settings_objects_override_the_environment(cl, rng, ref, tmp_path, monkeypatch):
    """A TransferSettings handed to the transfer layer is used as it is: the environment (even a
    malformed variable) does not matter to that caller."""
    import dataclasses

    from ciphergrid.program import KeyedProgram

    monkeypatch.setenv(settings.ENV_CHUNK, "8Ki")
    monkeypatch.setenv(settings.ENV_DEPTH, "2")
    monkeypatch.setenv(settings.ENV_HOST_THREADS, "3")
    opts = dataclasses.replace(settings.TransferSettings(), chunk_bytes=16 * KiB, depth=3,
                               host_threads=2, tuning_cache=str(tmp_path / "mine.json"),
                               autotune=False, stream_mmap="0")
    p = driver.Pipeline(cl.backend, settings=opts)
    assert (p.chunk_bytes, p.depth, p.threads, p.settings_source) == (16 * KiB, 3, 2, "environment")
    assert driver.Pipeline(cl.backend).chunk_bytes == 8 * KiB  # None: the environment's
    monkeypatch.setenv(settings.ENV_DEPTH, "many")
    with pytest.raises(InvalidArgument):
        driver.Pipeline(cl.backend)
    with runs.pipeline_for(cl.backend, settings=opts) as pipe:
        assert pipe.settings is opts and (pipe.chunk_bytes, pipe.depth) == (16 * KiB, 3)
    data = np.frombuffer(rng.data(100_000), np.uint8)
    assert np.array_equal(runs.copy(cl.backend, data, settings=opts), data)
    name = "aes-128-ctr"
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(70_000 + 5)
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(pt)
    req = make_request(registry.lookup(name), key, iv, True)
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        assert runs.stream_crypt(cl.backend, req, fi, fo, settings=opts) == len(pt)
    assert dst.read_bytes() == ref.encrypt(pt, name, key, iv)
    res = autotune.autotune(cl.backend, quick=True, chunks=[4 * KiB], depths=[2],
                            total_bytes=32 * KiB, settings=opts)
    assert res["path"] == str(tmp_path / "mine.json")
    assert chunking.cached(cl.device, opts)["chunk_bytes"] == 4 * KiB
    assert chunking.resolve(cl.device, settings=dataclasses.replace(opts, depth=None)).source == \
        "environment+cache"
    with KeyedProgram(cl.backend, req) as kp:
        pipe = driver.Pipeline(cl.backend, settings=dataclasses.replace(opts, stream_mmap="1"))
        with open(src, "rb") as fi, open(dst, "w+b") as fo:
            pipe.stream(driver.CipherJob(kp), fi, fo)
        pipe.close()
    assert dst.read_bytes() == ref.encrypt(pt, name, key, iv)


# --------------------------------------------------------------------------- the CLI
def cli(*args, input=None, cwd=None, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "ciphergrid", *map(str, args)], input=input,
                          capture_output=True, env=env, cwd=cwd, timeout=300)


def test_cli_streams_files_larger_than_a_chunk(cl, rng, ref, tmp_path):
    name = "aes-128-ctr"
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(300_000 + 5)
    src, enc, back = tmp_path / "pt", tmp_path / "ct", tmp_path / "back"
    src.write_bytes(pt)
    (tmp_path / "key").write_bytes(key)  # (a key on the command line is warned about)
    common = ["--cipher", name, "--key-file", tmp_path / "key", "--iv", iv.hex(), "--device", "cpu",
              "--chunk-size", "16Ki", "--depth", "3"]
    p = cli("encrypt", *common, "--in", src, "--out", enc, cwd=tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr == b""  # not a terminal: no progress bar
    assert enc.read_bytes() == ref.encrypt(pt, name, key, iv)
    p = cli("decrypt", *common, "--in", enc, "--out", back, "--quiet", cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == b"" and p.stdout == b""
    assert back.read_bytes() == pt
    # XTS sectors through stdin -> stdout
    name = "aes-256-xts"
    key = rng.key(name)
    pt = rng.data(40 * 512 + 100)
    (tmp_path / "key").write_bytes(key)
    p = cli("encrypt", "--cipher", name, "--key-file", tmp_path / "key", "--sector-size", 512,
            "--start-sector", 7, "--device", "cpu", "--chunk-size", "4Ki", "-q", input=pt)
    assert p.returncode == 0 and p.stderr == b"", p.stderr.decode()
    assert p.stdout == ref.encrypt(pt, name, key, sector_size=512, start_sector=7)
    assert sorted(os.listdir(tmp_path)) == ["back", "ct", "key", "pt"]


def test_cli_failing_run_leaves_no_output(cl, rng, tmp_path):
    name = "aes-128-ecb"
    key = rng.key(name)
    src, out = tmp_path / "pt", tmp_path / "ct"
    src.write_bytes(rng.data(200_000 + 3))  # ECB without padding: the error comes at the end
    p = cli("encrypt", "--cipher", name, "--key", key.hex(), "--device", "cpu", "--chunk-size", "16Ki",
            "--in", src, "--out", out, cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.decode().split("\n")[-2].startswith("ciphergrid: error:")  # after the --key warning
    assert sorted(os.listdir(tmp_path)) == ["pt"]
    out.write_bytes(b"keep me")  # an existing file stays untouched
    p = cli("encrypt", "--cipher", name, "--key", key.hex(), "--device", "cpu", "--chunk-size", "16Ki",
            "--in", src, "--out", out, cwd=tmp_path)
    assert p.returncode == 2 and out.read_bytes() == b"keep me"
    assert sorted(os.listdir(tmp_path)) == ["ct", "pt"]
    p = cli("encrypt", "--cipher", name, "--key", key.hex(), "--chunk-size", "lots", "--in", src,
            "--out", tmp_path / "x", cwd=tmp_path)
    assert p.returncode == 2 and b"chunk" in p.stderr
    assert sorted(os.listdir(tmp_path)) == ["ct", "pt"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_cli_interrupted_run_leaves_no_output(cl, rng, tmp_path):
    """Ctrl-C while a stream is in flight (stdin fed slowly): exit 130, no output, no temp file."""
    name = "aes-128-ctr"
    key, iv = rng.key(name), rng.iv(name)
    out = tmp_path / "ct"
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen([sys.executable, "-m", "ciphergrid", "encrypt", "--cipher", name,
                             "--key", key.hex(), "--iv", iv.hex(), "--device", "cpu",
                             "--chunk-size", "16Ki", "--out", str(out), "-v"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        proc.stdin.write(rng.data(100_000))  # several chunks, then the input stalls
        proc.stdin.flush()
        line = proc.stderr.readline()  # -v: the device is chosen, the stream starts
        while line.startswith(b"ciphergrid: warning:"):
            line = proc.stderr.readline()
        assert b" on " in line, line
        time.sleep(1.0)  # let the pipeline take the data in and block on the stalled input
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert rc != 0 and rc == 130, (rc, err)
    assert "interrupted" in err
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- the bench suite
def test_bench_pipeline_quick(cl, tmp_path, capsys):
    from ciphergrid import cli as cg_cli
    from ciphergrid.bench import records

    path = tmp_path / "bp.json"
    code = cg_cli.main(["bench", "pipeline", "--quick", "--device", cl.device.spec,
                        "--sizes", "64Ki,256Ki", "--cipher", "aes-128-ctr", "--chunk-size", "32Ki",
                        "--depth", "3", "--json", str(path)])
    out = capsys.readouterr().out
    assert code == 0, out
    res = records.load(path)
    rows = {(r.cipher, r.size): r for r in res.records}
    for c in ("aes-128-ctr", "copy", "bus-h2d", "bus-d2h", "bus-duplex"):
        for s in (64 * KiB, 256 * KiB):
            r = rows[(c, s)]
            assert r.status == "ok" and r.kind == "e2e" and r.gbps > 0, (c, s, r.error)
    assert rows[("aes-128-ctr", 256 * KiB)].verification["status"] == "passed"
    assert "host_cpu_s_per_gb" in rows[("copy", 64 * KiB)].resources
    summary = res.run["options"]["pipeline"][0]
    assert summary["chunk_bytes"] == 32 * KiB and summary["depth"] == 3
    assert summary["series"]["copy"]["plateau_gbps"] > 0
    assert "plateau" in out and "goals:" in out


def _page_apart(n, k):
    """k views of n bytes of one buffer, pages apart: registrations of separate small arrays
    could share a heap page and one of them would be refused (as CUDA does)."""
    page = pinning.PAGE
    step = -(-n // page) * page + 2 * page
    buf = np.empty(k * step + page, np.uint8)
    off = page - buf.ctypes.data % page
    return [buf[off + i * step: off + i * step + n] for i in range(k)]


def test_registration_cache_keeps_owners_locked_until_freed(cl, rng, monkeypatch):
    import gc

    monkeypatch.setenv(settings.ENV_PIN_CACHE, "1Gi")
    pinning.pins_of(cl.backend).clear()
    b = RegisteringBackend(cl.backend)
    pipe = _pipe(b, 16 * KiB, 3, grain=32 * KiB)
    src, dst = _page_apart(300_000, 2)
    src[:] = np.frombuffer(rng.data(300_000), np.uint8)
    pipe.copy(src, dst)
    assert np.array_equal(src, dst)
    first = b.calls
    assert first > 0 and b.regs and not b.violations  # kept locked after the run
    pipe.copy(src, dst)
    pipe.copy(src[100:140_000], dst[100:140_000])  # views of the same owners: nothing new
    assert b.calls == first and np.array_equal(src, dst)
    locked = dict(b.regs)
    del src, dst
    gc.collect()  # the owner buffer is freed: unregistered just before
    assert not b.regs, f"freed arrays still registered: {locked}"
    # the limit: only the most recently used stay locked
    monkeypatch.setenv(settings.ENV_PIN_CACHE, "1Mi")
    # separate owners, each its own mapping (glibc maps allocations over 32 MiB on their own)
    arrays = [np.empty(34 << 20, np.uint8)[2 * pinning.PAGE:][:300_000] for _ in range(8)]
    for a, o in zip(arrays[::2], arrays[1::2]):
        a[:] = np.frombuffer(rng.data(300_000), np.uint8)
        pipe.copy(a, o)
        assert np.array_equal(a, o)
    assert 0 < sum(b.regs.values()) <= 1 << 20
    pinning.pins_of(cl.backend).clear()
    assert not b.regs and not b.violations


def test_aead_batch_copies_stay_inside_registrations(cl, rng, monkeypatch):
    """An AEAD batch in buffers that the pipeline page-locked in pieces (its grain), kept in the
    registration cache: every copy of the AEAD's jobs stays inside one registration (CUDA
    refuses a DMA across two: cudaErrorInvalidValue), in slices and whole, and the texts and
    tags are those of the same batch in fresh memory."""
    from ciphergrid import aeads
    from ciphergrid.aeads.base import make_batch
    from ciphergrid.engines import device_aead
    from ciphergrid.transfer import batches

    monkeypatch.setenv(settings.ENV_PIN_CACHE, "1Gi")
    pinning.pins_of(cl.backend).clear()
    b = RegisteringBackend(cl.backend)
    n = 300_000
    src, dst = _page_apart(n, 2)
    src[:] = np.frombuffer(rng.data(n), np.uint8)
    _pipe(b, 16 * KiB, 3, grain=32 * KiB).copy(src, dst)
    assert len(b.regs) > 4 and not b.violations
    lens = [5000, 1, 40_000, 17, 70_001, 0, 30_000, 16_384, 60_000, 3]
    lens.append(n - sum(lens))
    off = np.concatenate([[0], np.cumsum(lens)])
    name = "aes-128-gcm"
    drv = device_aead.build(b, aeads.lookup(name), name)
    drv.piece_bytes, drv.slice_bytes = 100_000, 30_000
    args = ([bytes(16)] * len(lens), [rng.data(12) for _ in lens], [b""] * len(lens))
    fresh = make_batch(name, True, 16, *args, [src[off[i]:off[i + 1]].tobytes() for i in range(len(lens))])
    want = device_aead.build(cl.backend, aeads.lookup(name), name).run(fresh)
    batch = make_batch(name, True, 16, *args, [b""] * len(lens))
    batch.src, batch.dst, batch.off = src, dst, off
    tags = batches.run(b, drv, batch, depth=2)
    assert not b.violations, b.violations[:3]
    assert tags.tobytes() == want.tobytes() and dst.tobytes() == fresh.dst.tobytes()
    dst[:] = 0
    assert drv.run(batch).tobytes() == want.tobytes()   # (one job, whole)
    assert not b.violations and dst.tobytes() == fresh.dst.tobytes()
    pinning.pins_of(cl.backend).clear()


def test_prefault_reads_only_and_sizes_the_file(monkeypatch):
    """files.prefault_output on a tmpfs file: the file is sized (posix_fallocate) and its pages
    faulted in by threads that only read, so bytes written meanwhile through another mapping (as
    the stream does) survive; None for outputs it must not touch (small, not empty, O_APPEND,
    not on a tmpfs, turned off)."""
    import mmap
    import tempfile

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    fd0 = os.open("/dev/shm", os.O_RDONLY)
    magic = files.fs_magic(fd0)
    os.close(fd0)
    if magic != files.TMPFS_MAGIC:
        pytest.skip("/dev/shm is not a tmpfs: the prefault is not exercised")
    monkeypatch.setenv("CIPHERGRID_PREFAULT", "1Mi")
    monkeypatch.setattr(files, "PREFAULT_SLICE", 1 << 20)
    size = 48 << 20
    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        path = os.path.join(d, "out")
        with open(path, "w+b") as f:
            pf = files.prefault_output(f, size, threads=4)
            assert isinstance(pf, files.Prefault)
            assert os.fstat(f.fileno()).st_size == size
            m = mmap.mmap(f.fileno(), size)
            a = np.frombuffer(m, np.uint8)
            for k in range(0, size, 1 << 20):  # written while the threads run, front to back
                a[k: k + (1 << 20)] = (k >> 20) % 251 + 1
            pf.close()
            want = np.repeat(np.arange(size >> 20, dtype=np.uint64) % 251 + 1, 1 << 20).astype(np.uint8)
            assert np.array_equal(a, want)
            del a
            m.close()
            pf.close()  # twice: harmless
        with open(path, "r+b") as f:  # not empty
            assert files.prefault_output(f, size) is None
        with open(os.path.join(d, "small"), "w+b") as f:
            assert files.prefault_output(f, 1 << 19) is None
        with open(os.path.join(d, "app"), "a+b") as f:
            assert files.prefault_output(f, size) is None
        monkeypatch.setenv("CIPHERGRID_PREFAULT", "0")
        with open(os.path.join(d, "off"), "w+b") as f:
            assert files.prefault_output(f, size) is None
            assert os.fstat(f.fileno()).st_size == 0


@pytest.mark.parametrize("name", ["hight-ctr", "misty1-cbc", "present-80-ctr"])
def test_bench_pipeline_checks_windows_where_openssl_lacks_the_cipher(name, rng):
    """Without OpenSSL's cipher the pipeline's gate runs the Python model on windows (first, chunk
    seams, middle, last), each from its own block's state; a wrong byte in one is found."""
    from ciphergrid import registry
    from ciphergrid.bench.pipeline import _check
    from ciphergrid.request import make_request
    from ciphergrid.testing import oracle

    spec = registry.lookup(name)
    key, iv = rng.key(name), rng.randbytes(spec.iv_len)
    data = np.frombuffer(rng.data(200 * KiB), np.uint8)
    good = np.frombuffer(oracle.crypt(spec, key, iv, data.tobytes(), False), np.uint8).copy()
    req = make_request(spec, key, iv, False, None, None, None)
    ref = np.empty_like(good)
    bad, what = _check(spec, req, key, iv, data, good, False, None, 64 * KiB, ref)
    assert bad is None and "windows" in what and "reference_ecb" in what
    for at in (0, 64 * KiB + 3, 100 * KiB + 5, data.nbytes - 1):  # first, a seam, middle, last
        wrong = good.copy()
        wrong[at] ^= 1
        assert _check(spec, req, key, iv, data, wrong, False, None, 64 * KiB, ref)[0] == at
