"""PRESENT-80/128 (Bogdanov et al., CHES 2007; ISO/IEC 29192-2): an independent plain-Python
reference written from the paper, checked against the published vectors, and the kernels checked
against the one reference (ciphergrid.testing.oracle: OpenSSL and pyca lack PRESENT, so it composes
the algorithm's ``reference_ecb`` - the host model of ciphergrid/algorithms/present.py - with the
modes).

* The reference below works on lists of bits, exactly as the paper draws the cipher: the state
  b63..b0, sBoxLayer on nibbles, pLayer P(i) = 16 i mod 63 (P(63) = 63), the key register k79..k0
  (k127..k0) rotated by 61, its top nibble (two nibbles) through S, the round counter added at
  k19..k15 (k66..k62).  It shares no code with the package.  It is checked against the paper's
  four PRESENT-80 vectors, the four PRESENT-128 vectors (Poschmann 2009 for the zero key; the
  crypto.stackexchange 70906 answer for all four), the round keys those pages print, and two
  vectors with irregular keys from third-party implementations (they pin the byte order of keys:
  big-endian, byte 0 = k79..k72).
* The host model (algorithms/present.py: byte-wise SP tables, numpy for long inputs) against the
  reference on random keys and blocks, both directions.
* Key layouts: the plain schedule (K_1..K_32, reversed for decryption) and the bitsliced masks;
  the LUT-circuit kernel's circuit of S on all inputs, and its layouts through a bit-level model of
  that kernel against the reference.
* Every implementation (IMPLS: "reference", "fast" = "ct", the bitsliced variants) on every
  OpenCL/CUDA device:
  the vectors, and the oracle on random keys, IVs and odd lengths (partial 32-block batches of the
  bitsliced kernel), CTR counters that wrap 2^64, both directions; CBC encryption runs on the
  device's one-work-item kernel (kernel launches watched once); the native engine refuses PRESENT.
"""

from __future__ import annotations

import random
from importlib import resources

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry, vectors
from ciphergrid.algorithms import present as model
from ciphergrid.testing import oracle

from conftest import all_devices, lean_names, watch_launches

KiB = 1 << 10
NAMES = [f"present-{bits}-{m}" for bits in (80, 128) for m in ("ecb", "cbc", "ctr")]
IMPLS = ["reference", "fast", "ct", "bs-key-bits", "bs-tmask", "bs-lop3", "bs-lop3x", "bs-lop3x-r128",
         "bs-lop3x-r168", "bs-lop3o", "bs-lop3o-r128", "bs-lop3o-r168"]
# knob variants of the bitsliced kernel run on PRESENT-80 only (one more compilation on PoCL)
ONE_SIZE = {"bs-key-bits": "present-80-", "bs-tmask": "present-80-", "bs-lop3": "present-80-",
            "bs-lop3x-r128": "present-80-", "bs-lop3x-r168": "present-80-", "bs-lop3o-r128": "present-80-",
            "bs-lop3o-r168": "present-80-"}
CIPHER = registry.lookup("present-80-ecb").algorithm
KERNEL_DEVICES = [pytest.param(d.spec, id=d.spec, marks=[pytest.mark.gpu] if d.kind == "gpu" else [])
                  for d in all_devices() if d.runtime in ("opencl", "cuda")]
needs_device = pytest.mark.skipif(not KERNEL_DEVICES, reason="no OpenCL/CUDA device")


# --------------------------------------------------------------------------- the reference (paper)

# sBoxLayer (section 3 of the paper): x -> S[x] on each 4-bit word, hexadecimal
PAPER_SBOX = [0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2]


def bits_of(value: int, n: int) -> list[int]:
    """[b0, b1, ..., b(n-1)]: bit i of the number at index i (the paper's b_i)."""
    return [(value >> i) & 1 for i in range(n)]


def number_of(bits: list[int]) -> int:
    return sum(b << i for i, b in enumerate(bits))


def s_layer(state: list[int], box) -> list[int]:
    out = []
    for w in range(16):  # w_i = b_{4i+3} b_{4i+2} b_{4i+1} b_{4i}
        out += bits_of(box[number_of(state[4 * w: 4 * w + 4])], 4)
    return out


def p_position(i: int) -> int:
    return 63 if i == 63 else i * 16 % 63


def p_layer(state: list[int]) -> list[int]:
    out = [0] * 64
    for i in range(64):
        out[p_position(i)] = state[i]
    return out


def p_layer_inverse(state: list[int]) -> list[int]:
    return [state[p_position(i)] for i in range(64)]


