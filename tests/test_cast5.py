"""CAST-128 (CAST5, RFC 2144): the names cast5-ecb/cbc/ctr, for keys of 40 to 128 bits.

What the generic tests (test_kat, test_differential, test_streaming, ...) do not check:

* an independent plain-Python model written from RFC 2144 - its key schedule *interprets the
  lines of section 2.4 as the RFC prints them*, its rounds are section 2.2's f1/f2/f3 - checked
  against Appendix B.1 and against pyca/cryptography (OpenSSL) for every key size 5..16 bytes;
  the host schedule of ciphergrid/algorithms/cast5.py against the model (zero padding, 12 rounds
  up to 80 bits and 16 above, carried in the schedule);
* the S-boxes: the kernel's S1..S4 are the host's, and the eight tables are pinned;
* both kernels ("reference" and "fast") against the oracle on every OpenCL/CUDA device with
  random key sizes (5, 10, 11, 16 and others), both directions, odd lengths; the 64-bit CTR
  counter wrapping; many launches and streaming with a short key; one program for every key
  size;
* the OpenSSL engine (legacy provider) with 40- and 80-bit keys against pyca, and its refusal of
  CTR (OpenSSL has no CAST5-CTR);
* the CLI with short keys, and what `openssl enc -K` does with them (zero-pads to 128 bits and
  runs 16 rounds, unlike RFC 2144 and the library calls).

The generic tests draw keys with ``rng.key(name)``: always ``spec.key_len`` bytes (16 here), so
short keys are drawn in this file.  Sizes stay small (PoCL in CI).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry
from ciphergrid.algorithms import cast5 as host
from ciphergrid.testing import oracle

from conftest import device_info, first_difference as diff_of

CAST5 = registry.lookup("cast5-ecb").algorithm
NAMES = {"ecb": "cast5-ecb", "cbc": "cast5-cbc", "ctr": "cast5-ctr"}
IMPLS = ("reference", "fast")
KERNEL_FILE = Path(host.__file__).resolve().parent.parent / "kernels" / "cast5.cl"
MASK = 0xFFFFFFFF
KiB = 1 << 10


# --------------------------------------------------------------------------- the model (RFC 2144)

# RFC 2144 section 2.4, the sixteen assignments that make K1..K16 from x0..xF; K17..K32 repeat
# them, carrying on from the x they leave.  Interpreted below as written.
RFC_2_4 = """
z0z1z2z3 = x0x1x2x3 ^ S5[xD] ^ S6[xF] ^ S7[xC] ^ S8[xE] ^ S7[x8]
z4z5z6z7 = x8x9xAxB ^ S5[z0] ^ S6[z2] ^ S7[z1] ^ S8[z3] ^ S8[xA]
z8z9zAzB = xCxDxExF ^ S5[z7] ^ S6[z6] ^ S7[z5] ^ S8[z4] ^ S5[x9]
zCzDzEzF = x4x5x6x7 ^ S5[zA] ^ S6[z9] ^ S7[zB] ^ S8[z8] ^ S6[xB]
K1  = S5[z8] ^ S6[z9] ^ S7[z7] ^ S8[z6] ^ S5[z2]
K2  = S5[zA] ^ S6[zB] ^ S7[z5] ^ S8[z4] ^ S6[z6]
K3  = S5[zC] ^ S6[zD] ^ S7[z3] ^ S8[z2] ^ S7[z9]
K4  = S5[zE] ^ S6[zF] ^ S7[z1] ^ S8[z0] ^ S8[zC]
x0x1x2x3 = z8z9zAzB ^ S5[z5] ^ S6[z7] ^ S7[z4] ^ S8[z6] ^ S7[z0]
x4x5x6x7 = z0z1z2z3 ^ S5[x0] ^ S6[x2] ^ S7[x1] ^ S8[x3] ^ S8[z2]
x8x9xAxB = z4z5z6z7 ^ S5[x7] ^ S6[x6] ^ S7[x5] ^ S8[x4] ^ S5[z1]
xCxDxExF = zCzDzEzF ^ S5[xA] ^ S6[x9] ^ S7[xB] ^ S8[x8] ^ S6[z3]
K5  = S5[x3] ^ S6[x2] ^ S7[xC] ^ S8[xD] ^ S5[x8]
K6  = S5[x1] ^ S6[x0] ^ S7[xE] ^ S8[xF] ^ S6[xD]
K7  = S5[x7] ^ S6[x6] ^ S7[x8] ^ S8[x9] ^ S7[x3]
K8  = S5[x5] ^ S6[x4] ^ S7[xA] ^ S8[xB] ^ S8[x7]
z0z1z2z3 = x0x1x2x3 ^ S5[xD] ^ S6[xF] ^ S7[xC] ^ S8[xE] ^ S7[x8]
z4z5z6z7 = x8x9xAxB ^ S5[z0] ^ S6[z2] ^ S7[z1] ^ S8[z3] ^ S8[xA]
z8z9zAzB = xCxDxExF ^ S5[z7] ^ S6[z6] ^ S7[z5] ^ S8[z4] ^ S5[x9]
zCzDzEzF = x4x5x6x7 ^ S5[zA] ^ S6[z9] ^ S7[zB] ^ S8[z8] ^ S6[xB]
K9  = S5[z3] ^ S6[z2] ^ S7[zC] ^ S8[zD] ^ S5[z9]
K10 = S5[z1] ^ S6[z0] ^ S7[zE] ^ S8[zF] ^ S6[zC]
K11 = S5[z7] ^ S6[z6] ^ S7[z8] ^ S8[z9] ^ S7[z2]
K12 = S5[z5] ^ S6[z4] ^ S7[zA] ^ S8[zB] ^ S8[z6]
x0x1x2x3 = z8z9zAzB ^ S5[z5] ^ S6[z7] ^ S7[z4] ^ S8[z6] ^ S7[z0]
x4x5x6x7 = z0z1z2z3 ^ S5[x0] ^ S6[x2] ^ S7[x1] ^ S8[x3] ^ S8[z2]
x8x9xAxB = z4z5z6z7 ^ S5[x7] ^ S6[x6] ^ S7[x5] ^ S8[x4] ^ S5[z1]
xCxDxExF = zCzDzEzF ^ S5[xA] ^ S6[x9] ^ S7[xB] ^ S8[x8] ^ S6[z3]
K13 = S5[x8] ^ S6[x9] ^ S7[x7] ^ S8[x6] ^ S5[x3]
K14 = S5[xA] ^ S6[xB] ^ S7[x5] ^ S8[x4] ^ S6[x7]
K15 = S5[xC] ^ S6[xD] ^ S7[x3] ^ S8[x2] ^ S7[x8]
K16 = S5[xE] ^ S6[xF] ^ S7[x1] ^ S8[x0] ^ S8[xD]
"""

_BYTE = re.compile(r"([xz])([0-9A-F])")
_TERM = re.compile(r"S([5-8])\[([xz])([0-9A-F])\]")
SBOX = {5: host.S5, 6: host.S6, 7: host.S7, 8: host.S8}


def _parse(text: str) -> list[tuple]:
    """(target, word operand or None, S-box terms) for each line; a target is ("K", n) or a list
    of four (array, byte) names, a word operand likewise four byte names."""
    out = []
    for line in text.strip().splitlines():
        lhs, rhs = (p.strip() for p in line.split("="))
        parts = [p.strip() for p in rhs.split("^")]
        word = None
        if not parts[0].startswith("S"):
            word = [(a, int(h, 16)) for a, h in _BYTE.findall(parts.pop(0))]
            assert len(word) == 4, line
        terms = [(int(s), a, int(h, 16)) for s, a, h in (_TERM.fullmatch(p).groups() for p in parts)]
        target = ("K", int(lhs[1:])) if lhs.startswith("K") else [(a, int(h, 16)) for a, h in _BYTE.findall(lhs)]
        out.append((target, word, terms))
    return out


RFC_LINES = _parse(RFC_2_4)


def model_subkeys(key: bytes) -> tuple[list[int], list[int], int]:
    """(Km1..16, Kr1..16, rounds): RFC 2144 2.4, with 2.5's zero padding and round count."""
    arrays = {"x": list(key) + [0] * (16 - len(key)), "z": [0] * 16}
    k = []
    for _ in range(2):
        for target, word, terms in RFC_LINES:
            v = 0
            for s, a, i in terms:
                v ^= SBOX[s][arrays[a][i]]
            if word is not None:
                v ^= int.from_bytes(bytes(arrays[a][i] for a, i in word), "big")
            if isinstance(target, tuple):
                k.append(v)
            else:
                for j, (a, i) in enumerate(target):
                    arrays[a][i] = (v >> (24 - 8 * j)) & 0xFF
    assert len(k) == 32
    return k[:16], [v & 31 for v in k[16:]], (12 if len(key) <= 10 else 16)


