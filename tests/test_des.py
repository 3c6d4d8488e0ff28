"""DES (FIPS 46-3) and TDEA (NIST SP 800-67): the host key schedule and tables, a plain-Python
model, the kernels' tables, the use policy, and every kernel implementation against the reference.

* The model below is FIPS 46-3 as written (IP, 16 rounds of E / key / S-boxes / P, IP^-1, bit by
  bit on Python ints), over the host key schedule of ciphers/des.py; it is checked against the
  published answers (FIPS 81, SP 800-67 Rev. 1, the TDESVS files) and pyca/cryptography, so the
  schedule that every kernel receives is checked independently of any kernel.
* A second model, the SP-box formulation of kernels/des.cl (swap-move IP/FP, rotated halves,
  SP tables), written with Python ints: the design of the fast kernel checked on the host.
* The tables written in the kernel files are the ones ciphers/des.py holds or computes.
* The weak and semi-weak keys are what FIPS 74 says they are (E_k E_k = id; E_k1 E_k2 = id).
* ``encryption_policy``: every DES-family encryption is refused unless allow_weak (single DES and
  bundles that reduce to it cite FIPS 46-3, TDEA SP 800-131A), TDEA keeps a limit of 2^20 blocks,
  single DES the birthday bound's 2^32, weak keys warn.
* The bitsliced kernel's S-box circuits compute the S-boxes, and des_bs.cl holds the generated text.
* Every implementation other than "fast" (which every generic test runs): "reference", "ct" and
  the "alt-*" variants of des.cl, on every OpenCL/CUDA device, against the oracle (pyca for ECB/CBC,
  reference_ecb + the mode for CTR), random keys and IVs, odd lengths, both directions; the TDEA
  keying options and the parity bits on the device.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

import ciphergrid
from ciphergrid import registry, vectors
from ciphergrid.algorithms import des as D
from ciphergrid.algorithms import des_tables as T
from ciphergrid.vectors import cavp

from conftest import lean
from test_constant_time import CT_DEVICES, compare_cases

DES = registry.lookup("des-ecb").algorithm
NAMES = [n for n in registry.names() if registry.lookup(n).algorithm is DES]
M32 = 0xFFFFFFFF
needs_device = pytest.mark.skipif(not CT_DEVICES, reason="no OpenCL/CUDA device")


# --------------------------------------------------------------------------- the model (FIPS 46-3)

def _f(r: int, k: int) -> int:
    x = T.permute(r, T.E, 32) ^ k
    s = 0
    for j in range(8):
        b = (x >> (42 - 6 * j)) & 63
        s = (s << 4) | T.S[j][16 * (((b >> 4) & 2) | (b & 1)) + ((b >> 1) & 15)]
    return T.permute(s, T.P, 32)


def des_block(key8: bytes, block: bytes, encrypt: bool) -> bytes:
    ks = D.round_keys(key8)
    if not encrypt:
        ks = ks[::-1]
    v = T.permute(int.from_bytes(block, "big"), T.IP, 64)
    left, right = v >> 32, v & M32
    for k in ks:
        left, right = right, left ^ _f(right, k)
    return T.permute((right << 32) | left, T.FP, 64).to_bytes(8, "big")


def model_ecb(key: bytes, data: bytes, encrypt: bool) -> bytes:
    """DES, or TDEA E_K3 D_K2 E_K1 (decryption D_K1 E_K2 D_K3), one block at a time."""
    keys = D.split_key(key)
    out = bytearray()
    for i in range(0, len(data), 8):
        b = data[i: i + 8]
        if len(keys) == 1:
            b = des_block(keys[0], b, encrypt)
        elif encrypt:
            b = des_block(keys[2], des_block(keys[1], des_block(keys[0], b, True), False), True)
        else:
            b = des_block(keys[0], des_block(keys[1], des_block(keys[2], b, False), True), False)
        out += b
    return bytes(out)


def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & M32


def _swapmove(a: int, b: int, s: int, m: int) -> tuple[int, int]:
    w = ((a >> s) ^ b) & m
    return a ^ ((w << s) & M32), b ^ w


def sp_model_block(words: list[int], block: bytes, passes: int) -> bytes:
    """kernels/des.cl's formulation, on the "sp" key layout (expand(..., layout="sp"))."""
    sp = D.sp_tables()
    left, right = int.from_bytes(block[:4], "big"), int.from_bytes(block[4:], "big")
    left, right = _swapmove(left, right, 4, 0x0F0F0F0F)
    left, right = _swapmove(left, right, 16, 0x0000FFFF)
    right, left = _swapmove(right, left, 2, 0x33333333)
    right, left = _swapmove(right, left, 8, 0x00FF00FF)
    right = _rotl(right, 1)
    w = (left ^ right) & 0xAAAAAAAA
    left, right = _rotl(left ^ w, 1), right ^ w
    halves = [left, right]
    i = 0
    for p in range(passes):
        for n in range(16):
            r = halves[(n + 1 + p) % 2]
            a, b = _rotl(r, 28) ^ words[i], r ^ words[i + 1]
            i += 2
            halves[(n + p) % 2] ^= (sp[0][(a >> 24) & 63] ^ sp[2][(a >> 16) & 63] ^ sp[4][(a >> 8) & 63]
                                   ^ sp[6][a & 63] ^ sp[1][(b >> 24) & 63] ^ sp[3][(b >> 16) & 63]
                                   ^ sp[5][(b >> 8) & 63] ^ sp[7][b & 63])
    left, right = halves if passes % 2 else halves[::-1]
    right = _rotl(right, 31)
    w = (left ^ right) & 0xAAAAAAAA
    left, right = _rotl(left ^ w, 31), right ^ w
    left, right = _swapmove(left, right, 8, 0x00FF00FF)
    left, right = _swapmove(left, right, 2, 0x33333333)
    right, left = _swapmove(right, left, 16, 0x0000FFFF)
    right, left = _swapmove(right, left, 4, 0x0F0F0F0F)
    return right.to_bytes(4, "big") + left.to_bytes(4, "big")


