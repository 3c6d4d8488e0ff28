"""One AEAD message whose data lie on the device (engines.device.DeviceEngine.aead_resident, the
path of ``ciphergrid.encrypt`` on GPU arrays): the kernels on the caller's buffers where they lie,
the layout's metadata kept on the device, the tag written after the text on the device, no
unverified plaintext left.  Runs on an OpenCL CPU device (PoCL) with OpenCL buffers as the
caller's arrays; the CuPy test at the end runs where a CUDA device is."""
import os

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

import ciphergrid
from ciphergrid.engines.device_aead import driver as aead_driver
from ciphergrid.route import engine
from conftest import break_downloads, cl_buffer as _buffer, cl_read as _read

pytest.importorskip("pyopencl")

PYCA = {"aes-128-gcm": (AESGCM, 16), "chacha20-poly1305": (ChaCha20Poly1305, 32)}


@pytest.fixture
def eng(cpu_device):
    return engine(cpu_device)


def _spy(monkeypatch, b) -> dict:
    """The backend's allocations (sizes), downloads and waits during a call."""
    seen = {"alloc": [], "download": 0, "finish": 0}
    alloc, download, finish = b.alloc, b.download, b.finish

    def spy_alloc(n):
        seen["alloc"].append(int(n))
        return alloc(n)

    def spy_download(*a, **kw):
        seen["download"] += 1
        return download(*a, **kw)

    def spy_finish(*a, **kw):
        seen["finish"] += 1
        return finish(*a, **kw)

    monkeypatch.setattr(b, "alloc", spy_alloc)
    monkeypatch.setattr(b, "download", spy_download)
    monkeypatch.setattr(b, "finish", spy_finish)
    return seen


@pytest.mark.parametrize("name,n", [("aes-128-gcm", 4096), ("aes-128-gcm", 1001),
                                    ("aes-128-gcm", 0), ("chacha20-poly1305", 4099)])
def test_resident_message_matches_pyca(eng, name, n):
    """Encryption writes ciphertext || tag into the caller's buffer (pyca's bytes), decryption
    gives the plaintext back; a wrong tag gives False and zeroes the output.  GCM on 4096 bytes
    reads the caller's buffers in place, on 1001 bytes (whole 16-byte blocks would read past the
    buffer) through a copy."""
    b = eng.backend
    cls, kl = PYCA[name]
    key, nonce, aad = os.urandom(kl), os.urandom(12), os.urandom(13)
    data = os.urandom(n)
    want = cls(key).encrypt(nonce, data, aad)
    src, out = _buffer(b, data, n), _buffer(b, b"", n + 16)
    assert eng.aead_resident(name, True, key, nonce, aad, 16, src, out, n) is True
    assert _read(b, out, n + 16) == want
    back = _buffer(b, os.urandom(max(n, 16)))
    assert eng.aead_resident(name, False, key, nonce, aad, 16, out, back, n) is True
    assert _read(b, back, n) == data
    assert eng.aead_resident(name, False, key, nonce, aad + b"!", 16, out, back, n) is False
    assert not any(_read(b, back, max(n, 16)))
    assert _read(b, src, n) == data   # (the input untouched)


def test_resident_gcm_short_tag(eng):
    """A GCM tag of 12 bytes: the first 12 of the full tag after the text, and it verifies."""
    b = eng.backend
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(2048)
    want = AESGCM(key).encrypt(nonce, data, None)
    src, out = _buffer(b, data), _buffer(b, b"", 2048 + 12)
    assert eng.aead_resident("aes-128-gcm", True, key, nonce, b"", 12, src, out, 2048)
    assert _read(b, out, 2048 + 12) == want[:2048 + 12]
    back = _buffer(b, b"", 2048)
    assert eng.aead_resident("aes-128-gcm", False, key, nonce, b"", 12, out, back, 2048)
    assert _read(b, back, 2048) == data


