"""CLEFIA-128/192/256 (RFC 6114; ISO/IEC 29192-2): host key schedule and host model; the kernels are
kernels/clefia.cl ("fast", the default) and kernels/clefia_ref.cl ("reference").

CLEFIA is a 4-branch generalized Feistel network (GFN_{4,r}, r = 18/22/26 rounds for 128/192/256-bit
keys) on four 32-bit words, with two F-functions per round: F0 (S-boxes S0 S1 S0 S1, then the
diffusion matrix M0) and F1 (S1 S0 S1 S0, then M1), and whitening keys on words 1 and 3 before and
after the network.  Everything the F-functions do is byte-wise or a matrix over bytes, so the
kernels keep the contract's little-endian words (word i = bytes 4i..4i+3, CLEFIA's byte 0 of a word
in bits 0..7) and never swap bytes: the host hands them the round keys as little-endian words of
the round-key bytes.

Schedules (kernel words, 2r + 4 of them):

* encryption: WK0 WK1 | RK0 .. RK(2r-1) | WK2 WK3  (as RFC 6114's encryption uses them);
* decryption: WK2 WK3 | RK(2r-2) RK(2r-1) | RK(2r-4) RK(2r-3) | ... | RK0 RK1 | WK0 WK1: the order in
  which RFC 6114's decryption (GFN^{-1}_{4,r}) reads them, so the kernel reads them in sequence.

Where the constants come from (RFC 6114, M. Katagi and S. Moriai, Sony, March 2011):

* S0 is derived here from its definition by four 4-bit S-boxes SS0..SS3 and a multiplication by 2
  in GF(2^4) (z^4 + z + 1); SS0..SS3 are the RFC's 16-entry tables;
* S1 is defined in the RFC as g(f(x)^-1) with two affine maps f and g over GF(2); its 256 entries are
  copied from the RFC's S1 table (the same table as Sony's reference code clefia_ref.c 1.0.1) and
  checked here on import to be a permutation;
* M0 and M1 are the RFC's diffusion matrices over GF(2^8) with z^8 + z^4 + z^3 + z^2 + 1;
* the CON constants are derived as the RFC's constant generation describes: T from IV^(k)
  (0x428a, 0x7137, 0xb5c0 for 128/192/256-bit keys) stepped by z^-1 in GF(2^16) with
  z^16 + z^15 + z^13 + z^11 + z^5 + z^4 + 1, CON_(2i) = (T ^ P) | (~T <<< 1) and
  CON_(2i+1) = (~T ^ Q) | (T <<< 8), P = 0xb7e1, Q = 0x243f (16-bit halves).
"""

from __future__ import annotations

import struct

import numpy as np

from .base import BlockCipher, Implementation

MASK32 = 0xFFFFFFFF
ROUNDS = {16: 18, 24: 22, 32: 26}

# --------------------------------------------------------------------------- S-boxes

#: the 4-bit S-boxes of S0 (RFC 6114)
_SS = (
    (0xE, 0x6, 0xC, 0xA, 0x8, 0x7, 0x2, 0xF, 0xB, 0x1, 0x4, 0x0, 0x5, 0x9, 0xD, 0x3),
    (0x6, 0x4, 0x0, 0xD, 0x2, 0xB, 0xA, 0x3, 0x9, 0xC, 0xE, 0xF, 0x8, 0x7, 0x5, 0x1),
    (0xB, 0x8, 0x5, 0xE, 0xA, 0x6, 0x4, 0xC, 0xF, 0x7, 0x2, 0x3, 0x1, 0x0, 0xD, 0x9),
    (0xA, 0x2, 0x6, 0xD, 0x3, 0x4, 0x5, 0xE, 0x0, 0x7, 0x8, 0x9, 0xB, 0xF, 0xC, 0x1),
)


def _gf16_times2(t: int) -> int:
    t <<= 1
    return t ^ 0x13 if t & 0x10 else t


def _s0() -> bytes:
    out = bytearray(256)
    for x in range(256):
        t0, t1 = _SS[0][x >> 4], _SS[1][x & 15]
        u0, u1 = t0 ^ _gf16_times2(t1), _gf16_times2(t0) ^ t1
        out[x] = (_SS[2][u0] << 4) | _SS[3][u1]
    return bytes(out)