def _rotl(v: int, n: int) -> int:
    return ((v << n) | (v >> (32 - n))) & MASK if n else v


def _f(i: int, d: int, km: int, kr: int) -> int:
    """The round function of round i + 1 (RFC 2144 section 2.2: types 1, 2, 3, 1, 2, 3, ...)."""
    s1, s2, s3, s4 = host.S1, host.S2, host.S3, host.S4
    kind = i % 3
    if kind == 0:
        v = _rotl((km + d) & MASK, kr)
    elif kind == 1:
        v = _rotl(km ^ d, kr)
    else:
        v = _rotl((km - d) & MASK, kr)
    a, b, c, e = s1[v >> 24], s2[(v >> 16) & 255], s3[(v >> 8) & 255], s4[v & 255]
    if kind == 0:
        return ((((a ^ b) - c) & MASK) + e) & MASK
    if kind == 1:
        return ((((a - b) & MASK) + c) & MASK) ^ e
    return (((a + b) & MASK) ^ c) - e & MASK


def model_block(key: bytes, block: bytes, encrypt: bool) -> bytes:
    km, kr, n = model_subkeys(key)
    if encrypt:  # L_i = R_{i-1}, R_i = L_{i-1} ^ f_i(R_{i-1}); out = R_n || L_n
        l, r = int.from_bytes(block[:4], "big"), int.from_bytes(block[4:], "big")
        for i in range(n):
            l, r = r, l ^ _f(i, r, km[i], kr[i])
        return r.to_bytes(4, "big") + l.to_bytes(4, "big")
    # undo the rounds one by one, from (L_n, R_n)
    r, l = int.from_bytes(block[:4], "big"), int.from_bytes(block[4:], "big")
    for i in reversed(range(n)):
        l, r = r ^ _f(i, l, km[i], kr[i]), l
    return l.to_bytes(4, "big") + r.to_bytes(4, "big")


