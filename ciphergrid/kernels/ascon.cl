/* ascon.cl - Ascon-AEAD128 (NIST SP 800-232, August 2025): one message per work-item, texts read
 * directly in steps of whole sectors (default) or staged through work-group memory (knob).
 *
 * The state is five 64-bit lanes (ulong): the compiler splits them into 32-bit register pairs,
 * and a rotation by a constant becomes two funnel shifts (NVIDIA SHF, AMD alignbit), as many
 * instructions as the bit-interleaved representation's two 32-bit rotations, without the
 * interleaving and de-interleaving of every 16-byte block of text.  Lanes are little-endian
 * (SP 800-232 §2.1): on the little-endian devices every GPU is, a 32-bit load is the low or high
 * half of a lane as it stands.
 *
 * Batch layout (the host's Batch, uploaded as it is): text of message i at src bytes
 * [off[i], off[i+1]) (any alignment), the output at the same bytes of dst, the key
 * keys[key_index[i]] (16 bytes), the nonce nonces[i] (16 bytes), the AAD at aad bytes
 * [aad_off[i], aad_off[i+1]), the tag into tags[i] (16 bytes).  The src buffer holds at least
 * 3 bytes after the last message (whole 32-bit words are loaded).
 *
 * A work-group of ASCON_WG work-items takes ASCON_WG consecutive messages.  Step j: the group
 * loads bytes [j*T, (j+1)*T) of every message (T = ASCON_TILE) into its tile, row r for message
 * r, consecutive work-items loading consecutive 32-bit words of a row (coalesced runs of T bytes
 * instead of one 16-byte block per message 16 KiB apart); each work-item absorbs its row into
 * its state and writes the output text over the row; the group stores the rows back (whole
 * words inside a message, single bytes at its two ends: the neighbours' bytes are never
 * touched).  Rows keep the message's alignment (a message at byte offset o starts at byte o % 4
 * of its row), so a row is T / 4 + 1 words.  A group runs as many steps as its longest message
 * needs; the AAD (usually short) is read by each work-item directly.
 *
 * Constant-time: no table, no branch or address that depends on the key, the state or the text
 * (lengths and offsets are public).
 *
 * Each step's rows (first word, end byte) are written by their work-items one step ahead, in
 * two slots, so a step costs three barriers and the copy loops no division.
 *
 * Knobs: ASCON_STAGE 1: the staging above; 0 (the driver's default): direct, each work-item
 * loads and stores its own message, in steps of ASCON_AHEAD (1, 2 or 4) 16-byte blocks for a
 * message at a 16-byte offset: a step's loads are issued together once the previous step's last
 * block is absorbed (they fly during its permutation) and its outputs are stored together, so
 * a thread reads and writes whole 32-byte sectors (from 2) and no L1/L2 line has to survive
 * between two of its accesses; messages at other offsets go word by word, one block ahead.
 * No work-group memory, no barrier.  On an H100 (2026-11-24, GB/s per SM per GHz): 65536 x
 * 16 KiB staged 1.02, direct ahead 1/2/4 1.63/1.93/1.97; 262144 x 4 KiB staged 1.35, direct
 * 0.97/1.10/2.01 (more resident streams than the caches keep partial sectors of, until whole
 * sectors are moved); 1 M x 256 B staged 1.16, direct 1.56/1.53/1.47.  The fast loop is ~466
 * instructions per block (8 rounds of ~36 LOP3 + 20 SHF), ALU-bound.
 * ASCON_WG (messages per work-group = work-group size), ASCON_TILE (staged: bytes of a message
 * per step, a multiple of 16): work-group memory ASCON_WG * (ASCON_TILE / 4 + 1) * 4 bytes plus
 * 28 bytes per message.
 */

#ifndef ASCON_WG
#define ASCON_WG 64
#endif
#ifndef ASCON_TILE
#define ASCON_TILE 128
#endif
#ifndef ASCON_STAGE
#define ASCON_STAGE 1
#endif
#ifndef ASCON_AHEAD
#define ASCON_AHEAD 1
#endif
#if ASCON_AHEAD != 1 && ASCON_AHEAD != 2 && ASCON_AHEAD != 4
#error ASCON_AHEAD must be 1, 2 or 4
#endif
#if ASCON_TILE % 16 != 0
#error ASCON_TILE must be a multiple of 16
#endif
#define ASCON_ROW (ASCON_TILE / 4 + 1)

