/* hight_bs.cl - HIGHT ("bs"): bitsliced, 32 blocks per work-item.  Constant-time: no table, no
 * secret-dependent memory access or branch (every array index is a compile-time constant once the
 * helpers are inlined; the key masks are read at addresses that depend on the round alone; the
 * only branches test the round counter).
 *
 * Layout.  A work-item takes CG_BATCH = 32 blocks (block k in s[2k], s[2k + 1], little-endian words
 * of the block bytes) and bitslices them in place: one 32x32 bit-matrix transpose per word leaves in
 * s[w + 2 j] bit k = bit j of word w of block k, so bit i of block byte b (HIGHT's X_b / P_b) is the
 * plane HIGHT_BS(b, i).  Per round, on 32 blocks at once:
 *
 *   F0, F1      XORs of three planes (rotations are renaming): 8 three-input XORs each;
 *   X1 += F1(X0) ^ SK   8 XORs with the key masks, an 8-bit ripple-carry adder (sum: one
 *               three-input XOR, carry: one majority per bit; 15 operations);
 *   X3 ^= F0(X2) + SK   the adder with the key masks as the second operand, then 8 XORs;
 *
 * about 124 operations per round on 32 blocks, 31 rounds x 4 per block... in all about 124 per
 * block for the rounds and 38 for the four transposes (every one on the integer/logic pipe; no
 * carry masking as in the SWAR kernels).  The byte rotation of the state is a renaming (8-round
 * bodies, as in hight.cl).
 *
 * Keys: key layout "bitsliced" (HIGHT.expand): WK0..WK7, SK0..SK127, each byte as 8 masks (0 or
 * 0xffffffff, bit 0 first): 1088 words, read as uint4 from global memory (uniform across the
 * work-group: the cache serves them).  Decryption uses the same keys in reverse.
 *
 * The rounds run in a loop that is not unrolled (8 rounds per step, ~1,000 operations); the
 * transposes happen inside that loop, as in des_bs.cl, so that the compiler cannot sink them into
 * the caller's conditional stores.
 */
#define CG_BLOCK_WORDS 2
#ifndef CG_BATCH
#define CG_BATCH 32
#endif
#if CG_BATCH != 32
#error "hight_bs.cl bitslices 32 blocks per work-item: CG_BATCH must be 32"
#endif

#define HIGHT_BS_KPTR GLOBAL_RO const uint4 *RESTRICT
#define CG_ENC_LOCALS
#define CG_ENC_SETUP(k) GLOBAL_RO const uint4 *hight_bsk = (GLOBAL_RO const uint4 *)(k);
#define CG_ENC_PARAMS , HIGHT_BS_KPTR bsk
#define CG_ENC_ARGS , hight_bsk
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(k) GLOBAL_RO const uint4 *hight_bsk = (GLOBAL_RO const uint4 *)(k);
#define CG_DEC_PARAMS , HIGHT_BS_KPTR bsk
#define CG_DEC_ARGS , hight_bsk

/* the plane of bit i of block byte b */
#define HIGHT_BS(b, i) s[((b) >> 2) + 2 * (8 * ((b) & 3) + (i))]
/* key byte n (0..7: WK0..WK7, 8 + j: SK_j) as two uint4 of masks */
#define HIGHT_BS_WK(n) (n)
#define HIGHT_BS_SK(j) (8 + (j))

DEVICE_FN void hight_bs_key(HIGHT_BS_KPTR k, const int n, uint *m)
{
    const uint4 a = k[2 * n], b = k[2 * n + 1];
    m[0] = a.x; m[1] = a.y; m[2] = a.z; m[3] = a.w;
    m[4] = b.x; m[5] = b.y; m[6] = b.z; m[7] = b.w;
}