def model_ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    return b"".join(model_block(key, data[i: i + 8], encrypt) for i in range(0, len(data), 8))


def pyca_ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    from cryptography.hazmat.decrepit.ciphers.algorithms import CAST5 as Pyca
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    c = Cipher(Pyca(key), modes.ECB())
    ctx = c.encryptor() if encrypt else c.decryptor()
    return ctx.update(data) + ctx.finalize()


RFC_B1 = [  # RFC 2144 Appendix B.1 (plaintext 0123456789ABCDEF)
    ("01 23 45 67 12 34 56 78 23 45 67 89 34 56 78 9A", "23 8B 4F E5 84 7E 44 B2"),
    ("01 23 45 67 12 34 56 78 23 45", "EB 6A 71 1A 2C 02 27 1B"),
    ("01 23 45 67 12", "7A C8 16 D1 6E 9B 30 2E"),
]
RFC_B1_PT = bytes.fromhex("0123456789ABCDEF")


def test_model_rfc_2144_b1():
    for key, ct in RFC_B1:
        key, ct = bytes.fromhex(key), bytes.fromhex(ct)
        assert model_block(key, RFC_B1_PT, True) == ct, len(key)
        assert model_block(key, ct, False) == RFC_B1_PT
        assert model_subkeys(key)[2] == (16 if len(key) == 16 else 12)


def test_model_matches_openssl_for_every_key_size(rng):
    """The model against pyca (OpenSSL) for keys of 5..16 bytes, both directions."""
    for n in range(5, 17):
        for _ in range(2):
            key, data = rng.randbytes(n), rng.data(8 * 24)
            ct = pyca_ecb(key, data, True)
            assert model_ecb(key, data, True) == ct, f"{n}-byte key {key.hex()}"
            assert model_ecb(key, ct, False) == data


