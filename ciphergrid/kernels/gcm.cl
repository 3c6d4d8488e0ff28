/* gcm.cl - AES-GCM (NIST SP 800-38D) over a batch of messages: CTR key stream with inc32 and
 * GHASH, both parallel inside each message and across the batch.  Compiled after portable.h and an
 * AES block-function file: aes.cl (implementation "fast": T-tables, and 8-bit (one key in the batch)
 * or 4-bit tables of H-multiples for GHASH) or aes_bs.cl (implementation "ct", GCM_CT = 1: bitsliced AES, and a GHASH multiply
 * whose only tables are indexed by the loop counter, never by data).
 *
 * GF(2^128) elements are held as 4 big-endian 32-bit words (x, y, z, w) of the 16 block bytes: the
 * coefficient of x^i is bit 31 - (i mod 32) of word i / 32 (SP 800-38D's bit order, bit 0 = the
 * most significant bit of byte 0).  Multiplying by x is a right shift of the 128 bits; the bit
 * x^127 that falls off comes back as R = 11100001 || 0^120 (0xe1000000 in word x).
 *
 * A message's GHASH input (its "stream") is the AAD zero-padded to 16 bytes, the ciphertext
 * zero-padded, and the length block [len(A)]64 || [len(C)]64: nb blocks X_1..X_nb, and
 * GHASH = sum X_j H^(nb + 1 - j).  The stream is cut into tiles of W x R blocks aligned on the
 * stream's END (the first tile of a message starts before block 0 and reads zeros there, which
 * Horner's rule ignores): tile u (counted from the end) holds the blocks with nb - j in
 * [W R u, W R (u + 1)).  Inside a tile, lane l of its W lanes takes blocks l, l + W, ..., l + (R-1) W
 * (coalesced loads) and folds them by Horner with M = H^W; its sum times H^(W - l) puts every block
 * at its power within the tile; the W lanes are XOR-reduced in work-group memory, and the tile's sum
 * times H^(W R u) (square-and-multiply from the per-key table H^(2^j)) is written out.  gcm_tag
 * XOR-reduces the tiles of each message (P lanes per message) and adds E(K, J0).
 *
 * Key material per key ("hk", uint4 entries, stride HS = np2 + W + GCM_TB, all made on the device
 * by gcm_hkey and gcm_hpow from the AES round keys): [0, np2) H^(2^j); [np2, np2 + W) H^(i+1);
 * then GCM_TB entries: fast: the 16 products p_n M (n a nibble, its bit 3 = x^0 .. bit 0 = x^3),
 * ct: the 128 products x^i M.
 *
 * Slices: the counter passes and GHASH take explicit item ranges (counter blocks [glo, total),
 * text blocks [xlo, xhi), tiles [tlo, ntiles)), gcm_tag and the E(K, J0) blocks of the text-block
 * passes a message range; ``first`` and ``m`` bound the searches for an item's message.  The host
 * works the ranges out from a slice's byte range (aeads/gcm.py GCMJob.launch: a batch's texts
 * move and run in slices, cut between messages or inside one; gcm_j0 runs once per job, over
 * all messages, with the first slice's launches).  The counter passes in text-block space keep
 * their tiles aligned as in a whole batch (a tile that starts before the slice skips the blocks
 * before it, one that ends after it the blocks after it); a GHASH tile runs in the slice that
 * holds all its stream blocks.
 *
 * Knobs (defines): GCM_LS work-group size (a power of two, the launches use exactly it),
 * GCM_MIN_W the smallest tile width the fast kernel's work-group table slots allow.  W and R are
 * chosen per batch by the host (aeads/gcm.py), as is P.
 */
#ifndef GCM_LS
#define GCM_LS 256
#endif
#ifndef GCM_CT
#define GCM_CT 0
#endif
#ifndef GCM_MIN_W
#define GCM_MIN_W 8
#endif
#if GCM_CT
#define GCM_TB 128
#else
#define GCM_TB 16
#endif
/* GCM_GH (the driver's knob "gh"): 0 the kernel gcm_ghash only; 1 also gcm_ghash_pos, positional
 * tables (see "positional tables" below) for batches of one key: fast: 8-bit tables for block
 * bytes 0..7 and 4-bit tables for bytes 8..15 (36 KiB); ct: 4-bit tables of M^1..M^(GCM_GRP-1)
 * indexed by the (public) stream blocks; 2 (fast only): 4-bit tables for all 16 bytes (8 KiB).
 * GCM_GRP (knob "grp", ct only): blocks per group, 2..6.  GCM_CTR (knob "ctr", ct only): 1 also
 * compiles gcm_ctr_one, the counter pass for batches of one key. */
#ifndef GCM_GH
#define GCM_GH 0
#endif
#ifndef GCM_GRP
#define GCM_GRP 6
#endif
#ifndef GCM_CTR
#define GCM_CTR 0
#endif
/* GCM_POS_ROLL (knob "roll"): 1: the 4-bit positional multiply loops over the 4 bytes of each
 * word instead of being unrolled (fewer registers: ct gcm_ghash_pos 64 instead of 72, 128 at
 * grp = 4; sm_90) */
#ifndef GCM_POS_ROLL
#define GCM_POS_ROLL 0
#endif
/* GCM_PF (knob "pf", gcm_ghash_pos): 0 every block through gcm_stream (branches on AAD / text /
 * length block, alignment, 64-bit offsets) and loaded just before its Horner step; 1 (fast) chunks
 * of GCM_PFN = 4 steps, 2 (fast) chunks of 8, 1 (ct) whole groups: where every block of the chunk
 * is a full, aligned text block, the chunk's loads are issued together from one base address
 * (GCM_PFN loads in flight per lane instead of one, each 128-byte line read by one lane once
 * when W = 1), then the steps; other chunks (AAD, a message's edges, the last partial block) as
 * before */
#ifndef GCM_PF
#define GCM_PF 0
#endif
/* GCM_MAD (knob "mad", fast gh = 3): the 8-bit positional lookups addressed in bytes, 128 v + 16 q
 * (a byte permute to extract v, a multiply-add, which NVIDIA runs on the FMA pipe, beside the
 * integer ALU), instead of a shift-and-mask, a shift-add and the scaling of the index */
#ifndef GCM_MAD
#define GCM_MAD 0
#endif
/* the host's flag on gcm_hpow's and gcm_ghash_pos's nf (knob tf): the nf entries after the
 * positional tables are the tile factors H^(W R u), u < nf, instead of lane factors */
#define GCM_TFBIT 0x80000000u
/* GCM_HD (knob "hd", gcm_ghash_pos): 0 every message's stream cut into ceil(nb / (W R)) tiles, the
 * first holding the nb mod W R head blocks alone; 1 (and 2: the host's tile choice counts waves of
 * the resident grid) floor(nb / (W R)) tiles (at least 1), the first taking the head blocks as
 * extra steps of its lanes (gcm_ghash_pos: run up to 2 R - 1) */
#ifndef GCM_HD
#define GCM_HD 0
#endif
#define GCM_PFN (GCM_PF == 2 ? 8 : 4)
/* GCM_GH 3 (fast only): the 8-bit tables of bytes 0..7 alone (32 KiB), looked up for both halves
 * of the operand: X = A + x^64 B (A bytes 0..7, B bytes 8..15 moved to 0..7), X M = A M + x^64 (B M),
 * the product by x^64 a 64-bit word shift and a shift-and-XOR reduction (gcm_mulx64): 16 lookups of
 * 16 bytes per block instead of 24, 8 + 4 x 3 register operations more */
#define GCM_PT8 (!GCM_CT && (GCM_GH == 1 || GCM_GH == 3))
#define GCM_PT8H (!GCM_CT && GCM_GH == 3)
#if GCM_CT
#define GCM_PTAB ((GCM_GRP - 1) * 512)
#define GCM_TBP (128 + GCM_PTAB)
#elif GCM_GH == 1
#define GCM_PTAB 2304
#define GCM_TBP GCM_PTAB
#elif GCM_GH == 3
#define GCM_PTAB 2048
#define GCM_TBP GCM_PTAB
#else
#define GCM_PTAB 512
#define GCM_TBP GCM_PTAB
#endif

DEVICE_FN uint4 gcm_xor(uint4 a, uint4 b)
{
    return MAKE_UINT4(a.x ^ b.x, a.y ^ b.y, a.z ^ b.z, a.w ^ b.w);
}

DEVICE_FN uint4 gcm_and(uint4 a, uint m)
{
    return MAKE_UINT4(a.x & m, a.y & m, a.z & m, a.w & m);
}

/* v * x */
DEVICE_FN uint4 gcm_mulx(uint4 v)
{
    const uint r = (uint)0 - (v.w & 1u);
    return MAKE_UINT4((v.x >> 1) ^ (r & 0xe1000000u), (v.y >> 1) | (v.x << 31),
                      (v.z >> 1) | (v.y << 31), (v.w >> 1) | (v.z << 31));
}

