"""Sealed messages whose data lie on the device (formats/resident.py over
engines/device_aead/rows.py): the whole message -- whole chunks and the shorter final one -- as
ONE resident AES-GCM job, the sealed side moved by 2-D copies on the device, the tags put in
their places there, nothing released unless every tag verifies.  Runs on an OpenCL CPU device
(PoCL) with OpenCL buffers as the caller's arrays, against the host path's bytes; the CuPy tests
at the end (the public ``ciphergrid.cobblestone`` one-shots) run where a CUDA device is."""
import os

import numpy as np
import pytest

import ciphergrid
from ciphergrid import cobblestone
from ciphergrid.engines.device_aead import rows
from ciphergrid.formats import cobblestone as cs
from ciphergrid.route import engine
from conftest import break_downloads, cl_buffer as _buffer, cl_read as _read

pytest.importorskip("pyopencl")

CHUNK, HEADER = cs.CHUNK, cs.HEADER


@pytest.fixture
def eng(cpu_device):
    return engine(cpu_device)


def _sealed_on(eng, data: bytes, key: bytes, salt: bytes, aes256: bool = False):
    """``data`` sealed on the device from an OpenCL buffer into another (the header from the
    host, as formats/resident.py puts it): the buffer and the derived key and base nonce."""
    b = eng.backend
    sch = cs.scheme(aes256)
    k, base, commitment = cs.derive(sch, key, salt, b"ctx")
    n = len(data)
    out = _buffer(b, salt + commitment, cs.sealed_length(n))
    rows.seal_rows(eng, sch.aead, k, cs.nonces(base, 0, n // CHUNK + 1), _buffer(b, data, n), n,
                   out, HEADER, CHUNK, cs.TAG)
    return out, k, base


@pytest.mark.parametrize("n,aes256", [(0, False), (5, False), (CHUNK, False),
                                      (3 * CHUNK + 100, False), (2 * CHUNK + 16, True)])
def test_resident_sealed_message_matches_the_host_path(eng, n, aes256):
    """Sealing on the device gives the host path's bytes (pyca's); opening gives the message
    back and all chunks verified."""
    b = eng.backend
    key, salt, data = os.urandom(32 if aes256 else 16), os.urandom(24), os.urandom(n)
    want = cs.encrypt(data, key, b"ctx", aes256=aes256, salt=salt, device="native")
    out, k, base = _sealed_on(eng, data, key, salt, aes256)
    assert _read(b, out, len(want)) == want
    back = _buffer(b, b"", n)
    ok = rows.open_rows(eng, cs.scheme(aes256).aead, k, cs.nonces(base, 0, n // CHUNK + 1), out,
                        HEADER, n, back, CHUNK, cs.TAG)
    assert ok.all() and _read(b, back, n) == data


@pytest.mark.parametrize("where", ["first text", "last tag", "final chunk"])
def test_resident_open_releases_nothing_unless_every_tag_verifies(eng, where):
    """One altered byte anywhere: the mask names its chunk and the whole output is zero (the
    chunks that verified too)."""
    b = eng.backend
    n = 2 * CHUNK + 300
    key, salt, data = os.urandom(16), os.urandom(24), os.urandom(n)
    sealed = bytearray(cs.encrypt(data, key, b"ctx", salt=salt, device="native"))
    at, bad = {"first text": (HEADER + 7, 0), "last tag": (HEADER + 2 * (CHUNK + 16) - 1, 1),
               "final chunk": (len(sealed) - 20, 2)}[where]
    sealed[at] ^= 1
    k, base, _ = cs.derive(cs.COBBLESTONE_128, key, salt, b"ctx")
    back = _buffer(b, os.urandom(n))
    ok = rows.open_rows(eng, "aes-128-gcm", k, cs.nonces(base, 0, 3), _buffer(b, bytes(sealed)),
                        HEADER, n, back, CHUNK, cs.TAG)
    assert ok.tolist() == [i != bad for i in range(3)]
    assert not any(_read(b, back, n))


def test_resident_open_failing_mid_way_zeroes_the_output(eng, monkeypatch):
    """A device error once the plaintext is on the device (the tags' download) leaves no
    plaintext in the output."""
    b = eng.backend
    n = CHUNK + 50
    key, salt, data = os.urandom(16), os.urandom(24), os.urandom(n)
    out, k, base = _sealed_on(eng, data, key, salt)
    back = _buffer(b, b"", n)
    break_downloads(monkeypatch, b)
    with pytest.raises(ciphergrid.DeviceError):
        rows.open_rows(eng, "aes-128-gcm", k, cs.nonces(base, 0, 2), out, HEADER, n, back,
                       CHUNK, cs.TAG)
    monkeypatch.undo()
    assert not any(_read(b, back, n))


def test_resident_sealed_message_is_one_job(eng, monkeypatch):
    """Whole chunks and the final one are one batch: one job, each kernel launched once."""
    from conftest import watch_launches

    drv = eng.aead_driver("aes-128-gcm")
    counts = []
    prepare = drv.prepare
    monkeypatch.setattr(drv, "prepare", lambda batch, *a, **kw: counts.append(batch.count)
                        or prepare(batch, *a, **kw))
    seen = watch_launches(eng.info.spec, monkeypatch)
    n = 4 * CHUNK + 9
    key, salt, data = os.urandom(16), os.urandom(24), os.urandom(n)
    out, _, _ = _sealed_on(eng, data, key, salt)
    assert counts == [5]
    assert len(seen) == len(set(seen)), seen
    assert (_read(eng.backend, out, cs.sealed_length(n))
            == cs.encrypt(data, key, b"ctx", salt=salt, device="native"))


def test_rows_refuse_a_length_that_is_no_such_batch(eng):
    b = eng.backend
    with pytest.raises(ciphergrid.InvalidArgument):
        rows.seal_rows(eng, "aes-128-gcm", bytes(16), cs.nonces(bytes(12), 0, 2),
                       _buffer(b, bytes(CHUNK * 2)), CHUNK * 2, _buffer(b, b"", 40000), HEADER,
                       CHUNK, cs.TAG)


def test_host_data_keep_the_host_one_shots():
    """Host data through the public one-shots: bytes, as before; ``out=`` is for GPU arrays."""
    key, salt = os.urandom(16), os.urandom(24)
    sealed = cobblestone.encrypt(b"abc", key, b"c", salt=salt, device="native")
    assert sealed == cs.encrypt(b"abc", key, b"c", salt=salt, device="native")
    assert cobblestone.decrypt(sealed, key, b"c", device="native") == b"abc"
    with pytest.raises(ciphergrid.InvalidArgument):
        cobblestone.encrypt(b"abc", key, out=bytearray(100))


def _cupy():
    cupy = pytest.importorskip("cupy")
    if not any(d.runtime == "cuda" for d in ciphergrid.devices()):
        pytest.skip("no CUDA device present")
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("n", [0, 100, CHUNK, 3 * CHUNK + 5, (1 << 20) + 7])
def test_cupy_sealed_message_matches_the_host_path(n):
    """cobblestone.encrypt / decrypt of CuPy arrays on a non-default stream: the host path's
    bytes, a CuPy array back, the message back; out= is used."""
    cupy = _cupy()
    for aes256 in (False, True):
        key, salt, data = os.urandom(32 if aes256 else 16), os.urandom(24), os.urandom(n)
        want = cs.encrypt(data, key, b"ctx", aes256=aes256, salt=salt, device="native")
        with cupy.cuda.Stream(non_blocking=True) as s:
            x = cupy.asarray(np.frombuffer(data, dtype=np.uint8))
            y = cobblestone.encrypt(x, key, b"ctx", aes256=aes256, salt=salt)
            assert isinstance(y, cupy.ndarray)
            z = cupy.empty(n, dtype=cupy.uint8)
            assert cobblestone.decrypt(y, key, b"ctx", aes256=aes256, out=z) is z
            s.synchronize()
            assert cupy.asnumpy(y).tobytes() == want
            assert cupy.asnumpy(z).tobytes() == data


@pytest.mark.gpu
def test_cupy_sealed_message_failures_release_nothing():
    """An altered chunk: ChunkFailed naming it, out= zeroed; a wrong context:
    CommitmentMismatch; a cut message: Truncated."""
    cupy = _cupy()
    n = 5 * CHUNK + 3
    key, data = os.urandom(16), os.urandom(n)
    y = cobblestone.encrypt(cupy.asarray(np.frombuffer(data, dtype=np.uint8)), key, b"ctx")
    y[HEADER + 3 * (CHUNK + 16) + 10] ^= 1
    z = cupy.ones(n, dtype=cupy.uint8)
    with pytest.raises(cobblestone.ChunkFailed) as e:
        cobblestone.decrypt(y, key, b"ctx", out=z)
    assert e.value.chunk == 3
    assert not cupy.asnumpy(z).any()
    with pytest.raises(cobblestone.CommitmentMismatch):
        cobblestone.decrypt(y, key, b"other")
    with pytest.raises(cobblestone.Truncated):
        cobblestone.decrypt(y[:HEADER + CHUNK + 16], key, b"ctx")


@pytest.mark.gpu
def test_cupy_sealed_message_on_a_host_engine():
    """device="native": the plan is OpenSSL's, the message goes through host copies; the
    same bytes, a CuPy array back."""
    cupy = _cupy()
    key, salt, data = os.urandom(16), os.urandom(24), os.urandom(CHUNK + 77)
    x = cupy.asarray(np.frombuffer(data, dtype=np.uint8))
    y = cobblestone.encrypt(x, key, salt=salt, device="native")
    assert cupy.asnumpy(y).tobytes() == cs.encrypt(data, key, salt=salt, device="native")
    assert cupy.asnumpy(cobblestone.decrypt(y, key, device="native")).tobytes() == data


def test_batch_nonces_are_the_chunk_nonces():
    """A batch's nonces (records of 4 bytes and a big-endian word) are each chunk's: the base
    nonce XOR its number, near the spec's last chunk too."""
    base = os.urandom(12)
    for first, count in ((0, 0), (0, 300), (2**38 - 5, 5), (70000, 3)):
        got = cs.nonces(base, first, count)
        assert got.shape == (count, 12) and got.dtype == np.uint8 and got.flags.c_contiguous
        assert [bytes(r) for r in got] == [cs._nonce(base, first + i) for i in range(count)]


def test_resident_sealed_layout_derived_once_and_kept(eng, monkeypatch):
    """Sealed messages of one length share their layout (a regular one: found by its count,
    chunk and total, no array comparisons): derived once, kept on the device; another length
    is another layout."""
    from ciphergrid.engines.device_aead import driver as aead_driver

    drv = eng.aead_driver("aes-128-gcm")
    derived = []
    derive = drv.derive_shape
    monkeypatch.setattr(drv, "derive_shape", lambda *a: derived.append(1) or derive(*a))
    monkeypatch.setattr(drv, "_small", {})
    monkeypatch.setattr(drv, "_shapes", [])
    monkeypatch.setattr(drv, "_layouts", {})   # (earlier tests' layouts fill the driver's)
    monkeypatch.setattr(drv, "_layout_bytes", 0)
    monkeypatch.setattr(aead_driver, "SHAPES_KEPT", 8)
    for n in (5 * CHUNK + 3, 5 * CHUNK + 3, 5 * CHUNK + 4):
        key, salt, data = os.urandom(16), os.urandom(24), os.urandom(n)
        out, _, _ = _sealed_on(eng, data, key, salt)
        assert (_read(eng.backend, out, cs.sealed_length(n))
                == cs.encrypt(data, key, b"ctx", salt=salt, device="native"))
    assert len(derived) == 2
    assert any(k[:4] == ("regular", 6, CHUNK, 5 * CHUNK + 3) for k in drv._layouts)


def test_resident_sealed_texts_stay_on_the_device(eng, monkeypatch):
    """Sealing downloads nothing and allocates one buffer of the texts' size (the kernels'
    contiguous output: the plaintext is read where it lies); opening downloads the two tag
    tables only and allocates one such buffer (the contiguous ciphertext: the plaintext is
    written where it lies)."""
    b = eng.backend
    n = 4 * CHUNK + 48
    key, salt, data = os.urandom(16), os.urandom(24), os.urandom(n)
    _sealed_on(eng, data, key, salt)   # (the layout kept)
    seen = {"alloc": [], "download": []}
    alloc, download = b.alloc, b.download
    monkeypatch.setattr(b, "alloc", lambda k: seen["alloc"].append(int(k)) or alloc(k))
    monkeypatch.setattr(b, "download", lambda h, *a, **kw: seen["download"].append(h.nbytes)
                        or download(h, *a, **kw))
    out, k, base = _sealed_on(eng, data, key, salt)
    assert seen["download"] == [] and sum(x >= n for x in seen["alloc"]) == 1, seen
    seen["alloc"].clear()
    back = _buffer(b, b"", n)
    assert rows.open_rows(eng, "aes-128-gcm", k, cs.nonces(base, 0, 5), out, HEADER, n, back,
                          CHUNK, cs.TAG).all()
    monkeypatch.undo()
    assert sorted(seen["download"]) == [5 * 16, 5 * 16]
    assert sum(x >= n for x in seen["alloc"]) == 1, seen
    assert _read(b, back, n) == data
