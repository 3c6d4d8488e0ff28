"""HIGHT (TTAS.KO-12.0040/R1; ISO/IEC 18033-3): 64-bit blocks, 128-bit keys, 32 rounds of 8-bit
additions, rotations and XORs.  Host key schedule and model; the kernels are kernels/hight_ref.cl
("reference") and kernels/hight.cl ("fast" = "ct"), kernels/hight_mul.cl ("mul" and its variants: the rotations by multiplication),
kernels/hight_bs.cl ("bs": bitsliced).

Byte order.  The specification numbers the key bytes MK0..MK15 and the block bytes P0..P7 (C0..C7)
and prints each value most significant byte first (MK15 ... MK0, P7 ... P0).  Our byte strings hold
them in index order, as KISA's reference code does: key[i] = MK_i, block[i] = P_i.  A vector
printed in the specification is therefore read backwards (the specification's key
"00 11 22 ... ff" is our key ff ee dd ... 00); KISA's reference code and its CTR vector use our
order directly.  CTR counts the whole 8-byte block as one big-endian integer (KISA's HIGHT-CTR).

Key schedule (the specification's section on key scheduling): whitening keys WK0..WK7
(WK_i = MK_{i+12} for i < 4, MK_{i-4} after) and 128 subkeys SK_{16i+j} = MK_{(j-i) mod 8} +
delta_{16i+j}, SK_{16i+j+8} = MK_{(j-i) mod 8 + 8} + delta_{16i+j+8}, the deltas from a 7-bit LFSR
(derived below, not copied).  Decryption uses the same keys, in reverse, so ``decrypt`` changes
nothing in the layouts:

* plain (``layout=None``, kernels/hight_ref.cl): the 136 bytes WK0..WK7, SK0..SK127 as 34
  little-endian words;
* ``"replicated"`` (kernels/hight.cl): 136 words, each of those bytes copied into all four bytes
  of a word (the fast kernel works on four blocks at once, one per byte lane);
* ``"lanes2"`` (kernels/hight_mul.cl): 136 words SK0..SK127 then WK0..WK7 (the round keys in
  round order, four to a 128-bit load), each byte b as b * 0x01000100 (the kernel's two lanes,
  bits 8..15 and 24..31, its guard bytes zero);
* ``"bitsliced"`` (kernels/hight_bs.cl): WK0..WK7, SK0..SK127, each byte as 8 masks (0 or
  0xffffffff, bit 0 first): 1088 words.

HIGHT has no tables: every kernel is constant-time (no secret-dependent index or branch).
"""

from __future__ import annotations

import numpy as np

from .base import BlockCipher, Implementation, byte_mask_table

ROUNDS = 32


def _deltas() -> bytes:
    """delta_0..delta_127: s_0..s_6 = 0,1,0,1,1,0,1; s_{i+6} = s_{i+2} ^ s_{i-1};
    delta_i = s_{i+6} .. s_i (7 bits, s_{i+6} most significant).  As a 7-bit register the LFSR
    is: next = (state >> 1) | (((state >> 3) ^ state) & 1) << 6."""
    out = bytearray()
    state = 0x5A
    for _ in range(128):
        out.append(state)
        state = (state >> 1) | ((((state >> 3) ^ state) & 1) << 6)
    return bytes(out)


DELTA = _deltas()


def schedule(key: bytes) -> bytearray:
    """WK0..WK7 then SK0..SK127 (136 bytes)."""
    mk = bytes(key)
    out = bytearray(mk[12:16] + mk[0:4])
    for i in range(8):
        for half in (0, 8):
            for j in range(8):
                out.append((mk[half + ((j - i) & 7)] + DELTA[16 * i + half + j]) & 0xFF)
    return out


#: schedule() as one gather: byte k of WK || SK is key byte _GATHER[k] plus _ADD[k] (mod 256)
_GATHER = np.array([12, 13, 14, 15, 0, 1, 2, 3] + [half + ((j - i) & 7) for i in range(8)
                                                   for half in (0, 8) for j in range(8)], dtype=np.intp)
_ADD = np.frombuffer(bytes(8) + DELTA, dtype=np.uint8)


#: each byte's 8 bitsliced masks (the "bitsliced" layout as one gather)
_BYTE_MASKS = byte_mask_table()


def schedule_array(key: bytes) -> np.ndarray:
    """:func:`schedule` as a uint8 array, in numpy (the one-shot call's key set-up)."""
    return np.frombuffer(key, dtype=np.uint8)[_GATHER] + _ADD   # (uint8: modulo 256)


