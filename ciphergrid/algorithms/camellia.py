"""Camellia-128/192/256 (RFC 3713): host key schedule; the kernels are kernels/camellia.cl ("fast",
SP tables in work-group memory) and kernels/camellia_ref.cl ("reference", byte S-boxes).

Camellia is an 18-round (128-bit key) or 24-round (192/256-bit key) Feistel network on two 64-bit
halves, with FL / FL^-1 layers after every six rounds and whitening before and after.  The key
schedule (RFC 3713 section 2.2) runs on the host (libcrypto's Camellia_set_key picked into this
order where it agrees with the Python here, checked once); the kernels receive the subkeys as 32-bit
*values* (the high half of a 64-bit subkey first), in the order the rounds use them:

    kw1 kw2 | k1 .. k(R) | ke1 .. ke(2F) | kw3 kw4           (R = 18 or 24 rounds, F = 2 or 3)

i.e. 2 words each, 52 words for a 128-bit key and 68 words otherwise.  Decryption is the same
network with the subkeys used in reverse order (RFC 3713 section 2.3.3): the decryption schedule is
kw3 kw4 | k(R) .. k1 | ke(2F) .. ke1 | kw1 kw2, so the kernels run one block function for both.
"""

from __future__ import annotations

import math

import numpy as np

from .. import modes
from .base import BlockCipher, Implementation, NativeSchedule

MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1
MASK128 = (1 << 128) - 1

#: SBOX1 of RFC 3713 section 2.4.4 (the RFC gives it as a table); SBOX2..SBOX4 are derived from it
#: below as the RFC defines them.
SBOX1 = bytes((
    112, 130, 44, 236, 179, 39, 192, 229, 228, 133, 87, 53, 234, 12, 174, 65,
    35, 239, 107, 147, 69, 25, 165, 33, 237, 14, 79, 78, 29, 101, 146, 189,
    134, 184, 175, 143, 124, 235, 31, 206, 62, 48, 220, 95, 94, 197, 11, 26,
    166, 225, 57, 202, 213, 71, 93, 61, 217, 1, 90, 214, 81, 86, 108, 77,
    139, 13, 154, 102, 251, 204, 176, 45, 116, 18, 43, 32, 240, 177, 132, 153,
    223, 76, 203, 194, 52, 126, 118, 5, 109, 183, 169, 49, 209, 23, 4, 215,
    20, 88, 58, 97, 222, 27, 17, 28, 50, 15, 156, 22, 83, 24, 242, 34,
    254, 68, 207, 178, 195, 181, 122, 145, 36, 8, 232, 168, 96, 252, 105, 80,
    170, 208, 160, 125, 161, 137, 98, 151, 84, 91, 30, 149, 224, 255, 100, 210,
    16, 196, 0, 72, 163, 247, 117, 219, 138, 3, 230, 218, 9, 63, 221, 148,
    135, 92, 131, 2, 205, 74, 144, 51, 115, 103, 246, 243, 157, 127, 191, 226,
    82, 155, 216, 38, 200, 55, 198, 59, 129, 150, 111, 75, 19, 190, 99, 46,
    233, 121, 167, 140, 159, 110, 188, 142, 41, 245, 249, 182, 47, 253, 180, 89,
    120, 152, 6, 106, 231, 70, 113, 186, 212, 37, 171, 66, 136, 162, 141, 250,
    114, 7, 185, 85, 248, 238, 172, 10, 54, 73, 42, 104, 60, 56, 241, 164,
    64, 40, 211, 123, 187, 201, 67, 193, 21, 227, 173, 244, 119, 199, 128, 158,
))


def _rotl8(x: int, s: int) -> int:
    return ((x << s) | (x >> (8 - s))) & 0xFF


#: RFC 3713 section 2.4.4: SBOX2[x] = SBOX1[x] <<< 1, SBOX3[x] = SBOX1[x] <<< 7, SBOX4[x] = SBOX1[x <<< 1]
SBOX2 = bytes(_rotl8(SBOX1[x], 1) for x in range(256))
SBOX3 = bytes(_rotl8(SBOX1[x], 7) for x in range(256))
SBOX4 = bytes(SBOX1[_rotl8(x, 1)] for x in range(256))


def _sigmas() -> tuple[int, ...]:
    """Sigma1..Sigma6 (RFC 3713 section 2.2): the second to seventeenth hexadecimal digits of the
    fractional parts of the square roots of the second to seventh primes (derived, not copied)."""
    out = []
    for p in (2, 3, 5, 7, 11, 13):
        # floor(sqrt(p) * 16^17) holds the integer part and 17 hex digits of the fraction
        frac = math.isqrt(p << (4 * 34)) & ((1 << 68) - 1)
        out.append(frac & MASK64)  # drop the first fractional digit, keep the next sixteen
    return tuple(out)


