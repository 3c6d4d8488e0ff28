"""A plain-Python Camellia written from RFC 3713, for the tests only: independent of
ciphergrid/algorithms/camellia.py (which builds the kernels' flat schedule) and of the kernels.

It follows the RFC's pseudo-code statement by statement: section 2.2 (key schedule, with the
subkeys named kw1..kw4, k1..k24, ke1..ke6), 2.3.2 (data randomizing, 128-bit and 192/256-bit
keys written out separately), 2.3.3 (decryption: the same procedure with the subkeys swapped as
the RFC lists), 2.4 (F, FL, FL^-1, SBOX1..SBOX4).  Slow (Python integers), meant for single blocks.
"""

from __future__ import annotations

MASK8 = 0xFF
MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF
MASK128 = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF

# RFC 3713 section 2.2
C1 = 0xA09E667F3BCC908B
C2 = 0xB67AE8584CAA73B2
C3 = 0xC6EF372FE94F82BE
C4 = 0x54FF53A5F1D36F1C
C5 = 0x10E527FADE682D1D
C6 = 0xB05688C2B3E6C1FD

# RFC 3713 section 2.4.4, SBOX1 (as printed there, rows of 16, decimal)
_SBOX1_TEXT = """
112 130  44 236 179  39 192 229 228 133  87  53 234  12 174  65
 35 239 107 147  69  25 165  33 237  14  79  78  29 101 146 189
134 184 175 143 124 235  31 206  62  48 220  95  94 197  11  26
166 225  57 202 213  71  93  61 217   1  90 214  81  86 108  77
139  13 154 102 251 204 176  45 116  18  43  32 240 177 132 153
223  76 203 194  52 126 118   5 109 183 169  49 209  23   4 215
 20  88  58  97 222  27  17  28  50  15 156  22  83  24 242  34
254  68 207 178 195 181 122 145  36   8 232 168  96 252 105  80
170 208 160 125 161 137  98 151  84  91  30 149 224 255 100 210
 16 196   0  72 163 247 117 219 138   3 230 218   9  63 221 148
135  92 131   2 205  74 144  51 115 103 246 243 157 127 191 226
 82 155 216  38 200  55 198  59 129 150 111  75  19 190  99  46
233 121 167 140 159 110 188 142  41 245 249 182  47 253 180  89
120 152   6 106 231  70 113 186 212  37 171  66 136 162 141 250
114   7 185  85 248 238 172  10  54  73  42 104  60  56 241 164
 64  40 211 123 187 201  67 193  21 227 173 244 119 199 128 158
"""
SBOX1 = [int(v) for v in _SBOX1_TEXT.split()]
assert len(SBOX1) == 256


def _rol8(x, n):
    return ((x << n) | (x >> (8 - n))) & MASK8


def sbox2(x):
    return _rol8(SBOX1[x], 1)


def sbox3(x):
    return _rol8(SBOX1[x], 7)


def sbox4(x):
    return SBOX1[_rol8(x, 1)]


def sbox1(x):
    return SBOX1[x]


def F(F_IN, KE):
    x = F_IN ^ KE
    t1 = x >> 56
    t2 = (x >> 48) & MASK8
    t3 = (x >> 40) & MASK8
    t4 = (x >> 32) & MASK8
    t5 = (x >> 24) & MASK8
    t6 = (x >> 16) & MASK8
    t7 = (x >> 8) & MASK8
    t8 = x & MASK8
    t1 = sbox1(t1)
    t2 = sbox2(t2)
    t3 = sbox3(t3)
    t4 = sbox4(t4)
    t5 = sbox2(t5)
    t6 = sbox3(t6)
    t7 = sbox4(t7)
    t8 = sbox1(t8)
    y1 = t1 ^ t3 ^ t4 ^ t6 ^ t7 ^ t8
    y2 = t1 ^ t2 ^ t4 ^ t5 ^ t7 ^ t8
    y3 = t1 ^ t2 ^ t3 ^ t5 ^ t6 ^ t8
    y4 = t2 ^ t3 ^ t4 ^ t5 ^ t6 ^ t7
    y5 = t1 ^ t2 ^ t6 ^ t7 ^ t8
    y6 = t2 ^ t3 ^ t5 ^ t7 ^ t8
    y7 = t3 ^ t4 ^ t5 ^ t6 ^ t8
    y8 = t1 ^ t4 ^ t5 ^ t6 ^ t7
    return ((y1 << 56) | (y2 << 48) | (y3 << 40) | (y4 << 32)
            | (y5 << 24) | (y6 << 16) | (y7 << 8) | y8)


