"""MISTY1 (RFC 2994; ISO/IEC 18033-3): 64-bit blocks, a 128-bit key, 8 rounds.

The key schedule runs here, on the host; the kernels are kernels/misty1.cl ("reference": the RFC's
FO/FI/FL on the S-boxes in constant memory, the RFC's expanded key EK[0..31]; "fast": fused FI
tables in work-group memory, the round keys rearranged per round in registers) and
kernels/misty1_bs.cl ("bs": bitsliced, S7/S9 as Boolean circuits generated here, constant-time).

Byte order.  MISTY1 is specified on big-endian 32-bit halves (D0 = bytes 0..3, D1 = bytes 4..7,
C = D1 || D0) made of 16-bit big-endian quarters; the kernels receive little-endian words (the
contract of base.py) and byte-swap them.  Round keys are 16-bit values, one per 32-bit word.

Key layouts (``expand``):

* ``None`` (the plain one): the RFC's EK[0..31] of section 2.2 -- EK[0..7] the key as 16-bit
  big-endian words, EK[8+i] = FI(EK[i], EK[(i+1) % 8]) (the K' of the ISO text), EK[16+i] its low
  9 bits, EK[24+i] its high 7 bits.
* ``"rounds"`` (the fast kernel's): per FO function k = 0..7 the seven words KO1 KO2 KO3 KO4 KI1
  KI2 KI3, then per FL function k = 0..9 the two words KL1 KL2 (76 words), so that the unrolled
  kernel indexes a register array with constants.

Decryption uses the same schedules (FLINV and the reversed round order are the kernel's).

``reference_ecb`` is a host model of the cipher (one block at a time with Python ints for short
inputs, numpy-vectorised for long ones), written on the "rounds" layout with the fused FI the fast
kernel uses; the test suite checks it against its own RFC-literal model (tests/misty1_model.py).
"""

from __future__ import annotations

import struct

import numpy as np

from .base import BlockCipher, Implementation, byte_mask_table

# RFC 2994 section 2.3 ("Data Randomizing Part"), S7TABLE and S9TABLE.  Both are permutations
# with differential uniformity 2 (tests/test_misty1.py checks both properties and the table
# against a second transcription kept in the tests).
S7 = (
    0x1b, 0x32, 0x33, 0x5a, 0x3b, 0x10, 0x17, 0x54, 0x5b, 0x1a, 0x72, 0x73, 0x6b, 0x2c, 0x66, 0x49,
    0x1f, 0x24, 0x13, 0x6c, 0x37, 0x2e, 0x3f, 0x4a, 0x5d, 0x0f, 0x40, 0x56, 0x25, 0x51, 0x1c, 0x04,
    0x0b, 0x46, 0x20, 0x0d, 0x7b, 0x35, 0x44, 0x42, 0x2b, 0x1e, 0x41, 0x14, 0x4b, 0x79, 0x15, 0x6f,
    0x0e, 0x55, 0x09, 0x36, 0x74, 0x0c, 0x67, 0x53, 0x28, 0x0a, 0x7e, 0x38, 0x02, 0x07, 0x60, 0x29,
    0x19, 0x12, 0x65, 0x2f, 0x30, 0x39, 0x08, 0x68, 0x5f, 0x78, 0x2a, 0x4c, 0x64, 0x45, 0x75, 0x3d,
    0x59, 0x48, 0x03, 0x57, 0x7c, 0x4f, 0x62, 0x3c, 0x1d, 0x21, 0x5e, 0x27, 0x6a, 0x70, 0x4d, 0x3a,
    0x01, 0x6d, 0x6e, 0x63, 0x18, 0x77, 0x23, 0x05, 0x26, 0x76, 0x00, 0x31, 0x2d, 0x7a, 0x7f, 0x61,
    0x50, 0x22, 0x11, 0x06, 0x47, 0x16, 0x52, 0x4e, 0x71, 0x3e, 0x69, 0x43, 0x34, 0x5c, 0x58, 0x7d,
)