def _embedded_vectors():
    return [v for v in vectors.load() if v.cipher in NAMES and not v.source.startswith("cryptography_vectors/")]


def _ecb_of(v):
    """(key, plaintext, ciphertext) of an ECB or CBC vector as ECB blocks (CBC: unchained here)."""
    spec = registry.lookup(v.cipher)
    if spec.mode.name == "ecb":
        return v.plaintext, v.ciphertext
    if spec.mode.name == "cbc":
        prev, pt = v.iv, bytearray()
        for i in range(0, len(v.plaintext), 8):
            pt += bytes(a ^ b for a, b in zip(v.plaintext[i: i + 8], prev))
            prev = v.ciphertext[i: i + 8]
        return bytes(pt), v.ciphertext
    return v.iv, v.ciphertext[:8]  # CTR, one block of zeros: the key stream is E(IV)


# --------------------------------------------------------------------------- tables and model

def test_tables_of_fips_46_3():
    assert sorted(T.IP) == list(range(1, 65)) and sorted(T.P) == list(range(1, 33))
    assert all(T.FP[T.IP[i] - 1] == i + 1 for i in range(64))           # IP^-1 undoes IP
    assert sorted(set(T.E)) == list(range(1, 33)) and len(T.E) == 48
    for s in T.S:                                                        # each row a permutation
        assert all(sorted(s[16 * r: 16 * r + 16]) == list(range(16)) for r in range(4))
    assert sum(T.SHIFTS) == 28 and len(set(T.PC1)) == 56 and all(b % 8 for b in T.PC1)  # no parity bit
    assert len(set(T.PC2)) == 48 and max(T.PC2) == 56


