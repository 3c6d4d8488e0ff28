"""GF(2^128) with x^128 + x^7 + x^2 + x + 1 in the little-endian bit order of IEEE 1619 (XTS).

Values are Python ints read from 16 bytes little-endian.  GCM's GHASH (bit-reflected order)
will live beside these when the AEADs come.
"""

from __future__ import annotations

import functools

MASK128 = (1 << 128) - 1


def mulx(t: int, n: int = 1) -> int:
    """t * x^n."""
    for _ in range(n):
        t = ((t << 1) & MASK128) ^ (0x87 if t >> 127 else 0)
    return t


def mul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = mulx(a)
        b >>= 1
    return r


def pow_x(n: int) -> int:
    """x^n by square-and-multiply."""
    result, base = 1, 2
    while n:
        if n & 1:
            result = mul(result, base)
        base = mul(base, base)
        n >>= 1
    return result


@functools.lru_cache(maxsize=4)
def pow_table(step: int, count: int) -> bytes:
    """x^(step * s) for s = 0 .. count - 1, as 16-byte little-endian values."""
    xs = pow_x(step)
    out = bytearray()
    v = 1
    for _ in range(count):
        out += v.to_bytes(16, "little")
        v = mul(v, xs)
    return bytes(out)
