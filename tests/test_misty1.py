"""MISTY1 (RFC 2994): the independent model, the tables, the host model, both kernels.

* ``misty1_model`` (tests/misty1_model.py) is a plain-Python MISTY1 written from RFC 2994 in the
  RFC's own notation; it is checked here against the RFC's example data and the NESSIE
  Misty1-128-64 vectors, and then used as the reference for everything else of MISTY1: the vector
  file (every record, CBC and CTR included), the host model behind ``reference_ecb`` (which the
  generic tests use through ciphergrid.testing.oracle), the key layouts the kernels receive.
* The S-boxes: two transcriptions of RFC 2994 section 2.3 (the algorithm module's, the model's)
  and the kernel file's tables agree; both are permutations of differential uniformity 2.
* The "reference" kernel (one block per work-item) against the oracle on random keys, IVs and odd
  lengths, on every OpenCL/CUDA device present (the generic tests run "fast"), and the fast
  kernel's compile-time knobs (copies, keys in device memory, split tables, two blocks per step).
* The bitsliced kernel ("bs", kernels/misty1_bs.cl): its generated S-box circuits equal the tables
  (every input) and the generator's text; the kernel and the other declared variants against the
  oracle around its 32-block batches, both directions, CTR counters across 2^64 and 2^32.
* OpenSSL lacks MISTY1: the native engine refuses it, and CBC encryption runs on the device's
  one-work-item kernel ``cg_cbc_enc`` (seen by watching the kernel launches).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ciphergrid
import misty1_model as model
from ciphergrid import registry, vectors
from ciphergrid.algorithms import misty1 as alg
from ciphergrid.algorithms.base import Implementation
from ciphergrid.testing import oracle

from conftest import device_info, lean_names, watch_launches

NAMES = ("misty1-ecb", "misty1-cbc", "misty1-ctr")
RFC_KEY = bytes.fromhex("00112233445566778899aabbccddeeff")
KiB = 1 << 10


def _native(device: str) -> bool:
    return device_info(device).runtime == "native"


# --------------------------------------------------------------------------- the independent model

def test_model_rfc2994_example_data():
    """RFC 2994's example data (its appendix): key 00112233...eeff, two blocks."""
    pt = bytes.fromhex("0123456789abcdef" "fedcba9876543210")
    ct = bytes.fromhex("8b1da5f56ab3d07c" "04b68240b13be95d")
    assert model.ecb(RFC_KEY, pt, True) == ct
    assert model.ecb(RFC_KEY, ct, False) == pt


# NESSIE, Misty1-128-64.verified.test-vectors: (set, vector#, key, plaintext, ciphertext).  The
# vector file holds some of these; more are checked here against the model only.
NESSIE = [
    (1, 0, "80000000000000000000000000000000", "0000000000000000", "b5eda7d64fcd2a02"),
    (1, 8, "00800000000000000000000000000000", "0000000000000000", "d8df4decafcf82ba"),
    (1, 31, "00000001000000000000000000000000", "0000000000000000", "3b51ccaa6082708d"),
    (1, 127, "00000000000000000000000000000001", "0000000000000000", "2049aa1be3546aed"),
    (2, 0, "00000000000000000000000000000000", "8000000000000000", "bb47122b68178ee9"),
    (2, 32, "00000000000000000000000000000000", "0000000080000000", "a02d179f097e8332"),
    (2, 63, "00000000000000000000000000000000", "0000000000000001", "dbc1776e94f1bc4f"),
    (3, 0, "00000000000000000000000000000000", "0000000000000000", "b94a62816cb70f6f"),
    (3, 17, "11111111111111111111111111111111", "1111111111111111", "0227eb3422109682"),
    (3, 128, "80808080808080808080808080808080", "8080808080808080", "f6fcf844089d0d7d"),
    (4, 0, "000102030405060708090a0b0c0d0e0f", "0011223344556677", "3a3d8f2f2cdb11a7"),
    (4, 1, "2bd6459f82c5b300952c49104881ff48", "ea024714ad5c4d84", "5901047178cca69c"),
]


@pytest.mark.parametrize("case", NESSIE, ids=lambda c: f"set{c[0]}-{c[1]}")
def test_model_nessie(case):
    _, _, key, pt, ct = (bytes.fromhex(x) if isinstance(x, str) else x for x in case)
    assert model.ecb(key, pt, True) == ct
    assert model.ecb(key, ct, False) == pt