SIGMA = _sigmas()


def _f(x: int, k: int) -> int:
    """The F-function (RFC 3713 section 2.4.1) on 64-bit integers."""
    x ^= k
    t = [(x >> (56 - 8 * i)) & 0xFF for i in range(8)]
    t1, t2, t3, t4 = SBOX1[t[0]], SBOX2[t[1]], SBOX3[t[2]], SBOX4[t[3]]
    t5, t6, t7, t8 = SBOX2[t[4]], SBOX3[t[5]], SBOX4[t[6]], SBOX1[t[7]]
    y = (t1 ^ t3 ^ t4 ^ t6 ^ t7 ^ t8, t1 ^ t2 ^ t4 ^ t5 ^ t7 ^ t8, t1 ^ t2 ^ t3 ^ t5 ^ t6 ^ t8,
         t2 ^ t3 ^ t4 ^ t5 ^ t6 ^ t7, t1 ^ t2 ^ t6 ^ t7 ^ t8, t2 ^ t3 ^ t5 ^ t7 ^ t8,
         t3 ^ t4 ^ t5 ^ t6 ^ t8, t1 ^ t4 ^ t5 ^ t6 ^ t7)
    out = 0
    for b in y:
        out = (out << 8) | b
    return out


def _rotl128(x: int, n: int) -> int:
    n %= 128
    return ((x << n) | (x >> (128 - n))) & MASK128


#: where each subkey comes from (RFC 3713 section 2.2): (name, source, rotation); each 128-bit
#: rotated value gives two subkeys (its left and right 64-bit halves), listed as a pair of names
_SCHEDULE_128 = (
    (("kw1", "kw2"), "KL", 0), (("k1", "k2"), "KA", 0), (("k3", "k4"), "KL", 15),
    (("k5", "k6"), "KA", 15), (("ke1", "ke2"), "KA", 30), (("k7", "k8"), "KL", 45),
    (("k9", None), "KA", 45), ((None, "k10"), "KL", 60), (("k11", "k12"), "KA", 60),
    (("ke3", "ke4"), "KL", 77), (("k13", "k14"), "KL", 94), (("k15", "k16"), "KA", 94),
    (("k17", "k18"), "KL", 111), (("kw3", "kw4"), "KA", 111),
)
_SCHEDULE_256 = (
    (("kw1", "kw2"), "KL", 0), (("k1", "k2"), "KB", 0), (("k3", "k4"), "KR", 15),
    (("k5", "k6"), "KA", 15), (("ke1", "ke2"), "KR", 30), (("k7", "k8"), "KB", 30),
    (("k9", "k10"), "KL", 45), (("k11", "k12"), "KA", 45), (("ke3", "ke4"), "KL", 60),
    (("k13", "k14"), "KR", 60), (("k15", "k16"), "KB", 60), (("k17", "k18"), "KL", 77),
    (("ke5", "ke6"), "KA", 77), (("k19", "k20"), "KR", 94), (("k21", "k22"), "KA", 94),
    (("k23", "k24"), "KL", 111), (("kw3", "kw4"), "KB", 111),
)


def _two_rounds(x: int, f, s0: int, s1: int) -> int:
    """Two Feistel rounds of the key schedule on the 128-bit ``x`` with F-function ``f`` and
    the constants ``s0``, ``s1``."""
    d1, d2 = x >> 64, x & MASK64
    d2 ^= f(d1, s0)
    d1 ^= f(d2, s1)
    return (d1 << 64) | d2


def _key_values(key: bytes, f) -> tuple[int, int, int, int]:
    """KL, KR, KA and KB of RFC 3713 section 2.2 with F-function ``f`` (KB 0 for a 128-bit key,
    whose schedule takes none)."""
    n = len(key)
    kl = int.from_bytes(key[:16], "big")
    if n == 16:
        kr = 0
    elif n == 24:
        right = int.from_bytes(key[16:24], "big")
        kr = (right << 64) | (~right & MASK64)
    else:
        kr = int.from_bytes(key[16:32], "big")
    ka = _two_rounds(_two_rounds(kl ^ kr, f, SIGMA[0], SIGMA[1]) ^ kl, f, SIGMA[2], SIGMA[3])
    kb = 0 if n == 16 else _two_rounds(ka ^ kr, f, SIGMA[4], SIGMA[5])
    return kl, kr, ka, kb


def subkeys(key: bytes) -> dict[str, int]:
    """RFC 3713 section 2.2: the 64-bit subkeys kw1..kw4, k1..k18/24, ke1..ke4/6 by name."""
    n = len(key)
    if n not in (16, 24, 32):
        raise ValueError(f"Camellia takes a 16-, 24- or 32-byte key, got {n}")
    kl, kr, ka, kb = _key_values(key, _f)
    src = {"KL": kl, "KR": kr, "KA": ka, "KB": kb}
    out: dict[str, int] = {}
    for (left, right), name, rot in (_SCHEDULE_128 if n == 16 else _SCHEDULE_256):
        v = _rotl128(src[name], rot)
        if left:
            out[left] = v >> 64
        if right:
            out[right] = v & MASK64
    ka = kb = kl = kr = v = 0
    src.clear()
    return out