def schedule(key: bytes) -> list[list[int]]:
    """The round keys K_1 .. K_32 as bit lists, from the key register (80 or 128 bits)."""
    n = 8 * len(key)
    assert n in (80, 128)
    k = bits_of(int.from_bytes(key, "big"), n)          # k[i] = k_i, k[n-1] the leftmost bit
    keys = []
    for counter in range(1, 33):
        keys.append(k[n - 64:])                          # K_i = the leftmost 64 bits
        # 1. [k_{n-1} .. k_0] = [k_{60} .. k_0 k_{n-1} .. k_{61}]: rotate left by 61 positions
        k = [k[(i - 61) % n] for i in range(n)]
        # 2. the leftmost nibble through the S-box (PRESENT-128: the two leftmost nibbles)
        for top in ((n - 4,) if n == 80 else (n - 4, n - 8)):
            k[top: top + 4] = bits_of(PAPER_SBOX[number_of(k[top: top + 4])], 4)
        # 3. the round counter (5 bits) added to k19..k15 (PRESENT-128: k66..k62)
        low = 15 if n == 80 else 62
        for j, c in enumerate(bits_of(counter, 5)):
            k[low + j] ^= c
    return keys


def encrypt_block(key: bytes, block: bytes) -> bytes:
    ks = schedule(key)
    state = bits_of(int.from_bytes(block, "big"), 64)
    for i in range(31):
        state = [a ^ b for a, b in zip(state, ks[i])]    # addRoundKey(STATE, K_i)
        state = p_layer(s_layer(state, PAPER_SBOX))
    state = [a ^ b for a, b in zip(state, ks[31])]       # addRoundKey(STATE, K_32)
    return number_of(state).to_bytes(8, "big")


def decrypt_block(key: bytes, block: bytes) -> bytes:
    ks = schedule(key)
    inverse = [PAPER_SBOX.index(v) for v in range(16)]
    state = [a ^ b for a, b in zip(bits_of(int.from_bytes(block, "big"), 64), ks[31])]
    for i in reversed(range(31)):
        state = s_layer(p_layer_inverse(state), inverse)
        state = [a ^ b for a, b in zip(state, ks[i])]
    return number_of(state).to_bytes(8, "big")


# the PRESENT-80 vectors of the paper's appendix and the PRESENT-128 ones (key, plaintext, ciphertext)
PAPER_80 = [("00000000000000000000", "0000000000000000", "5579c1387b228445"),
            ("ffffffffffffffffffff", "0000000000000000", "e72c46c0f5945049"),
            ("00000000000000000000", "ffffffffffffffff", "a112ffc72f68417b"),
            ("ffffffffffffffffffff", "ffffffffffffffff", "3333dcd3213210d2")]
VECTORS_128 = [("00" * 16, "0000000000000000", "96db702a2e6900af"),   # Poschmann 2009 (and SE 70906)
               ("ff" * 16, "0000000000000000", "13238c710272a5d8"),   # crypto.stackexchange 70906
               ("00" * 16, "ffffffffffffffff", "3c6019e5e5edd563"),
               ("ff" * 16, "ffffffffffffffff", "628d9fbd4218e5b4")]
# irregular keys (byte order of the key): the unit tests of M.-J. O. Saarinen's PRESENT code
# (test_present.c, 2021) and of odzhan's PRESENT-128 (shellcode, arm64/crypto/present/test.c)
THIRD_PARTY = [("0f1e2d3c4b5a69788796a5b4c3d2e1f0", "da0e854a1e8d03e0", "0123456789abcdef"),
               ("0123456789abcdef0123456789abcdef", "0123456789abcdef", "0e9d28685e671dd6")]


@pytest.mark.parametrize("key,pt,ct", PAPER_80 + VECTORS_128 + THIRD_PARTY)
def test_reference_vectors(key, pt, ct):
    key, pt, ct = bytes.fromhex(key), bytes.fromhex(pt), bytes.fromhex(ct)
    assert encrypt_block(key, pt) == ct
    assert decrypt_block(key, ct) == pt


def test_reference_round_keys():
    """Round keys printed with the vectors: crypto.stackexchange 26037 (PRESENT-80, zero key;
    from opencores) and 70906 (PRESENT-128, all-one key; its list starts at K_1)."""
    k80 = [number_of(k) for k in schedule(bytes(10))]
    assert [f"{k:016x}" for k in k80[:5]] == ["0000000000000000", "c000000000000000", "5000180000000001",
                                               "60000a0003000001", "b0000c0001400062"]
    assert f"{k80[15]:016x}" == "10a1ce324d005ec7" and f"{k80[31]:016x}" == "6dab31744f41d700"
    k128 = [number_of(k) for k in schedule(b"\xff" * 16)]
    assert [f"{k:016x}" for k in k128[:5]] == ["ffffffffffffffff", "22ffffffffffffff", "2dffffffffffffff",
                                                "148bffffffffffff", "19b7fffffffffffe"]
    assert f"{k128[22]:016x}" == "14759f6de8003963"


