"""An independent plain-Python model of CLEFIA, written from RFC 6114 (M. Katagi, S. Moriai, "The
128-Bit Blockcipher CLEFIA", March 2011) for the tests, and nothing else.

It follows the RFC's description literally: blocks and keys are lists of bytes, the 32-bit words
are big-endian byte quadruples as the RFC writes them, F0/F1 apply the S-boxes byte by byte and
multiply by M0/M1 in GF(2^8) (z^8 + z^4 + z^3 + z^2 + 1), GFN_{4,r} and GFN_{8,r} rotate words,
GFN^-1_{4,r} rotates back, the key schedule builds the CON constants from their definition, runs
GFN_{4,12} / GFN_{8,10} on the key and applies the DoubleSwap function Sigma to a 128-bit integer.
It shares no code with ciphergrid/algorithms/clefia.py (which uses little-endian words and 8->32-bit
tables, as the kernels do).

S0 is computed from the RFC's four 4-bit S-boxes SS0..SS3; S1 (g(f(x)^-1) in the RFC, with two
affine maps) is the RFC's printed table, transcribed here on its own.
"""

from __future__ import annotations

# ---- S-boxes ----------------------------------------------------------------------------------

SS0 = [0xE, 0x6, 0xC, 0xA, 0x8, 0x7, 0x2, 0xF, 0xB, 0x1, 0x4, 0x0, 0x5, 0x9, 0xD, 0x3]
SS1 = [0x6, 0x4, 0x0, 0xD, 0x2, 0xB, 0xA, 0x3, 0x9, 0xC, 0xE, 0xF, 0x8, 0x7, 0x5, 0x1]
SS2 = [0xB, 0x8, 0x5, 0xE, 0xA, 0x6, 0x4, 0xC, 0xF, 0x7, 0x2, 0x3, 0x1, 0x0, 0xD, 0x9]
SS3 = [0xA, 0x2, 0x6, 0xD, 0x3, 0x4, 0x5, 0xE, 0x0, 0x7, 0x8, 0x9, 0xB, 0xF, 0xC, 0x1]


def gf4_mul(a: int, b: int) -> int:
    """a * b in GF(2^4) with z^4 + z + 1."""
    r = 0
    for i in range(4):
        if (b >> i) & 1:
            r ^= a << i
    for d in (6, 5, 4):
        if (r >> d) & 1:
            r ^= 0b10011 << (d - 4)
    return r


def gf8_mul(a: int, b: int) -> int:
    """a * b in GF(2^8) with z^8 + z^4 + z^3 + z^2 + 1."""
    r = 0
    for i in range(8):
        if (b >> i) & 1:
            r ^= a << i
    for d in range(14, 7, -1):
        if (r >> d) & 1:
            r ^= 0x11D << (d - 8)
    return r


def s0(x: int) -> int:
    x0, x1 = x >> 4, x & 0xF                 # x0: the upper four bits
    t0, t1 = SS0[x0], SS1[x1]
    u0 = t0 ^ gf4_mul(0x2, t1)
    u1 = gf4_mul(0x2, t0) ^ t1
    return (SS2[u0] << 4) | SS3[u1]


S0 = [s0(x) for x in range(256)]
S1 = list(bytes.fromhex(
    "6c da c3 e9 4e 9d 0a 3d b8 36 b4 38 13 34 0c d9"
    "bf 74 94 8f b7 9c e5 dc 9e 07 49 4f 98 2c b0 93"
    "12 eb cd b3 92 e7 41 60 e3 21 27 3b e6 19 d2 0e"
    "91 11 c7 3f 2a 8e a1 bc 2b c8 c5 0f 5b f3 87 8b"
    "fb f5 de 20 c6 a7 84 ce d8 65 51 c9 a4 ef 43 53"
    "25 5d 9b 31 e8 3e 0d d7 80 ff 69 8a ba 0b 73 5c"
    "6e 54 15 62 f6 35 30 52 a3 16 d3 28 32 fa aa 5e"
    "cf ea ed 78 33 58 09 7b 63 c0 c1 46 1e df a9 99"
    "55 04 c4 86 39 77 82 ec 40 18 90 97 59 dd 83 1f"
    "9a 37 06 24 64 7c a5 56 48 08 85 d0 61 26 ca 6f"
    "7e 6a b6 71 a0 70 05 d1 45 8c 23 1c f0 ee 89 ad"
    "7a 4b c2 2f db 5a 4d 76 67 17 2d f4 cb b1 4a a8"
    "b5 22 47 3a d5 10 4c 72 cc 00 f9 e0 fd e2 fe ae"
    "f8 5f ab f1 1b 42 81 d6 be 44 29 a6 57 b9 af f2"
    "d4 75 66 bb 68 9f 50 02 01 3c 7f 8d 1a 88 bd ac"
    "f7 e4 79 96 a2 fc 6d b2 6b 03 e1 2e 7d 14 95 1d"))