#define ASCON_IV ((((ulong)0x00001000u) << 32) | (ulong)0x808C0001u)
#define ASCON_DSEP (((ulong)1) << 63)

#define ASCON_ROR(x, n) (((x) >> (n)) | ((x) << (64 - (n))))

/* one round of Ascon-p: constant, bitsliced S-box (no table), linear layer */
#define ASCON_ROUND(c)                                                           \
    do {                                                                         \
        x2 ^= (ulong)(c);                                                        \
        x0 ^= x4; x4 ^= x3; x2 ^= x1;                                            \
        t0 = ~x0 & x1; t1 = ~x1 & x2; t2 = ~x2 & x3; t3 = ~x3 & x4; t4 = ~x4 & x0; \
        x0 ^= t1; x1 ^= t2; x2 ^= t3; x3 ^= t4; x4 ^= t0;                        \
        x1 ^= x0; x0 ^= x4; x3 ^= x2; x2 = ~x2;                                  \
        x0 ^= ASCON_ROR(x0, 19) ^ ASCON_ROR(x0, 28);                             \
        x1 ^= ASCON_ROR(x1, 61) ^ ASCON_ROR(x1, 39);                             \
        x2 ^= ASCON_ROR(x2, 1) ^ ASCON_ROR(x2, 6);                               \
        x3 ^= ASCON_ROR(x3, 10) ^ ASCON_ROR(x3, 17);                             \
        x4 ^= ASCON_ROR(x4, 7) ^ ASCON_ROR(x4, 41);                              \
    } while (0)

#define ASCON_P8()                                                               \
    do {                                                                         \
        ASCON_ROUND(0xb4); ASCON_ROUND(0xa5); ASCON_ROUND(0x96); ASCON_ROUND(0x87); \
        ASCON_ROUND(0x78); ASCON_ROUND(0x69); ASCON_ROUND(0x5a); ASCON_ROUND(0x4b); \
    } while (0)

#define ASCON_P12()                                                              \
    do {                                                                         \
        ASCON_ROUND(0xf0); ASCON_ROUND(0xe1); ASCON_ROUND(0xd2); ASCON_ROUND(0xc3); \
        ASCON_P8();                                                              \
    } while (0)

/* up to 8 bytes at p, little-endian (the AAD: any alignment) */
DEVICE_FN ulong ascon_load(GLOBAL_RO const uchar *p, uint n)
{
    ulong v = 0;
    for (uint k = 0; k < n; k++)
        v |= (ulong)p[k] << (8 * k);
    return v;
}

/* the 32 bits starting s bits into the 64-bit value hi:lo (s < 32) */
DEVICE_FN uint ascon_fs(uint lo, uint hi, uint s)
{
    return (uint)(((((ulong)hi) << 32) | (ulong)lo) >> s);
}

/* the mask of the first n bytes (n < 8) of a lane */
DEVICE_FN ulong ascon_bytes_mask(uint n)
{
    return (((ulong)1) << (8 * n)) - 1;
}

/* one 16-byte block of text (m0, m1) through the state, its output text into (c0, c1) */
#define ASCON_BLOCK(m0, m1, c0, c1)                                              \
    do {                                                                         \
        if (decrypt) {                                                           \
            c0 = x0 ^ (m0); c1 = x1 ^ (m1);                                      \
            x0 = (m0); x1 = (m1);                                                \
        } else {                                                                 \
            x0 ^= (m0); x1 ^= (m1);                                              \
            c0 = x0; c1 = x1;                                                    \
        }                                                                        \
    } while (0)

/* the last block: its l = 0..15 bytes in (m0, m1) (bytes beyond them ignored), padded; the
 * output's l bytes into (c0, c1) (the rest zero) */