def _f0(x):
    return ((x << 1) | (x >> 7)) ^ ((x << 2) | (x >> 6)) ^ ((x << 7) | (x >> 1))


def _f1(x):
    return ((x << 3) | (x >> 5)) ^ ((x << 4) | (x >> 4)) ^ ((x << 6) | (x >> 2))


def ecb_numpy(key: bytes, data: bytes, encrypt: bool) -> bytes:
    """HIGHT ECB over whole blocks, vectorised over the blocks (uint8 arithmetic wraps mod 2^8)."""
    ks = np.frombuffer(bytes(schedule(key)), dtype=np.uint8)
    wk, sk = ks[:8], ks[8:]
    x = np.frombuffer(bytes(data), dtype=np.uint8).reshape(-1, 8).T.copy()  # x[j] = byte j of each block
    with np.errstate(over="ignore"):
        if encrypt:
            x[0] += wk[0]; x[2] ^= wk[1]; x[4] += wk[2]; x[6] ^= wk[3]
            for r in range(ROUNDS):
                k = sk[4 * r: 4 * r + 4]
                x[1] += _f1(x[0]) ^ k[0]
                x[3] ^= _f0(x[2]) + k[1]
                x[5] += _f1(x[4]) ^ k[2]
                x[7] ^= _f0(x[6]) + k[3]
                if r < ROUNDS - 1:  # the byte rotation (none after the last round)
                    x = x[[7, 0, 1, 2, 3, 4, 5, 6]]
            x[0] += wk[4]; x[2] ^= wk[5]; x[4] += wk[6]; x[6] ^= wk[7]
        else:
            x[0] -= wk[4]; x[2] ^= wk[5]; x[4] -= wk[6]; x[6] ^= wk[7]
            for r in reversed(range(ROUNDS)):
                if r < ROUNDS - 1:
                    x = x[[1, 2, 3, 4, 5, 6, 7, 0]]
                k = sk[4 * r: 4 * r + 4]
                x[1] -= _f1(x[0]) ^ k[0]
                x[3] ^= _f0(x[2]) + k[1]
                x[5] -= _f1(x[4]) ^ k[2]
                x[7] ^= _f0(x[6]) + k[3]
            x[0] -= wk[0]; x[2] ^= wk[1]; x[4] -= wk[2]; x[6] ^= wk[3]
    return np.ascontiguousarray(x.T).tobytes()


def _rl(x: int, n: int) -> int:
    return ((x << n) | (x >> (8 - n))) & 0xFF


#: F0 and F1 on every byte, as tables (for the host's one-block path only; the kernels compute them)
_F0 = bytes(_rl(x, 1) ^ _rl(x, 2) ^ _rl(x, 7) for x in range(256))
_F1 = bytes(_rl(x, 3) ^ _rl(x, 4) ^ _rl(x, 6) for x in range(256))


def ecb_blocks(key: bytes, data: bytes, encrypt: bool) -> bytes:
    """HIGHT ECB with Python ints, one block after the other (faster than numpy for a few blocks:
    the oracle's CBC asks one block at a time)."""
    ks = schedule(key)
    wk, sk, f0, f1 = ks[:8], ks[8:], _F0, _F1
    out = bytearray()
    for i in range(0, len(data), 8):
        x = list(data[i: i + 8])
        if encrypt:
            x[0] = (x[0] + wk[0]) & 255; x[2] ^= wk[1]; x[4] = (x[4] + wk[2]) & 255; x[6] ^= wk[3]
            for r in range(ROUNDS):
                k = 4 * r
                x[1] = (x[1] + (f1[x[0]] ^ sk[k])) & 255
                x[3] ^= (f0[x[2]] + sk[k + 1]) & 255
                x[5] = (x[5] + (f1[x[4]] ^ sk[k + 2])) & 255
                x[7] ^= (f0[x[6]] + sk[k + 3]) & 255
                if r < ROUNDS - 1:
                    x = x[7:] + x[:7]
            x[0] = (x[0] + wk[4]) & 255; x[2] ^= wk[5]; x[4] = (x[4] + wk[6]) & 255; x[6] ^= wk[7]
        else:
            x[0] = (x[0] - wk[4]) & 255; x[2] ^= wk[5]; x[4] = (x[4] - wk[6]) & 255; x[6] ^= wk[7]
            for r in reversed(range(ROUNDS)):
                if r < ROUNDS - 1:
                    x = x[1:] + x[:1]
                k = 4 * r
                x[1] = (x[1] - (f1[x[0]] ^ sk[k])) & 255
                x[3] ^= (f0[x[2]] + sk[k + 1]) & 255
                x[5] = (x[5] - (f1[x[4]] ^ sk[k + 2])) & 255
                x[7] ^= (f0[x[6]] + sk[k + 3]) & 255
            x[0] = (x[0] - wk[0]) & 255; x[2] ^= wk[1]; x[4] = (x[4] - wk[2]) & 255; x[6] ^= wk[3]
        out += bytes(x)
    ks[:] = bytes(len(ks))
    return bytes(out)