/* a * b, bit-serial (SP 800-38D Algorithm 1) with masks: no table, no data-dependent branch */
DEVICE_FN uint4 gcm_mul_ct(uint4 a, uint4 b)
{
    uint4 z = MAKE_UINT4(0u, 0u, 0u, 0u), v = b;
    uint aw[4];
    aw[0] = a.x; aw[1] = a.y; aw[2] = a.z; aw[3] = a.w;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint t = aw[q];
        for (int i = 0; i < 32; i++) {
            const uint m = (uint)((int)t >> 31);
            t <<= 1;
            z = gcm_xor(z, gcm_and(v, m));
            v = gcm_mulx(v);
        }
    }
    return z;
}

/* a * a: squaring is linear over GF(2) -- coefficient i goes to 2i -- so each 16-bit half of a
 * word is spread over 32 bits (bit b to bit 2b + 1: a word holds coefficients 32q .. 32q + 31 from
 * its most significant bit down), then the 256-bit square is reduced by x^128 = x^7 + x^2 + x + 1
 * (the high half H added times 1, x, x^2 and x^7; the coefficients H x^k pushes past x^127 folded
 * once more).  Shifts, masks and XORs only: constant time, ~60 operations against the 128 steps of
 * gcm_mul_ct (gcm_hkey's chain of squarings H^(2^j) took 0.07-0.14 ms of a 1 GiB message's 3-5 ms on
 * an H100: one work-item, one dependent multiply after another). */
DEVICE_FN uint gcm_spread16(uint u)
{
    u = (u | (u << 8)) & 0x00ff00ffu;
    u = (u | (u << 4)) & 0x0f0f0f0fu;
    u = (u | (u << 2)) & 0x33333333u;
    return ((u | (u << 1)) & 0x55555555u) << 1;
}

/* v * x^k (0 < k < 32) without the coefficients pushed past x^127 */
DEVICE_FN uint4 gcm_shr(uint4 v, int k)
{
    return MAKE_UINT4(v.x >> k, (v.y >> k) | (v.x << (32 - k)), (v.z >> k) | (v.y << (32 - k)),
                      (v.w >> k) | (v.z << (32 - k)));
}

DEVICE_FN uint4 gcm_sqr(uint4 a)
{
    const uint4 lo = MAKE_UINT4(gcm_spread16(a.x >> 16), gcm_spread16(a.x & 0xffffu),
                                gcm_spread16(a.y >> 16), gcm_spread16(a.y & 0xffffu));
    const uint4 hi = MAKE_UINT4(gcm_spread16(a.z >> 16), gcm_spread16(a.z & 0xffffu),
                                gcm_spread16(a.w >> 16), gcm_spread16(a.w & 0xffffu));
    /* hi's coefficients x^121 .. x^127 times x, x^2, x^7 pass x^127: as x^0 .. x^6, times R again */
    const uint o = (hi.w << 31) ^ (hi.w << 30) ^ (hi.w << 25);
    uint4 r = gcm_xor(gcm_xor(lo, hi), gcm_xor(gcm_shr(hi, 1), gcm_xor(gcm_shr(hi, 2), gcm_shr(hi, 7))));
    r.x ^= o ^ (o >> 1) ^ (o >> 2) ^ (o >> 7);
    return r;
}

/* a * M with the 128 products x^i M (ct): indexed by the loop counter only */
DEVICE_FN uint4 gcm_mul_xtab(uint4 a, GLOBAL_RO const uint4 *RESTRICT xm)
{
    uint4 z = MAKE_UINT4(0u, 0u, 0u, 0u);
    uint aw[4];
    aw[0] = a.x; aw[1] = a.y; aw[2] = a.z; aw[3] = a.w;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint t = aw[q];
        for (int i = 0; i < 32; i++) {
            const uint m = (uint)((int)t >> 31);
            t <<= 1;
            z = gcm_xor(z, gcm_and(xm[32 * q + i], m));
        }
    }
    return z;
}

/* z * x^4: the four coefficients x^124..x^127 (low nibble of w) come back times R */
DEVICE_FN uint4 gcm_mulx4(uint4 z)
{
    const uint r = z.w;
    const uint red = (((uint)0 - ((r >> 3) & 1u)) & 0xe1000000u) ^ (((uint)0 - ((r >> 2) & 1u)) & 0x70800000u) ^
                     (((uint)0 - ((r >> 1) & 1u)) & 0x38400000u) ^ (((uint)0 - (r & 1u)) & 0x1c200000u);
    return MAKE_UINT4((z.x >> 4) ^ red, (z.y >> 4) | (z.x << 28), (z.z >> 4) | (z.y << 28),
                      (z.w >> 4) | (z.z << 28));
}

/* a * M with the 16 nibble products of M in work-group memory (fast): nibbles from x^124 down */
DEVICE_FN uint4 gcm_mul_tab(uint4 a, LOCAL_PTR const uint4 *tab)
{
    uint4 z = MAKE_UINT4(0u, 0u, 0u, 0u);
    uint aw[4];
    aw[0] = a.x; aw[1] = a.y; aw[2] = a.z; aw[3] = a.w;
#pragma unroll
    for (int q = 3; q >= 0; q--) {
        const uint t = aw[q];
#pragma unroll
        for (int s = 0; s < 32; s += 4) {
            if (q != 3 || s != 0) z = gcm_mulx4(z);
            z = gcm_xor(z, tab[(t >> s) & 15u]);
        }
    }
    return z;
}

/* a * M with the 256 byte products of M and the 256 reduction words in work-group memory (fast,
 * batches of one key): bytes from x^120 down; z * x^8 brings back the 8 coefficients x^120..x^127
 * (the low byte r of w) as red[r] = sum over the bits of r of R >> i */
DEVICE_FN uint4 gcm_mul_tab8(uint4 a, LOCAL_PTR const uint4 *tab, LOCAL_PTR const uint *red)
{
    uint4 z = MAKE_UINT4(0u, 0u, 0u, 0u);
    uint aw[4];
    aw[0] = a.x; aw[1] = a.y; aw[2] = a.z; aw[3] = a.w;
#pragma unroll
    for (int q = 3; q >= 0; q--) {
        const uint t = aw[q];
#pragma unroll
        for (int s = 0; s < 32; s += 8) {
            if (q != 3 || s != 0)
                z = MAKE_UINT4((z.x >> 8) ^ red[z.w & 255u], (z.y >> 8) | (z.x << 24),
                               (z.z >> 8) | (z.y << 24), (z.w >> 8) | (z.z << 24));
            z = gcm_xor(z, tab[(t >> s) & 255u]);
        }
    }
    return z;
}

#if GCM_GH
/* ---- positional tables ------------------------------------------------------------------------
 * X M = XOR over the byte positions b of X of T_b[byte_b(X)], T_b[v] = (v at position b) M, already
 * reduced: no shifts, no reduction between lookups.  4-bit tables: T_(b,h)[v] for the high (h = 0) and
 * low (h = 1) nibble of byte b, 16 entries of 16 bytes; 8-bit tables (GCM_PT8, bytes 0..7): 256.
 * Layout, in uint4 entries (8 consecutive entries = 128 bytes = the 32 banks of work-group memory,
 * so entry e sits in bank group e mod 8):
 *   8-bit:  T_b[v] at v * 8 + b                                  (b < 8: 2048 entries, 32 KiB)
 *   4-bit:  T_(b,h)[v] at ((b >> 3) * 2 + h) * 128 + v * 8 + (b & 7)   (512 entries, 8 KiB; with
 *           GCM_PT8 only bytes 8..15, at 2048 + h * 128 + v * 8 + (b & 7): 256 entries)
 * so every table of byte b lies in bank group b & 7.  Lane l8 = LID & 7 of each quarter warp (the
 * 8 lanes a 16-byte load serves at once) looks up byte b = s ^ l8 at step s: the 8 lanes read 8
 * different bank groups at every step whatever the data, one pass per quarter warp.  For that the
 * lane first permutes its operand's bytes (gcm_swz: byte s of the result = byte s ^ l8, 4 byte
 * permutes), so that step s extracts the fixed byte s, and adds q[s & 7] = (s & 7) ^ l8 to the
 * table index. */

/* byte selector for gcm_swz: output word 0 (other = 0) or 1 (other = 1) of a word pair */
DEVICE_FN uint gcm_sel(uint l8, uint other)
{
    uint s = 0;
    for (uint k = 0; k < 4; k++)
        s |= ((k ^ (l8 & 3u)) + (((((l8 >> 2) & 1u) ^ other)) << 2)) << (4u * k);
    return s;
}

/* block byte s of the result = block byte s ^ l8 of a (l8 < 8: words 0/1 and 2/3 stay pairs) */
DEVICE_FN uint4 gcm_swz(uint4 a, uint sa, uint sb)
{
    return MAKE_UINT4(BYTE_PERM(a.x, a.y, sa), BYTE_PERM(a.x, a.y, sb), BYTE_PERM(a.z, a.w, sa),
                      BYTE_PERM(a.z, a.w, sb));
}

