"""SEED (RFC 4269, KISA; TTAS.KO-12.0004): 128-bit blocks, a 128-bit key, 16 Feistel rounds.

The host side: the S-boxes, derived from their algebraic definition (RFC 4269 section 2.3 and
Appendix A), the G function, the key schedule (RFC 4269 section 2.2) and the ECB used for XTS
tweaks and stealing.  The kernels are kernels/seed.cl ("fast": the SS tables of the RFC's
implementation notes in work-group memory) and kernels/seed_ref.cl ("reference": byte S-boxes).

SEED works on big-endian 32-bit words (block = L0 L1 R0 R1, key = Key0..Key3).  ciphergrid's
kernels see a block as four little-endian words of its bytes, so the kernels swap the bytes of
each word on load and store; the round keys are passed as the integers K_i,0, K_i,1 (i = 1..16) in
that order, which the kernels use as they are.  SEED is a Feistel network whose output is
R16 || L16: decryption is the same network with the round keys in reverse order, so the
decryption schedule is the pairs (K_i,0, K_i,1) for i = 16..1.

OpenSSL has SEED in its legacy provider only, in ECB, CBC, CFB and OFB: ciphergrid's seed-ctr runs
on devices only, and seed-xts on OpenSSL is composed from seed-ecb (the registry and the OpenSSL
engine do that for any 128-bit cipher).
"""

from __future__ import annotations

import struct

import numpy as np

from .. import modes
from .base import BlockCipher, Implementation, NativeSchedule

ROUNDS = 16
MASK32 = 0xFFFFFFFF

#: the irreducible polynomial of GF(2^8) of SEED's S-boxes, p(x) = x^8 + x^6 + x^5 + x + 1
POLY = 0x163
#: RFC 4269 section 2.3: S1(x) = A(1) . x^247 + 169, S2(x) = A(2) . x^251 + 56, the matrices as
#: rows (row 0 gives output bit 7), each row a byte whose bit 7 multiplies input bit 7
A1_ROWS = (0b10001010, 0b11111110, 0b10000101, 0b01000010,
           0b01000101, 0b00100001, 0b10001000, 0b00010100)
A2_ROWS = (0b01000101, 0b10000101, 0b11111110, 0b00100001,
           0b10001010, 0b10001000, 0b01000010, 0b00010100)
S1_CONST, S2_CONST = 169, 56
S1_EXP, S2_EXP = 247, 251
#: the masks of the G function (RFC 4269 section 2.3)
M0, M1, M2, M3 = 0xFC, 0xF3, 0xCF, 0x3F
#: KC_1 of the key schedule (the golden ratio); KC_i = KC_1 <<< (i - 1) (RFC 4269 section 2.2)
KC1 = 0x9E3779B9


def _gf_mul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        if a & 0x100:
            a ^= POLY
        b >>= 1
    return r


def _gf_pow(x: int, e: int) -> int:
    r = 1
    while e:
        if e & 1:
            r = _gf_mul(r, x)
        x = _gf_mul(x, x)
        e >>= 1
    return r


def _affine(rows, x: int, c: int) -> int:
    y = 0
    for i, row in enumerate(rows):
        y |= (bin(row & x).count("1") & 1) << (7 - i)
    return y ^ c


def _sbox(rows, e: int, c: int) -> bytes:
    # 0^e = 0 for the exponents used here (the RFC's S(0) = c)
    return bytes(_affine(rows, _gf_pow(x, e) if x else 0, c) for x in range(256))


S1 = _sbox(A1_ROWS, S1_EXP, S1_CONST)
S2 = _sbox(A2_ROWS, S2_EXP, S2_CONST)


def _ss(sbox: bytes, masks) -> tuple[int, ...]:
    """One SS table of the RFC's implementation notes: byte j (j = 3 most significant) of SS[x]
    is S(x) & masks[3 - j]."""
    out = []
    for x in range(256):
        s = sbox[x]
        out.append(((s & masks[0]) << 24) | ((s & masks[1]) << 16) | ((s & masks[2]) << 8) | (s & masks[3]))
    return tuple(out)


#: SS0..SS3 (RFC 4269 section 2.3, implementation notes): G(X) = SS3[X3] ^ SS2[X2] ^ SS1[X1] ^ SS0[X0]
SS0 = _ss(S1, (M3, M2, M1, M0))
SS1 = _ss(S2, (M0, M3, M2, M1))
SS2 = _ss(S1, (M1, M0, M3, M2))
SS3 = _ss(S2, (M2, M1, M0, M3))