def test_model_against_published_answers_and_pyca(rng, ref):
    vs = _embedded_vectors()
    assert {v.cipher for v in vs} == set(NAMES)
    for v in vs:
        pt, ct = _ecb_of(v)
        assert model_ecb(v.key, pt, True) == ct, v.source
        assert model_ecb(v.key, ct, False) == pt, v.source
    # and the official files' records (the SP 800-20 tables among them), a few of each file
    seen: dict[str, int] = {}
    for v in vectors.load():
        f = v.source.split(" [")[0]
        if v.cipher in NAMES and v.source.startswith("cryptography_vectors/") and seen.get(f, 0) < 4:
            seen[f] = seen.get(f, 0) + 1
            pt, ct = _ecb_of(v)
            assert model_ecb(v.key, pt, True) == ct, v.source
    for klen in (8, 16, 24):
        name = {8: "des-ecb", 16: "des-ede-ecb", 24: "des-ede3-ecb"}[klen]
        key, data = rng.randbytes(klen), rng.randbytes(8 * 5)
        want = ref.encrypt(data, name, key)
        assert model_ecb(key, data, True) == want and model_ecb(key, want, False) == data
        assert DES.reference_ecb(key, data, True) == want and DES.reference_ecb(key, want, False) == data


def test_expand_layouts(rng):
    for klen, passes in ((8, 1), (16, 3), (24, 3)):
        key = rng.randbytes(klen)
        keys = D.split_key(key)
        for decrypt in (False, True):
            plain = DES.expand(key, decrypt).tolist()
            sp = DES.expand(key, decrypt, layout="sp").tolist()
            assert len(plain) == len(sp) == 32 * passes
            assert DES.expand(key, decrypt).dtype.str == "<u4"
            ks = [(plain[2 * i] << 24) | plain[2 * i + 1] for i in range(16 * passes)]
            assert all(w < 1 << 24 for w in plain)
            # the rounds' order: E D E / D E D, each pass's keys forward or reversed
            order = [(k, (i % 2 == 1) != decrypt) for i, k in enumerate(keys)]
            if decrypt:
                order.reverse()
            want = [k for kk, rev in order for k in (D.round_keys(kk)[::-1] if rev else D.round_keys(kk))]
            assert ks == want
            # the "sp" words are the same key bits, grouped as des.cl reads them
            for i, k in enumerate(ks):
                g = [(k >> (42 - 6 * j)) & 63 for j in range(8)]
                assert sp[2 * i] == (g[0] << 24) | (g[2] << 16) | (g[4] << 8) | g[6]
                assert sp[2 * i + 1] == (g[1] << 24) | (g[3] << 16) | (g[5] << 8) | g[7]
            # the "bitsliced" masks: bit i + 1 of each round key as 0 or 0xffffffff
            bs = DES.expand(key, decrypt, layout="bitsliced").tolist()
            assert bs == [M32 * ((k >> (47 - i)) & 1) for k in ks for i in range(48)]
    with pytest.raises(ValueError):
        DES.expand(bytes(8), False, layout="t-tables")
    with pytest.raises(ciphergrid.InvalidKeySize):
        DES.expand(bytes(12), False)


def test_fast_kernel_formulation_on_the_host(rng):
    """The swap-move IP/FP, the rotated halves and the SP tables give DES and TDEA."""
    for klen, passes in ((8, 1), (16, 3), (24, 3)):
        for _ in range(8):
            key, block = rng.randbytes(klen), rng.randbytes(8)
            ct = model_ecb(key, block, True)
            assert sp_model_block(DES.expand(key, False, layout="sp").tolist(), block, passes) == ct
            assert sp_model_block(DES.expand(key, True, layout="sp").tolist(), ct, passes) == block


def _c_array(src: str, name: str) -> list[int]:
    m = re.search(rf"{name}\[\d+\]\s*=\s*\{{(.*?)\}};", src, re.S)
    assert m, name
    return [int(t.rstrip("u"), 0) for t in m.group(1).replace("\n", " ").split(",") if t.strip()]


def test_kernel_tables_are_the_specs():
    fast = resources.files("ciphergrid").joinpath("kernels", "des.cl").read_text()
    assert _c_array(fast, "DES_SP") == [w for t in D.sp_tables() for w in t]
    ref_src = resources.files("ciphergrid").joinpath("kernels", "des_ref.cl").read_text()
    assert _c_array(ref_src, "DESR_IP") == list(T.IP)
    assert _c_array(ref_src, "DESR_FP") == list(T.FP)
    assert _c_array(ref_src, "DESR_E") == list(T.E)
    assert _c_array(ref_src, "DESR_P") == list(T.P)
    assert _c_array(ref_src, "DESR_S") == [x for s in T.S for x in s]


