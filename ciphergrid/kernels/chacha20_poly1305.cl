/* chacha20_poly1305.cl - ChaCha20-Poly1305 (RFC 8439) over a batch of messages, written from the
 * RFC.  One source for OpenCL C 1.2 and CUDA (NVRTC) through portable.h.  Every name carries the
 * prefix "chacha".
 *
 * A batch is m messages (texts concatenated, offsets ``off``), their AAD (concatenated, ``aad_off``),
 * a key table (8 little-endian words per key) with a key index per message and 3 nonce words per
 * message.  The host turns the lengths into the prefix sums below (numpy, no loop over the data);
 * every kernel finds its message by a binary search over one of them (public data only).
 *
 *   chacha_xor     one work-item per ChaCha20 block: block 0 of message i gives its Poly1305 key
 *                  (r clamped, s: 8 words in ``polykey``), block b >= 1 (counter b) is XORed with
 *                  bytes 64(b-1) .. 64b of the text.  blk_off = prefix of 1 + ceil(len / 64).
 *   chacha_powers  one work-item per message: r^(2^k) for k < B and r^V (V: the work-items of the
 *                  message's last segment, below), from squarings of r.
 *   chacha_poly    one work-item per (message, j < W): the Poly1305 input (AAD || pad16 || text ||
 *                  pad16 || le64 alen || le64 tlen, n blocks of 16 bytes) is cut into segments of
 *                  S = SI x C blocks (SI = 2^CHACHA_SEG_LOG work-items, C = the driver's
 *                  ``poly_blocks``, CHACHA_POLY_BLOCKS), the last segment taking the rest (1 to S
 *                  blocks, V = ceil(its blocks / C) work-items), and each segment is dealt out in
 *                  stripes: its work-item j folds the segment's blocks j, j + SI, j + 2 SI, ...
 *                  (the last segment's: stride V) by Horner's rule with r^SI (r^V), then
 *                  multiplies by r^e (e = the blocks after its last one, plus one, a product of
 *                  the r^(2^k) it selects by the bits of the public e; B = the bit length of the
 *                  largest e: of W for a message of one segment, of n for longer ones).  Adjacent
 *                  work-items read adjacent 16-byte blocks (coalesced 128-bit loads).  The sum of
 *                  the W contributions is the Poly1305 value mod 2^130 - 5.  A message of at most
 *                  S blocks is one segment: W = ceil(n / C).  A segment's work-items need only
 *                  its blocks, so a slice cut inside a long message runs the segments before the
 *                  cut (aeads/chacha20_poly1305.py).
 *   chacha_psum    sums the contributions of each message, ``fanin`` per work-item (striped
 *                  again), over as many levels as the largest message needs; the last level (one
 *                  work-item per message) reduces mod 2^130 - 5, adds s and writes the 16-byte tag.
 *   chacha_stream  one work-item per 64-byte block of one text that starts at ChaCha20 block
 *                  ``ctr0`` of (key, nonce): the text XOR the key stream (a range of one long
 *                  message, the others run by other engines: engines/scheduler/message_range.py).
 *
 * Every kernel takes the items [lo, hi) of its item space (the host's prefix sums at the first
 * and the end message of a slice, aeads/base.py Job): a batch runs in one launch of each, or in
 * slices of messages whose launches each wait only for their own texts.
 *
 * Arithmetic mod 2^130 - 5: five 26-bit limbs in 32-bit words, products 32x32->64 (``ulong``),
 * carries folded with the factor 5.  No tables, no branch or address that depends on key, text
 * or tag: every kernel here is constant-time with respect to secrets (branches depend on the
 * lengths and offsets only).  The device is little-endian (all OpenCL GPUs/CPUs and CUDA).
 */

#define CHACHA_M26 0x3ffffffu
#ifndef CHACHA_POLY_BLOCKS
#define CHACHA_POLY_BLOCKS 128
#endif
#ifndef CHACHA_SEG_LOG
#define CHACHA_SEG_LOG 9
#endif
#define CHACHA_SI ((ulong)1 << CHACHA_SEG_LOG)

/* the i in [lo, hi) with pre[i] <= g < pre[i + 1] (pre[lo] <= g < pre[hi]; every message has at
 * least one item) */
