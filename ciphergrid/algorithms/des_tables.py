"""DES's tables and the S-box circuits of its bitsliced kernels: the tables of FIPS 46-3 (IP,
E, P, the S-boxes in its row/column layout, PC-1, PC-2, the left shifts; IP^-1 computed as the
inverse of IP), ``permute`` and ``sbox`` over them; the two-input gate circuits of
kernels/des_bs.cl, generated from S (``bitsliced_round_c``); the published three-input (LOP3)
circuits of kernels/des_lut.cl (``lop3_round_c``) and the "lop3" key layout's bits
(``lop3_bits``).  Pure constants and functions of them: des.py's key schedule and the tests use
them, des.py is the cipher."""

from __future__ import annotations

# ---- FIPS 46-3 tables (1-based bit numbers, bit 1 = the most significant) -------------------------

IP = (58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4,
      62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
      57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3,
      61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7)
#: IP^-1: output bit IP[i] is input bit i + 1
FP = tuple(1 + IP.index(i) for i in range(1, 65))
E = (32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17,
     16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1)
P = (16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10,
     2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25)
#: S_1 .. S_8, each 4 rows of 16 columns (row = bits 1 and 6 of the group, column = bits 2..5)
S = (
    (14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7,
     0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
     4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0,
     15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13),
    (15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10,
     3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
     0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15,
     13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9),
    (10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8,
     13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
     13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7,
     1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12),
    (7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15,
     13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
     10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4,
     3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14),
    (2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9,
     14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
     4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14,
     11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3),
    (12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11,
     10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
     9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6,
     4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13),
    (4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1,
     13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
     1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2,
     6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12),
    (13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7,
     1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
     7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8,
     2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11),
)
PC1 = (57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3,
       60, 52, 44, 36, 63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45, 37,
       29, 21, 13, 5, 28, 20, 12, 4)
PC2 = (14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2,
       41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32)
SHIFTS = (1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1)


def permute(value: int, table, width: int) -> int:
    """The bits of ``value`` (``width`` bits, bit 1 the most significant) picked by ``table``."""
    out = 0
    for t in table:
        out = (out << 1) | ((value >> (width - t)) & 1)
    return out


def sbox(j: int, x: int) -> int:
    """S_{j+1} of the 6-bit group x (bit 1 of the group = bit 5 of x)."""
    row = ((x >> 4) & 2) | (x & 1)
    return S[j][16 * row + ((x >> 1) & 15)]


# ---- the bitsliced kernel's S-box circuits (kernels/des_bs.cl, generated from S by this code) -----

#: the 16 functions of two inputs, by truth table (f(0,0), f(0,1), f(1,0), f(1,1)) of (x, y)
_TWO_INPUT = {
    (0, 0, 1, 1): "{x}", (1, 1, 0, 0): "~{x}", (0, 1, 0, 1): "{y}", (1, 0, 1, 0): "~{y}",
    (0, 0, 0, 1): "{x} & {y}", (0, 0, 1, 0): "{x} & ~{y}", (0, 1, 0, 0): "{y} & ~{x}",
    (1, 0, 0, 0): "~({x} | {y})", (0, 1, 1, 0): "{x} ^ {y}", (1, 0, 0, 1): "~({x} ^ {y})",
    (0, 1, 1, 1): "{x} | {y}", (1, 0, 1, 1): "{x} | ~{y}", (1, 1, 0, 1): "{y} | ~{x}",
    (1, 1, 1, 0): "~({x} & {y})"}


