"""SEED (RFC 4269): the independent model, the host side, and the kernels besides "fast".

* the plain-Python model of ``seed_model.py`` (written from RFC 4269, not from ciphergrid) against
  the RFC's S-box tables (first entries of Appendix A), its Appendix B examples and RFC 4196's
  SEED-CBC cases; then ciphergrid's host code (S-boxes, key schedule, ECB) and pyca against it;
* the tables pasted in kernels/seed.cl and kernels/seed_ref.cl are those the host derives;
* the declaration: names, key sizes, what OpenSSL has (ECB, CBC in the legacy provider; no CTR,
  no XTS: XTS on the OpenSSL engine is composed from its ECB), the decryption schedule;
* the "reference" kernel and the other "fast" variants against the oracle on every OpenCL/CUDA
  device, every mode and both directions, random keys and IVs, odd lengths, CTR counters that
  wrap, XTS in sector mode ("fast" itself runs in the generic tests).
"""

from __future__ import annotations

import re
from importlib import resources

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry
from ciphergrid.algorithms import seed as host
from ciphergrid.testing import oracle

import seed_model as model
from test_constant_time import CT_DEVICES, compare_cases

SEED = registry.lookup("seed-ecb").algorithm
NAMES = ["seed-ecb", "seed-cbc", "seed-ctr", "seed-xts"]
needs_device = pytest.mark.skipif(not CT_DEVICES, reason="no OpenCL/CUDA device")

# RFC 4269 Appendix B: (key, plaintext, ciphertext)
RFC4269_B = [
    ("00000000000000000000000000000000", "000102030405060708090a0b0c0d0e0f", "5ebac6e0054e166819aff1cc6d346cdb"),
    ("000102030405060708090a0b0c0d0e0f", "00000000000000000000000000000000", "c11f22f20140505084483597e4370f43"),
    ("4706480851e61be85d74bfb3fd956185", "83a2f8a288641fb9a4e9a5cc2f131c7d", "ee54d13ebcae706d226bc3142cd40d4a"),
    ("28dbc3bc49ffd87dcfa509b11d422be7", "b41e6be2eba84a148e2eed84593c5ec7", "9b9b7bfcd1813cb95d0b3618f40f5122"),
]
# RFC 4196 section 4, Case #1 (key, IV, plaintext, ciphertext)
RFC4196_CASE1 = ("ed2401ad22fa255991bafdb01fefd697", "93eb149f92c9905bae5cd34da06c3c8e",
                 "b40d7003d9b6904b35622750c91a24575bb9a632364aa26e3ac0cf3a9c9d0dcb",
                 "f072c5b1a0588c105af8301adcd91dd067f6822155304bf3aad75ceb44341c25")
# RFC 4269 Appendix A: the first row of each S-box table
S1_FIRST = "a985d6d3541dac255d43181e51fcca63"
S2_FIRST = "38e82da6cfdeb3b8af6055c7446f6b5b"


# --------------------------------------------------------------------------- the model

def test_model_sboxes():
    assert bytes(model.S1[:16]).hex() == S1_FIRST
    assert bytes(model.S2[:16]).hex() == S2_FIRST
    assert sorted(model.S1) == list(range(256)) and sorted(model.S2) == list(range(256))


@pytest.mark.parametrize("k,p,c", RFC4269_B)
def test_model_rfc4269_appendix_b(k, p, c):
    k, p, c = bytes.fromhex(k), bytes.fromhex(p), bytes.fromhex(c)
    assert model.encrypt_block(k, p) == c
    assert model.decrypt_block(k, c) == p


def test_model_rfc4196_cbc():
    k, iv, p, c = (bytes.fromhex(x) for x in RFC4196_CASE1)
    assert model.cbc_encrypt(k, iv, p) == c


# --------------------------------------------------------------------------- the host side

def test_host_sboxes_and_tables_match_the_model():
    assert list(host.S1) == model.S1 and list(host.S2) == model.S2
    for x in (0, 1, 0x80, 0x1234_5678, 0xFFFF_FFFF, 0xDEAD_BEEF):
        assert host.g(x) == model.G(x)
    # SS2, SS3 are SS0, SS1 rotated by 16 bits (what seed.cl's SEED_TABLES=2 relies on)
    rot16 = lambda w: ((w << 16) | (w >> 16)) & 0xFFFFFFFF  # noqa: E731
    assert host.SS2 == tuple(rot16(w) for w in host.SS0) and host.SS3 == tuple(rot16(w) for w in host.SS1)


