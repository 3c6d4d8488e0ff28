/* modes.cl - generic parallel modes over any block cipher that follows the contract of
 * ciphergrid/ciphers/base.py (cg_encrypt_batch / cg_decrypt_batch on CG_BATCH blocks of
 * little-endian words, CG_*_LOCALS and CG_*_SETUP(keys)).  The host concatenates portable.h, the
 * cipher file and this file, so one source serves every cipher, on OpenCL and on CUDA.
 *
 * Every kernel walks the blocks with a grid-stride loop, so any launch size is correct; in one
 * step a work-item takes CG_BATCH blocks base + k * GSIZE (k < CG_BATCH), so each load and store
 * instruction is coalesced across the work-group.  Block i of a launch is the (first_block + i)-th
 * block of the message, which lets the host cut a message into chunks and still produce the bytes
 * of a one-shot call.
 */

#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#define CG_W CG_BLOCK_WORDS

#if CG_BLOCK_WORDS == 4
typedef uint4 cg_vec;
DEVICE_FN void cg_load(GLOBAL_RO const cg_vec *p, ulong i, uint *s)
{
    uint4 v = p[i];
    s[0] = v.x; s[1] = v.y; s[2] = v.z; s[3] = v.w;
}
DEVICE_FN void cg_store(GLOBAL cg_vec *p, ulong i, const uint *s)
{
    p[i] = MAKE_UINT4(s[0], s[1], s[2], s[3]);
}
#elif CG_BLOCK_WORDS == 2
typedef uint2 cg_vec;
DEVICE_FN void cg_load(GLOBAL_RO const cg_vec *p, ulong i, uint *s)
{
    uint2 v = p[i];
    s[0] = v.x; s[1] = v.y;
}
DEVICE_FN void cg_store(GLOBAL cg_vec *p, ulong i, const uint *s)
{
    p[i] = MAKE_UINT2(s[0], s[1]);
}
#else
#error "CG_BLOCK_WORDS must be 2 or 4"
#endif

/* load the blocks of one step (zeros past the end) */
DEVICE_FN void cg_load_batch(GLOBAL_RO const cg_vec *p, ulong base, ulong n, uint *s)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) {
        ulong b = base + (ulong)k * GSIZE;
        if (b < n) {
            cg_load(p, b, s + k * CG_W);
        } else {
#pragma unroll
            for (int w = 0; w < CG_W; w++) s[k * CG_W + w] = 0;
        }
    }
}

DEVICE_FN void cg_store_batch(GLOBAL cg_vec *p, ulong base, ulong n, const uint *s)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) {
        ulong b = base + (ulong)k * GSIZE;
        if (b < n) cg_store(p, b, s + k * CG_W);
    }
}

#define CG_STEPS(base, n) for (ulong base = GID; base < (n); base += GSIZE * (ulong)CG_BATCH)

/* ---- ECB --------------------------------------------------------------------------------- */

#define ECB_KERNEL(NAME, LOCALS, SETUP, FN, ARGS)                                      \
KERNEL void NAME(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,                        \
                 GLOBAL_RO const uint *RESTRICT k, ulong n)                             \
{                                                                                       \
    LOCALS                                                                              \
    SETUP(k)                                                                            \
    CG_STEPS(base, n) {                                                                 \
        uint s[CG_BATCH * CG_W];                                                        \
        cg_load_batch(in, base, n, s);                                                  \
        FN(s ARGS);                                                                     \
        cg_store_batch(out, base, n, s);                                                \
    }                                                                                   \
}

ECB_KERNEL(cg_ecb_enc, CG_ENC_LOCALS, CG_ENC_SETUP, cg_encrypt_batch, CG_ENC_ARGS)
ECB_KERNEL(cg_ecb_dec, CG_DEC_LOCALS, CG_DEC_SETUP, cg_decrypt_batch, CG_DEC_ARGS)

/* ---- CTR: the block is a big-endian counter (128-bit for 16-byte blocks, 64-bit for 8-byte),
 *      incremented with carry over its full width as in NIST SP 800-38A and OpenSSL.
 *      (ctr_hi, ctr_lo) is the counter of block 0 of this launch. ------------------------------ */

#if defined(CG_CTR_OWN)
/* the cipher file defines cg_ctr itself, with this kernel's arguments and bytes (aes.cl's counter
 * sub-tiles) */