def _fast(groups: int = 1, keys_local: int = 0, grid: str = "persistent") -> Implementation:
    """kernels/hight.cl: four blocks per 32-bit word (one per byte lane), ``groups`` such sets of
    four per work-item; subkeys replicated per lane, read from global memory or (keys_local=1)
    copied to work-group memory first."""
    return Implementation("hight.cl", batch=4 * groups, grid=grid, key_layout="replicated",
                          constant_time=True,
                          defines={"HIGHT_GROUPS": groups, "HIGHT_KEYS_LOCAL": keys_local})


#: SIMD within a register with keys in work-group memory: faster than from global memory
#: (docs/benchmarks.md 0a, 'The ISO block ciphers')
_FAST = _fast(keys_local=1)


def _mul(groups: int = 2) -> Implementation:
    """kernels/hight_mul.cl: two blocks per 32-bit word (byte lanes 1 and 3), F0/F1's rotations as
    multiplications (the FMA pipe's IMAD beside the integer pipe), ``groups`` pairs per work-item;
    subkeys in work-group memory, one 128-bit load per round."""
    return Implementation("hight_mul.cl", batch=2 * groups, key_layout="lanes2", constant_time=True,
                          defines={"HIGHT_GROUPS": groups})


_BS = Implementation("hight_bs.cl", batch=32, key_layout="bitsliced", constant_time=True)


class HIGHT(BlockCipher):
    name = "hight"
    block_size = 8
    key_sizes = (16,)
    variants = (("hight", 16, ("ecb", "cbc", "ctr")),)
    openssl_provider = None  # OpenSSL (and pyca) lack HIGHT
    implementations = {
        # the specification, byte by byte, one block per work-item
        "reference": Implementation("hight_ref.cl", grid="per-block", constant_time=True),
        # the default, the fastest on a GPU (docs/benchmarks.md 0c, 'The 64-bit ciphers' kernels'):
        # bitsliced (kernels/hight_bs.cl), 32 blocks per work-item, ripple-carry adders on planes
        "fast": _BS,
        # SIMD within a register: 4 blocks per work-item, byte-lane adds with carry masking
        "swar": _FAST,
        # variants of "fast" for tuning on a GPU
        "fast-2x4": _fast(groups=2, keys_local=1),
        "fast-global-keys": _fast(),
        # two blocks per word, rotations by multiplication: 2 pairs (4 blocks), 1 pair, 4 pairs
        "mul": _mul(2),
        "mul-1": _mul(1),
        "mul-4": _mul(4),
        "bs": _BS,
        # the same in work-groups of 128 (finer register allocation: more resident warps)
        "bs-128": Implementation("hight_bs.cl", batch=32, key_layout="bitsliced", constant_time=True,
                                 local_size=128),
        # no tables, no secret-dependent branch: "fast" is constant-time as it is
        "ct": _BS,
    }
    #: CBC encryption (one work-item): one pair of blocks per step, not 32 blocks
    serial_implementation = "mul-1"

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        self.check_key(key)
        ks = schedule_array(bytes(key))
        try:
            if layout is None:
                return ks.view("<u4").copy()
            if layout == "replicated":
                return (ks.astype("<u4") * np.uint32(0x01010101)).astype("<u4")
            if layout == "bitsliced":
                return _BYTE_MASKS.take(ks, axis=0).reshape(-1)
            if layout == "lanes2":
                b = np.concatenate([ks[8:], ks[:8]]).astype("<u4")
                out = (b * np.uint32(0x01000100)).astype("<u4")
                b.fill(0)
                return out
            raise ValueError(f"unknown HIGHT key layout {layout!r}")
        finally:
            ks.fill(0)

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        self.check_key(key)
        if len(data) % 8:
            raise ValueError("HIGHT ECB takes whole 8-byte blocks")
        if len(data) <= 8 * 16:  # (the oracle's CBC asks one block at a time)
            return ecb_blocks(key, data, encrypt)
        return ecb_numpy(key, data, encrypt)


CIPHER = HIGHT()