def rounds(key_size: int) -> int:
    return 18 if key_size == 16 else 24


#: the F-function as eight 8 -> 64-bit tables (S-box then P-function): F(x) is the XOR of
#: _SP[j][byte j of x], byte 0 the most significant.  Row i of _P_ROWS lists the t_j (1-based)
#: that output byte i of the P-function XORs (RFC 3713 section 2.4.1)
_P_ROWS = ((1, 3, 4, 6, 7, 8), (1, 2, 4, 5, 7, 8), (1, 2, 3, 5, 6, 8), (2, 3, 4, 5, 6, 7),
           (1, 2, 6, 7, 8), (2, 3, 5, 7, 8), (3, 4, 5, 6, 8), (1, 4, 5, 6, 7))
_SP = tuple(
    tuple(sum(box[b] << (56 - 8 * i) for i, row in enumerate(_P_ROWS) if j + 1 in row)
          for b in range(256))
    for j, box in enumerate((SBOX1, SBOX2, SBOX3, SBOX4, SBOX2, SBOX3, SBOX4, SBOX1)))


def _f_sp(x: int, k: int) -> int:
    """:func:`_f` through the SP tables."""
    x ^= k
    s1, s2, s3, s4, s5, s6, s7, s8 = _SP
    return (s1[x >> 56] ^ s2[(x >> 48) & 255] ^ s3[(x >> 40) & 255] ^ s4[(x >> 32) & 255]
            ^ s5[(x >> 24) & 255] ^ s6[(x >> 16) & 255] ^ s7[(x >> 8) & 255] ^ s8[x & 255])


