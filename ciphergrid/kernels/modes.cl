/* modes.cl - generic parallel modes over any block cipher that follows the contract of
 * ciphergrid/ciphers/base.py (cg_encrypt / cg_decrypt on little-endian words, CG_*_LOCALS/SETUP).
 * The host concatenates portable.h, the cipher file and this file, so one source serves every
 * cipher, on OpenCL and on CUDA.
 *
 * Every kernel walks its blocks with a grid-stride loop, so any launch size is correct; block i of a
 * launch is the (first_block + i)-th block of the message, which lets the host cut a message into
 * chunks and still produce the bytes of a one-shot call.
 */

#if CG_BLOCK_WORDS == 4
typedef uint4 cg_vec;
#define CG_LOAD(p, i, s) { uint4 v_ = (p)[i]; s[0] = v_.x; s[1] = v_.y; s[2] = v_.z; s[3] = v_.w; }
#define CG_STORE(p, i, s) ((p)[i] = MAKE_UINT4(s[0], s[1], s[2], s[3]))
#elif CG_BLOCK_WORDS == 2
typedef uint2 cg_vec;
#define CG_LOAD(p, i, s) { uint2 v_ = (p)[i]; s[0] = v_.x; s[1] = v_.y; }
#define CG_STORE(p, i, s) ((p)[i] = MAKE_UINT2(s[0], s[1]))
#else
#error "CG_BLOCK_WORDS must be 2 or 4"
#endif

/* ---- ECB --------------------------------------------------------------------------------- */

KERNEL void cg_ecb_enc(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                       GLOBAL_RO const uint *RESTRICT rk, ulong n)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP
    for (ulong i = GID; i < n; i += GSIZE) {
        uint s[CG_BLOCK_WORDS];
        CG_LOAD(in, i, s);
        cg_encrypt(s, rk CG_ENC_ARGS);
        CG_STORE(out, i, s);
    }
}

KERNEL void cg_ecb_dec(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                       GLOBAL_RO const uint *RESTRICT dk, ulong n)
{
    CG_DEC_LOCALS
    CG_DEC_SETUP
    for (ulong i = GID; i < n; i += GSIZE) {
        uint s[CG_BLOCK_WORDS];
        CG_LOAD(in, i, s);
        cg_decrypt(s, dk CG_DEC_ARGS);
        CG_STORE(out, i, s);
    }
}

/* ---- CTR: the block is a big-endian counter (128-bit for 16-byte blocks, 64-bit for 8-byte),
 *      incremented with carry over its full width as in NIST SP 800-38A and OpenSSL.
 *      (ctr_hi, ctr_lo) is the counter of block 0 of this launch. ------------------------------ */

KERNEL void cg_ctr(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                   GLOBAL_RO const uint *RESTRICT rk, ulong ctr_hi, ulong ctr_lo, ulong n)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP
    for (ulong i = GID; i < n; i += GSIZE) {
        ulong lo = ctr_lo + i;
        uint s[CG_BLOCK_WORDS], d[CG_BLOCK_WORDS];
#if CG_BLOCK_WORDS == 4
        ulong hi = ctr_hi + (lo < ctr_lo ? 1 : 0);
        s[0] = BSWAP32((uint)(hi >> 32)); s[1] = BSWAP32((uint)hi);
        s[2] = BSWAP32((uint)(lo >> 32)); s[3] = BSWAP32((uint)lo);
#else
        s[0] = BSWAP32((uint)(lo >> 32)); s[1] = BSWAP32((uint)lo);
#endif
        cg_encrypt(s, rk CG_ENC_ARGS);
        CG_LOAD(in, i, d);
#pragma unroll
        for (int w = 0; w < CG_BLOCK_WORDS; w++) d[w] ^= s[w];
        CG_STORE(out, i, d);
    }
}

/* ---- CBC decryption (encryption is serial and runs on the host engine).  iv is the chaining
 *      value before block 0 of this launch.  in and out must not overlap. ------------------------ */

KERNEL void cg_cbc_dec(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                       GLOBAL_RO const uint *RESTRICT dk,
                       uint iv0, uint iv1, uint iv2, uint iv3, ulong n)
{
    CG_DEC_LOCALS
    CG_DEC_SETUP
    for (ulong i = GID; i < n; i += GSIZE) {
        uint s[CG_BLOCK_WORDS], p[CG_BLOCK_WORDS];
        CG_LOAD(in, i, s);
        cg_decrypt(s, dk CG_DEC_ARGS);
        if (i == 0) {
            p[0] = iv0; p[1] = iv1;
#if CG_BLOCK_WORDS == 4
            p[2] = iv2; p[3] = iv3;
#endif
        } else {
            CG_LOAD(in, i - 1, p);
        }
#pragma unroll
        for (int w = 0; w < CG_BLOCK_WORDS; w++) s[w] ^= p[w];
        CG_STORE(out, i, s);
    }
}

/* ---- XTS (IEEE 1619), 128-bit blocks only.
 * A data unit of bpu blocks has tweak T = E_K2(iv + u) (u = unit number, little-endian 128-bit add;
 * one unit per call: u = 0 and iv is the caller's tweak; sector mode: iv = start sector).  Block j
 * of the unit uses T * alpha^j in GF(2^128).  The unit is cut into segments of 128 blocks: a first
 * kernel computes T * alpha^(128 s) for each segment s the launch touches (one general multiply per
 * 128 blocks), the second one multiplies that by alpha^(j mod 128) with shifts only.
 * Values are 128-bit little-endian integers held as (lo, hi) 64-bit halves. -------------------- */

