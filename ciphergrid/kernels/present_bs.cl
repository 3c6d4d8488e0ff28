/* present_bs.cl - constant-time (bitsliced, table-free) PRESENT-80/128 for the generic mode kernels
 * (modes.cl): implementations "fast" and "ct" of algorithms/present.py, and its "bs-*" variants
 * (knobs PRESENT_BS_KEY_MASKS, PRESENT_BS_TMASKS, PRESENT_BS_LOP3, PRESENT_BS_PTX below).
 *
 * No table, no secret-dependent memory access, no secret-dependent branch: every array index is a
 * compile-time constant (the loops over state words are fully unrolled), round keys are read at
 * addresses that depend on the round number alone (the same for every work-item), and the only
 * branches test the round counter.  sBoxLayer is a Boolean circuit, addRoundKey XORs, and pLayer -
 * a bit permutation - is register renaming: the S-box outputs are simply written to the state
 * words of their new bit positions.
 *
 * Layout.  A work-item takes CG_BATCH = 32 blocks (modes.cl: block k in s[2k], s[2k + 1], the
 * little-endian words of its bytes 0..3 and 4..7) and bitslices them in place: for each word w the
 * 32 words s[w + 2k] are a 32x32 bit matrix, and transposing it leaves in s[w + 2j] bit j of word w
 * of every block (bit k = block k).  The paper's state is the big-endian number of the block bytes
 * (algorithms/present.py): bit j of word 0 is state bit 32 + (j ^ 24), bit j of word 1 is state
 * bit j ^ 24 (the byte swap of the big-endian reading is an index permutation, so no swap is
 * executed).  PRESENT_BS_AT(i) below is the array index of state bit i.
 *
 * Round keys (key layout "bitsliced", made by PRESENT.expand): word 64 r + i is 0 or 0xffffffff,
 * bit i of the r-th round key of the schedule (encryption K_1 .. K_32, decryption K_32 .. K_1),
 * then the plain schedule (64 words: high, low word of each key).  PRESENT_BS_KEY_MASKS (default 1)
 * reads the masks (4 per S-box, one 128-bit load); 0 derives them from the plain keys with two
 * operations per bit (reads 256 B per schedule instead of 8 KiB: for devices where the key reads,
 * not the logic, limit).  Either way the addresses depend on the round number only.
 *
 * S-box: the 14-gate circuit (4 AND/OR, 9 XOR, 1 NOT) of N. T. Courtois, D. Hulme, T. Mourouzis,
 * "Solving Circuit Optimisation Problems in Cryptography and Cryptanalysis" (IACR ePrint 2011/475),
 * as used in the bitsliced PRESENT of M. Albrecht, N. Courtois, D. Hulme, G. Song (2011).  Inverse
 * S-box: a circuit of ~23 gates written for this file from the cofactors of S^-1 with respect to
 * its least significant input bit (S^-1 = g(x1, x2, x3) ^ x0 f(x1, x2, x3), each g and f a 2- or
 * 3-gate function).  Both are checked on all 16 inputs by tests/test_present.py (in Python) and by
 * the known answers and the comparisons with the model on every device.
 *
 * Cost per 32 blocks: 31 x (16 x 14 + 64) = 8,928 logic operations for the rounds of encryption
 * (~35 per block, ~4.4 per byte), 64 for the last key, 2 x 2 x ~112 for the transposes; decryption
 * ~31 x (16 x 23 + 64).  Registers: the 64 state words, the 64 words of the next state (the
 * compiler renames them; the copy at the end of a round is no instruction) and a few temporaries.
 * The round loop is rolled (PRESENT_BS_UNROLL, default 1: one round's code, ~300 instructions,
 * once in the instruction cache, and the key loads cannot be hoisted out of the caller's loop).
 */
#define CG_BLOCK_WORDS 2
#ifndef CG_BATCH
#define CG_BATCH 32
#endif
#if CG_BATCH != 32
#error "present_bs.cl bitslices 32 blocks per work-item: CG_BATCH must be 32"
#endif
#ifndef PRESENT_ROUNDS
#define PRESENT_ROUNDS 31
#endif
#ifndef PRESENT_BS_KEY_MASKS
#define PRESENT_BS_KEY_MASKS 1
#endif
/* PRESENT_BS_TMASKS (default 0): 1 = the transposes take their three masks from registers (loaded
 * from the key buffer, key layouts "bitsliced-t" and "bitsliced-lop3*", uint4 PRESENT_BS_CONSTS), so
 * that each half-swap is one LOP3 (a mask as an immediate costs a second one: LOP3 has one
 * immediate operand). */