/* z * x^64: words (0, 0, z.x, z.y) plus the 64 coefficients x^128..x^191 (c = z.z, z.w) times
 * x^128 = 1 + x + x^2 + x^7 (R): c (1 + x + x^2 + x^7) at x^0..x^70, no further reduction */
DEVICE_FN uint4 gcm_mulx64(uint4 z)
{
    const uint c0 = z.z, c1 = z.w;
    return MAKE_UINT4(c0 ^ (c0 >> 1) ^ (c0 >> 2) ^ (c0 >> 7),
                      c1 ^ ((c1 >> 1) | (c0 << 31)) ^ ((c1 >> 2) | (c0 << 30)) ^ ((c1 >> 7) | (c0 << 25)),
                      z.x ^ (c1 << 31) ^ (c1 << 30) ^ (c1 << 25), z.y);
}

/* a * M from M's positional tables at tab (layout above); q[j] = j ^ (LID & 7) */
DEVICE_FN uint4 gcm_mul_pos(uint4 a, LOCAL_PTR const uint4 *tab, uint sa, uint sb, const uint *q)
{
    const uint4 sw = gcm_swz(a, sa, sb);
    uint aw[4];
    aw[0] = sw.x; aw[1] = sw.y; aw[2] = sw.z; aw[3] = sw.w;
    uint4 z = MAKE_UINT4(0u, 0u, 0u, 0u);
#if GCM_PT8H && GCM_MAD
    /* knob mad: q[j] = 16 (j ^ l8) and the byte address of T_s[v] = 128 v + q[s]: one byte
     * permute (the byte to bits 0..7) and one multiply-add per lookup */
    uint4 zb = MAKE_UINT4(0u, 0u, 0u, 0u);
    LOCAL_PTR const uchar *tb = (LOCAL_PTR const uchar *)tab;
#pragma unroll
    for (int s = 0; s < 8; s++) {
        const uint sel = 0x4440u + (uint)(3 - (s & 3));
        const uint va = BYTE_PERM(aw[s >> 2], 0u, sel), vb = BYTE_PERM(aw[2 + (s >> 2)], 0u, sel);
        z = gcm_xor(z, *(LOCAL_PTR const uint4 *)(tb + (va * 128u + q[s])));
        zb = gcm_xor(zb, *(LOCAL_PTR const uint4 *)(tb + (vb * 128u + q[s])));
    }
    z = gcm_xor(z, gcm_mulx64(zb));
#elif GCM_PT8H
    /* bytes s of A and s + 8 of X (B's byte s) share the table of position s, bank group s ^ l8 */
    uint4 zb = MAKE_UINT4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int s = 0; s < 8; s++) {
        const int sh = 24 - 8 * (s & 3);
        const uint va = (aw[s >> 2] >> sh) & 255u, vb = (aw[2 + (s >> 2)] >> sh) & 255u;
        z = gcm_xor(z, tab[(va << 3) + q[s]]);
        zb = gcm_xor(zb, tab[(vb << 3) + q[s]]);
    }
    z = gcm_xor(z, gcm_mulx64(zb));
#elif GCM_PT8
#pragma unroll
    for (int s = 0; s < 8; s++) {
        const uint v = (aw[s >> 2] >> (24 - 8 * (s & 3))) & 255u;
        z = gcm_xor(z, tab[(v << 3) + q[s]]);
    }
#pragma unroll
    for (int s = 8; s < 16; s++) {
        const uint v = (aw[s >> 2] >> (24 - 8 * (s & 3))) & 255u;
        z = gcm_xor(z, tab[2048 + ((v >> 4) << 3) + q[s & 7]]);
        z = gcm_xor(z, tab[2048 + 128 + ((v & 15u) << 3) + q[s & 7]]);
    }
#elif GCM_POS_ROLL
#pragma unroll
    for (int wd = 0; wd < 4; wd++) {
        const uint a = aw[wd];
        const uint base = (uint)(wd >> 1) * 256u;
#pragma unroll 1
        for (uint b = 0; b < 4; b++) {
            const uint v = (a >> (24u - 8u * b)) & 255u;
            const uint g = (((uint)(wd & 1) * 4u + b) ^ q[0]);
            z = gcm_xor(z, tab[base + ((v >> 4) << 3) + g]);
            z = gcm_xor(z, tab[base + 128 + ((v & 15u) << 3) + g]);
        }
    }
#else
#pragma unroll
    for (int s = 0; s < 16; s++) {
        const uint v = (aw[s >> 2] >> (24 - 8 * (s & 3))) & 255u;
        z = gcm_xor(z, tab[(s >> 3) * 256 + ((v >> 4) << 3) + q[s & 7]]);
        z = gcm_xor(z, tab[(s >> 3) * 256 + 128 + ((v & 15u) << 3) + q[s & 7]]);
    }
#endif
    return z;
}

/* the element with byte b (0..15) = val, the others 0 */
DEVICE_FN uint4 gcm_byte_elem(uint b, uint val)
{
    uint w[4] = {0u, 0u, 0u, 0u};
    w[b >> 2] = val << (8u * (3u - (b & 3u)));
    return MAKE_UINT4(w[0], w[1], w[2], w[3]);
}

/* entry i of a 4-bit positional table set (512 entries): the element it multiplies */
DEVICE_FN uint4 gcm_nib_elem(uint i)
{
    const uint h = (i >> 7) & 1u, v = (i >> 3) & 15u, b = (i >> 8) * 8u + (i & 7u);
    return gcm_byte_elem(b, h ? v : v << 4);
}
#endif

/* the message of item g: the i with off[i] <= g < off[i + 1], searched in [lo, m) */
DEVICE_FN uint gcm_find(GLOBAL_RO const ulong *off, uint lo, uint m, ulong g)
{
    uint hi = m;
    while (hi - lo > 1) {
        const uint mid = lo + ((hi - lo) >> 1);
        if (off[mid] <= g) lo = mid; else hi = mid;
    }
    return lo;
}

/* gcm_find with a coarse index: hint[c] is the message holding counter block c << GCM_HINT_SHIFT
 * (the host's np.searchsorted), so block g lies in message hint[c] .. hint[c + 1]: a few steps
 * instead of log2(m) dependent loads per block in a batch of many messages */
#define GCM_HINT_SHIFT 8
DEVICE_FN uint gcm_find_hinted(GLOBAL_RO const ulong *off, GLOBAL_RO const uint *hint, uint lo,
                               uint m, ulong g)
{
    const ulong c = g >> GCM_HINT_SHIFT;
    uint a = hint[c], z = hint[c + 1] + 1u;
    if (a < lo) a = lo;
    if (z > m) z = m;
    return gcm_find(off, a, z, g);
}

/* a block of n bytes (16 or fewer: zero-padded) at byte offset o of p as an element: one 16-byte
 * load when aligned, else the 4 or 5 aligned words that cover it, funnel-shifted.  The host pads
 * every buffer read here by 32 bytes, so the words past the end exist (their bytes are masked);
 * texts whose messages all start on a multiple of 16 bytes only to the end of their last 16-byte
 * block (every load of such a message stays inside its blocks: GCMJob.text_pad). */
DEVICE_FN uint4 gcm_load(GLOBAL_RO const uchar *p, ulong o, ulong n)
{
    if (n >= 16 && (o & 15) == 0) {
        const uint4 v = *(GLOBAL_RO const uint4 *)(p + o);
        return MAKE_UINT4(BSWAP32(v.x), BSWAP32(v.y), BSWAP32(v.z), BSWAP32(v.w));
    }
    GLOBAL_RO const uint *q = (GLOBAL_RO const uint *)(p + (o & ~(ulong)3));
    const uint sh = 8u * (uint)(o & 3);
    uint w[5], v[4];
#pragma unroll
    for (int k = 0; k < 4; k++) w[k] = q[k];
    w[4] = sh ? q[4] : 0u;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        uint x = sh ? (w[k] >> sh) | (w[k + 1] << (32u - sh)) : w[k];
        if (n < 16) {
            const ulong keep = n > 4u * (ulong)k ? n - 4u * (ulong)k : 0;  /* bytes of word k */
            if (keep < 4) x &= (1u << (8u * (uint)keep)) - 1u;
        }
        v[k] = BSWAP32(x);
    }
    return MAKE_UINT4(v[0], v[1], v[2], v[3]);
}

/* ---- per key: H = E(K, 0^128) and H^(2^j), j < np2 ------------------------------------------- */

#if GCM_CT
#define GCM_USE_KEY(ktab, ks, k) cg_bsk = (GLOBAL_RO const uint4 *)((ktab) + (ulong)(k) * (ks));
#else
#define GCM_USE_KEY(ktab, ks, k) aes_load_keys(cg_rk, (ktab) + (ulong)(k) * (ks));
#endif

