"""PKCS#7 padding (RFC 5652 section 6.3), as OpenSSL pads ECB and CBC by default."""

from __future__ import annotations

from ..errors import InvalidPadding

#: the padding names ciphergrid accepts (None: no padding)
SCHEMES = ("pkcs7",)


def padded_len(n: int, bs: int) -> int:
    """Bytes after padding ``n`` bytes (always at least one byte of padding)."""
    return (n // bs + 1) * bs


def pad(data: bytes, bs: int) -> bytes:
    k = bs - len(data) % bs
    return bytes(data) + bytes([k]) * k


def unpad(data: bytes, bs: int) -> bytes:
    if not data or len(data) % bs:
        raise InvalidPadding("bad decrypt: padded data is not a whole number of blocks")
    k = data[-1]
    if not 1 <= k <= bs or data[-k:] != bytes([k]) * k:
        raise InvalidPadding("bad decrypt: PKCS#7 padding does not check (wrong key or corrupt data)")
    return data[:-k]