#ifndef PRESENT_BS_TMASKS
#define PRESENT_BS_TMASKS 0
#endif
/* PRESENT_BS_LOP3 (default 0): encryption with a 3-input-LUT circuit of S and its key layout (see
 * "LUT circuits" below): 1 = "bitsliced-lop3" (key added at the S-box inputs), 2 =
 * "bitsliced-lop3o" (the next round's key added by the S-box output gates). */
#ifndef PRESENT_BS_LOP3
#define PRESENT_BS_LOP3 0
#endif
/* uint4 index of the transpose masks (0x0f0f0f0f, 0x33333333, 0x55555555, 0) in those layouts */
#define PRESENT_BS_CONSTS 528

#define CG_ENC_LOCALS
#define CG_ENC_SETUP(k) GLOBAL_RO const uint4 *present_bsk = (GLOBAL_RO const uint4 *)(k);
#define CG_ENC_PARAMS , GLOBAL_RO const uint4 *RESTRICT bsk
#define CG_ENC_ARGS , present_bsk
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(k) GLOBAL_RO const uint4 *present_bsk = (GLOBAL_RO const uint4 *)(k);
#define CG_DEC_PARAMS , GLOBAL_RO const uint4 *RESTRICT bsk
#define CG_DEC_ARGS , present_bsk

/* the array index of state bit i (see the layout above) */
#define PRESENT_BS_AT(i) ((i) >= 32 ? 2 * (((i) - 32) ^ 24) : 2 * ((i) ^ 24) + 1)
/* pLayer: bit i moves to bit 16 i mod 63, bit 63 stays */
#define PRESENT_BS_P(i) ((i) == 63 ? 63 : (16 * (i)) % 63)

/* the masks of bits 4n .. 4n+3 of round key r of the schedule */
DEVICE_FN void present_bs_key4(GLOBAL_RO const uint4 *RESTRICT bsk, int r, int n, uint *k)
{
#if PRESENT_BS_KEY_MASKS
    const uint4 m = bsk[16 * r + n];
    k[0] = m.x; k[1] = m.y; k[2] = m.z; k[3] = m.w;
#else
    /* the plain schedule after the 2,048 masks: (high, low) word of each round key */
    GLOBAL_RO const uint *plain = (GLOBAL_RO const uint *)(bsk + 512);
    const uint w = plain[2 * r + (n < 8 ? 1 : 0)];
#pragma unroll
    for (int b = 0; b < 4; b++) k[b] = 0u - ((w >> ((4 * n + b) & 31)) & 1u);
#endif
}

/* S: x[b] = bit b of the nibble (x[0] least significant), in place */
DEVICE_FN void present_bs_sbox(uint *x)
{
    /* the circuit's inputs X0..X3 and outputs Y0..Y3 run from the most significant bit */
    const uint X0 = x[3], X1 = x[2], X2 = x[1], X3 = x[0];
    uint T1 = X2 ^ X1;
    uint T2 = X1 & T1;
    const uint T3 = X0 ^ T2;
    const uint Y3 = X3 ^ T3;
    T2 = T1 & T3;
    T1 ^= Y3;
    T2 ^= X1;
    const uint T4 = X3 | T2;
    const uint Y2 = T1 ^ T4;
    T2 ^= ~X3;
    const uint Y0 = Y2 ^ T2;
    T2 |= T1;
    const uint Y1 = T3 ^ T2;
    x[0] = Y3; x[1] = Y2; x[2] = Y1; x[3] = Y0;
}

/* S^-1, same convention: y = g(x1, x2, x3) ^ (x0 & f(x1, x2, x3)) for each output bit */
DEVICE_FN void present_bs_inv_sbox(uint *x)
{
    const uint x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    const uint t12 = x1 ^ x2, t13 = x1 ^ x3;
    x[0] = ~(x0 ^ x2 ^ (x1 & x3));
    x[1] = x1 ^ (x3 & ~t12) ^ (x0 & (t13 | ~t12));
    x[2] = ~(x1 & x2) ^ (x3 & ~x1) ^ (x0 & (t12 | t13));
    x[3] = (x0 | x1) ^ x2 ^ x3 ^ (x0 & x2 & t13);
}