def _sbox_circuit(j: int, order) -> tuple[list[tuple[str, str]], list[str]]:
    """S_{j+1} as a Boolean circuit on x0..x5 (x0 = bit 1 of the group): each output bit a tree of
    multiplexers on the inputs in ``order`` (Shannon expansion), equal subfunctions shared, trivial
    multiplexers simplified.  Returns the gates (name, C expression) and the 4 output names (bit 1
    of the S-box output first); "0" and "1" stand for constants."""
    gates: list[tuple[str, str]] = []
    by_expr: dict[str, str] = {}
    done: dict = {}

    def gate(expr: str) -> str:
        if expr not in by_expr:
            by_expr[expr] = f"t{len(gates)}"
            gates.append((by_expr[expr], expr))
        return by_expr[expr]

    def cofactor(tt, n, i, val):
        out = []
        for a in range(1 << (n - 1)):
            hi, lo = a >> (n - 1 - i), a & ((1 << (n - 1 - i)) - 1)
            out.append(tt[(hi << (n - i)) | (val << (n - 1 - i)) | lo])
        return tuple(out)

    def build(tt, vs):
        if not any(tt):
            return "0"
        if all(tt):
            return "1"
        if (tt, vs) in done:
            return done[tt, vs]
        x, rest = f"x{vs[0]}", vs[1:]
        f0, f1 = cofactor(tt, len(vs), 0, 0), cofactor(tt, len(vs), 0, 1)
        if len(vs) == 2:  # any function of two inputs: at most one gate
            y = f"x{vs[1]}"
            e = _TWO_INPUT[tt].format(x=x, y=y)
            r = e if e in (x, y) else gate(e)
        elif f0 == f1:
            r = build(f0, rest)
        else:
            a, b = build(f1, rest), build(f0, rest)
            if tuple(1 - t for t in f0) == f1:
                r = x if b == "0" else gate(f"~{x}") if b == "1" else gate(f"{x} ^ {b}")
            elif b == "0":
                r = x if a == "1" else gate(f"{x} & {a}")
            elif a == "0":
                r = gate(f"~{x}") if b == "1" else gate(f"{b} & ~{x}")
            elif b == "1":
                r = gate(f"{a} | ~{x}")
            elif a == "1":
                r = gate(f"{b} | {x}")
            else:
                r = gate(f"{b} ^ ({x} & ({a} ^ {b}))")  # x ? a : b
        done[tt, vs] = r
        return r

    outs = []
    for o in range(4):
        tt = []
        for a in range(64):
            x = [0] * 6
            for pos, v in enumerate(order):
                x[v] = (a >> (5 - pos)) & 1
            tt.append((sbox(j, sum(x[i] << (5 - i) for i in range(6))) >> (3 - o)) & 1)
        outs.append(build(tuple(tt), tuple(order)))
    return gates, outs


def _gate_cost(gates) -> int:
    return sum(e.count("&") + e.count("|") + e.count("^") + e.count("~") for _, e in gates)


#: the input orders of the S-box circuits in des_bs.cl: for each S-box the order with the fewest
#: two-input operations (then gates) of all 720 (``best_circuit_order`` searches them)
BS_ORDERS = ((3, 5, 0, 1, 2, 4), (1, 5, 4, 3, 0, 2), (0, 1, 4, 2, 3, 5), (5, 1, 4, 3, 0, 2),
             (2, 3, 4, 1, 0, 5), (0, 3, 5, 1, 2, 4), (0, 1, 5, 2, 3, 4), (4, 5, 0, 2, 1, 3))


def best_circuit_order(j: int) -> tuple:
    import itertools

    return min(((_gate_cost(g), len(g), o) for o in itertools.permutations(range(6))
                for g in (_sbox_circuit(j, o)[0],)))[2]