def g(x: int) -> int:
    """The G function on a 32-bit word."""
    return SS0[x & 255] ^ SS1[(x >> 8) & 255] ^ SS2[(x >> 16) & 255] ^ SS3[x >> 24]


def key_schedule(key: bytes) -> list[int]:
    """RFC 4269 section 2.2: the 32 round-key words K_1,0 K_1,1 ... K_16,0 K_16,1."""
    k0, k1, k2, k3 = (int.from_bytes(key[4 * i: 4 * i + 4], "big") for i in range(4))
    out = []
    for i in range(ROUNDS):
        kc = ((KC1 << i) | (KC1 >> (32 - i))) & MASK32 if i else KC1
        out.append(g((k0 + k2 - kc) & MASK32))
        out.append(g((k1 - k3 + kc) & MASK32))
        if i % 2 == 0:  # rounds 1, 3, ...: Key0 || Key1 rotated right by 8 bits
            t = (k0 << 32) | k1
            t = ((t >> 8) | (t << 56)) & ((1 << 64) - 1)
            k0, k1 = t >> 32, t & MASK32
        else:  # rounds 2, 4, ...: Key2 || Key3 rotated left by 8 bits
            t = (k2 << 32) | k3
            t = ((t << 8) | (t >> 56)) & ((1 << 64) - 1)
            k2, k3 = t >> 32, t & MASK32
    k0 = k1 = k2 = k3 = t = 0
    return out


#: KC_1 .. KC_16
_KC = tuple(((KC1 << i) | (KC1 >> (32 - i))) & MASK32 if i else KC1 for i in range(ROUNDS))


def key_schedule_fast(key: bytes, decrypt: bool) -> np.ndarray:
    """:func:`key_schedule` (``decrypt``: its pairs reversed) as a little-endian uint32 array,
    G inlined over the SS tables (the one-shot call's key set-up runs this for every fresh
    key)."""
    s0, s1, s2, s3 = SS0, SS1, SS2, SS3
    k0, k1, k2, k3 = struct.unpack(">4I", key)
    out = []
    for i, kc in enumerate(_KC):
        x = (k0 + k2 - kc) & MASK32
        a = s0[x & 255] ^ s1[(x >> 8) & 255] ^ s2[(x >> 16) & 255] ^ s3[x >> 24]
        x = (k1 - k3 + kc) & MASK32
        b = s0[x & 255] ^ s1[(x >> 8) & 255] ^ s2[(x >> 16) & 255] ^ s3[x >> 24]
        out.append(a)
        out.append(b)
        if i & 1:   # rounds 2, 4, ...: Key2 || Key3 rotated left by 8 bits
            k2, k3 = ((k2 << 8) | (k3 >> 24)) & MASK32, ((k3 << 8) | (k2 >> 24)) & MASK32
        else:       # rounds 1, 3, ...: Key0 || Key1 rotated right by 8 bits
            k0, k1 = ((k0 >> 8) | (k1 << 24)) & MASK32, ((k1 >> 8) | (k0 << 24)) & MASK32
    if decrypt:   # the pairs from the last
        out[:] = [out[j ^ 1] for j in range(2 * ROUNDS - 1, -1, -1)]
    arr = np.array(out, dtype="<u4")
    out.clear()
    k0 = k1 = k2 = k3 = x = a = b = 0
    return arr


def _seed_call(fn, key: bytes, address: int) -> None:
    fn(key, address)


#: OpenSSL's SEED_set_key: SEED_KEY_SCHEDULE holds K_1,0 K_1,1 .. K_16,1 as 32-bit values, the
#: words of key_schedule (checked at first use)
_NATIVE = NativeSchedule("SEED_set_key", ("c_char_p", "c_void_p"), 2 * ROUNDS, _seed_call)


def _native_agrees(native) -> bool:
    keys = (bytes(range(16)), bytes(16), b"\xff" * 16, bytes.fromhex("47064808510dc0fcf1f5c7c7f6b0ea97"))
    return all(native.raw(k).tolist() == key_schedule(k) for k in keys)


