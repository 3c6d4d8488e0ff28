"""AES-128/192/256 (FIPS 197): host key schedule; the kernel is kernels/aes.cl.

Round keys are laid out as little-endian words of the round-key bytes (the block convention of
ciphers/base.py).  The decryption schedule is the one of FIPS 197's *equivalent inverse cipher*
(section 5.3.5): the encryption round keys in reverse order, InvMixColumns applied to all but the
first and last, so decryption runs with the same table structure as encryption.
"""

from __future__ import annotations

import numpy as np

from .. import registry
from .base import BlockCipher


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


def expand_key_bytes(key: bytes) -> bytearray:
    """FIPS 197 KeyExpansion; returns (Nr+1)*16 bytes of round keys."""
    nk = len(key) // 4
    nr = nk + 6
    w = bytearray(key)
    rcon = 1
    for i in range(nk, 4 * (nr + 1)):
        t = w[4 * i - 4: 4 * i]
        if i % nk == 0:
            t = bytearray((SBOX[t[1]] ^ rcon, SBOX[t[2]], SBOX[t[3]], SBOX[t[0]]))
            rcon = xtime(rcon)
        elif nk > 6 and i % nk == 4:
            t = bytearray(SBOX[b] for b in t)
        prev = w[4 * (i - nk): 4 * (i - nk) + 4]
        w += bytes(a ^ b for a, b in zip(prev, t))
    return w


def _inv_mix_column(col: bytes) -> bytes:
    a0, a1, a2, a3 = col
    return bytes((
        gmul(a0, 14) ^ gmul(a1, 11) ^ gmul(a2, 13) ^ gmul(a3, 9),
        gmul(a0, 9) ^ gmul(a1, 14) ^ gmul(a2, 11) ^ gmul(a3, 13),
        gmul(a0, 13) ^ gmul(a1, 9) ^ gmul(a2, 14) ^ gmul(a3, 11),
        gmul(a0, 11) ^ gmul(a1, 13) ^ gmul(a2, 9) ^ gmul(a3, 14),
    ))


class AES(BlockCipher):
    name = "aes"
    block_size = 16
    key_sizes = (16, 24, 32)
    kernel_file = "aes.cl"

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout == "bitsliced":
            # kernels/aes_bs.cl ("ct"): one 0 / 0xffffffff mask per bit of the schedule below
            # (encryption, or equivalent inverse cipher): word 128 r + 32 w + j = bit j of word 4 r + w
            ek = self.expand(key, decrypt)
            bits = (ek[:, None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)
            out = (np.uint32(0) - bits).astype("<u4").reshape(-1)
            ek.fill(0)
            bits.fill(0)
            return out
        if layout is not None:
            raise ValueError(f"unknown AES key layout {layout!r}")
        self.check_key(key)
        ek = expand_key_bytes(bytes(key))
        nr = len(key) // 4 + 6
        if decrypt:
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
        else:
            out = np.frombuffer(bytes(ek), dtype="<u4").copy()
        ek[:] = bytes(len(ek))
        return out

    #: kernel implementations: "fast" is the default; the ablation steps feed `ciphergrid bench ablation`
    implementations = {
        # -- the practice ablation, each step adding one optimisation to the previous one ------
        "baseline": {"file": "aes.cl", "batch": 1, "grid": "per-block", "defines": {
            "AES_TABLES": 1, "AES_COPIES": 1, "AES_PRMT": 0, "AES_KEYS_IN_REGS": 0}},
        "+byte-permutes": {"file": "aes.cl", "batch": 1, "grid": "per-block", "defines": {
            "AES_TABLES": 1, "AES_COPIES": 1, "AES_PRMT": 1, "AES_KEYS_IN_REGS": 0}},
        "+replicated-tables": {"file": "aes.cl", "batch": 1, "grid": "per-block", "defines": {
            "AES_TABLES": 1, "AES_COPIES": 32, "AES_PRMT": 1, "AES_KEYS_IN_REGS": 0}},
        "+keys-in-registers": {"file": "aes.cl", "batch": 1, "grid": "per-block", "defines": {
            "AES_TABLES": 1, "AES_COPIES": 32, "AES_PRMT": 1, "AES_KEYS_IN_REGS": 1}},
        "+persistent-grid": {"file": "aes.cl", "batch": 1, "grid": "persistent", "defines": {
            "AES_TABLES": 1, "AES_COPIES": 32, "AES_PRMT": 1, "AES_KEYS_IN_REGS": 1}},
        "+two-tables": {"file": "aes.cl", "batch": 1, "grid": "persistent", "defines": {
            "AES_TABLES": 2, "AES_COPIES": 16, "AES_PRMT": 1, "AES_KEYS_IN_REGS": 1}},
        "+2-blocks-per-item": {"file": "aes.cl", "batch": 2, "grid": "persistent", "defines": {
            "AES_TABLES": 2, "AES_COPIES": 16, "AES_PRMT": 1, "AES_KEYS_IN_REGS": 1}},
        # -- the default: the fastest measured on the H200 (docs/benchmarks.md) ---------------
        "fast": {"file": "aes.cl", "batch": 1, "grid": "persistent", "defines": {
            "AES_TABLES": 1, "AES_COPIES": 32, "AES_PRMT": 1, "AES_KEYS_IN_REGS": 1}},
        # -- register-capped variants measured against "fast" --------------------------------
        **{f"tune-{nt}t{cp}-{tag}": {
            "file": "aes.cl", "batch": 1, "grid": "persistent",
            "defines": {"AES_TABLES": nt, "AES_COPIES": cp, "AES_PRMT": 1, **d}}
           for nt, cp in ((1, 32), (2, 16))
           for tag, d in (("kg", {"AES_KEYS_IN_REGS": 0}),
                          ("lb5", {"AES_KEYS_IN_REGS": 1, "CG_MIN_BLOCKS": 5, "CG_LOCAL_SIZE": 256}),
                          ("lb6", {"AES_KEYS_IN_REGS": 1, "CG_MIN_BLOCKS": 6, "CG_LOCAL_SIZE": 256}),
                          ("kg-lb6", {"AES_KEYS_IN_REGS": 0, "CG_MIN_BLOCKS": 6, "CG_LOCAL_SIZE": 256}))},
        "ct": {"file": "aes_bs.cl", "batch": 32, "grid": "persistent", "defines": {},
               "key_layout": "bitsliced"},
        "ct-ptx": {"file": "aes_bs.cl", "batch": 32, "grid": "persistent",
                   "defines": {"AES_BS_PTX": 1}, "key_layout": "bitsliced"},
    }

    def defines(self, key_size: int) -> dict[str, int]:
        return {"AES_ROUNDS": key_size // 4 + 6}

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        c = Cipher(algorithms.AES(bytes(key)), modes.ECB())
        ctx = c.encryptor() if encrypt else c.decryptor()
        return ctx.update(bytes(data)) + ctx.finalize()


CIPHER = AES()
registry.register(CIPHER, [("aes-128", 16), ("aes-256", 32)])
registry.register(CIPHER, [("aes-192", 24)], modes=("ecb", "cbc", "ctr"))  # no XTS-AES-192 (IEEE 1619)