/* F0 / F1 of byte slot x: bit i of rotl8 by n is bit i - n */
DEVICE_FN void hight_bs_f0(const uint *s, const int x, uint *f)
{
#pragma unroll
    for (int i = 0; i < 8; i++)
        f[i] = HIGHT_BS(x, (i + 7) & 7) ^ HIGHT_BS(x, (i + 6) & 7) ^ HIGHT_BS(x, (i + 1) & 7);
}

DEVICE_FN void hight_bs_f1(const uint *s, const int x, uint *f)
{
#pragma unroll
    for (int i = 0; i < 8; i++)
        f[i] = HIGHT_BS(x, (i + 5) & 7) ^ HIGHT_BS(x, (i + 4) & 7) ^ HIGHT_BS(x, (i + 2) & 7);
}

/* a += b (mod 2^8) on byte slot a */
DEVICE_FN void hight_bs_add(uint *s, const int a, const uint *b)
{
    uint c = HIGHT_BS(a, 0) & b[0];
    HIGHT_BS(a, 0) ^= b[0];
#pragma unroll
    for (int i = 1; i < 8; i++) {
        const uint x = HIGHT_BS(a, i), y = b[i];
        HIGHT_BS(a, i) = x ^ y ^ c;
        if (i < 7) c = (x & y) | (c & (x ^ y));
    }
}

/* a -= b (mod 2^8) on byte slot a */
DEVICE_FN void hight_bs_sub(uint *s, const int a, const uint *b)
{
    uint c = ~HIGHT_BS(a, 0) & b[0];                          /* borrow */
    HIGHT_BS(a, 0) ^= b[0];
#pragma unroll
    for (int i = 1; i < 8; i++) {
        const uint x = HIGHT_BS(a, i), y = b[i];
        HIGHT_BS(a, i) = x ^ y ^ c;
        if (i < 7) c = (~x & y) | (c & ~(x ^ y));
    }
}

/* f = f + k (mod 2^8), k: key masks */
DEVICE_FN void hight_bs_add_key(uint *f, const uint *k)
{
    uint c = f[0] & k[0];
    f[0] ^= k[0];
#pragma unroll
    for (int i = 1; i < 8; i++) {
        const uint x = f[i], y = k[i];
        f[i] = x ^ y ^ c;
        if (i < 7) c = (x & y) | (c & (x ^ y));
    }
}

DEVICE_FN void hight_bs_xor_into(uint *s, const int a, const uint *f)
{
#pragma unroll
    for (int i = 0; i < 8; i++) HIGHT_BS(a, i) ^= f[i];
}

/* one round (r: 0..31) on the slots x0..x7 of X0..X7; dec: undo it */
DEVICE_FN void hight_bs_round(uint *s, HIGHT_BS_KPTR k, const int r, const int dec,
                              const int x0, const int x1, const int x2, const int x3,
                              const int x4, const int x5, const int x6, const int x7)
{
    uint f[8], m[8];
    /* X1 +-= F1(X0) ^ SK[4r] */
    hight_bs_f1(s, x0, f);
    hight_bs_key(k, HIGHT_BS_SK(4 * r), m);
#pragma unroll
    for (int i = 0; i < 8; i++) f[i] ^= m[i];
    if (dec) hight_bs_sub(s, x1, f); else hight_bs_add(s, x1, f);
    /* X3 ^= F0(X2) + SK[4r + 1] */
    hight_bs_f0(s, x2, f);
    hight_bs_key(k, HIGHT_BS_SK(4 * r + 1), m);
    hight_bs_add_key(f, m);
    hight_bs_xor_into(s, x3, f);
    /* X5 +-= F1(X4) ^ SK[4r + 2] */
    hight_bs_f1(s, x4, f);
    hight_bs_key(k, HIGHT_BS_SK(4 * r + 2), m);
#pragma unroll
    for (int i = 0; i < 8; i++) f[i] ^= m[i];
    if (dec) hight_bs_sub(s, x5, f); else hight_bs_add(s, x5, f);
    /* X7 ^= F0(X6) + SK[4r + 3] */
    hight_bs_f0(s, x6, f);
    hight_bs_key(k, HIGHT_BS_SK(4 * r + 3), m);
    hight_bs_add_key(f, m);
    hight_bs_xor_into(s, x7, f);
}

