"""A plain-Python reference of AEGIS-128L, written from the CFRG specification
draft-irtf-cfrg-aegis-aead-18 ("The AEGIS Family of Authenticated Encryption Algorithms",
Section 3: Init, Update, Absorb, Enc, Dec, DecPartial, Finalize; 128- and 256-bit tags).

The AES round function (SubBytes, ShiftRows, MixColumns, AddRoundKey) is written from FIPS 197
Section 5.1; the S-box is derived algebraically (multiplicative inverse in GF(2^8) modulo
x^8 + x^4 + x^3 + x + 1, then the affine map of FIPS 197 Section 5.1.1), not copied.

Slow and simple on purpose: it is the reference the device kernels are compared with.  Blocks are
``bytes`` of 16; the state is a list of 8 blocks.
"""

from __future__ import annotations

import hmac


# --------------------------------------------------------------------------- AES (FIPS 197)

def _gmul(a: int, b: int) -> int:
    """Product in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1."""
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = ((a << 1) ^ 0x11B) if a & 0x80 else (a << 1)
        b >>= 1
    return r


def _inverse(a: int) -> int:
    """a^254 = a^-1 in GF(2^8) (0 maps to 0)."""
    r, p, e = 1, a, 254
    while e:
        if e & 1:
            r = _gmul(r, p)
        p = _gmul(p, p)
        e >>= 1
    return r if a else 0


def _sbox_entry(x: int) -> int:
    b = _inverse(x)
    out = 0
    for i in range(8):  # b'_i = b_i ^ b_(i+4) ^ b_(i+5) ^ b_(i+6) ^ b_(i+7) ^ c_i, c = 0x63
        bit = ((b >> i) ^ (b >> ((i + 4) % 8)) ^ (b >> ((i + 5) % 8)) ^ (b >> ((i + 6) % 8))
               ^ (b >> ((i + 7) % 8)) ^ (0x63 >> i)) & 1
        out |= bit << i
    return out


SBOX = bytes(_sbox_entry(x) for x in range(256))
_MUL2 = bytes(_gmul(x, 2) for x in range(256))
_MUL3 = bytes(_gmul(x, 3) for x in range(256))


def sub_bytes(s: bytes) -> bytes:
    return bytes(SBOX[b] for b in s)


def shift_rows(s: bytes) -> bytes:
    # byte 4c + r is row r of column c; row r shifts left by r columns
    return bytes(s[4 * ((c + r) % 4) + r] for c in range(4) for r in range(4))


def mix_columns(s: bytes) -> bytes:
    out = bytearray(16)
    for c in range(4):
        a0, a1, a2, a3 = s[4 * c:4 * c + 4]
        out[4 * c + 0] = _MUL2[a0] ^ _MUL3[a1] ^ a2 ^ a3
        out[4 * c + 1] = a0 ^ _MUL2[a1] ^ _MUL3[a2] ^ a3
        out[4 * c + 2] = a0 ^ a1 ^ _MUL2[a2] ^ _MUL3[a3]
        out[4 * c + 3] = _MUL3[a0] ^ a1 ^ a2 ^ _MUL2[a3]
    return bytes(out)


def xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def aes_round(block: bytes, rk: bytes) -> bytes:
    """AESRound(in, rk) of the draft: MixColumns(ShiftRows(SubBytes(in))) ^ rk."""
    return xor(mix_columns(shift_rows(sub_bytes(block))), rk)


def aes128_encrypt_block(key: bytes, block: bytes) -> bytes:
    """Full AES-128 from the same round pieces (FIPS 197 Sections 5.1 and 5.2): lets a test check
    the round against an independent AES (pyca's AES-ECB)."""
    w = [key[4 * i:4 * i + 4] for i in range(4)]
    rcon = 1
    for i in range(4, 44):
        t = w[i - 1]
        if i % 4 == 0:
            t = bytes([SBOX[t[1]] ^ rcon, SBOX[t[2]], SBOX[t[3]], SBOX[t[0]]])
            rcon = _gmul(rcon, 2)
        w.append(xor(w[i - 4], t))
    rk = [b"".join(w[4 * r:4 * r + 4]) for r in range(11)]
    s = xor(block, rk[0])
    for r in range(1, 10):
        s = aes_round(s, rk[r])
    return xor(shift_rows(sub_bytes(s)), rk[10])