KERNEL void gcm_hkey(GLOBAL_RO const uint *RESTRICT ktab, uint ks, GLOBAL uint4 *hk, uint hs,
                     uint np2, uint nkeys)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(ktab)
    for (ulong k = GID; k < nkeys; k += GSIZE) {
        uint s[CG_BATCH * 4];
        for (int i = 0; i < CG_BATCH * 4; i++) s[i] = 0u;
        GCM_USE_KEY(ktab, ks, k)
        cg_encrypt_batch(s CG_ENC_ARGS);
        uint4 h = MAKE_UINT4(BSWAP32(s[0]), BSWAP32(s[1]), BSWAP32(s[2]), BSWAP32(s[3]));
        GLOBAL uint4 *o = hk + k * hs;
        for (uint j = 0; j < np2; j++) {
            o[j] = h;
            h = gcm_sqr(h);
        }
    }
}

#if GCM_GH
/* H^n from the H^(2^j) table o (n < 2^np2) */
DEVICE_FN uint4 gcm_hpow_n(GLOBAL const uint4 *o, uint n)
{
    uint4 r = MAKE_UINT4(0x80000000u, 0u, 0u, 0u);   /* 1 */
    for (uint j = 0; (n >> j) != 0; j++)
        if ((n >> j) & 1u) r = gcm_mul_ct(r, o[j]);
    return r;
}
#endif

#if GCM_GH
/* entry i of the positional tables (pos = 1; see above), M = H^W:
 *   fast: GCM_TBP entries, the tables of M;
 *   ct: 128 products x^i M^GCM_GRP, then for t < GCM_GRP - 1 the 512 entries of M^(t + 1). */
DEVICE_FN uint4 gcm_pos_entry(GLOBAL const uint4 *o, uint wlog, uint i)
{
#if GCM_CT
    if (i < 128) {
        uint xw[4] = {0u, 0u, 0u, 0u};
        xw[i >> 5] = 0x80000000u >> (i & 31);
        return gcm_mul_ct(MAKE_UINT4(xw[0], xw[1], xw[2], xw[3]), gcm_hpow_n(o, (uint)GCM_GRP << wlog));
    }
    const uint t = (i - 128) >> 9;
    return gcm_mul_ct(gcm_nib_elem((i - 128) & 511u), gcm_hpow_n(o, (t + 1) << wlog));
#elif GCM_PT8
    const uint4 e = i < 2048 ? gcm_byte_elem(i & 7u, i >> 3) : gcm_nib_elem(i - 2048 + 256);
    return gcm_mul_ct(e, o[wlog]);
#else
    return gcm_mul_ct(gcm_nib_elem(i), o[wlog]);
#endif
}
#endif

/* per (key, e): e < W: H^(e+1); then the GCM_TB multiplication table entries of M = H^W, or with
 * pos the GCM_TBP entries of the positional tables and nf lane factors: entry u W + l is
 * H^(W - l + W R u), lane l's factor in tile u (counted from the end of its message) */
KERNEL void gcm_hpow(GLOBAL uint4 *hk, uint hs, uint np2, uint wlog, uint nkeys, uint pos,
                     uint rlog, uint nf)
{
    const uint w = 1u << wlog;
    const uint per = w + (pos ? GCM_TBP + (nf & ~GCM_TFBIT) : GCM_TB);
    for (ulong g = GID; g < (ulong)nkeys * per; g += GSIZE) {
        const ulong k = g / per;
        const uint e = (uint)(g - k * per);
        GLOBAL uint4 *o = hk + k * hs;
        uint4 r;
        if (e < w) {
            const uint n = e + 1;
            r = MAKE_UINT4(0x80000000u, 0u, 0u, 0u);   /* 1 */
            for (uint j = 0; j <= wlog; j++)
                if ((n >> j) & 1u) r = gcm_mul_ct(r, o[j]);
#if GCM_GH
        } else if (pos && e - w >= GCM_TBP) {
            const uint f = e - w - GCM_TBP, u = f >> wlog, l = f & (w - 1);
            r = (nf & GCM_TFBIT) ? gcm_hpow_n(o, f << (wlog + rlog))       /* tile factor */
                                 : gcm_hpow_n(o, (w - l) + (u << (wlog + rlog)));
        } else if (pos) {
            r = gcm_pos_entry(o, wlog, e - w);
#endif
        } else {
            const uint i = e - w;
#if GCM_CT
            uint xw[4] = {0u, 0u, 0u, 0u};
            xw[i >> 5] = 0x80000000u >> (i & 31);
            r = gcm_mul_ct(MAKE_UINT4(xw[0], xw[1], xw[2], xw[3]), o[wlog]);
#else
            r = gcm_mul_ct(MAKE_UINT4(i << 28, 0u, 0u, 0u), o[wlog]);
#endif
        }
        o[np2 + e] = r;
    }
}

/* ---- per message: the pre-counter block J0 (big-endian words) ------------------------------- */

KERNEL void gcm_j0(GLOBAL_RO const uchar *nonces, uint nlen, GLOBAL_RO const int *key_index,
                   GLOBAL_RO const uint4 *hk, uint hs, GLOBAL uint4 *j0, uint first, uint m)
{
    for (ulong i = first + GID; i < m; i += GSIZE) {
        const ulong o = i * nlen;
        if (nlen == 12) {
            const uint4 v = gcm_load(nonces, o, 12);
            j0[i] = MAKE_UINT4(v.x, v.y, v.z, 1u);
        } else {
            const uint4 h = hk[(ulong)key_index[i] * hs];
            uint4 y = MAKE_UINT4(0u, 0u, 0u, 0u);
            for (uint b = 0; b < nlen; b += 16) {
                y = gcm_xor(y, gcm_load(nonces, o + b, nlen - b < 16 ? nlen - b : 16));
                y = gcm_mul_ct(y, h);
            }
            const ulong bits = (ulong)nlen * 8;
            y = gcm_xor(y, MAKE_UINT4(0u, 0u, (uint)(bits >> 32), (uint)bits));
            j0[i] = gcm_mul_ct(y, h);
        }
    }
}

/* ---- the key stream: counter block i of message m is J0 with its low word + i (inc32); block 0
 *      (J0 itself) gives E(K, J0) for the tag, blocks 1.. the text.  cb_off: counter blocks of the
 *      messages (ceil(len / 16) + 1 each), prefix sums. ----------------------------------------- */

DEVICE_FN void gcm_ctr_out(GLOBAL_RO const uchar *in, GLOBAL uchar *out, GLOBAL_RO const ulong *off,
                           GLOBAL uint4 *ej0, uint msg, ulong i, const uint *s)
{
    if (i == 0) {
        ej0[msg] = MAKE_UINT4(s[0], s[1], s[2], s[3]);
        return;
    }
    const ulong o = off[msg] + 16 * (i - 1);
    const ulong len = off[msg + 1] - o;
    if (len >= 16 && (o & 15) == 0) {
        const uint4 d = *(GLOBAL_RO const uint4 *)(in + o);
        *(GLOBAL uint4 *)(out + o) = MAKE_UINT4(d.x ^ s[0], d.y ^ s[1], d.z ^ s[2], d.w ^ s[3]);
    } else {
        const uint n = len < 16 ? (uint)len : 16u;
        for (uint b = 0; b < n; b++)
            out[o + b] = (uchar)(in[o + b] ^ (uchar)(s[b >> 2] >> (8 * (b & 3))));
    }
}

DEVICE_FN void gcm_counter(GLOBAL_RO const uint4 *j0, uint msg, ulong i, uint *c)
{
    const uint4 j = j0[msg];
    c[0] = BSWAP32(j.x); c[1] = BSWAP32(j.y); c[2] = BSWAP32(j.z); c[3] = BSWAP32(j.w + (uint)i);
}

#if !GCM_CT
KERNEL void gcm_ctr(GLOBAL_RO const uchar *in, GLOBAL uchar *out, GLOBAL_RO const ulong *off,
                    GLOBAL_RO const ulong *cb_off, GLOBAL_RO const uint *cb_hint,
                    GLOBAL_RO const int *key_index,
                    GLOBAL_RO const uint *RESTRICT ktab, uint ks, GLOBAL_RO const uint4 *j0,
                    GLOBAL uint4 *ej0, uint first, uint m, ulong glo, ulong total)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(ktab)
    int cur = -1;
    uint msg = first;
    for (ulong g = glo + GID; g < total; g += GSIZE) {
        msg = gcm_find_hinted(cb_off, cb_hint, msg, m, g);
        const ulong i = g - cb_off[msg];
        const int k = key_index[msg];
        if (k != cur) {
            GCM_USE_KEY(ktab, ks, k)
            cur = k;
        }
        uint s[4];
        gcm_counter(j0, msg, i, s);
        cg_encrypt_batch(s CG_ENC_ARGS);
        gcm_ctr_out(in, out, off, ej0, msg, i, s);
    }
}
#else
/* 32 counter blocks per work-item (g, g + GSIZE, ...), bitsliced under one key at a time: a pass
 * per distinct key among them (one pass when the batch has one key).  The passes depend on which
 * messages share a key, never on key values. */