def test_model_round_trip_and_key_schedule(rng):
    for _ in range(5):
        key = rng.randbytes(16)
        ek = model.key_schedule(key)
        assert all(0 <= v < 1 << 16 for v in ek)
        for i in range(8):
            assert ek[i] == int.from_bytes(key[2 * i: 2 * i + 2], "big")
            assert ek[8 + i] == model.FI(ek[i], ek[(i + 1) % 8])            # K'_i
            assert (ek[24 + i] << 9) | ek[16 + i] == ek[8 + i]
        data = rng.randbytes(8 * 20)
        assert model.ecb(key, model.ecb(key, data, True), False) == data
        for k in range(10):                                              # FLINV undoes FL
            x = rng.getrandbits(32)
            assert model.FLINV(ek, model.FL(ek, x, k), k) == x


# --------------------------------------------------------------------------- the S-boxes

def _differential_uniformity(sbox: tuple, bits: int) -> int:
    s = np.array(sbox, dtype=np.int64)
    x = np.arange(1 << bits)
    return max(int(np.bincount(s ^ s[x ^ a], minlength=1 << bits).max()) for a in range(1, 1 << bits))


def test_sboxes():
    # two transcriptions of RFC 2994 section 2.3 agree
    assert alg.S7 == model.S7 and alg.S9 == model.S9
    assert sorted(model.S7) == list(range(128)) and sorted(model.S9) == list(range(512))
    # MISTY's S-boxes are almost perfect nonlinear: a one-entry slip would show here
    assert _differential_uniformity(model.S7, 7) == 2
    assert _differential_uniformity(model.S9, 9) == 2
    # the kernel file's tables are the same numbers
    text = (Path(alg.__file__).resolve().parent.parent / "kernels" / "misty1.cl").read_text()
    for name, table in (("MISTY1_S7", model.S7), ("MISTY1_S9", model.S9)):
        body = re.search(name + r"\[\d+\] = \{(.*?)\};", text, re.S).group(1)
        assert tuple(int(v.rstrip("u"), 16) for v in re.findall(r"0x[0-9a-f]+u?", body)) == table, name


def test_bitsliced_sbox_circuits():
    """misty1_bs.cl's S7/S9 circuits: every input gives the table's output (the circuits evaluated
    on all inputs at once, one bit per input), each gate has at most three inputs, and the kernel
    file holds the generator's text."""
    for name, table, n in (("S9", model.S9, 9), ("S7", model.S7, 7)):
        gates, outs = alg.sbox_circuit(name)
        full = (1 << (1 << n)) - 1
        env = {"x": [sum(1 << v for v in range(1 << n) if v >> i & 1) for i in range(n)]}

        def ev(expr):
            return eval(expr.replace("0u", "0"), {}, env) & full  # noqa: B023 - evaluated at once

        for g, e in gates:
            assert len(set(re.findall(r"x\[\d\]|t\d+", e))) <= 3, (name, g, e)
            env[g] = ev(e)
        ys = [ev(e) for e in outs]
        got = tuple(sum(((ys[b] >> v) & 1) << b for b in range(n)) for v in range(1 << n))
        assert got == table, name
    text = (Path(alg.__file__).resolve().parent.parent / "kernels" / "misty1_bs.cl").read_text()
    assert alg.bitsliced_sboxes_c() in text, "misty1_bs.cl's GENERATED part differs from the generator"
    assert "CONST_TABLE" not in text and "LOCAL_VAR" not in text


def test_fused_fi_equals_rfc_fi(rng):
    """The fast kernel's FI (three lookups on A/B/S9) is the RFC's, for every input, random keys."""
    for ki in [0, 0xFFFF] + [rng.getrandbits(16) for _ in range(6)]:
        assert all(alg._fi(x, ki) == model.FI(x, ki) for x in range(1 << 16))


# --------------------------------------------------------------------------- the host model and layouts

