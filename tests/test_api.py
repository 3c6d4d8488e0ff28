"""The Python API in the idiom of pyca/cryptography: numpy arrays keep their shape and dtype,
keys and IVs must be bytes-like (TypeError naming the argument), CipherContext.update_into,
a bad device fails when the Cipher is made, docstrings, and `ciphergrid report`'s error when
matplotlib (a dependency) is missing."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry
from conftest import absent_spec


def _key_iv(name: str, rng):
    return rng.key(name), rng.iv(name)


def _splits(rng, n: int, pieces: int) -> list[int]:
    """Random cut points of n bytes into `pieces` pieces (some may be empty)."""
    cuts = sorted(rng.randrange(n + 1) for _ in range(pieces - 1))
    return [0] + cuts + [n]


# --------------------------------------------------------------------------- 1. shape and dtype

ARRAYS = {
    # every one a whole number of AES blocks, so that ECB/CBC/XTS take it too; all small (PoCL)
    "uint32-4x8": lambda g: g.integers(0, 2**32, (4, 8), dtype=np.uint32),
    "float64-2x3x4": lambda g: g.random((2, 3, 4)),
    "int16-16": lambda g: g.integers(-2**15, 2**15, 16, dtype=np.int16),
    "uint8-3x16": lambda g: g.integers(0, 256, (3, 16), dtype=np.uint8),
    "complex128-0d": lambda g: np.array(g.random() + 1j * g.random()),
    "bool-8x4": lambda g: g.integers(0, 2, (8, 4)).astype(bool),
}


@pytest.mark.parametrize("name", ["aes-128-ctr", "aes-256-cbc", "aes-128-xts"])
@pytest.mark.parametrize("kind", list(ARRAYS))
def test_numpy_array_keeps_shape_and_dtype(device, kind, name, rng, ref, diff):
    a = ARRAYS[kind](np.random.default_rng(rng.getrandbits(32)))
    key, iv = _key_iv(name, rng)
    ct = ciphergrid.encrypt(a, name, key, iv, device=device)
    assert isinstance(ct, np.ndarray)
    assert (ct.shape, ct.dtype) == (a.shape, a.dtype)
    want = ref.encrypt(a.tobytes(), name, key, iv)
    assert ct.tobytes() == want, diff(ct.tobytes(), want)
    pt = ciphergrid.decrypt(ct, name, key, iv, device=device)
    assert (pt.shape, pt.dtype) == (a.shape, a.dtype)
    assert pt.tobytes() == a.tobytes()  # bytes: a float array may hold NaNs


@pytest.mark.parametrize("order", ["strided", "fortran"])
def test_non_contiguous_array_gives_the_input_shape(device, order, rng, ref):
    g = np.random.default_rng(rng.getrandbits(32))
    if order == "strided":
        a = g.integers(0, 2**16, (8, 16), dtype=np.uint16)[::2, ::2]     # (4, 8), not contiguous
    else:
        a = np.asfortranarray(g.integers(0, 2**32, (4, 8), dtype=np.uint32))
    assert not a.flags.c_contiguous
    key, iv = _key_iv("aes-128-ctr", rng)
    ct = ciphergrid.encrypt(a, "aes-128-ctr", key, iv, device=device)
    assert (ct.shape, ct.dtype) == (a.shape, a.dtype) and ct.flags.c_contiguous
    assert ct.tobytes() == ref.encrypt(np.ascontiguousarray(a).tobytes(), "aes-128-ctr", key, iv)
    assert np.array_equal(ciphergrid.decrypt(ct, "aes-128-ctr", key, iv, device=device), a)


def test_padding_gives_a_flat_uint8_array(device, rng, ref):
    a = np.random.default_rng(rng.getrandbits(32)).integers(0, 2**32, (4, 8), dtype=np.uint32)
    for name in ("aes-128-cbc", "aes-192-ecb"):
        key, iv = _key_iv(name, rng)
        ct = ciphergrid.encrypt(a, name, key, iv, device=device, padding="pkcs7")
        assert (ct.shape, ct.dtype) == ((a.nbytes + 16,), np.uint8)
        assert ct.tobytes() == ref.encrypt(a.tobytes(), name, key, iv, padding="pkcs7")
        pt = ciphergrid.decrypt(ct.reshape(-1, 16), name, key, iv, device=device, padding="pkcs7")
        assert (pt.shape, pt.dtype) == ((a.nbytes,), np.uint8)
        assert pt.tobytes() == a.tobytes()
        # a length that is not a whole number of blocks still comes back flat uint8
        b = np.arange(10, dtype=np.uint16).reshape(2, 5)
        ct = ciphergrid.encrypt(b, name, key, iv, device=device, padding="pkcs7")
        assert (ct.shape, ct.dtype) == ((32,), np.uint8)
        pt = ciphergrid.decrypt(ct, name, key, iv, device=device, padding="pkcs7")
        assert (pt.shape, pt.dtype) == ((20,), np.uint8) and pt.tobytes() == b.tobytes()


def test_bytes_like_in_bytes_out(rng, ref):
    key, iv = _key_iv("aes-128-cbc", rng)
    data = rng.data(64)
    want = ref.encrypt(data, "aes-128-cbc", key, iv)
    for d in (data, bytearray(data), memoryview(data), memoryview(bytearray(data)).cast("I")):
        out = ciphergrid.encrypt(d, "aes-128-cbc", key, iv)
        assert type(out) is bytes and out == want
    # 1-D uint8 in: 1-D uint8 out (as before)
    out = ciphergrid.encrypt(np.frombuffer(data, dtype=np.uint8), "aes-128-cbc", key, iv)
    assert (out.shape, out.dtype) == ((64,), np.uint8) and out.tobytes() == want


# --------------------------------------------------------------------------- 2. key and IV types

NOT_BYTES_LIKE = {"str": "00" * 16, "int": 16, "list": list(range(16)), "float": 1.5}


def _calls(name, key, iv):
    """Every API entry that takes a key and an IV."""
    return {
        "encrypt": lambda: ciphergrid.encrypt(bytes(32), name, key, iv),
        "decrypt": lambda: ciphergrid.decrypt(bytes(32), name, key, iv),
        "Cipher": lambda: ciphergrid.Cipher(name, key, iv),
    }


@pytest.mark.parametrize("label", list(NOT_BYTES_LIKE))
def test_key_not_bytes_like_is_a_type_error(label):
    bad = NOT_BYTES_LIKE[label]
    tname = type(bad).__name__
    for entry, call in _calls("aes-128-cbc", bad, bytes(16)).items():
        with pytest.raises(TypeError) as ei:
            call()
        assert str(ei.value) == f"key must be bytes-like (bytes, bytearray, memoryview), not {tname}", entry
    with pytest.raises(TypeError, match=r"^key must be bytes-like .*not NoneType$"):
        ciphergrid.encrypt(bytes(16), "aes-128-ecb", None)


@pytest.mark.parametrize("label", list(NOT_BYTES_LIKE))
def test_iv_not_bytes_like_is_a_type_error(label):
    bad = NOT_BYTES_LIKE[label]
    tname = type(bad).__name__
    for name in ("aes-128-cbc", "aes-128-ctr", "aes-128-xts"):
        key = bytes(range(registry.lookup(name).key_len))
        for entry, call in _calls(name, key, bad).items():
            with pytest.raises(TypeError) as ei:
                call()
            assert str(ei.value) == f"iv must be bytes-like (bytes, bytearray, memoryview), not {tname}", \
                (name, entry)


def test_bytes_like_keys_and_ivs_are_taken(rng, ref):
    key, iv = _key_iv("aes-128-cbc", rng)
    data = rng.data(48)
    want = ref.encrypt(data, "aes-128-cbc", key, iv)
    for k, v in ((bytearray(key), memoryview(iv)), (memoryview(key), bytearray(iv)),
                 (np.frombuffer(key, dtype=np.uint8), np.frombuffer(iv, dtype=np.uint32))):
        assert ciphergrid.encrypt(data, "aes-128-cbc", k, v) == want
        ctx = ciphergrid.Cipher("aes-128-cbc", k, v).encryptor()
        assert ctx.update(data) + ctx.finalize() == want


def test_key_copied_at_construction(rng, ref):
    key, iv = _key_iv("aes-128-ctr", rng)
    k = bytearray(key)
    c = ciphergrid.Cipher("aes-128-ctr", k, iv)
    k[:] = bytes(16)  # the caller reuses its buffer
    ctx = c.encryptor()
    assert ctx.update(bytes(20)) + ctx.finalize() == ref.encrypt(bytes(20), "aes-128-ctr", key, iv)


# --------------------------------------------------------------------------- 3. update_into

STREAM_CASES = {
    "ctr": ("aes-128-ctr", {}, True),
    "cbc-pkcs7-enc": ("aes-256-cbc", {"padding": "pkcs7"}, True),
    "cbc-pkcs7-dec": ("aes-256-cbc", {"padding": "pkcs7"}, False),
    "cbc-dec": ("aes-128-cbc", {}, False),
    "ecb-enc": ("aes-192-ecb", {}, True),
    "ecb-pkcs7-dec": ("aes-128-ecb", {"padding": "pkcs7"}, False),
    "xts-sector-enc": ("aes-128-xts", {"sector_size": 64, "start_sector": 5}, True),
    "xts-sector-dec": ("aes-256-xts", {"sector_size": 48, "start_sector": 2**64 - 2}, False),
    "xts-unit": ("aes-128-xts", {}, True),
}


def _stream_input(case, rng, ref):
    name, kw, enc = STREAM_CASES[case]
    spec = registry.lookup(name)
    key = rng.key(name)
    iv = None if "sector_size" in kw else rng.iv(name)
    n = 300 if (spec.mode.name in ("ctr", "xts") or kw.get("padding")) else 304
    if spec.mode.name == "xts" and "sector_size" in kw:
        n = 5 * kw["sector_size"] + 20   # a short last unit: ciphertext stealing
    data = rng.data(n)
    if not enc:
        data = ref.encrypt(data, name, key, iv, **kw)
    want = (ref.encrypt if enc else ref.decrypt)(data, name, key, iv, **kw)
    return name, key, iv, kw, enc, data, want


def _ctx(name, key, iv, kw, enc, device="auto"):
    c = ciphergrid.Cipher(name, key, iv, device=device, **kw)
    return c.encryptor() if enc else c.decryptor()


@pytest.mark.parametrize("case", list(STREAM_CASES))
def test_update_into_equals_update(case, rng, ref, diff):
    name, key, iv, kw, enc, data, want = _stream_input(case, rng, ref)
    for trial in range(4):
        cuts = _splits(rng, len(data), rng.choice([2, 5, 9]))
        pieces = [data[a:b] for a, b in zip(cuts, cuts[1:])]
        c1, c2 = _ctx(name, key, iv, kw, enc), _ctx(name, key, iv, kw, enc)
        got_update, got_into = [], []
        unit = 16 if registry.lookup(name).mode.name in ("ecb", "cbc") else kw.get("sector_size", 1)
        for i, piece in enumerate(pieces):
            expect = c1.update(piece)
            got_update.append(expect)
            size = len(piece) + unit - 1 + (i % 3) * 7  # exactly the minimum, or more
            buf = [bytearray(size), np.zeros(size, dtype=np.uint8), memoryview(bytearray(size))][i % 3]
            src = piece if i % 2 else np.frombuffer(piece, dtype=np.uint8)
            n = c2.update_into(src, buf)
            assert isinstance(n, int) and n == len(expect), (case, trial, i)
            assert bytes(memoryview(buf)[:n]) == expect, (case, trial, i)
            got_into.append(bytes(memoryview(buf)[:n]))
        tail1, tail2 = c1.finalize(), c2.finalize()
        assert tail1 == tail2
        assert b"".join(got_into) + tail2 == want, (cuts, diff(b"".join(got_into) + tail2, want))
        assert b"".join(got_update) + tail1 == want


@pytest.mark.parametrize("case", ["ctr", "cbc-pkcs7-dec", "ecb-enc", "xts-sector-enc"])
def test_update_into_every_device(device, case, rng, ref):
    name, key, iv, kw, enc, data, want = _stream_input(case, rng, ref)
    cuts = _splits(rng, len(data), 4)
    ctx = _ctx(name, key, iv, kw, enc, device)
    buf = bytearray(len(data) + 64)
    out = b""
    for a, b in zip(cuts, cuts[1:]):
        n = ctx.update_into(data[a:b], buf)
        out += bytes(buf[:n])
    assert out + ctx.finalize() == want


@pytest.mark.parametrize("case, minimum", [("ctr", 32), ("cbc-pkcs7-enc", 47), ("ecb-enc", 47),
                                           ("cbc-pkcs7-dec", 47), ("xts-sector-enc", 32 + 63),
                                           ("xts-unit", 32)])
def test_update_into_buffer_too_small(case, minimum, rng, ref):
    name, key, iv, kw, enc, data, want = _stream_input(case, rng, ref)
    ctx = _ctx(name, key, iv, kw, enc)
    out = bytearray()
    buf = bytearray(minimum - 1)
    with pytest.raises(ValueError, match=f"at least {minimum} bytes") as ei:
        ctx.update_into(data[:32], buf)
    assert isinstance(ei.value, ciphergrid.InvalidArgument)
    assert buf == bytearray(minimum - 1)  # nothing written
    # nothing consumed either: the same call with a big enough buffer goes on as if it had not been
    big = bytearray(minimum)
    n = ctx.update_into(data[:32], big)
    out += big[:n]
    out += ctx.update(data[32:])
    assert bytes(out) + ctx.finalize() == want


def test_update_into_pyca_sizes(rng):
    """The pyca/cryptography rule: what a buffer of len(data) + block_size - 1 bytes does there,
    it does here (CTR is a stream mode there: len(data) is enough)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key, iv = rng.randbytes(16), rng.randbytes(16)
    for mode, name in ((modes.CBC(iv), "aes-128-cbc"), (modes.ECB(), "aes-128-ecb"),
                       (modes.CTR(iv), "aes-128-ctr")):
        ours = ciphergrid.Cipher(name, key, None if name.endswith("ecb") else iv).encryptor()
        theirs = Cipher(algorithms.AES(key), mode).encryptor()
        for size in (32, 33, 46, 47, 64):
            results = []
            for ctx in (theirs, ours):
                try:
                    results.append(ctx.update_into(bytes(32), bytearray(size)))
                except ValueError:
                    results.append("ValueError")
            assert results[0] == results[1], (name, size, results)


