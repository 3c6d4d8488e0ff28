/* hight.cl - HIGHT ("fast", also "ct"): SIMD within a register.  HIGHT works on bytes (8-bit
 * additions, rotations, XORs), so a 32-bit word carries four blocks at once, one per byte lane:
 * a work-item takes its blocks four at a time, transposes them so that word j holds byte j of
 * each of the four (a 4x4 byte transpose of each half-block), runs the 32 rounds on those eight
 * words and transposes back.  Per lane:
 *
 *   additions mod 2^8   (a & 0x7f..) + (b & 0x7f..), the top bits fixed up by XOR (no carry
 *                       crosses a lane); subtractions likewise, from (a | 0x80..) - (b & 0x7f..);
 *   rotations           two shifts and two masks per rotate;
 *   the byte rotation   of the state after each round: renaming of the eight words (8-round bodies).
 *
 * No table, no data-dependent branch or index: constant-time (declared so, and the "ct" name).
 * Keys: the host's "replicated" layout, 136 words WK0..WK7 SK0..SK127, each byte copied to the four
 * lanes.  Decryption uses the same keys in reverse.
 *
 * Knobs (compile-time defines, ciphergrid/algorithms/hight.py):
 *   HIGHT_GROUPS      sets of four blocks per work-item (CG_BATCH = 4 * HIGHT_GROUPS); default 1
 *   HIGHT_KEYS_LOCAL  1: keys copied to work-group memory by CG_*_SETUP; 0 (default): read from
 *                     global memory (uniform across the work-group: the cache serves them)
 *   HIGHT_PRMT        1: the transposes with BYTE_PERM (one PRMT each on NVIDIA); 0: shifts and
 *                     masks.  Default: 1 on NVIDIA (CUDA, or OpenCL with cl_nv_pragma_unroll), else 0.
 */

#define CG_BLOCK_WORDS 2

#ifndef HIGHT_GROUPS
#define HIGHT_GROUPS 1
#endif
#ifndef HIGHT_KEYS_LOCAL
#define HIGHT_KEYS_LOCAL 0
#endif
#ifndef HIGHT_PRMT
#if defined(__CUDACC__) || defined(cl_nv_pragma_unroll)
#define HIGHT_PRMT 1
#else
#define HIGHT_PRMT 0
#endif
#endif
#if CG_BATCH != 4 * HIGHT_GROUPS
#error "hight.cl: CG_BATCH must be 4 * HIGHT_GROUPS"
#endif

#define HIGHT_NKEYS 136

#if HIGHT_KEYS_LOCAL
#define HIGHT_KPTR LOCAL_PTR const uint *
#define HIGHT_SETUP(rk)                                                    \
    for (uint hight_i = LID; hight_i < HIGHT_NKEYS; hight_i += LSIZE)      \
        hight_k[hight_i] = (rk)[hight_i];                                  \
    BARRIER();
#define CG_ENC_LOCALS LOCAL_VAR uint hight_k[HIGHT_NKEYS];
#define CG_DEC_LOCALS LOCAL_VAR uint hight_k[HIGHT_NKEYS];
#else
#define HIGHT_KPTR GLOBAL_RO const uint *RESTRICT
#define HIGHT_SETUP(rk) GLOBAL_RO const uint *hight_k = (rk);
#define CG_ENC_LOCALS
#define CG_DEC_LOCALS
#endif

#define CG_ENC_SETUP(rk) HIGHT_SETUP(rk)
#define CG_ENC_PARAMS , HIGHT_KPTR hk
#define CG_ENC_ARGS , hight_k
#define CG_DEC_SETUP(dk) HIGHT_SETUP(dk)
#define CG_DEC_PARAMS , HIGHT_KPTR hk
#define CG_DEC_ARGS , hight_k

#define HIGHT_WK(i) hk[(i)]
#define HIGHT_SK(i) hk[8 + (i)]

/* ---- byte-lane arithmetic on four lanes ------------------------------------------------------ */

#define HIGHT_LO 0x7f7f7f7fu
#define HIGHT_HI 0x80808080u

/* a + b, lane by lane, mod 2^8 */
#define HIGHT_ADD(a, b) ((((a) & HIGHT_LO) + ((b) & HIGHT_LO)) ^ (((a) ^ (b)) & HIGHT_HI))
/* a - b, lane by lane, mod 2^8 */
#define HIGHT_SUB(a, b) ((((a) | HIGHT_HI) - ((b) & HIGHT_LO)) ^ (~((a) ^ (b)) & HIGHT_HI))
/* each lane rotated left by n (1 <= n <= 7) */
#define HIGHT_RL(x, n) ((((x) << (n)) & (0x01010101u * ((0xffu << (n)) & 0xffu))) | \
                        (((x) >> (8 - (n))) & (0x01010101u * (0xffu >> (8 - (n))))))