DEVICE_FN uint chacha_search(GLOBAL_RO const ulong *pre, uint lo, uint hi, ulong g)
{
    while (hi - lo > 1) {
        uint mid = (lo + hi) >> 1;
        if (pre[mid] <= g)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

DEVICE_FN uint chacha_find(GLOBAL_RO const ulong *pre, uint m, ulong g)
{
    return chacha_search(pre, 0, m, g);
}

/* chacha_find with a coarse index: hint[c] is the message holding item c << shift (the host's
 * np.searchsorted), so item g lies in messages hint[c] .. hint[c + 1]: a few steps instead of
 * log2(m) dependent loads per item in a batch of many messages */
DEVICE_FN uint chacha_find_hinted(GLOBAL_RO const ulong *pre, GLOBAL_RO const uint *hint,
                                  uint shift, uint m, ulong g)
{
    const ulong c = g >> shift;
    const uint hi = hint[c + 1] + 1u;
    return chacha_search(pre, hint[c], hi < m ? hi : m, g);
}

/* ------------------------------------------------------------------------------ ChaCha20 */

#define CHACHA_QR(a, b, c, d)                              \
    a += b; d ^= a; d = ROTL32(d, 16);                     \
    c += d; b ^= c; b = ROTL32(b, 12);                     \
    a += b; d ^= a; d = ROTL32(d, 8);                      \
    c += d; b ^= c; b = ROTL32(b, 7);

/* RFC 8439 §2.3: the 64-byte block for (key, counter, nonce) as 16 little-endian words */
DEVICE_FN void chacha_block(GLOBAL_RO const uint *k, uint ctr, uint n0, uint n1, uint n2, uint *o)
{
    uint x0 = 0x61707865u, x1 = 0x3320646eu, x2 = 0x79622d32u, x3 = 0x6b206574u;
    uint x4 = k[0], x5 = k[1], x6 = k[2], x7 = k[3], x8 = k[4], x9 = k[5], x10 = k[6], x11 = k[7];
    uint x12 = ctr, x13 = n0, x14 = n1, x15 = n2;
    for (int r = 0; r < 10; r++) {
        CHACHA_QR(x0, x4, x8, x12)
        CHACHA_QR(x1, x5, x9, x13)
        CHACHA_QR(x2, x6, x10, x14)
        CHACHA_QR(x3, x7, x11, x15)
        CHACHA_QR(x0, x5, x10, x15)
        CHACHA_QR(x1, x6, x11, x12)
        CHACHA_QR(x2, x7, x8, x13)
        CHACHA_QR(x3, x4, x9, x14)
    }
    o[0] = x0 + 0x61707865u; o[1] = x1 + 0x3320646eu; o[2] = x2 + 0x79622d32u; o[3] = x3 + 0x6b206574u;
    o[4] = x4 + k[0]; o[5] = x5 + k[1]; o[6] = x6 + k[2]; o[7] = x7 + k[3];
    o[8] = x8 + k[4]; o[9] = x9 + k[5]; o[10] = x10 + k[6]; o[11] = x11 + k[7];
    o[12] = x12 + ctr; o[13] = x13 + n0; o[14] = x14 + n1; o[15] = x15 + n2;
}

KERNEL void chacha_xor(GLOBAL_RO const uchar *RESTRICT src, GLOBAL uchar *RESTRICT dst,
                       GLOBAL_RO const ulong *off, GLOBAL_RO const ulong *blk_off,
                       GLOBAL_RO const uint *blk_hint, uint hint_shift,
                       GLOBAL_RO const uint *keys, GLOBAL_RO const uint *key_index,
                       GLOBAL_RO const uint *nonces, GLOBAL uint *polykey, uint m, ulong lo,
                       ulong hi)
{
    ulong g = lo + GID;
    if (g >= hi)
        return;
    uint i = chacha_find_hinted(blk_off, blk_hint, hint_shift, m, g);
    uint b = (uint)(g - blk_off[i]);
    uint ks[16];
    chacha_block(keys + 8 * (ulong)key_index[i], b, nonces[3 * (ulong)i], nonces[3 * (ulong)i + 1],
                 nonces[3 * (ulong)i + 2], ks);
    if (b == 0) {
        /* RFC 8439 §2.6: the Poly1305 key is the first 32 bytes of block 0; r clamped (§2.5) */
        GLOBAL uint *pk = polykey + 8 * (ulong)i;
        pk[0] = ks[0] & 0x0fffffffu;
        pk[1] = ks[1] & 0x0ffffffcu;
        pk[2] = ks[2] & 0x0ffffffcu;
        pk[3] = ks[3] & 0x0ffffffcu;
        pk[4] = ks[4]; pk[5] = ks[5]; pk[6] = ks[6]; pk[7] = ks[7];
        return;
    }
    ulong start = off[i] + 64 * (ulong)(b - 1);
    ulong left = off[i + 1] - start;
    if (left >= 64 && (start & 15) == 0) {
        GLOBAL_RO const uint4 *s4 = (GLOBAL_RO const uint4 *)(src + start);
        GLOBAL uint4 *d4 = (GLOBAL uint4 *)(dst + start);
        for (int q = 0; q < 4; q++) {
            uint4 v = s4[q];
            v.x ^= ks[4 * q];
            v.y ^= ks[4 * q + 1];
            v.z ^= ks[4 * q + 2];
            v.w ^= ks[4 * q + 3];
            d4[q] = v;
        }
    } else if (left >= 64 && (start & 3) == 0) {
        GLOBAL_RO const uint *s1 = (GLOBAL_RO const uint *)(src + start);
        GLOBAL uint *d1 = (GLOBAL uint *)(dst + start);
        for (int q = 0; q < 16; q++)
            d1[q] = s1[q] ^ ks[q];
    } else {
        /* the last (partial) block of a message, or a message at an odd offset */
        uint n = left < 64 ? (uint)left : 64u;
        for (int q = 0; q < 16; q++)
            for (int y = 0; y < 4; y++) {
                uint p = 4 * q + y;
                if (p < n)
                    dst[start + p] = (uchar)(src[start + p] ^ (uchar)(ks[q] >> (8 * y)));
            }
    }
}

/* chacha_stream (see the header): dst = src XOR ChaCha20(key, ctr0 + g, nonce) for block g */
KERNEL void chacha_stream(GLOBAL_RO const uchar *RESTRICT src, GLOBAL uchar *RESTRICT dst,
                          GLOBAL_RO const uint *key, uint n0, uint n1, uint n2, uint ctr0,
                          ulong nbytes)
{
    ulong g = GID;
    ulong start = 64 * g;
    if (start >= nbytes)
        return;
    uint ks[16];
    chacha_block(key, ctr0 + (uint)g, n0, n1, n2, ks);
    ulong left = nbytes - start;
    if (left >= 64) {   /* (the buffers are the device's own: aligned) */
        GLOBAL_RO const uint *s1 = (GLOBAL_RO const uint *)(src + start);
        GLOBAL uint *d1 = (GLOBAL uint *)(dst + start);
        for (int q = 0; q < 16; q++)
            d1[q] = s1[q] ^ ks[q];
        return;
    }
    for (uint p = 0; p < (uint)left; p++)
        dst[start + p] = (uchar)(src[start + p] ^ (uchar)(ks[p >> 2] >> (8 * (p & 3))));
}

/* ------------------------------------------------------------------- arithmetic mod 2^130 - 5 */

/* h = h * r mod 2^130 - 5, partly reduced: limbs of h below 2^27, of r below 2^26 + 2^12 on
 * entry; on exit h0, h2..h4 < 2^26, h1 < 2^26 + 2^12.  s = 5 r1..r4 (s[0] unused). */
DEVICE_FN void chacha_mul(uint *h, const uint *r, const uint *s)
{
    ulong h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3], h4 = h[4];
    ulong d0 = h0 * r[0] + h1 * s[4] + h2 * s[3] + h3 * s[2] + h4 * s[1];
    ulong d1 = h0 * r[1] + h1 * r[0] + h2 * s[4] + h3 * s[3] + h4 * s[2];
    ulong d2 = h0 * r[2] + h1 * r[1] + h2 * r[0] + h3 * s[4] + h4 * s[3];
    ulong d3 = h0 * r[3] + h1 * r[2] + h2 * r[1] + h3 * r[0] + h4 * s[4];
    ulong d4 = h0 * r[4] + h1 * r[3] + h2 * r[2] + h3 * r[1] + h4 * r[0];
    d1 += d0 >> 26; h[0] = (uint)d0 & CHACHA_M26;
    d2 += d1 >> 26; h[1] = (uint)d1 & CHACHA_M26;
    d3 += d2 >> 26; h[2] = (uint)d2 & CHACHA_M26;
    d4 += d3 >> 26; h[3] = (uint)d3 & CHACHA_M26;
    ulong c = (d4 >> 26) * 5 + h[0];
    h[4] = (uint)d4 & CHACHA_M26;
    h[0] = (uint)c & CHACHA_M26;
    h[1] += (uint)(c >> 26);
}

DEVICE_FN void chacha_times5(const uint *r, uint *s)
{
    s[0] = 0; s[1] = 5 * r[1]; s[2] = 5 * r[2]; s[3] = 5 * r[3]; s[4] = 5 * r[4];
}

/* the 5 limbs of a 128-bit little-endian value, plus 2^128 * hi */
DEVICE_FN void chacha_limbs(uint w0, uint w1, uint w2, uint w3, uint hi, uint *l)
{
    l[0] = w0 & CHACHA_M26;
    l[1] = ((w0 >> 26) | (w1 << 6)) & CHACHA_M26;
    l[2] = ((w1 >> 20) | (w2 << 12)) & CHACHA_M26;
    l[3] = ((w2 >> 14) | (w3 << 18)) & CHACHA_M26;
    l[4] = (w3 >> 8) | (hi << 24);
}

DEVICE_FN void chacha_load5(GLOBAL_RO const uint *p, uint *x)
{
    x[0] = p[0]; x[1] = p[1]; x[2] = p[2]; x[3] = p[3]; x[4] = p[4];
}

DEVICE_FN void chacha_store5(GLOBAL uint *p, const uint *x)
{
    p[0] = x[0]; p[1] = x[1]; p[2] = x[2]; p[3] = x[3]; p[4] = x[4];
}

/* ---------------------------------------------------------------------------- powers of r */

/* powers: per message, 1 + B entries of 5 limbs from pow_off[i]: r^V, r, r^2, r^4, .. r^(2^(B-1))
 * (V: the last segment's work-items; B > CHACHA_SEG_LOG where there are several segments, so
 * r^SI is entry 1 + CHACHA_SEG_LOG) */
KERNEL void chacha_powers(GLOBAL_RO const uint *polykey, GLOBAL_RO const ulong *poly_off,
                          GLOBAL_RO const ulong *pow_off, GLOBAL uint *powers, uint lo, uint hi)
{
    ulong i = lo + GID;
    if (i >= hi)
        return;
    ulong w = poly_off[i + 1] - poly_off[i];
    w -= ((w - 1) >> CHACHA_SEG_LOG) << CHACHA_SEG_LOG;   /* V: the last segment's work-items */
    uint nb = (uint)(pow_off[i + 1] - pow_off[i]) - 1;
    GLOBAL uint *out = powers + 5 * pow_off[i];
    GLOBAL_RO const uint *pk = polykey + 8 * i;
    uint cur[5], cs[5], acc[5] = {1, 0, 0, 0, 0};
    chacha_limbs(pk[0], pk[1], pk[2], pk[3], 0, cur);
    for (uint k = 0; k < nb; k++) {
        chacha_store5(out + 5 * (1 + k), cur);
        chacha_times5(cur, cs);
        if ((w >> k) & 1)
            chacha_mul(acc, cur, cs);
        if (k + 1 < nb) {
            uint sq[5] = {cur[0], cur[1], cur[2], cur[3], cur[4]};
            chacha_mul(cur, sq, cs);
        }
    }
    chacha_store5(out, acc);
}

/* ---------------------------------------------------------------------------- Poly1305 */

/* 16-byte block b of message i's Poly1305 input, as 5 limbs (with the 2^128 bit) */
DEVICE_FN void chacha_poly_block(GLOBAL_RO const uchar *text, GLOBAL_RO const uchar *aad,
                                 ulong toff, ulong aoff, ulong tlen, ulong alen, ulong na,
                                 ulong nt, ulong b, uint *l)
{
    uint w0, w1, w2, w3;
    GLOBAL_RO const uchar *p;
    ulong a, left;   /* a: the byte offset in its buffer (buffers are 16-byte aligned) */
    if (b < na) {
        a = aoff + 16 * b;
        p = aad + a;
        left = alen - 16 * b;
    } else if (b < na + nt) {
        a = toff + 16 * (b - na);
        p = text + a;
        left = tlen - 16 * (b - na);
    } else {
        chacha_limbs((uint)alen, (uint)(alen >> 32), (uint)tlen, (uint)(tlen >> 32), 1, l);
        return;
    }
    if (left >= 16 && (a & 15) == 0) {
        uint4 v = *(GLOBAL_RO const uint4 *)p;
        w0 = v.x; w1 = v.y; w2 = v.z; w3 = v.w;
    } else if (left >= 16 && (a & 3) == 0) {
        GLOBAL_RO const uint *q = (GLOBAL_RO const uint *)p;
        w0 = q[0]; w1 = q[1]; w2 = q[2]; w3 = q[3];
    } else {
        /* a partial block (zero-padded, RFC 8439 §2.8) or an odd offset */
        uint n = left < 16 ? (uint)left : 16u;
        uint w[4] = {0, 0, 0, 0};
        for (uint y = 0; y < 16; y++)
            if (y < n)
                w[y >> 2] |= (uint)p[y] << (8 * (y & 3));
        w0 = w[0]; w1 = w[1]; w2 = w[2]; w3 = w[3];
    }
    chacha_limbs(w0, w1, w2, w3, 1, l);
}

/* contrib (structure of arrays, 5 rows of ``stride`` words): work-item g's share */
KERNEL void chacha_poly(GLOBAL_RO const uchar *text, GLOBAL_RO const uchar *aad,
                        GLOBAL_RO const ulong *off, GLOBAL_RO const ulong *aad_off,
                        GLOBAL_RO const ulong *poly_off, GLOBAL_RO const uint *poly_hint,
                        uint hint_shift, GLOBAL_RO const ulong *pow_off,
                        GLOBAL_RO const uint *powers, GLOBAL uint *contrib, uint m, ulong items,
                        ulong lo, ulong hi)
{
    ulong g = lo + GID;
    if (g >= hi)
        return;
    uint i = chacha_find_hinted(poly_off, poly_hint, hint_shift, m, g);
    ulong j = g - poly_off[i];
    ulong w = poly_off[i + 1] - poly_off[i];
    ulong toff = off[i], tlen = off[i + 1] - toff;
    ulong aoff = aad_off[i], alen = aad_off[i + 1] - aoff;
    ulong na = (alen + 15) >> 4, nt = (tlen + 15) >> 4;
    ulong n = na + nt + 1;
    /* segment s of the message (every one before the last has SI work-items, stride SI) */
    const ulong full = (w - 1) >> CHACHA_SEG_LOG, s = j >> CHACHA_SEG_LOG;
    const ulong b0 = s * (CHACHA_SI * CHACHA_POLY_BLOCKS) + (j & (CHACHA_SI - 1));
    const ulong stride = s < full ? CHACHA_SI : w - (full << CHACHA_SEG_LOG);
    const ulong send = s < full ? (s + 1) * (CHACHA_SI * CHACHA_POLY_BLOCKS) : n;
    ulong cnt = (send - b0 + stride - 1) / stride;
    GLOBAL_RO const uint *pw = powers + 5 * pow_off[i];
    uint rw[5], sw[5], h[5], x[5];
    chacha_load5(s < full ? pw + 5 * (1 + CHACHA_SEG_LOG) : pw, rw);   /* r^stride */
    chacha_times5(rw, sw);
    chacha_poly_block(text, aad, toff, aoff, tlen, alen, na, nt, b0, h);
    for (ulong b = b0 + stride; b < send; b += stride) {
        chacha_mul(h, rw, sw);
        chacha_poly_block(text, aad, toff, aoff, tlen, alen, na, nt, b, x);
        h[0] += x[0]; h[1] += x[1]; h[2] += x[2]; h[3] += x[3]; h[4] += x[4];
    }
    /* times r^e, e = n - (last block index) = n - b0 - (cnt - 1) stride, 1 <= e < 2^B */
    ulong e = n - b0 - (cnt - 1) * stride;
    for (uint k = 0; (e >> k) != 0; k++) {
        if ((e >> k) & 1) {
            chacha_load5(pw + 5 * (1 + k), x);
            uint s[5];
            chacha_times5(x, s);
            chacha_mul(h, x, s);
        }
    }
    for (int q = 0; q < 5; q++)
        contrib[q * items + g] = h[q];
}

/* h mod 2^130 - 5 fully reduced, + s (4 words), as the 16-byte tag */
DEVICE_FN void chacha_tag(uint *h, GLOBAL_RO const uint *s, GLOBAL uchar *tag)
{
    for (int pass = 0; pass < 2; pass++) {
        uint c;
        c = h[0] >> 26; h[0] &= CHACHA_M26; h[1] += c;
        c = h[1] >> 26; h[1] &= CHACHA_M26; h[2] += c;
        c = h[2] >> 26; h[2] &= CHACHA_M26; h[3] += c;
        c = h[3] >> 26; h[3] &= CHACHA_M26; h[4] += c;
        c = h[4] >> 26; h[4] &= CHACHA_M26; h[0] += 5 * c;
        c = h[0] >> 26; h[0] &= CHACHA_M26; h[1] += c;
    }
    /* h < 2^130 < 2p: subtract p once when h + 5 >= 2^130, without a branch */
    uint g0, g1, g2, g3, g4, c;
    g0 = h[0] + 5; c = g0 >> 26; g0 &= CHACHA_M26;
    g1 = h[1] + c; c = g1 >> 26; g1 &= CHACHA_M26;
    g2 = h[2] + c; c = g2 >> 26; g2 &= CHACHA_M26;
    g3 = h[3] + c; c = g3 >> 26; g3 &= CHACHA_M26;
    g4 = h[4] + c - (1u << 26);
    uint keep = (g4 >> 31) - 1u;   /* all ones when h + 5 >= 2^130 (take g) */
    uint h0 = (h[0] & ~keep) | (g0 & keep);
    uint h1 = (h[1] & ~keep) | (g1 & keep);
    uint h2 = (h[2] & ~keep) | (g2 & keep);
    uint h3 = (h[3] & ~keep) | (g3 & keep);
    uint h4 = (h[4] & ~keep) | (g4 & keep);
    uint w[4];
    w[0] = h0 | (h1 << 26);
    w[1] = (h1 >> 6) | (h2 << 20);
    w[2] = (h2 >> 12) | (h3 << 14);
    w[3] = (h3 >> 18) | (h4 << 8);
    ulong f = 0;
    for (int q = 0; q < 4; q++) {
        f += (ulong)w[q] + s[q];
        uint v = (uint)f;
        f >>= 32;
        tag[4 * q] = (uchar)v;
        tag[4 * q + 1] = (uchar)(v >> 8);
        tag[4 * q + 2] = (uchar)(v >> 16);
        tag[4 * q + 3] = (uchar)(v >> 24);
    }
}

/* one level of the sum: out item g (message i, j < w_out) adds in items j, j + w_out, ... of
 * message i; ``last``: w_out = 1 per message, the sum becomes the tag */
KERNEL void chacha_psum(GLOBAL_RO const uint *in, ulong in_stride, GLOBAL_RO const ulong *in_off,
                        GLOBAL uint *out, GLOBAL_RO const ulong *out_off,
                        GLOBAL_RO const uint *polykey, GLOBAL uchar *tags, uint last, uint m,
                        ulong items, ulong lo, ulong hi)
{
    ulong g = lo + GID;
    if (g >= hi)
        return;
    uint i = chacha_find(out_off, m, g);
    ulong j = g - out_off[i];
    ulong w = out_off[i + 1] - out_off[i];
    ulong base = in_off[i], cnt = in_off[i + 1] - base;
    ulong a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0;
    for (ulong v = base + j; v < base + cnt; v += w) {
        a0 += in[v];
        a1 += in[in_stride + v];
        a2 += in[2 * in_stride + v];
        a3 += in[3 * in_stride + v];
        a4 += in[4 * in_stride + v];
    }
    /* limbs < 2^27 times at most 2^32 terms: fold the carries (factor 5 for 2^130) */
    a1 += a0 >> 26; a0 &= CHACHA_M26;
    a2 += a1 >> 26; a1 &= CHACHA_M26;
    a3 += a2 >> 26; a2 &= CHACHA_M26;
    a4 += a3 >> 26; a3 &= CHACHA_M26;
    a0 += (a4 >> 26) * 5; a4 &= CHACHA_M26;
    a1 += a0 >> 26; a0 &= CHACHA_M26;
    uint h[5] = {(uint)a0, (uint)a1, (uint)a2, (uint)a3, (uint)a4};
    if (last) {
        chacha_tag(h, polykey + 8 * (ulong)i + 4, tags + 16 * (ulong)i);
    } else {
        for (int q = 0; q < 5; q++)
            out[q * items + g] = h[q];
    }
}