def _reversed_pairs(ks: list[int]) -> list[int]:
    """The decryption schedule: the round-key pairs in reverse order (``ks`` is cleared)."""
    out = [w for i in reversed(range(ROUNDS)) for w in ks[2 * i: 2 * i + 2]]
    ks[:] = [0] * len(ks)
    return out


def _f(c: int, d: int, k0: int, k1: int) -> tuple[int, int]:
    """The F function (RFC 4269 section 2.1) in the RFC's order of operations."""
    c ^= k0
    d ^= k1
    t1 = g(c ^ d)
    t0 = g((c + t1) & MASK32)
    t1 = g((t1 + t0) & MASK32)
    return (t0 + t1) & MASK32, t1


def ecb_python(key: bytes, data: bytes, encrypt: bool) -> bytes:
    """SEED ECB of whole blocks in Python (the host's fallback when pyca lacks SEED)."""
    ks = key_schedule(bytes(key))
    if not encrypt:
        ks = _reversed_pairs(ks)
    out = bytearray()
    for off in range(0, len(data), 16):
        l0, l1, r0, r1 = (int.from_bytes(data[off + 4 * i: off + 4 * i + 4], "big") for i in range(4))
        for i in range(ROUNDS):
            f0, f1 = _f(r0, r1, ks[2 * i], ks[2 * i + 1])
            l0, l1, r0, r1 = r0, r1, l0 ^ f0, l1 ^ f1
        out += b"".join(w.to_bytes(4, "big") for w in (r0, r1, l0, l1))
    ks[:] = [0] * len(ks)
    return bytes(out)


def _fast(copies: int = 16, tables: int = 2, *, prmt: int = 1, batch: int = 1,
          grid: str = "persistent") -> Implementation:
    """An implementation of kernels/seed.cl (SS tables in work-group memory): its options."""
    return Implementation("seed.cl", batch=batch, grid=grid, defines={
        "SEED_COPIES": copies, "SEED_TABLES": tables, "SEED_PRMT": prmt})


class SEED(BlockCipher):
    name = "seed"
    block_size = 16
    key_sizes = (16,)
    variants = (("seed", 16, ("ecb", "cbc", "ctr", "xts")),)
    openssl_provider = "legacy"

    implementations = {
        # a transcription of RFC 4269: byte S-boxes, G with the masks, keys from device memory
        "reference": Implementation("seed_ref.cl", grid="per-block"),
        # the SS tables: 2 held (SS2, SS3 are SS0, SS1 rotated by 16), 16 copies (32 KiB)
        "fast": _fast(16, 2),
        # alternatives for the lead to measure on a GPU
        "fast-8copies": _fast(8, 2),             # 16 KiB: more work-groups per SM, 4-way conflicts
        "fast-4tables": _fast(8, 4),             # all four tables, 8 copies (32 KiB), no rotations
        "fast-2blocks": _fast(16, 2, batch=2),   # two independent blocks per work-item step
    }

    def openssl_name(self, spec) -> str | None:
        # the legacy provider has seed-ecb, seed-cbc (and CFB, OFB), no CTR and no XTS
        return spec.name if spec.mode in (modes.ECB, modes.CBC) else None

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout is not None:
            raise ValueError(f"unknown SEED key layout {layout!r}")
        self.check_key(key)
        key = bytes(key)
        if not _NATIVE.ready(_native_agrees):
            # decryption: the same Feistel network with the round keys in reverse order
            return key_schedule_fast(key, decrypt)
        ks = _NATIVE.raw(key)
        if not decrypt:
            return ks.astype("<u4", copy=False)
        out = ks.reshape(ROUNDS, 2)[::-1].reshape(-1).astype("<u4")
        ks.fill(0)
        return out

    def defines(self, key_size: int) -> dict[str, int]:
        return {"SEED_ROUNDS": ROUNDS}

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        self.check_key(key)
        if len(data) % 16:
            raise ValueError("SEED ECB takes whole 16-byte blocks")
        try:
            from cryptography.hazmat.decrepit.ciphers.algorithms import SEED as PycaSEED
            from cryptography.hazmat.primitives.ciphers import Cipher, modes

            c = Cipher(PycaSEED(bytes(key)), modes.ECB())
            ctx = c.encryptor() if encrypt else c.decryptor()
        except Exception:  # pyca without SEED (an OpenSSL without the legacy provider)
            return ecb_python(key, data, encrypt)
        return ctx.update(bytes(data)) + ctx.finalize()


CIPHER = SEED()