#define ASCON_LAST(m0, m1, l, c0, c1)                                            \
    do {                                                                         \
        const ulong lm0 = (l) >= 8 ? ~(ulong)0 : ascon_bytes_mask(l);            \
        const ulong lm1 = (l) > 8 ? ascon_bytes_mask((l) - 8) : 0;               \
        const ulong n0 = (m0) & lm0, n1 = (m1) & lm1;                            \
        if (decrypt) {                                                           \
            c0 = (x0 ^ n0) & lm0; c1 = (x1 ^ n1) & lm1;                          \
            x0 = (x0 & ~lm0) | n0; x1 = (x1 & ~lm1) | n1;                        \
        } else {                                                                 \
            x0 ^= n0; x1 ^= n1;                                                  \
            c0 = x0 & lm0; c1 = x1 & lm1;                                        \
        }                                                                        \
        if ((l) < 8)                                                             \
            x0 ^= ((ulong)1) << (8 * (l));                                       \
        else                                                                     \
            x1 ^= ((ulong)1) << (8 * ((l) - 8));                                 \
    } while (0)

/* a block's 16 bytes starting sh bits into the words w0..w4, as two lanes */
#define ASCON_GATHER(w0, w1, w2, w3, w4, sh, m0, m1)                             \
    do {                                                                         \
        m0 = (ulong)ascon_fs(w0, w1, sh) | ((ulong)ascon_fs(w1, w2, sh) << 32);  \
        m1 = (ulong)ascon_fs(w2, w3, sh) | ((ulong)ascon_fs(w3, w4, sh) << 32);  \
    } while (0)

DEVICE_FN uint ascon_byte(ulong c0, ulong c1, uint k)
{
    return (uint)((k < 8 ? c0 >> (8 * k) : c1 >> (8 * (k - 8))) & 0xffu);
}