KERNEL void gcm_ctr(GLOBAL_RO const uchar *in, GLOBAL uchar *out, GLOBAL_RO const ulong *off,
                    GLOBAL_RO const ulong *cb_off, GLOBAL_RO const uint *cb_hint,
                    GLOBAL_RO const int *key_index,
                    GLOBAL_RO const uint *RESTRICT ktab, uint ks, GLOBAL_RO const uint4 *j0,
                    GLOBAL uint4 *ej0, uint first, uint m, ulong glo, ulong total)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(ktab)
    for (ulong base = glo + GID; base < total; base += GSIZE * 32) {
        uint pending = 0;
        for (int k = 0; k < 32; k++)
            if (base + (ulong)k * GSIZE < total) pending |= 1u << k;
        uint lo = first;
        while (pending) {
            int first = 0;
            while (!((pending >> first) & 1u)) first++;
            const ulong gf = base + (ulong)first * GSIZE;
            const uint mf = gcm_find_hinted(cb_off, cb_hint, lo, m, gf);
            const int kq = key_index[mf];
            uint s[128];
            uint msg = mf;
            for (int k = 0; k < 32; k++) {
                const ulong g = base + (ulong)k * GSIZE;
                if (k >= first && g < total) {
                    msg = gcm_find_hinted(cb_off, cb_hint, msg, m, g);
                    gcm_counter(j0, msg, g - cb_off[msg], s + 4 * k);
                } else {
                    s[4 * k] = 0u; s[4 * k + 1] = 0u; s[4 * k + 2] = 0u; s[4 * k + 3] = 0u;
                }
            }
            GCM_USE_KEY(ktab, ks, kq)
            cg_encrypt_batch(s CG_ENC_ARGS);
            msg = mf;
            for (int k = 0; k < 32; k++) {
                const ulong g = base + (ulong)k * GSIZE;
                if ((pending >> k) & 1u) {
                    msg = gcm_find_hinted(cb_off, cb_hint, msg, m, g);
                    if (key_index[msg] == kq) {
                        gcm_ctr_out(in, out, off, ej0, msg, g - cb_off[msg], s + 4 * k);
                        pending &= ~(1u << k);
                    }
                }
            }
            lo = mf;
        }
    }
}
#endif

#if GCM_CTR
/* text-block space (ct ctr = 4, fast ctr = 3): text block x of the batch (x < ntext = total - m)
 * lies in message i with tb(i) <= x < tb(i + 1), tb(i) = cb_off[i] - i; sub-groups of GCM_SG
 * work-items take tiles of consecutive text blocks. */
#define GCM_SG (GCM_LS < 32 ? GCM_LS : 32)

/* the message holding text block x (the last i in [lo, m) with tb(i) <= x); lo: a message at or
 * before it.  The message holding COUNTER block x (the coarse index) has tb <= cb_off <= x, so it
 * is at or before the answer: from there a galloping search */
DEVICE_FN uint gcm_find_text(GLOBAL_RO const ulong *cb_off, GLOBAL_RO const uint *hint, uint lo,
                             uint m, ulong x)
{
    uint a = hint[x >> GCM_HINT_SHIFT];
    if (a < lo) a = lo;
    uint hi = m, step = 1;
    for (;;) {
        const ulong n = (ulong)a + step;
        if (n >= m) break;
        if (cb_off[n] - n > x) { hi = (uint)n; break; }
        a = (uint)n;
        step <<= 1;
    }
    while (hi - a > 1) {
        const uint mid = a + ((hi - a) >> 1);
        if (cb_off[mid] - mid <= x) a = mid; else hi = mid;
    }
    return a;
}

#endif

#if GCM_CT && GCM_CTR
/* AES of the 32 counter blocks s (block k in s[4k..4k+3]) under bitsliced key bsk, less
 * the last round key (returned in kx, for the caller to add with the data).  same = 1 (the 32 blocks
 * are counters of one message: words 0..2 equal, c): bitsliced directly, words 0..2 as masks of
 * the bits of c ^ round key 0 (the same in every block) and word 3 by one 32x32 transpose; else
 * the full transpose and AddRoundKey of cg_encrypt_batch.  Whether the 32 blocks share a message
 * depends on the message lengths only; key words enter through XORs alone. */
DEVICE_FN void gcm_bs_ctr(uint *s, const uint *c, int same, uint *kx, GLOBAL_RO const uint4 *RESTRICT bsk)
{
#pragma unroll 1
    for (int r = 0; r <= AES_ROUNDS; r++) {
        if (r == 0) {
            if (same) {
                const uint4 k0 = bsk[32 * (AES_ROUNDS + 1)];     /* plain round key 0 */
                const uint z[3] = {c[0] ^ k0.x, c[1] ^ k0.y, c[2] ^ k0.z};
#pragma unroll
                for (int w = 0; w < 3; w++) {
#pragma unroll
                    for (int j = 0; j < 32; j++) s[w + 4 * j] = (uint)((int)(z[w] << (31 - j)) >> 31);
                }
#pragma unroll
                for (int k = 0; k < 32; k++) s[3 + 4 * k] ^= k0.w;
                aes_bs_transpose32(s, 3, 4);
            } else {
                aes_bs_transpose(s);
                aes_bs_add_key(s, bsk, 0);
            }
        } else {
            aes_bs_sub_bytes(s);
            if (r < AES_ROUNDS) {
                aes_bs_linear(s, bsk, r, 0, 1, 1);
            } else {
                aes_bs_linear(s, bsk, r, 0, 0, 0);   /* ShiftRows alone: register renaming */
                aes_bs_transpose(s);
            }
        }
    }
    const uint4 kl = bsk[32 * (AES_ROUNDS + 1) + AES_ROUNDS];
    kx[0] = kl.x; kx[1] = kl.y; kx[2] = kl.z; kx[3] = kl.w;
}

/* ctr = 4 (ct, batches of ONE key): the counter pass in TEXT-block space.  Text block x of the batch
 * (x < ntext = total - m: the messages' ceil(len / 16) blocks, concatenated) lies in message i with
 * tb(i) <= x < tb(i + 1), tb(i) = cb_off[i] - i (cb_off counts one J0 block per message).  A
 * work-group takes 32 x LSIZE consecutive text blocks, each sub-group of GCM_SG (32) work-items
 * 32 x GCM_SG of them, its item s the blocks s + k GCM_SG (k < 32: coalesced).  A sub-group's
 * blocks start on a multiple of 32 x GCM_SG = 1024 text blocks: the messages of a batch of 16 KiB
 * (or any multiple of 16 KiB) messages are whole sub-group tiles, so every item's 32 blocks are
 * full aligned blocks of one message (counters and addresses from registers, the counters
 * bitsliced directly), where tiles of COUNTER blocks would straddle messages (1025 counter blocks
 * each: the J0 block shifts every tile; session 11 measured that variant at 0.56x of one
 * message).  The E(K, J0) blocks, one per message, come after the text blocks: 32 messages per
 * item.  Which path an item takes depends on lengths only. */
KERNEL void gcm_ctr_one(GLOBAL_RO const uchar *in, GLOBAL uchar *out, GLOBAL_RO const ulong *off,
                        GLOBAL_RO const ulong *cb_off, GLOBAL_RO const uint *cb_hint,
                        GLOBAL_RO const uint *RESTRICT ktab, GLOBAL_RO const uint4 *j0,
                        GLOBAL uint4 *ej0, uint first, uint m, ulong xlo, ulong ntext,
                        uint jlo, uint jhi)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(ktab)
    /* text blocks [xlo, ntext); E(K, J0) of messages [jlo, jhi) */
    const ulong tile = 32 * (ulong)LSIZE;
    const uint sl = LID & (GCM_SG - 1u);
    const ulong sub = (ulong)(LID / GCM_SG) * (32 * GCM_SG);
    for (ulong t0 = xlo / tile * tile + GROUP_ID * tile; t0 < ntext; t0 += NGROUPS * tile) {
        const ulong x0 = t0 + sub + sl;
        uint s[128];
        const uint msg0 = gcm_find_text(cb_off, cb_hint, 0, m, x0 < ntext ? x0 : ntext - 1);
        const ulong ob = off[msg0], i0 = x0 - (cb_off[msg0] - msg0) + 1;   /* counter block */
        /* the 32 blocks full, aligned text blocks of message msg0 (lengths only: public) */
        const int tfast = x0 >= xlo && x0 + 31 * (ulong)GCM_SG < ntext && (ob & 15) == 0 &&
                          16 * (i0 + 31 * (ulong)GCM_SG) <= off[msg0 + 1] - ob;
        const uint4 jm = j0[msg0];
        uint msg = msg0;
        if (tfast) {
#pragma unroll
            for (int k = 0; k < 32; k++) {
                s[4 * k] = 0u; s[4 * k + 1] = 0u; s[4 * k + 2] = 0u;
                s[4 * k + 3] = BSWAP32(jm.w + (uint)i0 + (uint)(k * GCM_SG));
            }
        } else {
#pragma unroll
            for (int k = 0; k < 32; k++) {
                const ulong x = x0 + (ulong)k * GCM_SG;
                if (x >= xlo && x < ntext) {
                    msg = gcm_find_text(cb_off, cb_hint, msg, m, x);
                    gcm_counter(j0, msg, x - (cb_off[msg] - msg) + 1, s + 4 * k);
                } else {
                    s[4 * k] = 0u; s[4 * k + 1] = 0u; s[4 * k + 2] = 0u; s[4 * k + 3] = 0u;
                }
            }
        }
        uint kx[4];
        {
            const uint c[3] = {BSWAP32(jm.x), BSWAP32(jm.y), BSWAP32(jm.z)};
            gcm_bs_ctr(s, c, tfast, kx, cg_bsk);
        }
        if (tfast) {
            GLOBAL_RO const uint4 *pi = (GLOBAL_RO const uint4 *)(in + ob) + (i0 - 1);
            GLOBAL uint4 *po = (GLOBAL uint4 *)(out + ob) + (i0 - 1);
#pragma unroll
            for (int k0 = 0; k0 < 32; k0 += 8) {
                uint4 d[8];
#pragma unroll
                for (int k = 0; k < 8; k++) d[k] = pi[(k0 + k) * GCM_SG];
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    const uint *sk = s + 4 * (k0 + k);
                    po[(k0 + k) * GCM_SG] = MAKE_UINT4(d[k].x ^ sk[0] ^ kx[0], d[k].y ^ sk[1] ^ kx[1],
                                                       d[k].z ^ sk[2] ^ kx[2], d[k].w ^ sk[3] ^ kx[3]);
                }
            }
            continue;
        }
        msg = msg0;
