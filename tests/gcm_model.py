"""A plain-Python AES-GCM written from NIST SP 800-38D (sections 6.3-7.2), for the nonce lengths
pyca/cryptography refuses (fewer than 8 or more than 128 bytes) and as a second opinion.  The
block cipher is pyca's AES-ECB (the reference of the AES kernels)."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

R = 0xE1 << 120


def gf_mul(x: int, y: int) -> int:
    """X . Y in GF(2^128), blocks as 128-bit integers of the block bytes (big-endian):
    SP 800-38D Algorithm 1 (bit 0 = the most significant bit)."""
    z, v = 0, y
    for i in range(127, -1, -1):
        if (x >> i) & 1:
            z ^= v
        v = (v >> 1) ^ R if v & 1 else v >> 1
    return z


def ghash(h: int, data: bytes) -> int:
    y = 0
    for i in range(0, len(data), 16):
        y = gf_mul(y ^ int.from_bytes(data[i:i + 16], "big"), h)
    return y


def _pad(b: bytes) -> bytes:
    return b + bytes(-len(b) % 16)


def _ecb(key: bytes):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return lambda block: enc.update(block)


def j0(key: bytes, iv: bytes) -> int:
    h = int.from_bytes(_ecb(key)(bytes(16)), "big")
    if len(iv) == 12:
        return int.from_bytes(iv + b"\0\0\0\1", "big")
    return ghash(h, _pad(iv) + bytes(8) + (8 * len(iv)).to_bytes(8, "big"))


def gctr(key: bytes, icb: int, data: bytes) -> bytes:
    e = _ecb(key)
    out = bytearray()
    cb = icb
    for i in range(0, len(data), 16):
        ks = e(cb.to_bytes(16, "big"))
        out += bytes(a ^ b for a, b in zip(data[i:i + 16], ks))
        cb = (cb & ~0xFFFFFFFF) | ((cb + 1) & 0xFFFFFFFF)   # inc32
    return bytes(out)


def _inc32(cb: int) -> int:
    return (cb & ~0xFFFFFFFF) | ((cb + 1) & 0xFFFFFFFF)


def tag(key: bytes, iv: bytes, aad: bytes, ct: bytes, tag_length: int = 16) -> bytes:
    h = int.from_bytes(_ecb(key)(bytes(16)), "big")
    s = ghash(h, _pad(aad) + _pad(ct) + (8 * len(aad)).to_bytes(8, "big")
              + (8 * len(ct)).to_bytes(8, "big"))
    t = gctr(key, j0(key, iv), s.to_bytes(16, "big"))
    return t[:tag_length]


def encrypt(key: bytes, iv: bytes, aad: bytes, pt: bytes, tag_length: int = 16):
    """(ciphertext, tag) of SP 800-38D Algorithm 4 (GCM-AE)."""
    ct = gctr(key, _inc32(j0(key, iv)), pt)
    return ct, tag(key, iv, aad, ct, tag_length)
