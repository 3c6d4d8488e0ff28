"""CLEFIA (RFC 6114): the independent model (tests/clefia_model.py) against the RFC's vectors, the
host side (ciphergrid/algorithms/clefia.py) and the kernels' tables against the model, the declared
names and engines (OpenSSL lacks CLEFIA), and every kernel implementation besides "fast" against
the oracle on every OpenCL/CUDA device ("fast" runs in the generic tests: test_kat,
test_differential, test_streaming, ...).

The oracle for CLEFIA is ``reference_ecb`` (the host model of algorithms/clefia.py) composed with
the modes in ciphergrid.testing.oracle, since pyca lacks CLEFIA; this file checks that host model
against the independent one, so the generic tests rest on RFC 6114 Appendix A through it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry
from ciphergrid.algorithms import clefia as host
from ciphergrid.testing import oracle

import clefia_model as model
from conftest import device_info, watch_launches

KERNELS = Path(host.__file__).resolve().parent.parent / "kernels"
NAMES = [n for n in registry.names() if n.startswith("clefia-")]
BITS = {16: 128, 24: 192, 32: 256}

# RFC 6114 Appendix A (the same examples as Sony's CLEFIA specification and clefia_ref.c)
RFC_PT = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
RFC_KEY = bytes.fromhex("ffeeddccbbaa99887766554433221100f0e0d0c0b0a090807060504030201000")
RFC_CT = {16: "de2bf2fd9b74aacdf1298555459494fd",
          24: "e2482f649f028dc480dda184fde181ad",
          32: "a1397814289de80c10da46d1fa48b38a"}


def is_native(device: str) -> bool:
    return device_info(device).runtime == "native"


# --------------------------------------------------------------------------- the model itself

@pytest.mark.parametrize("n", [16, 24, 32])
def test_model_rfc6114_appendix_a(n):
    key = RFC_KEY[:n]
    ct = model.encrypt_block(key, RFC_PT)
    assert ct.hex() == RFC_CT[n], f"CLEFIA-{BITS[n]}"
    assert model.decrypt_block(key, ct) == RFC_PT
    r, wk, rk = model.key_schedule(key)
    assert (r, len(wk), len(rk)) == ({16: 18, 24: 22, 32: 26}[n], 4, 2 * r)


def test_model_sboxes():
    # both are permutations; first entries of the RFC's tables
    assert sorted(model.S0) == list(range(256)) and sorted(model.S1) == list(range(256))
    assert (model.S0[0], model.S0[255], model.S1[0], model.S1[255]) == (0x57, 0x8E, 0x6C, 0x1D)
    # S1 = g(f(x)^-1), affine maps around the inverse in GF(2^8): differential uniformity 4 and the
    # inverse's nonlinearity 112, which one mistyped entry of the transcribed table would break
    for sbox, du in ((model.S1, 4), (model.S0, 10)):
        worst = 0
        for a in range(1, 256):
            counts = [0] * 256
            for x in range(256):
                counts[sbox[x] ^ sbox[x ^ a]] += 1
            worst = max(worst, max(counts))
        assert worst == du
    parity = [bin(v).count("1") & 1 for v in range(256)]
    nl = min(128 - max(abs(sum(1 - 2 * (parity[a & x] ^ parity[b & model.S1[x]]) for x in range(256))) // 2
                       for a in range(256)) for b in (1, 2, 0x80, 0x55, 0xFF, 0x3C))
    assert nl == 112


def test_model_con_constants():
    for bits, n in ((128, 60), (192, 84), (256, 92)):
        c = model.con(bits)
        assert len(c) == n and len({bytes(w) for w in c}) == n


# --------------------------------------------------------------------------- host side vs the model

@pytest.mark.parametrize("n", [16, 24, 32])
def test_host_schedule_matches_model(n, rng):
    for key in (RFC_KEY[:n], rng.randbytes(n)):
        r, wk, rk = model.key_schedule(key)
        le = [int.from_bytes(bytes(w), "little") for w in wk + rk]
        wkl, rkl = le[:4], le[4:]
        enc = host.CIPHER.expand(key, False)
        dec = host.CIPHER.expand(key, True)
        assert enc.dtype == np.dtype("<u4") and len(enc) == 2 * r + 4
        assert enc.tolist() == wkl[:2] + rkl + wkl[2:]
        want_dec = wkl[2:] + [w for i in reversed(range(r)) for w in rkl[2 * i: 2 * i + 2]] + wkl[:2]
        assert dec.tolist() == want_dec
        assert host.CIPHER.defines(n) == {"CLEFIA_ROUNDS": r}


@pytest.mark.parametrize("n", [16, 24, 32])
def test_fast_schedule_is_the_readable_one(n, rng):
    """expand() runs kernel_schedule_fast (unrolled GFN, 128-bit round keys); it must give the
    readable kernel_schedule's words for every key, both directions."""
    keys = [bytes(n), b"\xff" * n, RFC_KEY[:n]] + [rng.randbytes(n) for _ in range(40)]
    for key in keys:
        for decrypt in (False, True):
            got = host.CIPHER.expand(key, decrypt)
            assert got.dtype == np.dtype("<u4") and got.flags.writeable
            assert got.tolist() == host.kernel_schedule(key, decrypt), (key.hex(), decrypt)


