/* hight_mul.cl - HIGHT ("mul", "mul-1", "mul-4"): two blocks per 32-bit word, the byte rotations of
 * F0/F1 done by integer multiplications (on NVIDIA the IMAD of the FMA pipe, which the "fast" SWAR
 * kernel leaves idle while its shifts and masks queue on the integer/logic pipe).
 *
 * Layout.  Word j of a pair of blocks (A, B) holds byte j of A in bits 8..15 and byte j of B in bits
 * 24..31 (the "lanes"); bits 0..7 and 16..23 are guard bytes.  The rotations of HIGHT's F functions
 * (rotl8 by n of each lane) come from the spread form P = A | B << 16 (one BYTE_PERM: the lanes
 * moved down into bits 0..7 and 16..23, zeros above them):
 *
 *   P * (0x101 << n) = (A * 0x101 << n) + (B * 0x101 << n << 16)
 *
 * A * 0x101 is A doubled in 16 bits, so its bits 8..15 after the shift by n are rotl8(A, n); the A
 * term is below 2^23 and the B term has zeros in bits 16..15+n, so the sum has no carry into bit
 * 24 and bits 24..31 are rotl8(B, n).  F = the XOR of three such products: the lanes of F are
 * right, its guard bytes are junk, and one LOP3 clears them where it matters:
 *
 *   X1 += F1(X0) ^ SK     v = (F ^ K) & 0xff00ff00 (one LOP3), then a 32-bit add: lane A's carry
 *                         goes into guard byte 2, lane B's out of the word;
 *   X3 ^= F0(X2) + SK     u = (F & 0xff00ff00) + K (K: the subkey in both lanes, guards zero), then
 *                         XOR: u's guard byte 2 is 0 or 1.
 *
 * Guard byte 0 of the state stays as loaded (nothing added or XORed there is nonzero); guard byte 2
 * starts at 0x80 and moves by at most 1 per operation (17 per word in all), so a carry or borrow
 * never crosses from it into lane B, in either direction.  Per round and pair of blocks: 4 BYTE_PERM,
 * 12 multiplications, 10 LOP3, 4 additions (30 instructions for 2 blocks; the "fast" kernel spends
 * about 60 on the integer pipe alone for 4 blocks, and the multiplications here run beside it).
 * The byte rotation of the state after each round is a renaming (8-round bodies), as in hight.cl.
 *
 * Keys: the host's "lanes2" layout, 136 words SK0..SK127 then WK0..WK7, each byte b as
 * b * 0x01000100 (both lanes, guards zero), copied by CG_*_SETUP to work-group memory as 34 uint4
 * (one 128-bit load per round).  Decryption uses the same keys, in reverse.
 *
 * No table, no data-dependent branch or index: constant-time.
 *
 * Knobs: HIGHT_GROUPS   pairs of blocks per work-item (CG_BATCH = 2 * HIGHT_GROUPS); default 2.
 *        HIGHT_PRMT     1: the spread with BYTE_PERM (one PRMT on NVIDIA); 0: shift and mask.
 *                       Default: 1 on NVIDIA (CUDA, or OpenCL with cl_nv_pragma_unroll), else 0.
 */

#define CG_BLOCK_WORDS 2

#ifndef HIGHT_GROUPS
#define HIGHT_GROUPS 2
#endif
#ifndef HIGHT_PRMT
#if defined(__CUDACC__) || defined(cl_nv_pragma_unroll)
#define HIGHT_PRMT 1
#else
#define HIGHT_PRMT 0
#endif
#endif
#if CG_BATCH != 2 * HIGHT_GROUPS
#error "hight_mul.cl: CG_BATCH must be 2 * HIGHT_GROUPS"
#endif

#define HIGHT_NKEYS4 34                    /* 136 words as uint4: SK0..SK127, WK0..WK7 */

#define HIGHT_SETUP(rk)                                                                    \
    for (uint hight_i = LID; hight_i < HIGHT_NKEYS4; hight_i += LSIZE)                     \
        hight_k4[hight_i] = MAKE_UINT4((rk)[4 * hight_i], (rk)[4 * hight_i + 1],           \
                                       (rk)[4 * hight_i + 2], (rk)[4 * hight_i + 3]);      \
    BARRIER();
#define CG_ENC_LOCALS LOCAL_VAR uint4 hight_k4[HIGHT_NKEYS4];
#define CG_DEC_LOCALS LOCAL_VAR uint4 hight_k4[HIGHT_NKEYS4];
#define CG_ENC_SETUP(rk) HIGHT_SETUP(rk)
#define CG_ENC_PARAMS , LOCAL_PTR const uint4 *hk
#define CG_ENC_ARGS , hight_k4
#define CG_DEC_SETUP(dk) HIGHT_SETUP(dk)
#define CG_DEC_PARAMS , LOCAL_PTR const uint4 *hk
#define CG_DEC_ARGS , hight_k4

#define HIGHT_LANES 0xff00ff00u
#define HIGHT_GUARD 0x00800000u              /* guard byte 2 = 0x80 */

/* the lanes (bits 8..15, 24..31) moved down to bits 0..7 and 16..23, zeros elsewhere */
#if HIGHT_PRMT
#define HIGHT_SPREAD(x) BYTE_PERM((x), 0u, 0x4341u)
#else
#define HIGHT_SPREAD(x) (((x) >> 8) & 0x00ff00ffu)
#endif