def test_resident_encryption_in_place_on_the_device(eng, monkeypatch):
    """A resident encryption allocates nothing of the text's size (the kernels read and write
    the caller's buffers) and downloads nothing (the tag is copied on the device); the second
    call of a layout uploads none of it again (the driver keeps it): fewer bytes allocated."""
    b = eng.backend
    n = 1 << 18
    for name, (cls, kl) in PYCA.items():
        key, nonce = os.urandom(kl), os.urandom(12)
        data = os.urandom(n)
        src, out = _buffer(b, data), _buffer(b, b"", n + 16)
        eng.aead_resident(name, True, key, nonce, b"", 16, src, out, n)   # (the layout kept)
        seen = _spy(monkeypatch, b)
        key, nonce = os.urandom(kl), os.urandom(12)   # (a fresh key: the layout is the key's
        assert eng.aead_resident(name, True, key, nonce, b"", 16, src, out, n)   # too)
        assert _read(b, out, n + 16) == cls(key).encrypt(nonce, data, None)
        assert max(seen["alloc"]) < n // 2, seen["alloc"]   # (key powers, tables: not texts)
        assert seen["download"] == 0
        monkeypatch.undo()


def test_gcm_key_stream_launched_before_h_powers(eng, cpu_device, monkeypatch):
    """A GCM encryption with a 12-byte nonce launches J0 and the key stream first, H's powers
    after them and before GHASH (which needs them); other nonces and decryptions keep H first."""
    from conftest import watch_launches

    b = eng.backend
    seen = watch_launches(cpu_device, monkeypatch)
    key, data = os.urandom(16), os.urandom(4096)
    for nonce in (os.urandom(12), os.urandom(16)):
        src, out = _buffer(b, data), _buffer(b, b"", 4096 + 16)
        seen.clear()
        assert eng.aead_resident("aes-128-gcm", True, key, nonce, b"", 16, src, out, 4096)
        assert _read(b, out, 4096 + 16) == AESGCM(key).encrypt(nonce, data, None)
        ctr = next(k for k in seen if k.startswith("gcm_ctr"))
        gh = next(k for k in seen if k.startswith("gcm_ghash"))
        if len(nonce) == 12:
            assert seen[:2] == ["gcm_j0", ctr] and seen.index("gcm_hpow") < seen.index(gh)
        else:
            assert seen[:3] == ["gcm_hkey", "gcm_hpow", "gcm_j0"]


def test_resident_layout_derived_once(eng, monkeypatch):
    """Resident calls of one layout derive its shape once (found by its offsets' values, the
    shapes compared as arrays forgotten); another length is another layout."""
    b = eng.backend
    drv = eng.aead_driver("chacha20-poly1305")
    derived = []
    derive = drv.derive_shape
    monkeypatch.setattr(drv, "derive_shape", lambda *a: derived.append(1) or derive(*a))
    monkeypatch.setattr(drv, "_small", {})
    monkeypatch.setattr(drv, "_shapes", [])
    for n in (3001, 3001, 3001, 3002):
        key, nonce, data = os.urandom(32), os.urandom(12), os.urandom(n)
        src, out = _buffer(b, data), _buffer(b, b"", n + 16)
        assert eng.aead_resident("chacha20-poly1305", True, key, nonce, b"", 16, src, out, n)
        assert _read(b, out, n + 16) == ChaCha20Poly1305(key).encrypt(nonce, data, None)
    assert len(derived) == 2


def test_resident_layouts_past_the_limit_still_run(eng, monkeypatch):
    """Past LAYOUTS_KEPT layouts a job uploads its layout with the rest: the same bytes."""
    monkeypatch.setattr(aead_driver, "LAYOUTS_KEPT", 0)
    b = eng.backend
    key, nonce = os.urandom(16), os.urandom(12)
    data = os.urandom(777)
    src, out = _buffer(b, data), _buffer(b, b"", 777 + 16)
    assert eng.aead_resident("aes-128-gcm", True, key, nonce, b"a", 16, src, out, 777)
    assert _read(b, out, 777 + 16) == AESGCM(key).encrypt(nonce, data, b"a")


def test_resident_failure_mid_way_zeroes_the_output(eng, monkeypatch):
    """A device error after the kernels of a decryption leaves no plaintext in the output."""
    b = eng.backend
    key, nonce = os.urandom(16), os.urandom(12)
    ct = AESGCM(key).encrypt(nonce, b"x" * 100, None)
    src, out = _buffer(b, ct), _buffer(b, b"\x07" * 100)
    break_downloads(monkeypatch, b)
    with pytest.raises(ciphergrid.DeviceError):
        eng.aead_resident("aes-128-gcm", False, key, nonce, b"", 16, src, out, 100)
    monkeypatch.undo()
    assert not any(_read(b, out, 100))