def test_update_into_errors():
    ctx = ciphergrid.Cipher("aes-128-ctr", bytes(16), bytes(16)).encryptor()
    with pytest.raises(TypeError):
        ctx.update_into(bytes(16), bytes(32))          # read-only
    with pytest.raises(TypeError):
        ctx.update_into(bytes(16), "x" * 32)           # not a buffer
    with pytest.raises(TypeError):
        ctx.update_into(bytes(16), np.zeros((8, 8), dtype=np.uint8)[:, ::2])  # not contiguous
    assert ctx.update_into(bytes(16), np.zeros(4, dtype=np.uint32)) == 16  # any writable buffer
    ctx.finalize()
    with pytest.raises(ciphergrid.AlreadyFinalized):
        ctx.update_into(bytes(16), bytearray(64))


# --------------------------------------------------------------------------- 5. device at Cipher()

@pytest.mark.parametrize("form", [
    pytest.param(("cuda", 1, False), id="cuda-N"),
    pytest.param(("opencl", 2, False), id="opencl-absent-P-N"),
    pytest.param(("opencl", 2, True), id="opencl-present-P-absent-N"),
])
def test_bad_device_fails_at_cipher_construction(form):
    runtime, depth, on_present = form
    spec = absent_spec(runtime, depth, on_present_platform=on_present)
    with pytest.raises(ciphergrid.DeviceNotFound) as ei:
        ciphergrid.Cipher("aes-128-ctr", bytes(16), bytes(16), device=spec)
    assert spec in str(ei.value)