/* F0 / F1 of both lanes, in the lanes (guard bytes junk) */
DEVICE_FN uint hight_f0(uint x)
{
    const uint p = HIGHT_SPREAD(x);
    return (p * 0x0202u) ^ (p * 0x0404u) ^ (p * 0x8080u);      /* rotl 1, 2, 7 */
}

DEVICE_FN uint hight_f1(uint x)
{
    const uint p = HIGHT_SPREAD(x);
    return (p * 0x0808u) ^ (p * 0x1010u) ^ (p * 0x4040u);      /* rotl 3, 4, 6 */
}

/* two blocks a (s[0], s[1]) and b (s[2], s[3]) -> w[0..7], and back */
DEVICE_FN void hight_load2(const uint *s, uint *w)
{
    /* byte j of a -> bits 8..15, of b -> bits 24..31; then guard byte 0 kept, byte 2 = 0x80 */
    w[0] = BYTE_PERM(s[0], s[2], 0x4000u);
    w[1] = BYTE_PERM(s[0], s[2], 0x5111u);
    w[2] = BYTE_PERM(s[0], s[2], 0x6222u);
    w[3] = BYTE_PERM(s[0], s[2], 0x7333u);
    w[4] = BYTE_PERM(s[1], s[3], 0x4000u);
    w[5] = BYTE_PERM(s[1], s[3], 0x5111u);
    w[6] = BYTE_PERM(s[1], s[3], 0x6222u);
    w[7] = BYTE_PERM(s[1], s[3], 0x7333u);
#pragma unroll
    for (int j = 0; j < 8; j++) w[j] = (w[j] & 0xff00ffffu) | HIGHT_GUARD;
}

DEVICE_FN void hight_store2(const uint *o, uint *s)
{
    uint t0 = BYTE_PERM(o[0], o[1], 0x7351u), t1 = BYTE_PERM(o[2], o[3], 0x7351u);
    uint t2 = BYTE_PERM(o[4], o[5], 0x7351u), t3 = BYTE_PERM(o[6], o[7], 0x7351u);
    s[0] = BYTE_PERM(t0, t1, 0x5410u);
    s[2] = BYTE_PERM(t0, t1, 0x7632u);
    s[1] = BYTE_PERM(t2, t3, 0x5410u);
    s[3] = BYTE_PERM(t2, t3, 0x7632u);
}

/* ---- the rounds (see hight.cl for the renaming: X_j of round r lives in register (j - r) mod 8) */

#define HIGHT_ENC_ROUND(r, x0, x1, x2, x3, x4, x5, x6, x7)                   \
    {                                                                         \
        const uint4 k = hk[(r)];                                              \
        for (int g = 0; g < HIGHT_GROUPS; g++) {                              \
            uint *v = w + 8 * g;                                              \
            v[x1] += (hight_f1(v[x0]) ^ k.x) & HIGHT_LANES;                   \
            v[x3] ^= (hight_f0(v[x2]) & HIGHT_LANES) + k.y;                   \
            v[x5] += (hight_f1(v[x4]) ^ k.z) & HIGHT_LANES;                   \
            v[x7] ^= (hight_f0(v[x6]) & HIGHT_LANES) + k.w;                   \
        }                                                                     \
    }

#define HIGHT_DEC_ROUND(r, x0, x1, x2, x3, x4, x5, x6, x7)                   \
    {                                                                         \
        const uint4 k = hk[(r)];                                              \
        for (int g = 0; g < HIGHT_GROUPS; g++) {                              \
            uint *v = w + 8 * g;                                              \
            v[x1] -= (hight_f1(v[x0]) ^ k.x) & HIGHT_LANES;                   \
            v[x3] ^= (hight_f0(v[x2]) & HIGHT_LANES) + k.y;                   \
            v[x5] -= (hight_f1(v[x4]) ^ k.z) & HIGHT_LANES;                   \
            v[x7] ^= (hight_f0(v[x6]) & HIGHT_LANES) + k.w;                   \
        }                                                                     \
    }

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    uint w[8 * HIGHT_GROUPS];
    const uint4 wk = hk[32];
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        hight_load2(s + 4 * g, v);
        v[0] += wk.x;
        v[2] ^= wk.y;
        v[4] += wk.z;
        v[6] ^= wk.w;
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
    /* after round 31, X_j is in register (j + 1) mod 8 */
    const uint4 wk2 = hk[33];
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        uint o[8];
        o[0] = v[1] + wk2.x;
        o[1] = v[2];
        o[2] = v[3] ^ wk2.y;
        o[3] = v[4];
        o[4] = v[5] + wk2.z;
        o[5] = v[6];
        o[6] = v[7] ^ wk2.w;
        o[7] = v[0];
        hight_store2(o, s + 4 * g);
    }
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    uint w[8 * HIGHT_GROUPS];
    const uint4 wk2 = hk[33];
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        uint c[8];
        hight_load2(s + 4 * g, c);
        v[1] = c[0] - wk2.x;
        v[2] = c[1];
        v[3] = c[2] ^ wk2.y;
        v[4] = c[3];
        v[5] = c[4] - wk2.z;
        v[6] = c[5];
        v[7] = c[6] ^ wk2.w;
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
    const uint4 wk = hk[32];
#pragma unroll
    for (int g = 0; g < HIGHT_GROUPS; g++) {
        uint *v = w + 8 * g;
        v[0] -= wk.x;
        v[2] ^= wk.y;
        v[4] -= wk.z;
        v[6] ^= wk.w;
        hight_store2(v, s + 4 * g);
    }
}