def test_route_puts_a_resident_message_on_the_datas_device(cpu_device):
    """aead.py chose the data's CUDA device itself before asking route, which ignored
    ``resident_device`` for AEADs; route takes it for both kinds now: auto, gpu, cuda and a list
    put a resident message on the data's device (PoCL's here: its plan goes through host
    copies), a device named alone stays."""
    from ciphergrid import aeads
    from ciphergrid.request import aead_request
    from ciphergrid.route import route

    req = aead_request(aeads.spec("aes-128-gcm"), nonce_len=12, tag_length=16, count=1)
    for asked in ("auto", "gpu", "cuda", f"native,{cpu_device}"):
        p = route(req, asked, 4096, path="resident", resident_device=cpu_device)
        assert (p.engine.info.spec, p.path) == (cpu_device, "array"), asked
    p = route(req, "native", 4096, path="resident", resident_device=cpu_device)
    assert p.engine.kind == "openssl"


@pytest.mark.gpu
def test_cupy_resident_message_on_a_stream():
    """ciphergrid.encrypt / decrypt of CuPy arrays with out= on a non-default stream: pyca's
    bytes, the tag after the text; a wrong tag raises and zeroes out=."""
    cupy = pytest.importorskip("cupy")
    if not any(d.runtime == "cuda" for d in ciphergrid.devices()):
        pytest.skip("no CUDA device present")
    for name, (cls, kl) in PYCA.items():
        for n in (1 << 20, 100003):
            key, nonce, aad = os.urandom(kl), os.urandom(12), os.urandom(7)
            host = os.urandom(n)
            with cupy.cuda.Stream(non_blocking=True) as s:
                x = cupy.asarray(np.frombuffer(host, dtype=np.uint8))
                y = cupy.empty(n + 16, dtype=cupy.uint8)
                assert ciphergrid.encrypt(x, name, key=key, nonce=nonce, aad=aad, out=y) is y
                z = cupy.empty(n, dtype=cupy.uint8)
                assert ciphergrid.decrypt(y, name, key=key, nonce=nonce, aad=aad, out=z) is z
                s.synchronize()
                assert cupy.asnumpy(y).tobytes() == cls(key).encrypt(nonce, host, aad)
                assert cupy.asnumpy(z).tobytes() == host
                y[0] ^= 1
                with pytest.raises(ciphergrid.InvalidTag):
                    ciphergrid.decrypt(y, name, key=key, nonce=nonce, aad=aad, out=z)
                assert not cupy.asnumpy(z).any()


@pytest.mark.gpu
def test_cupy_encryption_returns_while_the_stream_is_busy():
    """An encryption of CuPy arrays is queued behind the stream's work without waiting for it
    (no synchronisation in the call once its layout is kept); its output is right once the
    stream is done."""
    cupy = pytest.importorskip("cupy")
    if not any(d.runtime == "cuda" for d in ciphergrid.devices()):
        pytest.skip("no CUDA device present")
    import time

    spin = cupy.RawKernel(r'''extern "C" __global__ void spin(long long n) {
        long long t0 = clock64(); while (clock64() - t0 < n) { } }''', "spin")
    n = 1 << 20
    for name, (cls, kl) in PYCA.items():
        x = cupy.asarray(np.frombuffer(os.urandom(n), dtype=np.uint8))
        y = cupy.empty(n + 16, dtype=cupy.uint8)
        ciphergrid.encrypt(x, name, key=os.urandom(kl), nonce=os.urandom(12), out=y)  # (kept)
        key, nonce = os.urandom(kl), os.urandom(12)
        cupy.cuda.get_current_stream().synchronize()
        spin((1,), (1,), (np.int64(600_000_000),))   # (~0.3 s of one GPU thread)
        t0 = time.perf_counter()
        ciphergrid.encrypt(x, name, key=key, nonce=nonce, out=y)
        took = time.perf_counter() - t0
        cupy.cuda.get_current_stream().synchronize()
        assert took < 0.1
        assert cupy.asnumpy(y).tobytes() == cls(key).encrypt(nonce, cupy.asnumpy(x).tobytes(), None)