#elif defined(CG_CTR_TILE)
#ifndef CG_CTR_GROUP
#define CG_CTR_GROUP 8
#endif
/* Counter tiles, for a cipher that makes its counter blocks itself (CG_CTR_TILE and
 * cg_ctr_tile_batch(s, c, kx ...): aes_bs.cl).  Counter values are cut into tiles of
 * CG_BATCH x CG_LOCAL_SIZE aligned on that size (the work-group size must be CG_LOCAL_SIZE, a power
 * of two); a work-group takes a tile, its work-item LID the counters tile + LID + k CG_LOCAL_SIZE,
 * k < CG_BATCH: loads and stores are coalesced as in CG_STEPS, and slot k differs from slot 0 by
 * k CG_LOCAL_SIZE with no carry.  Block b of the launch has counter ctr + b: tile 0 starts at ctr
 * rounded down, and slots outside [0, n) are neither loaded nor stored.  The cipher returns the
 * key stream less a last round key kx, added here with the data. */
KERNEL void cg_ctr(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                   GLOBAL_RO const uint *RESTRICT rk, ulong ctr_hi, ulong ctr_lo, ulong n)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(rk)
    const ulong tile = (ulong)CG_BATCH * CG_LOCAL_SIZE;
    const ulong off = ctr_lo & (tile - 1);            /* block 0's place in its tile */
    const ulong lo0 = ctr_lo - off;
    const ulong ntiles = (off + n + tile - 1) / tile;
    for (ulong t = GROUP_ID; t < ntiles; t += NGROUPS) {
        const ulong first = t * tile + LID;            /* slot 0, in counters from lo0 */
        /* the first slot at or after block 0: none of this work-item's slots in [0, n) -> skip */
        const ulong kmin = first >= off ? 0 : (off - first + CG_LOCAL_SIZE - 1) / CG_LOCAL_SIZE;
        if (kmin >= CG_BATCH || first + kmin * CG_LOCAL_SIZE - off >= n) continue;
        const ulong lo = lo0 + first;
        const ulong hi = ctr_hi + (lo < lo0 ? 1 : 0);
        uint s[CG_BATCH * 4], c[4], kx[4];
        c[0] = BSWAP32((uint)(hi >> 32)); c[1] = BSWAP32((uint)hi);
        c[2] = BSWAP32((uint)(lo >> 32)); c[3] = BSWAP32((uint)lo);
        cg_ctr_tile_batch(s, c, kx CG_ENC_ARGS);
        /* CG_CTR_GROUP slots at a time: their loads are in flight together (in and out may be the
         * same buffer, so a load cannot move above an earlier store), in few registers */
#pragma unroll
        for (int k0 = 0; k0 < CG_BATCH; k0 += CG_CTR_GROUP) {
            uint d[4 * CG_CTR_GROUP];
#pragma unroll
            for (int k = k0; k < k0 + CG_CTR_GROUP; k++) {
                const ulong pos = first + (ulong)k * CG_LOCAL_SIZE;
                if (pos >= off && pos - off < n) cg_load(in, pos - off, d + 4 * (k - k0));
            }
#pragma unroll
            for (int k = k0; k < k0 + CG_CTR_GROUP; k++) {
                const ulong pos = first + (ulong)k * CG_LOCAL_SIZE;
                if (pos >= off && pos - off < n) {
#pragma unroll
                    for (int w = 0; w < 4; w++) d[4 * (k - k0) + w] ^= s[4 * k + w] ^ kx[w];
                    cg_store(out, pos - off, d + 4 * (k - k0));
                }
            }
        }
    }
}
#else
KERNEL void cg_ctr(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                   GLOBAL_RO const uint *RESTRICT rk, ulong ctr_hi, ulong ctr_lo, ulong n)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(rk)
    CG_STEPS(base, n) {
        uint s[CG_BATCH * CG_W], d[CG_BATCH * CG_W];
#pragma unroll
        for (int k = 0; k < CG_BATCH; k++) {
            ulong lo = ctr_lo + base + (ulong)k * GSIZE;
            uint *c = s + k * CG_W;
#if CG_BLOCK_WORDS == 4
            ulong hi = ctr_hi + (lo < ctr_lo ? 1 : 0);
            c[0] = BSWAP32((uint)(hi >> 32)); c[1] = BSWAP32((uint)hi);
            c[2] = BSWAP32((uint)(lo >> 32)); c[3] = BSWAP32((uint)lo);
#else
            c[0] = BSWAP32((uint)(lo >> 32)); c[1] = BSWAP32((uint)lo);
#endif
        }
        cg_encrypt_batch(s CG_ENC_ARGS);
        cg_load_batch(in, base, n, d);
#pragma unroll
        for (int w = 0; w < CG_BATCH * CG_W; w++) d[w] ^= s[w];
        cg_store_batch(out, base, n, d);
    }
}
#endif

