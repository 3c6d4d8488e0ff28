"""Host side of the modes: argument checks, counters, XTS tweaks and stealing, PKCS#7 padding.

Nothing here touches a device; the engine and the pipeline call these helpers so that every
backend and every chunking of a message gives the bytes of a one-shot OpenSSL call.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .errors import InvalidArgument, InvalidIVSize, InvalidKey, InvalidLength, InvalidPadding
from .registry import CipherSpec

#: IEEE 1619-2018 and NIST SP 800-38E: at most 2^20 blocks in one XTS data unit
XTS_MAX_UNIT_BLOCKS = 1 << 20
XTS_SEGMENT_BLOCKS = 128  # blocks per tweak segment of the XTS kernels (modes.cl)


@dataclass(frozen=True)
class Params:
    """Everything a mode needs besides the data, validated."""

    spec: CipherSpec
    key: bytes
    iv: bytes | None
    encrypt: bool
    padding: str | None = None
    sector_size: int | None = None   # XTS data-unit size; None = the whole message is one unit
    start_sector: int = 0
    impl: str | None = None          # kernel implementation ("fast" default, "ct" constant-time...)

    @property
    def xts_iv(self) -> bytes:
        """The 16-byte tweak of unit 0 (sector mode: LE128(start_sector))."""
        if self.iv is not None:
            return self.iv
        return self.start_sector.to_bytes(16, "little")


def check(spec: CipherSpec, key, iv, encrypt: bool, padding=None, sector_size=None,
          start_sector=None, impl=None) -> Params:
    """Validate key, IV and options for ``spec``; raise the matching ciphergrid error."""
    from .errors import InvalidKeySize

    key = bytes(key) if key is not None else b""
    if len(key) != spec.key_len:
        what = f"{spec.key_len} bytes ({8 * spec.key_len} bits"
        what += ": two keys of %d bits)" % (8 * spec.key_size) if spec.mode == "xts" else ")"
        raise InvalidKeySize(f"{spec.name} takes a {what} key, got {len(key)} bytes")
    if padding not in (None, "pkcs7"):
        raise InvalidArgument(f"padding must be None or 'pkcs7', got {padding!r}")
    if padding and spec.mode not in ("ecb", "cbc"):
        raise InvalidArgument(f"padding applies to ECB and CBC only, not {spec.mode.upper()}")
    if sector_size is not None or start_sector is not None:
        if spec.mode != "xts":
            raise InvalidArgument("sector_size/start_sector apply to XTS only")
        if sector_size is None:
            raise InvalidArgument("start_sector needs sector_size")
        sector_size = int(sector_size)
        if sector_size < 16 or sector_size // 16 > XTS_MAX_UNIT_BLOCKS:
            raise InvalidArgument(
                f"sector_size must be between 16 and {16 * XTS_MAX_UNIT_BLOCKS} bytes, got {sector_size}")
        start_sector = int(start_sector or 0)
        if not 0 <= start_sector < 1 << 128:
            raise InvalidArgument("start_sector must be in [0, 2^128)")
        if iv is not None:
            raise InvalidIVSize("XTS with sector_size takes no iv: the tweak is the sector number")
    elif spec.iv_len == 0:
        if iv is not None:
            raise InvalidIVSize(f"{spec.name} takes no IV")
    else:
        if iv is None:
            raise InvalidIVSize(f"{spec.name} needs a {spec.iv_len}-byte IV")
        iv = bytes(iv)
        if len(iv) != spec.iv_len:
            raise InvalidIVSize(f"{spec.name} takes a {spec.iv_len}-byte IV, got {len(iv)} bytes")
    if spec.mode == "xts" and encrypt and key[: spec.key_size] == key[spec.key_size:]:
        raise InvalidKey("XTS keys must differ: key1 == key2 is refused (as OpenSSL does)")
    if impl is not None:
        spec.cipher.implementation(impl)  # raises for an unknown implementation
    return Params(spec, key, None if iv is None else bytes(iv), encrypt, padding,
                  sector_size, start_sector or 0, impl)


def check_length(p: Params, n: int) -> None:
    """Raise InvalidLength when ``n`` bytes (after padding, on encryption) do not suit the mode."""
    spec = p.spec
    bs = spec.block_size
    if spec.needs_whole_blocks and n % bs:
        hint = " (or use padding='pkcs7')" if not p.padding else ""
        raise InvalidLength(f"{spec.name} needs a multiple of {bs} bytes{hint}, got {n}")
    if spec.mode == "xts" and n:
        unit = p.sector_size or n
        last = n % unit or unit
        if last < 16:
            raise InvalidLength(f"XTS needs at least 16 bytes in each data unit, got {last}")
        if unit > 16 * XTS_MAX_UNIT_BLOCKS:
            raise InvalidLength(
                f"an XTS data unit holds at most 2^20 blocks (16 MiB), got {n} bytes; "
                "use sector_size to cut the data into units")
    elif spec.mode == "xts" and p.sector_size is None:
        raise InvalidLength("XTS needs at least 16 bytes, got 0")


# ---- PKCS#7 ----------------------------------------------------------------------------------

def pkcs7_pad(data: bytes, bs: int) -> bytes:
    k = bs - len(data) % bs
    return bytes(data) + bytes([k]) * k


def pkcs7_unpad(data: bytes, bs: int) -> bytes:
    if not data or len(data) % bs:
        raise InvalidPadding("bad decrypt: padded data is not a whole number of blocks")
    k = data[-1]
    if not 1 <= k <= bs or data[-k:] != bytes([k]) * k:
        raise InvalidPadding("bad decrypt: PKCS#7 padding does not check (wrong key or corrupt data)")
    return data[:-k]


# ---- CTR -------------------------------------------------------------------------------------

def ctr_at(iv: bytes, block: int) -> int:
    """The counter of block ``block``: big-endian IV + block, modulo 2^(8*len(iv))."""
    return (int.from_bytes(iv, "big") + block) % (1 << (8 * len(iv)))


# ---- XTS: GF(2^128) with x^128 + x^7 + x^2 + x + 1, little-endian byte order (IEEE 1619) --------

_MASK128 = (1 << 128) - 1


def gf_mulx(t: int, n: int = 1) -> int:
    """t * x^n."""
    for _ in range(n):
        t = ((t << 1) & _MASK128) ^ (0x87 if t >> 127 else 0)
    return t


def gf_mul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = gf_mulx(a)
        b >>= 1
    return r


def gf_pow_x(n: int) -> int:
    """x^n by square-and-multiply."""
    result, base = 1, 2
    while n:
        if n & 1:
            result = gf_mul(result, base)
        base = gf_mul(base, base)
        n >>= 1
    return result


@functools.lru_cache(maxsize=1)
def alpha_pow128_table() -> bytes:
    """x^(128 s) for s = 0 .. 2^20/128 - 1, as 16-byte little-endian values (128 KiB)."""
    x128 = gf_pow_x(128)  # = x^7 + x^2 + x + 1
    out = bytearray()
    v = 1
    for _ in range(XTS_MAX_UNIT_BLOCKS // XTS_SEGMENT_BLOCKS):
        out += v.to_bytes(16, "little")
        v = gf_mul(v, x128)
    return bytes(out)


@dataclass(frozen=True)
class XtsLayout:
    """How a message of ``n`` bytes is laid out in data units, for the kernels and the host tail."""

    bpu: int            # blocks per full unit
    spu: int            # tweak segments per unit
    kernel_blocks: int  # blocks the device handles (all but a stolen tail)
    tail_unit: int      # unit holding the stolen tail (-1: no stealing)
    tail_block: int     # first block (in the unit) handled by the host
    tail_start: int     # byte offset in the message where the host tail starts


def device_can_run(p: Params, n: int) -> bool:
    """Whether the device kernels handle this layout: XTS units that are not whole blocks need
    ciphertext stealing in every unit, which only the native engine does (one unit is fine)."""
    if p.spec.mode != "xts" or p.sector_size is None:
        return True
    return p.sector_size % 16 == 0 or n <= p.sector_size


def xts_layout(p: Params, n: int) -> XtsLayout:
    unit = p.sector_size or n
    bpu = max(1, unit // 16)
    spu = -(-bpu // XTS_SEGMENT_BLOCKS)
    last_len = n % unit or unit
    if last_len % 16:
        tail_unit = (n - 1) // unit
        m = last_len // 16
        tail_start = tail_unit * unit + 16 * (m - 1)
        return XtsLayout(bpu, spu, n // 16 - 1, tail_unit, m - 1, tail_start)
    return XtsLayout(bpu, spu, n // 16, -1, 0, n)


def xts_unit_tweak(p: Params, u: int) -> int:
    """T_u = E_K2(iv + u) as an integer (little-endian)."""
    ks = p.spec.key_size
    t_in = ((int.from_bytes(p.xts_iv, "little") + u) & _MASK128).to_bytes(16, "little")
    enc = p.spec.cipher.reference_ecb(p.key[ks:], t_in, True)
    return int.from_bytes(enc, "little")


def xts_tail(p: Params, lay: XtsLayout, tail: bytes) -> bytes:
    """Ciphertext stealing for the last full block and the partial block of a unit, on the host.

    ``tail`` is the message from ``lay.tail_start`` (16 + r bytes, 0 < r < 16).
    """
    cipher = p.spec.cipher
    ks = p.spec.key_size
    k1 = p.key[:ks]
    t = xts_unit_tweak(p, lay.tail_unit)
    t_a = gf_mul(t, gf_pow_x(lay.tail_block))
    t_b = gf_mulx(t_a)
    r = len(tail) - 16

    def xex(block: bytes, tw: int) -> bytes:
        tb = tw.to_bytes(16, "little")
        x = bytes(a ^ b for a, b in zip(block, tb))
        y = cipher.reference_ecb(k1, x, p.encrypt)
        return bytes(a ^ b for a, b in zip(y, tb))

    if p.encrypt:
        cc = xex(tail[:16], t_a)
        pp = tail[16:] + cc[r:]
        return xex(pp, t_b) + cc[:r]
    pp = xex(tail[:16], t_b)
    cc = tail[16:] + pp[r:]
    return xex(cc, t_a) + pp[:r]