def test_reference_structure():
    # S is a permutation, pLayer a permutation of order 3 (16^3 = 4096 = 1 mod 63)
    assert sorted(PAPER_SBOX) == list(range(16))
    assert sorted(p_position(i) for i in range(64)) == list(range(64))
    assert all(p_position(p_position(p_position(i))) == i for i in range(64))
    st = bits_of(0x0123456789ABCDEF, 64)
    assert p_layer_inverse(p_layer(st)) == st


# --------------------------------------------------------------------------- the vector file

def test_vector_file_matches_reference():
    vs = [v for v in vectors.load() if v.cipher.startswith("present-")]
    assert {v.cipher for v in vs} == set(NAMES)
    assert sum(v.cipher == "present-80-ecb" for v in vs) == 4
    assert sum(v.cipher == "present-128-ecb" for v in vs) == 4
    for v in vs:
        mode = registry.lookup(v.cipher).mode.name
        blocks = [v.plaintext[i: i + 8] for i in range(0, len(v.plaintext), 8)]
        if mode == "ecb":
            assert encrypt_block(v.key, v.plaintext) == v.ciphertext, v.source
        elif mode == "cbc":
            out, prev = b"", v.iv
            for b in blocks:
                prev = encrypt_block(v.key, bytes(x ^ y for x, y in zip(b, prev)))
                out += prev
            assert out == v.ciphertext, v.source
        else:
            c = int.from_bytes(v.iv, "big")
            ks = b"".join(encrypt_block(v.key, ((c + i) % 2**64).to_bytes(8, "big")) for i in range(len(blocks)))
            assert bytes(x ^ y for x, y in zip(v.plaintext, ks)) == v.ciphertext, v.source


# --------------------------------------------------------------------------- the host model

def test_model_matches_reference():
    r = random.Random(29192)
    for n in (10, 16):
        for _ in range(6):
            key, pt = r.randbytes(n), r.randbytes(8)
            ct = encrypt_block(key, pt)
            assert model.ecb(key, pt, True) == ct
            assert model.ecb(key, ct, False) == pt
            assert model.round_keys(key) == [number_of(k) for k in schedule(key)]
    # the vectorised path (> 64 blocks) against the scalar one, and the reference on a few blocks
    for n in (10, 16):
        key = r.randbytes(n)
        data = r.randbytes(8 * 300)
        ct = model.ecb(key, data, True)
        assert ct == b"".join(model.ecb(key, data[i: i + 8], True) for i in range(0, len(data), 8))
        assert model.ecb(key, ct, False) == data
        for i in (0, 8 * 150, 8 * 299):
            assert ct[i: i + 8] == encrypt_block(key, data[i: i + 8])


def test_declaration():
    for name in NAMES:
        spec = registry.lookup(name)
        assert spec.block_size == 8 and spec.key_size == (10 if "-80-" in name else 16)
        assert spec.openssl_name is None and CIPHER.openssl_provider is None
        serial = "serial" if spec.mode.name == "cbc" else "parallel"
        assert spec.capabilities() == {"encrypt": {"device": serial, "openssl": None},
                                       "decrypt": {"device": "parallel", "openssl": None}}
        assert oracle.source(name).startswith("present reference_ecb")
    assert CIPHER.constant_time_implementation() == "ct"
    assert CIPHER.implementation("fast").constant_time and not CIPHER.implementation("reference").constant_time
    for bad in (8, 12, 15, 17, 20):
        with pytest.raises(ciphergrid.InvalidKeySize):
            CIPHER.expand(bytes(bad), False)
    with pytest.raises(ciphergrid.InvalidIVSize):
        ciphergrid.encrypt(bytes(16), "present-80-cbc", bytes(10), bytes(16))
    assert CIPHER.encryption_policy(bytes(10)).warning  # 64-bit blocks (Sweet32)


