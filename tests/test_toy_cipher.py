"""A toy 64-bit block cipher, declared here and nowhere else, run through ECB, CBC and CTR on every
device present against its Python model.

This is the proof that a cipher is "a declaration + one kernel file": ``Toy64`` below is a
``BlockCipher`` whose kernel is ``tests/toy_cipher.cl`` (an absolute path in its ``Implementation``),
registered for this module only (``registry.register``/``unregister``).  It is the first cipher with
8-byte blocks, so it compiles and runs the ``CG_BLOCK_WORDS == 2`` path of ``kernels/modes.cl``
(ECB, the 64-bit big-endian CTR counter, serial CBC encryption on one work-item, parallel CBC
decryption) on OpenCL and CUDA devices.

TOY64 is NOT a cipher to use: a 16-round Feistel network on two 32-bit words with an ARX round
function, a 128-bit key, input and output whitening (see toy_cipher.cl).  The model is written
twice (one block at a time with Python ints, and vectorised with numpy for long inputs) and checked
on its own: decryption (written as the inverse of the rounds, not as the kernel's reversed
schedule) undoes encryption, the kernel's reversed-schedule trick decrypts, every key bit matters,
and a pinned known answer.

OpenSSL lacks TOY64 (``openssl_provider = None``): the capability table says so, the ``native``
device refuses it with UnsupportedCipher, and CBC encryption (serial) runs on the device's
one-work-item kernel ``cg_cbc_enc`` (checked by watching the kernel launches).  The reference is
``ciphergrid.testing.oracle`` (pyca lacks TOY64, so it composes ``reference_ecb`` with the modes).
Paths: one-shot calls, streaming contexts with random splits, and the device engine's stream()
over files and pipes.  Sizes stay below a few hundred KiB (PoCL in CI); a forced small pipeline
chunk makes every device split a message into many launches.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry, route as route_mod
from ciphergrid.algorithms.base import BlockCipher, Implementation
from ciphergrid.testing import oracle

from conftest import device_info, first_difference as diff_of, watch_launches

KERNEL_FILE = str(Path(__file__).resolve().with_name("toy_cipher.cl"))
ROUNDS = 16
MASK = 0xFFFFFFFF
KiB = 1 << 10


# --------------------------------------------------------------------------- the Python model

def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & MASK


def _f(x: int, k: int) -> int:
    return _rotl((x + k) & MASK, 7) ^ _rotl(x, 19)


def schedule(key: bytes) -> list[int]:
    """ROUNDS + 4 words: w0 w1 | k[0..ROUNDS-1] | w2 w3, from the key's four little-endian words."""
    x = list(struct.unpack("<4I", bytes(key)))
    out = []
    for i in range(ROUNDS + 4):
        t = (x[0] + _rotl(x[1] ^ x[3], 5) + 0x9E3779B9 * (i + 1)) & MASK
        t ^= _rotl(x[2], 11)
        x = x[1:] + [t]
        out.append(t)
    return out


def encrypt_block(ks: list[int], l: int, r: int) -> tuple[int, int]:
    l ^= ks[0]
    r ^= ks[1]
    for i in range(ROUNDS):
        l, r = r, l ^ _f(r, ks[2 + i])
    return r ^ ks[ROUNDS + 2], l ^ ks[ROUNDS + 3]


def decrypt_block(ks: list[int], c0: int, c1: int) -> tuple[int, int]:
    """The inverse of encrypt_block, round by round (not the kernel's reversed-schedule trick)."""
    r, l = c0 ^ ks[ROUNDS + 2], c1 ^ ks[ROUNDS + 3]
    for i in reversed(range(ROUNDS)):
        l, r = r ^ _f(l, ks[2 + i]), l
    return l ^ ks[0], r ^ ks[1]


def ecb_scalar(key: bytes, data: bytes, encrypt: bool) -> bytes:
    ks = schedule(key)
    fn = encrypt_block if encrypt else decrypt_block
    out = bytearray()
    for i in range(0, len(data), 8):
        out += struct.pack("<2I", *fn(ks, *struct.unpack("<2I", data[i: i + 8])))
    return bytes(out)


def _rotl_np(x, n: int):
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


