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
from array import array

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


def _tables16(columns) -> tuple[array, array]:
    """An F-function's four byte tables as two 16 -> 32-bit ones: F(x) = lo[x & 0xffff] ^
    hi[x >> 16] on the little-endian word x (half the lookups and shifts of the byte tables)."""
    t = np.array(columns, dtype=np.uint32)
    return tuple(array("I", (t[2 * h + 1][:, None] ^ t[2 * h][None, :]).astype(np.uint32).tobytes())
                 for h in (0, 1))


assert array("I").itemsize == 4
#: F0 and F1 as 16 -> 32-bit tables (256 KiB each): the host's schedule and blocks
_F0_16 = _tables16(F0_LE)
_F1_16 = _tables16(F1_LE)
#: CON^(k) of the GFN as little-endian words, a tuple per step: 8 (four rounds of GFN_{4,12})
#: or 4 (a round of GFN_{8,10})
_CON_STEPS = {n: tuple(tuple(_bswap(c) for c in con[i: i + (8 if n == 16 else 4)])
                       for i in range(0, 24 if n == 16 else 40, 8 if n == 16 else 4))
              for n, con in _CON.items()}
#: CON^(k) after the GFN's, by four: the 128-bit big-endian integers XORed into the round keys
_CON_128 = {n: tuple(_words_to_int(con[i: i + 4]) for i in range(24 if n == 16 else 40, len(con), 4))
            for n, con in _CON.items()}
_M64 = (1 << 64) - 1
_TOP7 = 0x7F << 57
_LE4, _LE8 = struct.Struct("<4I"), struct.Struct("<8I")
_BE2, _BE4 = struct.Struct(">2Q"), struct.Struct(">4Q")


def _gfn4(t0: int, t1: int, t2: int, t3: int, steps) -> tuple[int, int, int, int]:
    """GFN_{4,r} on little-endian words (what :func:`_gfn` computes) over the 16-bit tables,
    four rounds a step (the words back in place after four rotations): ``steps`` holds each
    step's 8 constants (r a multiple of 4)."""
    fa, fb = _F0_16
    ga, gb = _F1_16
    for c0, c1, c2, c3, c4, c5, c6, c7 in steps:
        x = t0 ^ c0
        t1 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t2 ^ c1
        t3 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
        x = t1 ^ c2
        t2 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t3 ^ c3
        t0 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
        x = t2 ^ c4
        t3 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t0 ^ c5
        t1 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
        x = t3 ^ c6
        t0 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t1 ^ c7
        t2 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
    return t3, t0, t1, t2   # (the last round does not rotate)


def _gfn8(t, rounds) -> tuple[int, ...]:
    """GFN_{8,r} as :func:`_gfn4`."""
    fa, fb = _F0_16
    ga, gb = _F1_16
    t0, t1, t2, t3, t4, t5, t6, t7 = t
    for c0, c1, c2, c3 in rounds:
        x = t0 ^ c0
        t1 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t2 ^ c1
        t3 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
        x = t4 ^ c2
        t5 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t6 ^ c3
        t7 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
        t0, t1, t2, t3, t4, t5, t6, t7 = t1, t2, t3, t4, t5, t6, t7, t0
    return t7, t0, t1, t2, t3, t4, t5, t6


def _masks(n: int, decrypt: bool) -> tuple:
    """For :func:`kernel_schedule_fast`: the kernels' words as 64-bit big-endian units (WK0 WK1,
    RK0 RK1, ..., WK2 WK3; decryption: the units reversed), the CON^(k) part of every round key
    and, as multipliers, the places of K (CLEFIA-128) or of K_R and K_L (192/256: round keys
    from L_L take K_R, from L_R K_L) in that order, as one integer each."""
    cons = _CON_128[n]
    m = len(cons)
    units = 2 * m + 2
    con = rep_r = rep_l = 0
    for i, c in enumerate(cons):
        j = m - 1 - i if decrypt else i
        shift = 64 * (units - 3 - 2 * j)
        con |= (((c & _M64) << 64) | (c >> 64) if decrypt else c) << shift
        if i & 1:
            if n == 16 or (i >> 1) & 1 == 0:
                rep_r |= 1 << shift
            else:
                rep_l |= 1 << shift
    return struct.Struct(f">{units}Q"), con, rep_r, rep_l


_MASKS = {(n, d): _masks(n, d) for n in (16, 24, 32) for d in (False, True)}


def kernel_schedule_fast(key: bytes, decrypt: bool) -> np.ndarray:
    """:func:`kernel_schedule` as a little-endian uint32 array (the caller zeroes it: the
    bytearray below it)."""
    return np.frombuffer(_schedule_bytes(key, decrypt), dtype="<u4")


