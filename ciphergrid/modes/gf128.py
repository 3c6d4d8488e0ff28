"""GF(2^128) with x^128 + x^7 + x^2 + x + 1 in the little-endian bit order of IEEE 1619 (XTS).

Values are Python ints read from 16 bytes little-endian (x^i at bit i).  GCM's field is the same
once its bit order is reflected (engines/scheduler/message_range.py folds GHASH partials with
:func:`mul4` and :func:`power`).
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


def mul4(a: int, b: int) -> int:
    """a b, four bits of b at a time (the same product as :func:`mul`, for many products)."""
    t = [0] * 16
    for i in range(1, 16):
        t[i] = t[i >> 1] << 1 if not i & 1 else t[i - 1] ^ a
    r = 0
    for shift in range(124, -4, -4):
        r = (r << 4) ^ t[(b >> shift) & 15]
    for _ in range(2):   # (x^128 = x^7 + x^2 + x + 1, folded twice: the first fold's top bits)
        hi = r >> 128
        r = (r & MASK128) ^ hi ^ (hi << 1) ^ (hi << 2) ^ (hi << 7)
    return r


def power(h: int, e: int) -> int:
    """h^e by square-and-multiply."""
    out = 1
    while e:
        if e & 1:
            out = mul4(out, h)
        h = mul4(h, h)
        e >>= 1
    return out


def pow_x(n: int) -> int:
    """x^n."""
    return power(2, n)


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