def _plan(n: int, decrypt: bool) -> tuple[tuple, np.ndarray]:
    """For :func:`schedule_fast`: the (source, rotation) of each 128-bit value the schedule
    takes halves of, and the index of each kernel subkey among those halves (2 per value)."""
    table = _SCHEDULE_128 if n == 16 else _SCHEDULE_256
    srcs = ("KL", "KR", "KA", "KB")
    values = tuple((srcs.index(name), rot) for _, name, rot in table)
    where = {h: 2 * v + side for v, (pair, _, _) in enumerate(table)
             for side, h in enumerate(pair) if h}
    r = rounds(n)
    ks = [f"k{i}" for i in range(1, r + 1)]
    kes = [f"ke{i}" for i in range(1, r // 3 - 1)]
    pre, post = ["kw1", "kw2"], ["kw3", "kw4"]
    if decrypt:
        pre, post, ks, kes = post, pre, ks[::-1], kes[::-1]
    return values, np.array([where[h] for h in pre + ks + kes + post], dtype=np.intp)


_PLANS = {(n, d): _plan(n, d) for n in (16, 24, 32) for d in (False, True)}


def schedule_fast(key: bytes, decrypt: bool) -> np.ndarray:
    """:func:`schedule_words` as a little-endian uint32 array: KA and KB through the SP tables,
    every rotated value's bytes at once, the subkeys picked in the kernels' order by one gather
    (the one-shot call's key set-up runs this for every fresh key)."""
    n = len(key)
    src = _key_values(key, _f_sp)
    values, pick = _PLANS[(n, decrypt)]
    raw = bytearray()
    for s, rot in values:
        v = src[s]
        raw += (((v << rot) | (v >> (128 - rot))) & MASK128 if rot else v).to_bytes(16, "big")
    halves = np.frombuffer(raw, dtype=">u4").reshape(-1, 2)   # (high, low) of each subkey
    out = halves[pick].astype("<u4").reshape(-1)
    raw[:] = bytes(len(raw))
    src = v = None
    return out


def _camellia_call(fn, key: bytes, address: int) -> None:
    fn(key, 8 * len(key), address)


#: OpenSSL's Camellia_set_key: CAMELLIA_KEY's 68 words hold every subkey's two 32-bit values (its
#: own order; some twice), then the grand rounds; _native_layout finds where ours lie
_NATIVE = NativeSchedule("Camellia_set_key", ("c_char_p", "c_int", "c_void_p"), 69, _camellia_call)


def _native_layout(native) -> dict | None:
    """For each key size and direction, the index among CAMELLIA_KEY's words of each word of
    :func:`schedule_words` (the first place it lies in, on a probe key), where that pick gives
    :func:`schedule_words` for the probe and for other keys; None otherwise."""
    picks = {}
    for n in (16, 24, 32):
        probe = bytes((0x9E * i + 0x37 * n + 0x5B) & 0xFF for i in range(n))
        raw = native.raw(probe)
        for decrypt in (False, True):
            where = []
            for w in schedule_words(probe, decrypt):
                hits = np.flatnonzero(raw[:68] == w)
                if not len(hits):
                    return None
                where.append(int(hits[0]))
            picks[(n, decrypt)] = np.array(where, dtype=np.intp)
        raw.fill(0)
        for key in (bytes(n), b"\xff" * n, bytes(range(n)), bytes(range(200, 200 + n))):
            raw = native.raw(key)
            ok = all(raw[picks[(n, d)]].tolist() == schedule_words(key, d) for d in (False, True))
            raw.fill(0)
            if not ok:
                return None
    return picks


def schedule_words(key: bytes, decrypt: bool) -> list[int]:
    """The kernels' schedule (module docstring) as a list of 32-bit values."""
    sk = subkeys(key)
    r = rounds(len(key))
    ks = [sk[f"k{i}"] for i in range(1, r + 1)]
    kes = [sk[f"ke{i}"] for i in range(1, r // 3 - 1)]  # 2 per FL layer: 4 or 6
    pre, post = [sk["kw1"], sk["kw2"]], [sk["kw3"], sk["kw4"]]
    if decrypt:  # RFC 3713 section 2.3.3: the same network with the subkeys in reverse order
        pre, post, ks, kes = post, pre, ks[::-1], kes[::-1]
    words = []
    for k in pre + ks + kes + post:
        words += [k >> 32, k & MASK32]
    sk.clear()
    return words


def _pyca_camellia(key: bytes):
    try:  # (cryptography >= 43 keeps Camellia in "decrepit"; the old place warns)
        from cryptography.hazmat.decrepit.ciphers.algorithms import Camellia
    except ImportError:  # pragma: no cover - older cryptography
        from cryptography.hazmat.primitives.ciphers.algorithms import Camellia
    return Camellia(key)


def _fast(copies: int = 8, *, prmt: int = 1, keys_in_regs: int = 1, batch: int = 1,
          mad_index: int = 0, grid: str = "persistent") -> Implementation:
    """An implementation of kernels/camellia.cl: its compile-time options (see that file)."""
    return Implementation("camellia.cl", batch=batch, grid=grid, defines={
        "CAM_COPIES": copies, "CAM_PRMT": prmt, "CAM_KEYS_IN_REGS": keys_in_regs,
        "CAM_MAD_INDEX": mad_index})


class Camellia(BlockCipher):
    name = "camellia"
    block_size = 16
    key_sizes = (16, 24, 32)
    variants = (("camellia-128", 16, ("ecb", "cbc", "ctr", "xts")),
                ("camellia-192", 24, ("ecb", "cbc", "ctr")),      # XTS as for AES: 128 and 256
                ("camellia-256", 32, ("ecb", "cbc", "ctr", "xts")))
    openssl_provider = "default"

    implementations = {
        # straight from RFC 3713: byte S-boxes, 64-bit halves, keys read from device memory,
        # one block per work-item, no tuning
        "reference": Implementation("camellia_ref.cl", grid="per-block"),
        # SP tables in work-group memory (8 copies interleaved over the banks), keys in registers,
        # byte permutes, persistent grid (kernels/camellia.cl)
        "fast": _fast(8),
        # variants for the lead to measure on the GPU
        "fast-1copy": _fast(1),
        "fast-4copies": _fast(4),
        "fast-2-blocks-per-item": _fast(8, batch=2),
        "fast-mad-index": _fast(8, mad_index=1),     # lookup addresses as one multiply-add
    }

    def openssl_name(self, spec) -> str | None:
        # OpenSSL's default provider has camellia-{128,192,256}-{ecb,cbc,ctr} (same spelling as
        # ours) but no Camellia-XTS: the OpenSSL engine composes XTS from its ECB
        return None if spec.mode is modes.XTS else spec.name

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout is not None:
            raise ValueError(f"unknown Camellia key layout {layout!r}")
        self.check_key(key)
        if not _NATIVE.ready(_native_layout):
            return schedule_fast(bytes(key), decrypt)
        raw = _NATIVE.raw(bytes(key))
        out = raw[_NATIVE.found[(len(key), decrypt)]].astype("<u4", copy=False)
        raw.fill(0)
        return out

    def defines(self, key_size: int) -> dict[str, int]:
        return {"CAM_ROUNDS": rounds(key_size)}

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        from cryptography.hazmat.primitives.ciphers import Cipher
        from cryptography.hazmat.primitives.ciphers.modes import ECB

        c = Cipher(_pyca_camellia(bytes(key)), ECB())
        ctx = c.encryptor() if encrypt else c.decryptor()
        return ctx.update(bytes(data)) + ctx.finalize()


CIPHER = Camellia()