#pragma unroll
        for (int k = 0; k < 32; k++) {
            const ulong x = x0 + (ulong)k * GCM_SG;
            if (x >= xlo && x < ntext) {
                msg = gcm_find_text(cb_off, cb_hint, msg, m, x);
                const uint *sk = s + 4 * k;
                const uint ks[4] = {sk[0] ^ kx[0], sk[1] ^ kx[1], sk[2] ^ kx[2], sk[3] ^ kx[3]};
                gcm_ctr_out(in, out, off, ej0, msg, x - (cb_off[msg] - msg) + 1, ks);
            }
        }
    }
    /* E(K, J0): messages 32 c .. 32 c + 31 for the chunks c counted from the grid's last item (the
     * items whose last text tile came short) */
    for (ulong c = GSIZE - 1 - GID; jlo + 32 * c < jhi; c += GSIZE) {
        uint s[128];
#pragma unroll
        for (int k = 0; k < 32; k++) {
            const ulong i = jlo + 32 * c + (ulong)k;
            if (i < jhi) {
                gcm_counter(j0, (uint)i, 0, s + 4 * k);
            } else {
                s[4 * k] = 0u; s[4 * k + 1] = 0u; s[4 * k + 2] = 0u; s[4 * k + 3] = 0u;
            }
        }
        uint kx[4];
        const uint c3[3] = {0u, 0u, 0u};
        gcm_bs_ctr(s, c3, 0, kx, cg_bsk);
#pragma unroll
        for (int k = 0; k < 32; k++) {
            const ulong i = jlo + 32 * c + (ulong)k;
            if (i < jhi)
                ej0[i] = MAKE_UINT4(s[4 * k] ^ kx[0], s[4 * k + 1] ^ kx[1], s[4 * k + 2] ^ kx[2],
                                    s[4 * k + 3] ^ kx[3]);
        }
    }
}
#endif

#if !GCM_CT && GCM_CTR
#define GCM_CTR_T 16
/* (The six lines that move msg, tb0, tb1, ob, oe and jm to the next message appear twice below,
 * on purpose: folded into a device function with out-parameters, the 16 KiB batches ran 3-4 %
 * slower on the H100, 1.420-1.434 against 1.460-1.495 GB/s per SM per GHz, alternating.) */
/* ctr = 3 (fast, batches of ONE key): the counter pass in TEXT-block space (as ct ctr = 4), round
 * keys loaded once: a work-group takes GCM_CTR_T x LSIZE consecutive text blocks, each sub-group of
 * GCM_SG (32) work-items GCM_CTR_T x GCM_SG of them (a tile of 512 text blocks, 8 KiB), its item s
 * the blocks s + k GCM_SG (k < GCM_CTR_T: each load of a warp reads 512 contiguous bytes).  Tiles
 * start on multiples of 512 text blocks, so in a batch of messages of 8 KiB (or multiples: 16 KiB)
 * every item's blocks are full aligned blocks of one message and take the register path (counter
 * words 0..2 once, word 3 and the addresses by adds, the data loaded before the AES), where tiles
 * of counter blocks would straddle messages (1025 counter blocks per 16 KiB message).  The current
 * message's text-block range, byte range and J0 stay in registers (a search only when a block
 * lies past it).  The E(K, J0) blocks, one per message, come after the text: one per item. */
KERNEL void gcm_ctr_one(GLOBAL_RO const uchar *in, GLOBAL uchar *out, GLOBAL_RO const ulong *off,
                        GLOBAL_RO const ulong *cb_off, GLOBAL_RO const uint *cb_hint,
                        GLOBAL_RO const uint *RESTRICT ktab, GLOBAL_RO const uint4 *j0,
                        GLOBAL uint4 *ej0, uint first, uint m, ulong xlo, ulong ntext,
                        uint jlo, uint jhi)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(ktab)
    /* text blocks [xlo, ntext); E(K, J0) of messages [jlo, jhi) */
    uint msg = first;
    ulong tb0 = 0, tb1 = 0, ob = 0, oe = 0;   /* text blocks [tb0, tb1) and bytes [ob, oe) of msg */
    uint4 jm = MAKE_UINT4(0u, 0u, 0u, 0u);
    const ulong tile = (ulong)GCM_CTR_T * LSIZE;
    const uint sl = LID & (GCM_SG - 1u);
    const ulong sub = (ulong)(LID / GCM_SG) * (GCM_CTR_T * GCM_SG);
    for (ulong t0 = xlo / tile * tile + GROUP_ID * tile; t0 < ntext; t0 += NGROUPS * tile) {
        const ulong x0 = t0 + sub + sl;
        if (x0 >= ntext) continue;
        if (x0 >= tb1) {
            msg = gcm_find_text(cb_off, cb_hint, msg, m, x0);
            tb0 = cb_off[msg] - msg; tb1 = cb_off[msg + 1] - msg - 1;
            ob = off[msg]; oe = off[msg + 1];
            jm = j0[msg];
        }
        const ulong i0 = x0 - tb0;                      /* text block of the message, from 0 */
        if (x0 >= xlo && x0 + (ulong)(GCM_CTR_T - 1) * GCM_SG < ntext && (ob & 15) == 0 &&
            16 * (i0 + 1 + (ulong)(GCM_CTR_T - 1) * GCM_SG) <= oe - ob) {
            GLOBAL_RO const uint4 *pi = (GLOBAL_RO const uint4 *)(in + ob) + i0;
            GLOBAL uint4 *po = (GLOBAL uint4 *)(out + ob) + i0;
            const uint c0 = BSWAP32(jm.x), c1 = BSWAP32(jm.y), c2 = BSWAP32(jm.z);
            const uint c3 = jm.w + (uint)i0 + 1u;
            for (uint k = 0; k < GCM_CTR_T; k++) {
                const uint4 d = pi[k * GCM_SG];
                uint s[4];
                s[0] = c0; s[1] = c1; s[2] = c2; s[3] = BSWAP32(c3 + k * GCM_SG);
                cg_encrypt_batch(s CG_ENC_ARGS);
                po[k * GCM_SG] = MAKE_UINT4(d.x ^ s[0], d.y ^ s[1], d.z ^ s[2], d.w ^ s[3]);
            }
            continue;
        }
        for (uint k = 0; k < GCM_CTR_T; k++) {
            const ulong x = x0 + (ulong)k * GCM_SG;
            if (x >= ntext) break;
            if (x < xlo) continue;                      /* (the slice before) */
            if (x >= tb1) {
                msg = gcm_find_text(cb_off, cb_hint, msg, m, x);
                tb0 = cb_off[msg] - msg; tb1 = cb_off[msg + 1] - msg - 1;
                ob = off[msg]; oe = off[msg + 1];
                jm = j0[msg];
            }
            const ulong i = x - tb0 + 1;                /* counter block */
            uint s[4];
            s[0] = BSWAP32(jm.x); s[1] = BSWAP32(jm.y); s[2] = BSWAP32(jm.z); s[3] = BSWAP32(jm.w + (uint)i);
            cg_encrypt_batch(s CG_ENC_ARGS);
            const ulong o = ob + 16 * (i - 1);
            if (oe - o >= 16 && (o & 15) == 0) {
                const uint4 d = *(GLOBAL_RO const uint4 *)(in + o);
                *(GLOBAL uint4 *)(out + o) = MAKE_UINT4(d.x ^ s[0], d.y ^ s[1], d.z ^ s[2], d.w ^ s[3]);
            } else {
                gcm_ctr_out(in, out, off, ej0, msg, i, s);
            }
        }
    }
    /* E(K, J0) of messages [jlo, jhi), counted from the grid's last item */
    for (ulong i = jlo + GSIZE - 1 - GID; i < jhi; i += GSIZE) {
        uint s[4];
        gcm_counter(j0, (uint)i, 0, s);
        cg_encrypt_batch(s CG_ENC_ARGS);
        ej0[i] = MAKE_UINT4(s[0], s[1], s[2], s[3]);
    }
}
#endif