/* whitening: slots a, b, c, d with keys WK n..n+3: a +-= WK n, b ^= WK n+1, c +-= WK n+2, d ^= WK n+3 */
DEVICE_FN void hight_bs_whiten(uint *s, HIGHT_BS_KPTR k, const int n, const int dec,
                               const int a, const int b, const int c, const int d)
{
    uint m[8];
    hight_bs_key(k, HIGHT_BS_WK(n), m);
    if (dec) hight_bs_sub(s, a, m); else hight_bs_add(s, a, m);
    hight_bs_key(k, HIGHT_BS_WK(n + 1), m);
    hight_bs_xor_into(s, b, m);
    hight_bs_key(k, HIGHT_BS_WK(n + 2), m);
    if (dec) hight_bs_sub(s, c, m); else hight_bs_add(s, c, m);
    hight_bs_key(k, HIGHT_BS_WK(n + 3), m);
    hight_bs_xor_into(s, d, m);
}

/* the planes of byte slot j moved to slot j + dir (mod 8) */
DEVICE_FN void hight_bs_rotate_slots(uint *s, const int dir)
{
    uint t[64];
#pragma unroll
    for (int b = 0; b < 8; b++) {
#pragma unroll
        for (int i = 0; i < 8; i++) t[8 * ((b + dir) & 7) + i] = HIGHT_BS(b, i);
    }
#pragma unroll
    for (int b = 0; b < 8; b++) {
#pragma unroll
        for (int i = 0; i < 8; i++) HIGHT_BS(b, i) = t[8 * b + i];
    }
}

/* ---- bitslicing: the 32x32 bit matrix s[o + 2k], k < 32, transposed in place (its own inverse):
 * stage sh exchanges the bits of row k under ~m with the bits of row k + sh under m (k & sh == 0),
 * the byte-sized stages by BYTE_PERM */
#define HIGHT_BS_SWAP(a, b, sh, m)                                    \
    {                                                                 \
        const uint sa_ = (a), sb_ = (b);                              \
        (a) = (sa_ & (m)) | ((sb_ << (sh)) & ~(m));                   \
        (b) = ((sa_ >> (sh)) & (m)) | (sb_ & ~(m));                   \
    }
#define HIGHT_BS_SWAP_BYTES(a, b, sel_a, sel_b)                       \
    {                                                                 \
        const uint sa_ = (a), sb_ = (b);                              \
        (a) = BYTE_PERM(sa_, sb_, (sel_a));                           \
        (b) = BYTE_PERM(sa_, sb_, (sel_b));                           \
    }

DEVICE_FN void hight_bs_transpose(uint *s, const int o)
{
#pragma unroll
    for (int k = 0; k < 16; k++) HIGHT_BS_SWAP_BYTES(s[o + 2 * k], s[o + 2 * (k + 16)], 0x5410u, 0x7632u)
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 8) == 0) HIGHT_BS_SWAP_BYTES(s[o + 2 * k], s[o + 2 * (k + 8)], 0x6240u, 0x7351u)
    }
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 4) == 0) HIGHT_BS_SWAP(s[o + 2 * k], s[o + 2 * (k + 4)], 4, 0x0f0f0f0fu)
    }
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 2) == 0) HIGHT_BS_SWAP(s[o + 2 * k], s[o + 2 * (k + 2)], 2, 0x33333333u)
    }
#pragma unroll
    for (int k = 0; k < 32; k += 2) HIGHT_BS_SWAP(s[o + 2 * k], s[o + 2 * (k + 1)], 1, 0x55555555u)
}

