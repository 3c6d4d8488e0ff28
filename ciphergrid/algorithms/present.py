"""PRESENT-80 and PRESENT-128 (A. Bogdanov et al., "PRESENT: An Ultra-Lightweight Block Cipher",
CHES 2007, LNCS 4727, pp. 450-466; ISO/IEC 29192-2): host key schedule and a host model; the
kernels are kernels/present.cl ("reference") and kernels/present_bs.cl ("fast" = "ct" =
"bs-lop3o-r128", and the other bitsliced variants).

Byte order.  The paper writes the 64-bit state and the 80- or 128-bit key as numbers, most
significant bit first (b63 ... b0, k79 ... k0).  ciphergrid's blocks and keys are byte strings:
a block is the big-endian encoding of the paper's state (byte 0 = b63..b56) and a key the
big-endian encoding of the paper's key register (byte 0 = k79..k72, or k127..k120), as the common
implementations and the published test vectors do.  The kernels read a block as two little-endian
32-bit words (the contract of algorithms/base.py) and convert inside.

Round keys (``expand``, plain layout): K_1 .. K_32 of the paper, each as two words (the high and the
low 32 bits of the 64-bit number), 64 words; the decryption schedule is the same keys in the order
decryption uses them (K_32 first).  The "bitsliced" layout (present_bs.cl) is 2,048 mask words
(word 64 r + j = 0xffffffff where bit j of the r-th round key of the schedule is set, else 0), then
the 64 words of the plain layout.  "bitsliced-t" is that followed by the three masks of the
transposes and a zero word (kernels that keep the masks in registers); "bitsliced-lop3" (encryption)
holds the masks of the LUT-circuit kernel (present_bs.cl, PRESENT_BS_LOP3; ``lop3_masks``), its
decryption schedule is "bitsliced-t".
"""

from __future__ import annotations

import struct

import numpy as np

from .base import BlockCipher, Implementation, byte_mask_table

ROUNDS = 31

#: the 4-bit S-box of the paper (section 3, "sBoxlayer"), in hexadecimal x -> S[x]
SBOX = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)
INV_SBOX = tuple(SBOX.index(i) for i in range(16))


def player_position(i: int) -> int:
    """pLayer: bit i of the state moves to bit P(i) = 16 i mod 63 (bit 63 stays)."""
    return 63 if i == 63 else (16 * i) % 63


def _spread(v: int, byte: int) -> int:
    """The 8 bits of ``v`` placed at byte ``byte`` of the state, then moved by pLayer."""
    out = 0
    for b in range(8):
        if v >> b & 1:
            out |= 1 << player_position(8 * byte + b)
    return out


def _unspread(v: int, byte: int) -> int:
    """The inverse permutation applied to ``v`` at byte ``byte``."""
    out = 0
    for b in range(8):
        if v >> b & 1:
            out |= 1 << _INV_P[8 * byte + b]
    return out


_INV_P = [0] * 64
for _i in range(64):
    _INV_P[player_position(_i)] = _i


def _byte_sbox(v: int, box) -> int:
    return box[v & 15] | box[v >> 4] << 4


#: round function tables of the host model (a fast writing, the tests hold the plain one):
#: SP[k][v] = pLayer(S-layer applied to byte k = v), so a round is 8 lookups; decryption runs on
#: u = pLayer^-1(state), where a round is u -> pLayer^-1(S^-1(u)) ^ pLayer^-1(K): IP[k][v] likewise
_SP = [[_spread(_byte_sbox(v, SBOX), k) for v in range(256)] for k in range(8)]
_IP = [[_unspread(_byte_sbox(v, INV_SBOX), k) for v in range(256)] for k in range(8)]
_UNP = [[_unspread(v, k) for v in range(256)] for k in range(8)]


def _perm_inv(x: int) -> int:
    t = _UNP
    return (t[0][x & 255] ^ t[1][x >> 8 & 255] ^ t[2][x >> 16 & 255] ^ t[3][x >> 24 & 255]
            ^ t[4][x >> 32 & 255] ^ t[5][x >> 40 & 255] ^ t[6][x >> 48 & 255] ^ t[7][x >> 56])