def bitsliced_round_c() -> str:
    """The C of des_bs.cl's round, between its GENERATED markers: each S-box's multiplexer tree
    (``_sbox_circuit`` in the order BS_ORDERS gives), fed by E and the key masks, its outputs
    XORed into the target half at their places after P."""
    p_inv = {P[q] - 1: q for q in range(32)}          # S-layer output bit -> bit of f(R, K)
    lines = ["/* BEGIN GENERATED by ciphergrid.algorithms.des_tables.bitsliced_round_c() */",
             "#define DESBS_ROUND_BODY(T, S, k) \\"]
    total = 0
    for j in range(8):
        gates, outs = _sbox_circuit(j, BS_ORDERS[j])
        cost = _gate_cost(gates)
        total += cost
        body = [f"const uint x{b} = S({E[6 * j + b] - 1}) ^ k[{6 * j + b}];" for b in range(6)]
        body += [f"const uint {n} = {e};" for n, e in gates]
        for o, name in enumerate(outs):
            if name != "0":
                body.append(f"T({p_inv[4 * j + o]}) ^= {'~0u' if name == '1' else name};")
        lines.append(f"    {{ /* S{j + 1}: {len(gates)} gates, {cost} two-input operations */ \\")
        lines += [f"        {b} \\" for b in body]
        lines.append("    } \\")
    lines[-1] = "    }"
    lines.append(f"/* END GENERATED ({total} two-input operations per round) */")
    return "\n".join(lines) + "\n"


# ---- the LOP3 kernel's S-box circuits (kernels/des_lut.cl) -------------------------------------