@pytest.mark.parametrize("spec", ["bogus", "tpu:0"])
def test_malformed_device_fails_at_cipher_construction(spec):
    with pytest.raises(ciphergrid.InvalidArgument):
        ciphergrid.Cipher("aes-128-ctr", bytes(16), bytes(16), device=spec)


def test_auto_is_not_resolved_at_construction(monkeypatch):
    import importlib

    devmod = importlib.import_module("ciphergrid.devices")  # ciphergrid.devices is the function
    calls = []

    def fake_resolve(spec, *a, **kw):
        calls.append(spec)
        raise ciphergrid.DeviceNotFound(f"no device matches {spec!r}")

    monkeypatch.setattr(devmod, "resolve", fake_resolve)
    ciphergrid.Cipher("aes-128-ctr", bytes(16), bytes(16))
    ciphergrid.Cipher("aes-128-ctr", bytes(16), bytes(16), device="auto")
    assert calls == []
    with pytest.raises(ciphergrid.DeviceNotFound):
        ciphergrid.Cipher("aes-128-ctr", bytes(16), bytes(16), device="native")
    assert calls == ["native"]


def test_present_devices_construct(device, rng, ref):
    key, iv = _key_iv("aes-128-ctr", rng)
    ctx = ciphergrid.Cipher("aes-128-ctr", key, iv, device=device).encryptor()
    assert ctx.update(bytes(40)) + ctx.finalize() == ref.encrypt(bytes(40), "aes-128-ctr", key, iv)


