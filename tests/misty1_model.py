"""An independent plain-Python MISTY1, written from RFC 2994 ("A Description of the MISTY1
Encryption Algorithm", H. Ohta, M. Matsui, November 2000) and nothing else of ciphergrid.

It follows the RFC's own notation, one block at a time:

* section 2.2 (Key Scheduling Part): EK[0..7] from the key bytes, EK[8+i] = FI(EK[i], EK[(i+1)%8])
  (the K'_i of ISO/IEC 18033-3), EK[16+i] = EK[8+i] & 0x1ff, EK[24+i] = EK[8+i] >> 9;
* section 2.3 (Data Randomizing Part): FO(FO_IN, k), FI(FI_IN, FI_KEY) on the two S-boxes S7/S9,
  FL(FL_IN, k) and FLINV(FL_IN, k) with the RFC's EK index expressions, and the round sequence of
  encryption (C = D1 || D0) and of decryption (P = D0 || D1).

The S-box tables are a second transcription of the RFC's S7TABLE and S9TABLE (section 2.3), kept
here in another format than ciphergrid/algorithms/misty1.py so that the two are compared rather than
shared.  This is slow (a few thousand blocks a second) and meant for short inputs.
"""

from __future__ import annotations

# RFC 2994 section 2.3, S7TABLE: 128 entries, two hex digits each
_S7_HEX = (
    "1b32335a3b1017545b1a72736b2c6649"
    "1f24136c372e3f4a5d0f405625511c04"
    "0b46200d7b3544422b1e41144b79156f"
    "0e550936740c6753280a7e3802076029"
    "1912652f303908685f782a4c6445753d"
    "594803577c4f623c1d215e276a704d3a"
    "016d6e6318772305267600312d7a7f61"
    "502211064716524e713e6943345c587d"
)
# RFC 2994 section 2.3, S9TABLE: 512 entries, three hex digits each
_S9_HEX = (
    "1c30cb15319f1e30e90fb0351810b91171eb13300902d0d3"
    "0c714a03707e0eb1641931d80a311e05502c01d1a2163118"
    "14b1521d200f02b03013a0e511113818e0630e30c81f401b"
    "00109d0f81a016d1f301c14607d0d10821ea18312d0f419e"
    "1d30dd1e21281e00ec05909101112f0260dc0b018c10f1f7"
    "0e716c0b60f90d815110114c1030b815412b1ae01707100c"
    "04705807f1a413412908415d19d1b21a304807c0511ca023"
    "13d1a716503b0420da1920ce0c106b09f1f112c1840fa196"
    "1e116917d03118010a0941da18613e11c0601751cf067119"
    "06506809915000800717c0b70240190de1270db0e41a9052"
    "10909019c1c10281b313516a1760df1e51880c516e1de1b1"
    "0c31df0360ee1ee0f009304909a1b606908112500b05e0b4"
    "1491c717403e13b1b708e1c60ae0100951ef04e0f21fd085"
    "0fd0f60a016f08308a15609b13c1071670981d01e90031fe"
    "0bd1220890d218f01203306a1420ed17011b0e214f158131"
    "14705d1131cd0791611a517909e1b40cc02213201a0e8004"
    "1871ed1970391bf1d702718b0c609c0d014e06c0341f206e"
    "0ca0250ba1910fe01310602f1ad1721db0c010b1d60f51ec"
    "10d0761141ab07510c1e415905411f04b0c41be0f70290a4"
    "00e1f007704d17a08608b0b31710bf10e10409715b160168"
    "0d70bb0661ce0fc0921c506f01604a0a11390af0f119000a"
    "1aa14317b05618d1660d41fb14d19419a0871f81230a71b8"
    "14103c1f914002a15511a1a11980d51261af06112e1571dc"
    "07218a0aa0961150ef04507b08d14505305f1780b202e020"
    "1d503f1c91e71ac0440380140b116b0ab0b505a1821c81d4"
    "0181770640cf06d10019913015a0051201bb1bd0e004f0d6"
    "13f1c412a0150060ff19b0a604308805015f1e812107317e"
    "0bc0c20c91731891f50741cc1e61a819501f04100d1ba032"
    "03d1d10800a80571b91621480d910506207a0211ff112108"
    "1c00a911d1b01a60cd0f305c10205b1d91441f60ad0a503a"
    "1cb13617f0460e101e1dd0e61371fa18508c08f0401b50be"
    "0780000ac11015e1240021bc0a20ea0701fc11615c04c1c2"
)


def _table(text: str, digits: int) -> tuple[int, ...]:
    s = "".join(text.split())
    return tuple(int(s[i: i + digits], 16) for i in range(0, len(s), digits))


S7 = _table(_S7_HEX, 2)
S9 = _table(_S9_HEX, 3)
assert len(S7) == 128 and len(S9) == 512


def FI(fi_in: int, fi_key: int) -> int:
    d9 = fi_in >> 7
    d7 = fi_in & 0x7F
    d9 = S9[d9] ^ d7
    d7 = S7[d7] ^ d9
    d7 = d7 & 0x7F
    d7 = d7 ^ (fi_key >> 9)
    d9 = d9 ^ (fi_key & 0x1FF)
    d9 = S9[d9] ^ d7
    return (d7 << 9) | d9


