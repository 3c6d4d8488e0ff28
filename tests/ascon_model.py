"""A plain-Python reference of Ascon-AEAD128, written from NIST SP 800-232 (August 2025), for the
tests only: slow and simple, deliberately unlike the kernel.

* The state is five 64-bit words S0..S4; a byte string becomes words little-endian (SP 800-232
  §2.1: bit i of a word is bit i mod 8 of byte i div 8).
* Ascon-p[rnd] (§3): rounds i = 16 - rnd .. 15, each the constant addition (S2 ^= c_i, Table 4),
  the substitution layer applied column by column through the 5-bit S-box table (Table 5; the
  column's S0 bit is the most significant), and the linear layer (§3.4, Eq. 3.6).
* Ascon-AEAD128 (§4.1): IV 0x00001000808C0001, S = IV || K || N, p[12], S ^= 0^192 || K;
  AD in 128-bit blocks padded with a 1 bit then 0s (only when non-empty), p[8] after each, then
  S ^= 0^319 || 1 (the top bit of S4); the plaintext in 128-bit blocks, p[8] between, the last
  (possibly empty) block padded; finalization S ^= 0^128 || K || 0^64, p[12], T = S[192:320] ^ K.
"""

from __future__ import annotations

MASK = (1 << 64) - 1
IV_AEAD128 = 0x00001000808C0001
RATE = 16

# Table 4: the round constants c_0 .. c_15 (p[rnd] uses the last rnd of them)
CONSTANTS = (0x3C, 0x2D, 0x1E, 0x0F, 0xF0, 0xE1, 0xD2, 0xC3,
             0xB4, 0xA5, 0x96, 0x87, 0x78, 0x69, 0x5A, 0x4B)
# Table 5: the S-box
SBOX = (0x04, 0x0B, 0x1F, 0x14, 0x1A, 0x15, 0x09, 0x02, 0x1B, 0x05, 0x08, 0x12, 0x1D, 0x03, 0x06, 0x1C,
        0x1E, 0x13, 0x07, 0x0E, 0x00, 0x0D, 0x11, 0x18, 0x10, 0x0C, 0x01, 0x19, 0x16, 0x0A, 0x0F, 0x17)
# the linear layer: Sigma_k(x) = x ^ (x >>> a) ^ (x >>> b)
ROTATIONS = ((19, 28), (61, 39), (1, 6), (10, 17), (7, 41))


def _ror(x: int, n: int) -> int:
    return ((x >> n) | (x << (64 - n))) & MASK


def permutation(s: list[int], rounds: int) -> list[int]:
    """Ascon-p[rounds] on a copy of the state s (five ints)."""
    s = list(s)
    for i in range(16 - rounds, 16):
        s[2] ^= CONSTANTS[i]
        out = [0] * 5
        for j in range(64):
            col = 0
            for w in range(5):
                col = (col << 1) | ((s[w] >> j) & 1)
            v = SBOX[col]
            for w in range(5):
                out[w] |= ((v >> (4 - w)) & 1) << j
        s = [out[w] ^ _ror(out[w], a) ^ _ror(out[w], b) for w, (a, b) in enumerate(ROTATIONS)]
    return s


def _word(b: bytes) -> int:
    return int.from_bytes(b, "little")


def _bytes(w: int, n: int = 8) -> bytes:
    return (w & MASK).to_bytes(8, "little")[:n]


def _block(b: bytes) -> tuple[int, int]:
    """A block of up to 16 bytes as two words (the missing bytes zero)."""
    b = b.ljust(RATE, b"\0")
    return _word(b[:8]), _word(b[8:16])


def _pad(n: int) -> tuple[int, int]:
    """The padding bit after n bytes of a block (the byte 0x01 at position n)."""
    return (1 << (8 * n), 0) if n < 8 else (0, 1 << (8 * (n - 8)))