KERNEL void ascon_aead128(GLOBAL_RO const uint *src, GLOBAL uint *dst,
                          GLOBAL_RO const ulong *off, GLOBAL_RO const uint *keys,
                          GLOBAL_RO const int *key_index, GLOBAL_RO const uint *nonces,
                          GLOBAL_RO const uchar *aad, GLOBAL_RO const ulong *aad_off,
                          GLOBAL uint *tags, ulong first, ulong m, uint decrypt)
{
    const uint lid = LID;
    const ulong i = first + GROUP_ID * ASCON_WG + lid;   /* messages [first, m): a slice */
    const int live = i < m;
    const ulong msg = live ? i : 0;   /* a work-item past the batch computes message 0, unstored */
    const ulong o = off[msg];
    const ulong len = live ? off[msg + 1] - o : 0;
    const uint sh = 8u * (uint)(o & 3);         /* bit offset of the message in its first word */
    GLOBAL uchar *dst8 = (GLOBAL uchar *)dst;

    ulong x0, x1, x2, x3, x4, t0, t1, t2, t3, t4;

    /* initialization */
    const uint kq = 4u * (uint)key_index[msg];
    const ulong k0 = (ulong)keys[kq] | ((ulong)keys[kq + 1] << 32);
    const ulong k1 = (ulong)keys[kq + 2] | ((ulong)keys[kq + 3] << 32);
    x0 = ASCON_IV;
    x1 = k0;
    x2 = k1;
    x3 = (ulong)nonces[4 * msg] | ((ulong)nonces[4 * msg + 1] << 32);
    x4 = (ulong)nonces[4 * msg + 2] | ((ulong)nonces[4 * msg + 3] << 32);
    ASCON_P12();
    x3 ^= k0;
    x4 ^= k1;

    /* associated data: 16-byte blocks, the last padded, only when there is any */
    {
        GLOBAL_RO const uchar *pa = aad + aad_off[msg];
        ulong alen = live ? aad_off[msg + 1] - aad_off[msg] : 0;
        if (alen) {
            for (; alen >= 16; alen -= 16, pa += 16) {
                x0 ^= ascon_load(pa, 8);
                x1 ^= ascon_load(pa + 8, 8);
                ASCON_P8();
            }
            const uint n = (uint)alen;
            if (n < 8) {
                x0 ^= ascon_load(pa, n) ^ (((ulong)1) << (8 * n));
            } else {
                x0 ^= ascon_load(pa, 8);
                x1 ^= ascon_load(pa + 8, n - 8) ^ (((ulong)1) << (8 * (n - 8)));
            }
            ASCON_P8();
        }
    }
    x4 ^= ASCON_DSEP;

#if ASCON_STAGE
    LOCAL_VAR uint tile[ASCON_WG * ASCON_ROW];
    LOCAL_VAR ulong s_len[ASCON_WG];
    LOCAL_VAR uint s_lo[ASCON_WG];             /* a row's first byte (the message's o % 4) */
    LOCAL_VAR ulong s_base[2][ASCON_WG];       /* a step's rows: word 0 in src/dst */
    LOCAL_VAR uint s_hi[2][ASCON_WG];          /* ... and the end of their bytes (0: none) */

    s_len[lid] = len;
    s_lo[lid] = (uint)(o & 3);
    s_base[0][lid] = o >> 2;
    s_hi[0][lid] = len ? (uint)(o & 3) + (uint)(len < ASCON_TILE ? len : ASCON_TILE) : 0;
    BARRIER();
    /* steps of the group: the most any of its messages needs (an empty message needs one) */
    ulong steps = 1;
    for (uint r = 0; r < ASCON_WG; r++) {
        const ulong st = (s_len[r] + ASCON_TILE - 1) / ASCON_TILE;
        steps = st > steps ? st : steps;
    }
    const ulong mine = len ? (len + ASCON_TILE - 1) / ASCON_TILE : 1;
    LOCAL_PTR uint *row = tile + lid * ASCON_ROW;
    const uint r0 = lid / ASCON_ROW, c0_ = lid - r0 * ASCON_ROW;

    for (ulong j = 0; j < steps; j++) {
        const ulong pos = j * ASCON_TILE;
        const uint par = (uint)(j & 1);
        /* stage bytes [pos, pos + T) of every message of the group: word q of the tile is
         * word c of row r, q = r * ROW + c, consecutive work-items on consecutive words */
        {
            uint r = r0, c = c0_;
            for (uint q = lid; q < ASCON_WG * ASCON_ROW; q += ASCON_WG) {
                if (4 * c < s_hi[par][r])
                    tile[q] = src[s_base[par][r] + c];
                c += ASCON_WG % ASCON_ROW;
                r += ASCON_WG / ASCON_ROW;
                if (c >= ASCON_ROW) {
                    c -= ASCON_ROW;
                    r++;
                }
            }
        }
        BARRIER();

        /* the rows of the next step (read after the next barrier; their slot's last readers,
         * two steps back, are behind the barrier above) */
        {
            const ulong np = pos + ASCON_TILE;
            s_base[par ^ 1][lid] = (o + np) >> 2;
            s_hi[par ^ 1][lid] = np < len
                ? (uint)(o & 3) + (uint)(len - np < ASCON_TILE ? len - np : ASCON_TILE) : 0;
        }

        if (j < mine) {
            const uint n = (uint)(len - pos < ASCON_TILE ? len - pos : ASCON_TILE);
            const uint full = n / 16;
            for (uint b = 0; b < full; b++) {
                LOCAL_PTR uint *w = row + 4 * b;
                const uint w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
                ulong m0, m1, c0, c1;
                ASCON_GATHER(w0, w1, w2, w3, w4, sh, m0, m1);
                ASCON_BLOCK(m0, m1, c0, c1);
                /* the output over the block's bytes of the row (its neighbours' bits kept) */
                const uint keep = (1u << sh) - 1u;
                ulong v = ((c0 & 0xffffffffu) << sh) | (w0 & keep);
                w[0] = (uint)v;
                v = ((c0 >> 32) << sh) | (v >> 32);
                w[1] = (uint)v;
                v = ((c1 & 0xffffffffu) << sh) | (v >> 32);
                w[2] = (uint)v;
                v = ((c1 >> 32) << sh) | (v >> 32);
                w[3] = (uint)v;
                w[4] = (w4 & ~keep) | (uint)(v >> 32);
                ASCON_P8();
            }
            if (j == mine - 1) {
                const uint l = n - 16 * full;
                ulong m0 = 0, m1 = 0, c0, c1;
                if (l) {
                    LOCAL_PTR uint *w = row + 4 * full;
                    ASCON_GATHER(w[0], w[1], w[2], w[3], w[4], sh, m0, m1);
                }
                ASCON_LAST(m0, m1, l, c0, c1);
                const uint p0 = sh / 8 + 16 * full;
                for (uint k = 0; k < l; k++) {
                    const uint p = p0 + k, bs = 8 * (p & 3);
                    row[p >> 2] = (row[p >> 2] & ~(0xffu << bs)) | (ascon_byte(c0, c1, k) << bs);
                }
            }
        }
        BARRIER();

        /* store the rows: whole words inside a message, single bytes at its ends */
        {
            uint r = r0, c = c0_;
            for (uint q = lid; q < ASCON_WG * ASCON_ROW; q += ASCON_WG) {
                const uint hi = s_hi[par][r], b0 = 4 * c;
                if (b0 < hi) {
                    const uint lo = s_lo[r], v = tile[q];
                    const ulong wd = s_base[par][r] + c;
                    if (b0 >= lo && b0 + 4 <= hi) {
                        dst[wd] = v;
                    } else {
                        for (uint k = 0; k < 4; k++)
                            if (b0 + k >= lo && b0 + k < hi)
                                dst8[4 * wd + k] = (uchar)(v >> (8 * k));
                    }
                }
                c += ASCON_WG % ASCON_ROW;
                r += ASCON_WG / ASCON_ROW;
                if (c >= ASCON_ROW) {
                    c -= ASCON_ROW;
                    r++;
                }
            }
        }
        BARRIER();
    }
#else
    /* direct: each work-item reads and writes its own message (no work-group memory, no
     * barrier).  The loads of a block are issued ASCON_AHEAD blocks before it is absorbed, so
     * they fly while the permutation runs; a message at a 16-byte offset (every message of a
     * batch of 16-byte multiples) is read and written in 16-byte vectors, any other in words */
    const ulong full = len / 16;
    GLOBAL_RO const uint *ps = src + (o >> 2);
    GLOBAL uint *pd = dst + (o >> 2);
    uint pend = 0;              /* the low sh bits of the last block's first word (unaligned) */
    if (full && (o & 15) == 0) {
        GLOBAL_RO const uint4 *ps4 = (GLOBAL_RO const uint4 *)src + (o >> 4);
        GLOBAL uint4 *pd4 = (GLOBAL uint4 *)dst + (o >> 4);
        const ulong lastb = full - 1;
        /* steps of A = ASCON_AHEAD blocks: the step's A vectors were loaded together (one
         * thread's A * 16 consecutive bytes: whole 32-byte sectors from A = 2), the next step's
         * are loaded into the same registers once the last of them is absorbed, and the A
         * output vectors are stored together (whole sectors again) */
        uint4 q[ASCON_AHEAD], c[ASCON_AHEAD];
#pragma unroll
        for (uint k = 0; k < ASCON_AHEAD; k++)
            q[k] = ps4[k < lastb ? k : lastb];
        ulong b = 0;
        for (; b + ASCON_AHEAD <= full; b += ASCON_AHEAD) {
#pragma unroll
            for (uint k = 0; k < ASCON_AHEAD; k++) {
                const ulong m0 = (ulong)q[k].x | ((ulong)q[k].y << 32);
                const ulong m1 = (ulong)q[k].z | ((ulong)q[k].w << 32);
                ulong c0, c1;
                ASCON_BLOCK(m0, m1, c0, c1);
                c[k] = MAKE_UINT4((uint)c0, (uint)(c0 >> 32), (uint)c1, (uint)(c1 >> 32));
                if (k == ASCON_AHEAD - 1) {
#pragma unroll
                    for (uint j = 0; j < ASCON_AHEAD; j++) {
                        const ulong bn = b + ASCON_AHEAD + j;
                        q[j] = ps4[bn < lastb ? bn : lastb];   /* never past the message */
                        pd4[b + j] = c[j];
                    }
                }
                ASCON_P8();
            }
        }
        /* the last full - b < A blocks, already loaded */
#pragma unroll
        for (uint k = 0; k + 1 < ASCON_AHEAD; k++) {
            if (b + k < full) {
                const ulong m0 = (ulong)q[k].x | ((ulong)q[k].y << 32);
                const ulong m1 = (ulong)q[k].z | ((ulong)q[k].w << 32);
                ulong c0, c1;
                ASCON_BLOCK(m0, m1, c0, c1);
                pd4[b + k] = MAKE_UINT4((uint)c0, (uint)(c0 >> 32), (uint)c1, (uint)(c1 >> 32));
                ASCON_P8();
            }
        }
    } else if (full) {
        /* words: block b is words 4b..4b+4 of ps, funnel-shifted by sh; the next block's four
         * new words are loaded before this block is absorbed */
        const ulong lastb = full - 1;
        uint nxt = ps[0], n1 = ps[1], n2 = ps[2], n3 = ps[3], n4 = ps[4];
        for (ulong b = 0; b < full; b++) {
            const uint w0 = nxt, w1 = n1, w2 = n2, w3 = n3, w4 = n4;
            nxt = w4;
            {
                const ulong bn = b + 1 < lastb ? b + 1 : lastb;
                n1 = ps[4 * bn + 1]; n2 = ps[4 * bn + 2]; n3 = ps[4 * bn + 3]; n4 = ps[4 * bn + 4];
            }
            ulong m0, m1, c0, c1;
            ASCON_GATHER(w0, w1, w2, w3, w4, sh, m0, m1);
            ASCON_BLOCK(m0, m1, c0, c1);
            ulong v = ((c0 & 0xffffffffu) << sh) | pend;
            if (b == 0 && sh) {         /* the first word's low bytes are the previous message's */
                for (uint k = sh / 8; k < 4; k++)
                    dst8[4 * ((o >> 2)) + k] = (uchar)(v >> (8 * k));
            } else {
                pd[4 * b] = (uint)v;
            }
            v = ((c0 >> 32) << sh) | (v >> 32);
            pd[4 * b + 1] = (uint)v;
            v = ((c1 & 0xffffffffu) << sh) | (v >> 32);
            pd[4 * b + 2] = (uint)v;
            v = ((c1 >> 32) << sh) | (v >> 32);
            pd[4 * b + 3] = (uint)v;
            pend = (uint)(v >> 32);     /* the low sh bits of word 4(b+1): this block's tail */
            ASCON_P8();
        }
    }
    {
        const uint l = (uint)(len - 16 * full);
        const uint nw = (sh / 8 + l + 3) / 4;   /* words holding the last block's bytes */
        GLOBAL_RO const uint *pl = ps + 4 * full;
        ulong m0, m1, c0, c1;
        {
            const uint w0 = nw > 0 ? pl[0] : 0, w1 = nw > 1 ? pl[1] : 0, w2 = nw > 2 ? pl[2] : 0;
            const uint w3 = nw > 3 ? pl[3] : 0, w4 = nw > 4 ? pl[4] : 0;
            ASCON_GATHER(w0, w1, w2, w3, w4, sh, m0, m1);
        }
        ASCON_LAST(m0, m1, l, c0, c1);
        GLOBAL uchar *pb = dst8 + o + 16 * full;   /* the last block's first byte */
        if (full)
            for (uint k = 0; k < sh / 8; k++)
                pb[(long)k - (long)(sh / 8)] = (uchar)(pend >> (8 * k));
        for (uint k = 0; k < l; k++)
            pb[k] = (uchar)ascon_byte(c0, c1, k);
    }
#endif

    /* finalization */
    x2 ^= k0;
    x3 ^= k1;
    ASCON_P12();
    if (live) {
        x3 ^= k0;
        x4 ^= k1;
        tags[4 * i] = (uint)x3;
        tags[4 * i + 1] = (uint)(x3 >> 32);
        tags[4 * i + 2] = (uint)x4;
        tags[4 * i + 3] = (uint)(x4 >> 32);
    }
}