@pytest.mark.parametrize("n", [16, 24, 32])
def test_host_ecb_matches_model(n, rng):
    key = rng.randbytes(n)
    for nblocks in (1, 3, 8, 9, 40):   # the scalar path (<= 8 blocks) and the numpy one
        data = rng.data(16 * nblocks)
        ct = model.ecb(key, data, True)
        assert host.CIPHER.reference_ecb(key, data, True) == ct, f"{nblocks} blocks"
        assert host.CIPHER.reference_ecb(key, ct, False) == data, f"{nblocks} blocks"
    with pytest.raises(ValueError):
        host.CIPHER.reference_ecb(key, bytes(17), True)
    with pytest.raises(ciphergrid.InvalidKeySize):
        host.CIPHER.reference_ecb(bytes(20), bytes(16), True)


def _cl_tables(path: Path) -> dict[str, list[int]]:
    text = path.read_text()
    out = {}
    for m in re.finditer(r"CONST_TABLE\s+(?:uint|uchar)\s+(\w+)\[\d+\]\s*=\s*\{([^}]*)\}", text):
        out[m.group(1)] = [int(v.rstrip("u"), 16) for v in re.findall(r"0x[0-9a-fA-F]+u?", m.group(2))]
    return out


def test_kernel_tables_match_model():
    """The constant tables of both kernel files, recomputed from the model's S-boxes and matrices."""
    ref = _cl_tables(KERNELS / "clefia_ref.cl")
    assert ref["CLEFIA_S0"] == model.S0 and ref["CLEFIA_S1"] == model.S1
    assert ref["CLEFIA_M0"] == [c for row in model.M0 for c in row]
    assert ref["CLEFIA_M1"] == [c for row in model.M1 for c in row]
    fast = _cl_tables(KERNELS / "clefia.cl")
    for f, (m, boxes) in enumerate(((model.M0, (model.S0, model.S1)), (model.M1, (model.S1, model.S0)))):
        for k in range(4):
            s = boxes[k % 2]
            want = [sum(model.gf8_mul(m[i][k], s[b]) << (8 * i) for i in range(4)) for b in range(256)]
            assert fast[f"CLEFIA_F{f}_{k}"] == want, f"F{f} column {k}"
            # columns 2 and 3 are columns 0 and 1 rotated by 16 (what CLEFIA_TABLES=4 relies on)
            if k >= 2:
                assert want == [((v << 16) | (v >> 16)) & 0xFFFFFFFF for v in fast[f"CLEFIA_F{f}_{k - 2}"]]


def test_vector_file_against_model():
    """Every vector of ciphergrid/vectors/clefia.json, recomputed with the model (and the oracle's
    XTS composition for the computed XTS group)."""
    doc = json.loads((Path(host.__file__).resolve().parent.parent / "vectors" / "clefia.json").read_text())
    assert [g["source"] for g in doc["groups"]] == ["RFC 6114", "RFC 6114 (derived)", "ciphergrid (computed)"]
    from ciphergrid import vectors

    vs = [v for n in NAMES for v in vectors.load(n)]
    assert {v.cipher for v in vs} == set(NAMES)
    for v in vs:
        spec = registry.lookup(v.cipher)
        mode, ks = spec.mode.name, spec.key_size
        if mode == "ecb":
            got = model.ecb(v.key, v.plaintext, True)
        elif mode == "cbc":
            got = model.ecb(v.key, bytes(a ^ b for a, b in zip(v.plaintext, v.iv)), True)
        elif mode == "ctr":
            got = bytes(a ^ b for a, b in zip(v.plaintext, model.ecb(v.key, v.iv, True)))
        else:
            tweak = v.iv if v.iv is not None else v.start_sector.to_bytes(16, "little")
            got = oracle._xts_unit(model.ecb, v.key[:ks], v.key[ks:], tweak, v.plaintext, True)
        assert got == v.ciphertext, v.source
    for g, n in zip(doc["groups"][0]["vectors"], (16, 24, 32)):
        assert g["ciphertext"] == RFC_CT[n] and bytes.fromhex(g["key"]) == RFC_KEY[:n]


# --------------------------------------------------------------------------- names and engines

def test_names_and_capabilities():
    names = NAMES
    assert names == sorted([f"clefia-{b}-{m}" for b in (128, 192, 256) for m in ("ecb", "cbc", "ctr")]
                           + ["clefia-128-xts", "clefia-256-xts"])
    for n in names:
        spec = registry.lookup(n)
        assert spec.openssl_name is None and spec.block_size == 16
        serial = "serial" if spec.mode.name == "cbc" else "parallel"
        assert spec.capabilities() == {"encrypt": {"device": serial, "openssl": None},
                                       "decrypt": {"device": "parallel", "openssl": None}}
        assert oracle.source(n).startswith("clefia reference_ecb"), oracle.source(n)
    assert registry.lookup("clefia-256-xts").key_len == 64
    assert "fast" in host.CIPHER.implementations and "reference" in host.CIPHER.implementations
    assert not any(im.constant_time for im in host.CIPHER.implementations.values())
    with pytest.raises(ciphergrid.InvalidArgument):
        host.CIPHER.constant_time_implementation()


