"""AES-128/192/256 (FIPS 197): host key schedule; the kernel is kernels/aes.cl.

Round keys are laid out as little-endian words of the round-key bytes (the block convention of
ciphers/base.py).  The decryption schedule is the one of FIPS 197's *equivalent inverse cipher*
(section 5.3.5): the encryption round keys in reverse order, InvMixColumns applied to all but the
first and last, so decryption runs with the same table structure as encryption.
"""

from __future__ import annotations

import struct
import threading

from .base import BlockCipher, Implementation, bit_masks
from .._lazy import numpy_for

np = numpy_for(__name__)


def _sbox() -> bytes:
    # derived, not copied: multiplicative inverse in GF(2^8) followed by the affine map (FIPS 197 5.1.1)
    sbox = bytearray(256)
    p = q = 1
    while True:
        # p runs over the multiplicative group by 3 (a generator), q = p^-1 by 3^-1
        p = p ^ ((p << 1) & 0xFF) ^ (0x1B if p & 0x80 else 0)
        q ^= q << 1
        q ^= q << 2
        q ^= q << 4
        q &= 0xFF
        if q & 0x80:
            q ^= 0x09
        x = q ^ _rotl8(q, 1) ^ _rotl8(q, 2) ^ _rotl8(q, 3) ^ _rotl8(q, 4)
        sbox[p] = x ^ 0x63
        if p == 1:
            break
    sbox[0] = 0x63
    return bytes(sbox)


def _rotl8(x: int, s: int) -> int:
    return ((x << s) | (x >> (8 - s))) & 0xFF


def xtime(b: int) -> int:
    return ((b << 1) ^ 0x1B) & 0xFF if b & 0x80 else b << 1


def gmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = xtime(a)
        b >>= 1
    return r


SBOX = _sbox()
INV_SBOX = bytes(SBOX.index(i) for i in range(256))


#: the S-box placed in each byte of a word, and the round constants in the top byte (key schedule)
_S0, _S8, _S16, _S24 = (tuple(x << k for x in SBOX) for k in (0, 8, 16, 24))


def _rcons() -> tuple[int, ...]:
    out, r = [], 1
    for _ in range(10):
        out.append(r << 24)
        r = xtime(r)
    return tuple(out)


_RCON = _rcons()


def expand_key_words(key: bytes) -> list[int]:
    """FIPS 197 KeyExpansion: the (Nr+1)*4 round-key words as ints (big-endian byte order, as
    FIPS 197 writes them).  One round's words per step: the key schedule is on the path of every
    one-shot call."""
    nk = len(key) >> 2
    w = list(struct.unpack(f">{nk}I", key))
    if nk == 4:
        a, b, c, d = w
        for rc in _RCON:
            a ^= (_S24[(d >> 16) & 255] | _S16[(d >> 8) & 255] | _S8[d & 255] | _S0[d >> 24]) ^ rc
            b ^= a
            c ^= b
            d ^= c
            w += (a, b, c, d)
        return w
    n = 4 * (nk + 7)
    k = w[:]
    for rc in _RCON:
        t = k[-1]
        t = (_S24[(t >> 16) & 255] | _S16[(t >> 8) & 255] | _S8[t & 255] | _S0[t >> 24]) ^ rc
        for j in range(nk):
            if j == 4 and nk == 8:  # SubWord
                t = _S24[t >> 24] | _S16[(t >> 16) & 255] | _S8[(t >> 8) & 255] | _S0[t & 255]
            t ^= k[j]
            k[j] = t
        w += k
        if len(w) >= n:
            break
    del w[n:]
    k.clear()
    return w


def expand_key_bytes(key: bytes) -> bytearray:
    """FIPS 197 KeyExpansion; returns (Nr+1)*16 bytes of round keys."""
    w = expand_key_words(key)
    out = bytearray(struct.pack(f">{len(w)}I", *w))
    w.clear()
    return out