def _rol32(x, n):
    return ((x << n) | (x >> (32 - n))) & MASK32


def FL(FL_IN, KE):
    x1 = FL_IN >> 32
    x2 = FL_IN & MASK32
    k1 = KE >> 32
    k2 = KE & MASK32
    x2 = x2 ^ _rol32(x1 & k1, 1)
    x1 = x1 ^ (x2 | k2)
    return (x1 << 32) | x2


def FLINV(FLINV_IN, KE):
    y1 = FLINV_IN >> 32
    y2 = FLINV_IN & MASK32
    k1 = KE >> 32
    k2 = KE & MASK32
    y1 = y1 ^ (y2 | k2)
    y2 = y2 ^ _rol32(y1 & k1, 1)
    return (y1 << 32) | y2


def _rol128(x, n):
    return ((x << n) | (x >> (128 - n))) & MASK128


def key_schedule(K: bytes) -> dict:
    """RFC 3713 section 2.2: {"kw1": .., "k1": .., "ke1": ..} (64-bit integers)."""
    bits = 8 * len(K)
    Kint = int.from_bytes(K, "big")
    if bits == 128:
        KL, KR = Kint, 0
    elif bits == 192:
        KL = Kint >> 64
        KR = ((Kint & MASK64) << 64) | (~Kint & MASK64)
    elif bits == 256:
        KL, KR = Kint >> 128, Kint & MASK128
    else:
        raise ValueError("key length")
    D1 = (KL ^ KR) >> 64
    D2 = (KL ^ KR) & MASK64
    D2 = D2 ^ F(D1, C1)
    D1 = D1 ^ F(D2, C2)
    D1 = D1 ^ (KL >> 64)
    D2 = D2 ^ (KL & MASK64)
    D2 = D2 ^ F(D1, C3)
    D1 = D1 ^ F(D2, C4)
    KA = (D1 << 64) | D2
    D1 = (KA ^ KR) >> 64
    D2 = (KA ^ KR) & MASK64
    D2 = D2 ^ F(D1, C5)
    D1 = D1 ^ F(D2, C6)
    KB = (D1 << 64) | D2

    def hi(v, n):
        return _rol128(v, n) >> 64

    def lo(v, n):
        return _rol128(v, n) & MASK64

    s = {}
    if bits == 128:
        s["kw1"], s["kw2"] = hi(KL, 0), lo(KL, 0)
        s["k1"], s["k2"] = hi(KA, 0), lo(KA, 0)
        s["k3"], s["k4"] = hi(KL, 15), lo(KL, 15)
        s["k5"], s["k6"] = hi(KA, 15), lo(KA, 15)
        s["ke1"], s["ke2"] = hi(KA, 30), lo(KA, 30)
        s["k7"], s["k8"] = hi(KL, 45), lo(KL, 45)
        s["k9"] = hi(KA, 45)
        s["k10"] = lo(KL, 60)
        s["k11"], s["k12"] = hi(KA, 60), lo(KA, 60)
        s["ke3"], s["ke4"] = hi(KL, 77), lo(KL, 77)
        s["k13"], s["k14"] = hi(KL, 94), lo(KL, 94)
        s["k15"], s["k16"] = hi(KA, 94), lo(KA, 94)
        s["k17"], s["k18"] = hi(KL, 111), lo(KL, 111)
        s["kw3"], s["kw4"] = hi(KA, 111), lo(KA, 111)
    else:
        s["kw1"], s["kw2"] = hi(KL, 0), lo(KL, 0)
        s["k1"], s["k2"] = hi(KB, 0), lo(KB, 0)
        s["k3"], s["k4"] = hi(KR, 15), lo(KR, 15)
        s["k5"], s["k6"] = hi(KA, 15), lo(KA, 15)
        s["ke1"], s["ke2"] = hi(KR, 30), lo(KR, 30)
        s["k7"], s["k8"] = hi(KB, 30), lo(KB, 30)
        s["k9"], s["k10"] = hi(KL, 45), lo(KL, 45)
        s["k11"], s["k12"] = hi(KA, 45), lo(KA, 45)
        s["ke3"], s["ke4"] = hi(KL, 60), lo(KL, 60)
        s["k13"], s["k14"] = hi(KR, 60), lo(KR, 60)
        s["k15"], s["k16"] = hi(KB, 60), lo(KB, 60)
        s["k17"], s["k18"] = hi(KL, 77), lo(KL, 77)
        s["ke5"], s["ke6"] = hi(KA, 77), lo(KA, 77)
        s["k19"], s["k20"] = hi(KR, 94), lo(KR, 94)
        s["k21"], s["k22"] = hi(KA, 94), lo(KA, 94)
        s["k23"], s["k24"] = hi(KL, 111), lo(KL, 111)
        s["kw3"], s["kw4"] = hi(KB, 111), lo(KB, 111)
    return s


