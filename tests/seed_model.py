"""An independent plain-Python model of SEED, written from RFC 4269 for the tests (not from
ciphergrid/algorithms/seed.py nor from the kernels): bytes and the RFC's formulas throughout.

* S-boxes (RFC 4269 section 2.3): S1(x) = A(1) . x^247 ^ 169, S2(x) = A(2) . x^251 ^ 56 in
  GF(2^8) modulo p(x) = x^8 + x^6 + x^5 + x + 1.  The powers come from a table of logarithms
  (the generator is found by search), the matrices are applied column by column (column j is the
  image of input bit j);
* G: the four bytes through S1/S2 and the mask formula Z3..Z0 (no SS tables);
* F and the rounds on 8-byte halves; decryption is the rounds undone one by one, from the last
  (not the encryption network on a reversed schedule, which is what the kernels do);
* the key schedule rotates the 8-byte halves of the key as byte strings.
"""

from __future__ import annotations

M = 0xFFFFFFFF
P = 0x163

# RFC 4269 section 2.3, A(1) and A(2): row r (r = 0 first) gives output bit 7 - r; its leftmost
# entry multiplies input bit 7
A1 = ("10001010", "11111110", "10000101", "01000010", "01000101", "00100001", "10001000", "00010100")
A2 = ("01000101", "10000101", "11111110", "00100001", "10001010", "10001000", "01000010", "00010100")


def _xtimes(a: int, b: int) -> int:
    """a * b in GF(2^8) mod P, by long multiplication then reduction."""
    prod = 0
    for i in range(8):
        if (b >> i) & 1:
            prod ^= a << i
    for d in range(14, 7, -1):
        if (prod >> d) & 1:
            prod ^= P << (d - 8)
    return prod


def _log_tables():
    for gen in range(2, 256):
        exp, x = [], 1
        for _ in range(255):
            exp.append(x)
            x = _xtimes(x, gen)
        if len(set(exp)) == 255:
            return exp, {v: i for i, v in enumerate(exp)}
    raise AssertionError("no generator")


EXP, LOG = _log_tables()


def _power(x: int, e: int) -> int:
    return 0 if x == 0 else EXP[(LOG[x] * e) % 255]


def _columns(rows):
    """Column j of the matrix (the image of input bit j) as an output byte."""
    cols = []
    for j in range(8):
        c = 0
        for r, row in enumerate(rows):
            if row[7 - j] == "1":
                c |= 1 << (7 - r)
        cols.append(c)
    return cols


def _make_sbox(rows, e, c):
    cols = _columns(rows)
    out = []
    for x in range(256):
        p = _power(x, e)
        y = c
        for j in range(8):
            if (p >> j) & 1:
                y ^= cols[j]
        out.append(y)
    return out


S1 = _make_sbox(A1, 247, 169)
S2 = _make_sbox(A2, 251, 56)
m0, m1, m2, m3 = 0xFC, 0xF3, 0xCF, 0x3F


def G(x: int) -> int:
    x3, x2, x1, x0 = x.to_bytes(4, "big")
    y3, y2, y1, y0 = S2[x3], S1[x2], S2[x1], S1[x0]
    z3 = (y0 & m3) ^ (y1 & m0) ^ (y2 & m1) ^ (y3 & m2)
    z2 = (y0 & m2) ^ (y1 & m3) ^ (y2 & m0) ^ (y3 & m1)
    z1 = (y0 & m1) ^ (y1 & m2) ^ (y2 & m3) ^ (y3 & m0)
    z0 = (y0 & m0) ^ (y1 & m1) ^ (y2 & m2) ^ (y3 & m3)
    return int.from_bytes(bytes((z3, z2, z1, z0)), "big")


def F(half: bytes, k0: int, k1: int) -> bytes:
    """RFC 4269 section 2.1: F of the 64-bit right half R = C || D with round key (k0, k1)."""
    c = int.from_bytes(half[:4], "big")
    d = int.from_bytes(half[4:], "big")
    c1 = c ^ k0
    d1 = d ^ k1
    inner = G((G(c1 ^ d1) + c1) & M)                 # G[G[C' ^ D'] + C']
    d2 = G((inner + G(c1 ^ d1)) & M)                 # D'' = G[G[G[C'^D'] + C'] + G[C'^D']]
    c2 = (d2 + inner) & M                            # C'' = D'' + G[G[C'^D'] + C']
    return c2.to_bytes(4, "big") + d2.to_bytes(4, "big")


def round_keys(key: bytes) -> list[tuple[int, int]]:
    """RFC 4269 section 2.2: (K_i,0, K_i,1) for i = 1..16."""
    a, b = bytes(key[:8]), bytes(key[8:])           # Key0 || Key1, Key2 || Key3
    out = []
    for i in range(1, 17):
        kc = ((0x9E3779B9 << (i - 1)) | (0x9E3779B9 >> (33 - i))) & M
        k = [int.from_bytes(a[:4], "big"), int.from_bytes(a[4:], "big"),
             int.from_bytes(b[:4], "big"), int.from_bytes(b[4:], "big")]
        out.append((G((k[0] + k[2] - kc) & M), G((k[1] - k[3] + kc) & M)))
        if i % 2:
            a = a[-1:] + a[:-1]                      # (Key0 || Key1) >> 8, a rotation
        else:
            b = b[1:] + b[:1]                        # (Key2 || Key3) << 8
    return out


def _xor(x: bytes, y: bytes) -> bytes:
    return bytes(i ^ j for i, j in zip(x, y))


def encrypt_block(key: bytes, block: bytes) -> bytes:
    left, right = block[:8], block[8:]
    for k0, k1 in round_keys(key):
        left, right = right, _xor(left, F(right, k0, k1))
    return right + left                              # R16 || L16


def decrypt_block(key: bytes, block: bytes) -> bytes:
    right, left = block[:8], block[8:]               # (R16, L16)
    for k0, k1 in reversed(round_keys(key)):
        # round i made (L_i, R_i) = (R_{i-1}, L_{i-1} ^ F(R_{i-1}, K_i)): undo it
        left, right = _xor(right, F(left, k0, k1)), left
    return left + right


def ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    fn = encrypt_block if encrypt else decrypt_block
    return b"".join(fn(key, data[i: i + 16]) for i in range(0, len(data), 16))


def cbc_encrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    out, prev = [], iv
    for i in range(0, len(data), 16):
        prev = encrypt_block(key, _xor(data[i: i + 16], prev))
        out.append(prev)
    return b"".join(out)