#: S_1 .. S_8 as circuits of three-input gates (any Boolean function of three inputs: one LOP3 on
#: NVIDIA GPUs), taken as published facts: the gate lists of Sovyn Y. (2024), "Bitslice DES S-boxes
#: with NVIDIA LOP3.LUT and x86-64 AVX-512 VPTERNLOG", as distributed with John the Ripper (23 22
#: 24 17 23 22 23 23 gates, 177 in all).  Each gate is "out in1 in2 in3 imm": out = the function
#: with truth table imm of (in1, in2, in3), bit (in1 << 2 | in2 << 1 | in3) of imm (LOP3's and
#: VPTERNLOG's convention); a1..a6 are the six input bits of the group (a1 = bit 1, the most
#: significant), x1..x4 the output bits (x1 = bit 1).  tests/test_des.py evaluates them against S.
LOP3_SBOXES = (
    """t0 a3 a2 a1 29; t1 a6 a5 t0 96; t2 a6 a5 a1 35; t3 a4 a3 t2 2e; t4 a5 a2 t1 9c;
    t5 a4 t0 t4 61; x1 t1 t3 t5 d1; t6 a5 a1 t0 94; t7 a4 t0 t1 6b; t8 a1 t5 t7 d8; t9 a6 a4 a3 89;
    t10 t0 t1 t9 e9; x2 t6 t8 t10 c6; t11 a6 a2 t7 88; t12 a6 a4 x1 01; t13 a3 a1 t12 b6;
    t14 a3 t0 t1 7c; t15 a5 t5 t14 79; x4 t11 t13 t15 c6; t16 a4 a1 t2 cd; t17 t8 t12 t16 da;
    t18 a6 t4 t15 81; x3 t14 t17 t18 e3""",
    """t0 a5 a4 a1 69; t1 a6 a3 a2 c1; t2 a6 a5 a1 c7; t3 a4 a3 t2 28; t4 a6 a2 t3 94;
    x2 t0 t1 t4 d2; t5 a5 a1 t1 19; t6 a5 a2 t0 98; t7 a4 a2 t3 21; t8 a6 a3 t7 09; x1 t5 t6 t8 c9;
    t9 a6 a1 x1 74; t10 a4 t4 t9 68; t11 a6 a5 x1 4d; t12 a2 x2 t11 69; x4 t9 t10 t12 c5;
    t13 a5 x1 t10 09; t14 t12 x4 t13 69; t15 t1 t2 x2 b7; t16 a2 t3 t9 e2; t17 t4 t10 t15 92;
    x3 t14 t16 t17 f2""",
    """t0 a5 a3 a1 37; t1 a6 a2 t0 96; t2 a6 a5 a4 63; t3 a4 a1 t2 68; t4 a2 a1 t2 80;
    x4 t1 t3 t4 c9; t5 a4 t0 t1 62; t6 a4 a3 a2 29; t7 a1 t2 t6 69; t8 a3 a1 x4 ae; t9 a4 a2 t8 19;
    x1 t5 t7 t9 c9; t10 a6 a5 a2 06; t11 a4 t7 t10 6c; t12 a4 a3 t11 a9; t13 t6 x1 t11 83;
    t14 a5 x4 t13 26; x2 a3 t12 t14 39; t15 a3 x1 t10 a7; t16 t13 t14 t15 56; t17 a1 t9 x2 0d;
    t18 a5 x4 x2 4e; t19 a2 x1 t18 96; x3 t16 t17 t19 b8""",
    """t0 a5 a4 a1 c9; t1 a3 a2 t0 64; t2 a5 a4 a3 db; t3 a1 t1 t2 6d; t4 a5 a4 a1 93;
    t5 a3 a2 t4 46; t6 a1 t2 t5 49; t7 a1 t3 t5 2c; t8 a5 t6 t7 16; t9 a3 a2 t8 6a;
    t10 t2 t3 t6 e4; t11 a4 a2 t10 d8; t12 t3 t9 t11 96; x1 a6 t6 t12 c6; x2 a6 t6 t12 9c;
    x3 a6 t3 t9 c6; x4 a6 t3 t9 63""",
    """t0 a6 a4 a3 46; t1 a5 a1 t0 e9; t2 a6 a2 t1 69; t3 a6 a3 a1 97; t4 a5 a2 t3 27;
    x2 a4 t2 t4 c9; t5 a6 a2 t3 8c; t6 a5 a2 t0 53; t7 a4 a1 t6 94; t8 a3 a1 x2 25; t9 a6 t1 t8 6e;
    x3 t5 t7 t9 c6; t10 a4 t0 t1 29; t11 a4 a2 a1 76; t12 a4 t3 t11 b6; t13 a5 a2 a1 1f;
    t14 a6 x2 t13 6a; x1 t10 t12 t14 c6; t15 a5 a2 x2 b9; t16 a3 x1 t15 e6; t17 t0 t1 t2 6b;
    t18 t8 t12 t17 24; x4 x3 t16 t18 b4""",
    """t0 a6 a5 a1 36; t1 a4 a3 t0 6c; t2 a2 a1 t0 1e; t3 a6 a4 t2 69; t4 a6 a1 t3 3a;
    t5 t0 t2 t4 d2; x4 t1 t3 t5 c6; t6 a5 t1 t4 96; t7 a4 t3 t5 ba; t8 a6 a4 t6 09; t9 t0 x4 t8 9a;
    x3 t6 t7 t9 b4; t10 a6 a5 t3 4a; t11 a2 t1 t10 9a; t12 a2 t3 t4 24; t13 a5 t1 t12 a9;
    x1 t7 t11 t13 e1; t14 a6 a5 x4 51; t15 a2 x3 t14 69; t16 t3 t4 x3 6b; t17 t2 t10 t16 96;
    x2 x1 t15 t17 3a""",
    """t0 a5 a4 a2 59; t1 a6 a5 a4 49; t2 a3 a1 t1 96; t3 a2 a1 t2 b8; t4 a6 a3 t3 9c;
    x4 t0 t2 t4 36; t5 a1 t0 t4 65; t6 a5 a2 a1 74; t7 a6 t0 t1 49; t8 a6 t2 t5 c2; t9 a6 t7 t8 61;
    x1 t5 t6 t9 47; t10 a5 t0 t2 69; t11 a4 a1 t7 ab; t12 a4 t1 t3 65; t13 a5 a1 t5 25;
    t14 a6 t12 t13 c6; x3 t10 t11 t14 74; t15 x4 t5 t11 96; t16 a4 a2 t12 b9; t17 a6 a4 t16 8a;
    t18 a1 t1 t4 0e; x2 t15 t17 t18 4b""",
    """t0 a5 a4 a3 56; t1 a5 a2 t0 1b; t2 a6 a4 t1 96; t3 a6 t0 t2 06; t4 a2 t0 t3 a4;
    t5 a5 a4 t4 a6; x2 a1 t2 t5 6c; t6 a4 t5 x2 c5; t7 a1 t0 t6 69; t8 a2 a1 t3 17; t9 a5 t6 t8 c9;
    t10 a4 a2 t9 a6; x4 a6 t7 t10 36; t11 t4 t5 x2 76; t12 a3 a2 t7 9a; t13 a3 t3 t8 24;
    t14 t6 t10 t13 6e; x1 t11 t12 t14 d1; t15 a4 t1 x1 91; t16 a3 t7 t15 69; t17 t3 t11 t13 ba;
    t18 t10 x1 t17 5b; x3 t11 t16 t18 47""",
)