S9 = (
    0x1c3, 0x0cb, 0x153, 0x19f, 0x1e3, 0x0e9, 0x0fb, 0x035, 0x181, 0x0b9, 0x117, 0x1eb, 0x133, 0x009, 0x02d, 0x0d3,
    0x0c7, 0x14a, 0x037, 0x07e, 0x0eb, 0x164, 0x193, 0x1d8, 0x0a3, 0x11e, 0x055, 0x02c, 0x01d, 0x1a2, 0x163, 0x118,
    0x14b, 0x152, 0x1d2, 0x00f, 0x02b, 0x030, 0x13a, 0x0e5, 0x111, 0x138, 0x18e, 0x063, 0x0e3, 0x0c8, 0x1f4, 0x01b,
    0x001, 0x09d, 0x0f8, 0x1a0, 0x16d, 0x1f3, 0x01c, 0x146, 0x07d, 0x0d1, 0x082, 0x1ea, 0x183, 0x12d, 0x0f4, 0x19e,
    0x1d3, 0x0dd, 0x1e2, 0x128, 0x1e0, 0x0ec, 0x059, 0x091, 0x011, 0x12f, 0x026, 0x0dc, 0x0b0, 0x18c, 0x10f, 0x1f7,
    0x0e7, 0x16c, 0x0b6, 0x0f9, 0x0d8, 0x151, 0x101, 0x14c, 0x103, 0x0b8, 0x154, 0x12b, 0x1ae, 0x017, 0x071, 0x00c,
    0x047, 0x058, 0x07f, 0x1a4, 0x134, 0x129, 0x084, 0x15d, 0x19d, 0x1b2, 0x1a3, 0x048, 0x07c, 0x051, 0x1ca, 0x023,
    0x13d, 0x1a7, 0x165, 0x03b, 0x042, 0x0da, 0x192, 0x0ce, 0x0c1, 0x06b, 0x09f, 0x1f1, 0x12c, 0x184, 0x0fa, 0x196,
    0x1e1, 0x169, 0x17d, 0x031, 0x180, 0x10a, 0x094, 0x1da, 0x186, 0x13e, 0x11c, 0x060, 0x175, 0x1cf, 0x067, 0x119,
    0x065, 0x068, 0x099, 0x150, 0x008, 0x007, 0x17c, 0x0b7, 0x024, 0x019, 0x0de, 0x127, 0x0db, 0x0e4, 0x1a9, 0x052,
    0x109, 0x090, 0x19c, 0x1c1, 0x028, 0x1b3, 0x135, 0x16a, 0x176, 0x0df, 0x1e5, 0x188, 0x0c5, 0x16e, 0x1de, 0x1b1,
    0x0c3, 0x1df, 0x036, 0x0ee, 0x1ee, 0x0f0, 0x093, 0x049, 0x09a, 0x1b6, 0x069, 0x081, 0x125, 0x00b, 0x05e, 0x0b4,
    0x149, 0x1c7, 0x174, 0x03e, 0x13b, 0x1b7, 0x08e, 0x1c6, 0x0ae, 0x010, 0x095, 0x1ef, 0x04e, 0x0f2, 0x1fd, 0x085,
    0x0fd, 0x0f6, 0x0a0, 0x16f, 0x083, 0x08a, 0x156, 0x09b, 0x13c, 0x107, 0x167, 0x098, 0x1d0, 0x1e9, 0x003, 0x1fe,
    0x0bd, 0x122, 0x089, 0x0d2, 0x18f, 0x012, 0x033, 0x06a, 0x142, 0x0ed, 0x170, 0x11b, 0x0e2, 0x14f, 0x158, 0x131,
    0x147, 0x05d, 0x113, 0x1cd, 0x079, 0x161, 0x1a5, 0x179, 0x09e, 0x1b4, 0x0cc, 0x022, 0x132, 0x01a, 0x0e8, 0x004,
    0x187, 0x1ed, 0x197, 0x039, 0x1bf, 0x1d7, 0x027, 0x18b, 0x0c6, 0x09c, 0x0d0, 0x14e, 0x06c, 0x034, 0x1f2, 0x06e,
    0x0ca, 0x025, 0x0ba, 0x191, 0x0fe, 0x013, 0x106, 0x02f, 0x1ad, 0x172, 0x1db, 0x0c0, 0x10b, 0x1d6, 0x0f5, 0x1ec,
    0x10d, 0x076, 0x114, 0x1ab, 0x075, 0x10c, 0x1e4, 0x159, 0x054, 0x11f, 0x04b, 0x0c4, 0x1be, 0x0f7, 0x029, 0x0a4,
    0x00e, 0x1f0, 0x077, 0x04d, 0x17a, 0x086, 0x08b, 0x0b3, 0x171, 0x0bf, 0x10e, 0x104, 0x097, 0x15b, 0x160, 0x168,
    0x0d7, 0x0bb, 0x066, 0x1ce, 0x0fc, 0x092, 0x1c5, 0x06f, 0x016, 0x04a, 0x0a1, 0x139, 0x0af, 0x0f1, 0x190, 0x00a,
    0x1aa, 0x143, 0x17b, 0x056, 0x18d, 0x166, 0x0d4, 0x1fb, 0x14d, 0x194, 0x19a, 0x087, 0x1f8, 0x123, 0x0a7, 0x1b8,
    0x141, 0x03c, 0x1f9, 0x140, 0x02a, 0x155, 0x11a, 0x1a1, 0x198, 0x0d5, 0x126, 0x1af, 0x061, 0x12e, 0x157, 0x1dc,
    0x072, 0x18a, 0x0aa, 0x096, 0x115, 0x0ef, 0x045, 0x07b, 0x08d, 0x145, 0x053, 0x05f, 0x178, 0x0b2, 0x02e, 0x020,
    0x1d5, 0x03f, 0x1c9, 0x1e7, 0x1ac, 0x044, 0x038, 0x014, 0x0b1, 0x16b, 0x0ab, 0x0b5, 0x05a, 0x182, 0x1c8, 0x1d4,
    0x018, 0x177, 0x064, 0x0cf, 0x06d, 0x100, 0x199, 0x130, 0x15a, 0x005, 0x120, 0x1bb, 0x1bd, 0x0e0, 0x04f, 0x0d6,
    0x13f, 0x1c4, 0x12a, 0x015, 0x006, 0x0ff, 0x19b, 0x0a6, 0x043, 0x088, 0x050, 0x15f, 0x1e8, 0x121, 0x073, 0x17e,
    0x0bc, 0x0c2, 0x0c9, 0x173, 0x189, 0x1f5, 0x074, 0x1cc, 0x1e6, 0x1a8, 0x195, 0x01f, 0x041, 0x00d, 0x1ba, 0x032,
    0x03d, 0x1d1, 0x080, 0x0a8, 0x057, 0x1b9, 0x162, 0x148, 0x0d9, 0x105, 0x062, 0x07a, 0x021, 0x1ff, 0x112, 0x108,
    0x1c0, 0x0a9, 0x11d, 0x1b0, 0x1a6, 0x0cd, 0x0f3, 0x05c, 0x102, 0x05b, 0x1d9, 0x144, 0x1f6, 0x0ad, 0x0a5, 0x03a,
    0x1cb, 0x136, 0x17f, 0x046, 0x0e1, 0x01e, 0x1dd, 0x0e6, 0x137, 0x1fa, 0x185, 0x08c, 0x08f, 0x040, 0x1b5, 0x0be,
    0x078, 0x000, 0x0ac, 0x110, 0x15e, 0x124, 0x002, 0x1bc, 0x0a2, 0x0ea, 0x070, 0x1fc, 0x116, 0x15c, 0x04c, 0x1c2,
)

