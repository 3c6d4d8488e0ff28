"""Differential tests: ciphergrid against pyca/cryptography (OpenSSL) on random keys, IVs and data.

Every registered name on every device.  Random values come from the ``rng`` fixture (seeded from
CIPHERGRID_TEST_SEED and the test id; the seed is printed when a test fails).  Encryption is
compared with the reference's ciphertext; decryption is run on the *reference's* ciphertext, so the
two directions are checked independently.

Sizes: the small ones for every name; the multi-MiB ones (chunk edges) for every name on GPUs and
the native engine, and for one name per mode (rotating the key sizes) on OpenCL/CUDA CPU devices
(PoCL in CI), to keep the suite within a few minutes there.  64 MiB+ inputs: ``slow`` + GPU only.
"""

from __future__ import annotations

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry

MiB = 1 << 20
SMALL_SIZES = [0, 1, 15, 16, 17, 31, 33, 4095, 4096 + 13]
# multi-MiB sizes: 1 MiB + 3 and the edges of 4 MiB (a likely transfer/launch chunk size)
LARGE_SIZES_SLOW_DEVICE = [MiB + 3, 4 * MiB - 16, 4 * MiB + 16]
LARGE_SIZES_FAST_DEVICE = [MiB + 3, 4 * MiB - 16, 4 * MiB, 4 * MiB + 16, 8 * MiB + 32 + 5]
# on CPU OpenCL/CUDA devices the large sizes run for one name per mode
LARGE_SUBSET = {"ecb": "aes-128-ecb", "cbc": "aes-192-cbc", "ctr": "aes-256-ctr", "xts": "aes-128-xts"}
XTS_MAX_UNIT = 16 << 20  # 2^20 blocks


def _names(*modes: str) -> list[str]:
    return [n for n in registry.names() if registry.lookup(n).mode.name in modes]


BLOCK_NAMES = _names("ecb", "cbc")
CTR_NAMES = _names("ctr")
XTS_NAMES = _names("xts")
MODES_PRESENT = sorted({registry.lookup(n).mode.name for n in registry.names()})


def _ctx(name, device, key, iv, size, **kw) -> str:
    extra = "".join(f" {k}={v!r}" for k, v in kw.items() if v is not None)
    return (f"{name} on {device}, len={size}, key={key.hex()}, "
            f"iv={iv.hex() if iv is not None else None}{extra}")


def _check_both(name, device, key, iv, pt, ref, diff, **kw):
    """encrypt(pt) == reference ciphertext; decrypt(reference ciphertext) == pt."""
    want_ct = ref.encrypt(pt, name, key, iv, **kw)
    got_ct = ciphergrid.encrypt(pt, name, key, iv, device=device, **kw)
    assert type(got_ct) is bytes
    assert got_ct == want_ct, f"encrypt: {_ctx(name, device, key, iv, len(pt), **kw)}: {diff(got_ct, want_ct)}"
    got_pt = ciphergrid.decrypt(want_ct, name, key, iv, device=device, **kw)
    assert type(got_pt) is bytes
    assert got_pt == pt, f"decrypt: {_ctx(name, device, key, iv, len(pt), **kw)}: {diff(got_pt, pt)}"


# --------------------------------------------------------------------------- ECB / CBC

@pytest.mark.parametrize("size", SMALL_SIZES)
@pytest.mark.parametrize("name", BLOCK_NAMES)
def test_ecb_cbc(name, size, device, rng, ref, diff):
    key, iv, pt = rng.key(name), rng.iv(name), rng.data(size)
    if size % 16 == 0:
        _check_both(name, device, key, iv, pt, ref, diff)
    _check_both(name, device, key, iv, pt, ref, diff, padding="pkcs7")


# --------------------------------------------------------------------------- CTR

@pytest.mark.parametrize("size", SMALL_SIZES)
@pytest.mark.parametrize("name", CTR_NAMES)
def test_ctr(name, size, device, rng, ref, diff):
    _check_both(name, device, rng.key(name), rng.iv(name), rng.data(size), ref, diff)