def key_schedule(key: bytes) -> list[int]:
    """EK[0..31] of section 2.2."""
    assert len(key) == 16
    ek = [0] * 32
    for i in range(8):
        ek[i] = key[i * 2] * 256 + key[i * 2 + 1]
    for i in range(8):
        ek[i + 8] = FI(ek[i], ek[(i + 1) % 8])
        ek[i + 16] = ek[i + 8] & 0x1FF
        ek[i + 24] = ek[i + 8] >> 9
    return ek


def FO(ek: list[int], fo_in: int, k: int) -> int:
    t0 = fo_in >> 16
    t1 = fo_in & 0xFFFF
    t0 = t0 ^ ek[k]
    t0 = FI(t0, ek[(k + 5) % 8 + 8])
    t0 = t0 ^ t1
    t1 = t1 ^ ek[(k + 2) % 8]
    t1 = FI(t1, ek[(k + 1) % 8 + 8])
    t1 = t1 ^ t0
    t0 = t0 ^ ek[(k + 7) % 8]
    t0 = FI(t0, ek[(k + 3) % 8 + 8])
    t0 = t0 ^ t1
    t1 = t1 ^ ek[(k + 4) % 8]
    return (t1 << 16) | t0


def FL(ek: list[int], fl_in: int, k: int) -> int:
    d0 = fl_in >> 16
    d1 = fl_in & 0xFFFF
    if k % 2 == 0:
        d1 = d1 ^ (d0 & ek[k // 2])
        d0 = d0 ^ (d1 | ek[(k // 2 + 6) % 8 + 8])
    else:
        d1 = d1 ^ (d0 & ek[((k - 1) // 2 + 2) % 8 + 8])
        d0 = d0 ^ (d1 | ek[((k - 1) // 2 + 4) % 8])
    return (d0 << 16) | d1


def FLINV(ek: list[int], fl_in: int, k: int) -> int:
    d0 = fl_in >> 16
    d1 = fl_in & 0xFFFF
    if k % 2 == 0:
        d0 = d0 ^ (d1 | ek[(k // 2 + 6) % 8 + 8])
        d1 = d1 ^ (d0 & ek[k // 2])
    else:
        d0 = d0 ^ (d1 | ek[((k - 1) // 2 + 4) % 8])
        d1 = d1 ^ (d0 & ek[((k - 1) // 2 + 2) % 8 + 8])
    return (d0 << 16) | d1


def encrypt_block(ek: list[int], p: bytes) -> bytes:
    d0 = int.from_bytes(p[:4], "big")
    d1 = int.from_bytes(p[4:], "big")
    for r in (0, 2, 4, 6):          # rounds r (with the FL layer) and r + 1
        d0 = FL(ek, d0, r)
        d1 = FL(ek, d1, r + 1)
        d1 = d1 ^ FO(ek, d0, r)
        d0 = d0 ^ FO(ek, d1, r + 1)
    d0 = FL(ek, d0, 8)
    d1 = FL(ek, d1, 9)
    return d1.to_bytes(4, "big") + d0.to_bytes(4, "big")      # C = (D1 << 32) | D0


def decrypt_block(ek: list[int], c: bytes) -> bytes:
    d0 = int.from_bytes(c[4:], "big")                          # D0 = C & 0xffffffff
    d1 = int.from_bytes(c[:4], "big")                          # D1 = C >> 32
    d0 = FLINV(ek, d0, 8)
    d1 = FLINV(ek, d1, 9)
    for r in (6, 4, 2, 0):
        d0 = d0 ^ FO(ek, d1, r + 1)
        d1 = d1 ^ FO(ek, d0, r)
        d0 = FLINV(ek, d0, r)
        d1 = FLINV(ek, d1, r + 1)
    return d0.to_bytes(4, "big") + d1.to_bytes(4, "big")      # P = (D0 << 32) | D1


def ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    assert len(data) % 8 == 0
    ek = key_schedule(bytes(key))
    fn = encrypt_block if encrypt else decrypt_block
    return b"".join(fn(ek, data[i: i + 8]) for i in range(0, len(data), 8))


def cbc(key: bytes, iv: bytes, data: bytes, encrypt: bool) -> bytes:
    ek = key_schedule(bytes(key))
    out, prev = bytearray(), bytes(iv)
    for i in range(0, len(data), 8):
        blk = data[i: i + 8]
        if encrypt:
            prev = encrypt_block(ek, bytes(a ^ b for a, b in zip(blk, prev)))
            out += prev
        else:
            out += bytes(a ^ b for a, b in zip(decrypt_block(ek, blk), prev))
            prev = blk
    return bytes(out)


def ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    """The whole 8-byte block is a big-endian counter, incremented modulo 2^64."""
    ek = key_schedule(bytes(key))
    c = int.from_bytes(iv, "big")
    out = bytearray()
    for i in range(0, len(data), 8):
        ks = encrypt_block(ek, ((c + i // 8) % (1 << 64)).to_bytes(8, "big"))
        out += bytes(a ^ b for a, b in zip(data[i: i + 8], ks))
    return bytes(out)