ROUNDS = 8          # RFC 2994: "8-rounds of MISTY1 is recommended and used in most cases"
N_FO = ROUNDS       # one FO function per round
N_FL = ROUNDS + 2   # two FL functions every other round, and two after the last round

# The fused FI (kernels/misty1.cl, fast): with x = hi9 || lo7, the first half of FI
#   d9 = S9[hi] ^ lo,  d7 = S7[lo] ^ (d9 & 0x7f)
# is  (d7 << 9) | d9 = A[hi] ^ B[lo]  with  A[v] = (S9[v] & 0x7f) << 9 | S9[v],  B[u] = (S7[u] ^ u) << 9 | u.
FUSED_A = tuple(((v & 0x7F) << 9) | v for v in S9)
FUSED_B = tuple(((s ^ u) << 9) | u for u, s in enumerate(S7))


def _fi(x: int, ki: int) -> int:
    """FI on 16-bit ints (the fused form): three lookups."""
    y = FUSED_A[x >> 7] ^ FUSED_B[x & 0x7F] ^ ki
    return (y & 0xFE00) | (S9[y & 0x1FF] ^ (y >> 9))


def expanded_key(key: bytes) -> list[int]:
    """RFC 2994 section 2.2: EK[0..31] (16-bit values)."""
    ek = [(key[2 * i] << 8) | key[2 * i + 1] for i in range(8)]
    kp = [_fi(ek[i], ek[(i + 1) % 8]) for i in range(8)]
    return ek + kp + [k & 0x1FF for k in kp] + [k >> 9 for k in kp]