/* one round of encryption: addRoundKey(key r), sBoxLayer, pLayer */
DEVICE_FN void present_bs_round(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
    uint t[64];
#pragma unroll
    for (int n = 0; n < 16; n++) {
        uint k[4], x[4];
        present_bs_key4(bsk, r, n, k);
#pragma unroll
        for (int b = 0; b < 4; b++) x[b] = s[PRESENT_BS_AT(4 * n + b)] ^ k[b];
        present_bs_sbox(x);
#pragma unroll
        for (int b = 0; b < 4; b++) t[PRESENT_BS_AT(PRESENT_BS_P(4 * n + b))] = x[b];
    }
#pragma unroll
    for (int i = 0; i < 64; i++) s[i] = t[i];
}

/* one round of decryption: pLayer^-1, sBoxLayer^-1, addRoundKey(key r) */
DEVICE_FN void present_bs_inv_round(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
    uint t[64];
#pragma unroll
    for (int n = 0; n < 16; n++) {
        uint k[4], x[4];
        present_bs_key4(bsk, r, n, k);
#pragma unroll
        for (int b = 0; b < 4; b++) x[b] = s[PRESENT_BS_AT(PRESENT_BS_P(4 * n + b))];
        present_bs_inv_sbox(x);
#pragma unroll
        for (int b = 0; b < 4; b++) t[PRESENT_BS_AT(4 * n + b)] = x[b] ^ k[b];
    }
#pragma unroll
    for (int i = 0; i < 64; i++) s[i] = t[i];
}

DEVICE_FN void present_bs_add_key(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
#pragma unroll
    for (int n = 0; n < 16; n++) {
        uint k[4];
        present_bs_key4(bsk, r, n, k);
#pragma unroll
        for (int b = 0; b < 4; b++) s[PRESENT_BS_AT(4 * n + b)] ^= k[b];
    }
}

/* ---- bitslicing: 32x32 bit-matrix transposes (each its own inverse).  Swap stage sh exchanges
 * the bits of a (row k) at positions with bit sh set with the bits of b (row k + sh) at positions
 * with it clear; stages 16 and 8 move whole bytes (one byte permutation per word). -------------- */
#define PRESENT_BS_SWAP(a, b, sh, m)                                \
    {                                                                \
        const uint sa_ = (a), sb_ = (b), sm_ = (m);                  \
        (a) = (sa_ & sm_) | ((sb_ << (sh)) & ~sm_);                  \
        (b) = ((sa_ >> (sh)) & sm_) | (sb_ & ~sm_);                  \
    }
#define PRESENT_BS_SWAP_BYTES(a, b, sel_a, sel_b)                   \
    {                                                                \
        const uint sa_ = (a), sb_ = (b);                             \
        (a) = BYTE_PERM(sa_, sb_, (sel_a));                          \
        (b) = BYTE_PERM(sa_, sb_, (sel_b));                          \
    }

/* the matrix s[o + 2k], k < 32 (o a compile-time constant after inlining); m4, m2, m1 = 0x0f0f0f0f,
 * 0x33333333, 0x55555555 (literals, or registers: PRESENT_BS_TMASKS) */
DEVICE_FN void present_bs_transpose32(uint *s, const int o, const uint m4, const uint m2, const uint m1)
{
#pragma unroll
    for (int k = 0; k < 16; k++) PRESENT_BS_SWAP_BYTES(s[o + 2 * k], s[o + 2 * (k + 16)], 0x5410u, 0x7632u)
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 8) == 0) PRESENT_BS_SWAP_BYTES(s[o + 2 * k], s[o + 2 * (k + 8)], 0x6240u, 0x7351u)
    }
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 4) == 0) PRESENT_BS_SWAP(s[o + 2 * k], s[o + 2 * (k + 4)], 4, m4)
    }
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 2) == 0) PRESENT_BS_SWAP(s[o + 2 * k], s[o + 2 * (k + 2)], 2, m2)
    }
#pragma unroll
    for (int k = 0; k < 32; k += 2) PRESENT_BS_SWAP(s[o + 2 * k], s[o + 2 * (k + 1)], 1, m1)
}

#if PRESENT_BS_TMASKS
#define PRESENT_BS_TM_DECL(bsk) const uint4 tm_ = (bsk)[PRESENT_BS_CONSTS];
#define PRESENT_BS_TM tm_.x, tm_.y, tm_.z
#else
#define PRESENT_BS_TM_DECL(bsk)
#define PRESENT_BS_TM 0x0f0f0f0fu, 0x33333333u, 0x55555555u
#endif

