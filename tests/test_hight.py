"""HIGHT (hight-ecb, hight-cbc, hight-ctr): the independent model against the standard's vectors,
the host model and schedule against the independent model, and every kernel implementation on
every OpenCL/CUDA device against the oracle.

* ``tests/hight_model.py`` is a plain-Python HIGHT written from the specification (the LFSR
  deltas, whitening keys, 128 subkeys, F0/F1, 32 rounds, the final transformation; decryption as
  the specification inverts it), sharing no code with ``ciphergrid/algorithms/hight.py``.  It is
  checked against the four test vectors of TTAS.KO-12.0040/R1 (as the standard prints them, most
  significant byte first: read backwards into our byte strings) and KISA's reference-code ECB and
  CTR vectors (in our byte order already).
* ``ciphergrid/vectors/hight.json`` holds the same vectors in our byte order: checked here to be
  the printed values reversed (the generic test_kat runs them on every device).
* ``reference_ecb`` (numpy, what the oracle composes the modes from) and ``expand`` against the
  model.
* Every implementation ("reference", "fast", its tuning variants, "ct", and "fast" with the
  BYTE_PERM transposes that NVIDIA devices take) on every OpenCL/CUDA device: ECB, CBC, CTR,
  both directions, random keys and IVs, lengths around the four-block groups and over a
  persistent grid, CTR counters that wrap 2^64.
* OpenSSL lacks HIGHT: the capability table says so, ``native`` refuses it, CBC encryption
  (serial) runs on the device's one-work-item ``cg_cbc_enc`` (kernel launches watched).
* The command line: encrypt and decrypt back, against the model.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry, vectors
from ciphergrid.algorithms import hight as hight_mod
from ciphergrid.testing import oracle

import hight_model as model
from conftest import all_devices, lean_names, watch_launches

HIGHT = registry.lookup("hight-ecb").algorithm
NAMES = ("hight-ecb", "hight-cbc", "hight-ctr")
KiB = 1 << 10
DEVICES = [pytest.param(d.spec, id=d.spec, marks=[pytest.mark.gpu] if d.kind == "gpu" else [])
           for d in all_devices() if d.runtime in ("opencl", "cuda")]
needs_device = pytest.mark.skipif(not DEVICES, reason="no OpenCL/CUDA device")

# TTAS.KO-12.0040/R1, test vectors 1-4, as printed there (key MK15..MK0, plaintext P7..P0,
# ciphertext C7..C0: most significant byte first)
TTA_PRINTED = [
    ("00112233445566778899aabbccddeeff", "0000000000000000", "00f418aed94f03f2"),
    ("ffeeddccbbaa99887766554433221100", "0011223344556677", "23ce9f72e543e6d8"),
    ("000102030405060708090a0b0c0d0e0f", "0123456789abcdef", "7a6fb2a28d23f466"),
    ("28dbc3bc49ffd87dcfa509b11d422be7", "b41e6be2eba84a14", "cc047a75209c1fc6"),
]
# KISA's HIGHT reference code (as recorded in Crypto++ TestVectors/hight.txt), in its byte order
# (ours): the KISA_HIGHT_ECB.c example, and HIGHT-CTR from counter block 00..00 FE over 65 bytes
KISA_KEY = bytes.fromhex("88e34f8f081779f1e9f394370ad40589")
KISA_ECB = (bytes.fromhex("d76d0d18327ec562"), bytes.fromhex("e4bc2e312277e4dd"))
KISA_CTR_IV = bytes.fromhex("00000000000000fe")
KISA_CTR_PT = bytes(range(16)) * 4 + b"\x00"
KISA_CTR_CT = bytes.fromhex(
    "b3d1fffcc2a19bc0130dc1621c5839988ad7c59b40a2d5b9577adf09b6a19ca3"
    "d76a453bf70b0b6c784e51b768d31cefb35ef7fa5f075b099f60491e609fc213f2")


# --------------------------------------------------------------------------- the model

def test_model_tta_vectors():
    for i, (k, p, c) in enumerate(TTA_PRINTED, 1):
        key, pt, ct = model.from_printed(k), model.from_printed(p), model.from_printed(c)
        assert model.encrypt_block(key, pt) == ct, f"TTA test vector {i}"
        assert model.decrypt_block(key, ct) == pt, f"TTA test vector {i}"
        # read in the printed order instead, the vector does not hold: the order matters
        assert model.encrypt_block(bytes.fromhex(k), bytes.fromhex(p)) != bytes.fromhex(c)


def test_model_kisa_vectors():
    assert model.encrypt_block(KISA_KEY, KISA_ECB[0]) == KISA_ECB[1]
    assert model.ctr(KISA_KEY, KISA_CTR_IV, KISA_CTR_PT) == KISA_CTR_CT
    # the counter runs over the whole block: ..FE, ..FF, then 00..01 00 (a carry into byte 6)
    blocks = [KISA_CTR_IV, bytes(7) + b"\xff", bytes(6) + b"\x01\x00"]
    ks = bytes(a ^ b for a, b in zip(KISA_CTR_PT[:24], KISA_CTR_CT[:24]))
    assert ks == b"".join(model.encrypt_block(KISA_KEY, b) for b in blocks)


def test_model_deltas():
    d = model.deltas()
    assert len(d) == 128 and all(0 <= x < 128 for x in d)
    # the first row of KISA's delta table (KISA_HIGHT_*.c, "Delta"): 5A 6D 36 1B 0D 06 03 41
    assert d[:8] == [0x5A, 0x6D, 0x36, 0x1B, 0x0D, 0x06, 0x03, 0x41]
    # the LFSR has period 127 (a primitive polynomial): delta_127 = delta_0, all 127 states differ
    assert d[127] == d[0] and len(set(d[:127])) == 127


def test_model_round_trip(rng):
    for _ in range(20):
        key, pt = rng.randbytes(16), rng.randbytes(8)
        ct = model.encrypt_block(key, pt)
        assert ct != pt and model.decrypt_block(key, ct) == pt


# --------------------------------------------------------------------------- the vector file

def test_vector_file_is_the_printed_vectors_reversed():
    ecb = {v.source: v for v in vectors.load("hight-ecb")}
    for i, (k, p, c) in enumerate(TTA_PRINTED, 1):
        v = ecb[f"TTAS.KO-12.0040/R1 test vector {i}"]
        assert (v.key, v.plaintext, v.ciphertext) == tuple(model.from_printed(x) for x in (k, p, c))
    kisa = ecb["KISA HIGHT reference code KISA_HIGHT_ECB.c example"]
    assert (kisa.key, kisa.plaintext, kisa.ciphertext) == (KISA_KEY,) + KISA_ECB
    ctr = [v for v in vectors.load("hight-ctr") if v.source.startswith("KISA")]
    assert {len(v.plaintext) for v in ctr} == {20, 65}
    for v in ctr:
        assert v.key == KISA_KEY and v.iv == KISA_CTR_IV
        assert v.ciphertext == KISA_CTR_CT[: len(v.plaintext)] and v.plaintext == KISA_CTR_PT[: len(v.plaintext)]
    assert len(vectors.load("hight-cbc")) == 4


# --------------------------------------------------------------------------- host model and schedule

def test_host_schedule_matches_model(rng):
    for key in [bytes(16), bytes(range(16)), *(rng.randbytes(16) for _ in range(5))]:
        want = bytes(model.whitening_keys(key) + model.subkeys(key))
        assert bytes(hight_mod.schedule_array(key)) == bytes(hight_mod.schedule(key)) == want
        for decrypt in (False, True):  # (decryption takes the same keys)
            plain = HIGHT.expand(key, decrypt)
            assert plain.dtype == np.dtype("<u4") and plain.size == 34
            assert plain.tobytes() == want
            rep = HIGHT.expand(key, decrypt, layout="replicated")
            assert rep.dtype == np.dtype("<u4") and rep.size == 136
            assert rep.tolist() == [b * 0x01010101 for b in want]
            lanes = HIGHT.expand(key, decrypt, layout="lanes2")
            assert lanes.dtype == np.dtype("<u4") and lanes.size == 136
            assert lanes.tolist() == [b * 0x01000100 for b in want[8:] + want[:8]]
            masks = HIGHT.expand(key, decrypt, layout="bitsliced")
            assert masks.dtype == np.dtype("<u4") and masks.size == 136 * 8
            assert masks.tolist() == [0xFFFFFFFF if (b >> i) & 1 else 0 for b in want for i in range(8)]
    assert list(hight_mod.DELTA) == model.deltas()
    with pytest.raises(ValueError):
        HIGHT.expand(bytes(16), False, layout="bogus")
    with pytest.raises(ciphergrid.InvalidKeySize):
        HIGHT.expand(bytes(24), False)


def test_reference_ecb_matches_model(rng):
    for n in (1, 3, 37):
        key, data = rng.randbytes(16), rng.data(8 * n)
        ct = HIGHT.reference_ecb(key, data, True)
        assert ct == model.ecb(key, data, True)
        assert HIGHT.reference_ecb(key, ct, False) == data
    with pytest.raises(ValueError):
        HIGHT.reference_ecb(bytes(16), bytes(12), True)


def test_oracle_composes_from_reference_ecb_and_matches_model(rng):
    for name in NAMES:
        assert oracle.source(name).startswith("hight reference_ecb"), oracle.source(name)
    key, iv, pt = rng.randbytes(16), rng.randbytes(8), rng.data(8 * 11 + 5)
    assert oracle.encrypt(pt, "hight-ctr", key, iv) == model.ctr(key, iv, pt)
    iv = b"\xff" * 7 + b"\xfe"  # the counter wraps 2^64 inside the message
    assert oracle.encrypt(pt, "hight-ctr", key, iv) == model.ctr(key, iv, pt)
    pt = pt[:88]
    cbc, prev = b"", iv
    for i in range(0, len(pt), 8):
        prev = model.encrypt_block(key, bytes(a ^ b for a, b in zip(pt[i: i + 8], prev)))
        cbc += prev
    assert oracle.encrypt(pt, "hight-cbc", key, iv) == cbc


# --------------------------------------------------------------------------- declaration, engines

def test_declaration():
    assert HIGHT.name == "hight" and HIGHT.block_size == 8 and HIGHT.key_sizes == (16,)
    assert HIGHT.openssl_provider is None
    assert {"reference", "fast", "ct"} <= set(HIGHT.implementations)
    # no tables anywhere: every kernel is constant-time; "ct" is "fast"
    assert all(im.constant_time for im in HIGHT.implementations.values())
    assert HIGHT.implementation("ct") == HIGHT.implementation("fast")
    assert HIGHT.constant_time_implementation() == "ct"
    assert HIGHT.implementation("reference").grid == "per-block"
    assert HIGHT.implementation("reference").batch == 1
    assert HIGHT.encryption_policy(bytes(16)).block_limit == 1 << 32  # 64-bit blocks: Sweet32


def test_kernel_files_have_no_tables():
    from importlib import resources

    for f in ("hight.cl", "hight_ref.cl", "hight_mul.cl", "hight_bs.cl"):
        src = resources.files("ciphergrid").joinpath("kernels", f).read_text()
        assert "CONST_TABLE" not in src and "__constant" not in src, f


def test_names_and_capabilities():
    for name in NAMES:
        assert name in ciphergrid.available_ciphers()
        spec = registry.lookup(name)
        assert spec.algorithm is HIGHT and spec.key_len == 16 and spec.block_size == 8
        assert spec.iv_len == (0 if name.endswith("ecb") else 8)
        assert spec.openssl_name is None
        serial = "serial" if name.endswith("cbc") else "parallel"
        assert spec.capabilities() == {"encrypt": {"device": serial, "openssl": None},
                                       "decrypt": {"device": "parallel", "openssl": None}}
    assert "hight-xts" not in ciphergrid.available_ciphers()


def test_native_refuses():
    natives = [d.spec for d in ciphergrid.devices() if d.runtime == "native"]
    for dev in natives:
        for name in NAMES:
            iv = None if name.endswith("ecb") else bytes(8)
            for fn in (ciphergrid.encrypt, ciphergrid.decrypt):
                with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
                    fn(bytes(64), name, bytes(16), iv, device=dev)


@needs_device
@pytest.mark.parametrize("dev", DEVICES)
def test_cbc_encryption_runs_on_the_serial_kernel(dev, rng, monkeypatch):
    seen = watch_launches(dev, monkeypatch)
    key, iv, pt = rng.randbytes(16), rng.randbytes(8), rng.data(8 * 500)
    ct = ciphergrid.encrypt(pt, "hight-cbc", key, iv, device=dev)
    assert ct == oracle.encrypt(pt, "hight-cbc", key, iv)
    assert seen and set(seen) == {"cg_cbc_enc"}, seen
    del seen[:]
    assert ciphergrid.decrypt(ct, "hight-cbc", key, iv, device=dev) == pt
    assert set(seen) == {"cg_cbc_dec"}, seen


# --------------------------------------------------------------------------- every implementation

def _impls() -> dict:
    """The declared implementations ("ct" is "fast": it runs in test_constant_time_option), plus
    "swar" with the transposes written with BYTE_PERM (what NVIDIA devices compile; elsewhere
    BYTE_PERM is portable.h's loop), two groups of four blocks and the keys in work-group memory,
    and "mul" with its spread written with BYTE_PERM (as NVIDIA compiles it), three pairs of blocks."""
    out = {n: im for n, im in HIGHT.implementations.items() if n not in ("ct", "bs")}  # (= "fast")
    fast = HIGHT.implementation("swar")
    out["test-fast-prmt-2x4-local"] = replace(fast, batch=8, defines={
        **fast.defines, "HIGHT_PRMT": 1, "HIGHT_GROUPS": 2, "HIGHT_KEYS_LOCAL": 1})
    mul = HIGHT.implementation("mul")
    out["test-mul-prmt-3"] = replace(mul, batch=6, defines={**mul.defines, "HIGHT_PRMT": 1, "HIGHT_GROUPS": 3})
    return out


IMPLS = _impls()
# lengths around the four-block groups; ECB and CTR also beyond one persistent grid on PoCL
# (2048 work-items x 4 blocks), CBC less far (the oracle's CBC is one Python block at a time)
# and the bitsliced kernel's 32-block batches
BLOCKS = {"hight-ecb": [1, 3, 4, 5, 9, 32, 37, 65, 9001], "hight-cbc": [1, 3, 5, 37, 1001]}
CTR_LENGTHS = [1, 7, 8, 9, 31, 33, 8 * 31 + 1, 8 * 37 + 5, 8 * 9001 + 3]


@pytest.fixture
def all_impls(monkeypatch):
    monkeypatch.setattr(type(HIGHT), "implementations", IMPLS)
    return IMPLS


@needs_device
@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("dev", DEVICES)
def test_implementation_matches_oracle(dev, impl, all_impls, rng, diff):
    bad = []

    def check(name, key, iv, pt, what):
        want = oracle.encrypt(pt, name, key, iv)
        for label, fn, src, expect in (("enc", ciphergrid.encrypt, pt, want),
                                       ("dec", ciphergrid.decrypt, want, pt)):
            got = fn(src, name, key, iv, device=dev, implementation=impl)
            if got != expect:
                bad.append(f"{name} {label} {what}: {diff(got, expect)}")

    for name in lean_names(dev, NAMES):   # (conftest.lean)
        lengths = CTR_LENGTHS if name.endswith("ctr") else [8 * b for b in BLOCKS[name]]
        for n in lengths:
            key = rng.randbytes(16)
            iv = None if name.endswith("ecb") else rng.randbytes(8)
            check(name, key, iv, rng.data(n), f"{n} bytes")
    # CTR counters that wrap 2^64 (and carry from the low 32-bit word into the high one)
    for iv in (b"\xff" * 8, b"\xff" * 7 + b"\xf0", bytes(4) + b"\xff" * 4):
        check("hight-ctr", rng.randbytes(16), iv, rng.data(8 * 41 + 3), f"iv {iv.hex()}")
    # the standard's vectors, both directions (independently of the oracle)
    for k, p, c in TTA_PRINTED:
        key, pt, ct = model.from_printed(k), model.from_printed(p), model.from_printed(c)
        if ciphergrid.encrypt(pt, "hight-ecb", key, device=dev, implementation=impl) != ct:
            bad.append(f"TTA vector {k}: encrypt")
        if ciphergrid.decrypt(ct, "hight-ecb", key, device=dev, implementation=impl) != pt:
            bad.append(f"TTA vector {k}: decrypt")
    got = ciphergrid.encrypt(KISA_CTR_PT, "hight-ctr", KISA_KEY, KISA_CTR_IV, device=dev,
                             implementation=impl)
    if got != KISA_CTR_CT:
        bad.append("KISA CTR vector")
    assert not bad, f"{impl} on {dev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("dev", DEVICES)
def test_constant_time_option(dev, rng):
    key, iv, pt = rng.randbytes(16), rng.randbytes(8), rng.data(8 * 300 + 5)
    want = model.ctr(key, iv, pt)
    assert ciphergrid.encrypt(pt, "hight-ctr", key, iv, device=dev, constant_time=True) == want
    ct = ciphergrid.encrypt(pt[:2400], "hight-cbc", key, iv, device=dev, constant_time=True)
    assert ciphergrid.decrypt(ct, "hight-cbc", key, iv, device=dev, constant_time=True) == pt[:2400]
    assert ct[:8] == model.encrypt_block(key, bytes(a ^ b for a, b in zip(pt[:8], iv)))


# --------------------------------------------------------------------------- the command line

@needs_device
def test_cli_round_trip(tmp_path, rng):
    from test_cli import cli, ok

    key, iv = rng.randbytes(16), rng.randbytes(8)
    pt = rng.data(8 * 1000 + 5)
    src, enc, dec = tmp_path / "f", tmp_path / "g", tmp_path / "h"
    src.write_bytes(pt)
    dev = ["--device", DEVICES[0].values[0]]
    ok(cli("encrypt", "--cipher", "hight-ctr", "--key", key.hex(), "--iv", iv.hex(), *dev,
           "--in", src, "--out", enc, cwd=tmp_path))
    assert enc.read_bytes() == model.ctr(key, iv, pt)
    ok(cli("decrypt", "--cipher", "hight-ctr", "--key", key.hex(), "--iv", iv.hex(), *dev,
           "--in", enc, "--out", dec, cwd=tmp_path))
    assert dec.read_bytes() == pt
    # the native engine (OpenSSL) cannot: a clear error, exit code 2
    p = cli("encrypt", "--cipher", "hight-ctr", "--key", key.hex(), "--iv", iv.hex(),
            "--device", "native", input=pt[:64], cwd=tmp_path)
    assert p.returncode == 2 and b"OpenSSL lacks it" in p.stderr, p.stderr


def test_model_is_independent_of_the_package():
    """tests/hight_model.py imports nothing from ciphergrid."""
    src = open(model.__file__, encoding="utf-8").read()
    assert "ciphergrid" not in src.replace("ciphergrid/algorithms/hight.py", "")
    assert "import numpy" not in src