/* ---- GHASH: tiles of W x R stream blocks (see the top of the file) --------------------------- */

/* stream block j (0-based) of a message: AAD blocks, text blocks, the length block */
DEVICE_FN uint4 gcm_stream(GLOBAL_RO const uchar *aad, GLOBAL_RO const uchar *txt, ulong ao,
                           ulong alen, ulong na, ulong to, ulong tlen, ulong nc, ulong j)
{
    if (j < na) {
        const ulong b = 16 * j;
        return gcm_load(aad, ao + b, alen - b);
    }
    if (j < na + nc) {
        const ulong b = 16 * (j - na);
        return gcm_load(txt, to + b, tlen - b);
    }
    const ulong ab = alen * 8, tb = tlen * 8;
    return MAKE_UINT4((uint)(ab >> 32), (uint)ab, (uint)(tb >> 32), (uint)tb);
}

KERNEL void gcm_ghash(GLOBAL_RO const uchar *aad, GLOBAL_RO const uchar *txt,
                      GLOBAL_RO const ulong *aad_off, GLOBAL_RO const ulong *off,
                      GLOBAL_RO const ulong *tile_off, GLOBAL_RO const int *key_index,
                      GLOBAL_RO const uint4 *hk, uint hs, uint np2, uint wlog, uint rlog,
                      GLOBAL uint4 *tile_sum, uint first, uint m, ulong tlo, ulong ntiles,
                      uint one_key)
{
    LOCAL_VAR uint4 gcm_red[GCM_LS];
#if !GCM_CT
    LOCAL_VAR uint4 gcm_tab[(GCM_LS / GCM_MIN_W) * 16];
    /* one key in the batch: 8-bit tables of M, built once per work-group from its 4-bit table
     * (p_b M = p_hi M + x^4 p_lo M) */
    LOCAL_VAR uint4 gcm_tab8[256];
    LOCAL_VAR uint gcm_red8[256];
    if (one_key) {
        const uint wn = 1u << wlog;
        GLOBAL_RO const uint4 *t4 = hk + np2 + wn;
        for (uint e = LID; e < 256; e += LSIZE) {
            gcm_tab8[e] = gcm_xor(t4[e >> 4], gcm_mulx4(t4[e & 15u]));
            uint r = 0;
            for (uint i = 0; i < 8; i++)
                if ((e >> (7 - i)) & 1u) r ^= 0xe1000000u >> i;
            gcm_red8[e] = r;
        }
    }
    BARRIER();   /* unconditional: barriers under a condition trip some PoCL versions */
#endif
    const uint w = 1u << wlog;
    const uint run = 1u << rlog;
    const uint tpg = GCM_LS / w;                 /* tiles per work-group */
    const uint l = LID & (w - 1);
    const uint slot = LID >> wlog;
    /* no value is carried from one step of this loop to the next but its counter: PoCL (the
     * version on an H100 host) aborts building a loop with barriers whose other loop-carried
     * values it must save and restore ("Cannot add context restore for a PHI node") */
    for (ulong t0 = tlo + GROUP_ID * tpg; t0 < ntiles; t0 += NGROUPS * tpg) {
        const ulong t = t0 + slot;
        const int live = t < ntiles;
        ulong u = 0;
        int key = 0;
        uint msg = 0;
        if (live) {
            msg = gcm_find(tile_off, first, m, t);
            u = tile_off[msg + 1] - 1 - t;
            key = key_index[msg];
        }
        GLOBAL_RO const uint4 *h = hk + (ulong)key * hs;
#if !GCM_CT
        if (!one_key)
            for (uint e = l; e < 16; e += w) gcm_tab[slot * 16 + e] = h[np2 + w + e];
        BARRIER();
        LOCAL_PTR const uint4 *tab = gcm_tab + slot * 16;
#else
        GLOBAL_RO const uint4 *xm = h + np2 + w;
#endif
        uint4 v = MAKE_UINT4(0u, 0u, 0u, 0u);
        if (live) {
            const ulong ao = aad_off[msg], alen = aad_off[msg + 1] - ao;
            const ulong to = off[msg], tlen = off[msg + 1] - to;
            const ulong na = (alen + 15) / 16, nc = (tlen + 15) / 16, nb = na + nc + 1;
            /* block 0 of the tile is stream block nb - W R (u + 1): negative in the first tile */
            const long start = (long)nb - (long)(((ulong)w << rlog) * (u + 1));
            uint4 y = MAKE_UINT4(0u, 0u, 0u, 0u);
            for (uint k = 0; k < run; k++) {
                const long j = start + (long)l + (long)k * (long)w;
                if (j >= 0) y = gcm_xor(y, gcm_stream(aad, txt, ao, alen, na, to, tlen, nc, (ulong)j));
                if (k + 1 < run) {
#if GCM_CT
                    y = gcm_mul_xtab(y, xm);
#else
                    y = one_key ? gcm_mul_tab8(y, gcm_tab8, gcm_red8) : gcm_mul_tab(y, tab);
#endif
                }
            }
            v = gcm_mul_ct(y, h[np2 + (w - 1 - l)]);       /* times H^(W - l) */
        }
        gcm_red[LID] = v;
        BARRIER();
        for (uint s = w >> 1; s > 0; s >>= 1) {
            if (l < s) gcm_red[LID] = gcm_xor(gcm_red[LID], gcm_red[LID + s]);
            BARRIER();
        }
        if (live && l == 0) {
            uint4 r = gcm_red[LID];
            /* times H^(W R u) = product of H^(2^(j + wlog + rlog)) over the bits j of u */
            for (uint j = 0; (u >> j) != 0; j++)
                if ((u >> j) & 1u) r = gcm_mul_ct(r, h[j + wlog + rlog]);
            tile_sum[t] = r;
        }
        BARRIER();
    }
}

#if GCM_GH
/* GHASH with the positional tables (pos = 1 in gcm_hpow), for batches of ONE key (key 0); the tiles,
 * lanes and their reduction are those of gcm_ghash.  The tables are copied once per work-group into
 * work-group memory (GCM_PTAB entries).
 *   fast: lane Horner y = (y ^ X) M with gcm_mul_pos: the table indices are bytes of the secret
 *     accumulator (not constant time, like every fast table);
 *   ct: Horner re-associated over groups of G = GCM_GRP of the lane's blocks:
 *     Z = XOR_(j < G) X_j M^(G - 1 - j) (gcm_mul_pos with the tables of M^(G-1-j), indexed by the
 *     bytes of the stream blocks X_j only: AAD, ciphertext, lengths, all public), then
 *     y = y M^G ^ Z with gcm_mul_xtab (bit-serial with masks over the 128 products x^i M^G,
 *     indexed by the loop counter).  The lane's first group is padded in front with absent blocks
 *     (run mod G of them present), so y = sum_k X_k M^(R - 1 - k) as in gcm_ghash. */