DEVICE_FN void present_bs_transpose(uint *s, const uint m4, const uint m2, const uint m1)
{
    present_bs_transpose32(s, 0, m4, m2, m1);
    present_bs_transpose32(s, 1, m4, m2, m1);
}

/* ---- the uniform batch interface: CG_BATCH = 32 blocks, block k in s[2k], s[2k + 1].  One rolled
 * loop over the rounds, the transposes inside it (as in aes_bs.cl: the caller's stores then see
 * loop results, so the compiler cannot sink the transpose into each block's conditional store).
 * Branches test the round counter only. */
#ifndef PRESENT_BS_UNROLL
#define PRESENT_BS_UNROLL 1
#endif
#define PRESENT_BS_PRAGMA_(x) _Pragma(#x)
#define PRESENT_BS_PRAGMA(x) PRESENT_BS_PRAGMA_(x)

#if PRESENT_BS_LOP3 == 0
DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    PRESENT_BS_TM_DECL(bsk)
    PRESENT_BS_PRAGMA(unroll PRESENT_BS_UNROLL)
    for (int r = 0; r <= PRESENT_ROUNDS + 1; r++) {
        if (r == 0) {
            present_bs_transpose(s, PRESENT_BS_TM);     /* blocks -> bitsliced */
        } else if (r <= PRESENT_ROUNDS) {
            present_bs_round(s, bsk, r - 1);            /* K_r, S, P */
        } else {
            present_bs_add_key(s, bsk, PRESENT_ROUNDS); /* K_32 */
            present_bs_transpose(s, PRESENT_BS_TM);     /* bitsliced -> blocks */
        }
    }
}
#else
/* ---- LUT circuits (PRESENT_BS_LOP3).  On NVIDIA GPUs any Boolean function of three words is one
 * instruction (LOP3); each gate below is one (PRESENT_BS_G).  The 14-gate circuit of
 * present_bs_sbox plus the key XORs compile to 12 per S-box.  algorithms/present.py holds the
 * circuits (LOP3_GATES, LOP3O_GATES: found for this file with a SAT solver; tests/test_present.py
 * checks them on all inputs) and writes the masks (lop3_masks) so that the state words hold the
 * true state, or for the bits a circuit keys early the state XOR the next round key:
 *   1 ("bitsliced-lop3"): the four input masks of S-box n (K_r's bits 4n..4n+3) are XORed into its
 *     inputs (4 gates), then a 7-gate circuit of S (none of 6 gates exists): 11 per S-box, 176 per
 *     round; K_32 after the rounds.
 *   2 ("bitsliced-lop3x"): the same, but the gate of y0 (g0 ^ g8) also XORs the next round key's
 *     bit n (pLayer moves y0 of S-box n to bit n): S-boxes 0..3 take keyed inputs and need no
 *     XOR gates: 4 x 7 + 12 x 11 = 160 per round.  K_1's bits 0..15 before round 1.
 *   3 ("bitsliced-lop3o"): a 9-gate circuit of S whose four output gates are XORs of two words,
 *     so each also XORs the next round key's bit (the mask of output j of S-box n is K_(r+1)'s bit
 *     P(4n + j), complemented for the XNOR outputs): no input XOR at all, 9 per S-box, 144 per
 *     round (the SAT search finds no such circuit of 8 gates, nor of 7 with two outputs of two
 *     inputs).  K_1 before round 1, nothing after round 31.
 * Layout (uint words): 64 masks added before round 1, 31 x 64 S-box masks (round r: from word
 * 64 + 64 (r - 1)), 64 masks added after round 31, the transpose masks (uint4 PRESENT_BS_CONSTS);
 * decryption uses the layout of "bitsliced-t". */
/* PRESENT_BS_PTX (default 1): on NVIDIA compilers each gate is spelled as inline PTX lop3 (NVVM
 * re-associates the expressions and the LOP3 count grows back: 12 per S-box instead of 11); other
 * compilers evaluate the C expression.  PRESENT_BS_G(a, b, c, T, expr): bit (A + 2 B + 4 C) of T,
 * which is PTX's table for the operands (c, b, a). */