DEVICE_FN uint hight_f0(uint x)
{
    return HIGHT_RL(x, 1) ^ HIGHT_RL(x, 2) ^ HIGHT_RL(x, 7);
}

DEVICE_FN uint hight_f1(uint x)
{
    return HIGHT_RL(x, 3) ^ HIGHT_RL(x, 4) ^ HIGHT_RL(x, 6);
}

/* ---- 4x4 byte transpose: word i byte j <-> word j byte i (its own inverse) ------------------- */

DEVICE_FN void hight_transpose(uint *a0, uint *a1, uint *a2, uint *a3)
{
#if HIGHT_PRMT
    uint t0 = BYTE_PERM(*a0, *a1, 0x5140), t1 = BYTE_PERM(*a2, *a3, 0x5140);
    uint t2 = BYTE_PERM(*a0, *a1, 0x7362), t3 = BYTE_PERM(*a2, *a3, 0x7362);
    *a0 = BYTE_PERM(t0, t1, 0x5410);
    *a1 = BYTE_PERM(t0, t1, 0x7632);
    *a2 = BYTE_PERM(t2, t3, 0x5410);
    *a3 = BYTE_PERM(t2, t3, 0x7632);
#else
    uint t;
    t = ((*a0 >> 16) ^ *a2) & 0x0000ffffu; *a0 ^= t << 16; *a2 ^= t;
    t = ((*a1 >> 16) ^ *a3) & 0x0000ffffu; *a1 ^= t << 16; *a3 ^= t;
    t = ((*a0 >> 8) ^ *a1) & 0x00ff00ffu;  *a0 ^= t << 8;  *a1 ^= t;
    t = ((*a2 >> 8) ^ *a3) & 0x00ff00ffu;  *a2 ^= t << 8;  *a3 ^= t;
#endif
}

/* blocks 4g..4g+3 of s -> w[0..7] (w[j] = byte j of the four blocks), and back */
DEVICE_FN void hight_load4(const uint *s, uint *w)
{
    w[0] = s[0]; w[1] = s[2]; w[2] = s[4]; w[3] = s[6];
    w[4] = s[1]; w[5] = s[3]; w[6] = s[5]; w[7] = s[7];
    hight_transpose(w + 0, w + 1, w + 2, w + 3);
    hight_transpose(w + 4, w + 5, w + 6, w + 7);
}

DEVICE_FN void hight_store4(uint *w, uint *s)
{
    hight_transpose(w + 0, w + 1, w + 2, w + 3);
    hight_transpose(w + 4, w + 5, w + 6, w + 7);
    s[0] = w[0]; s[2] = w[1]; s[4] = w[2]; s[6] = w[3];
    s[1] = w[4]; s[3] = w[5]; s[5] = w[6]; s[7] = w[7];
}

/* ---- the rounds ------------------------------------------------------------------------------
 * Round r of encryption, on X0..X7 named x0..x7:
 *   X1 += F1(X0) ^ SK[4r];  X3 ^= F0(X2) + SK[4r+1];  X5 += F1(X4) ^ SK[4r+2];  X7 ^= F0(X6) + SK[4r+3]
 * then the byte rotation (X_{j+1} <- X_j, X_0 <- X_7) except after round 31.  The rotation is a
 * renaming: after r rotations, X_j lives in register (j - r) mod 8, so an 8-round body names the
 * registers in the eight rotations and 4 bodies make the 32 rounds (round 31's rotation is never
 * done, as the specification says: the output words are read in the renamed order). */

#define HIGHT_ENC_ROUND(r, x0, x1, x2, x3, x4, x5, x6, x7)                   \
    {                                                                         \
        const uint k0 = HIGHT_SK(4 * (r)), k1 = HIGHT_SK(4 * (r) + 1);        \
        const uint k2 = HIGHT_SK(4 * (r) + 2), k3 = HIGHT_SK(4 * (r) + 3);    \
        for (int g = 0; g < HIGHT_GROUPS; g++) {                              \
            uint *v = w + 8 * g;                                              \
            v[x1] = HIGHT_ADD(v[x1], hight_f1(v[x0]) ^ k0);                   \
            v[x3] ^= HIGHT_ADD(hight_f0(v[x2]), k1);                          \
            v[x5] = HIGHT_ADD(v[x5], hight_f1(v[x4]) ^ k2);                   \
            v[x7] ^= HIGHT_ADD(hight_f0(v[x6]), k3);                          \
        }                                                                     \
    }