S0 = _s0()
#: RFC 6114's S1 table (g(f(x)^-1)), as printed there and in Sony's clefia_ref.c
S1 = bytes.fromhex(
    "6cdac3e94e9d0a3db836b43813340cd9bf74948fb79ce5dc9e07494f982cb093"
    "12ebcdb392e74160e321273be619d20e9111c73f2a8ea1bc2bc8c50f5bf3878b"
    "fbf5de20c6a784ced86551c9a4ef4353255d9b31e83e0dd780ff698aba0b735c"
    "6e541562f6353052a316d32832faaa5ecfeaed783358097b63c0c1461edfa999"
    "5504c486397782ec4018909759dd831f9a370624647ca556480885d06126ca6f"
    "7e6ab671a07005d1458c231cf0ee89ad7a4bc22fdb5a4d7667172df4cbb14aa8"
    "b522473ad5104c72cc00f9e0fde2feaef85fabf11b4281d6be4429a657b9aff2"
    "d47566bb689f5002013c7f8d1a88bdacf7e47996a2fc6db26b03e12e7d14951d")
assert len(S1) == 256 and len(set(S1)) == 256 and len(set(S0)) == 256

# --------------------------------------------------------------------------- diffusion, F-functions


def gf_mul(a: int, b: int) -> int:
    """a * b in GF(2^8) with z^8 + z^4 + z^3 + z^2 + 1 (0x11d)."""
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = (a << 1) ^ (0x11D if a & 0x80 else 0)
        b >>= 1
    return r


M0 = ((0x01, 0x02, 0x04, 0x06), (0x02, 0x01, 0x06, 0x04), (0x04, 0x06, 0x01, 0x02), (0x06, 0x04, 0x02, 0x01))
M1 = ((0x01, 0x08, 0x02, 0x0A), (0x08, 0x01, 0x0A, 0x02), (0x02, 0x0A, 0x01, 0x08), (0x0A, 0x02, 0x08, 0x01))


def column_tables(m, sboxes) -> list[list[int]]:
    """T[k][b]: column k of matrix m times sboxes[k][b], packed little-endian (row i in bits 8i..):
    F(x) = T[0][x0] ^ T[1][x1] ^ T[2][x2] ^ T[3][x3] for the little-endian word of bytes x0..x3."""
    return [[sum(gf_mul(m[i][k], s[b]) << (8 * i) for i in range(4)) for b in range(256)]
            for k, s in enumerate(sboxes)]


#: the F-functions as four 8->32-bit tables each (the fast kernel's tables come from these)
F0_LE = column_tables(M0, (S0, S1, S0, S1))
F1_LE = column_tables(M1, (S1, S0, S1, S0))
_F0_NP = np.array(F0_LE, dtype=np.uint32)
_F1_NP = np.array(F1_LE, dtype=np.uint32)


def _f(tables, x: int) -> int:
    return tables[0][x & 255] ^ tables[1][(x >> 8) & 255] ^ tables[2][(x >> 16) & 255] ^ tables[3][x >> 24]