# --------------------------------------------------------------------------- 4. docstrings

PUBLIC = ["encrypt", "decrypt", "Cipher", "Cipher.encryptor", "Cipher.decryptor", "CipherContext",
          "CipherContext.update", "CipherContext.update_into", "CipherContext.finalize",
          "devices", "available_ciphers"]


@pytest.mark.parametrize("qualname", PUBLIC)
def test_docstrings(qualname):
    obj = ciphergrid
    for part in qualname.split("."):
        obj = getattr(obj, part)
    doc = obj.__doc__ or ""
    assert len(doc.strip()) > 40, qualname
    if qualname in ("encrypt", "decrypt"):
        for word in ("data", "cipher", "key", "iv", "device", "padding", "sector_size", "out",
                     "Returns", "Raises", "TypeError", "InvalidKeySize", "DeviceNotFound",
                     "shape", "dtype", "uint8"):
            assert word in doc, (qualname, word)
    if qualname == "Cipher":
        assert "Raises" in doc and "DeviceNotFound" in doc and "TypeError" in doc
    if qualname in ("CipherContext.update", "CipherContext.update_into", "CipherContext.finalize"):
        assert "Returns" in doc and "Raises" in doc and "AlreadyFinalized" in doc, qualname
    if qualname == "CipherContext.update_into":
        assert "len(data) + n - 1" in doc and "ValueError" in doc