def _randomize(M: int, s: dict, long_key: bool) -> int:
    """RFC 3713 section 2.3.2 with the subkeys in ``s``."""
    D1 = M >> 64
    D2 = M & MASK64
    D1 = D1 ^ s["kw1"]
    D2 = D2 ^ s["kw2"]
    D2 = D2 ^ F(D1, s["k1"])
    D1 = D1 ^ F(D2, s["k2"])
    D2 = D2 ^ F(D1, s["k3"])
    D1 = D1 ^ F(D2, s["k4"])
    D2 = D2 ^ F(D1, s["k5"])
    D1 = D1 ^ F(D2, s["k6"])
    D1 = FL(D1, s["ke1"])
    D2 = FLINV(D2, s["ke2"])
    D2 = D2 ^ F(D1, s["k7"])
    D1 = D1 ^ F(D2, s["k8"])
    D2 = D2 ^ F(D1, s["k9"])
    D1 = D1 ^ F(D2, s["k10"])
    D2 = D2 ^ F(D1, s["k11"])
    D1 = D1 ^ F(D2, s["k12"])
    D1 = FL(D1, s["ke3"])
    D2 = FLINV(D2, s["ke4"])
    D2 = D2 ^ F(D1, s["k13"])
    D1 = D1 ^ F(D2, s["k14"])
    D2 = D2 ^ F(D1, s["k15"])
    D1 = D1 ^ F(D2, s["k16"])
    D2 = D2 ^ F(D1, s["k17"])
    D1 = D1 ^ F(D2, s["k18"])
    if long_key:
        D1 = FL(D1, s["ke5"])
        D2 = FLINV(D2, s["ke6"])
        D2 = D2 ^ F(D1, s["k19"])
        D1 = D1 ^ F(D2, s["k20"])
        D2 = D2 ^ F(D1, s["k21"])
        D1 = D1 ^ F(D2, s["k22"])
        D2 = D2 ^ F(D1, s["k23"])
        D1 = D1 ^ F(D2, s["k24"])
    D2 = D2 ^ s["kw3"]
    D1 = D1 ^ s["kw4"]
    return (D2 << 64) | D1


def _swapped(s: dict, long_key: bool) -> dict:
    """RFC 3713 section 2.3.3: the subkey swaps of decryption."""
    d = dict(s)
    n = 24 if long_key else 18
    d["kw1"], d["kw3"] = s["kw3"], s["kw1"]
    d["kw2"], d["kw4"] = s["kw4"], s["kw2"]
    for i in range(1, n + 1):
        d[f"k{i}"] = s[f"k{n + 1 - i}"]
    m = 6 if long_key else 4
    for i in range(1, m + 1):
        d[f"ke{i}"] = s[f"ke{m + 1 - i}"]
    return d


def encrypt_block(K: bytes, block: bytes) -> bytes:
    s = key_schedule(K)
    return _randomize(int.from_bytes(block, "big"), s, len(K) > 16).to_bytes(16, "big")


def decrypt_block(K: bytes, block: bytes) -> bytes:
    long_key = len(K) > 16
    s = _swapped(key_schedule(K), long_key)
    return _randomize(int.from_bytes(block, "big"), s, long_key).to_bytes(16, "big")


def ecb(K: bytes, data: bytes, encrypt: bool) -> bytes:
    fn = encrypt_block if encrypt else decrypt_block
    return b"".join(fn(K, data[i: i + 16]) for i in range(0, len(data), 16))