def test_key_layouts(rng):
    for _ in range(5):
        key = rng.randbytes(16)
        ek = model.key_schedule(key)
        plain = alg.CIPHER.expand(key, False)
        assert plain.dtype == np.dtype("<u4") and plain.tolist() == ek
        assert alg.CIPHER.expand(key, True).tolist() == ek
        rounds = alg.CIPHER.expand(key, False, layout="rounds").tolist()
        assert len(rounds) == 76 and rounds == alg.CIPHER.expand(key, True, "rounds").tolist()
        assert rounds == alg.round_keys(alg.expanded_key(key))     # (expand gathers them)
        # per FO k: the EK entries the RFC's FO(k) reads, in its order: KO1 KI1 KO2 KI2 KO3 KI3 KO4
        for k in range(8):
            ko1, ko2, ko3, ko4, ki1, ki2, ki3 = rounds[7 * k: 7 * k + 7]
            x = rng.getrandbits(32)
            t0, t1 = x >> 16, x & 0xFFFF
            t0 = model.FI(t0 ^ ko1, ki1) ^ t1
            t1 = model.FI(t1 ^ ko2, ki2) ^ t0
            t0 = model.FI(t0 ^ ko3, ki3) ^ t1
            assert ((t1 ^ ko4) << 16) | t0 == model.FO(ek, x, k)
        # per FL k: KL1 (ANDed into the right half), KL2 (ORed into the left half)
        for k in range(10):
            kl1, kl2 = rounds[56 + 2 * k: 58 + 2 * k]
            x = rng.getrandbits(32)
            d0, d1 = x >> 16, x & 0xFFFF
            d1 ^= d0 & kl1
            d0 ^= d1 | kl2
            assert (d0 << 16) | d1 == model.FL(ek, x, k)
        # "bitsliced": each "rounds" word as 16 masks, bit 0 first
        masks = alg.CIPHER.expand(key, False, layout="bitsliced")
        assert masks.dtype == np.dtype("<u4") and masks.size == 76 * 16
        assert masks.tolist() == [0xFFFFFFFF if (w >> j) & 1 else 0 for w in rounds for j in range(16)]
    with pytest.raises(ValueError):
        alg.CIPHER.expand(bytes(16), False, layout="bogus")
    with pytest.raises(ciphergrid.InvalidKeySize):
        alg.CIPHER.expand(bytes(24), False)


@pytest.mark.parametrize("nblocks", [1, 7, 32, 33, 500])  # the scalar branch up to 32 blocks, numpy above
def test_host_model_equals_independent_model(nblocks, rng):
    key, data = rng.randbytes(16), rng.randbytes(8 * nblocks)
    ct = model.ecb(key, data, True)
    assert alg.CIPHER.reference_ecb(key, data, True) == ct
    assert alg.CIPHER.reference_ecb(key, ct, False) == data
    with pytest.raises(ValueError):
        alg.CIPHER.reference_ecb(key, data + b"x", True)


def test_vector_file_against_the_model():
    """Every record of ciphergrid/vectors/misty1.json, by the independent model (its CBC and CTR
    records too), and each source is named."""
    vs = [v for v in vectors.load() if v.cipher.startswith("misty1-")]
    assert {v.cipher for v in vs} == set(NAMES)
    sources = {v.source.split(" ")[0] for v in vs}
    assert {"RFC", "NESSIE", "CBC/CTR"} <= sources
    for v in vs:
        mode = v.cipher.rsplit("-", 1)[1]
        if mode == "ecb":
            got = model.ecb(v.key, v.plaintext, True)
            back = model.ecb(v.key, v.ciphertext, False)
        elif mode == "cbc":
            got = model.cbc(v.key, v.iv, v.plaintext, True)
            back = model.cbc(v.key, v.iv, v.ciphertext, False)
        else:
            got, back = model.ctr(v.key, v.iv, v.plaintext), model.ctr(v.key, v.iv, v.ciphertext)
        assert got == v.ciphertext and back == v.plaintext, v.source


def test_oracle_composition_matches_model(rng):
    """The oracle (reference_ecb + modes) against the model's own CBC and CTR."""
    key, iv = rng.randbytes(16), rng.randbytes(8)
    pt = rng.randbytes(8 * 40 + 5)
    assert oracle.source("misty1-cbc").startswith("misty1 reference_ecb")
    assert oracle.crypt("misty1-cbc", key, iv, pt[:320], True) == model.cbc(key, iv, pt[:320], True)
    assert oracle.crypt("misty1-ctr", key, iv, pt, True) == model.ctr(key, iv, pt)
    wrap = b"\xff" * 7 + b"\xf0"
    assert oracle.crypt("misty1-ctr", key, wrap, pt, True) == model.ctr(key, wrap, pt)


# --------------------------------------------------------------------------- registry, engines