M0 = [[0x1, 0x2, 0x4, 0x6], [0x2, 0x1, 0x6, 0x4], [0x4, 0x6, 0x1, 0x2], [0x6, 0x4, 0x2, 0x1]]
M1 = [[0x1, 0x8, 0x2, 0xA], [0x8, 0x1, 0xA, 0x2], [0x2, 0xA, 0x1, 0x8], [0xA, 0x2, 0x8, 0x1]]


def _matvec(m, z):
    out = []
    for row in m:
        acc = 0
        for c, v in zip(row, z):
            acc ^= gf8_mul(c, v)
        out.append(acc)
    return out


# ---- F-functions and the networks (words are lists of 4 bytes) ---------------------------------

def F0(rk, x):
    t = [a ^ b for a, b in zip(rk, x)]
    return _matvec(M0, [S0[t[0]], S1[t[1]], S0[t[2]], S1[t[3]]])


def F1(rk, x):
    t = [a ^ b for a, b in zip(rk, x)]
    return _matvec(M1, [S1[t[0]], S0[t[1]], S1[t[2]], S0[t[3]]])


def _xor(a, b):
    return [p ^ q for p, q in zip(a, b)]


def gfn4(rk, x, r):
    """GFN_{4,r}: rk holds 2r words, x 4 words."""
    t = [list(w) for w in x]
    for i in range(r):
        t[1] = _xor(t[1], F0(rk[2 * i], t[0]))
        t[3] = _xor(t[3], F1(rk[2 * i + 1], t[2]))
        if i != r - 1:
            t = [t[1], t[2], t[3], t[0]]
    return t


def gfn8(rk, x, r):
    """GFN_{8,r}: rk holds 4r words, x 8 words."""
    t = [list(w) for w in x]
    for i in range(r):
        t[1] = _xor(t[1], F0(rk[4 * i], t[0]))
        t[3] = _xor(t[3], F1(rk[4 * i + 1], t[2]))
        t[5] = _xor(t[5], F0(rk[4 * i + 2], t[4]))
        t[7] = _xor(t[7], F1(rk[4 * i + 3], t[6]))
        if i != r - 1:
            t = t[1:] + t[:1]
    return t


def gfn4_inv(rk, x, r):
    """GFN^-1_{4,r}."""
    t = [list(w) for w in x]
    for i in range(r - 1, -1, -1):
        t[1] = _xor(t[1], F0(rk[2 * i], t[0]))
        t[3] = _xor(t[3], F1(rk[2 * i + 1], t[2]))
        if i != 0:
            t = [t[3], t[0], t[1], t[2]]
    return t


# ---- key schedule -------------------------------------------------------------------------------