#: S as a circuit of 3-input gates (present_bs.cl PRESENT_BS_LOP3; one LOP3 each on NVIDIA GPUs).
#: Nodes 0..3 are the input bits x0..x3 (x0 the least significant), 4..7 the S-box's input masks
#: m0..m3, 8 its output mask e, then the gates in order; gate (a, b, c, lut) is bit (A + 2 B + 4 C)
#: of lut.  The first four add the masks (the round key), the next seven are S - a 7-gate circuit
#: found for this file with a SAT solver (none of 6 gates exists) - whose gate of y0 (A ^ C) also
#: adds e: the circuit computes S(x ^ m) ^ (e, 0, 0, 0).  LOP3_OUTS: the gates of y0..y3.
LOP3_GATES = ((0, 4, 0, 0x66), (1, 5, 1, 0x66), (2, 6, 2, 0x66), (3, 7, 3, 0x66),
              (10, 11, 12, 0x2D), (10, 11, 13, 0xAC), (9, 13, 14, 0xC6), (9, 13, 14, 0x63),
              (10, 11, 13, 0x69), (9, 8, 17, 0x96), (15, 16, 17, 0x87))
LOP3_OUTS = (18, 16, 19, 15)
#: S as 9 gates whose four output gates are XORs of two words and the output's mask (present_bs.cl
#: PRESENT_BS_LOP3 = 3): nodes 0..3 are x0..x3, 4..7 the output masks e0..e3, then the gates; the
#: circuit computes S(x) ^ e ^ LOP3O_FLIP (found with a SAT solver: none of 8 gates has four such
#: outputs).  The first five gates are S's non-linear part, the last four (0x96, XOR) the outputs.
LOP3O_GATES = ((1, 2, 3, 0x2D), (0, 1, 8, 0x96), (1, 2, 3, 0xE8), (0, 8, 10, 0x93), (8, 9, 11, 0x94),
               (2, 9, 4, 0x96), (10, 11, 5, 0x96), (2, 12, 6, 0x96), (0, 11, 7, 0x96))
LOP3O_OUTS = (13, 14, 15, 16)
LOP3O_FLIP = 0b1101
#: the three masks of the 32x32 bit-matrix transposes, then a zero word ("bitsliced-t", "-lop3*")
TRANSPOSE_MASKS = (0x0F0F0F0F, 0x33333333, 0x55555555, 0)


def _run_gates(gates, outs, v: list[int]) -> int:
    for a, b, c, lut in gates:
        v.append(lut >> (v[a] | v[b] << 1 | v[c] << 2) & 1)
    return sum(v[o] << j for j, o in enumerate(outs))


def lop3_sbox(x: int, m: int, e: int = 0) -> int:
    """The circuit LOP3_GATES on a nibble x, input mask bits m, output mask bit e."""
    return _run_gates(LOP3_GATES, LOP3_OUTS,
                      [x >> i & 1 for i in range(4)] + [m >> i & 1 for i in range(4)] + [e & 1])


def lop3o_sbox(x: int, e: int) -> int:
    """The circuit LOP3O_GATES on a nibble x with the output mask bits e."""
    return _run_gates(LOP3O_GATES, LOP3O_OUTS,
                      [x >> i & 1 for i in range(4)] + [e >> i & 1 for i in range(4)])


#: pLayer as an index: bit i of the state goes to bit _P[i]
_P = np.array([player_position(i) for i in range(64)], dtype=np.intp)
#: LOP3O_FLIP's bit (i & 3) for each state bit i
_FLIP = np.array([LOP3O_FLIP >> (i & 3) & 1 for i in range(64)], dtype=np.uint8)