def test_native_refuses(rng):
    """OpenSSL lacks CLEFIA: the native engine refuses every name, both directions."""
    if "native" not in [d.spec for d in ciphergrid.devices()]:
        pytest.skip("no native engine")
    for n in NAMES:
        key, iv = rng.key(n), rng.iv(n)
        for fn in (ciphergrid.encrypt, ciphergrid.decrypt):
            with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
                fn(bytes(64), n, key, iv, device="native")


@pytest.fixture
def launches(device, monkeypatch):
    """The names of the kernels launched on ``device`` during the test."""
    return watch_launches(device, monkeypatch)


def test_cbc_encryption_runs_on_one_work_item(device, rng, diff, request):
    """No OpenSSL to hand serial CBC encryption to: it runs on the device's cg_cbc_enc kernel."""
    if is_native(device):
        pytest.skip("the native engine lacks CLEFIA (test_native_refuses)")
    seen = request.getfixturevalue("launches")
    name = "clefia-192-cbc"
    key, iv, pt = rng.key(name), rng.iv(name), rng.data(16 * 301)
    want = oracle.crypt(name, key, iv, pt, True)
    got = ciphergrid.encrypt(pt, name, key, iv, device=device)
    assert got == want, diff(got, want)
    assert seen and set(seen) == {"cg_cbc_enc"}, seen
    del seen[:]
    assert ciphergrid.decrypt(want, name, key, iv, device=device) == pt
    assert set(seen) == {"cg_cbc_dec"}, seen


# --------------------------------------------------------------------------- other implementations

def _check(name, device, key, iv, pt, diff, impl, **kw):
    want = oracle.crypt(name, key, iv, pt, True, **kw)
    got = ciphergrid.encrypt(pt, name, key, iv, device=device, implementation=impl, **kw)
    ctx = f"{impl} {name} on {device}, len={len(pt)}, key={key.hex()}, iv={iv.hex() if iv else None} {kw}"
    assert got == want, f"encrypt: {ctx}: {diff(got, want)}"
    back = ciphergrid.decrypt(want, name, key, iv, device=device, implementation=impl, **kw)
    assert back == pt, f"decrypt: {ctx}: {diff(back, pt)}"


def _lengths(mode: str) -> list[int]:
    base = [16, 16 * 37, 16 * 1000 + 16 * 5]
    if mode in ("ecb", "cbc"):
        return base
    return [n + 7 for n in base] + ([1] if mode == "ctr" else [])


def test_reference_implementation(device, rng, diff):
    """The "reference" kernel (byte S-boxes, one block per work-item) against the oracle: every
    name, random keys and IVs, odd lengths, both directions, and the RFC's vectors."""
    if is_native(device):
        pytest.skip("the native engine lacks CLEFIA (test_native_refuses)")
    for n in (16, 24, 32):
        got = ciphergrid.encrypt(RFC_PT, f"clefia-{BITS[n]}-ecb", RFC_KEY[:n], device=device,
                                 implementation="reference")
        assert got.hex() == RFC_CT[n]
    for name in NAMES:
        mode = registry.lookup(name).mode.name
        for size in _lengths(mode):
            _check(name, device, rng.key(name), rng.iv(name), rng.data(size), diff, "reference")
        if mode == "ctr":  # a counter that carries past 2^64 within the message
            iv = rng.randbytes(8) + b"\xff" * 7 + b"\xf0"
            _check(name, device, rng.key(name), iv, rng.data(16 * 40 + 3), diff, "reference")
        if mode == "xts":
            _check(name, device, rng.key(name), None, rng.data(3 * 512 + 21), diff, "reference",
                   sector_size=512, start_sector=2**40 + 7)


# the variants with their own code paths (eight tables: no rotation; two blocks per work-item);
# alt-4-copies differs from "fast" in the value of CLEFIA_COPIES only
ALTERNATIVES = ["alt-eight-tables", "alt-1-block-per-item"]


def test_alternatives_are_declared():
    assert set(ALTERNATIVES) | {"alt-4-copies", "fast", "reference"} == set(host.CIPHER.implementations)


@pytest.mark.parametrize("impl", ALTERNATIVES)
def test_alternative_fast_variants(impl, device, rng, diff):
    """The variants of the fast kernel offered for GPU timing: XTS (parallel encryption and
    decryption, the tweak kernel, ciphertext stealing on the host) on one key size each (one
    compile each)."""
    if is_native(device):
        pytest.skip("the native engine lacks CLEFIA (test_native_refuses)")
    name = "clefia-128-xts" if ALTERNATIVES.index(impl) % 2 == 0 else "clefia-256-xts"
    for size in (16, 16 * 333 + 5):
        _check(name, device, rng.key(name), rng.iv(name), rng.data(size), diff, impl)