def con(k_bits: int) -> list[list[int]]:
    """CON^(k)_i, i < 60 / 84 / 92, as 4-byte words: T starts at IV^(k) and is multiplied by z^-1
    in GF(2^16) with z^16 + z^15 + z^13 + z^11 + z^5 + z^4 + 1 after each pair;
    CON_2i = (T ^ P) | (~T <<< 1), CON_2i+1 = (~T ^ Q) | (T <<< 8), P = 0xb7e1, Q = 0x243f."""
    iv = {128: 0x428A, 192: 0x7137, 256: 0xB5C0}[k_bits]
    n = {128: 60, 192: 84, 256: 92}[k_bits]
    poly = (1 << 16) | (1 << 15) | (1 << 13) | (1 << 11) | (1 << 5) | (1 << 4) | 1

    def rot16(v, s):
        return ((v << s) | (v >> (16 - s))) & 0xFFFF

    out, t = [], iv
    for _ in range(n // 2):
        nt = (~t) & 0xFFFF
        for hi, lo in (((t ^ 0xB7E1), rot16(nt, 1)), ((nt ^ 0x243F), rot16(t, 8))):
            out.append([hi >> 8, hi & 0xFF, lo >> 8, lo & 0xFF])
        # T * z^-1: if the constant term is set, add the polynomial first (then it divides by z)
        t = (t ^ poly) >> 1 if t & 1 else t >> 1
    return out


def _words(b):
    return [list(b[i: i + 4]) for i in range(0, len(b), 4)]


def _int(ws):
    v = 0
    for w in ws:
        for byte in w:
            v = (v << 8) | byte
    return v


def _from_int(v, nwords):
    b = v.to_bytes(4 * nwords, "big")
    return _words(b)


def sigma(x: int) -> int:
    """DoubleSwap on 128 bits, bit 0 the leftmost: X[7-63] | X[121-127] | X[0-6] | X[64-120]."""
    s = format(x, "0128b")
    return int(s[7:64] + s[121:128] + s[0:7] + s[64:121], 2)


def key_schedule(key: bytes):
    """(r, WK (4 words), RK (2r words))."""
    kb = len(key) * 8
    k = _words(key)
    if kb == 128:
        c = con(128)
        l = _int(gfn4(c[:24], k, 12))
        wk = k
        rk = []
        for i in range(9):
            t = l ^ _int(c[24 + 4 * i: 28 + 4 * i])
            l = sigma(l)
            if i % 2 == 1:
                t ^= _int(k)
            rk += _from_int(t, 4)
        return 18, wk, rk
    if kb == 192:
        kl, kr = k[:4], k[4:6] + [[b ^ 0xFF for b in w] for w in k[0:2]]
        r = 22
    else:
        kl, kr = k[:4], k[4:8]
        r = 26
    c = con(kb)
    lw = gfn8(c[:40], kl + kr, 10)
    ll, lr = _int(lw[:4]), _int(lw[4:])
    wk = [_xor(a, b) for a, b in zip(kl, kr)]
    rk = []
    for i in range(r // 2):
        t = _int(c[40 + 4 * i: 44 + 4 * i])
        if i % 4 in (0, 1):
            t ^= ll
            ll = sigma(ll)
            if i % 2 == 1:
                t ^= _int(kr)
        else:
            t ^= lr
            lr = sigma(lr)
            if i % 2 == 1:
                t ^= _int(kl)
        rk += _from_int(t, 4)
    return r, wk, rk


# ---- the cipher ---------------------------------------------------------------------------------

def encrypt_block(key: bytes, block: bytes, ks=None) -> bytes:
    r, wk, rk = ks or key_schedule(key)
    p = _words(block)
    t = [p[0], _xor(p[1], wk[0]), p[2], _xor(p[3], wk[1])]
    t = gfn4(rk, t, r)
    c = [t[0], _xor(t[1], wk[2]), t[2], _xor(t[3], wk[3])]
    return bytes(b for w in c for b in w)


def decrypt_block(key: bytes, block: bytes, ks=None) -> bytes:
    r, wk, rk = ks or key_schedule(key)
    c = _words(block)
    t = [c[0], _xor(c[1], wk[2]), c[2], _xor(c[3], wk[3])]
    t = gfn4_inv(rk, t, r)
    p = [t[0], _xor(t[1], wk[0]), t[2], _xor(t[3], wk[1])]
    return bytes(b for w in p for b in w)


def ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    fn = encrypt_block if encrypt else decrypt_block
    ks = key_schedule(key)
    return b"".join(fn(key, data[i: i + 16], ks) for i in range(0, len(data), 16))