def test_key_layouts():
    r = random.Random(7)
    for n in (10, 16):
        key = r.randbytes(n)
        rk = [number_of(k) for k in schedule(key)]
        for decrypt in (False, True):
            order = rk[::-1] if decrypt else rk
            plain = CIPHER.expand(key, decrypt)
            assert plain.dtype == np.dtype("<u4") and plain.size == 64
            assert plain.tolist() == [w for k in order for w in (k >> 32, k & 0xFFFFFFFF)]
            bs = CIPHER.expand(key, decrypt, layout="bitsliced")
            assert bs.dtype == np.dtype("<u4") and bs.size == 2048 + 64
            want = [0xFFFFFFFF if (k >> i) & 1 else 0 for k in order for i in range(64)]
            assert bs[:2048].tolist() == want and bs[2048:].tolist() == plain.tolist()
            bst = CIPHER.expand(key, decrypt, layout="bitsliced-t")
            assert bst.tolist() == bs.tolist() + [0x0F0F0F0F, 0x33333333, 0x55555555, 0]
            for lop in ("bitsliced-lop3", "bitsliced-lop3x", "bitsliced-lop3o"):
                if decrypt:   # the LUT-circuit kernels decrypt as "fast" does
                    assert CIPHER.expand(key, True, layout=lop).tolist() == bst.tolist()
    with pytest.raises(ValueError):
        CIPHER.expand(bytes(10), False, layout="nonsense")


def test_lop3_circuits():
    """The 3-input-gate circuits of present_bs.cl (PRESENT_BS_LOP3): S(x ^ m) ^ (e, 0, 0, 0) in
    11 gates, S(x) ^ e ^ LOP3O_FLIP in 9, the output gates of the latter XORs with the mask."""
    assert len(model.LOP3_GATES) == 11 and all(0 <= t < 256 for *_, t in model.LOP3_GATES)
    for x in range(16):
        for m in range(16):
            for e in (0, 1):
                assert model.lop3_sbox(x, m, e) == PAPER_SBOX[x ^ m] ^ e
    assert len(model.LOP3O_GATES) == 9
    for j, o in enumerate(model.LOP3O_OUTS):
        a, b, c, t = model.LOP3O_GATES[o - 8]
        assert t == 0x96 and c == 4 + j and a < 13 and b < 13   # x ^ y ^ e_j, x, y not outputs
    for x in range(16):
        for e in range(16):
            assert model.lop3o_sbox(x, e) == PAPER_SBOX[x] ^ e ^ model.LOP3O_FLIP


def lop3_kernel_model(words: list[int], absorb, block: bytes) -> bytes:
    """What present_bs.cl's LUT-circuit encryption does with the key layout ``words`` (0/-1 masks),
    written on one block with the state as 64 bits: the masks before round 1 (absorb=True: bits
    0..15 only), 31 rounds of the circuit (lop3_sbox, whose S-boxes 0..3 take no input masks when
    ``absorb``; lop3o_sbox when absorb == "all") and pLayer, the masks after (True: bits 16..63;
    "all": none)."""
    bit = [w & 1 for w in words]
    state = bits_of(int.from_bytes(block, "big"), 64)
    state = [b ^ bit[i] if i < 16 or absorb is not True else b for i, b in enumerate(state)]
    for r in range(31):
        base = 64 + 64 * r
        out = [0] * 64
        for n in range(16):
            x = number_of(state[4 * n: 4 * n + 4])
            if absorb == "all":
                y = model.lop3o_sbox(x, number_of(bit[base + 4 * n: base + 4 * n + 4]))
            else:
                m = 0 if absorb and n < 4 else number_of(bit[base + 4 * n: base + 4 * n + 4])
                y = model.lop3_sbox(x, m, bit[base + n] if absorb else 0)
            for j in range(4):
                out[p_position(4 * n + j)] = y >> j & 1
        state = out
    if absorb != "all":
        post = 64 + 64 * 31
        state = [b ^ bit[post + i] if (i >= 16 or not absorb) else b for i, b in enumerate(state)]
    return number_of(state).to_bytes(8, "big")


def test_lop3_key_layouts():
    r = random.Random(11)
    for n in (10, 16):
        for _ in range(3):
            key, pt = r.randbytes(n), r.randbytes(8)
            for lop, absorb in (("bitsliced-lop3", False), ("bitsliced-lop3x", True),
                                ("bitsliced-lop3o", "all")):
                words = CIPHER.expand(key, False, layout=lop)
                assert words.dtype == np.dtype("<u4") and words.size == 64 + 31 * 64 + 64 + 4
                assert set(words[:-4].tolist()) <= {0, 0xFFFFFFFF}
                assert words[-4:].tolist() == [0x0F0F0F0F, 0x33333333, 0x55555555, 0]
                assert lop3_kernel_model(words.tolist(), absorb, pt) == encrypt_block(key, pt)
                # (expand's own path for lop3o: the masks lop3_masks makes from the key's bits)
                want = model.lop3_masks(model.key_bits(model.round_keys(key)), absorb)
                assert (words[:-4] != 0).astype(np.uint8).tolist() == want.tolist()