def _gfn(state: list[int], rks, rounds: int, inverse: bool = False) -> list[int]:
    """GFN_{d,r} (d = 4 or 8 words, little-endian words) with round keys rks (2d/4... per round:
    d/2 of them); the inverse rotates the other way and reads the keys from the last round."""
    t = list(state)
    d = len(t)
    for i in range(rounds):
        j = (rounds - 1 - i) if inverse else i
        k = rks[(d // 2) * j: (d // 2) * j + d // 2]
        for p in range(d // 2):
            tables = F0_LE if p % 2 == 0 else F1_LE
            t[2 * p + 1] ^= _f(tables, t[2 * p] ^ k[p])
        if i < rounds - 1:
            t = (t[-1:] + t[:-1]) if inverse else (t[1:] + t[:1])
    return t


# --------------------------------------------------------------------------- key schedule

_IV = {16: 0x428A, 24: 0x7137, 32: 0xB5C0}
_P, _Q = 0xB7E1, 0x243F


def _rotl16(x: int, n: int) -> int:
    return ((x << n) | (x >> (16 - n))) & 0xFFFF


def con_constants(key_size: int) -> list[int]:
    """CON^(k)_i as 32-bit integers (CLEFIA's big-endian words): 60, 84 or 92 of them (_CON holds
    them computed once)."""
    t, out = _IV[key_size], []
    for _ in range({16: 30, 24: 42, 32: 46}[key_size]):
        nt = t ^ 0xFFFF
        out.append(((t ^ _P) << 16) | _rotl16(nt, 1))
        out.append(((nt ^ _Q) << 16) | _rotl16(t, 8))
        t = ((t ^ 0x1A831) >> 1) if t & 1 else t >> 1   # T * z^-1 in GF(2^16)
    return out


_CON = {n: tuple(con_constants(n)) for n in (16, 24, 32)}


def _bswap(w: int) -> int:
    return int.from_bytes(w.to_bytes(4, "big"), "little")


def _sigma(x: int) -> int:
    """The DoubleSwap function on a 128-bit integer (bit 0 of the RFC = the most significant bit):
    X[7-63] | X[121-127] | X[0-6] | X[64-120]."""
    def bits(a, b):
        return (x >> (127 - b)) & ((1 << (b - a + 1)) - 1)
    return (bits(7, 63) << 71) | (bits(121, 127) << 64) | (bits(0, 6) << 57) | bits(64, 120)


def _words_to_int(ws) -> int:
    v = 0
    for w in ws:
        v = (v << 32) | w
    return v


def _int_to_words(v: int, n: int) -> list[int]:
    return [(v >> (32 * (n - 1 - i))) & MASK32 for i in range(n)]


def schedule(key: bytes) -> tuple[list[int], list[int]]:
    """(WK0..WK3, RK0..RK(2r-1)) as CLEFIA's big-endian 32-bit words (RFC 6114 key scheduling)."""
    n = len(key)
    r = ROUNDS[n]
    con = _CON[n]
    k = list(struct.unpack(f">{n // 4}I", key))
    if n == 16:
        # L = GFN_{4,12}(CON_0..CON_23, K); the GFN runs on little-endian words, so swap in and out
        lw = _gfn([_bswap(w) for w in k], [_bswap(c) for c in con[:24]], 12)
        lval = _words_to_int([_bswap(w) for w in lw])
        wk = k[:]
        rk = []
        kval = _words_to_int(k)
        for i in range(r // 2):
            t = lval ^ _words_to_int(con[24 + 4 * i: 28 + 4 * i])
            lval = _sigma(lval)
            if i % 2:
                t ^= kval
            rk += _int_to_words(t, 4)
        return wk, rk
    kl = k[:4]
    kr = k[4:] if n == 32 else k[4:6] + [k[0] ^ MASK32, k[1] ^ MASK32]
    lw = _gfn([_bswap(w) for w in kl + kr], [_bswap(c) for c in con[:40]], 10)
    lw = [_bswap(w) for w in lw]
    ll, lr = _words_to_int(lw[:4]), _words_to_int(lw[4:])
    wk = [a ^ b for a, b in zip(kl, kr)]
    klv, krv = _words_to_int(kl), _words_to_int(kr)
    rk = []
    for i in range(r // 2):
        c = _words_to_int(con[40 + 4 * i: 44 + 4 * i])
        if (i // 2) % 2 == 0:
            t = ll ^ c
            ll = _sigma(ll)
            if i % 2:
                t ^= krv
        else:
            t = lr ^ c
            lr = _sigma(lr)
            if i % 2:
                t ^= klv
        rk += _int_to_words(t, 4)
    k.clear()
    return wk, rk


#: the F-functions' column tables as tuples (indexing a tuple is what the schedule does most)
_F0T = tuple(tuple(t) for t in F0_LE)
_F1T = tuple(tuple(t) for t in F1_LE)
#: CON^(k) as little-endian words (the GFN's input form) and, grouped by four, as the 128-bit
#: big-endian integers the round keys are XORed with (the GFN's 2 x 12 or 4 x 10 come first)
_CON_LE = {n: tuple(_bswap(c) for c in con[: 24 if n == 16 else 40]) for n, con in _CON.items()}
_CON_128 = {n: tuple(_words_to_int(con[i: i + 4]) for i in range(24 if n == 16 else 40, len(con), 4))
            for n, con in _CON.items()}
_M57 = (1 << 57) - 1


def _gfn_le(t: list[int], con: tuple, rounds: int) -> list[int]:
    """GFN_{4,r} or GFN_{8,r} on little-endian words with the round constants ``con``: what
    :func:`_gfn` computes, unrolled over the F-functions' tables (the one-shot call's key set-up
    runs this for every fresh key)."""
    a0, a1, a2, a3 = _F0T
    b0, b1, b2, b3 = _F1T
    if len(t) == 4:
        t0, t1, t2, t3 = t
        for i in range(0, 2 * rounds, 2):
            x = t0 ^ con[i]
            t1 ^= a0[x & 255] ^ a1[(x >> 8) & 255] ^ a2[(x >> 16) & 255] ^ a3[x >> 24]
            x = t2 ^ con[i + 1]
            t3 ^= b0[x & 255] ^ b1[(x >> 8) & 255] ^ b2[(x >> 16) & 255] ^ b3[x >> 24]
            t0, t1, t2, t3 = t1, t2, t3, t0
        return [t3, t0, t1, t2]   # (the last round does not rotate)
    t0, t1, t2, t3, t4, t5, t6, t7 = t
    for i in range(0, 4 * rounds, 4):
        x = t0 ^ con[i]
        t1 ^= a0[x & 255] ^ a1[(x >> 8) & 255] ^ a2[(x >> 16) & 255] ^ a3[x >> 24]
        x = t2 ^ con[i + 1]
        t3 ^= b0[x & 255] ^ b1[(x >> 8) & 255] ^ b2[(x >> 16) & 255] ^ b3[x >> 24]
        x = t4 ^ con[i + 2]
        t5 ^= a0[x & 255] ^ a1[(x >> 8) & 255] ^ a2[(x >> 16) & 255] ^ a3[x >> 24]
        x = t6 ^ con[i + 3]
        t7 ^= b0[x & 255] ^ b1[(x >> 8) & 255] ^ b2[(x >> 16) & 255] ^ b3[x >> 24]
        t0, t1, t2, t3, t4, t5, t6, t7 = t1, t2, t3, t4, t5, t6, t7, t0
    return [t7, t0, t1, t2, t3, t4, t5, t6]


def _le_to_int(ws) -> int:
    """Little-endian words (of CLEFIA's big-endian ones) as the 128-bit big-endian integer."""
    return int.from_bytes(struct.pack(f"<{len(ws)}I", *ws), "big")


def kernel_schedule_fast(key: bytes, decrypt: bool) -> np.ndarray:
    """:func:`kernel_schedule` as a little-endian uint32 array, computed without the readable
    form's conversions: the GFN on little-endian words, the round keys as 128-bit integers
    (DoubleSwap as four shifts), their bytes straight into the kernels' layout."""
    n = len(key)
    le = list(struct.unpack(f"<{n // 4}I", key))
    chunks = []
    if n == 16:
        lval = _le_to_int(_gfn_le(le, _CON_LE[16], 12))
        kval = int.from_bytes(key, "big")
        wk = key
        for i, c in enumerate(_CON_128[16]):
            t = lval ^ c
            lval = (((lval >> 64) & _M57) << 71) | ((lval & 0x7F) << 64) | ((lval >> 121) << 57) \
                | ((lval >> 7) & _M57)
            if i & 1:
                t ^= kval
            chunks.append(t.to_bytes(16, "big"))
    else:
        if n == 24:
            le += [le[0] ^ MASK32, le[1] ^ MASK32]
        lw = _gfn_le(le, _CON_LE[n], 10)
        halves = [_le_to_int(lw[:4]), _le_to_int(lw[4:])]     # L_L, L_R
        klv, krv = _le_to_int(le[:4]), _le_to_int(le[4:])
        wk = (klv ^ krv).to_bytes(16, "big")
        for i, c in enumerate(_CON_128[n]):
            h = (i >> 1) & 1              # rounds 0, 1 from L_L, 2, 3 from L_R, ...
            v = halves[h]
            t = v ^ c
            halves[h] = (((v >> 64) & _M57) << 71) | ((v & 0x7F) << 64) | ((v >> 121) << 57) \
                | ((v >> 7) & _M57)
            if i & 1:
                t ^= krv if h == 0 else klv
            chunks.append(t.to_bytes(16, "big"))
        halves.clear()
    rk = b"".join(chunks)
    chunks.clear()
    if decrypt:   # WK2 WK3 | the (RK(2i), RK(2i+1)) pairs from the last | WK0 WK1
        out = bytearray(wk[8:])
        out += np.frombuffer(rk, dtype="<u8")[::-1].tobytes()
        out += wk[:8]
    else:         # WK0 WK1 | RK0 .. RK(2r-1) | WK2 WK3
        out = bytearray(wk[:8])
        out += rk
        out += wk[8:]
    return np.frombuffer(out, dtype="<u4")   # (the caller zeroes it: the bytearray below it)


def kernel_schedule(key: bytes, decrypt: bool) -> list[int]:
    """The kernels' 2r + 4 little-endian words (module docstring)."""
    wk, rk = schedule(key)
    if decrypt:
        r = len(rk) // 2
        order = wk[2:4] + [w for i in reversed(range(r)) for w in rk[2 * i: 2 * i + 2]] + wk[0:2]
    else:
        order = wk[0:2] + rk + wk[2:4]
    out = [_bswap(w) for w in order]
    wk.clear()
    rk.clear()
    order.clear()
    return out


# --------------------------------------------------------------------------- the host model (ECB)

def _block_scalar(ks: list[int], w: list[int], r: int, decrypt: bool) -> list[int]:
    """One block with a kernel schedule: the same network as the kernels (decryption rotates the
    other way)."""
    t = [w[0], w[1] ^ ks[0], w[2], w[3] ^ ks[1]]
    for i in range(r):
        a, c = ks[2 + 2 * i], ks[3 + 2 * i]
        t[1] ^= _f(F0_LE, t[0] ^ a)
        t[3] ^= _f(F1_LE, t[2] ^ c)
        if i < r - 1:
            t = (t[-1:] + t[:-1]) if decrypt else (t[1:] + t[:1])
    return [t[0], t[1] ^ ks[2 * r + 2], t[2], t[3] ^ ks[2 * r + 3]]


def _f_np(tables, x):
    return (tables[0][x & 0xFF] ^ tables[1][(x >> 8) & 0xFF] ^ tables[2][(x >> 16) & 0xFF]
            ^ tables[3][x >> 24])


def ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    """Host ECB of whole blocks: Python ints for a few blocks, numpy (one round for all blocks at
    a time) for more."""
    ks = kernel_schedule(bytes(key), not encrypt)
    r = ROUNDS[len(key)]
    try:
        if len(data) <= 16 * 8:
            out = []
            for i in range(0, len(data), 16):
                out.append(struct.pack("<4I", *_block_scalar(ks, list(struct.unpack("<4I", data[i: i + 16])),
                                                             r, not encrypt)))
            return b"".join(out)
        w = np.frombuffer(bytes(data), dtype="<u4").astype(np.uint32).reshape(-1, 4)
        k = np.array(ks, dtype=np.uint32)
        t = [w[:, 0].copy(), w[:, 1] ^ k[0], w[:, 2].copy(), w[:, 3] ^ k[1]]
        for i in range(r):
            t[1] ^= _f_np(_F0_NP, t[0] ^ k[2 + 2 * i])
            t[3] ^= _f_np(_F1_NP, t[2] ^ k[3 + 2 * i])
            if i < r - 1:
                t = (t[-1:] + t[:-1]) if not encrypt else (t[1:] + t[:1])
        res = np.stack([t[0], t[1] ^ k[2 * r + 2], t[2], t[3] ^ k[2 * r + 3]], axis=1)
        k.fill(0)
        return res.astype("<u4").tobytes()
    finally:
        ks.clear()


# --------------------------------------------------------------------------- the declaration

def _fast(tables: int = 4, copies: int = 8, prmt: int = 1, mad_index: int = 1, batch: int = 1,
          grid: str = "persistent") -> Implementation:
    """An implementation of kernels/clefia.cl: its compile-time options (see that file)."""
    return Implementation("clefia.cl", batch=batch, grid=grid, defines={
        "CLEFIA_TABLES": tables, "CLEFIA_COPIES": copies, "CLEFIA_PRMT": prmt,
        "CLEFIA_MAD_INDEX": mad_index})


class CLEFIA(BlockCipher):
    name = "clefia"
    block_size = 16
    key_sizes = (16, 24, 32)
    variants = (("clefia-128", 16, ("ecb", "cbc", "ctr", "xts")),
                ("clefia-192", 24, ("ecb", "cbc", "ctr")),      # XTS for 128 and 256, as for AES
                ("clefia-256", 32, ("ecb", "cbc", "ctr", "xts")))
    openssl_provider = None  # OpenSSL (and pyca) lack CLEFIA

    implementations = {
        # the default: two 1 KiB tables per F-function (columns 2 and 3 are columns 0 and 1
        # rotated by 16), 8 copies of each in work-group memory (32 KiB: CUDA's static shared
        # memory stops at 48 KiB, so 16 copies do not build), keys in registers, persistent
        # grid, two blocks per work-item (faster than one: docs/benchmarks.md 0a, 'The ISO
        # block ciphers')
        "fast": _fast(batch=2),
        # variants timed on GPUs (docs/benchmarks.md)
        "alt-eight-tables": _fast(tables=8, copies=4),      # four tables per F, no rotation (32 KiB)
        "alt-4-copies": _fast(tables=4, copies=4),          # 16 KiB: more work-groups per SM
        "alt-1-block-per-item": _fast(),
        # a straight transcription of RFC 6114: byte S-boxes, M0/M1 products in GF(2^8)
        "reference": Implementation("clefia_ref.cl", grid="per-block"),
    }

    def defines(self, key_size: int) -> dict[str, int]:
        return {"CLEFIA_ROUNDS": ROUNDS[key_size]}

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout is not None:
            raise ValueError(f"unknown CLEFIA key layout {layout!r}")
        self.check_key(key)
        return kernel_schedule_fast(bytes(key), decrypt)

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        self.check_key(key)
        if len(data) % 16:
            raise ValueError("CLEFIA ECB takes whole 16-byte blocks")
        return ecb(key, data, encrypt)


CIPHER = CLEFIA()