/* ---- CBC encryption is serial: block i needs the ciphertext of block i - 1.  One work-item
 *      walks the blocks (the others of its work-group only help CG_ENC_SETUP fill tables); the
 *      chaining value comes from chain[] and the last ciphertext block goes back there, so
 *      launches on one in-order queue continue one message.  For ciphers OpenSSL lacks. ----------- */

KERNEL void cg_cbc_enc(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                       GLOBAL_RO const uint *RESTRICT ek, GLOBAL uint *chain, ulong n)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(ek)
    if (GID == 0) {
        uint c[CG_W];
#pragma unroll
        for (int w = 0; w < CG_W; w++) c[w] = chain[w];
        for (ulong b = 0; b < n; b++) {
            uint s[CG_BATCH * CG_W];
#pragma unroll
            for (int w = 0; w < CG_BATCH * CG_W; w++) s[w] = 0;
            cg_load(in, b, s);
#pragma unroll
            for (int w = 0; w < CG_W; w++) s[w] ^= c[w];
            cg_encrypt_batch(s CG_ENC_ARGS);
#pragma unroll
            for (int w = 0; w < CG_W; w++) c[w] = s[w];
            cg_store(out, b, s);
        }
#pragma unroll
        for (int w = 0; w < CG_W; w++) chain[w] = c[w];
    }
}

/* ---- CBC decryption.  The chaining value before block 0 of this launch is (iv0..iv3), or with
 *      carry & 1 the block in chain[]; with carry & 2 the launch's last input block is written to
 *      chain[] (the next launch's chaining value).  One work-item does both, reading before
 *      writing, so a context's pieces keep their chain on the device (no copy, no wait).  in and
 *      out must not overlap, nor chain either of them. ------------------------------------------ */

KERNEL void cg_cbc_dec(GLOBAL_RO const cg_vec *in, GLOBAL cg_vec *out,
                       GLOBAL_RO const uint *RESTRICT dk, GLOBAL uint *chain, uint carry,
                       uint iv0, uint iv1, uint iv2, uint iv3, ulong n)
{
    CG_DEC_LOCALS
    CG_DEC_SETUP(dk)
    uint iv[4];
    iv[0] = iv0; iv[1] = iv1; iv[2] = iv2; iv[3] = iv3;
    if (GID == 0 && carry && n) {
        if (carry & 1) {
#pragma unroll
            for (int w = 0; w < CG_W; w++) iv[w] = chain[w];
        }
        if (carry & 2) {
            uint last[CG_W];
            cg_load(in, n - 1, last);
#pragma unroll
            for (int w = 0; w < CG_W; w++) chain[w] = last[w];
        }
    }
    CG_STEPS(base, n) {
        uint s[CG_BATCH * CG_W];
        cg_load_batch(in, base, n, s);
        cg_decrypt_batch(s CG_DEC_ARGS);
#pragma unroll
        for (int k = 0; k < CG_BATCH; k++) {
            ulong b = base + (ulong)k * GSIZE;
            uint p[CG_W];
            if (b == 0) {
#pragma unroll
                for (int w = 0; w < CG_W; w++) p[w] = iv[w];
            } else if (b < n) {
                cg_load(in, b - 1, p);
            }
#pragma unroll
            for (int w = 0; w < CG_W; w++) s[k * CG_W + w] ^= p[w];
        }
        cg_store_batch(out, base, n, s);
    }
}