def test_host_schedule_is_the_models(rng):
    """cast5.expand: Km1..16, Kr1..16, rounds - the same for both directions - as the model
    makes them; zero padding and the 80-bit boundary of RFC 2144 section 2.5."""
    for n in [5, 10, 11, 16] + [rng.randint(5, 16) for _ in range(6)]:
        key = rng.randbytes(n)
        km, kr, rounds = model_subkeys(key)
        ek, dk = CAST5.expand(key, False), CAST5.expand(key, True)
        assert ek.dtype == np.dtype("<u4") and ek.shape == (33,) and CAST5.SCHEDULE_WORDS == 33
        assert ek.tolist() == km + kr + [rounds], f"{n}-byte key"
        assert dk.tolist() == ek.tolist()
        assert rounds == (12 if n <= 10 else 16)
        assert all(0 <= r < 32 for r in ek[16:32])
    # a key and the same key padded with zero bytes: one schedule while both are on the same side
    # of 80 bits; across it only the round count differs
    k = rng.randbytes(7)
    assert CAST5.expand(k, False).tolist() == CAST5.expand(k + bytes(3), False).tolist()
    k = rng.randbytes(11)
    assert CAST5.expand(k, False).tolist() == CAST5.expand(k + bytes(5), False).tolist()
    k = rng.randbytes(10)
    a, b = CAST5.expand(k, False), CAST5.expand(k + bytes(6), False)
    assert a[:32].tolist() == b[:32].tolist() and (a[32], b[32]) == (12, 16)
    for bad in (b"", bytes(4), bytes(17), bytes(32)):
        with pytest.raises(ciphergrid.InvalidKeySize):
            CAST5.expand(bad, False)


def test_schedule_without_libcrypto_is_the_same(rng, monkeypatch):
    """expand() takes libcrypto's CAST_set_key where it agrees with ours; without it (another
    libcrypto, none) the Python schedule gives the same words."""
    from ciphergrid.algorithms.base import NativeSchedule

    keys = [rng.randbytes(n) for n in range(5, 17)] + [b"\xff" * 16, bytes(5)]
    fast = [CAST5.expand(k, False).tolist() for k in keys]
    monkeypatch.setattr(host, "_NATIVE", NativeSchedule("no_such_call", (), 33, None))
    assert [CAST5.expand(k, False).tolist() for k in keys] == fast
    assert host._NATIVE.fn is None


# --------------------------------------------------------------------------- the S-boxes

def _cl_tables() -> dict[str, list[int]]:
    text = KERNEL_FILE.read_text()
    out = {}
    for m in re.finditer(r"CONST_TABLE uint CAST5_(S[1-4])\[256\] = \{([^}]*)\}", text):
        out[m.group(1)] = [int(v, 16) for v in re.findall(r"0x([0-9a-fA-F]{8})u", m.group(2))]
    return out


def test_kernel_sboxes_are_the_hosts():
    cl = _cl_tables()
    assert sorted(cl) == ["S1", "S2", "S3", "S4"]
    for name in cl:
        assert cl[name] == list(getattr(host, name)), name


def test_sboxes_pinned():
    """The eight tables of RFC 2144 Appendix A as this package holds them (first and last words
    spot-checked against the RFC's listing, the rest pinned by a hash)."""
    tables = [getattr(host, f"S{i}") for i in range(1, 9)]
    assert all(len(t) == 256 and all(0 <= v <= MASK for v in t) for t in tables)
    assert [(t[0], t[255]) for t in tables] == [
        (0x30FB40D4, 0x5C8165BF), (0x1F201094, 0x4523ECF1), (0x8DEFC240, 0xEE353783),
        (0x9DB30420, 0x0AEF7ED2), (0x7EC90C04, 0xEFE9E7D4), (0xF6FA8F9D, 0xD675CF2F),
        (0x85E04019, 0x954B8AA3), (0xE216300D, 0xEA8BF59E)]
    blob = b"".join(np.array(t, dtype=">u4").tobytes() for t in tables)
    assert hashlib.sha256(blob).hexdigest() == SBOX_SHA256


#: sha256 of S1..S8 as big-endian words, from the tables checked against OpenSSL's and libgcrypt's
SBOX_SHA256 = "f92e9b4c9e1d6bf0a515c473cf0c0b92e7b5def980426ffed5b12fc050174d0c"


# --------------------------------------------------------------------------- declaration, engines