def lop3_gates(j: int) -> list[tuple[str, str, str, str, int]]:
    """The gates of S_{j+1} (``LOP3_SBOXES``) as (out, in1, in2, in3, imm)."""
    out = []
    for g in LOP3_SBOXES[j].split(";"):
        o, a, b, c, imm = g.split()
        out.append((o, a, b, c, int(imm, 16)))
    return out


def lop3_eval(imm: int, a: int, b: int, c: int, mask: int = 1) -> int:
    """The gate with truth table ``imm`` on words a, b, c (bitwise, ``mask`` the word's bits)."""
    r = 0
    for i in range(8):
        if (imm >> i) & 1:
            r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return r & mask


def _three_input_exprs() -> dict[int, tuple[int, str]]:
    """For each of the 256 functions of three inputs (truth table as in LOP3: a = 0xf0, b = 0xcc,
    c = 0xaa) a C expression in {a} {b} {c} with the fewest &, |, ^, ~ (cost, text).  ptxas makes
    one LOP3 of any of them; other compilers get short code."""
    best = {0xF0: (0, "{a}"), 0xCC: (0, "{b}"), 0xAA: (0, "{c}"), 0x00: (0, "0u"), 0xFF: (0, "~0u")}
    changed = True
    while changed:
        changed = False
        items = list(best.items())

        def offer(tt, cost, text):
            nonlocal changed
            if tt not in best or cost < best[tt][0]:
                best[tt] = (cost, text)
                changed = True
        for t, (c, e) in items:
            offer(~t & 0xFF, c + 1, f"~{e}" if c == 0 else f"~({e})")
        for t1, (c1, e1) in items:
            for t2, (c2, e2) in items:
                if c1 + c2 + 1 > 6:
                    continue
                p1 = e1 if c1 == 0 or e1.startswith("~") and c1 == 1 else f"({e1})"
                p2 = e2 if c2 == 0 or e2.startswith("~") and c2 == 1 else f"({e2})"
                offer(t1 & t2, c1 + c2 + 1, f"{p1} & {p2}")
                offer(t1 | t2, c1 + c2 + 1, f"{p1} | {p2}")
                offer(t1 ^ t2, c1 + c2 + 1, f"{p1} ^ {p2}")
    return best


#: E position (0..47) of the S-box input that holds bit q + 1 of the source half as the LOP3
#: kernel stores it (its first place in E); the other place of the 16 bits E repeats is "second"
LOP3_PRIMARY = tuple(E.index(q + 1) for q in range(32))
#: the 16 E positions that repeat a bit (in E order): the LOP3 kernel computes them
LOP3_SECOND = tuple(e for e in range(48) if LOP3_PRIMARY[E[e] - 1] != e)