def test_names_and_capabilities():
    for n in NAMES:
        spec = registry.lookup(n)
        assert spec.algorithm is alg.CIPHER and spec.block_size == 8 and spec.key_lens == (16,)
        assert spec.openssl_name is None
        serial = "serial" if n.endswith("cbc") else "parallel"
        assert spec.capabilities() == {"encrypt": {"device": serial, "openssl": None},
                                       "decrypt": {"device": "parallel", "openssl": None}}
    assert "misty1-xts" not in registry.names()
    assert set(alg.CIPHER.implementations) == {"reference", "fast", "ct", "tables", "fast-c16", "bs",
                                               "bs-128"}
    # the bitsliced kernel is the default and the constant-time one; the table kernels are not
    assert [n for n, im in alg.CIPHER.implementations.items() if im.constant_time] == [
        "fast", "ct", "bs", "bs-128"]
    assert alg.CIPHER.constant_time_implementation() == "ct"
    assert alg.CIPHER.implementations["fast"] is alg.CIPHER.implementations["bs"]
    # CBC encryption (serial, one work-item) takes the tables: one block per step, not 32
    assert registry.lookup("misty1-cbc").algorithm.serial_implementation == "tables"
    assert alg.CIPHER.encryption_policy(bytes(16)).block_limit == 1 << 32   # 64-bit blocks: Sweet32


@pytest.fixture
def launches(device, monkeypatch):
    """The names of the kernels launched on ``device`` during the test (None for native)."""
    if _native(device):
        return None
    return watch_launches(device, monkeypatch)


def test_engines_and_serial_cbc(device, rng, launches):
    key, iv = rng.randbytes(16), rng.randbytes(8)
    pt = rng.data(8 * 300)
    if _native(device):
        for name in NAMES:
            for fn in (ciphergrid.encrypt, ciphergrid.decrypt):
                with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
                    fn(bytes(64), name, key, None if name.endswith("ecb") else iv, device=device)
        return
    want = model.cbc(key, iv, pt, True)
    assert ciphergrid.encrypt(pt, "misty1-cbc", key, iv, device=device) == want
    assert launches == ["cg_cbc_enc"], launches       # serial CBC on one work-item
    del launches[:]
    assert ciphergrid.decrypt(want, "misty1-cbc", key, iv, device=device) == pt
    assert launches == ["cg_cbc_dec"], launches
    # CTR's counter is the whole 8-byte block, wrapping modulo 2^64: with key 0 the key stream
    # after ff..ff is E(0) = NESSIE Set 3 vector# 0
    ks = ciphergrid.encrypt(bytes(24), "misty1-ctr", bytes(16), b"\xff" * 8, device=device)
    assert ks[8:16] == bytes.fromhex("b94a62816cb70f6f")
    assert ks[16:] == bytes.fromhex("dbc1776e94f1bc4f")                       # E(1): Set 2 # 63
    assert ks == model.ctr(bytes(16), b"\xff" * 8, bytes(24))


# --------------------------------------------------------------------------- the kernels

# the fast kernel's knobs, each a variant of the default (registered for these tests only)
KNOBS = {
    "t-copies-1": alg._impl(True, copies=1),
    "t-keys-in-memory": alg._impl(True, keys_in_regs=0),
    "t-batch-2": alg._impl(True, batch=2),
    "t-split-t9": Implementation("misty1.cl", key_layout="rounds", defines={
        "MISTY1_FAST": 1, "MISTY1_COPIES": 8, "MISTY1_SPLIT_T9": 1}),
}


def _check(name, device, impl, key, iv, pt):
    want = oracle.crypt(name, key, iv, pt, True)
    got = ciphergrid.encrypt(pt, name, key, iv, device=device, implementation=impl)
    assert got == want, f"{impl} {name} encrypt, {len(pt)} bytes, key {key.hex()}"
    back = ciphergrid.decrypt(want, name, key, iv, device=device, implementation=impl)
    assert back == pt, f"{impl} {name} decrypt, {len(pt)} bytes, key {key.hex()}"


