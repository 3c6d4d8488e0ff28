"""Every documented error through the Python API: the right class, a message that says what was
expected, and the hierarchy (all ciphergrid.Error; argument errors are also ValueError, as in
pyca/cryptography)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry
from conftest import absent_spec

ARGUMENT_ERRORS = ["UnsupportedCipher", "InvalidKeySize", "InvalidKey", "InvalidIVSize",
                   "InvalidLength", "InvalidPadding", "InvalidArgument"]


def _expect(exc, fn, *a, **kw):
    """Call fn; it must raise exc (also when the call is a Cipher context that fails late)."""
    with pytest.raises(exc) as ei:
        fn(*a, **kw)
    assert isinstance(ei.value, ciphergrid.Error)
    msg = str(ei.value)
    assert msg and "\n" not in msg.strip(), f"message should be one non-empty line: {msg!r}"
    return msg


def _both(exc, data, name, key, iv=None, directions=("encrypt", "decrypt"), **kw) -> list[str]:
    """encrypt and decrypt, one-shot and through Cipher(...), all raise exc; returns the messages."""
    msgs = []
    for d in directions:
        fn = getattr(ciphergrid, d)
        msgs.append(_expect(exc, fn, data, name, key, iv, **kw))

        def via_cipher():
            c = ciphergrid.Cipher(name, key, iv, **kw)
            ctx = c.encryptor() if d == "encrypt" else c.decryptor()
            ctx.update(data)
            ctx.finalize()
        msgs.append(_expect(exc, via_cipher))
    return msgs


def _mentions(msg: str, *numbers: int) -> bool:
    return any(re.search(rf"(?<![0-9]){n}(?![0-9])", msg) for n in numbers)


# --------------------------------------------------------------------------- hierarchy

def test_hierarchy():
    for n in ARGUMENT_ERRORS:
        cls = getattr(ciphergrid, n)
        assert issubclass(cls, ciphergrid.Error) and issubclass(cls, ValueError), n
    for n in ("AlreadyFinalized", "DeviceError", "DeviceNotFound"):
        assert issubclass(getattr(ciphergrid, n), ciphergrid.Error), n
    assert issubclass(ciphergrid.DeviceNotFound, ciphergrid.DeviceError)
    assert issubclass(ciphergrid.Error, Exception)


# --------------------------------------------------------------------------- UnsupportedCipher

@pytest.mark.parametrize("bad", ["aes-128-ocb", "aes-512-cbc", "des-ede3-cfb", "", "aes128cbc", "aes-128-cbc-x"])
def test_unsupported_cipher(bad):
    key = bytes(16)
    msg = _expect(ciphergrid.UnsupportedCipher, ciphergrid.encrypt, bytes(16), bad, key, bytes(16))
    _expect(ciphergrid.UnsupportedCipher, ciphergrid.decrypt, bytes(16), bad, key, bytes(16))
    _expect(ciphergrid.UnsupportedCipher, ciphergrid.Cipher, bad, key, bytes(16))
    # one short line: the close names where there are some, and where every name is listed
    assert "ciphergrid list" in msg and len(msg) < 200, msg
    if bad in ("aes-128-ocb", "aes128cbc", "aes-128-cbc-x"):
        assert "did you mean" in msg and "aes-128-" in msg, msg


# --------------------------------------------------------------------------- InvalidKeySize

def test_invalid_key_size(cipher_name):
    spec = registry.lookup(cipher_name)
    iv = bytes(spec.iv_len) if spec.iv_len else None
    data = bytes(64)
    bad_lengths = {0, 1, spec.key_len - 1, spec.key_len + 1, 2 * spec.key_len}
    # the key sizes of the other variants must not be taken silently (aes-192-cbc with 16 bytes)
    if spec.mode.name == "xts":
        bad_lengths |= {32, 48, 64} - {spec.key_len}
        bad_lengths |= {spec.key_size}          # one key instead of key1 || key2
    else:
        bad_lengths |= {16, 24, 32} - {spec.key_len}
    bad_lengths -= set(spec.key_lens)           # (a name of many key sizes: CAST5, 5..16 bytes)
    for n in sorted(bad_lengths):
        key = bytes(range(1, n + 1)) if n else b""
        for msg in _both(ciphergrid.InvalidKeySize, data, cipher_name, key, iv):
            assert _mentions(msg, spec.key_len, 8 * spec.key_len), (
                f"{cipher_name}, {n}-byte key: the message should name the expected size "
                f"({spec.key_len} bytes / {8 * spec.key_len} bits): {msg!r}")


def test_key_must_be_bytes_like():
    with pytest.raises((ciphergrid.InvalidArgument, ciphergrid.InvalidKeySize, TypeError)):
        ciphergrid.encrypt(bytes(16), "aes-128-ecb", "00" * 16)


# --------------------------------------------------------------------------- InvalidKey (XTS)

@pytest.mark.parametrize("name", [n for n in registry.names() if registry.lookup(n).mode.name == "xts"])
def test_xts_equal_key_halves(name, ref):
    spec = registry.lookup(name)
    half = bytes(range(7, 7 + spec.key_size))
    key, tweak, data = half + half, bytes(range(16)), bytes(range(64))
    # encryption refuses it (as OpenSSL does) ...
    _both(ciphergrid.InvalidKey, data, name, key, tweak, directions=("encrypt",))
    _both(ciphergrid.InvalidKey, data, name, key, None, directions=("encrypt",),
          sector_size=512, start_sector=0)
    # ... decryption accepts it (OpenSSL decrypts with equal halves; IEEE 1619 vector 1)
    assert ciphergrid.decrypt(data, name, key, tweak) == ref.decrypt(data, name, key, tweak)


# --------------------------------------------------------------------------- InvalidIVSize

def test_iv_wrong_length(cipher_name):
    spec = registry.lookup(cipher_name)
    key = bytes(range(1, spec.key_len + 1))
    if spec.mode.name == "ecb":
        for iv in (bytes(16), bytes(8), b""):
            _both(ciphergrid.InvalidIVSize, bytes(32), cipher_name, key, iv)
        return
    for n in [n for n in (0, 1, 8, 12, 15, 16, 17, 32) if n != spec.iv_len]:
        for msg in _both(ciphergrid.InvalidIVSize, bytes(32), cipher_name, key, bytes(n)):
            assert _mentions(msg, spec.iv_len, 8 * spec.iv_len), (
                f"{cipher_name}, {n}-byte iv: the message should name {spec.iv_len} bytes: {msg!r}")


def test_iv_missing(cipher_name):
    spec = registry.lookup(cipher_name)
    if spec.mode.name == "ecb":
        # no IV is the normal case for ECB
        assert len(ciphergrid.encrypt(bytes(32), cipher_name, bytes(spec.key_len))) == 32
        return
    key = bytes(range(1, spec.key_len + 1))
    for msg in _both(ciphergrid.InvalidIVSize, bytes(32), cipher_name, key, None):
        assert _mentions(msg, spec.iv_len, 8 * spec.iv_len), msg


@pytest.mark.parametrize("name", [n for n in registry.names() if registry.lookup(n).mode.name == "xts"])
def test_iv_with_sector_size(name):
    key = bytes(range(1, registry.lookup(name).key_len + 1))
    _both(ciphergrid.InvalidIVSize, bytes(1024), name, key, bytes(16), sector_size=512, start_sector=0)


# --------------------------------------------------------------------------- InvalidLength

@pytest.mark.parametrize("n", [1, 15, 17, 31, 4095])
@pytest.mark.parametrize("name", [n for n in registry.names() if registry.lookup(n).mode.name in ("ecb", "cbc")])
def test_block_modes_need_whole_blocks(name, n):
    spec = registry.lookup(name)
    key = bytes(range(1, spec.key_len + 1))
    iv = bytes(spec.iv_len) if spec.iv_len else None
    for msg in _both(ciphergrid.InvalidLength, bytes(n), name, key, iv):
        assert _mentions(msg, spec.block_size, 8 * spec.block_size) or "block" in msg.lower(), msg


@pytest.mark.parametrize("name", [n for n in registry.names() if registry.lookup(n).mode.name == "xts"])
def test_xts_lengths(name):
    key = bytes(range(1, registry.lookup(name).key_len + 1))
    tweak = bytes(16)
    for n in (0, 1, 15):
        for msg in _both(ciphergrid.InvalidLength, bytes(n), name, key, tweak):
            assert _mentions(msg, 16, 128), msg
    # more than 2^20 blocks in one data unit
    big = np.zeros((1 << 24) + 16, dtype=np.uint8)
    _expect(ciphergrid.InvalidLength, ciphergrid.encrypt, big, name, key, tweak)
    _expect(ciphergrid.InvalidLength, ciphergrid.decrypt, big, name, key, tweak)
    # sector mode: a last sector shorter than one block
    for n in (512 + 1, 512 + 15, 2 * 512 + 8):
        _both(ciphergrid.InvalidLength, bytes(n), name, key, None, sector_size=512, start_sector=0)


def test_pkcs7_decrypt_of_partial_block():
    key, iv = bytes(range(16)), bytes(16)
    for name in ("aes-128-ecb", "aes-128-cbc"):
        for n in (0, 15, 17, 33):
            # no whole number of blocks: there is no padding to check
            with pytest.raises((ciphergrid.InvalidLength, ciphergrid.InvalidPadding)):
                ciphergrid.decrypt(bytes(n), name, key, iv if "cbc" in name else None, padding="pkcs7")


# --------------------------------------------------------------------------- InvalidPadding

BAD_PADDED_BLOCKS = {
    "zero": bytes(15) + b"\x00",
    "17": bytes(15) + b"\x11",
    "ff": bytes(15) + b"\xff",
    "inconsistent": bytes(12) + b"\x03\x04\x04\x04",
    "one-bad-in-16": b"\x0f" + b"\x10" * 15,
}


@pytest.mark.parametrize("case", list(BAD_PADDED_BLOCKS))
@pytest.mark.parametrize("name", [n for n in registry.names() if registry.lookup(n).mode.name in ("ecb", "cbc")])
def test_invalid_padding(name, case, ref):
    spec = registry.lookup(name)
    key = bytes(range(3, 3 + spec.key_len))
    iv = bytes(range(spec.iv_len)) if spec.iv_len else None
    for prefix in (b"", bytes(range(48))):
        ct = ref.encrypt(prefix + BAD_PADDED_BLOCKS[case], name, key, iv)
        _both(ciphergrid.InvalidPadding, ct, name, key, iv, directions=("decrypt",), padding="pkcs7")


def test_valid_padding_control(ref):
    """Control for the cases above: a block ending in 0x01 is valid padding."""
    key, iv = bytes(range(16)), bytes(16)
    ct = ref.encrypt(b"\x10" * 15 + b"\x01", "aes-128-cbc", key, iv)
    assert ciphergrid.decrypt(ct, "aes-128-cbc", key, iv, padding="pkcs7") == b"\x10" * 15


# --------------------------------------------------------------------------- InvalidArgument

def test_padding_not_for_ctr_xts(cipher_name):
    spec = registry.lookup(cipher_name)
    key = bytes(range(1, spec.key_len + 1))
    iv = bytes(spec.iv_len) if spec.iv_len else None
    if spec.mode.name in ("ctr", "xts"):
        _both(ciphergrid.InvalidArgument, bytes(32), cipher_name, key, iv, padding="pkcs7")
    for bad in ("zero", "PKCS5", "iso7816"):
        _both(ciphergrid.InvalidArgument, bytes(32), cipher_name, key, iv, padding=bad)


def test_sector_arguments(cipher_name):
    spec = registry.lookup(cipher_name)
    key = bytes(range(1, spec.key_len + 1))
    iv = bytes(spec.iv_len) if spec.iv_len else None
    if spec.mode.name != "xts":
        # sector mode is XTS only
        _both(ciphergrid.InvalidArgument, bytes(1024), cipher_name, key, iv, sector_size=512, start_sector=0)
        return
    for kw in ({"sector_size": 0, "start_sector": 0},
               {"sector_size": -512, "start_sector": 0},
               {"sector_size": 8, "start_sector": 0},       # a data unit is at least one block
               {"sector_size": 512, "start_sector": -1},
               {"start_sector": 3}):                          # start_sector without sector_size
        with pytest.raises((ciphergrid.InvalidArgument, ciphergrid.InvalidLength)) as ei:
            ciphergrid.encrypt(bytes(1024), cipher_name, key, None, **kw)
        assert isinstance(ei.value, ciphergrid.Error), kw
    # sector_size without start_sector: either an error or start_sector 0 - never a crash
    try:
        out = ciphergrid.encrypt(bytes(1024), cipher_name, key, None, sector_size=512)
    except ciphergrid.Error:
        pass
    else:
        assert out == ciphergrid.encrypt(bytes(1024), cipher_name, key, None, sector_size=512, start_sector=0)


@pytest.mark.parametrize("label", ["str", "list", "int", "None"])
def test_bad_data_types(label):
    data = {"str": "0" * 32, "list": [0] * 32, "int": 32, "None": None}[label]
    with pytest.raises((ciphergrid.InvalidArgument, TypeError)):
        ciphergrid.encrypt(data, "aes-128-ecb", bytes(16))


@pytest.mark.parametrize("label", ["2-D", "uint32", "float32", "non-contiguous-2-D"])
def test_other_numpy_arrays(label, ref):
    """Not a 1-D uint8 array: either refused (InvalidArgument/TypeError) or taken as its raw bytes
    in C order - never anything else."""
    rng = np.random.default_rng(7)
    a = {"2-D": rng.integers(0, 256, (4, 16), dtype=np.uint8),
         "uint32": rng.integers(0, 2**32, 16, dtype=np.uint32),
         "float32": rng.random(16, dtype=np.float32),
         "non-contiguous-2-D": rng.integers(0, 256, (8, 32), dtype=np.uint8)[::2, ::2]}[label]
    key = bytes(range(16))
    try:
        out = ciphergrid.encrypt(a, "aes-128-ecb", key)
    except (ciphergrid.InvalidArgument, TypeError):
        return
    assert np.asarray(out).tobytes() == ref.encrypt(np.ascontiguousarray(a).tobytes(), "aes-128-ecb", key)


# --------------------------------------------------------------------------- DeviceNotFound

@pytest.mark.parametrize("form", [
    pytest.param(("cuda", 1, False), id="cuda-N"),
    pytest.param(("opencl", 1, False), id="opencl-P"),
    pytest.param(("opencl", 2, True), id="opencl-present-P-absent-N"),
    pytest.param(("opencl", 2, False), id="opencl-absent-P-N"),
])
def test_device_not_found(form, cipher_name):
    runtime, depth, on_present = form
    spec = absent_spec(runtime, depth, on_present_platform=on_present)
    s = registry.lookup(cipher_name)
    key = bytes(range(1, s.key_len + 1))
    iv = bytes(s.iv_len) if s.iv_len else None
    for msg in _both(ciphergrid.DeviceNotFound, bytes(64), cipher_name, key, iv, device=spec):
        assert spec in msg, f"the message should name the device asked for: {msg!r}"


@pytest.mark.parametrize("spec", ["bogus", "opencl:x", "cuda:-1"])
def test_malformed_device_spec(spec):
    with pytest.raises((ciphergrid.DeviceNotFound, ciphergrid.InvalidArgument)) as ei:
        ciphergrid.encrypt(bytes(16), "aes-128-ecb", bytes(16), device=spec)
    assert isinstance(ei.value, ciphergrid.Error)


def test_errors_leave_no_state(device, ref):
    """A failed call does not poison the next one (same key, same device)."""
    key, iv = bytes(range(16)), bytes(range(16))
    with pytest.raises(ciphergrid.InvalidLength):
        ciphergrid.encrypt(bytes(17), "aes-128-cbc", key, iv, device=device)
    with pytest.raises(ciphergrid.InvalidIVSize):
        ciphergrid.encrypt(bytes(32), "aes-128-cbc", key, iv[:8], device=device)
    pt = bytes(range(64))
    assert ciphergrid.encrypt(pt, "aes-128-cbc", key, iv, device=device) == ref.encrypt(pt, "aes-128-cbc", key, iv)