def lop3_round_c() -> str:
    """The C of des_lut.cl's round, between its GENERATED markers: the S-box inputs (the stored
    source half, keyed already, or for the 16 repeated bits that word XOR a mask), the 177 gates of
    LOP3_SBOXES, and the target half's update T = T ^ f ^ mask (one three-input XOR each)."""
    exprs = _three_input_exprs()
    p_inv = {P[q] - 1: q for q in range(32)}          # S-layer output bit -> bit of f(R, K)
    lines = ["/* BEGIN GENERATED by ciphergrid.algorithms.des_tables.lop3_round_c() */",
             "#define DESLUT_ROUND_BODY(T, S, K, LOP3) \\"]
    total = 0
    for j in range(8):
        gates = lop3_gates(j)
        total += len(gates)
        body = []
        for b in range(6):
            e = 6 * j + b
            q = E[e] - 1
            if e in LOP3_SECOND:
                body.append(f"const uint a{b + 1} = S({q}) ^ K({32 + LOP3_SECOND.index(e)});")
            else:
                body.append(f"const uint a{b + 1} = S({q});")
        for o, a, b, c, imm in gates:
            body.append(f"const uint {o} = LOP3({a}, {b}, {c}, 0x{imm:02x}, "
                        f"{exprs[imm][1].format(a=a, b=b, c=c)});")
        for o in range(4):
            q = p_inv[4 * j + o]
            body.append(f"T({q}) = T({q}) ^ x{o + 1} ^ K({q});")
        lines.append(f"    {{ /* S{j + 1}: {len(gates)} gates */ \\")
        lines += [f"        {b} \\" for b in body]
        lines.append("    } \\")
    lines[-1] = "    }"
    lines.append(f"/* END GENERATED ({total} gates, 16 key XORs and 32 three-input XORs per round) */")
    return "\n".join(lines) + "\n"


def lop3_bits(bits: list, zero) -> list:
    """The bits of the "lop3" layout for the round keys' bits ``bits[r][e]`` (bit e + 1 of the
    r-th round key the rounds use): any values XORed with ``^`` (0 / 1, or the sets of key bits
    ``des._plan`` traces), ``zero`` the XOR of none.

    The kernel keeps each half XORed with a mask M (bit q: the key bit at q's first place in E,
    LOP3_PRIMARY, of the next round that reads the half; 0 when none does), so the S-box inputs are
    the stored words and a round needs no key XOR but for the 16 repeated bits.  Per pass: 32 words
    that re-key the half its first round reads (M_old ^ M_new: in pass 0 half 1 is plain; at a
    pass boundary the same half is read by two rounds in a row), then 16 rounds of 48 words: 32 for
    the target half (pass p, round m: half (m + p) mod 2), M_old ^ M_new (the update is
    T ^ f ^ that, one three-input XOR), then 16 for the repeated inputs, K[second] ^ K[first].
    After the passes, 32 words that clear half 0's mask (the last round writes half 1, leaving its
    mask 0).  800 x passes + 32 words."""
    n = len(bits)
    target = [((r % 16) + r // 16) % 2 for r in range(n)]

    def first(r):                                   # M for a half next read by round r
        return [bits[r][LOP3_PRIMARY[q]] for q in range(32)]

    def next_read(h, r):                            # the first round > r that reads half h
        return next((s for s in range(r + 1, n) if target[s] != h), None)

    m = [[zero] * 32, [zero] * 32]
    out = []
    for r in range(n):
        h = target[r]
        if r % 16 == 0:                             # a pass starts: key the half it reads first
            new = first(r)
            out += [a ^ b for a, b in zip(m[1 - h], new)]
            m[1 - h] = new
        assert m[1 - h] == first(r)
        s = next_read(h, r)
        new = first(s) if s is not None else [zero] * 32
        out += [a ^ b for a, b in zip(m[h], new)]
        out += [bits[r][e] ^ bits[r][LOP3_PRIMARY[E[e] - 1]] for e in LOP3_SECOND]
        m[h] = new
    assert target[-1] == 1 and not any(m[1])
    out += m[0]
    m.clear()
    return out