# --------------------------------------------------------------------------- AEGIS-128L

C0 = bytes.fromhex("000101020305080d1522375990e97962")
C1 = bytes.fromhex("db3d18556dc22ff12011314273b528dd")


def _and(a: bytes, b: bytes) -> bytes:
    return bytes(x & y for x, y in zip(a, b))


def update(S: list, m0: bytes, m1: bytes) -> list:
    return [aes_round(S[7], xor(S[0], m0)), aes_round(S[0], S[1]), aes_round(S[1], S[2]),
            aes_round(S[2], S[3]), aes_round(S[3], xor(S[4], m1)), aes_round(S[4], S[5]),
            aes_round(S[5], S[6]), aes_round(S[6], S[7])]


def init(key: bytes, nonce: bytes) -> list:
    kn = xor(key, nonce)
    S = [kn, C1, C0, C1, kn, xor(key, C0), xor(key, C1), xor(key, C0)]
    for _ in range(10):
        S = update(S, nonce, key)
    return S


def _z(S: list):
    return xor(xor(S[6], S[1]), _and(S[2], S[3])), xor(xor(S[2], S[5]), _and(S[6], S[7]))


def finalize(S: list, ad_len: int, msg_len: int, tag_length: int) -> bytes:
    t = xor(S[2], (8 * ad_len).to_bytes(8, "little") + (8 * msg_len).to_bytes(8, "little"))
    for _ in range(7):
        S = update(S, t, t)
    if tag_length == 16:
        tag = S[0]
        for i in range(1, 7):
            tag = xor(tag, S[i])
        return tag
    if tag_length == 32:
        return (xor(xor(S[0], S[1]), xor(S[2], S[3])) + xor(xor(S[4], S[5]), xor(S[6], S[7])))
    raise ValueError("AEGIS-128L tags are 16 or 32 bytes")


def _absorb_all(S: list, ad: bytes) -> list:
    for i in range(0, len(ad), 32):
        a = ad[i:i + 32].ljust(32, b"\0")
        S = update(S, a[:16], a[16:])
    return S


def encrypt(key: bytes, nonce: bytes, msg: bytes, ad: bytes = b"", tag_length: int = 16):
    """(ciphertext, tag)."""
    assert len(key) == 16 and len(nonce) == 16
    S = _absorb_all(init(key, nonce), ad)
    ct = bytearray()
    for i in range(0, len(msg), 32):
        x = msg[i:i + 32].ljust(32, b"\0")
        z0, z1 = _z(S)
        ct += xor(x[:16], z0) + xor(x[16:], z1)
        S = update(S, x[:16], x[16:])
    return bytes(ct[:len(msg)]), finalize(S, len(ad), len(msg), tag_length)


def decrypt_tag(key: bytes, nonce: bytes, ct: bytes, ad: bytes = b"", tag_length: int = 16):
    """(plaintext, expected tag) without verifying (what a device driver returns)."""
    assert len(key) == 16 and len(nonce) == 16
    S = _absorb_all(init(key, nonce), ad)
    msg = bytearray()
    full = len(ct) - len(ct) % 32
    for i in range(0, full, 32):
        c = ct[i:i + 32]
        z0, z1 = _z(S)
        x0, x1 = xor(c[:16], z0), xor(c[16:], z1)
        msg += x0 + x1
        S = update(S, x0, x1)
    if full < len(ct):  # DecPartial
        cn = ct[full:]
        z0, z1 = _z(S)
        c = cn.ljust(32, b"\0")
        xn = (xor(c[:16], z0) + xor(c[16:], z1))[:len(cn)]
        v = xn.ljust(32, b"\0")
        S = update(S, v[:16], v[16:])
        msg += xn
    return bytes(msg), finalize(S, len(ad), len(ct), tag_length)


def decrypt(key: bytes, nonce: bytes, ct: bytes, tag: bytes, ad: bytes = b""):
    """The plaintext, or None when the tag does not verify (the tag's length picks 16 or 32)."""
    msg, expected = decrypt_tag(key, nonce, ct, ad, len(tag))
    return msg if hmac.compare_digest(expected, tag) else None