/* decryption: round r undone, X_j named x_j (the same renaming run backwards) */
#define HIGHT_DEC_ROUND(r, x0, x1, x2, x3, x4, x5, x6, x7)                   \
    {                                                                         \
        const uint k0 = HIGHT_SK(4 * (r)), k1 = HIGHT_SK(4 * (r) + 1);        \
        const uint k2 = HIGHT_SK(4 * (r) + 2), k3 = HIGHT_SK(4 * (r) + 3);    \
        for (int g = 0; g < HIGHT_GROUPS; g++) {                              \
            uint *v = w + 8 * g;                                              \
            v[x1] = HIGHT_SUB(v[x1], hight_f1(v[x0]) ^ k0);                   \
            v[x3] ^= HIGHT_ADD(hight_f0(v[x2]), k1);                          \
            v[x5] = HIGHT_SUB(v[x5], hight_f1(v[x4]) ^ k2);                   \
            v[x7] ^= HIGHT_ADD(hight_f0(v[x6]), k3);                          \
        }                                                                     \
    }

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    uint w[8 * HIGHT_GROUPS];
    const uint wk0 = HIGHT_WK(0), wk1 = HIGHT_WK(1), wk2 = HIGHT_WK(2), wk3 = HIGHT_WK(3);
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        hight_load4(s + 8 * g, v);
        v[0] = HIGHT_ADD(v[0], wk0);
        v[2] ^= wk1;
        v[4] = HIGHT_ADD(v[4], wk2);
        v[6] ^= wk3;
    }
#pragma unroll
    for (int b = 0; b < 32; b += 8) {
        HIGHT_ENC_ROUND(b + 0, 0, 1, 2, 3, 4, 5, 6, 7)
        HIGHT_ENC_ROUND(b + 1, 7, 0, 1, 2, 3, 4, 5, 6)
        HIGHT_ENC_ROUND(b + 2, 6, 7, 0, 1, 2, 3, 4, 5)
        HIGHT_ENC_ROUND(b + 3, 5, 6, 7, 0, 1, 2, 3, 4)
        HIGHT_ENC_ROUND(b + 4, 4, 5, 6, 7, 0, 1, 2, 3)
        HIGHT_ENC_ROUND(b + 5, 3, 4, 5, 6, 7, 0, 1, 2)
        HIGHT_ENC_ROUND(b + 6, 2, 3, 4, 5, 6, 7, 0, 1)
        HIGHT_ENC_ROUND(b + 7, 1, 2, 3, 4, 5, 6, 7, 0)
    }
    /* after round 31, X_j is in register (j - 31) mod 8 = (j + 1) mod 8 */
    const uint wk4 = HIGHT_WK(4), wk5 = HIGHT_WK(5), wk6 = HIGHT_WK(6), wk7 = HIGHT_WK(7);
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        uint o[8];
        o[0] = HIGHT_ADD(v[1], wk4);
        o[1] = v[2];
        o[2] = v[3] ^ wk5;
        o[3] = v[4];
        o[4] = HIGHT_ADD(v[5], wk6);
        o[5] = v[6];
        o[6] = v[7] ^ wk7;
        o[7] = v[0];
        hight_store4(o, s + 8 * g);
    }
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    uint w[8 * HIGHT_GROUPS];
    const uint wk4 = HIGHT_WK(4), wk5 = HIGHT_WK(5), wk6 = HIGHT_WK(6), wk7 = HIGHT_WK(7);
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        uint c[8];
        hight_load4(s + 8 * g, c);
        /* X_j (after round 31) into register (j + 1) mod 8, the final transformation undone */
        v[1] = HIGHT_SUB(c[0], wk4);
        v[2] = c[1];
        v[3] = c[2] ^ wk5;
        v[4] = c[3];
        v[5] = HIGHT_SUB(c[4], wk6);
        v[6] = c[5];
        v[7] = c[6] ^ wk7;
        v[0] = c[7];
    }
#pragma unroll
    for (int b = 24; b >= 0; b -= 8) {
        HIGHT_DEC_ROUND(b + 7, 1, 2, 3, 4, 5, 6, 7, 0)
        HIGHT_DEC_ROUND(b + 6, 2, 3, 4, 5, 6, 7, 0, 1)
        HIGHT_DEC_ROUND(b + 5, 3, 4, 5, 6, 7, 0, 1, 2)
        HIGHT_DEC_ROUND(b + 4, 4, 5, 6, 7, 0, 1, 2, 3)
        HIGHT_DEC_ROUND(b + 3, 5, 6, 7, 0, 1, 2, 3, 4)
        HIGHT_DEC_ROUND(b + 2, 6, 7, 0, 1, 2, 3, 4, 5)
        HIGHT_DEC_ROUND(b + 1, 7, 0, 1, 2, 3, 4, 5, 6)
        HIGHT_DEC_ROUND(b + 0, 0, 1, 2, 3, 4, 5, 6, 7)
    }
    const uint wk0 = HIGHT_WK(0), wk1 = HIGHT_WK(1), wk2 = HIGHT_WK(2), wk3 = HIGHT_WK(3);
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        v[0] = HIGHT_SUB(v[0], wk0);
        v[2] ^= wk1;
        v[4] = HIGHT_SUB(v[4], wk2);
        v[6] ^= wk3;
        hight_store4(v, s + 8 * g);
    }
}