# initial counters near the 2^32, 2^64 and 2^128 boundaries (full-width big-endian carry); for
# 8-byte blocks (a 64-bit counter) the same shapes at the block's width: r is the rng, b the block size
CTR_EDGE_IVS = {
    "ff*16": lambda r, b: b"\xff" * b,                                # wraps to 0 after block 0
    "00*8+ff*8": lambda r, b: b"\x00" * (b // 2) + b"\xff" * (b // 2),  # carry into the high half
    "2^128-3": lambda r, b: b"\xff" * (b - 1) + b"\xfd",
    "rand+ff*8": lambda r, b: r.randbytes(b // 2) + b"\xff" * (b // 2),
    "rand+ff*7+00": lambda r, b: r.randbytes(b - 8) + b"\xff" * 7 + b"\x00",  # carry after 256 blocks
    "rand+fffffff0": lambda r, b: r.randbytes(b - 4) + b"\xff\xff\xff\xf0",  # 32-bit carry after 16 blocks
}


@pytest.mark.parametrize("iv_case", list(CTR_EDGE_IVS))
@pytest.mark.parametrize("name", CTR_NAMES)
def test_ctr_counter_wrap(name, iv_case, device, device_is_fast, rng, ref, diff):
    key = rng.key(name)
    iv = CTR_EDGE_IVS[iv_case](rng, registry.lookup(name).block_size)
    sizes = [16 * 5 + 7, 4096 + 13, 65536 + 5] + ([MiB + 3] if device_is_fast else [])
    for size in sizes:
        _check_both(name, device, key, iv, rng.data(size), ref, diff)
    # the carry must also work when the wrap falls in the middle of a later call's counter range
    # (the counter a streaming context resumes from)
    c = ciphergrid.Cipher(name, key, iv, device=device).encryptor()
    pt = rng.data(16 * 300 + 9)
    got = c.update(pt[:16 * 3 + 1]) + c.update(pt[16 * 3 + 1:]) + c.finalize()
    want = ref.encrypt(pt, name, key, iv)
    assert got == want, f"streamed: {_ctx(name, device, key, iv, len(pt))}: {diff(got, want)}"


# --------------------------------------------------------------------------- XTS, one data unit

@pytest.mark.parametrize("size", [s for s in SMALL_SIZES if s >= 16] + [32, 512, 512 + 15])
@pytest.mark.parametrize("name", XTS_NAMES)
def test_xts_one_unit(name, size, device, rng, ref, diff):
    _check_both(name, device, rng.key(name), rng.iv(name), rng.data(size), ref, diff)


# --------------------------------------------------------------------------- XTS, sector mode

SECTOR_LAYOUTS = {
    "whole": lambda s: 5 * s,                 # a multiple of the sector size
    "short-last": lambda s: 3 * s + 16 + 7,  # last sector shorter (>= 16 bytes, stealing)
    "short-last-16": lambda s: 2 * s + 16,    # last sector of exactly one block
    "one-short": lambda s: s // 2 + 3,        # a single unit shorter than the sector size
}


@pytest.mark.parametrize("layout", list(SECTOR_LAYOUTS))
@pytest.mark.parametrize("start", [0, 2**40 + 7], ids=["start0", "start2^40+7"])
@pytest.mark.parametrize("sector_size", [512, 4096])
@pytest.mark.parametrize("name", XTS_NAMES)
def test_xts_sectors(name, sector_size, start, layout, device, rng, ref, diff):
    pt = rng.data(SECTOR_LAYOUTS[layout](sector_size))
    _check_both(name, device, rng.key(name), None, pt, ref, diff,
                sector_size=sector_size, start_sector=start)


@pytest.mark.parametrize("name", XTS_NAMES)
def test_xts_sectors_128bit_tweak_carry(name, device, rng, ref, diff):
    """Tweak = LE128(start_sector + n): the sequence number carries past 2^64 (no 64-bit wrap)."""
    _check_both(name, device, rng.key(name), None, rng.data(4 * 512), ref, diff,
                sector_size=512, start_sector=2**64 - 2)


@pytest.mark.parametrize("name", XTS_NAMES)
def test_xts_sectors_equal_one_unit_calls(name, device, rng):
    """Sector mode is the concatenation of one-unit calls with iv = LE128(sector number)."""
    key, s, start = rng.key(name), 4096, 123456789
    pt = rng.data(4 * s + 100)
    whole = ciphergrid.encrypt(pt, name, key, sector_size=s, start_sector=start, device=device)
    parts = b"".join(
        ciphergrid.encrypt(pt[o:o + s], name, key, (start + n).to_bytes(16, "little"), device=device)
        for n, o in enumerate(range(0, len(pt), s)))
    assert whole == parts


# --------------------------------------------------------------------------- large inputs

def _large_case(mode, name, size, device, rng, ref, diff):
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(size)
    if mode in ("ecb", "cbc"):
        if size % 16 == 0:
            _check_both(name, device, key, iv, pt, ref, diff)
        _check_both(name, device, key, iv, pt, ref, diff, padding="pkcs7")
    elif mode == "xts":
        _check_both(name, device, key, iv, pt, ref, diff)
        tail = size % 4096
        n = size - tail if 0 < tail < 16 else size  # a last sector needs >= 16 bytes
        _check_both(name, device, key, None, pt[:n], ref, diff, sector_size=4096, start_sector=size)
    else:
        _check_both(name, device, key, iv, pt, ref, diff)


def _large_ok(name: str, device: str | None) -> bool:
    """Whether a multi-MiB case of ``name`` can run: the native engine runs only what OpenSSL has,
    and CBC's reference for a cipher pyca lacks (MISTY1) is the Python model one block after the
    other: minutes per MiB (such names are checked at smaller sizes in their own tests)."""
    from ciphergrid.testing import oracle

    spec = registry.lookup(name)
    if device == "native" and spec.openssl_name is None:
        return False
    return spec.mode.name != "cbc" or oracle.source(name).startswith("pyca")


@pytest.mark.parametrize("mode", MODES_PRESENT)
def test_large(mode, device, device_is_fast, rng, ref, diff):
    """Multi-MiB inputs across chunk edges; every name of the mode on GPUs, one on CPUs and on the
    native engine (its chunks and threads are the same code for every name, and its reference,
    pyca/cryptography, is OpenSSL too: every name there took 30 s of CI's two cores)."""
    every = device_is_fast and device != "native"
    names = _names(mode) if every else [LARGE_SUBSET.get(mode) or _names(mode)[0]]
    names = [n for n in names if _large_ok(n, device)]
    sizes = LARGE_SIZES_FAST_DEVICE if device_is_fast else LARGE_SIZES_SLOW_DEVICE
    for name in names:
        for size in sizes:
            _large_case(mode, name, size, device, rng, ref, diff)
    if mode == "xts" and device_is_fast:
        # the largest single data unit accepted (2^20 blocks), exactly
        for name in names:
            key, iv = rng.key(name), rng.iv(name)
            _check_both(name, device, key, iv, rng.data(XTS_MAX_UNIT), ref, diff)


@pytest.mark.slow
@pytest.mark.parametrize("name", registry.names())
def test_huge_gpu(name, gpu_device, rng, ref, diff):
    """64 MiB+ inputs, GPU devices only (marked slow)."""
    if not _large_ok(name, gpu_device):
        pytest.skip(f"{name}: the CBC reference is the Python model, serial (minutes per MiB)")
    mode = registry.lookup(name).mode.name
    key, iv = rng.key(name), rng.iv(name)
    # CTR: an odd tail; XTS: short last sectors of 21 bytes for both sector sizes below
    size = 64 * MiB + {"ecb": 0, "cbc": 0, "ctr": 4096 + 5, "xts": 4096 + 21}[mode]
    pt = rng.data(size)
    if mode == "xts":
        _check_both(name, gpu_device, key, None, pt, ref, diff, sector_size=4096, start_sector=2**33 + 1)
        _check_both(name, gpu_device, key, None, pt, ref, diff, sector_size=512, start_sector=0)
        _check_both(name, gpu_device, key, iv, pt[:XTS_MAX_UNIT], ref, diff)
    else:
        _check_both(name, gpu_device, key, iv, pt, ref, diff)
        if mode in ("ecb", "cbc"):
            _check_both(name, gpu_device, key, iv, pt[:-5], ref, diff, padding="pkcs7")


# --------------------------------------------------------------------------- input types

def _valid_size(name: str) -> int:
    return 16 * 37 if registry.lookup(name).mode.name in ("ecb", "cbc") else 16 * 37 + 5


def test_input_types(cipher_name, device, rng, ref):
    """bytes, bytearray, memoryview -> bytes; 1-D uint8 numpy array -> 1-D uint8 numpy array;
    the input is never modified."""
    name = cipher_name
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(_valid_size(name))
    want = ref.encrypt(pt, name, key, iv)
    variants = {
        "bytes": bytes(pt),
        "bytearray": bytearray(pt),
        "memoryview": memoryview(bytearray(pt)),
        "memoryview-slice": memoryview(b"\x00" * 3 + pt + b"\x00" * 5)[3:3 + len(pt)],
        "numpy": np.frombuffer(pt, dtype=np.uint8).copy(),
        "numpy-readonly": np.frombuffer(pt, dtype=np.uint8),
        "numpy-offset": np.frombuffer(b"\x01" + pt, dtype=np.uint8)[1:],
        "numpy-strided": np.repeat(np.frombuffer(pt, dtype=np.uint8), 2)[::2],
    }
    for label, data in variants.items():
        before = bytes(np.asarray(data)) if isinstance(data, np.ndarray) else bytes(data)
        out = ciphergrid.encrypt(data, name, key, iv, device=device)
        after = bytes(np.asarray(data)) if isinstance(data, np.ndarray) else bytes(data)
        assert after == before, f"{label}: input was modified"
        if isinstance(data, np.ndarray):
            assert isinstance(out, np.ndarray), f"{label}: returned {type(out).__name__}"
            assert out.dtype == np.uint8 and out.ndim == 1, f"{label}: {out.dtype} {out.shape}"
            assert out.tobytes() == want, f"{label}: wrong ciphertext"
            back = ciphergrid.decrypt(out, name, key, iv, device=device)
            assert isinstance(back, np.ndarray) and back.dtype == np.uint8 and back.tobytes() == pt
        else:
            assert type(out) is bytes, f"{label}: returned {type(out).__name__}"
            assert out == want, f"{label}: wrong ciphertext"
            back = ciphergrid.decrypt(type(data)(out), name, key, iv, device=device)
            assert type(back) is bytes and back == pt, f"{label}: decrypt"


def test_numpy_empty_and_padding(device, rng, ref):
    """numpy in -> numpy out also for empty input and when padding changes the length."""
    name = "aes-128-cbc" if "aes-128-cbc" in registry.names() else registry.names()[0]
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(21)
    out = ciphergrid.encrypt(np.frombuffer(pt, np.uint8), name, key, iv, padding="pkcs7", device=device)
    assert isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.size == 32
    assert out.tobytes() == ref.encrypt(pt, name, key, iv, padding="pkcs7")
    back = ciphergrid.decrypt(out, name, key, iv, padding="pkcs7", device=device)
    assert isinstance(back, np.ndarray) and back.tobytes() == pt
    empty = ciphergrid.encrypt(np.zeros(0, np.uint8), name, key, iv, device=device)
    assert isinstance(empty, np.ndarray) and empty.size == 0


# --------------------------------------------------------------------------- device selection

def test_default_device(cipher_name, rng, ref):
    """device omitted and device="auto" give the reference result."""
    name = cipher_name
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(_valid_size(name))
    want = ref.encrypt(pt, name, key, iv)
    assert ciphergrid.encrypt(pt, name, key, iv) == want
    assert ciphergrid.encrypt(pt, name, key, iv, device="auto") == want
    assert ciphergrid.decrypt(want, name, key, iv, device="auto") == pt


def test_name_spelling(device, rng, ref):
    """Names are looked up as OpenSSL spells them, case-insensitively (registry.lookup)."""
    name = registry.names()[0]
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(_valid_size(name))
    assert ciphergrid.encrypt(pt, name.upper(), key, iv, device=device) == ref.encrypt(pt, name, key, iv)


def test_available_ciphers():
    from ciphergrid import aeads

    assert list(ciphergrid.available_ciphers()) == registry.names() + aeads.names()


def test_devices_listing():
    devs = ciphergrid.devices()
    specs = [d.spec for d in devs]
    assert len(specs) == len(set(specs)), f"duplicate device specs: {specs}"
    assert "native" in specs
    for d in devs:
        assert d.runtime in ("opencl", "cuda", "native"), d
        assert d.kind in ("cpu", "gpu"), d
        assert isinstance(d.name, str) and d.name
        assert d.spec == "native" or d.spec.startswith(d.runtime + ":"), d
        assert isinstance(d.compute_units, int) and d.compute_units >= 1, d
        assert isinstance(d.memory, int) and d.memory >= 0, d
