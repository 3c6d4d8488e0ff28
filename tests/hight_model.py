"""An independent plain-Python model of HIGHT, written from the specification (TTAS.KO-12.0040/R1;
ISO/IEC 18033-3; the HIGHT paper, CHES 2006), for tests/test_hight.py.

It shares no code with ``ciphergrid/algorithms/hight.py`` (the host model behind ``reference_ecb``)
nor with the kernels: it follows the specification's own notation, one byte at a time.

Byte order.  The specification names the key bytes MK0..MK15, the plaintext bytes P0..P7 and the
ciphertext bytes C0..C7, and prints each as a number, most significant byte first
(MK15 ... MK0, P7 ... P0).  Here, as in KISA's reference code, a byte string holds them in index
order: key[i] = MK_i, block[i] = P_i (C_i).  A vector printed in the specification is therefore
reversed to give our byte strings (``from_printed``).
"""

from __future__ import annotations

BLOCK = 8
KEY = 16


def from_printed(hex_text: str) -> bytes:
    """The byte string of a value the specification prints most significant byte first."""
    return bytes.fromhex(hex_text)[::-1]


def rotl8(x: int, n: int) -> int:
    return ((x << n) | (x >> (8 - n))) & 0xFF


def F0(x: int) -> int:
    return rotl8(x, 1) ^ rotl8(x, 2) ^ rotl8(x, 7)


def F1(x: int) -> int:
    return rotl8(x, 3) ^ rotl8(x, 4) ^ rotl8(x, 6)


def deltas() -> list[int]:
    """The 128 constants delta_0..delta_127 of the key schedule: the 7-bit LFSR
    s_{i+6} = s_{i+2} xor s_{i-1}, started from s_0..s_6 = 0,1,0,1,1,0,1 (delta_0 = 0x5A), and
    delta_i = (s_{i+6}, s_{i+5}, ..., s_i) read as a binary number (s_{i+6} the most significant)."""
    s = [0, 1, 0, 1, 1, 0, 1]
    for i in range(1, 128):
        s.append(s[i + 2] ^ s[i - 1])       # this is s[i + 6]
    out = []
    for i in range(128):
        d = 0
        for j in range(6, -1, -1):
            d = (d << 1) | s[i + j]
        out.append(d)
    return out


def whitening_keys(mk: bytes) -> list[int]:
    """WK_i = MK_{i+12} (0 <= i <= 3), WK_i = MK_{i-4} (4 <= i <= 7)."""
    return [mk[i + 12] if i < 4 else mk[i - 4] for i in range(8)]


def subkeys(mk: bytes) -> list[int]:
    """SK_{16i+j} = MK_{(j-i) mod 8} + delta_{16i+j};  SK_{16i+j+8} = MK_{((j-i) mod 8)+8} + delta_{16i+j+8}
    (0 <= i, j <= 7; additions mod 2^8)."""
    delta = deltas()
    sk = [0] * 128
    for i in range(8):
        for j in range(8):
            sk[16 * i + j] = (mk[(j - i) % 8] + delta[16 * i + j]) & 0xFF
        for j in range(8):
            sk[16 * i + j + 8] = (mk[(j - i) % 8 + 8] + delta[16 * i + j + 8]) & 0xFF
    return sk


def encrypt_block(key: bytes, block: bytes) -> bytes:
    assert len(key) == KEY and len(block) == BLOCK
    wk, sk, P = whitening_keys(key), subkeys(key), block
    # initial transformation
    X = [(P[0] + wk[0]) & 0xFF, P[1], P[2] ^ wk[1], P[3],
         (P[4] + wk[2]) & 0xFF, P[5], P[6] ^ wk[3], P[7]]
    # rounds i = 0..30: the round function, then the byte rotation
    for i in range(31):
        Y = [0] * 8
        Y[1], Y[3], Y[5], Y[7] = X[0], X[2], X[4], X[6]
        Y[0] = X[7] ^ ((F0(X[6]) + sk[4 * i + 3]) & 0xFF)
        Y[2] = (X[1] + (F1(X[0]) ^ sk[4 * i])) & 0xFF
        Y[4] = X[3] ^ ((F0(X[2]) + sk[4 * i + 1]) & 0xFF)
        Y[6] = (X[5] + (F1(X[4]) ^ sk[4 * i + 2])) & 0xFF
        X = Y
    # round 31: no rotation
    Y = list(X)
    Y[1] = (X[1] + (F1(X[0]) ^ sk[124])) & 0xFF
    Y[3] = X[3] ^ ((F0(X[2]) + sk[125]) & 0xFF)
    Y[5] = (X[5] + (F1(X[4]) ^ sk[126])) & 0xFF
    Y[7] = X[7] ^ ((F0(X[6]) + sk[127]) & 0xFF)
    X = Y
    # final transformation
    return bytes([(X[0] + wk[4]) & 0xFF, X[1], X[2] ^ wk[5], X[3],
                  (X[4] + wk[6]) & 0xFF, X[5], X[6] ^ wk[7], X[7]])


def decrypt_block(key: bytes, block: bytes) -> bytes:
    """The specification's decryption: the final transformation, round 31 and rounds 30..0 undone
    in turn, then the initial transformation undone (subtractions mod 2^8)."""
    assert len(key) == KEY and len(block) == BLOCK
    wk, sk, C = whitening_keys(key), subkeys(key), block
    X = [(C[0] - wk[4]) & 0xFF, C[1], C[2] ^ wk[5], C[3],
         (C[4] - wk[6]) & 0xFF, C[5], C[6] ^ wk[7], C[7]]
    Y = list(X)
    Y[1] = (X[1] - (F1(X[0]) ^ sk[124])) & 0xFF
    Y[3] = X[3] ^ ((F0(X[2]) + sk[125]) & 0xFF)
    Y[5] = (X[5] - (F1(X[4]) ^ sk[126])) & 0xFF
    Y[7] = X[7] ^ ((F0(X[6]) + sk[127]) & 0xFF)
    X = Y
    for i in range(30, -1, -1):
        Y = [0] * 8
        Y[0], Y[2], Y[4], Y[6] = X[1], X[3], X[5], X[7]
        Y[7] = X[0] ^ ((F0(Y[6]) + sk[4 * i + 3]) & 0xFF)
        Y[1] = (X[2] - (F1(Y[0]) ^ sk[4 * i])) & 0xFF
        Y[3] = X[4] ^ ((F0(Y[2]) + sk[4 * i + 1]) & 0xFF)
        Y[5] = (X[6] - (F1(Y[4]) ^ sk[4 * i + 2])) & 0xFF
        X = Y
    return bytes([(X[0] - wk[0]) & 0xFF, X[1], X[2] ^ wk[1], X[3],
                  (X[4] - wk[2]) & 0xFF, X[5], X[6] ^ wk[3], X[7]])


def ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    fn = encrypt_block if encrypt else decrypt_block
    return b"".join(fn(key, data[i: i + BLOCK]) for i in range(0, len(data), BLOCK))


def ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    """CTR with the whole 8-byte block as a big-endian counter (KISA's HIGHT-CTR)."""
    c0 = int.from_bytes(iv, "big")
    out = bytearray()
    for n, i in enumerate(range(0, len(data), BLOCK)):
        ks = encrypt_block(key, ((c0 + n) % (1 << 64)).to_bytes(BLOCK, "big"))
        out += bytes(a ^ b for a, b in zip(data[i: i + BLOCK], ks))
    return bytes(out)