def _eval_circuit(gates, outs, x: list[int]) -> list[int]:
    """The generated C expressions evaluated on 64-bit Python ints (one input pattern per bit)."""
    env = {f"x{i}": v for i, v in enumerate(x)}
    mask = (1 << 64) - 1
    for name, expr in gates:
        env[name] = eval(expr, {}, dict(env)) & mask
    return [0 if o == "0" else mask if o == "1" else env[o] & mask for o in outs]


def test_bitsliced_circuits_compute_the_s_boxes():
    # bit b of input plane i = bit i of the 6-bit group b (x0 the most significant): all 64 at once
    x = [sum(((b >> (5 - i)) & 1) << b for b in range(64)) for i in range(6)]
    for j in range(8):
        gates, outs = T._sbox_circuit(j, T.BS_ORDERS[j])
        got = _eval_circuit(gates, outs, x)
        for b in range(64):
            assert sum(((got[o] >> b) & 1) << (3 - o) for o in range(4)) == T.sbox(j, b), (j, b)


def test_bitsliced_kernel_holds_the_generated_round():
    src = resources.files("ciphergrid").joinpath("kernels", "des_bs.cl").read_text()
    gen = T.bitsliced_round_c()
    assert gen in src, "des_bs.cl's GENERATED part differs from des_tables.bitsliced_round_c()"
    # its E and P: the inputs read and the outputs written, once each per S-box
    for j in range(8):
        for b in range(6):
            assert f"const uint x{b} = S({T.E[6 * j + b] - 1}) ^ k[{6 * j + b}];" in gen
    written = sorted(int(m) for m in re.findall(r"T\((\d+)\) \^=", gen))
    assert written == list(range(32))


def test_lop3_circuits_compute_the_s_boxes():
    # the published gate lists (des_tables.LOP3_SBOXES) on all 64 inputs at once, bit b = input b
    x = [sum(((b >> (5 - i)) & 1) << b for b in range(64)) for i in range(6)]
    mask = (1 << 64) - 1
    for j in range(8):
        v = {f"a{i + 1}": x[i] for i in range(6)}
        for o, a, b, c, imm in T.lop3_gates(j):
            assert o not in v
            v[o] = T.lop3_eval(imm, v[a], v[b], v[c], mask)
        for b in range(64):
            assert sum(((v[f"x{o + 1}"] >> b) & 1) << (3 - o) for o in range(4)) == T.sbox(j, b), (j, b)
    assert [len(T.lop3_gates(j)) for j in range(8)] == [23, 22, 24, 17, 23, 22, 23, 23]
    # the C spelling of each of the 256 three-input functions is that function
    for imm, (_, e) in T._three_input_exprs().items():
        assert eval(e.format(a="0xF0", b="0xCC", c="0xAA").replace("0u", "0")) & 0xFF == imm


def test_lop3_kernel_holds_the_generated_round():
    src = resources.files("ciphergrid").joinpath("kernels", "des_lut.cl").read_text()
    gen = T.lop3_round_c()
    assert gen in src, "des_lut.cl's GENERATED part differs from des_tables.lop3_round_c()"
    # its E: each S-box input is the stored source bit, with a mask for the 16 repeated ones
    for j in range(8):
        for b in range(6):
            e = 6 * j + b
            q = T.E[e] - 1
            want = (f"const uint a{b + 1} = S({q}) ^ K({32 + T.LOP3_SECOND.index(e)});"
                    if e in T.LOP3_SECOND else f"const uint a{b + 1} = S({q});")
            assert want in gen
    assert sorted(T.E[e] for e in T.LOP3_SECOND) == [b for b in range(1, 33) if T.E.count(b) == 2]
    assert all(T.E[T.LOP3_PRIMARY[q]] == q + 1 for q in range(32))
    # its P: every target bit updated once, with its own mask word
    written = sorted(int(m) for m in re.findall(r"T\((\d+)\) = T\(\1\) \^ x\d \^ K\(\1\);", gen))
    assert written == list(range(32))