@pytest.mark.parametrize("name", NAMES)
def test_reference_kernel(name, device, rng):
    """The "reference" implementation against the oracle: known answers, random keys and IVs, odd
    lengths, a CTR counter across 2^64."""
    if _native(device):
        pytest.skip("OpenSSL lacks MISTY1")
    bad = []
    for v in vectors.load(name):
        for enc, src, want in ((True, v.plaintext, v.ciphertext), (False, v.ciphertext, v.plaintext)):
            fn = ciphergrid.encrypt if enc else ciphergrid.decrypt
            if fn(src, name, v.key, v.iv, device=device, implementation="reference") != want:
                bad.append(f"{v.source} {'encrypt' if enc else 'decrypt'}")
    assert not bad, bad
    ctr = name.endswith("ctr")
    for n in (8, 8 * 37, 4096 + 8, 40 * KiB + 8):
        key, iv = rng.randbytes(16), (None if name.endswith("ecb") else rng.randbytes(8))
        _check(name, device, "reference", key, iv, rng.data(n + (5 if ctr else 0)))
    if ctr:
        _check(name, device, "reference", rng.randbytes(16), b"\xff" * 7 + b"\xfa", rng.data(8 * 20 + 3))
    if name.endswith("cbc"):
        _check(name, device, "reference", rng.randbytes(16), rng.randbytes(8), rng.data(8 * 100))
        pt = rng.data(8 * 30 + 3)  # PKCS#7
        key, iv = rng.randbytes(16), rng.randbytes(8)
        ct = ciphergrid.encrypt(pt, name, key, iv, device=device, implementation="reference", padding="pkcs7")
        assert ct == oracle.crypt(name, key, iv, pt, True, padding="pkcs7")


@pytest.mark.parametrize("knob", list(KNOBS))
def test_fast_kernel_knobs(knob, device, rng, monkeypatch):
    """Each compile-time option of the fast kernel, on ECB/CBC/CTR, both directions."""
    if _native(device):
        pytest.skip("OpenSSL lacks MISTY1")
    monkeypatch.setitem(alg.CIPHER.implementations, knob, KNOBS[knob])
    for name in lean_names(device, NAMES):   # (conftest.lean)
        key, iv = rng.randbytes(16), (None if name.endswith("ecb") else rng.randbytes(8))
        n = 8 * 301 if name.endswith("cbc") else 24 * KiB + 8
        _check(name, device, knob, key, iv, rng.data(n + (3 if name.endswith("ctr") else 0)))


@pytest.mark.parametrize("name", NAMES)
def test_split_into_many_launches(name, device, rng, monkeypatch, launches):
    """A forced 16 KiB pipeline chunk: each message runs as several launches of the fast kernel,
    each starting from the mode's state at its first block (CTR counter, CBC chain).  (The generic
    multi-MiB tests leave MISTY1-CBC out: its reference is serial Python.)"""
    if _native(device):
        pytest.skip("OpenSSL lacks MISTY1")
    monkeypatch.setenv("CIPHERGRID_CHUNK_SIZE", "16Ki")
    key, iv = rng.randbytes(16), (None if name.endswith("ecb") else rng.randbytes(8))
    pt = rng.data(5 * 16 * KiB + 8 * 3 + (5 if name.endswith("ctr") else 0))
    want = oracle.crypt(name, key, iv, pt, True)
    assert ciphergrid.encrypt(pt, name, key, iv, device=device) == want
    assert ciphergrid.decrypt(want, name, key, iv, device=device) == pt
    assert len(launches) >= 2 * 6, launches


# the declared variants of "fast" and the bitsliced kernel (32 blocks per work-item)
VARIANTS = [n for n in alg.CIPHER.implementations if n not in ("reference", "fast")]


@pytest.mark.parametrize("impl", VARIANTS)
def test_declared_variants(impl, device, rng):
    """Every declared variant against the oracle: lengths around the bitsliced kernel's 32-block
    batch and over several work-items, both directions, CTR counters across 2^64 and from the low
    32-bit word into the high one, and the known answers."""
    if _native(device):
        pytest.skip("OpenSSL lacks MISTY1")
    for name in lean_names(device, NAMES):   # (conftest.lean)
        ctr = name.endswith("ctr")
        for nblocks in (1, 31, 32, 33, 64, 95, 1000):
            key, iv = rng.randbytes(16), (None if name.endswith("ecb") else rng.randbytes(8))
            _check(name, device, impl, key, iv, rng.data(8 * nblocks + (5 if ctr else 0)))
        for v in vectors.load(name):
            assert ciphergrid.encrypt(v.plaintext, name, v.key, v.iv, device=device,
                                      implementation=impl) == v.ciphertext, v.source
            assert ciphergrid.decrypt(v.ciphertext, name, v.key, v.iv, device=device,
                                      implementation=impl) == v.plaintext, v.source
    for iv in (b"\xff" * 7 + b"\xf0", bytes(4) + b"\xff" * 3 + b"\xf8"):
        _check("misty1-ctr", device, impl, rng.randbytes(16), iv, rng.data(8 * 70 + 3))