def _f_np(x, k):
    return _rotl_np(x + np.uint32(k), 7) ^ _rotl_np(x, 19)


def ecb_numpy(key: bytes, data: bytes, encrypt: bool) -> bytes:
    ks = schedule(key)
    w = np.frombuffer(bytes(data), dtype="<u4").astype(np.uint32).reshape(-1, 2)
    if encrypt:
        l, r = w[:, 0] ^ np.uint32(ks[0]), w[:, 1] ^ np.uint32(ks[1])
        for i in range(ROUNDS):
            l, r = r, l ^ _f_np(r, ks[2 + i])
        a, b = r ^ np.uint32(ks[ROUNDS + 2]), l ^ np.uint32(ks[ROUNDS + 3])
    else:
        r, l = w[:, 0] ^ np.uint32(ks[ROUNDS + 2]), w[:, 1] ^ np.uint32(ks[ROUNDS + 3])
        for i in reversed(range(ROUNDS)):
            l, r = r ^ _f_np(l, ks[2 + i]), l
        a, b = l ^ np.uint32(ks[0]), r ^ np.uint32(ks[1])
    return np.stack([a, b], axis=1).astype("<u4").tobytes()


# --------------------------------------------------------------------------- the declaration

class Toy64(BlockCipher):
    """TOY64 as ciphergrid sees it: sizes, names, a kernel file, a key schedule, a model."""

    name = "toy64"
    block_size = 8
    key_sizes = (16,)
    variants = (("toy64", 16, ("ecb", "cbc", "ctr")),)
    implementations = {
        "fast": Implementation(KERNEL_FILE, batch=2),                       # 2 blocks per step
        "one-per-item": Implementation(KERNEL_FILE, batch=1, grid="per-block"),
    }
    openssl_provider = None

    def defines(self, key_size: int) -> dict[str, int]:
        return {"TOY_ROUNDS": ROUNDS}

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout is not None:
            raise ValueError(f"unknown TOY64 key layout {layout!r}")
        self.check_key(key)
        ks = schedule(key)
        if decrypt:  # the same Feistel network, schedule reversed (toy_cipher.cl)
            ks = ks[ROUNDS + 2:] + ks[2: ROUNDS + 2][::-1] + ks[:2]
        return np.array(ks, dtype="<u4")

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        self.check_key(key)
        if len(data) % 8:
            raise ValueError("TOY64 ECB takes whole 8-byte blocks")
        if len(data) <= 8 * 32:  # (the oracle's CBC asks one block at a time)
            return ecb_scalar(key, data, encrypt)
        return ecb_numpy(key, data, encrypt)


TOY = Toy64()
NAMES = {"ecb": "toy64-ecb", "cbc": "toy64-cbc", "ctr": "toy64-ctr"}
KERNELS = {("ecb", True): "cg_ecb_enc", ("ecb", False): "cg_ecb_dec", ("cbc", True): "cg_cbc_enc",
           ("cbc", False): "cg_cbc_dec", ("ctr", True): "cg_ctr", ("ctr", False): "cg_ctr"}


@pytest.fixture(scope="module", autouse=True)
def toy_registered():
    names = registry.register(TOY)
    try:
        yield names
    finally:
        registry.unregister(names)


# --------------------------------------------------------------------------- helpers

def is_native(device: str) -> bool:
    return device_info(device).runtime == "native"


@pytest.fixture
def launches(device, monkeypatch):
    """The names of the kernels launched on ``device`` during the test (None for native)."""
    if is_native(device):
        return None
    return watch_launches(device, monkeypatch)


def _ctx(name, device, key, iv, n, **kw) -> str:
    extra = "".join(f" {k}={v!r}" for k, v in kw.items() if v is not None)
    return f"{name} on {device}, len={n}, key={key.hex()}, iv={iv.hex() if iv else None}{extra}"