/* ---- XTS (IEEE 1619), 128-bit blocks only.
 * A data unit of bpu blocks has tweak T = E_K2(iv + u) (u = unit number, little-endian 128-bit add;
 * one unit per call: u = 0 and iv is the caller's tweak; sector mode: iv = start sector).  Block j
 * of the unit uses T * alpha^j in GF(2^128).  The unit is cut into segments of 128 blocks: a first
 * kernel computes T * alpha^(128 s) for each segment s the launch touches (one general multiply per
 * 128 blocks), the second one multiplies that by alpha^(j mod 128) with shifts only.
 * Values are 128-bit little-endian integers held as (lo, hi) 64-bit halves.  bpu_log2 is log2(bpu)
 * when bpu is a power of two (shifts instead of a 64-bit division), else 64. -------------------- */

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
    CG_ENC_SETUP(rk2)
    CG_STEPS(base, nseg) {
        uint s[CG_BATCH * 4];
#pragma unroll
        for (int k = 0; k < CG_BATCH; k++) {
            ulong u = (first_seg + base + (ulong)k * GSIZE) / spu;
            ulong lo = iv_lo + u;
            ulong hi = iv_hi + (lo < iv_lo ? 1 : 0);
            s[4 * k + 0] = (uint)lo; s[4 * k + 1] = (uint)(lo >> 32);
            s[4 * k + 2] = (uint)hi; s[4 * k + 3] = (uint)(hi >> 32);
        }
        cg_encrypt_batch(s CG_ENC_ARGS);
#pragma unroll
        for (int k = 0; k < CG_BATCH; k++) {
            ulong g = base + (ulong)k * GSIZE;
            if (g >= nseg) continue;
            ulong gg = first_seg + g;
            ulong sidx = gg - (gg / spu) * spu;
            ulong lo = (ulong)s[4 * k] | ((ulong)s[4 * k + 1] << 32);
            ulong hi = (ulong)s[4 * k + 2] | ((ulong)s[4 * k + 3] << 32);
            if (sidx) {
                uint4 c = apow[sidx];
                xts_gfmul(&lo, &hi, (ulong)c.x | ((ulong)c.y << 32), (ulong)c.z | ((ulong)c.w << 32));
            }
            seg[g] = MAKE_UINT4((uint)lo, (uint)(lo >> 32), (uint)hi, (uint)(hi >> 32));
        }
    }
}

/* tweak of message block b */
DEVICE_FN void xts_tweak(GLOBAL_RO const uint4 *seg, ulong b, ulong first_seg, ulong bpu,
                         ulong spu, uint bpu_log2, uint *t)
{
    ulong u, j;
    if (bpu_log2 < 64) {
        u = b >> bpu_log2;
        j = b & (bpu - 1);
    } else {
        u = b / bpu;
        j = b - u * bpu;
    }
    uint4 c = seg[u * spu + (j >> 7) - first_seg];
    ulong lo = (ulong)c.x | ((ulong)c.y << 32);
    ulong hi = (ulong)c.z | ((ulong)c.w << 32);
    xts_mulx(&lo, &hi, (uint)(j & 127));
    t[0] = (uint)lo; t[1] = (uint)(lo >> 32); t[2] = (uint)hi; t[3] = (uint)(hi >> 32);
}

#define XTS_KERNEL(NAME, LOCALS, SETUP, FN, ARGS)                                                \
KERNEL void NAME(GLOBAL_RO const uint4 *in, GLOBAL uint4 *out, GLOBAL_RO const uint *RESTRICT k1, \
                 GLOBAL_RO const uint4 *seg, ulong first_block, ulong first_seg, ulong n,         \
                 ulong bpu, ulong spu, uint bpu_log2)                                             \
{                                                                                                 \
    LOCALS                                                                                        \
    SETUP(k1)                                                                                     \
    CG_STEPS(base, n) {                                                                           \
        uint s[CG_BATCH * 4], t[CG_BATCH * 4];                                                    \
        cg_load_batch(in, base, n, s);                                                            \
        for (int k = 0; k < CG_BATCH; k++) {                                                      \
            ulong b = base + (ulong)k * GSIZE;                                                    \
            if (b < n) xts_tweak(seg, first_block + b, first_seg, bpu, spu, bpu_log2, t + 4 * k); \
            else { t[4 * k] = 0; t[4 * k + 1] = 0; t[4 * k + 2] = 0; t[4 * k + 3] = 0; }          \
        }                                                                                         \
        for (int w = 0; w < CG_BATCH * 4; w++) s[w] ^= t[w];                                      \
        FN(s ARGS);                                                                               \
        for (int w = 0; w < CG_BATCH * 4; w++) s[w] ^= t[w];                                      \
        cg_store_batch(out, base, n, s);                                                          \
    }                                                                                             \
}

XTS_KERNEL(cg_xts_enc, CG_ENC_LOCALS, CG_ENC_SETUP, cg_encrypt_batch, CG_ENC_ARGS)
XTS_KERNEL(cg_xts_dec, CG_DEC_LOCALS, CG_DEC_SETUP, cg_decrypt_batch, CG_DEC_ARGS)

#endif /* CG_BLOCK_WORDS == 4 */