def key_bits(rk: list[int]) -> np.ndarray:
    """The round keys as a (rounds, 64) uint8 array of bits: ``[r, i]`` is bit i (the least
    significant first) of ``rk[r]``."""
    k = np.array(rk, dtype=np.uint64)
    out = ((k[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    k.fill(0)
    return out


def lop3_masks(bits: np.ndarray, absorb) -> np.ndarray:
    """The mask bits (64 before round 1, 31 x 64 for the rounds, 64 after round 31) of the
    LUT-circuit kernel for the encryption keys K_1..K_32 given as ``key_bits`` (present_bs.cl
    PRESENT_BS_LOP3), a flat uint8 array.
    absorb=False ("bitsliced-lop3"): round r's word 4n + i is K_r's bit 4n + i, the input mask of
    S-box n; K_32 after the rounds.  absorb=True ("bitsliced-lop3x"): the gate of output y0 of S-box
    n adds the next key's bit n (pLayer moves y0 of S-box n to bit n), so state bits 0..15 reach
    the next round keyed: before round 1, K_1's bits 0..15; round r's words 0..15 are K_(r+1)'s
    bits 0..15 (the e of S-boxes 0..15), words 16..63 K_r's bits 16..63 (the input masks of S-boxes
    4..15; those of S-boxes 0..3 are unused); after the rounds, K_32's bits 16..63.
    absorb="all" ("bitsliced-lop3o", the circuit LOP3O_GATES): K_1 before round 1; round r's word
    4n + j, the mask of output j of S-box n, is K_(r+1)'s bit P(4n + j) (XOR LOP3O_FLIP's bit j);
    nothing after the rounds."""
    out = np.zeros((ROUNDS + 2, 64), dtype=np.uint8)
    if absorb == "all":
        out[0] = bits[0]
        out[1:ROUNDS + 1] = bits[1:, _P] ^ _FLIP
    elif not absorb:
        out[1:] = bits
    else:
        out[0, :16] = bits[0, :16]
        out[1:ROUNDS + 1, :16] = bits[1:, :16]
        out[1:, 16:] = bits[:, 16:]
    return out.reshape(-1)


def round_keys(key: bytes) -> list[int]:
    """K_1 .. K_32 (64-bit numbers) of the paper's key schedule (section 3, "The key schedule";
    PRESENT-128: Appendix II)."""
    n = len(key)
    if n not in (10, 16):
        raise ValueError("PRESENT takes a 10- or 16-byte key")
    bits = 8 * n
    mask = (1 << bits) - 1
    k = int.from_bytes(bytes(key), "big")
    out = []
    for i in range(1, ROUNDS + 2):
        out.append(k >> (bits - 64))
        if i == ROUNDS + 1:
            break
        k = ((k << 61) | (k >> (bits - 61))) & mask                     # rotate left by 61
        if bits == 80:
            k = (k & ~(0xF << 76)) | SBOX[k >> 76] << 76                # S on k79..k76
            k ^= i << 15                                                 # k19..k15 ^= counter
        else:
            top = k >> 120
            k = (k & ~(0xFF << 120)) | _byte_sbox(top, SBOX) << 120     # S on k127..k120
            k ^= i << 62                                                 # k66..k62 ^= counter
    k = 0
    return out


def _frame_tables(bits: int, step: int, boxes: tuple, counter_at: int):
    """The key schedule in a frame that does not rotate: logical bit j of the key register
    after round i (i = 0: the key itself) lies at bit (j + step * i) mod ``bits`` of a register
    held twice, side by side (2 * ``bits`` bits: any 64 bits or nibble are one shift and mask
    away, wrapping or not).  Per round i = 1 .. ROUNDS: (where its S-box nibbles lie, then for
    each nibble value the XOR that applies the S-box there (both copies) -- the round counter's
    XOR in the first nibble's table), and the offsets of K_1 .. K_32 (logical bits
    ``bits - 64`` up)."""
    def put(v: int, at: int) -> int:      # logical bits at ``at`` up, in the round's frame
        out = 0
        for k in range(v.bit_length()):
            if v >> k & 1:
                p = (at + k) % bits
                out |= 1 << p | 1 << (p + bits)
        return out

    rounds = []
    for i in range(1, ROUNDS + 1):
        shift = step * i
        counter = put(i, counter_at + shift)
        nibbles = []
        for n, at in enumerate(boxes):
            table = tuple(put(SBOX[x] ^ x, at + shift) ^ (counter if n == 0 else 0)
                          for x in range(16))
            nibbles.append(((at + shift) % bits, table))
        rounds.append(tuple(nibbles))
    offsets = tuple((bits - 64 + step * t) % bits for t in range(ROUNDS + 1))
    return tuple(rounds), offsets


#: PRESENT-80: a rotation left by 61 is logical bit j from j + 19; the S-box on k79..k76, the
#: counter at k19..k15.  PRESENT-128: from j + 67; S-boxes on k127..k124 and k123..k120, the
#: counter at k66..k62
_FRAMES = {10: _frame_tables(80, 19, (76,), 15), 16: _frame_tables(128, 67, (124, 120), 62)}
_M64 = (1 << 64) - 1


def round_keys_fast(key: bytes) -> list[int]:
    """:func:`round_keys` in a frame that does not rotate (``_frame_tables``): a round is a
    nibble read and a table's XOR (the one-shot call's key set-up)."""
    k = int.from_bytes(key, "big")
    rounds, offsets = _FRAMES[len(key)]
    d = k | k << (8 * len(key))
    k = 0
    out = [d >> offsets[0] & _M64]
    m = _M64
    if len(key) == 10:
        for ((p, t),), o in zip(rounds, offsets[1:]):
            d ^= t[d >> p & 15]
            out.append(d >> o & m)
    else:
        for ((p, t), (q, u)), o in zip(rounds, offsets[1:]):
            d ^= t[d >> p & 15] ^ u[d >> q & 15]
            out.append(d >> o & m)
    d = 0
    return out


#: the round keys' bits as they lie in the little-endian bytes of the keys (bit 64 r + i: K_r's
#: bit i), taken by the "bitsliced-lop3o" masks: K_1's bits in order, then for K_2 .. K_32 bit
#: P(i) at position i (lop3_masks with absorb="all"), and the masks XORed with LOP3O_FLIP's
_LOP3O_PICK = np.concatenate([np.arange(64)] + [64 * r + _P for r in range(1, ROUNDS + 1)])
_LOP3O_FLIP = np.concatenate([np.zeros(64, np.uint32),
                              np.tile(np.uint32(0) - _FLIP.astype(np.uint32), ROUNDS)]).astype("<u4")
#: each byte's 8 masks (the bitsliced layouts as one gather)
_BYTE_MASKS = byte_mask_table()
_RK_LE = struct.Struct(f"<{ROUNDS + 1}Q")
_RK_BE = struct.Struct(f">{ROUNDS + 1}Q")


def _ecb_ints(rk: list[int], blocks, encrypt: bool):
    sp = _SP
    out = []
    if encrypt:
        last = rk[ROUNDS]
        for x in blocks:
            for r in range(ROUNDS):
                x ^= rk[r]
                x = (sp[0][x & 255] ^ sp[1][x >> 8 & 255] ^ sp[2][x >> 16 & 255] ^ sp[3][x >> 24 & 255]
                     ^ sp[4][x >> 32 & 255] ^ sp[5][x >> 40 & 255] ^ sp[6][x >> 48 & 255] ^ sp[7][x >> 56])
            out.append(x ^ last)
        return out
    ip = _IP
    tk = [_perm_inv(k) for k in rk]
    for x in blocks:
        u = _perm_inv(x ^ rk[ROUNDS])
        for r in range(ROUNDS - 1, 0, -1):
            u = (ip[0][u & 255] ^ ip[1][u >> 8 & 255] ^ ip[2][u >> 16 & 255] ^ ip[3][u >> 24 & 255]
                 ^ ip[4][u >> 32 & 255] ^ ip[5][u >> 40 & 255] ^ ip[6][u >> 48 & 255] ^ ip[7][u >> 56]
                 ^ tk[r])
        x = 0
        for k in range(16):
            x |= INV_SBOX[u >> 4 * k & 15] << 4 * k
        out.append(x ^ rk[0])
    tk.clear()
    return out


_SP_NP = np.array(_SP, dtype=np.uint64)
_IP_NP = np.array(_IP, dtype=np.uint64)
_UNP_NP = np.array(_UNP, dtype=np.uint64)
_INV_BYTE_NP = np.array([_byte_sbox(v, INV_SBOX) for v in range(256)], dtype=np.uint64)


def _lookup8(tables, x):
    y = tables[0][x & np.uint64(255)]
    for k in range(1, 8):
        y ^= tables[k][(x >> np.uint64(8 * k)) & np.uint64(255)]
    return y


def _ecb_numpy(rk: list[int], x, encrypt: bool):
    if encrypt:
        for r in range(ROUNDS):
            x = _lookup8(_SP_NP, x ^ np.uint64(rk[r]))
        return x ^ np.uint64(rk[ROUNDS])
    u = _lookup8(_UNP_NP, x ^ np.uint64(rk[ROUNDS]))
    for r in range(ROUNDS - 1, 0, -1):
        u = _lookup8(_IP_NP, u) ^ np.uint64(_perm_inv(rk[r]))
    y = np.zeros_like(u)
    for k in range(8):
        y |= _INV_BYTE_NP[(u >> np.uint64(8 * k)) & np.uint64(255)] << np.uint64(8 * k)
    return y ^ np.uint64(rk[0])


def ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    """The host model: ECB over whole 8-byte blocks."""
    if len(data) % 8:
        raise ValueError("PRESENT ECB takes whole 8-byte blocks")
    rk = round_keys(key)
    try:
        if len(data) <= 8 * 64:   # (the oracle's CBC asks one block at a time)
            blocks = [int.from_bytes(data[i: i + 8], "big") for i in range(0, len(data), 8)]
            return b"".join(v.to_bytes(8, "big") for v in _ecb_ints(rk, blocks, encrypt))
        x = np.frombuffer(bytes(data), dtype=">u8").astype(np.uint64)
        return _ecb_numpy(rk, x, encrypt).astype(">u8").tobytes()
    finally:
        rk.clear()


_LOP3O_R128 = Implementation("present_bs.cl", batch=32, key_layout="bitsliced-lop3o",
                             defines={"PRESENT_BS_LOP3": 3, "PRESENT_BS_TMASKS": 1},
                             max_registers=128, constant_time=True)


class PRESENT(BlockCipher):
    name = "present"
    block_size = 8
    key_sizes = (10, 16)
    variants = (("present-80", 10, ("ecb", "cbc", "ctr")),
                ("present-128", 16, ("ecb", "cbc", "ctr")))
    openssl_provider = None   # OpenSSL (and pyca) lack PRESENT

    #: the layouts expand() makes (the LUT-circuit ones: encryption; their decryption is
    #: "bitsliced-t")
    LAYOUTS = (None, "bitsliced", "bitsliced-t", "bitsliced-lop3", "bitsliced-lop3x",
               "bitsliced-lop3o")

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        if layout not in self.LAYOUTS:
            raise ValueError(f"unknown PRESENT key layout {layout!r}")
        self.check_key(key)
        rk = round_keys_fast(bytes(key))
        if decrypt:
            rk.reverse()
        try:
            if layout is None:
                raw = bytearray(_RK_BE.pack(*rk))
                out = np.frombuffer(raw, dtype=">u4").astype("<u4")
                raw[:] = bytes(len(raw))
                return out
            if layout in ("bitsliced-lop3", "bitsliced-lop3x") and not decrypt:
                kb = key_bits(rk)
                bits = lop3_masks(kb, layout == "bitsliced-lop3x")
                out = np.empty(bits.size + len(TRANSPOSE_MASKS), dtype="<u4")
                np.negative(bits, out=out[:bits.size], dtype=np.uint32)     # 0 / 0xffffffff
                out[bits.size:] = TRANSPOSE_MASKS
                kb.fill(0)
                bits.fill(0)
                return out
            raw = bytearray(_RK_LE.pack(*rk))
            masks = _BYTE_MASKS.take(np.frombuffer(raw, dtype=np.uint8), axis=0).reshape(-1)
            raw[:] = bytes(len(raw))
            if layout == "bitsliced-lop3o" and not decrypt:
                n = masks.size + 64                     # (and a row of zeros after the rounds)
                out = np.empty(n + len(TRANSPOSE_MASKS), dtype="<u4")
                picked = masks.take(_LOP3O_PICK)
                np.bitwise_xor(picked, _LOP3O_FLIP, out=out[:masks.size])
                picked.fill(0)
                out[masks.size:n] = 0
                out[n:] = TRANSPOSE_MASKS
            else:   # bitsliced: bit j of round key r at mask 64 r + j; then the plain layout
                raw = bytearray(_RK_BE.pack(*rk))
                extra = len(TRANSPOSE_MASKS) if layout != "bitsliced" else 0
                out = np.empty(masks.size + 2 * len(rk) + extra, dtype="<u4")
                out[:masks.size] = masks
                out[masks.size: masks.size + 2 * len(rk)] = np.frombuffer(raw, dtype=">u4")
                raw[:] = bytes(len(raw))
                if extra:
                    out[-extra:] = TRANSPOSE_MASKS
            masks.fill(0)
            return out
        finally:
            rk.clear()

    implementations = {
        # one block per work-item, the S-box as a 16-entry table, pLayer bit by bit
        "reference": Implementation("present.cl", grid="per-block"),
        # the default, the fastest on a GPU (docs/benchmarks.md 0c, 'The 64-bit ciphers' kernels'):
        # bitsliced, 32 blocks per work-item, the 9-gate LUT circuit adding the round keys, in 128
        # registers (below); constant time, no table
        "fast": _LOP3O_R128,
        "ct": _LOP3O_R128,
        # the first bitsliced kernel: 14-gate S-box circuit, key XORs, transpose masks as constants
        "bitsliced-v1": Implementation("present_bs.cl", batch=32, key_layout="bitsliced",
                                       constant_time=True),
        # the same, round-key masks made from the plain keys in the kernel (PRESENT_BS_KEY_MASKS=0:
        # 256 B of key reads per schedule instead of 8 KiB, two more operations per key bit)
        "bs-key-bits": Implementation("present_bs.cl", batch=32, key_layout="bitsliced",
                                      defines={"PRESENT_BS_KEY_MASKS": 0}, constant_time=True),
        # "fast" with the transpose masks in registers: 3 LOP3 fewer per swap of bits, ~12 per block
        "bs-tmask": Implementation("present_bs.cl", batch=32, key_layout="bitsliced-t",
                                   defines={"PRESENT_BS_TMASKS": 1}, constant_time=True),
        # encryption with the 11-gate LUT circuit (key at the inputs + the 7-gate S) and the
        # transpose masks in registers
        "bs-lop3": Implementation("present_bs.cl", batch=32, key_layout="bitsliced-lop3",
                                  defines={"PRESENT_BS_LOP3": 1, "PRESENT_BS_TMASKS": 1},
                                  constant_time=True),
        # the same, the output gate of y0 also adding the next round key's bit: S-boxes 0..3 get
        # keyed inputs, 160 gates per round instead of 176
        "bs-lop3x": Implementation("present_bs.cl", batch=32, key_layout="bitsliced-lop3x",
                                   defines={"PRESENT_BS_LOP3": 2, "PRESENT_BS_TMASKS": 1},
                                   constant_time=True),
        # "bs-lop3x" in fewer registers, more warps per SM (CUDA: 240+ registers leave 8 warps):
        # 128 (16 warps of 256; ptxas spills only around the mode kernel's loads and stores, not
        # in the rounds) and 168 with work-groups of 128 (12 warps; 84 B spilled)
        "bs-lop3x-r128": Implementation("present_bs.cl", batch=32, key_layout="bitsliced-lop3x",
                                        defines={"PRESENT_BS_LOP3": 2, "PRESENT_BS_TMASKS": 1},
                                        max_registers=128, constant_time=True),
        "bs-lop3x-r168": Implementation("present_bs.cl", batch=32, key_layout="bitsliced-lop3x",
                                        defines={"PRESENT_BS_LOP3": 2, "PRESENT_BS_TMASKS": 1},
                                        max_registers=168, local_size=128, constant_time=True),
        # the 9-gate circuit whose output gates add the next round key: 144 LOP3 per round, no
        # key XOR (key layout "bitsliced-lop3o"); and in 128 registers (16 warps per SM), or in 168
        # with work-groups of 128 (12 warps)
        "bs-lop3o": Implementation("present_bs.cl", batch=32, key_layout="bitsliced-lop3o",
                                   defines={"PRESENT_BS_LOP3": 3, "PRESENT_BS_TMASKS": 1},
                                   constant_time=True),
        "bs-lop3o-r128": _LOP3O_R128,
        "bs-lop3o-r168": Implementation("present_bs.cl", batch=32, key_layout="bitsliced-lop3o",
                                        defines={"PRESENT_BS_LOP3": 3, "PRESENT_BS_TMASKS": 1},
                                        max_registers=168, local_size=128, constant_time=True),
    }
    #: CBC encryption (one work-item): one block per step, not 32 blocks
    serial_implementation = "reference"

    def defines(self, key_size: int) -> dict[str, int]:
        return {"PRESENT_ROUNDS": ROUNDS}

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        self.check_key(key)
        return ecb(bytes(key), bytes(data), encrypt)


CIPHER = PRESENT()