def test_names_key_sizes_and_capabilities():
    for mode, name in NAMES.items():
        spec = registry.lookup(name)
        assert spec.algorithm is CAST5 and spec.block_size == 8
        assert spec.key_size == 16 and spec.key_len == 16
        assert spec.key_lens == tuple(range(5, 17)) and spec.key_sizes == tuple(range(5, 17))
        assert spec.iv_len == (0 if mode == "ecb" else 8)
        serial = "serial" if mode == "cbc" else "parallel"
        if mode == "ctr":
            assert spec.openssl_name is None
            assert spec.capabilities() == {"encrypt": {"device": "parallel", "openssl": None},
                                           "decrypt": {"device": "parallel", "openssl": None}}
            assert oracle.source(name).startswith("cast5 reference_ecb")
        else:
            assert spec.openssl_name == name
            assert spec.capabilities() == {"encrypt": {"device": serial, "openssl": serial},
                                           "decrypt": {"device": "parallel", "openssl": "parallel"}}
            assert oracle.source(name).startswith("pyca/cryptography")
    assert "cast5-xts" not in registry.names()
    assert CAST5.openssl_provider == "legacy"
    assert set(CAST5.implementations) == {"reference", "fast"}
    assert CAST5.implementation().grid == "persistent"
    assert CAST5.implementation("reference").grid == "per-block"
    assert not any(im.constant_time for im in CAST5.implementations.values())
    with pytest.raises(ciphergrid.InvalidArgument):
        CAST5.constant_time_implementation()
    # one program for every key size: no key-size define
    assert CAST5.defines(5) == CAST5.defines(16) == {}


def test_key_size_errors():
    for n in (0, 4, 17, 24, 32):
        for name in NAMES.values():
            iv = None if name.endswith("ecb") else bytes(8)
            with pytest.raises(ciphergrid.InvalidKeySize, match="5- to 16-byte"):
                ciphergrid.encrypt(bytes(16), name, bytes(n), iv)


def test_openssl_engine_short_keys(rng):
    """The native engine (OpenSSL's legacy provider, the key length set on the context) with
    40-, 80-, 88- and 128-bit keys and random others, against pyca; EvpCtx directly too."""
    from ciphergrid.engines.openssl.contexts import EvpCtx

    for n in [5, 10, 11, 16, rng.randint(6, 9), rng.randint(12, 15)]:
        key = rng.randbytes(n)
        data = rng.data(8 * 50)
        want = pyca_ecb(key, data, True)
        for encrypt, src, exp in ((True, data, want), (False, want, data)):
            ctx = EvpCtx("cast5-ecb", key, None, encrypt)
            try:
                buf = np.frombuffer(src, dtype=np.uint8).copy()
                out = np.empty_like(buf)
                ctx.process(buf, out, 0, len(buf))
                ctx.final()
            finally:
                ctx.free()
            assert out.tobytes() == exp, f"EvpCtx, {n}-byte key, encrypt={encrypt}"
        for name in ("cast5-ecb", "cast5-cbc"):
            iv = None if name.endswith("ecb") else rng.randbytes(8)
            for pad in (None, "pkcs7"):
                pt = data if pad is None else data[: 8 * 7 + 3]
                want = oracle.crypt(name, key, iv, pt, True, padding=pad)
                got = ciphergrid.encrypt(pt, name, key, iv, device="native", padding=pad)
                assert got == want, f"{name} native, {n}-byte key, padding={pad}"
                assert ciphergrid.decrypt(want, name, key, iv, device="native", padding=pad) == pt


def test_native_refuses_ctr_and_auto_finds_a_device(rng, diff):
    key, iv = rng.randbytes(10), rng.randbytes(8)
    for fn in (ciphergrid.encrypt, ciphergrid.decrypt):
        with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
            fn(bytes(64), "cast5-ctr", key, iv, device="native")
    if any(d.runtime != "native" for d in ciphergrid.devices()):
        pt = rng.data(3000 + 5)
        got = ciphergrid.encrypt(pt, "cast5-ctr", key, iv)
        want = oracle.crypt("cast5-ctr", key, iv, pt, True)
        assert got == want, diff(got, want)
    else:
        with pytest.raises(ciphergrid.UnsupportedCipher):
            ciphergrid.encrypt(bytes(64), "cast5-ctr", key, iv)