def test_bitsliced_kernel_has_no_table():
    src = resources.files("ciphergrid").joinpath("kernels", "present_bs.cl").read_text()
    for word in ("CONST_TABLE", "LOCAL_VAR", "CONST_PTR", "LOCAL_PTR", "__constant", "__local",
                 "__shared__"):
        assert word not in src, f"present_bs.cl mentions {word}: the constant-time kernel has no table"


# --------------------------------------------------------------------------- the kernels

def _cases(name: str, rng: random.Random) -> list[tuple[str, bytes, bytes | None, bytes]]:
    mode = registry.lookup(name).mode.name
    ksize = registry.lookup(name).key_size
    lengths = [8, 8 * 31, 8 * 33 + (5 if mode == "ctr" else 0), 8 * 1000 + (3 if mode == "ctr" else 0)]
    if mode == "ctr":
        lengths = [1, 7] + lengths
    out = []
    for n in lengths:
        iv = None if mode == "ecb" else rng.randbytes(8)
        out.append((f"{n} bytes", rng.randbytes(ksize), iv, np.random.default_rng(n).bytes(n)))
    if mode == "ctr":  # the 64-bit counter wraps inside the message
        for back in (1, 20):
            iv = ((1 << 64) - back).to_bytes(8, "big")
            out.append((f"counter 2^64 - {back}", rng.randbytes(ksize), iv,
                        np.random.default_rng(back).bytes(8 * 40 + 3)))
    return out


@needs_device
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kdev", KERNEL_DEVICES)
def test_kernels_vectors(kdev, impl):
    bad = []
    names = lean_names(kdev, NAMES)   # (conftest.lean)
    for v in vectors.load():
        if not v.cipher.startswith(ONE_SIZE.get(impl, "present-")) or v.cipher not in names:
            continue
        got = ciphergrid.encrypt(v.plaintext, v.cipher, v.key, v.iv, device=kdev, implementation=impl)
        if got != v.ciphertext:
            bad.append(f"{v.source} encrypt: {got.hex()} != {v.ciphertext.hex()}")
        got = ciphergrid.decrypt(v.ciphertext, v.cipher, v.key, v.iv, device=kdev, implementation=impl)
        if got != v.plaintext:
            bad.append(f"{v.source} decrypt: {got.hex()} != {v.plaintext.hex()}")
    assert not bad, f"{impl} on {kdev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kdev", KERNEL_DEVICES)
def test_kernels_match_oracle(kdev, impl, diff):
    rng = random.Random(f"{kdev}-{impl}")
    bad = []
    for name in [n for n in lean_names(kdev, NAMES) if n.startswith(ONE_SIZE.get(impl, "present-"))]:
        for what, key, iv, pt in _cases(name, rng):
            want = oracle.crypt(name, key, iv, pt, True)
            got = ciphergrid.encrypt(pt, name, key, iv, device=kdev, implementation=impl)
            if got != want:
                bad.append(f"{name} {what} encrypt: {diff(got, want)}")
            back = ciphergrid.decrypt(want, name, key, iv, device=kdev, implementation=impl)
            if back != pt:
                bad.append(f"{name} {what} decrypt: {diff(back, pt)}")
    assert not bad, f"{impl} on {kdev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("kdev", KERNEL_DEVICES)
def test_cbc_encryption_runs_on_the_serial_kernel(kdev, monkeypatch):
    """OpenSSL lacks PRESENT: CBC encryption runs on the device's one-work-item cg_cbc_enc."""
    seen = watch_launches(kdev, monkeypatch)
    key, iv, pt = bytes(range(16)), bytes(range(8)), bytes(range(256)) * 4
    ct = ciphergrid.encrypt(pt, "present-128-cbc", key, iv, device=kdev)
    assert ct == oracle.crypt("present-128-cbc", key, iv, pt, True)
    assert ciphergrid.decrypt(ct, "present-128-cbc", key, iv, device=kdev) == pt
    assert set(seen) == {"cg_cbc_enc", "cg_cbc_dec"}, seen


def test_native_refuses():
    if not any(d.spec == "native" for d in all_devices()):
        pytest.skip("no native device selected")
    for name in NAMES:
        iv = None if name.endswith("ecb") else bytes(8)
        for fn in (ciphergrid.encrypt, ciphergrid.decrypt):
            with pytest.raises(ciphergrid.UnsupportedCipher, match="OpenSSL lacks it"):
                fn(bytes(64), name, bytes(registry.lookup(name).key_size), iv, device="native")