# --------------------------------------------------------------------------- 5. one argument order

def test_module_functions_take_the_data_first():
    """encrypt, decrypt, encrypt_batch and decrypt_batch: the data, then the cipher name; the
    batches called in the old order (the cipher first) say so in a TypeError before any work."""
    import inspect

    for fn, first in (("encrypt", "data"), ("decrypt", "data"), ("encrypt_batch", "messages"),
                      ("decrypt_batch", "messages")):
        params = list(inspect.signature(getattr(ciphergrid, fn)).parameters)
        assert params[:2] == [first, "cipher"], (fn, params)
    kw = {"key": bytes(16), "nonces": [bytes(12), b"\1" * 12]}
    for fn in ("encrypt_batch", "decrypt_batch"):
        with pytest.raises(TypeError, match=rf"^{fn}\(messages, cipher, \.\.\.\): the messages come "
                                            r"first, then the cipher; got the cipher name 'aes-128-gcm'"):
            getattr(ciphergrid, fn)("aes-128-gcm", [b"a" * 16, b"b" * 16], **kw)
        with pytest.raises(TypeError, match=r"the messages are bytes-like .*, not a str"):
            getattr(ciphergrid, fn)("ab" * 16, "aes-128-gcm", **kw)
        with pytest.raises(TypeError, match=r"cipher is an AEAD name \(a str\), got bytes"):
            getattr(ciphergrid, fn)([b"a" * 16, b"b" * 16], b"aes-128-gcm", **kw)
    r = ciphergrid.encrypt_batch([b"a" * 16, b"b" * 16], "aes-128-gcm", device="native", **kw)
    back = ciphergrid.decrypt_batch(r.messages, "aes-128-gcm", device="native", **kw)
    assert back.messages == [b"a" * 16, b"b" * 16]
    # pyca's classes keep pyca's order: encrypt(nonce, data, aad), encrypt_batch(nonces, messages)
    a = ciphergrid.AESGCM(bytes(16), device="native")
    assert a.encrypt_batch(kw["nonces"], [b"a" * 16, b"b" * 16]).messages == r.messages


# --------------------------------------------------------------------------- 6. report and matplotlib

def _results_file(tmp_path):
    from ciphergrid.bench import records

    run = {"date": "2024-06-01T00:00:00", "command": "ciphergrid bench --quick", "suite": "quick",
           "argv": [], "host": {}, "devices": [], "options": {}, "definitions": {}, "counts": {},
           "exit_code": 0}
    path = tmp_path / "results.json"
    records.save(records.Results(run=run, records=[]), path)
    return path


def _report(path, out):
    from ciphergrid import bench

    parser = argparse.ArgumentParser()
    bench.add_report_arguments(parser)
    return bench.report_main(parser.parse_args([str(path), "--out", str(out)]))


def test_report_without_matplotlib_is_a_clear_error_before_any_file(tmp_path, monkeypatch):
    """matplotlib is a dependency: missing (a broken install), one clear error, nothing written."""
    from ciphergrid.errors import Error

    path = _results_file(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)          # `import matplotlib` fails
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(Error, match="plots need matplotlib.*pip install matplotlib"):
        _report(path, tmp_path / "rep")
    assert not (tmp_path / "rep").exists()


def test_report_with_matplotlib_is_quiet(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert _report(_results_file(tmp_path), tmp_path / "rep") == 0
    assert "matplotlib" not in capsys.readouterr().err