# --------------------------------------------------------------------------- the kernels

def _kernel_devices() -> list[str]:
    from conftest import all_devices

    return [d.spec for d in all_devices() if d.runtime != "native"]


KDEVS = _kernel_devices()
needs_device = pytest.mark.skipif(not KDEVS, reason="no OpenCL/CUDA device")


def _gpu_marks(spec: str):
    return [pytest.mark.gpu] if device_info(spec).kind == "gpu" else []


KDEV_PARAMS = [pytest.param(s, id=s, marks=_gpu_marks(s)) for s in KDEVS]
KEY_LENGTHS = [5, 10, 11, 16]
LENGTHS = {"ecb": [8, 8 * 37, 8 * 1000], "cbc": [8, 8 * 37, 8 * 1000],
           "ctr": [1, 7, 9, 8 * 37 + 3, 8 * 1000 + 5]}


def _check(name, dev, impl, key, iv, pt, **kw):
    """encrypt == oracle; decrypt(oracle's ciphertext) == pt; returns the ciphertext."""
    what = f"{name} {impl} on {dev}, {len(key)}-byte key {key.hex()}, {len(pt)} bytes"
    want = oracle.crypt(name, key, iv, pt, True, **kw)
    got = ciphergrid.encrypt(pt, name, key, iv, device=dev, implementation=impl, **kw)
    assert got == want, f"encrypt: {what}: {diff_of(got, want)}"
    back = ciphergrid.decrypt(want, name, key, iv, device=dev, implementation=impl, **kw)
    assert back == pt, f"decrypt: {what}: {diff_of(back, pt)}"
    return want


@needs_device
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kdev", KDEV_PARAMS)
def test_kernels_vs_oracle(kdev, impl, rng):
    """Every mode, both directions, keys of 5, 10, 11, 16 bytes and two random sizes."""
    for mode, name in NAMES.items():
        for n in KEY_LENGTHS + [rng.randint(5, 16), rng.randint(5, 16)]:
            key = rng.randbytes(n)
            iv = None if mode == "ecb" else rng.randbytes(8)
            for size in LENGTHS[mode]:
                _check(name, kdev, impl, key, iv, rng.data(size))
        if mode != "ctr":
            _check(name, kdev, impl, rng.randbytes(rng.randint(5, 16)), iv, rng.data(8 * 9 + 3),
                   padding="pkcs7")


@needs_device
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kdev", KDEV_PARAMS)
def test_kernels_rfc_vectors_and_model(kdev, impl, rng):
    """RFC 2144 B.1 (one block per key size, batched with other blocks) and the model's own
    blocks: a test of the kernels that does not go through pyca."""
    for key, ct in RFC_B1:
        key, ct = bytes.fromhex(key), bytes.fromhex(ct)
        more = rng.data(8 * 40)
        got = ciphergrid.encrypt(RFC_B1_PT + more, "cast5-ecb", key, device=kdev, implementation=impl)
        assert got[:8] == ct and got[8:] == model_ecb(key, more, True), f"{len(key)}-byte key"
        back = ciphergrid.decrypt(got, "cast5-ecb", key, device=kdev, implementation=impl)
        assert back == RFC_B1_PT + more


@needs_device
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kdev", KDEV_PARAMS)
def test_ctr_64_bit_counter(kdev, impl, rng):
    """The counter block is the whole 64-bit block, big-endian, wrapping modulo 2^64: the key
    stream is E(ctr), E(ctr + 1), ... computed here by the model."""
    key = rng.randbytes(rng.choice([5, 8, 10, 13]))
    for c0 in ((1 << 64) - 2, (1 << 32) - 1, rng.getrandbits(64)):
        iv = c0.to_bytes(8, "big")
        ks = ciphergrid.encrypt(bytes(8 * 5), "cast5-ctr", key, iv, device=kdev, implementation=impl)
        ctrs = b"".join(((c0 + i) % (1 << 64)).to_bytes(8, "big") for i in range(5))
        assert ks == model_ecb(key, ctrs, True), f"counter {c0:#x}"