def check_both(name, device, key, iv, pt, diff, implementation=None, **kw):
    """ciphergrid.encrypt == the oracle; ciphergrid.decrypt(oracle ciphertext) == pt."""
    want = oracle.crypt(name, key, iv, pt, True, **kw)
    kw_api = dict(kw, implementation=implementation)
    got = ciphergrid.encrypt(pt, name, key, iv, device=device, **kw_api)
    assert type(got) is bytes
    kw = kw_api
    assert got == want, f"encrypt: {_ctx(name, device, key, iv, len(pt), **kw)}: {diff(got, want)}"
    back = ciphergrid.decrypt(want, name, key, iv, device=device, **kw)
    assert back == pt, f"decrypt: {_ctx(name, device, key, iv, len(pt), **kw)}: {diff(back, pt)}"
    return want


def expect_refused(name, device, key, iv):
    """OpenSSL lacks TOY64: the native engine refuses every mode and direction."""
    for fn in (ciphergrid.encrypt, ciphergrid.decrypt):
        with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
            fn(bytes(64), name, key, iv, device=device)


def pieces(rng, data: bytes) -> list[bytes]:
    """``data`` cut at random places (empty, 1-byte and block-unaligned pieces included)."""
    out, i = [], 0
    while i < len(data):
        k = rng.choice([0, 1, 3, 7, 8, 9, 15, 64, 1000, rng.randrange(1, 40 * KiB)])
        out.append(data[i: i + k])
        i += k
    return out


# --------------------------------------------------------------------------- the model itself

def test_model_round_trip_and_vectorised_model(rng):
    key = rng.randbytes(16)
    data = rng.data(8 * 300)
    ct = ecb_scalar(key, data, True)
    assert ct != data
    assert ecb_scalar(key, ct, False) == data            # the round-by-round inverse
    assert ecb_numpy(key, data, True) == ct               # the two writings of the model agree
    assert ecb_numpy(key, ct, False) == data
    assert TOY.reference_ecb(key, data, True) == ct and TOY.reference_ecb(key, ct, False) == data
    for i in range(0, 8 * 40, 8):                          # (reference_ecb's scalar branch)
        assert TOY.reference_ecb(key, data[i: i + 8], True) == ct[i: i + 8]


def test_model_reversed_schedule_decrypts(rng):
    """What toy_cipher.cl relies on: the encryption network with expand(decrypt=True) decrypts."""
    key = rng.randbytes(16)
    ek = TOY.expand(key, False)
    dk = TOY.expand(key, True)
    assert ek.dtype == np.dtype("<u4") and dk.dtype == np.dtype("<u4") and len(ek) == ROUNDS + 4
    assert ek.tolist() == schedule(key)
    assert dk.tolist() == ek[ROUNDS + 2:].tolist() + ek[2: ROUNDS + 2][::-1].tolist() + ek[:2].tolist()
    for _ in range(50):
        p = (rng.getrandbits(32), rng.getrandbits(32))
        c = encrypt_block(ek.tolist(), *p)
        assert encrypt_block(dk.tolist(), *c) == p
        assert decrypt_block(ek.tolist(), *c) == p