/* rounds b .. b + 7: round r keeps X_j in slot (j - r) mod 8 */
#define HIGHT_BS_8ROUNDS(b, dec)                                                 \
    hight_bs_round(s, bsk, (b) + 0, dec, 0, 1, 2, 3, 4, 5, 6, 7);                \
    hight_bs_round(s, bsk, (b) + 1, dec, 7, 0, 1, 2, 3, 4, 5, 6);                \
    hight_bs_round(s, bsk, (b) + 2, dec, 6, 7, 0, 1, 2, 3, 4, 5);                \
    hight_bs_round(s, bsk, (b) + 3, dec, 5, 6, 7, 0, 1, 2, 3, 4);                \
    hight_bs_round(s, bsk, (b) + 4, dec, 4, 5, 6, 7, 0, 1, 2, 3);                \
    hight_bs_round(s, bsk, (b) + 5, dec, 3, 4, 5, 6, 7, 0, 1, 2);                \
    hight_bs_round(s, bsk, (b) + 6, dec, 2, 3, 4, 5, 6, 7, 0, 1);                \
    hight_bs_round(s, bsk, (b) + 7, dec, 1, 2, 3, 4, 5, 6, 7, 0);

#define HIGHT_BS_8ROUNDS_BACK(b)                                                 \
    hight_bs_round(s, bsk, (b) + 7, 1, 1, 2, 3, 4, 5, 6, 7, 0);                  \
    hight_bs_round(s, bsk, (b) + 6, 1, 2, 3, 4, 5, 6, 7, 0, 1);                  \
    hight_bs_round(s, bsk, (b) + 5, 1, 3, 4, 5, 6, 7, 0, 1, 2);                  \
    hight_bs_round(s, bsk, (b) + 4, 1, 4, 5, 6, 7, 0, 1, 2, 3);                  \
    hight_bs_round(s, bsk, (b) + 3, 1, 5, 6, 7, 0, 1, 2, 3, 4);                  \
    hight_bs_round(s, bsk, (b) + 2, 1, 6, 7, 0, 1, 2, 3, 4, 5);                  \
    hight_bs_round(s, bsk, (b) + 1, 1, 7, 0, 1, 2, 3, 4, 5, 6);                  \
    hight_bs_round(s, bsk, (b) + 0, 1, 0, 1, 2, 3, 4, 5, 6, 7);

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll 1
    for (int r = 0; r <= 5; r++) {
        if (r == 0) {
            hight_bs_transpose(s, 0);                         /* blocks -> bitsliced */
            hight_bs_transpose(s, 1);
            hight_bs_whiten(s, bsk, 0, 0, 0, 2, 4, 6);        /* X0 += WK0, X2 ^= WK1, ... */
        } else if (r <= 4) {
            HIGHT_BS_8ROUNDS(8 * (r - 1), 0)
        } else {
            /* after round 31 (no byte rotation), X_j is in slot j + 1: moved back to slot j */
            hight_bs_rotate_slots(s, 7);
            hight_bs_whiten(s, bsk, 4, 0, 0, 2, 4, 6);        /* C0 = X0 + WK4, C2 = X2 ^ WK5, ... */
            hight_bs_transpose(s, 0);                         /* bitsliced -> blocks */
            hight_bs_transpose(s, 1);
        }
    }
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll 1
    for (int r = 0; r <= 5; r++) {
        if (r == 0) {
            hight_bs_transpose(s, 0);
            hight_bs_transpose(s, 1);
            hight_bs_whiten(s, bsk, 4, 1, 0, 2, 4, 6);        /* the final transformation undone */
            hight_bs_rotate_slots(s, 1);                      /* X_j of round 31 into slot j + 1 */
        } else if (r <= 4) {
            HIGHT_BS_8ROUNDS_BACK(8 * (4 - r))
        } else {
            hight_bs_whiten(s, bsk, 0, 1, 0, 2, 4, 6);        /* the initial transformation undone */
            hight_bs_transpose(s, 0);
            hight_bs_transpose(s, 1);
        }
    }
}