def _schedule_bytes(key: bytes, decrypt: bool) -> bytearray:
    """The bytes of :func:`kernel_schedule`'s words, computed without the readable form's
    conversions: the GFN on little-endian words over 16-bit tables, L as two 64-bit halves
    (DoubleSwap in six operations), every state's halves packed at once in the kernels' order
    and the constants and K XORed in by one operation on the whole."""
    n = len(key)
    a = b = c = d = 0
    if n == 16:
        a, b = _BE2.unpack(_LE4.pack(*_gfn4(*_LE4.unpack(key), _CON_STEPS[16])))
        hi, lo = _BE2.unpack(key)
        ws = [hi]
        for _ in range(9):
            ws += (a, b)
            a, b = ((a << 7) & _M64) | (b & 0x7F), (a & _TOP7) | (b >> 7)
        ws.append(lo)
        kr, kl = (lo << 64) | hi if decrypt else (hi << 64) | lo, 0   # (K: rep_r's places)
        hi = lo = 0
    else:
        le = list(struct.unpack(f"<{n // 4}I", key))
        if n == 24:
            le += [le[0] ^ MASK32, le[1] ^ MASK32]
        a, b, c, d = _BE4.unpack(_LE8.pack(*_gfn8(le, _CON_STEPS[n])))   # L_L, L_R
        k0, k1, k2, k3 = _BE4.unpack(_LE8.pack(*le))                       # K_L, K_R
        ws = [k0 ^ k2]
        for _ in range(ROUNDS[n] // 8):   # round keys 4j, 4j + 1 from L_L, 4j + 2, 4j + 3 from L_R
            ws += (a, b)
            a, b = ((a << 7) & _M64) | (b & 0x7F), (a & _TOP7) | (b >> 7)
            ws += (a, b)
            a, b = ((a << 7) & _M64) | (b & 0x7F), (a & _TOP7) | (b >> 7)
            ws += (c, d)
            c, d = ((c << 7) & _M64) | (d & 0x7F), (c & _TOP7) | (d >> 7)
            ws += (c, d)
            c, d = ((c << 7) & _M64) | (d & 0x7F), (c & _TOP7) | (d >> 7)
        ws += (a, b)     # the rest: 4q from L_L (256); 4q, 4q + 1 from L_L, 4q + 2 from L_R (192)
        if n == 24:
            a, b = ((a << 7) & _M64) | (b & 0x7F), (a & _TOP7) | (b >> 7)
            ws += (a, b, c, d)
        ws.append(k1 ^ k3)
        if decrypt:
            kr, kl = (k3 << 64) | k2, (k1 << 64) | k0
        else:
            kr, kl = (k2 << 64) | k3, (k0 << 64) | k1
        le.clear()
        k0 = k1 = k2 = k3 = 0
    fmt, con, rep_r, rep_l = _MASKS[(n, decrypt)]
    if decrypt:
        ws.reverse()
    v = int.from_bytes(fmt.pack(*ws), "big") ^ con ^ (kr * rep_r) ^ (kl * rep_l)
    out = bytearray(v.to_bytes(8 * len(ws), "big"))
    ws.clear()
    a = b = c = d = v = kr = kl = 0
    return out


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


def encrypt_blocks(key: bytes, blocks) -> bytearray:
    """Blocks encrypted with :func:`kernel_schedule_fast`'s words, the network over the 16-bit
    tables (:func:`_gfn4`, then the last two rounds) (the few blocks of an XTS one-shot's tweaks: what the readable
    model takes several times as long for).  The schedule's bytes are zeroed; the caller zeroes
    the result."""
    r = ROUNDS[len(key)]
    raw = _schedule_bytes(key, False)
    ks = struct.unpack(f"<{2 * r + 4}I", raw)
    raw[:] = bytes(len(raw))
    fa, fb = _F0_16
    ga, gb = _F1_16
    w0, w1, e0, e1 = ks[0], ks[1], ks[2 * r + 2], ks[2 * r + 3]
    it = iter(ks[2: 2 * r - 2])
    steps = list(zip(it, it, it, it, it, it, it, it))     # (r = 4 q + 2)
    k0, k1, k2, k3 = ks[2 * r - 2: 2 * r + 2]
    out = bytearray(len(blocks))
    for off in range(0, len(blocks), 16):
        t0, t1, t2, t3 = _LE4.unpack_from(blocks, off)
        t3, t0, t1, t2 = _gfn4(t0, t1 ^ w0, t2, t3 ^ w1, steps)   # (undoing its last rotation)
        x = t0 ^ k0                                     # the last two rounds
        t1 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t2 ^ k1
        t3 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
        x = t1 ^ k2
        t2 ^= fa[x & 0xFFFF] ^ fb[x >> 16]
        x = t3 ^ k3
        t0 ^= ga[x & 0xFFFF] ^ gb[x >> 16]
        _LE4.pack_into(out, off, t1, t2 ^ e0, t3, t0 ^ e1)   # (the last round does not rotate)
    steps.clear()
    ks = it = None
    t0 = t1 = t2 = t3 = x = w0 = w1 = e0 = e1 = k0 = k1 = k2 = k3 = 0
    return out


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

    def host_encrypt(self, key: bytes, blocks: bytes) -> bytearray:
        self.check_key(key)
        if len(blocks) % 16:
            raise ValueError("CLEFIA ECB takes whole 16-byte blocks")
        return encrypt_blocks(bytes(key), blocks)

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        self.check_key(key)
        if len(data) % 16:
            raise ValueError("CLEFIA ECB takes whole 16-byte blocks")
        return ecb(key, data, encrypt)


CIPHER = CLEFIA()