class _OpenSSLSchedule:
    """libcrypto's AES_set_encrypt_key / AES_set_decrypt_key (the same two schedules as ours:
    FIPS 197 and its equivalent inverse cipher), a few microseconds where Python takes 10-30: the
    key schedule is on the path of every one-shot device call.  Its words are laid out per
    platform (x86-64: the key's bytes as they are; the portable C code: big-endian words), so
    the first use compares both with ours for a known key and keeps the layout that matches in
    both directions, or none (then ours runs)."""

    def __init__(self):
        self.fns = None      # (encrypt, decrypt) ctypes functions, once checked
        self.swap = False
        self.checked = False
        self.lock = threading.Lock()

    def _raw(self, fns, key: bytes, decrypt: bool) -> np.ndarray | None:
        ks = np.zeros(61, dtype=np.uint32)  # AES_KEY: rd_key[60], rounds
        if fns[decrypt](key, 8 * len(key), ks.ctypes.data) != 0:
            ks.fill(0)
            return None
        # the round keys, a view (past them: zeros and the round count; the caller zeroes it)
        out = ks[: 4 * (len(key) // 4 + 7)]
        if self.swap:
            out.byteswap(inplace=True)
        return out

    def _check(self, aes) -> None:
        import ctypes

        from .._libcrypto import load

        fns = []

        def declare(lib) -> None:
            fns[:] = [getattr(lib, name) for name in ("AES_set_encrypt_key", "AES_set_decrypt_key")]
            for fn in fns:
                fn.restype, fn.argtypes = ctypes.c_int, (ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p)

        try:
            lib = load(declare)
        except Exception:  # (a library that cannot be loaded at all: ours runs)
            return
        if lib is None:  # no libcrypto, or one built without the low-level AES calls
            return
        key = bytes(range(32))
        for swap in (False, True):
            self.swap = swap
            if all((got := self._raw(fns, key[:n], d)) is not None
                   and got.tobytes() == aes._expand_py(key[:n], d).tobytes()
                   for n in (16, 24, 32) for d in (False, True)):
                self.fns = fns
                return

    def __call__(self, aes, key: bytes, decrypt: bool) -> np.ndarray | None:
        if not self.checked:
            with self.lock:
                if not self.checked:
                    self._check(aes)
                    self.checked = True
        return None if self.fns is None else self._raw(self.fns, key, decrypt)


_OPENSSL_SCHEDULE = _OpenSSLSchedule()


#: GF(2^8) products by InvMixColumns' coefficients, as tables (the decryption schedule's cost)
_M9, _M11, _M13, _M14 = (bytes(gmul(x, c) for x in range(256)) for c in (9, 11, 13, 14))


def _inv_mix_column(col) -> bytes:
    a0, a1, a2, a3 = col
    return bytes((
        _M14[a0] ^ _M11[a1] ^ _M13[a2] ^ _M9[a3],
        _M9[a0] ^ _M14[a1] ^ _M11[a2] ^ _M13[a3],
        _M13[a0] ^ _M9[a1] ^ _M14[a2] ^ _M11[a3],
        _M11[a0] ^ _M13[a1] ^ _M9[a2] ^ _M14[a3],
    ))


def _tables(tables: int, copies: int, *, prmt: int = 1, keys_in_regs: int = 1, mad_index: int = 0,
            mulhi: int = 0, batch: int = 1, grid: str = "persistent", last_permute: int = 0,
            ctr_slots: int = 0, at_once: int = 1, dp4a: int = 0,
            max_registers: int | None = None) -> Implementation:
    """An implementation of kernels/aes.cl (T-tables): its compile-time options (see that file).
    ``ctr_slots``: CTR on counter sub-tiles, that many counters a work-item takes from each, in
    work-groups of 256 (the other modes as without)."""
    defines = {"AES_TABLES": tables, "AES_COPIES": copies, "AES_PRMT": prmt,
               "AES_KEYS_IN_REGS": keys_in_regs, "AES_MAD_INDEX": mad_index, "AES_MULHI_BYTE3": mulhi}
    if dp4a:
        defines["AES_DP4A"] = dp4a
    if last_permute:
        defines["AES_LAST_PERMUTE"] = last_permute
    if ctr_slots:
        defines["AES_CTR_SLOTS"] = ctr_slots
    if at_once > 1:
        defines["AES_CTR_AT_ONCE"] = at_once
    return Implementation("aes.cl", batch=batch, grid=grid, defines=defines,
                          local_size=256 if ctr_slots else None, max_registers=max_registers)


class AES(BlockCipher):
    name = "aes"
    block_size = 16
    key_sizes = (16, 24, 32)
    variants = (("aes-128", 16, ("ecb", "cbc", "ctr", "xts")),
                ("aes-192", 24, ("ecb", "cbc", "ctr")),      # no XTS-AES-192 (IEEE 1619)
                ("aes-256", 32, ("ecb", "cbc", "ctr", "xts")))
    openssl_provider = "default"
    cpu_flag = "aes"   # AES-NI (x86), the ARMv8 crypto extension ("Features: aes")

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout == "bitsliced":
            # kernels/aes_bs.cl ("ct"): one 0 / 0xffffffff mask per bit of the schedule below
            # (encryption, or equivalent inverse cipher): word 128 r + 32 w + j = bit j of word 4 r + w;
            # then the schedule itself (for the CTR counter tiles' first and last round keys)
            ek = self.expand(key, decrypt)
            masks = bit_masks(ek)
            out = np.concatenate([masks, ek.astype("<u4")])
            ek.fill(0)
            masks.fill(0)
            return out
        if layout is not None:
            raise ValueError(f"unknown AES key layout {layout!r}")
        self.check_key(key)
        out = _OPENSSL_SCHEDULE(self, bytes(key), decrypt)
        return out if out is not None else self._expand_py(key, decrypt)

    def _expand_py(self, key: bytes, decrypt: bool) -> np.ndarray:
        """The schedules in Python (and the reference the OpenSSL ones are checked against)."""
        if not decrypt:  # (the words' bytes in memory order: the little-endian view of big-endian words)
            w = expand_key_words(bytes(key))
            out = np.array(w, dtype=">u4").view("<u4")
            w.clear()
            return out
        ek = expand_key_bytes(bytes(key))
        nr = len(key) // 4 + 6
        rounds = [ek[16 * r: 16 * r + 16] for r in range(nr + 1)][::-1]
        dk = bytearray(rounds[0])
        for r in range(1, nr):
            for c in range(4):
                dk += _inv_mix_column(rounds[r][4 * c: 4 * c + 4])
        dk += rounds[nr]
        for rk in rounds:
            rk[:] = bytes(len(rk))
        out = np.frombuffer(bytes(dk), dtype="<u4").copy()
        dk[:] = bytes(len(dk))
        ek[:] = bytes(len(ek))
        return out

    #: kernel implementations: "fast" is the default; the ablation steps feed `ciphergrid bench ablation`
    implementations = {
        # -- the practice ablation, each step adding one optimisation to the previous one ------
        "baseline": _tables(1, 1, prmt=0, keys_in_regs=0, grid="per-block"),
        "+byte-permutes": _tables(1, 1, keys_in_regs=0, grid="per-block"),
        "+replicated-tables": _tables(1, 32, keys_in_regs=0, grid="per-block"),
        "+keys-in-registers": _tables(1, 32, grid="per-block"),
        "+persistent-grid": _tables(1, 32),
        "+mad-index": _tables(1, 32, mad_index=1),
        "+mulhi-byte3": _tables(1, 32, mad_index=1, mulhi=1),
        # -- steps that did not pay, each on top of +persistent-grid (docs/benchmarks.md) ------
        "alt-two-tables": _tables(2, 16),
        "alt-2-blocks-per-item": _tables(2, 16, batch=2),
        # -- the default: the fastest on a GPU (docs/benchmarks.md 2, ablation) ---------------
        "fast": _tables(1, 32, mad_index=1),
        # -- steps on top of "fast" (kernels/aes.cl): each lookup's byte and address in one dp4a
        # (every mode); then CTR's counter sub-tiles (AES_CTR_SLOTS: rounds 1 and 2 shared by a
        # sub-tile's counters), the last round by byte permutes, registers capped at 64 (the
        # occupancy of "fast"), then at 40 (more warps: the compiler keeps the round keys, the
        # same for the whole warp, in uniform registers); alternatives to the last: fewer slots
        # a work-item, two slots side by side ----------------------------------------------------
        "+dp4a-index": _tables(1, 32, mad_index=1, dp4a=1),
        "+ctr-subtiles": _tables(1, 32, mad_index=1, dp4a=1, ctr_slots=8),
        "+last-round-permutes": _tables(1, 32, mad_index=1, dp4a=1, ctr_slots=8, last_permute=1),
        "+64-registers": _tables(1, 32, mad_index=1, dp4a=1, ctr_slots=8, last_permute=1,
                                 max_registers=64),
        "+40-registers": _tables(1, 32, mad_index=1, dp4a=1, ctr_slots=8, last_permute=1,
                                 max_registers=40),
        "alt-ctr-4-slots": _tables(1, 32, mad_index=1, dp4a=1, ctr_slots=4, last_permute=1,
                                   max_registers=40),
        "alt-ctr-2-at-once": _tables(1, 32, mad_index=1, dp4a=1, ctr_slots=8, last_permute=1,
                                     at_once=2, max_registers=40),
        # -- constant time: bitsliced, no tables (kernels/aes_bs.cl); CTR works on aligned counter
        # tiles of 32 x local_size blocks.  "ct-c": the compiler maps the S-box circuit; "ct"
        # (constant_time=True): the three-input cover spelled out in PTX on NVIDIA (elsewhere the
        # same C as ct-c) -----------------------------------------------------------------------
        "ct-c": Implementation("aes_bs.cl", batch=32, key_layout="bitsliced", local_size=256,
                               constant_time=True),
        "ct": Implementation("aes_bs.cl", batch=32, defines={"AES_BS_PTX": 1}, key_layout="bitsliced",
                             local_size=256, constant_time=True),
    }

    def defines(self, key_size: int) -> dict[str, int]:
        return {"AES_ROUNDS": key_size // 4 + 6}

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        c = Cipher(algorithms.AES(bytes(key)), modes.ECB())
        ctx = c.encryptor() if encrypt else c.decryptor()
        return ctx.update(bytes(data)) + ctx.finalize()


CIPHER = AES()
