"""Camellia (RFC 3713): the declaration, the host key schedule, the two kernels.

The generic tests (test_kat, test_differential, test_streaming, test_cli, ...) already run every
Camellia name on every device with the default implementation ("fast").  Here:

* an independent plain-Python Camellia (tests/camellia_model.py, written from RFC 3713 statement by
  statement) against RFC 3713 Appendix A and NTT's known answers; the host key schedule of
  ciphergrid/algorithms/camellia.py against it (subkeys, Sigma constants derived from square roots,
  SBOX2..4 derived from SBOX1); the kernels' flat schedule layout and its reversal for decryption,
  run through a Python interpreter of that layout; the SP-table form of the F-function that
  kernels/camellia.cl uses;
* the "reference" kernel (camellia_ref.cl) on every OpenCL/CUDA device: the known answers of the
  data file, and every Camellia name against the oracle on random keys and IVs, odd lengths, CTR
  counters wrapping 2^64 and 2^128, XTS in sector mode;
* the other "fast" variants (the knobs of camellia.cl) on one key size each;
* the engines: OpenSSL's EVP names (none for XTS: the OpenSSL engine composes it from ECB), the
  capability table, the oracle's source per name, the NTT files loaded;
* the kernel sources keep to the portable subset.

Sizes stay small (PoCL in CI).
"""

from __future__ import annotations

import random
import re
from importlib import resources

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry, vectors
from ciphergrid.algorithms import camellia as cam
from ciphergrid.testing import oracle

import camellia_model as model

try:
    from conftest import all_devices, lean_names
except ImportError:  # pragma: no cover
    def all_devices():
        return tuple(ciphergrid.devices())

    def lean_names(spec, names):
        return list(names)

CAM = registry.lookup("camellia-128-ecb").algorithm
NAMES = [n for n in registry.names() if n.startswith("camellia-")]
KDEVICES = [pytest.param(d.spec, id=d.spec, marks=[pytest.mark.gpu] if d.kind == "gpu" else [])
            for d in all_devices() if d.runtime in ("opencl", "cuda")]
needs_device = pytest.mark.skipif(not KDEVICES, reason="no OpenCL/CUDA device")

RFC3713 = [  # Appendix A
    ("0123456789abcdeffedcba9876543210", "67673138549669730857065648eabe43"),
    ("0123456789abcdeffedcba98765432100011223344556677", "b4993401b3e996f84ee5cee7d79b09b9"),
    ("0123456789abcdeffedcba987654321000112233445566778899aabbccddeeff",
     "9acc237dff16d76c20ef7c919e3a7509"),
]
RFC3713_PT = bytes.fromhex("0123456789abcdeffedcba9876543210")


# --------------------------------------------------------------------------- the model

def test_model_rfc3713_appendix_a():
    for key, ct in RFC3713:
        k = bytes.fromhex(key)
        assert model.encrypt_block(k, RFC3713_PT).hex() == ct
        assert model.decrypt_block(k, bytes.fromhex(ct)) == RFC3713_PT


def test_model_ntt_known_answers():
    """The model against NTT's files (cryptography_vectors): the first key of each file (128
    blocks) and one block of every other key."""
    vs = [v for v in vectors.load() if v.cipher.endswith("-ecb") and v.cipher.startswith("camellia")
          and v.source.startswith("cryptography_vectors/")]
    if not vs:
        pytest.skip("cryptography_vectors is not installed")
    first = {}
    for v in vs:
        first.setdefault(len(v.key), v.key)
    seen = set()
    checked = 0
    for v in vs:
        if v.key == first[len(v.key)] or v.key not in seen:
            seen.add(v.key)
            assert model.encrypt_block(v.key, v.plaintext) == v.ciphertext, v.source
            assert model.decrypt_block(v.key, v.ciphertext) == v.plaintext, v.source
            checked += 1
    assert checked >= 3 * (128 + 9)


# --------------------------------------------------------------------------- the host key schedule

def test_constants_and_sboxes():
    # Sigma1..6 derived from square roots == RFC 3713 section 2.2
    assert cam.SIGMA == (model.C1, model.C2, model.C3, model.C4, model.C5, model.C6)
    assert list(cam.SBOX1) == model.SBOX1
    for x in range(256):
        assert (cam.SBOX2[x], cam.SBOX3[x], cam.SBOX4[x]) == (model.sbox2(x), model.sbox3(x),
                                                              model.sbox4(x))
    # each S-box is a permutation; s3 is the inverse rotation of s2
    for s in (cam.SBOX1, cam.SBOX2, cam.SBOX3, cam.SBOX4):
        assert sorted(s) == list(range(256))