KERNEL void gcm_ghash_pos(GLOBAL_RO const uchar *aad, GLOBAL_RO const uchar *txt,
                          GLOBAL_RO const ulong *aad_off, GLOBAL_RO const ulong *off,
                          GLOBAL_RO const ulong *tile_off, GLOBAL_RO const uint4 *hk, uint np2,
                          uint wlog, uint rlog, GLOBAL uint4 *tile_sum, uint first, uint m,
                          ulong tlo, ulong ntiles, uint nf)
{
    LOCAL_VAR uint4 gcm_pred[GCM_LS];
    LOCAL_VAR uint4 gcm_ptab[GCM_PTAB];
    const uint w = 1u << wlog;
    {
        GLOBAL_RO const uint4 *src = hk + np2 + w + (GCM_CT ? 128 : 0);
        for (uint e = LID; e < GCM_PTAB; e += LSIZE) gcm_ptab[e] = src[e];
    }
    BARRIER();
    const uint l8 = LID & 7u;
    const uint sa = gcm_sel(l8, 0u), sb = gcm_sel(l8, 1u);
    uint q[8];
#pragma unroll
#if GCM_PT8H && GCM_MAD
    for (uint j = 0; j < 8; j++) q[j] = (j ^ l8) << 4;
#else
    for (uint j = 0; j < 8; j++) q[j] = j ^ l8;
#endif
    const uint tpg = GCM_LS / w;
    const uint l = LID & (w - 1);
    const uint slot = LID >> wlog;
    for (ulong t0 = tlo + GROUP_ID * tpg; t0 < ntiles; t0 += NGROUPS * tpg) {
        const ulong t = t0 + slot;
        const int live = t < ntiles;
        ulong u = 0;
        uint msg = 0;
        if (live) {
            msg = gcm_find(tile_off, first, m, t);
            u = tile_off[msg + 1] - 1 - t;
        }
        uint4 v = MAKE_UINT4(0u, 0u, 0u, 0u);
        if (live) {
            const ulong ao = aad_off[msg], alen = aad_off[msg + 1] - ao;
            const ulong to = off[msg], tlen = off[msg + 1] - to;
            const ulong na = (alen + 15) / 16, nc = (tlen + 15) / 16, nb = na + nc + 1;
            long start = (long)nb - (long)(((ulong)w << rlog) * (u + 1));
            uint run = 1u << rlog;
#if GCM_HD
            /* knob hd: the message's first tile (u = its tile count - 1) takes every block before
             * its last u tiles, W R to 2 W R - 1 of them (fewer in a message of one tile): the
             * head's nb mod W R blocks no longer get a tile (and a warp slot) of their own */
            if (t == tile_off[msg]) {
                const ulong len = nb - ((ulong)w << rlog) * u;
                run = (uint)((len + w - 1) >> wlog);
                start = (long)len - (long)((ulong)run << wlog);
            }
#endif
            uint4 y = MAKE_UINT4(0u, 0u, 0u, 0u);
#if GCM_CT
            GLOBAL_RO const uint4 *xm = hk + np2 + w;      /* x^i M^G */
            const uint pad = (GCM_GRP - run % GCM_GRP) % GCM_GRP;
            const uint ng = (run + pad) / GCM_GRP;
#if GCM_PF
            const ulong nfull = tlen >> 4;                   /* full text blocks */
            const int al = (to & 15) == 0;
            GLOBAL_RO const uint4 *tx = (GLOBAL_RO const uint4 *)(txt + (al ? to : 0));
#endif
            for (uint gi = 0; gi < ng; gi++) {
                uint4 z = MAKE_UINT4(0u, 0u, 0u, 0u);
#if GCM_PF
                /* the group's G blocks all full aligned text blocks (lengths, offsets: public):
                 * their G loads first, then the lookups */
                const long kf = (long)(gi * GCM_GRP) - (long)pad;
                const long jf = start + (long)l + kf * (long)w;
                if (al && kf >= 0 && jf >= (long)na && jf + (long)(GCM_GRP - 1) * (long)w < (long)(na + nfull)) {
                    uint4 xs[GCM_GRP];
#pragma unroll
                    for (int jj = 0; jj < GCM_GRP; jj++) xs[jj] = tx[(ulong)(jf - (long)na) + (ulong)jj * w];
#pragma unroll
                    for (int jj = 0; jj < GCM_GRP; jj++) {
                        const uint4 x = MAKE_UINT4(BSWAP32(xs[jj].x), BSWAP32(xs[jj].y), BSWAP32(xs[jj].z),
                                                   BSWAP32(xs[jj].w));
                        if (jj < GCM_GRP - 1)
                            z = gcm_xor(z, gcm_mul_pos(x, gcm_ptab + (GCM_GRP - 2 - jj) * 512, sa, sb, q));
                        else
                            z = gcm_xor(z, x);
                    }
                } else
#endif
#pragma unroll 1
                for (int jj = 0; jj < GCM_GRP; jj++) {
                    const long k = (long)(gi * GCM_GRP + jj) - (long)pad;
                    const long j = start + (long)l + k * (long)w;
                    if (k >= 0 && j >= 0) {
                        const uint4 x = gcm_stream(aad, txt, ao, alen, na, to, tlen, nc, (ulong)j);
                        if (jj < GCM_GRP - 1)
                            z = gcm_xor(z, gcm_mul_pos(x, gcm_ptab + (GCM_GRP - 2 - jj) * 512, sa, sb, q));
                        else
                            z = gcm_xor(z, x);
                    }
                }
                /* y is still 0 (no block of the lane before this group: public) -> no multiply */
                const long kp = (long)(gi * GCM_GRP) - (long)pad - 1;
                if (kp >= 0 && start + (long)l + kp * (long)w >= 0) y = gcm_mul_xtab(y, xm);
                y = gcm_xor(y, z);
            }
#elif GCM_PF
            /* chunks of GCM_PFN steps: where all GCM_PFN blocks are full aligned text blocks, their
             * loads first (straight addresses, no per-block stream branches), then the Horner steps */
            const ulong nfull = tlen >> 4;
            const int al = (to & 15) == 0;
            GLOBAL_RO const uint4 *tx = (GLOBAL_RO const uint4 *)(txt + (al ? to : 0));
            for (uint k = 0; k < run; k += GCM_PFN) {
                const long jf = start + (long)l + (long)k * (long)w;
                const int fastc = al && k + GCM_PFN <= run && jf >= (long)na &&
                                  jf + (long)(GCM_PFN - 1) * (long)w < (long)(na + nfull);
                uint4 xs[GCM_PFN];
                if (fastc) {
#pragma unroll
                    for (int c = 0; c < GCM_PFN; c++) xs[c] = tx[(ulong)(jf - (long)na) + (ulong)c * w];
                }
#pragma unroll
                for (int c = 0; c < GCM_PFN; c++) {
                    const uint kk = k + (uint)c;
                    const long j = jf + (long)c * (long)w;
                    if (kk < run && j >= 0) {
                        const uint4 x = fastc ? MAKE_UINT4(BSWAP32(xs[c].x), BSWAP32(xs[c].y), BSWAP32(xs[c].z),
                                                           BSWAP32(xs[c].w))
                                              : gcm_stream(aad, txt, ao, alen, na, to, tlen, nc, (ulong)j);
                        y = gcm_xor(y, x);
                        if (kk + 1 < run) y = gcm_mul_pos(y, gcm_ptab, sa, sb, q);
                    }
                }
            }
#else
            for (uint k = 0; k < run; k++) {
                const long j = start + (long)l + (long)k * (long)w;
                /* j < 0: no block yet, y = 0 */
                if (j >= 0) {
                    y = gcm_xor(y, gcm_stream(aad, txt, ao, alen, na, to, tlen, nc, (ulong)j));
                    if (k + 1 < run) y = gcm_mul_pos(y, gcm_ptab, sa, sb, q);
                }
            }
#endif
            /* times H^(W - l), or with the lane factors H^(W - l + W R u) */
            v = gcm_mul_ct(y, nf && !(nf & GCM_TFBIT) ? hk[np2 + w + GCM_TBP + ((uint)u << wlog) + l]
                                                       : hk[np2 + (w - 1 - l)]);
        }
        gcm_pred[LID] = v;
        BARRIER();
        for (uint s = w >> 1; s > 0; s >>= 1) {
            if (l < s) gcm_pred[LID] = gcm_xor(gcm_pred[LID], gcm_pred[LID + s]);
            BARRIER();
        }
        if (live && l == 0) {
            uint4 r = gcm_pred[LID];
            if (nf & GCM_TFBIT) {
                if (u) r = gcm_mul_ct(r, hk[np2 + w + GCM_TBP + (uint)u]);   /* H^(W R u) */
            } else if (!nf) {
                for (uint j = 0; (u >> j) != 0; j++)
                    if ((u >> j) & 1u) r = gcm_mul_ct(r, hk[j + wlog + rlog]);
            }
            tile_sum[t] = r;
        }
        BARRIER();
    }
}
#endif

/* ---- tags: XOR of a message's tile sums (P = 2^plog lanes per message) plus E(K, J0) -------- */

KERNEL void gcm_tag(GLOBAL_RO const uint4 *tile_sum, GLOBAL_RO const ulong *tile_off,
                    GLOBAL_RO const uint4 *ej0, GLOBAL uint4 *tags, uint first, uint m, uint plog)
{
    LOCAL_VAR uint4 gcm_acc[GCM_LS];
    const uint p = 1u << plog;
    const uint mpg = GCM_LS / p;
    const uint l = LID & (p - 1);
    for (ulong m0 = first + GROUP_ID * mpg; m0 < m; m0 += NGROUPS * mpg) {
        const ulong i = m0 + (LID >> plog);
        uint4 a = MAKE_UINT4(0u, 0u, 0u, 0u);
        if (i < m)
            for (ulong t = tile_off[i] + l; t < tile_off[i + 1]; t += p) a = gcm_xor(a, tile_sum[t]);
        gcm_acc[LID] = a;
        BARRIER();
        for (uint s = p >> 1; s > 0; s >>= 1) {
            if (l < s) gcm_acc[LID] = gcm_xor(gcm_acc[LID], gcm_acc[LID + s]);
            BARRIER();
        }
        if (i < m && l == 0) {
            const uint4 g = gcm_acc[LID], e = ej0[i];
            tags[i] = MAKE_UINT4(BSWAP32(g.x) ^ e.x, BSWAP32(g.y) ^ e.y, BSWAP32(g.z) ^ e.z,
                                 BSWAP32(g.w) ^ e.w);
        }
        BARRIER();
    }
}