#if CG_BLOCK_WORDS == 4

/* (lo,hi) *= x^k mod x^128 + x^7 + x^2 + x + 1, for 1 <= k <= 57 */
DEVICE_FN void xts_mulx_k(ulong *lo, ulong *hi, uint k)
{
    ulong h = *hi >> (64 - k);
    *hi = (*hi << k) | (*lo >> (64 - k));
    *lo = (*lo << k) ^ h ^ (h << 1) ^ (h << 2) ^ (h << 7);
}

/* (lo,hi) *= x^r, 0 <= r < 128 */
DEVICE_FN void xts_mulx(ulong *lo, ulong *hi, uint r)
{
    while (r > 56) { xts_mulx_k(lo, hi, 56); r -= 56; }
    if (r) xts_mulx_k(lo, hi, r);
}

/* (lo,hi) *= (clo,chi), bit-serial; used once per 128 blocks */
DEVICE_FN void xts_gfmul(ulong *lo, ulong *hi, ulong clo, ulong chi)
{
    ulong rl = 0, rh = 0, al = *lo, ah = *hi;
    for (int b = 0; b < 128; b++) {
        ulong bit = (b < 64 ? (clo >> b) : (chi >> (b - 64))) & 1;
        ulong m = (ulong)0 - bit;
        rl ^= al & m;
        rh ^= ah & m;
        xts_mulx_k(&al, &ah, 1);
    }
    *lo = rl;
    *hi = rh;
}

KERNEL void cg_xts_seg(GLOBAL uint4 *seg, GLOBAL_RO const uint *RESTRICT rk2,
                       GLOBAL_RO const uint4 *apow, ulong first_seg, ulong nseg, ulong spu,
                       ulong iv_lo, ulong iv_hi)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP
    for (ulong g = GID; g < nseg; g += GSIZE) {
        ulong gg = first_seg + g;
        ulong u = gg / spu;
        ulong sidx = gg - u * spu;
        ulong lo = iv_lo + u;
        ulong hi = iv_hi + (lo < iv_lo ? 1 : 0);
        uint s[4];
        s[0] = (uint)lo; s[1] = (uint)(lo >> 32); s[2] = (uint)hi; s[3] = (uint)(hi >> 32);
        cg_encrypt(s, rk2 CG_ENC_ARGS);
        lo = (ulong)s[0] | ((ulong)s[1] << 32);
        hi = (ulong)s[2] | ((ulong)s[3] << 32);
        if (sidx) {
            uint4 c = apow[sidx];
            xts_gfmul(&lo, &hi, (ulong)c.x | ((ulong)c.y << 32), (ulong)c.z | ((ulong)c.w << 32));
        }
        seg[g] = MAKE_UINT4((uint)lo, (uint)(lo >> 32), (uint)hi, (uint)(hi >> 32));
    }
}

#define XTS_TWEAK(seg, b, first_seg, bpu, spu, t)                                   \
    {                                                                               \
        ulong u_ = (b) / (bpu);                                                     \
        ulong j_ = (b) - u_ * (bpu);                                                \
        uint4 c_ = (seg)[u_ * (spu) + (j_ >> 7) - (first_seg)];                     \
        ulong lo_ = (ulong)c_.x | ((ulong)c_.y << 32);                              \
        ulong hi_ = (ulong)c_.z | ((ulong)c_.w << 32);                              \
        xts_mulx(&lo_, &hi_, (uint)(j_ & 127));                                     \
        t[0] = (uint)lo_; t[1] = (uint)(lo_ >> 32); t[2] = (uint)hi_; t[3] = (uint)(hi_ >> 32); \
    }

KERNEL void cg_xts_enc(GLOBAL_RO const uint4 *in, GLOBAL uint4 *out,
                       GLOBAL_RO const uint *RESTRICT rk1, GLOBAL_RO const uint4 *seg,
                       ulong first_block, ulong first_seg, ulong n, ulong bpu, ulong spu)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP
    for (ulong i = GID; i < n; i += GSIZE) {
        uint t[4], s[4];
        XTS_TWEAK(seg, first_block + i, first_seg, bpu, spu, t);
        CG_LOAD(in, i, s);
        s[0] ^= t[0]; s[1] ^= t[1]; s[2] ^= t[2]; s[3] ^= t[3];
        cg_encrypt(s, rk1 CG_ENC_ARGS);
        s[0] ^= t[0]; s[1] ^= t[1]; s[2] ^= t[2]; s[3] ^= t[3];
        CG_STORE(out, i, s);
    }
}

KERNEL void cg_xts_dec(GLOBAL_RO const uint4 *in, GLOBAL uint4 *out,
                       GLOBAL_RO const uint *RESTRICT dk1, GLOBAL_RO const uint4 *seg,
                       ulong first_block, ulong first_seg, ulong n, ulong bpu, ulong spu)
{
    CG_DEC_LOCALS
    CG_DEC_SETUP
    for (ulong i = GID; i < n; i += GSIZE) {
        uint t[4], s[4];
        XTS_TWEAK(seg, first_block + i, first_seg, bpu, spu, t);
        CG_LOAD(in, i, s);
        s[0] ^= t[0]; s[1] ^= t[1]; s[2] ^= t[2]; s[3] ^= t[3];
        cg_decrypt(s, dk1 CG_DEC_ARGS);
        s[0] ^= t[0]; s[1] ^= t[1]; s[2] ^= t[2]; s[3] ^= t[3];
        CG_STORE(out, i, s);
    }
}

#endif /* CG_BLOCK_WORDS == 4 */