#ifndef PRESENT_BS_PTX
#define PRESENT_BS_PTX 1
#endif
#if PRESENT_BS_PTX && (defined(__CUDACC__) || defined(cl_nv_pragma_unroll))
#define PRESENT_BS_DEF_LOP3(T)                                                              \
    DEVICE_FN uint present_bs_lop3_##T(uint a, uint b, uint c)                              \
    {                                                                                       \
        uint d;                                                                             \
        asm("lop3.b32 %0, %1, %2, %3, " #T ";" : "=r"(d) : "r"(c), "r"(b), "r"(a));          \
        return d;                                                                           \
    }
PRESENT_BS_DEF_LOP3(0x2d) PRESENT_BS_DEF_LOP3(0xac) PRESENT_BS_DEF_LOP3(0xc6)
PRESENT_BS_DEF_LOP3(0x63) PRESENT_BS_DEF_LOP3(0x69) PRESENT_BS_DEF_LOP3(0x5a)
PRESENT_BS_DEF_LOP3(0x87) PRESENT_BS_DEF_LOP3(0x96)
PRESENT_BS_DEF_LOP3(0xe8) PRESENT_BS_DEF_LOP3(0x93) PRESENT_BS_DEF_LOP3(0x94)
#define PRESENT_BS_G(a, b, c, T, expr) present_bs_lop3_##T((a), (b), (c))
#else
#define PRESENT_BS_G(a, b, c, T, expr) (expr)
#endif

#if PRESENT_BS_LOP3 == 1 || PRESENT_BS_LOP3 == 2
/* y = S(x ^ m) ^ (e, 0, 0, 0): algorithms/present.py LOP3_GATES, y0's gate also adding e */
DEVICE_FN void present_bs_lop3_sbox(const uint *x, const uint4 m, const uint e, uint *y)
{
    const uint g0 = x[0] ^ m.x, g1 = x[1] ^ m.y, g2 = x[2] ^ m.z, g3 = x[3] ^ m.w;
    const uint g4 = PRESENT_BS_G(g1, g2, g3, 0x2d, g3 ^ (~g1 | g2));
    const uint g5 = PRESENT_BS_G(g1, g2, g4, 0xac, g2 ^ (g4 & (g1 ^ g2)));
    const uint g6 = PRESENT_BS_G(g0, g4, g5, 0xc6, (g0 ^ g4) ^ (g5 & g0));
    const uint g7 = PRESENT_BS_G(g0, g4, g5, 0x63, ~g4 ^ (g5 & ~g0));
    const uint g8 = PRESENT_BS_G(g1, g2, g4, 0x69, ~(g1 ^ g2 ^ g4));
    const uint g9 = PRESENT_BS_G(g0, e, g8, 0x96, g0 ^ e ^ g8);
    const uint g10 = PRESENT_BS_G(g6, g7, g8, 0x87, g8 ^ ~(g6 & g7));
    y[0] = g9; y[1] = g7; y[2] = g10; y[3] = g6;
}

#elif PRESENT_BS_LOP3 == 3
/* y = S(x) ^ e ^ (1, 0, 1, 1): algorithms/present.py LOP3O_GATES */
DEVICE_FN void present_bs_lop3o_sbox(const uint *x, const uint4 e, uint *y)
{
    const uint x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    const uint h0 = PRESENT_BS_G(x1, x2, x3, 0x2d, x3 ^ (~x1 | x2));
    const uint h1 = PRESENT_BS_G(x0, x1, h0, 0x96, x0 ^ x1 ^ h0);
    const uint h2 = PRESENT_BS_G(x1, x2, x3, 0xe8, (x1 & x2) ^ (x3 & (x1 ^ x2)));
    const uint h3 = PRESENT_BS_G(x0, h0, h2, 0x93, ~h0 ^ (h2 & x0));
    const uint h4 = PRESENT_BS_G(h0, h1, h3, 0x94, (~h0 & h1) ^ (h3 & (~h0 | h1)));
    y[0] = PRESENT_BS_G(x2, h1, e.x, 0x96, x2 ^ h1 ^ e.x);
    y[1] = PRESENT_BS_G(h2, h3, e.y, 0x96, h2 ^ h3 ^ e.y);
    y[2] = PRESENT_BS_G(x2, h4, e.z, 0x96, x2 ^ h4 ^ e.z);
    y[3] = PRESENT_BS_G(x0, h3, e.w, 0x96, x0 ^ h3 ^ e.w);
}
#else
#error "PRESENT_BS_LOP3 must be 0, 1, 2 or 3"
#endif

/* masks added to the state: words 4q + 4n .. 4q + 4n + 3 to state bits 4n .. 4n + 3, n0 <= n < n1 */
DEVICE_FN void present_bs_lop3_add(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, const int q,
                                   const int n0, const int n1)
{
#pragma unroll
    for (int n = n0; n < n1; n++) {
        const uint4 m = bsk[q + n];
        s[PRESENT_BS_AT(4 * n)] ^= m.x;
        s[PRESENT_BS_AT(4 * n + 1)] ^= m.y;
        s[PRESENT_BS_AT(4 * n + 2)] ^= m.z;
        s[PRESENT_BS_AT(4 * n + 3)] ^= m.w;
    }
}

/* round r (0-based): sBoxLayer with the key in the circuit, pLayer as renaming.  Masks of the round
 * (uint4 16 + 16 r ..): PRESENT_BS_LOP3 1: S-box n's input masks at + n; 2: + n >> 2 holds the
 * output masks e of S-boxes n & ~3 .. (n & ~3) + 3, + n (n >= 4) the input masks of S-box n (the
 * inputs of S-boxes 0..3, state bits 0..15, come keyed from the output gates of y0: bit n = P(4n));
 * 3: + n the four output masks of S-box n. */
DEVICE_FN void present_bs_lop3_round(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, const int r)
{
    uint t[64];
    GLOBAL_RO const uint4 *RESTRICT rm = bsk + 16 + 16 * r;
#if PRESENT_BS_LOP3 == 2
    const uint4 e0 = rm[0], e1 = rm[1], e2 = rm[2], e3 = rm[3];
    const uint e[16] = {e0.x, e0.y, e0.z, e0.w, e1.x, e1.y, e1.z, e1.w,
                        e2.x, e2.y, e2.z, e2.w, e3.x, e3.y, e3.z, e3.w};
#endif
#pragma unroll
    for (int n = 0; n < 16; n++) {
        uint x[4], y[4];
#pragma unroll
        for (int b = 0; b < 4; b++) x[b] = s[PRESENT_BS_AT(4 * n + b)];
#if PRESENT_BS_LOP3 == 1
        present_bs_lop3_sbox(x, rm[n], 0, y);
#elif PRESENT_BS_LOP3 == 2
        present_bs_lop3_sbox(x, n < 4 ? MAKE_UINT4(0, 0, 0, 0) : rm[n], e[n], y);
#else
        present_bs_lop3o_sbox(x, rm[n], y);
#endif
#pragma unroll
        for (int b = 0; b < 4; b++) t[PRESENT_BS_AT(PRESENT_BS_P(4 * n + b))] = y[b];
    }
#pragma unroll
    for (int i = 0; i < 64; i++) s[i] = t[i];
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    PRESENT_BS_TM_DECL(bsk)
    PRESENT_BS_PRAGMA(unroll PRESENT_BS_UNROLL)
    for (int r = 0; r <= PRESENT_ROUNDS + 1; r++) {
        if (r == 0) {
            present_bs_transpose(s, PRESENT_BS_TM);     /* blocks -> bitsliced */
#if PRESENT_BS_LOP3 == 2
            present_bs_lop3_add(s, bsk, 0, 0, 4);       /* K_1's bits 0..15 */
#elif PRESENT_BS_LOP3 == 3
            present_bs_lop3_add(s, bsk, 0, 0, 16);      /* K_1 */
#endif
        } else if (r <= PRESENT_ROUNDS) {
            present_bs_lop3_round(s, bsk, r - 1);
        } else {
            /* K_32 (2: its bits 16..63, 3: none; the output gates of round 31 added the others) */
#if PRESENT_BS_LOP3 != 3
            present_bs_lop3_add(s, bsk, 16 + 16 * PRESENT_ROUNDS, PRESENT_BS_LOP3 == 2 ? 4 : 0, 16);
#endif
            present_bs_transpose(s, PRESENT_BS_TM);     /* bitsliced -> blocks */
        }
    }
}
#endif

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    /* the host's decryption schedule: K_32 first */
    PRESENT_BS_TM_DECL(bsk)
    PRESENT_BS_PRAGMA(unroll PRESENT_BS_UNROLL)
    for (int r = 0; r <= PRESENT_ROUNDS + 1; r++) {
        if (r == 0) {
            present_bs_transpose(s, PRESENT_BS_TM);
            present_bs_add_key(s, bsk, 0);
        } else if (r <= PRESENT_ROUNDS) {
            present_bs_inv_round(s, bsk, r);            /* P^-1, S^-1, K_(32 - r) */
        } else {
            present_bs_transpose(s, PRESENT_BS_TM);
        }
    }
}