_KEY16 = struct.Struct(">8H")


def expanded_key_fast(key: bytes) -> list[int]:
    """:func:`expanded_key` with FI inlined (the one-shot call's key set-up)."""
    ek = _KEY16.unpack(key)
    fa, fb, s9 = FUSED_A, FUSED_B, S9
    kp = []
    for x, ki in zip(ek, ek[1:] + ek[:1]):
        y = fa[x >> 7] ^ fb[x & 0x7F] ^ ki
        kp.append((y & 0xFE00) | (s9[y & 0x1FF] ^ (y >> 9)))
    out = [*ek, *kp, *[k & 0x1FF for k in kp], *[k >> 9 for k in kp]]
    kp.clear()
    x = y = ki = 0
    return out


def round_keys(ek: list[int]) -> list[int]:
    """The "rounds" layout (76 values) from EK: the indices of RFC 2994's FO and FL."""
    out = []
    for k in range(N_FO):
        out += [ek[k], ek[(k + 2) % 8], ek[(k + 7) % 8], ek[(k + 4) % 8],            # KO1..KO4
                ek[(k + 5) % 8 + 8], ek[(k + 1) % 8 + 8], ek[(k + 3) % 8 + 8]]        # KI1..KI3
    for k in range(N_FL):
        if k % 2 == 0:
            out += [ek[k // 2], ek[(k // 2 + 6) % 8 + 8]]                             # KL1, KL2
        else:
            out += [ek[((k - 1) // 2 + 2) % 8 + 8], ek[((k - 1) // 2 + 4) % 8]]
    return out


#: round_keys' indices into EK (the "rounds" layout as a gather)
_ROUND_KEYS = np.array(round_keys(list(range(32))), dtype=np.intp)
#: each byte's 8 bitsliced masks (the "bitsliced" layout as one gather)
_BYTE_MASKS = byte_mask_table()

# --------------------------------------------------------------------------- the host model

def _fo(x: int, rk: list[int], k: int) -> int:
    ko1, ko2, ko3, ko4, ki1, ki2, ki3 = rk[7 * k: 7 * k + 7]
    t0, t1 = x >> 16, x & 0xFFFF
    t0 = _fi(t0 ^ ko1, ki1) ^ t1
    t1 = _fi(t1 ^ ko2, ki2) ^ t0
    t0 = _fi(t0 ^ ko3, ki3) ^ t1
    return ((t1 ^ ko4) << 16) | t0


def _fl(x: int, rk: list[int], k: int) -> int:
    kl1, kl2 = rk[7 * N_FO + 2 * k: 7 * N_FO + 2 * k + 2]
    x ^= (x >> 16) & kl1
    return x ^ (((x | kl2) << 16) & 0xFFFFFFFF)


def _flinv(x: int, rk: list[int], k: int) -> int:
    kl1, kl2 = rk[7 * N_FO + 2 * k: 7 * N_FO + 2 * k + 2]
    x ^= ((x | kl2) << 16) & 0xFFFFFFFF
    return x ^ ((x >> 16) & kl1)


def _encrypt_block(rk: list[int], d0: int, d1: int) -> tuple[int, int]:
    for r in range(0, ROUNDS, 2):
        d0 = _fl(d0, rk, r)
        d1 = _fl(d1, rk, r + 1) ^ _fo(d0, rk, r)
        d0 ^= _fo(d1, rk, r + 1)
    return _fl(d1, rk, ROUNDS + 1), _fl(d0, rk, ROUNDS)     # C = D1 || D0


def _decrypt_block(rk: list[int], c0: int, c1: int) -> tuple[int, int]:
    d1, d0 = _flinv(c0, rk, ROUNDS + 1), _flinv(c1, rk, ROUNDS)
    for r in range(ROUNDS - 2, -1, -2):
        d0 ^= _fo(d1, rk, r + 1)
        d1 ^= _fo(d0, rk, r)
        d0, d1 = _flinv(d0, rk, r), _flinv(d1, rk, r + 1)
    return d0, d1


_A = np.array(FUSED_A, dtype=np.uint32)
_B = np.array(FUSED_B, dtype=np.uint32)
_S9 = np.array(S9, dtype=np.uint32)
_M16, _M9, _M7 = np.uint32(0xFFFF), np.uint32(0x1FF), np.uint32(0x7F)


def _fi_np(x, ki):
    y = _A[x >> np.uint32(7)] ^ _B[x & _M7] ^ np.uint32(ki)
    return (y & np.uint32(0xFE00)) | (_S9[y & _M9] ^ (y >> np.uint32(9)))


def _fo_np(x, rk, k):
    ko1, ko2, ko3, ko4, ki1, ki2, ki3 = (np.uint32(v) for v in rk[7 * k: 7 * k + 7])
    t0, t1 = x >> np.uint32(16), x & _M16
    t0 = _fi_np(t0 ^ ko1, ki1) ^ t1
    t1 = _fi_np(t1 ^ ko2, ki2) ^ t0
    t0 = _fi_np(t0 ^ ko3, ki3) ^ t1
    return ((t1 ^ ko4) << np.uint32(16)) | t0


def _fl_np(x, rk, k, inverse=False):
    kl1, kl2 = (np.uint32(v) for v in rk[7 * N_FO + 2 * k: 7 * N_FO + 2 * k + 2])
    if inverse:
        x = x ^ ((x | kl2) << np.uint32(16))
        return x ^ ((x >> np.uint32(16)) & kl1)
    x = x ^ ((x >> np.uint32(16)) & kl1)
    return x ^ ((x | kl2) << np.uint32(16))


def _ecb_np(rk: list[int], data: bytes, encrypt: bool) -> bytes:
    w = np.frombuffer(bytes(data), dtype=">u4").astype(np.uint32).reshape(-1, 2)
    a, b = w[:, 0], w[:, 1]
    if encrypt:
        d0, d1 = a, b
        for r in range(0, ROUNDS, 2):
            d0 = _fl_np(d0, rk, r)
            d1 = _fl_np(d1, rk, r + 1) ^ _fo_np(d0, rk, r)
            d0 = d0 ^ _fo_np(d1, rk, r + 1)
        o0, o1 = _fl_np(d1, rk, ROUNDS + 1), _fl_np(d0, rk, ROUNDS)
    else:
        d1, d0 = _fl_np(a, rk, ROUNDS + 1, True), _fl_np(b, rk, ROUNDS, True)
        for r in range(ROUNDS - 2, -1, -2):
            d0 = d0 ^ _fo_np(d1, rk, r + 1)
            d1 = d1 ^ _fo_np(d0, rk, r)
            d0, d1 = _fl_np(d0, rk, r, True), _fl_np(d1, rk, r + 1, True)
        o0, o1 = d0, d1
    return np.stack([o0, o1], axis=1).astype(">u4").tobytes()


# ---- the bitsliced kernel's S-box circuits (kernels/misty1_bs.cl, generated from S7/S9 here) -----

#: variable preference of the circuit generator for S9 and S7 (ties of the split variable go to the
#: earlier one; the best of 1,500 random orders each: 66 and 58 gates)
BS_ORDERS = {"S9": (1, 5, 0, 3, 6, 7, 8, 4, 2), "S7": (5, 3, 1, 2, 6, 4, 0)}


def _anf(table, n: int, bit: int) -> frozenset:
    """Output bit ``bit`` of an n-bit S-box in algebraic normal form: the set of its monomials, each
    a mask of input bits (0: the constant 1); the binary Moebius transform of its truth table."""
    a = [(table[x] >> bit) & 1 for x in range(1 << n)]
    for i in range(n):
        for x in range(1 << n):
            if x >> i & 1:
                a[x] ^= a[x ^ (1 << i)]
    return frozenset(m for m in range(1 << n) if a[m])


def sbox_circuit(name: str) -> tuple[list[tuple[str, str]], list[str]]:
    """S9 or S7 as a circuit on x[0..n-1] (x[i] = input bit i, the least significant first): every
    output's ANF split recursively as h ^ (x_v & g) on the input that occurs in the most nonlinear
    monomials (ties: BS_ORDERS), equal subfunctions shared across outputs, linear parts as XOR
    chains, constants as complements.  Each gate is a function of at most three inputs (one LOP3).
    Returns the gates (name, C expression) and the n output expressions (bit 0 first)."""
    table, n = (S9, 9) if name == "S9" else (S7, 7)
    rank = {v: r for r, v in enumerate(BS_ORDERS[name])}
    memo: dict = {}
    gates: list[tuple[str, str]] = []

    def emit(expr: str) -> str:
        gates.append((f"t{len(gates)}", expr))
        return gates[-1][0]

    def build(poly: frozenset) -> tuple[str | None, bool]:
        """(gate or input, complemented) whose value is ``poly``; (None, c) for the constant c."""
        neg = 0 in poly
        p = frozenset(m for m in poly if m)
        if not p:
            return None, neg
        if p in memo:
            nm, ng = memo[p]
            return nm, ng ^ neg
        if all(m & (m - 1) == 0 for m in p):                 # linear: an XOR chain
            # from the largest linear part already built (each prefix of a chain is kept)
            done = max((q for q in memo if len(q) > 1 and q < p and all(m & (m - 1) == 0 for m in q)),
                       key=lambda q: (len(q), sorted(q)), default=frozenset())
            rest = sorted((m for m in p - done), key=lambda m: rank[m.bit_length() - 1])
            if done:
                cur = memo[done][0]
            else:
                done, rest = frozenset(rest[:1]), rest[1:]
                cur = f"x[{min(done).bit_length() - 1}]"
            for i in range(0, len(rest), 2):
                done = done | frozenset(rest[i: i + 2])
                cur = emit(" ^ ".join([cur] + [f"x[{m.bit_length() - 1}]" for m in rest[i: i + 2]]))
                memo[done] = (cur, False)
            return cur, neg
        count = [sum(1 for m in p if m & (m - 1) and m >> i & 1) for i in range(n)]
        v = max(range(n), key=lambda i: (count[i], -rank[i]))
        gn, gneg = build(frozenset(m & ~(1 << v) for m in p if m >> v & 1))
        hn, hneg = build(frozenset(m for m in p if not m >> v & 1))
        term = f"x[{v}]" if gn is None else f"x[{v}] & {'~' if gneg else ''}{gn}"
        if hn is None:
            r = (term if gn is None else emit(term), hneg)
        else:
            r = (emit(f"{hn} ^ {term}" if gn is None else f"{hn} ^ ({term})"), hneg)
        memo[p] = r
        return r[0], r[1] ^ neg

    outs = []
    for b in range(n):
        nm, neg = build(_anf(table, n, b))
        outs.append(("~0u" if neg else "0u") if nm is None else ("~" if neg else "") + nm)
    return gates, outs


def bitsliced_sboxes_c() -> str:
    """The C of misty1_bs.cl's S-boxes, between its GENERATED markers."""
    lines = ["/* BEGIN GENERATED by ciphergrid.algorithms.misty1.bitsliced_sboxes_c() */"]
    for name in ("S9", "S7"):
        gates, outs = sbox_circuit(name)
        lines.append(f"/* {name}: {len(gates)} gates of at most three inputs */")
        lines.append(f"DEVICE_FN void misty1_bs_{name.lower()}(const uint *x, uint *y)")
        lines.append("{")
        lines += [f"    const uint {g} = {e};" for g, e in gates]
        lines += [f"    y[{b}] = {o};" for b, o in enumerate(outs)]
        lines.append("}")
    lines.append("/* END GENERATED */")
    return "\n".join(lines) + "\n"


def _impl(fast: bool, *, batch: int = 1, grid: str = "persistent", copies: int = 8,
          keys_in_regs: int = 1) -> Implementation:
    """An implementation of kernels/misty1.cl: its compile-time options (see that file)."""
    if not fast:
        return Implementation("misty1.cl", defines={"MISTY1_FAST": 0}, grid="per-block")
    return Implementation("misty1.cl", batch=batch, grid=grid, key_layout="rounds", defines={
        "MISTY1_FAST": 1, "MISTY1_COPIES": copies, "MISTY1_KEYS_IN_REGS": keys_in_regs})


_BS = Implementation("misty1_bs.cl", batch=32, key_layout="bitsliced", constant_time=True)


class MISTY1(BlockCipher):
    name = "misty1"
    block_size = 8
    key_sizes = (16,)
    variants = (("misty1", 16, ("ecb", "cbc", "ctr")),)
    openssl_provider = None   # neither OpenSSL nor pyca/cryptography has MISTY1

    implementations = {
        # the RFC's FO/FI/FL, S7/S9 in constant memory, EK from device memory, one block per item
        "reference": _impl(False),
        # the default, the fastest on a GPU (docs/benchmarks.md 0c, 'The 64-bit ciphers' kernels'):
        # bitsliced (kernels/misty1_bs.cl), 32 blocks per work-item, S7/S9 as Boolean circuits,
        # no table
        "fast": _BS,
        "ct": _BS,
        # fused FI tables in work-group memory (8 copies), keys in registers, persistent grid
        "tables": _impl(True),
        # the same with 16 copies (40 KiB): two lanes per pair of banks instead of four per four
        "fast-c16": _impl(True, copies=16),
        "bs": _BS,
        # the same in work-groups of 128: at ~150 registers, 3 groups (12 warps) per SM instead of
        # one group of 256 (8 warps)
        "bs-128": Implementation("misty1_bs.cl", batch=32, key_layout="bitsliced", constant_time=True,
                                 local_size=128),
    }
    #: CBC encryption (one work-item): the tables, one block per step, not 32 blocks
    serial_implementation = "tables"

    def defines(self, key_size: int) -> dict[str, int]:
        return {"MISTY1_ROUNDS": ROUNDS}

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout not in (None, "rounds", "bitsliced"):
            raise ValueError(f"unknown MISTY1 key layout {layout!r}")
        self.check_key(key)
        ek = expanded_key_fast(bytes(key))
        if layout == "bitsliced":   # 16 masks per word of round_keys() (its 16 bits, bit 0 first)
            words = np.array(ek, dtype="<u2")
            ek[:] = [0] * len(ek)
            rk = words[_ROUND_KEYS]   # (its bytes low first: bits 0..7, then 8..15)
            words.fill(0)
            masks = _BYTE_MASKS.take(rk.view(np.uint8), axis=0).reshape(-1)
            rk.fill(0)
            return masks
        out = np.array(ek, dtype="<u4")
        ek[:] = [0] * len(ek)
        if layout is None:
            return out
        words = out[_ROUND_KEYS]          # round_keys(), as one gather
        out.fill(0)
        return words

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        self.check_key(key)
        if len(data) % 8:
            raise ValueError("MISTY1 ECB takes whole 8-byte blocks")
        ek = expanded_key(bytes(key))
        rk = round_keys(ek)
        try:
            if len(data) > 8 * 32:
                return _ecb_np(rk, data, encrypt)
            fn = _encrypt_block if encrypt else _decrypt_block
            out = bytearray()
            for i in range(0, len(data), 8):
                a, b = fn(rk, int.from_bytes(data[i: i + 4], "big"), int.from_bytes(data[i + 4: i + 8], "big"))
                out += a.to_bytes(4, "big") + b.to_bytes(4, "big")
            return bytes(out)
        finally:
            ek[:] = [0] * len(ek)
            rk[:] = [0] * len(rk)


CIPHER = MISTY1()