def test_host_key_schedule_matches_the_model(rng):
    for _ in range(5):
        key = rng.randbytes(16)
        want = [w for pair in model.round_keys(key) for w in pair]
        assert host.key_schedule(key) == want
        ek, dk = SEED.expand(key, False), SEED.expand(key, True)
        assert ek.dtype == np.dtype("<u4") and ek.tolist() == want
        # decryption: the same network, the round-key pairs in reverse order
        assert dk.reshape(16, 2)[::-1].reshape(-1).tolist() == want


def test_fast_schedule_is_the_readable_one(rng):
    """expand() runs key_schedule_fast (G inlined); it must give key_schedule's words (pairs
    reversed for decryption) for every key."""
    for key in [bytes(16), b"\xff" * 16] + [rng.randbytes(16) for _ in range(40)]:
        want = host.key_schedule(key)
        assert SEED.expand(key, False).tolist() == want
        assert SEED.expand(key, True).tolist() == [w for i in reversed(range(16)) for w in want[2 * i: 2 * i + 2]]


def test_schedule_without_libcrypto_is_the_same(rng, monkeypatch):
    """expand() takes libcrypto's SEED_set_key where it agrees with ours; without it the
    Python schedule gives the same words, both directions."""
    from ciphergrid.algorithms.base import NativeSchedule

    keys = [rng.randbytes(16) for _ in range(8)]
    fast = [(SEED.expand(k, False).tolist(), SEED.expand(k, True).tolist()) for k in keys]
    monkeypatch.setattr(host, "_NATIVE", NativeSchedule("no_such_call", (), 32, None))
    assert [(SEED.expand(k, False).tolist(), SEED.expand(k, True).tolist()) for k in keys] == fast
    assert host._NATIVE.fn is None


def test_host_ecb_and_pyca_match_the_model(rng):
    key, data = rng.randbytes(16), rng.data(16 * 64)
    want = model.ecb(key, data, True)
    assert host.ecb_python(key, data, True) == want
    assert host.ecb_python(key, want, False) == data
    assert SEED.reference_ecb(key, data, True) == want       # pyca (OpenSSL's legacy provider)
    assert SEED.reference_ecb(key, want, False) == data


def test_expand_refuses_other_key_sizes():
    for n in (0, 15, 17, 24, 32):
        with pytest.raises(ciphergrid.InvalidKeySize):
            SEED.expand(bytes(n), False)


def _cl_tables(fname: str) -> dict[str, list[int]]:
    src = resources.files("ciphergrid").joinpath("kernels", fname).read_text()
    out = {}
    for m in re.finditer(r"CONST_TABLE \w+ (\w+)\[256\] = \{(.*?)\};", src, re.S):
        out[m.group(1)] = [int(v.rstrip("u"), 16) for v in re.findall(r"0x[0-9a-fA-F]+u?", m.group(2))]
    return out


def test_kernel_tables_are_the_derived_ones():
    ref = _cl_tables("seed_ref.cl")
    assert ref == {"SEED_REF_S1": list(host.S1), "SEED_REF_S2": list(host.S2)}
    fast = _cl_tables("seed.cl")
    assert fast == {"SEED_SS0": list(host.SS0), "SEED_SS1": list(host.SS1)}


# --------------------------------------------------------------------------- the declaration

def test_implementations_are_covered():
    assert set(SEED.implementations) == {"reference", "fast", "fast-8copies", *VARIANTS}