def lop3_model(key: bytes, block: bytes, decrypt: bool) -> bytes:
    """des_lut.cl's formulation on one block: halves held XORed with key masks (layout "lop3"),
    the S-boxes as the LOP3 circuits, the masks changed by the three-input XOR of each update."""
    w = [x & 1 for x in DES.expand(key, decrypt, layout="lop3").tolist()]
    n = 16 * (1 if len(key) == 8 else 3)
    assert len(w) == 800 * (n // 16) + 32
    v = T.permute(int.from_bytes(block, "big"), T.IP, 64)
    h = [[(v >> (63 - q)) & 1 for q in range(32)], [(v >> (31 - q)) & 1 for q in range(32)]]
    p = 0
    for r in range(n):
        t = ((r % 16) + r // 16) % 2                    # pass r // 16, round r % 16: target half
        if r % 16 == 0:
            h[1 - t] = [h[1 - t][q] ^ w[p + q] for q in range(32)]
            p += 32
        src, kr = h[1 - t], w[p:p + 48]
        p += 48
        f = [0] * 32
        for j in range(8):
            g = {}
            for b in range(6):
                e = 6 * j + b
                g[f"a{b + 1}"] = src[T.E[e] - 1] ^ (kr[32 + T.LOP3_SECOND.index(e)] if e in T.LOP3_SECOND else 0)
            for o, a, b, c, imm in T.lop3_gates(j):
                g[o] = T.lop3_eval(imm, g[a], g[b], g[c])
            for o in range(4):
                f[T.P.index(4 * j + o + 1)] = g[f"x{o + 1}"]
        h[t] = [h[t][q] ^ f[q] ^ kr[q] for q in range(32)]
    h[0] = [h[0][q] ^ w[p + q] for q in range(32)]
    assert p + 32 == len(w)
    pre = int("".join(map(str, h[1] + h[0])), 2)
    return T.permute(pre, T.FP, 64).to_bytes(8, "big")


def test_lop3_kernel_formulation_on_the_host(rng):
    """Keys folded into the halves (layout "lop3") and the LOP3 circuits give DES and TDEA."""
    for klen in (8, 16, 24):
        for decrypt in (False, True):
            for _ in range(3):
                key, block = rng.randbytes(klen), rng.randbytes(8)
                assert lop3_model(key, block, decrypt) == model_ecb(key, block, not decrypt)
    layout = DES.expand(rng.randbytes(24), False, layout="lop3")
    assert layout.dtype == "<u4" and set(layout.tolist()) <= {0, M32}


def test_weak_and_semi_weak_keys():
    """FIPS 74: a weak key's encryption is its own inverse (all 16 round keys equal); the
    semi-weak keys come in pairs whose encryptions are each other's inverse."""
    x = bytes.fromhex("0123456789abcdef")
    for k in D.WEAK_KEYS:
        assert len(set(D.round_keys(k))) == 1
        assert des_block(k, des_block(k, x, True), True) == x
    pairs = list(zip(D.SEMI_WEAK_KEYS[::2], D.SEMI_WEAK_KEYS[1::2]))
    assert len(pairs) == 6
    for a, b in pairs:
        assert des_block(b, des_block(a, x, True), True) == x
        assert des_block(a, des_block(b, x, True), True) == x
        assert des_block(a, des_block(a, x, True), True) != x


# --------------------------------------------------------------------------- vectors

def test_tdes_records_read_as_keying_options():
    k1, k2, k3 = "0123456789abcdef", "23456789abcdef01", "456789abcdef0123"
    assert cavp.tdes_key({"KEYS": k1}) == bytes.fromhex(k1)
    assert cavp.tdes_key({"KEY1": k1, "KEY2": k1, "KEY3": k1}) == bytes.fromhex(k1)
    assert cavp.tdes_key({"KEY1": k1, "KEY2": k2, "KEY3": k1}) == bytes.fromhex(k1 + k2)
    assert cavp.tdes_key({"KEY1": k1, "KEY2": k2, "KEY3": k3}) == bytes.fromhex(k1 + k2 + k3)
    assert cavp.tdes_key({"KEY1": k1}) is None


def test_official_tdes_files_are_loaded():
    if vectors.vectors_dir() is None:
        pytest.skip("cryptography_vectors is not installed")
    counts: dict[str, int] = {}
    files = set()
    for v in vectors.load():
        if v.cipher in NAMES and v.source.startswith("cryptography_vectors/"):
            counts[v.cipher] = counts.get(v.cipher, 0) + 1
            files.add(v.source.split(" [")[0].rsplit("/", 1)[1])
    for m in ("ECB", "CBC"):
        for kind in ("invperm", "permop", "subtab", "varkey", "vartext", "MMT1", "MMT2", "MMT3"):
            assert f"T{m}{kind}.rsp" in files
    assert not any(f.startswith("TCBCI") for f in files)   # (CBC-I, interleaved, is not CBC)
    # both sections of the SP 800-20 tables (KEYs: one key, as DES) and of MMT1 (keying option 3)
    assert counts["des-ecb"] == counts["des-cbc"] == 2 * (64 + 56 + 32 + 19 + 64) + 20
    assert counts["des-ede-ecb"] == counts["des-ede3-ecb"] == 20             # MMT2, MMT3
    assert counts["des-ede-cbc"] == counts["des-ede3-cbc"] == 20


# --------------------------------------------------------------------------- the use policy

def test_policy_single_des(rng):
    p = DES.encryption_policy(bytes.fromhex("133457799bbcdff1"))
    assert p.refusal and "single DES" in p.refusal and "FIPS 46-3" in p.refusal   # refused: withdrawn
    assert "TDEA" not in p.refusal + p.warning and "SP 800-67" not in p.refusal + p.warning
    assert p.block_limit == 1 << 32 and p.over_limit_refused and "birthday bound" in p.limit_reason
    assert "64-bit" in p.warning and "weak" not in p.warning
    for k in D.WEAK_KEYS + D.SEMI_WEAK_KEYS:
        for key in (k, bytes(b ^ 1 for b in k)):            # parity bits ignored
            p = DES.encryption_policy(key)
            assert p.refusal and "weak DES key" in p.warning, key.hex()


def test_policy_tdea(rng):
    k1, k2, k3 = (bytes.fromhex(h) for h in ("0123456789abcdef", "23456789abcdef01", "456789abcdef0123"))
    p = DES.encryption_policy(k1 + k2 + k3)                  # 3-key TDEA: refused after 2023
    assert p.refusal and "SP 800-131A Rev. 2" in p.refusal and "TDEA" in p.refusal
    assert p.block_limit == 1 << 20 and p.over_limit_refused and "SP 800-67 Rev. 2" in p.limit_reason
    p = DES.encryption_policy(k1 + k2)                       # 2-key TDEA
    assert p.refusal and "2-key" in p.refusal and p.block_limit == 1 << 20 and p.over_limit_refused
    assert "2-key" in DES.encryption_policy(k1 + k2 + k1).refusal   # keying option 2 in 24 bytes
    flip = bytes(b ^ 1 for b in k1)                          # the same key but for its parity bits
    for key in (k1 + k1, k1 + flip + k3, k1 + k2 + k2, k1 + k2 + bytes(b ^ 1 for b in k2), k1 + k1 + k1):
        p = DES.encryption_policy(key)
        assert p.refusal and "single DES" in p.refusal, key.hex()
        assert p.block_limit == 1 << 32 and p.over_limit_refused      # (if allow_weak lifts it)
    p = DES.encryption_policy(D.WEAK_KEYS[0] + k2 + k3)
    assert p.refusal and "K1 is a weak DES key" in p.warning
    with pytest.raises(ciphergrid.InvalidKeySize):
        DES.encryption_policy(bytes(12))


# --------------------------------------------------------------------------- implementations on devices

OTHER_IMPLS = [i for i in DES.implementations if i not in ("fast", "ct")]  # ("ct" is "fast")
LOP3_IMPLS = [i for i in DES.implementations if i.startswith("lop3")]


def test_implementations_declared():
    assert "fast" in DES.implementations and "reference" in DES.implementations
    assert DES.implementations["reference"].grid == "per-block"
    assert [n for n, im in DES.implementations.items() if im.constant_time] == [
        "fast", "ct", "bitsliced-v1", *LOP3_IMPLS]  # bitsliced
    assert DES.implementations["fast"] is DES.implementations["lop3-vec-keys"]
    assert all(DES.implementations[n].file == "des_lut.cl" for n in LOP3_IMPLS)
    assert DES.implementations["fast"] is DES.implementations["ct"]
    assert DES.constant_time_implementation() == "ct" and DES.implementations["ct"].batch == 32
    assert DES.defines(8) == {"DES_PASSES": 1} and DES.defines(16) == DES.defines(24) == {"DES_PASSES": 3}
    assert [n for n in NAMES if registry.lookup(n).openssl_name is None] == ["des-ctr", "des-ede-ctr", "des-ede3-ctr"]


@needs_device
@pytest.mark.parametrize("impl", OTHER_IMPLS)
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_implementation_matches_reference(kdev, impl, rng, ref, diff):
    # the reference kernel on every name; "ct" on DES and 3-key TDEA (its passes are its own); the
    # des.cl variants (knobs that do not depend on the number of passes, which "fast" covers) on
    # single DES: one program each (PoCL compile time)
    # (lean, on CPU OpenCL devices: ECB both ways and CTR, single DES and for the variants that
    # run three passes 3-key TDEA CTR too -- one kernel compile each)
    if impl in ("reference", "sp-tables", "lop3", "bitsliced-v1"):
        names = NAMES
        if lean(kdev) and impl != "reference":
            names = ["des-ecb", "des-ctr", "des-ede3-ctr"]
    else:
        names = [n for n in NAMES if n.count("-") == 1]
        if lean(kdev):
            names = ["des-ecb", "des-ctr"]
    lengths = (8, 8 * 33, 8 * 2000) if impl == "reference" else (8, 8 * 33, 8 * 4001)
    bad = []
    for name in names:
        ctr = registry.lookup(name).mode.name == "ctr"
        cases = [(f"{n + 5 * ctr} bytes", rng.data(n + 5 * ctr), rng.key(name), rng.iv(name), {})
                 for n in lengths]
        if ctr:
            cases.append(("counter wraps 2^64", rng.data(8 * 40 + 3), rng.key(name),
                          ((1 << 64) - 7).to_bytes(8, "big"), {}))
        bad += [f"{name} {b}" for b in compare_cases(name, cases, ref, diff, device=kdev,
                                                      implementation=impl)]
    assert not bad, f"{impl} on {kdev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_constant_time_requested(kdev, rng, ref):
    key, iv = rng.randbytes(24), rng.randbytes(8)
    pt = rng.data(8 * 100 + 3)
    got = ciphergrid.encrypt(pt, "des-ede3-ctr", key, iv, device=kdev, constant_time=True)
    assert got == ref.encrypt(pt, "des-ede3-ctr", key, iv)


@needs_device
@pytest.mark.parametrize("impl", ["fast", "reference", "ct", "lop3"])
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_keying_options_and_parity_on_device(kdev, impl, rng):
    k1, k2, k3 = rng.randbytes(8), rng.randbytes(8), rng.randbytes(8)
    pt = rng.data(8 * 50)

    def enc(name, key):
        return ciphergrid.encrypt(pt, name, key, device=kdev, implementation=impl)

    single = enc("des-ecb", k1)
    assert single == model_ecb(k1, pt, True) == DES.reference_ecb(k1, pt, True)
    assert enc("des-ede3-ecb", k1 + k1 + k1) == single                  # keying option 3 is DES
    assert enc("des-ede-ecb", k1 + k2) == enc("des-ede3-ecb", k1 + k2 + k1)
    assert enc("des-ede3-ecb", k1 + k2 + k3) == model_ecb(k1 + k2 + k3, pt, True)
    flipped = bytes(b ^ 1 for b in k1 + k2 + k3)                        # parity bits only
    assert enc("des-ede3-ecb", flipped) == enc("des-ede3-ecb", k1 + k2 + k3)