@needs_device
@pytest.mark.parametrize("kdev", KDEV_PARAMS)
def test_one_program_for_every_key_size(kdev, rng):
    """Keys of 5 and 16 bytes (12 and 16 rounds) use one compiled program per implementation."""
    from ciphergrid.program import KeyedProgram
    from ciphergrid.request import make_request
    from ciphergrid.route import engine

    backend = engine(kdev).backend
    spec = registry.lookup("cast5-ecb")
    for impl in IMPLS:
        progs = []
        for n in (5, 10, 11, 16):
            with KeyedProgram(backend, make_request(spec, rng.randbytes(n), None, True, impl=impl)) as kp:
                progs.append(kp.prg)
        assert all(p is progs[0] for p in progs), impl


@needs_device
@pytest.mark.parametrize("kdev", KDEV_PARAMS)
def test_many_launches_and_streaming_short_key(kdev, rng, monkeypatch):
    """16 KiB pipeline chunks (several launches per message, the CBC chain and CTR counter at each
    launch's first block) and streaming contexts fed in random pieces, with short keys."""
    monkeypatch.setenv("CIPHERGRID_CHUNK_SIZE", "16Ki")
    for mode, name in NAMES.items():
        key = rng.randbytes(rng.choice([5, 7, 10]))
        iv = None if mode == "ecb" else rng.randbytes(8)
        pt = rng.data(3 * 16 * KiB + 8 * 5 + (3 if mode == "ctr" else 0))
        want = _check(name, kdev, "fast", key, iv, pt)
        with ciphergrid.Cipher(name, key, iv, device=kdev) as c:
            e, d = c.encryptor(), c.decryptor()
            out, back, i = [], [], 0
            while i < len(pt):
                k = rng.choice([0, 1, 7, 8, 9, 100, rng.randrange(1, 20 * KiB)])
                out.append(e.update(pt[i: i + k]))
                back.append(d.update(want[i: i + k]))
                i += k
            out.append(e.finalize())
            back.append(d.finalize())
        assert b"".join(out) == want and b"".join(back) == pt, name


# --------------------------------------------------------------------------- the command line

def _cli(*args, input=None, cwd=None):
    from test_cli import cli

    return cli(*args, input=input, cwd=cwd)


def test_cli_short_keys_and_openssl_enc(openssl, tmp_path, rng):
    """`ciphergrid encrypt` with 40- and 80-bit keys is RFC 2144 (pyca); `openssl enc -K` zero-pads
    a short key to 128 bits and runs 16 rounds, so it matches ciphergrid only with the key padded
    to 16 bytes by hand (for 128-bit keys the generic CLI tests compare byte for byte)."""
    from test_cli import openssl_enc

    pt = rng.data(8 * 64)
    for n in (5, 10):
        key, iv = rng.randbytes(n), rng.randbytes(8)
        p = _cli("encrypt", "--cipher", "cast5-cbc", "--key", key.hex(), "--iv", iv.hex(), input=pt,
                 cwd=tmp_path)
        assert p.returncode == 0, p.stderr.decode(errors="replace")
        assert p.stdout == oracle.crypt("cast5-cbc", key, iv, pt, True)
        enc = openssl_enc(openssl, "cast5-cbc", key, iv, pt)
        assert enc != p.stdout
        assert enc == ciphergrid.encrypt(pt, "cast5-cbc", key + bytes(16 - n), iv)
    # CTR (no `openssl enc` for it): round trip with an 88-bit key through files
    key, iv = rng.randbytes(11), rng.randbytes(8)
    src, ct, back = tmp_path / "p", tmp_path / "c", tmp_path / "b"
    src.write_bytes(pt + b"tail")
    for args, out in ((("encrypt", "--in", src), ct), (("decrypt", "--in", ct), back)):
        p = _cli(args[0], "--cipher", "cast5-ctr", "--key", key.hex(), "--iv", iv.hex(), *args[1:],
                 "--out", out, cwd=tmp_path)
        assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert ct.read_bytes() == oracle.crypt("cast5-ctr", key, iv, pt + b"tail", True)
    assert back.read_bytes() == pt + b"tail"
    p = subprocess.run([openssl, "enc", "-cast5-ctr", "-K", "00" * 16, "-iv", "00" * 8],
                       input=b"x", capture_output=True)
    assert p.returncode != 0  # (no CAST5-CTR in OpenSSL)