def _start(key: bytes, nonce: bytes, aad: bytes) -> tuple[list[int], int, int]:
    if len(key) != 16 or len(nonce) != 16:
        raise ValueError("Ascon-AEAD128 takes a 16-byte key and a 16-byte nonce")
    k0, k1 = _word(key[:8]), _word(key[8:])
    s = permutation([IV_AEAD128, k0, k1, _word(nonce[:8]), _word(nonce[8:])], 12)
    s[3] ^= k0
    s[4] ^= k1
    if aad:
        full = len(aad) // RATE
        for i in range(full + 1):
            a0, a1 = _block(aad[RATE * i:RATE * (i + 1)])
            if i == full:
                p0, p1 = _pad(len(aad) - RATE * full)
                a0, a1 = a0 ^ p0, a1 ^ p1
            s[0] ^= a0
            s[1] ^= a1
            s = permutation(s, 8)
    s[4] ^= 1 << 63
    return s, k0, k1


def _finish(s: list[int], k0: int, k1: int) -> bytes:
    s[2] ^= k0
    s[3] ^= k1
    s = permutation(s, 12)
    return _bytes(s[3] ^ k0) + _bytes(s[4] ^ k1)


def encrypt(key: bytes, nonce: bytes, aad: bytes, plaintext: bytes, tag_length: int = 16) -> bytes:
    """ciphertext || tag of Ascon-AEAD128 (the shape tests/test_aead.py's reference_seal takes;
    a tag_length below 16 truncates the tag)."""
    ct, tag = encrypt_parts(key, nonce, aad, plaintext)
    return ct + tag[:tag_length]


def encrypt_parts(key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> tuple[bytes, bytes]:
    """(ciphertext, tag) of Ascon-AEAD128."""
    s, k0, k1 = _start(key, nonce, aad)
    out = bytearray()
    full = len(plaintext) // RATE
    for i in range(full):
        p0, p1 = _block(plaintext[RATE * i:RATE * (i + 1)])
        s[0] ^= p0
        s[1] ^= p1
        out += _bytes(s[0]) + _bytes(s[1])
        s = permutation(s, 8)
    last = plaintext[RATE * full:]
    p0, p1 = _block(last)
    s[0] ^= p0
    s[1] ^= p1
    out += (_bytes(s[0]) + _bytes(s[1]))[:len(last)]
    q0, q1 = _pad(len(last))
    s[0] ^= q0
    s[1] ^= q1
    return bytes(out), _finish(s, k0, k1)


def decrypt(key: bytes, nonce: bytes, aad: bytes, ciphertext: bytes, tag: bytes) -> bytes | None:
    """The plaintext, or None when the tag does not verify."""
    s, k0, k1 = _start(key, nonce, aad)
    out = bytearray()
    full = len(ciphertext) // RATE
    for i in range(full):
        c0, c1 = _block(ciphertext[RATE * i:RATE * (i + 1)])
        out += _bytes(s[0] ^ c0) + _bytes(s[1] ^ c1)
        s[0], s[1] = c0, c1
        s = permutation(s, 8)
    last = ciphertext[RATE * full:]
    n = len(last)
    state = _bytes(s[0]) + _bytes(s[1])
    out += bytes(x ^ y for x, y in zip(state[:n], last))
    merged = last + state[n:]          # the ciphertext bytes replace the state's first n bytes
    s[0], s[1] = _block(merged)
    q0, q1 = _pad(n)
    s[0] ^= q0
    s[1] ^= q1
    if _finish(s, k0, k1) != bytes(tag):
        return None
    return bytes(out)


def tag_of(key: bytes, nonce: bytes, aad: bytes, text: bytes, encrypt_: bool) -> bytes:
    """The tag computed over ``text`` (plaintext when encrypting, ciphertext when decrypting),
    as a driver returns it."""
    if encrypt_:
        return encrypt_parts(key, nonce, aad, text)[1]
    s, k0, k1 = _start(key, nonce, aad)
    full = len(text) // RATE
    for i in range(full):
        s[0], s[1] = _block(text[RATE * i:RATE * (i + 1)])
        s = permutation(s, 8)
    last = text[RATE * full:]
    state = _bytes(s[0]) + _bytes(s[1])
    s[0], s[1] = _block(last + state[len(last):])
    q0, q1 = _pad(len(last))
    s[0] ^= q0
    s[1] ^= q1
    return _finish(s, k0, k1)