def test_model_is_key_dependent_and_pinned():
    key = bytes(range(16))
    pt = bytes(range(0x20, 0x28))
    ct = ecb_scalar(key, pt, True)
    assert ct != pt
    # every key bit changes the ciphertext of the same block
    for bit in range(128):
        k2 = bytearray(key)
        k2[bit // 8] ^= 1 << (bit % 8)
        assert ecb_scalar(bytes(k2), pt, True) != ct, f"key bit {bit} does not matter"
    # every plaintext bit changes the ciphertext (a permutation)
    for bit in range(64):
        p2 = bytearray(pt)
        p2[bit // 8] ^= 1 << (bit % 8)
        assert ecb_scalar(key, bytes(p2), True) != ct
    # the key's words are read little-endian and the rounds do something: swapping two key bytes
    # inside one word changes the output
    assert ecb_scalar(bytes([1, 0]) + key[2:], pt, True) != ecb_scalar(key, pt, True)
    # pinned from this model when written: a change to the model (and so to what the kernel is
    # checked against) shows here
    assert ct.hex() == "ca74cf7cdd8ff236", ct.hex()


# --------------------------------------------------------------------------- registration, routing

def test_registered_names_and_capabilities():
    names = ciphergrid.available_ciphers()
    for n in NAMES.values():
        assert n in names
    for mode, n in NAMES.items():
        spec = registry.lookup(n)
        assert spec.algorithm is TOY and spec.block_size == 8 and spec.key_len == 16
        assert spec.iv_len == (0 if mode == "ecb" else 8)
        assert spec.openssl_name is None
        serial = "serial" if mode == "cbc" else "parallel"
        assert spec.capabilities() == {"encrypt": {"device": serial, "openssl": None},
                                       "decrypt": {"device": "parallel", "openssl": None}}
        assert oracle.source(n).startswith("toy64 reference_ecb"), oracle.source(n)
    # XTS is not defined for 64-bit blocks
    assert "toy64-xts" not in names


def test_register_refuses_xts_and_unregisters():
    class Toy64X(Toy64):
        name = "toy64x"
        variants = (("toy64x", 16, ("ecb", "xts")),)

    with pytest.raises(ValueError, match="xts is not defined for toy64x"):
        registry.register(Toy64X())
    registry.unregister(["toy64x-ecb"])  # (registered before the refusal)

    class Toy64Y(Toy64):
        name = "toy64y"
        variants = (("toy64y", 16, ("ctr",)),)

    added = registry.register(Toy64Y())
    try:
        assert added == ["toy64y-ctr"] and "toy64y-ctr" in ciphergrid.available_ciphers()
    finally:
        registry.unregister(added)
    assert "toy64y-ctr" not in ciphergrid.available_ciphers()
    with pytest.raises(ciphergrid.UnsupportedCipher):
        registry.lookup("toy64y-ctr")


def test_argument_checks_use_the_8_byte_block(rng):
    key = rng.randbytes(16)
    with pytest.raises(ciphergrid.InvalidIVSize, match="8-byte IV"):
        ciphergrid.encrypt(bytes(16), "toy64-cbc", key, bytes(16))
    with pytest.raises(ciphergrid.InvalidLength, match="8-byte blocks"):
        ciphergrid.encrypt(bytes(12), "toy64-ecb", key)
    with pytest.raises(ciphergrid.InvalidKeySize):
        ciphergrid.encrypt(bytes(16), "toy64-ecb", bytes(24))


@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
def test_route(mode, device):
    from ciphergrid.request import make_request

    spec = registry.lookup(NAMES[mode])
    for encrypt in (True, False):
        req = make_request(spec, bytes(16), None if mode == "ecb" else bytes(8), encrypt)
        how = "serial" if (mode == "cbc" and encrypt) else "parallel"
        if is_native(device):
            with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
                route_mod.route(req, device, 4096)
        else:
            r = route_mod.route(req, device, 4096)
            assert r.engine.kind == "device" and r.device == device and r.how == how
            assert r.reason == ""  # no OpenSSL to fall back on, nothing re-decided
        # auto: some device engine (no GPU below 1 MiB: an OpenCL CPU device, else a GPU)
        if any(d.runtime != "native" for d in ciphergrid.devices()):
            for n in (4096, 2 << 20):
                r = route_mod.route(req, "auto", n)
                assert r.engine.kind == "device" and r.how == how


# --------------------------------------------------------------------------- one-shot calls

BLOCK_SIZES = [8, 16, 24, 8 * 37, 4096, 64 * KiB + 8, 200 * KiB + 24]
CTR_SIZES = [1, 7, 8, 9, 15, 17, 4095, 64 * KiB + 5, 200 * KiB + 3]


@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
def test_one_shot(mode, device, rng, diff, launches):
    name = NAMES[mode]
    key, iv = rng.randbytes(16), (None if mode == "ecb" else rng.randbytes(8))
    if is_native(device):
        expect_refused(name, device, key, iv)
        return
    for n in (CTR_SIZES if mode == "ctr" else BLOCK_SIZES):
        del launches[:]
        check_both(name, device, key, iv, rng.data(n), diff)
        assert set(launches) == {KERNELS[mode, True], KERNELS[mode, False]}, launches
    # empty input: nothing launched, nothing returned
    del launches[:]
    assert ciphergrid.encrypt(b"", name, key, iv, device=device) == b""
    assert launches == []
    if mode != "ctr":  # PKCS#7 over 8-byte blocks
        for n in (0, 1, 7, 8, 13, 4096 + 5):
            ct = check_both(name, device, key, iv, rng.data(n), diff, padding="pkcs7")
            assert len(ct) == (n // 8 + 1) * 8
    # numpy in, numpy out (shape and dtype kept)
    arr = np.frombuffer(rng.data(8 * 64), dtype=np.uint32).reshape(8, 16)
    got = ciphergrid.encrypt(arr, name, key, iv, device=device)
    assert isinstance(got, np.ndarray) and got.shape == arr.shape and got.dtype == arr.dtype
    assert got.tobytes() == oracle.crypt(name, key, iv, arr.tobytes(), True)


@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
def test_other_implementation(mode, device, rng, diff):
    """The one-block-per-work-item implementation (batch 1, a grid of one item per block)."""
    name = NAMES[mode]
    key, iv = rng.randbytes(16), (None if mode == "ecb" else rng.randbytes(8))
    if is_native(device):
        return expect_refused(name, device, key, iv)
    for n in ((8, 8 * 333, 70 * KiB) if mode != "ctr" else (5, 8 * 333 + 3, 70 * KiB + 1)):
        check_both(name, device, key, iv, rng.data(n), diff, implementation="one-per-item")


def test_auto_device(rng, diff):
    """device="auto" finds a device engine for TOY64 (OpenSSL lacks it), or says there is none."""
    have_device = any(d.runtime != "native" for d in ciphergrid.devices())
    for name in NAMES.values():
        key = rng.randbytes(16)
        iv = None if name.endswith("ecb") else rng.randbytes(8)
        if not have_device:
            with pytest.raises(ciphergrid.UnsupportedCipher):
                ciphergrid.encrypt(bytes(64), name, key, iv)
            continue
        check_both(name, "auto", key, iv, rng.data(3000 - 3000 % 8), diff)


# --------------------------------------------------------------------------- CTR: the 64-bit counter

def test_ctr_counter_wraps_modulo_2_64(device, rng, diff, monkeypatch, launches):
    name = NAMES["ctr"]
    key = rng.randbytes(16)
    if is_native(device):
        return expect_refused(name, device, key, bytes(8))
    ivs = [b"\xff" * 8,                                    # block 1 has counter 0
           ((1 << 64) - 3).to_bytes(8, "big"),
           (0xFFFFFFFF - 1).to_bytes(8, "big"),           # carry from the low word into the high one
           rng.randbytes(8)]
    for iv in ivs:
        for n in (8 * 5 + 3, 4096 + 1):
            check_both(name, device, key, iv, rng.data(n), diff)
    # independently of the oracle's counter: after ff..ff comes 00..00, after 00..00 comes 00..01
    ks = ciphergrid.encrypt(bytes(24), name, key, b"\xff" * 8, device=device)
    assert ks[:8] == ecb_scalar(key, b"\xff" * 8, True)
    assert ks[8:16] == ecb_scalar(key, bytes(8), True)
    assert ks[16:] == ecb_scalar(key, bytes(7) + b"\x01", True)
    # the wrap inside the second of many launches (16 KiB chunks: 2048 blocks each)
    monkeypatch.setenv("CIPHERGRID_CHUNK_SIZE", "16Ki")
    del launches[:]
    iv = ((1 << 64) - 2048 - 100).to_bytes(8, "big")
    check_both(name, device, key, iv, rng.data(6 * 16 * KiB + 5), diff)
    assert launches.count("cg_ctr") >= 2 * 6, launches


# --------------------------------------------------------------------------- many launches

@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
def test_split_into_many_launches(mode, device, rng, diff, monkeypatch, launches):
    """A forced 16 KiB pipeline chunk: each message runs as several launches, each with the mode's
    state at its first block (CTR counter, CBC chain carried on the device or read from the input)."""
    name = NAMES[mode]
    key, iv = rng.randbytes(16), (None if mode == "ecb" else rng.randbytes(8))
    if is_native(device):
        return expect_refused(name, device, key, iv)
    monkeypatch.setenv("CIPHERGRID_CHUNK_SIZE", "16Ki")
    n = 5 * 16 * KiB + 8 * 3 + (5 if mode == "ctr" else 0)
    del launches[:]
    check_both(name, device, key, iv, rng.data(n), diff)
    enc, dec = KERNELS[mode, True], KERNELS[mode, False]
    assert launches.count(enc) + (launches.count(dec) if dec != enc else 0) >= 2 * 6, launches
    if mode == "cbc":
        assert launches.count("cg_cbc_enc") >= 6 and launches.count("cg_cbc_dec") >= 6


# --------------------------------------------------------------------------- streaming contexts

@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
def test_contexts_random_splits(mode, device, rng, diff, launches):
    name = NAMES[mode]
    key, iv = rng.randbytes(16), (None if mode == "ecb" else rng.randbytes(8))
    n = 96 * KiB + (13 if mode == "ctr" else 0)
    pt = rng.data(n)
    with ciphergrid.Cipher(name, key, iv, device=device) as c:
        if is_native(device):
            with pytest.raises(ciphergrid.UnsupportedCipher):
                c.encryptor().update(bytes(64))
            return
        want = oracle.crypt(name, key, iv, pt, True)
        for _ in range(2):
            e = c.encryptor()
            parts = pieces(rng, pt)
            out = b"".join(e.update(p) for p in parts) + e.finalize()
            assert out == want, f"encryptor, {len(parts)} pieces: {diff(out, want)}"
            d = c.decryptor()
            parts = pieces(rng, want)
            back = bytearray()
            for i, p in enumerate(parts):
                if i % 3 == 0:  # update_into as well, with pyca's buffer rule
                    buf = bytearray(len(p) + (0 if mode == "ctr" else 7))
                    back += buf[: d.update_into(p, buf)]
                else:
                    back += d.update(p)
            back += d.finalize()
            assert bytes(back) == pt, f"decryptor, {len(parts)} pieces: {diff(bytes(back), pt)}"
    assert KERNELS[mode, True] in launches and KERNELS[mode, False] in launches


# --------------------------------------------------------------------------- files and pipes

@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
def test_engine_stream_files_and_pipes(mode, device, rng, tmp_path, monkeypatch, launches):
    """The device engine's stream() (what the command line uses), 16 KiB chunks: a regular file
    (read at offsets by several threads; CBC decryption reads each chunk's chain block back from
    the file) and a pipe (read in order by one thread)."""
    import threading

    from ciphergrid.request import make_request

    name = NAMES[mode]
    key, iv = rng.randbytes(16), (None if mode == "ecb" else rng.randbytes(8))
    if is_native(device):
        return expect_refused(name, device, key, iv)
    monkeypatch.setenv("CIPHERGRID_CHUNK_SIZE", "16Ki")
    spec = registry.lookup(name)
    eng = route_mod.engine(device)
    pt = rng.data(100 * KiB + (3 if mode == "ctr" else 8))
    ct = oracle.crypt(name, key, iv, pt, True)
    for encrypt, src_bytes, want in ((True, pt, ct), (False, ct, pt)):
        req = make_request(spec, key, iv, encrypt)
        what = f"{name} {'encrypt' if encrypt else 'decrypt'} on {device}"
        # regular file to regular file
        src, dst = tmp_path / "in", tmp_path / "out"
        src.write_bytes(src_bytes)
        with open(src, "rb") as f_in, open(dst, "wb") as f_out:
            assert eng.stream(req, f_in, f_out) == len(src_bytes)
        got = dst.read_bytes()
        assert got == want, f"{what}, files: {diff_of(got, want)}"
        # pipe to regular file
        r, w = os.pipe()

        def feed(data=src_bytes, w=w):
            with os.fdopen(w, "wb") as fw:
                for i in range(0, len(data), 5000):
                    fw.write(data[i: i + 5000])

        t = threading.Thread(target=feed)
        t.start()
        try:
            with os.fdopen(r, "rb") as f_in, open(dst, "wb") as f_out:
                assert eng.stream(req, f_in, f_out) == len(src_bytes)
        finally:
            t.join()
        got = dst.read_bytes()
        assert got == want, f"{what}, pipe: {diff_of(got, want)}"
    assert launches.count(KERNELS[mode, True]) >= 2 * 7, launches
