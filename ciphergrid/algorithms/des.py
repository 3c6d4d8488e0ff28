"""DES (FIPS 46-3) and TDEA (NIST SP 800-67 Rev. 2): host key schedule and use policy; the kernels
are kernels/des_ref.cl ("reference"), kernels/des.cl ("sp-tables"), kernels/des_bs.cl ("fast",
"ct") and kernels/des_lut.cl ("lop3" and its variants).

One algorithm, "des", with three key sizes: 8 bytes (single DES), 16 bytes (2-key TDEA, K1 K2 and
K3 = K1) and 24 bytes (3-key TDEA, K1 K2 K3).  TDEA encryption is E_K3(D_K2(E_K1(x))), decryption
D_K1(E_K2(D_K3(y))) (SP 800-67 section 3.1).  The key's parity bits (the last bit of each byte) are
ignored, as OpenSSL and pyca/cryptography do.

The host sends the kernels one list of 16 x passes round keys (passes = 1 for DES, 3 for TDEA), in
the order the rounds use them: a DES decryption is the same network with the round keys reversed
(FIPS 46-3), so TDEA encryption is K1 forward, K2 reversed, K3 forward, and decryption K3 reversed,
K2 forward, K1 reversed.  Between two passes the final permutation and the next initial permutation
cancel; the kernels run 16 x passes rounds with the halves swapped between passes.

Key layouts (``expand``):

* ``None`` (the "reference" kernel): two words per round key, the 48 bits of K_n as FIPS 46-3
  numbers them: word 0 = bits 1..24, word 1 = bits 25..48 (bit 1 the most significant of each);
* ``"sp"`` (the "fast" kernel, des.cl): two words per round key, the eight 6-bit groups B_1..B_8
  of K_n in the low six bits of the bytes: word 0 = B_1 B_3 B_5 B_7 (bytes 3, 2, 1, 0), word 1 =
  B_2 B_4 B_6 B_8; the groups the rotated half-block words of des.cl present to the key.
* ``"bitsliced"`` (des_bs.cl): 48 masks per round, 0 or 0xffffffff, bit i + 1 of K_n;
* ``"lop3"`` (des_lut.cl): masks that keep the bitsliced halves XORed with key bits
  (``lop3_bits``): 800 words per pass + 32.

FIPS 46-3's tables and the bitsliced kernels' S-box circuits are in des_tables.py; the combined
S-box/P tables of the fast kernel are computed from S and P here (``sp_tables``).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import modes as _modes
from .base import BIRTHDAY_LIMIT, BIRTHDAY_REASON, BlockCipher, Implementation, UsePolicy
from .des_tables import P, PC1, PC2, SHIFTS, lop3_bits, permute, sbox

#: the weak and semi-weak DES keys (FIPS 74 section 3.6; NIST SP 800-67 Rev. 2 section 3.3.2), with
#: odd parity; compared with keys ignoring the parity bits
WEAK_KEYS = tuple(bytes.fromhex(h) for h in (
    "0101010101010101", "fefefefefefefefe", "e0e0e0e0f1f1f1f1", "1f1f1f1f0e0e0e0e"))
SEMI_WEAK_KEYS = tuple(bytes.fromhex(h) for h in (
    "01fe01fe01fe01fe", "fe01fe01fe01fe01", "1fe01fe00ef10ef1", "e01fe01ff10ef10e",
    "01e001e001f101f1", "e001e001f101f101", "1ffe1ffe0efe0efe", "fe1ffe1ffe0efe0e",
    "011f011f010e010e", "1f011f010e010e01", "e0fee0fef1fef1fe", "fee0fee0fef1fef1"))


_NO_PARITY = bytes(b & 0xFE for b in range(256))


def strip_parity(key: bytes) -> bytes:
    return bytes(key).translate(_NO_PARITY)


#: the weak and semi-weak keys without their parity bits (as encryption_policy compares keys)
_WEAK = frozenset(strip_parity(k) for k in WEAK_KEYS)
_SEMI_WEAK = frozenset(strip_parity(k) for k in SEMI_WEAK_KEYS)


def round_keys(key8: bytes) -> list[int]:
    """K_1 .. K_16 (48-bit ints) of one 8-byte DES key (FIPS 46-3, the key schedule)."""
    cd = permute(int.from_bytes(key8, "big"), PC1, 64)
    c, d = cd >> 28, cd & 0xFFFFFFF
    out = []
    for s in SHIFTS:
        c = ((c << s) | (c >> (28 - s))) & 0xFFFFFFF
        d = ((d << s) | (d >> (28 - s))) & 0xFFFFFFF
        out.append(permute((c << 28) | d, PC2, 56))
    c = d = cd = 0
    return out


def _rotl32(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


def sp_tables() -> list[list[int]]:
    """The fast kernel's tables: SP_j[x] = P(S_j(x) in bits 4j+1..4j+4), held rotated left by one
    like the half-block words (des.cl); 8 tables of 64 words, indexed by the 6-bit group."""
    return [[_rotl32(permute(sbox(j, x) << (28 - 4 * j), P, 32), 1) for x in range(64)]
            for j in range(8)]


def key_bit_rounds() -> list[list[int]]:
    """Where each bit of K_1 .. K_16 comes from: ``[n][e]`` is the key bit (0 = the most
    significant bit of the 8-byte key) that is bit e + 1 of K_(n+1).  The schedule only selects
    key bits (PC-1, the left shifts, PC-2), never combines them."""
    cd = [t - 1 for t in PC1]
    c, d = cd[:28], cd[28:]
    out = []
    for s in SHIFTS:
        c, d = c[s:] + c[:s], d[s:] + d[:s]
        out.append([(c + d)[t - 1] for t in PC2])
    return out


#: the layouts' words: one mask word (0 / 0xffffffff) per bit, or 32 bits per word (bit 31 first)
_MASK_LAYOUTS = ("bitsliced", "lop3")


@functools.lru_cache(maxsize=None)
def _plan(key_len: int, decrypt: bool, layout: str | None) -> np.ndarray:
    """Where each bit of a layout comes from, for every key of ``key_len`` bytes: every layout's
    bit is the XOR of some of the key's bits (the schedule selects bits; "lop3" XORs two), so the
    schedule is traced once on sets of key-bit numbers and ``expand`` is a gather.  Returns the
    key-bit numbers as an index array (terms, bits), ``8 * key_len`` (a zero bit) padding the
    rows of fewer terms.  Holds no key material."""
    rounds = key_bit_rounds()
    passes = []
    for i, k in enumerate([0] if key_len == 8 else [0, 1, 2 if key_len == 24 else 0]):
        ks = [[frozenset((64 * k + b,)) for b in rnd] for rnd in rounds]
        # TDEA: E D E (encryption), D E D (decryption); pass i decrypts when i is odd, flipped
        if (i % 2 == 1) != decrypt:
            ks.reverse()
        passes.append(ks)
    if decrypt:
        passes.reverse()
    keys = [k for ks in passes for k in ks]
    zero = frozenset()
    if layout == "lop3":
        bits = lop3_bits(keys, zero)
    elif layout == "bitsliced":
        bits = [b for k in keys for b in k]
    else:
        bits = []
        for k in keys:
            if layout == "sp":       # B_1 B_3 B_5 B_7, then B_2 B_4 B_6 B_8, in the bytes' low six bits
                for first in (0, 1):
                    for j in range(first, 8, 2):
                        bits += [zero, zero] + k[6 * j: 6 * j + 6]
            else:                    # bits 1..24, then 25..48, in the low 24 bits
                bits += [zero] * 8 + k[:24] + [zero] * 8 + k[24:]
    terms = max(len(b) for b in bits)
    plan = np.full((terms, len(bits)), 8 * key_len, dtype=np.intp)
    for i, b in enumerate(bits):
        plan[: len(b), i] = sorted(b)
    plan.setflags(write=False)
    return plan


def _sp(copies: int, *, keys_in_regs: int = 1, batch: int = 1) -> Implementation:
    """An implementation of kernels/des.cl (SP tables): its compile-time options (see that file)."""
    return Implementation("des.cl", key_layout="sp", batch=batch,
                          defines={"DES_COPIES": copies, "DES_KEYS_IN_REGS": keys_in_regs})


def split_key(key: bytes) -> list[bytes]:
    """The DES keys of a key bundle: [K] for DES, [K1, K2, K1] for 2-key TDEA, [K1, K2, K3]."""
    if len(key) == 8:
        return [key]
    k1, k2 = key[:8], key[8:16]
    return [k1, k2, key[16:24] if len(key) == 24 else k1]


_BS = Implementation("des_bs.cl", batch=32, key_layout="bitsliced", constant_time=True)


def _lop3(max_registers: int | None = None, **defines) -> Implementation:
    """An implementation of kernels/des_lut.cl (LOP3 S-box circuits, keys folded into the state)."""
    return Implementation("des_lut.cl", batch=32, key_layout="lop3", constant_time=True,
                          max_registers=max_registers, defines=defines)


_LOP3_VEC = _lop3(DES_LUT_VEC_KEYS=1)


class DES(BlockCipher):
    name = "des"
    block_size = 8
    key_sizes = (8, 16, 24)
    variants = (("des", 8, ("ecb", "cbc", "ctr")),
                ("des-ede", 16, ("ecb", "cbc", "ctr")),
                ("des-ede3", 24, ("ecb", "cbc", "ctr")))
    #: des-ecb|cbc are in OpenSSL 3's legacy provider (loaded on demand by
    #: engines/openssl/libcrypto.evp_cipher), des-ede-ecb|cbc and des-ede3-ecb|cbc in its default
    #: one; OpenSSL has no CTR for any of them
    openssl_provider = "legacy"

    implementations = {
        # FIPS 46-3 as written: the permutations and S-boxes bit by bit, one block per work-item
        "reference": Implementation("des_ref.cl", grid="per-block"),
        # the default, the fastest on a GPU (docs/benchmarks.md 0c, 'The 64-bit ciphers' kernels'):
        # des_lut.cl with a round's key masks as vector loads, bitsliced, constant time
        "fast": _LOP3_VEC,
        "ct": _LOP3_VEC,
        # the first bitsliced kernel (kernels/des_bs.cl): S-boxes as AND/OR/XOR circuits
        "bitsliced-v1": _BS,
        # des_lut.cl: published three-input-gate S-box circuits (177 gates a round against ~540),
        # keys folded into the state (16 key XORs a round against 48); bitsliced, constant time
        "lop3": _lop3(),
        "lop3-c": _lop3(DES_LUT_ASM=0),                    # gates as C on CUDA too (no inline PTX)
        "lop3-vec-keys": _LOP3_VEC,                       # a round's 48 masks as 12 vector loads
        "lop3-regs128": _lop3(128),                       # 16 warps per SM (255: 8)
        "lop3-regs168": _lop3(168),                       # 12 warps per SM
        "lop3-vec-keys-regs168": _lop3(168, DES_LUT_VEC_KEYS=1),
        "lop3-vec-keys-regs128": _lop3(128, DES_LUT_VEC_KEYS=1),
        # SP tables in work-group memory (16 copies, 32 KiB), swap-move IP/FP, rotated halves, keys
        # in registers, persistent grid (kernels/des.cl), and its variants
        "sp-tables": _sp(16),
        "alt-8-copies": _sp(8),                        # 16 KiB (32 copies, 64 KiB, exceed CUDA's 48 KiB)
        "alt-keys-in-local": _sp(16, keys_in_regs=0),  # keys broadcast from work-group memory
        "alt-2-blocks-per-item": _sp(16, batch=2),
    }

    def openssl_name(self, spec) -> str | None:
        return spec.name if spec.mode in (_modes.ECB, _modes.CBC) else None  # no CTR in OpenSSL

    def defines(self, key_size: int) -> dict[str, int]:
        return {"DES_PASSES": 1 if key_size == 8 else 3}

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout not in (None, "sp", "bitsliced", "lop3"):
            raise ValueError(f"unknown DES key layout {layout!r}")
        self.check_key(key)
        plan = _plan(len(key), bool(decrypt), layout)
        raw = np.zeros(len(key) + 1, dtype=np.uint8)     # (the byte after the key: the zero bits)
        raw[:-1] = np.frombuffer(key, dtype=np.uint8)
        bits = np.unpackbits(raw)
        out = bits.take(plan[0])                         # (bytes of 0 / 1 until the end)
        for row in plan[1:]:
            term = bits.take(row)
            out ^= term
            term.fill(0)
        if layout in _MASK_LAYOUTS:
            words = np.empty(out.size, dtype="<u4")
            np.negative(out, out=words, dtype=np.uint32)   # 0 / 0xffffffff
        else:
            packed = np.packbits(out.reshape(-1, 32), axis=1)
            words = packed.view(">u4").reshape(-1).astype("<u4")
            packed.fill(0)
        for arr in (raw, bits, out):
            arr.fill(0)
        return words

    def encryption_policy(self, key: bytes) -> UsePolicy:
        """Encryption with any DES-family cipher is refused unless allow_weak: NIST withdrew DES
        (FIPS 46-3) in 2005, SP 800-131A Rev. 2 disallows 2-key TDEA encryption and 3-key TDEA
        encryption after 2023, and NIST withdrew SP 800-67 Rev. 2 (TDEA) on 2024-01-01.  With
        allow_weak: one warning, and the limits under one key (bundle) in one call or stream:
        2^20 blocks for TDEA (SP 800-67 Rev. 2 for 3-key TDEA, Rev. 1 for 2-key), 2^32 for single
        DES and bundles that reduce to it (K1 == K2 or K2 == K3: the birthday bound).  A weak or
        semi-weak DES key adds a line to the warning."""
        self.check_key(key)
        keys = split_key(strip_parity(key))
        weak, semi = _WEAK, _SEMI_WEAK
        marks = tuple("weak" if k in weak else "semi-weak" if k in semi else None for k in keys)
        kind = "des" if len(keys) == 1 else None
        same = None
        if kind is None:
            k1, k2, k3 = keys
            kind = "reduced" if k1 == k2 or k2 == k3 else "2-key" if k1 == k3 else "3-key"
            same = "K1 == K2" if k1 == k2 else "K2 == K3"
        keys.clear()
        return _policy(kind, len(key), marks, same)

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
        from cryptography.hazmat.primitives.ciphers import Cipher, modes

        self.check_key(key)
        k = b"".join(split_key(bytes(key)))
        c = Cipher(TripleDES(k * 3 if len(k) == 8 else k), modes.ECB())  # (24 bytes: no deprecation)
        ctx = c.encryptor() if encrypt else c.decryptor()
        return ctx.update(bytes(data)) + ctx.finalize()


@functools.lru_cache(maxsize=None)
def _policy(kind: str, key_len: int, marks: tuple, same: str | None) -> UsePolicy:
    """DES.encryption_policy of a key of ``key_len`` bytes whose bundle is of ``kind`` ("des",
    "reduced": K1 == K2 or K2 == K3 as ``same`` says, "2-key", "3-key"), each of its keys
    ``marks``'d "weak", "semi-weak" or None.  Holds no key material."""
    notes = []
    for i, what in enumerate(marks):
        if what:
            where = "the key" if len(marks) == 1 else f"K{i + 1}"
            notes.append(f"{where} is a {what} DES key (FIPS 74, SP 800-67 Rev. 2 section 3.3.2)")
    des = "single DES (a 56-bit key), withdrawn by NIST in 2005 (FIPS 46-3)"
    if kind in ("des", "reduced"):
        refusal = des if kind == "des" else (
            f"this {key_len}-byte TDEA key bundle has {same} (ignoring the parity bits): it is "
            f"{des}")
        limit, reason = BIRTHDAY_LIMIT, BIRTHDAY_REASON
        notes.insert(0, "64-bit blocks: rekey well before 2^32 blocks (32 GiB) under one key "
                        "(the birthday bound, Sweet32)")
    else:
        refusal = ("2-key TDEA is disallowed for encryption (SP 800-131A Rev. 2)" if kind == "2-key"
                   else "TDEA encryption is disallowed after 2023 (SP 800-131A Rev. 2; NIST "
                        "withdrew SP 800-67 Rev. 2 on 2024-01-01)")
        limit = 1 << 20
        reason = f"SP 800-67 Rev. {2 if kind == '3-key' else 1}'s limit for {kind} TDEA"
        notes.insert(0, f"at most 2^20 blocks (8 MiB) under one key bundle ({reason})")
    return UsePolicy(warning="; ".join(notes), refusal=refusal, block_limit=limit,
                     over_limit_refused=True, limit_reason=reason)


CIPHER = DES()