def test_names_and_engines():
    assert [n for n in registry.names() if n.startswith("seed")] == sorted(NAMES)
    for name in NAMES:
        spec = registry.lookup(name)
        assert spec.key_len == (32 if name.endswith("xts") else 16)
        assert spec.algorithm.openssl_provider == "legacy"
    assert registry.lookup("seed-ecb").openssl_name == "seed-ecb"
    assert registry.lookup("seed-cbc").openssl_name == "seed-cbc"
    assert registry.lookup("seed-ctr").openssl_name is None
    assert registry.lookup("seed-xts").openssl_name is None
    caps = registry.lookup("seed-ctr").capabilities()
    assert caps["encrypt"]["openssl"] is None and caps["encrypt"]["device"] == "parallel"
    # XTS: composed from OpenSSL's SEED-ECB on the OpenSSL engine
    assert registry.lookup("seed-xts").capability("openssl", True) == "parallel"
    assert oracle.source("seed-ctr").startswith("seed reference_ecb")
    assert oracle.source("seed-cbc").startswith("pyca")
    assert set(SEED.implementations) >= {"reference", "fast"}
    assert not any(im.constant_time for im in SEED.implementations.values())


def test_native_refuses_ctr():
    with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
        ciphergrid.encrypt(bytes(32), "seed-ctr", bytes(16), bytes(16), device="native")


# --------------------------------------------------------------------------- the kernels

LENGTHS = [16, 33 * 16 + 1, 257 * 16 + 3, 40000 + 5]
#: the variants whose code differs from "fast" (four tables; two blocks per step); "fast-8copies"
#: differs only in a number of copies (a compile of its own on PoCL: left out to keep CI lean)
VARIANTS = ["fast-4tables", "fast-2blocks"]


def _cases(rng, name: str, lengths) -> list:
    mode = registry.lookup(name).mode.name
    lens = sorted({n - n % 16 for n in lengths}) if mode in ("ecb", "cbc") else list(lengths)
    cases = [(f"{n} bytes", rng.data(n), rng.key(name), rng.iv(name), {}) for n in lens]
    if mode == "ctr":
        hi, lo = rng.getrandbits(64), (1 << 64) - rng.randrange(1, 40)
        cases.append(("counter wraps 2^64", rng.data(33 * 16 + 1), rng.key(name),
                      ((hi << 64) | lo).to_bytes(16, "big"), {}))
        cases.append(("counter wraps 2^128", rng.data(3000), rng.key(name),
                      ((1 << 128) - rng.randrange(1, 40)).to_bytes(16, "big"), {}))
    if mode == "xts":
        cases.append(("sector_size=512, start_sector=7", rng.data(9 * 512 + 19), rng.key(name),
                      None, {"sector_size": 512, "start_sector": 7}))
    return cases


@needs_device
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_reference_kernel_matches_oracle(kdev, rng, ref, diff):
    bad = []
    for name in NAMES:
        bad += [f"{name} {b}" for b in compare_cases(name, _cases(rng, name, LENGTHS), ref, diff,
                                                      device=kdev, implementation="reference")]
    assert not bad, f"reference on {kdev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("impl", VARIANTS)
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_fast_variants_match_oracle(kdev, impl, rng, ref, diff):
    """The tuning variants (tables held, copies, blocks per work-item): ECB, CTR and XTS both ways."""
    bad = []
    for name in ("seed-ecb", "seed-ctr", "seed-xts"):
        bad += [f"{name} {b}" for b in compare_cases(name, _cases(rng, name, [33 * 16 + 1, 5000 + 7]),
                                                      ref, diff, device=kdev, implementation=impl)]
    assert not bad, f"{impl} on {kdev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_reference_kernel_known_answers(kdev):
    for k, p, c in RFC4269_B:
        k, p, c = bytes.fromhex(k), bytes.fromhex(p), bytes.fromhex(c)
        assert ciphergrid.encrypt(p, "seed-ecb", k, device=kdev, implementation="reference") == c
        assert ciphergrid.decrypt(c, "seed-ecb", k, device=kdev, implementation="reference") == p


def test_vector_files_are_loaded():
    from ciphergrid import vectors

    if vectors.vectors_dir() is None:
        pytest.skip("cryptography_vectors is not installed")
    srcs = [v.source for v in vectors.load() if v.cipher.startswith("seed-")]
    assert sum(s.startswith("cryptography_vectors/ciphers/SEED/rfc-4269.txt") for s in srcs) == 4
    assert sum(s.startswith("cryptography_vectors/ciphers/SEED/rfc-4196.txt") for s in srcs) == 2
    assert {v.cipher for v in vectors.load() if v.source.startswith("RFC 4269 (derived)")} == {
        "seed-ctr", "seed-xts"}