def test_subkeys_match_the_model():
    rng = random.Random(3713)
    for size in (16, 24, 32):
        for key in [bytes(size), b"\xff" * size] + [rng.randbytes(size) for _ in range(5)]:
            assert cam.subkeys(key) == model.key_schedule(key), (size, key.hex())


def test_fast_schedule_is_the_readable_one():
    """expand() runs schedule_fast (SP tables, one gather); it must give schedule_words' words
    for every key size and direction, and its F the RFC's F."""
    rng = random.Random(6114)
    for _ in range(500):
        x, k = rng.getrandbits(64), rng.getrandbits(64)
        assert cam._f_sp(x, k) == cam._f(x, k)
    for size in (16, 24, 32):
        for key in [bytes(size), b"\xff" * size] + [rng.randbytes(size) for _ in range(30)]:
            for decrypt in (False, True):
                got = CAM.expand(key, decrypt)
                assert got.dtype == np.dtype("<u4") and got.flags.writeable
                assert got.tolist() == cam.schedule_words(key, decrypt), (key.hex(), decrypt)


def _run_schedule(words, block: bytes, rounds: int) -> bytes:
    """The kernels' block function, in Python, over the flat schedule of expand()."""
    k = [(int(words[2 * i]) << 32) | int(words[2 * i + 1]) for i in range(len(words) // 2)]
    nfl = rounds // 6 - 1
    assert len(k) == 4 + rounds + 2 * nfl
    m = int.from_bytes(block, "big")
    d1, d2 = (m >> 64) ^ k[0], (m & model.MASK64) ^ k[1]
    for r in range(0, rounds, 2):
        if r and r % 6 == 0:
            j = r // 6 - 1
            d1 = model.FL(d1, k[2 + rounds + 2 * j])
            d2 = model.FLINV(d2, k[3 + rounds + 2 * j])
        d2 ^= model.F(d1, k[2 + r])
        d1 ^= model.F(d2, k[3 + r])
    d2 ^= k[2 + rounds + 2 * nfl]
    d1 ^= k[3 + rounds + 2 * nfl]
    return ((d2 << 64) | d1).to_bytes(16, "big")


def test_schedule_layout_and_reversed_decryption():
    rng = random.Random(5528)
    for size, words in ((16, 52), (24, 68), (32, 68)):
        rounds = CAM.defines(size)["CAM_ROUNDS"]
        assert rounds == (18 if size == 16 else 24)
        for _ in range(4):
            key = rng.randbytes(size)
            ek, dk = CAM.expand(key, False), CAM.expand(key, True)
            assert ek.dtype == np.dtype("<u4") and dk.dtype == np.dtype("<u4")
            assert len(ek) == len(dk) == words
            # decryption = the same schedule in reverse order of the 64-bit subkeys
            pairs = ek.reshape(-1, 2)
            pre, mid, post = pairs[:2], pairs[2:-2], pairs[-2:]
            ks, kes = mid[:rounds], mid[rounds:]
            want = np.concatenate([post, ks[::-1], kes[::-1], pre]).reshape(-1)
            assert np.array_equal(dk, want)
            for _ in range(3):
                p = rng.randbytes(16)
                c = _run_schedule(ek, p, rounds)
                assert c == model.encrypt_block(key, p)
                assert _run_schedule(dk, c, rounds) == p
    with pytest.raises(ciphergrid.InvalidKeySize):
        CAM.expand(bytes(20), False)
    with pytest.raises(ValueError):
        CAM.expand(bytes(16), False, layout="bitsliced")


def test_sp_table_form_of_f():
    """The identity camellia.cl computes F with (see the comment at its top)."""
    def word(b1, b2, b3, b4):
        return (b1 << 24) | (b2 << 16) | (b3 << 8) | b4

    sp = [[word(s, s, s, 0) for s in cam.SBOX1], [word(0, s, s, s) for s in cam.SBOX2],
          [word(s, 0, s, s) for s in cam.SBOX3], [word(s, s, 0, s) for s in cam.SBOX4]]
    rng = random.Random(1)
    for _ in range(2000):
        x, k = rng.getrandbits(64), rng.getrandbits(64)
        ch, cl = (x ^ k) >> 32, (x ^ k) & 0xFFFFFFFF
        q = sp[0][ch >> 24] ^ sp[1][(ch >> 16) & 255] ^ sp[2][(ch >> 8) & 255] ^ sp[3][ch & 255]
        p = sp[1][cl >> 24] ^ sp[2][(cl >> 16) & 255] ^ sp[3][(cl >> 8) & 255] ^ sp[0][cl & 255]
        yl = p ^ q
        yr = yl ^ (((q >> 8) | (q << 24)) & 0xFFFFFFFF)
        assert (yl << 32) | yr == model.F(x, k)


def test_reference_ecb_is_openssl_and_agrees_with_the_model():
    rng = random.Random(7)
    for size in (16, 24, 32):
        key = rng.randbytes(size)
        data = rng.randbytes(16 * 5)
        ct = CAM.reference_ecb(key, data, True)
        assert ct == model.ecb(key, data, True)
        assert CAM.reference_ecb(key, ct, False) == data


# --------------------------------------------------------------------------- declaration, engines

def test_names_and_capabilities():
    assert NAMES == sorted(f"camellia-{b}-{m}" for b in (128, 192, 256)
                           for m in ("ecb", "cbc", "ctr") + (("xts",) if b != 192 else ()))
    for n in NAMES:
        spec = registry.lookup(n)
        mode = spec.mode.name
        assert spec.key_len == spec.key_size * (2 if mode == "xts" else 1)
        if mode == "xts":
            assert spec.openssl_name is None  # OpenSSL has no Camellia-XTS ...
            # ... the OpenSSL engine composes it from its ECB
            assert spec.capabilities() == {"encrypt": {"device": "parallel", "openssl": "parallel"},
                                           "decrypt": {"device": "parallel", "openssl": "parallel"}}
            assert oracle.source(n).startswith("camellia reference_ecb + xts")
        else:
            assert spec.openssl_name == n
            serial = "serial" if mode == "cbc" else "parallel"
            assert spec.capabilities()["encrypt"] == {"device": serial, "openssl": serial}
        if mode in ("ecb", "cbc"):
            assert oracle.source(n).startswith("pyca/cryptography")


def test_ntt_and_cbc_files_are_loaded():
    if vectors.vectors_dir() is None:
        pytest.skip("cryptography_vectors is not installed")
    files = {v.source.split(" key ")[0].split(" [")[0] for v in vectors.load()
             if v.cipher.startswith("camellia") and v.source.startswith("cryptography_vectors/")}
    for bits in (128, 192, 256):
        assert f"cryptography_vectors/ciphers/Camellia/camellia-{bits}-ecb.txt" in files
    assert "cryptography_vectors/ciphers/Camellia/camellia-cbc.txt" in files
    for bits in (128, 192, 256):
        ntt = [v for v in vectors.load(f"camellia-{bits}-ecb") if "Camellia/camellia-" in v.source]
        assert len(ntt) == 1280 and len({v.key for v in ntt}) == 10


def test_xts_on_the_openssl_engine_is_composed(rng, diff):
    """OpenSSL lacks Camellia-XTS: the native engine composes it from camellia-*-ecb (IEEE 1619,
    ciphertext stealing included), checked against the oracle's own composition."""
    for name in ("camellia-128-xts", "camellia-256-xts"):
        key = rng.key(name)
        for n, kw in ((16 * 37 + 5, {}), (4 * 512 + 19, {"sector_size": 512, "start_sector": 2**64 - 2})):
            iv = None if kw else rng.randbytes(16)
            pt = rng.data(n)
            want = oracle.crypt(name, key, iv, pt, True, **kw)
            got = ciphergrid.encrypt(pt, name, key, iv, device="native", **kw)
            assert got == want, f"{name} {kw}: {diff(got, want)}"
            assert ciphergrid.decrypt(want, name, key, iv, device="native", **kw) == pt


# --------------------------------------------------------------------------- the kernels

def _kat_failures(device: str, **kw) -> list[str]:
    """The vectors of camellia.json's groups (not the files), and NTT's first key per size."""
    bad = []
    vs = [v for v in vectors.load() if v.cipher.startswith("camellia")
          and not v.source.startswith("cryptography_vectors/")]
    ntt = {}
    for v in vectors.load():
        if v.cipher.startswith("camellia") and "Camellia/camellia-" in v.source and v.cipher.endswith("ecb"):
            ntt.setdefault(v.cipher, (v.key, []))
            if ntt[v.cipher][0] == v.key:
                ntt[v.cipher][1].append(v)
    groups = [[v] for v in vs] + [g for _, g in ntt.values()]
    for g in groups:
        v = g[0]
        pt = b"".join(x.plaintext for x in g)
        ct = b"".join(x.ciphertext for x in g)
        kwv = v.call_kwargs()
        if v.encrypt_ok:
            got = ciphergrid.encrypt(pt, v.cipher, v.key, device=device, **kwv, **kw)
            if got != ct:
                bad.append(f"{v.source} ({len(g)} vectors) encrypt: {got.hex()[:64]}")
        got = ciphergrid.decrypt(ct, v.cipher, v.key, device=device, **kwv, **kw)
        if got != pt:
            bad.append(f"{v.source} ({len(g)} vectors) decrypt: {got.hex()[:64]}")
    return bad


@needs_device
@pytest.mark.parametrize("kdev", KDEVICES)
def test_reference_kernel_known_answers(kdev):
    bad = _kat_failures(kdev, implementation="reference")
    assert not bad, "\n".join(bad)


LENGTHS = [0, 17, 33 * 16 + 1, 257 * 16 + 3, 70000 + 5]


def _lengths(mode: str, lengths=LENGTHS) -> list[int]:
    if mode in ("ecb", "cbc"):
        return sorted({n - n % 16 for n in lengths})
    if mode == "xts":
        return [n for n in lengths if n >= 16]
    return lengths


def _compare(name, device, impl, rng, diff, lengths=LENGTHS) -> list[str]:
    bad = []
    mode = registry.lookup(name).mode.name
    cases = [(f"{n} bytes", rng.data(n), rng.key(name), rng.iv(name), {}) for n in _lengths(mode, lengths)]
    if mode == "ctr":
        hi, lo = rng.getrandbits(64), (1 << 64) - rng.randrange(1, 40)
        cases.append(("counter wraps 2^64", rng.data(33 * 16 + 1), rng.key(name),
                      ((hi << 64) | lo).to_bytes(16, "big"), {}))
        cases.append(("counter wraps 2^128", rng.data(3000), rng.key(name),
                      ((1 << 128) - rng.randrange(1, 40)).to_bytes(16, "big"), {}))
    if mode == "xts":
        cases.append(("sector_size=512, start_sector=7", rng.data(9 * 512 + 16 + 3), rng.key(name),
                      None, {"sector_size": 512, "start_sector": 7}))
    for what, pt, key, iv, kw in cases:
        want = oracle.crypt(name, key, iv, pt, True, **kw)
        got = ciphergrid.encrypt(pt, name, key, iv, device=device, implementation=impl, **kw)
        if got != want:
            bad.append(f"{name} {what} encrypt: {diff(got, want)}")
        back = ciphergrid.decrypt(want, name, key, iv, device=device, implementation=impl, **kw)
        if back != pt:
            bad.append(f"{name} {what} decrypt: {diff(back, pt)}")
    return bad


@needs_device
@pytest.mark.parametrize("kdev", KDEVICES)
def test_reference_kernel_matches_oracle(kdev, rng, diff):
    bad = []
    for name in NAMES:
        bad += _compare(name, kdev, "reference", rng, diff)
    assert not bad, "\n".join(bad)


# each variant on one key size (rotating), all its modes: every knob compiles and is right
VARIANTS = [("fast-1copy", 128), ("fast-4copies", 192), ("fast-2-blocks-per-item", 256), ("fast-mad-index", 192)]


def test_every_implementation_is_covered():
    covered = {"fast", "reference"} | {v for v, _ in VARIANTS}
    assert covered == set(CAM.implementations)
    assert CAM.implementation().file == "camellia.cl"
    assert CAM.implementation("reference").file == "camellia_ref.cl"
    assert not any(im.constant_time for im in CAM.implementations.values())
    with pytest.raises(ciphergrid.InvalidArgument):
        CAM.constant_time_implementation()


@needs_device
@pytest.mark.parametrize("impl,bits", VARIANTS)
@pytest.mark.parametrize("kdev", KDEVICES)
def test_fast_variants(kdev, impl, bits, rng, diff):
    bad = []
    for name in (n for n in lean_names(kdev, NAMES) if n.startswith(f"camellia-{bits}-")):
        bad += _compare(name, kdev, impl, rng, diff, lengths=[17, 33 * 16 + 1, 9000 + 3])
    assert not bad, f"{impl}:\n" + "\n".join(bad)


# --------------------------------------------------------------------------- the sources

@pytest.mark.parametrize("fname", ["camellia.cl", "camellia_ref.cl"])
def test_kernel_sources_are_portable(fname):
    src = resources.files("ciphergrid").joinpath("kernels", fname).read_text()
    code = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    for word in ("__kernel", "__global", "__local", "__constant", "__shared__", "__device__",
                 "get_global_id", "get_local_id", "barrier(", "printf", "rotate(", "uint4",
                 "#include"):
        assert word not in code, f"{fname} uses {word!r}: only the spellings of portable.h"
    # names at program scope carry the cipher's prefix (no clash with other kernel files)
    for m in re.finditer(r"^(?:CONST_TABLE|DEVICE_FN)\s+\w+\s+(\w+)", code, flags=re.M):
        assert m.group(1).lower().startswith(("cam", "cg_")), m.group(1)
