/* aegis128l.cl - AEGIS-128L (draft-irtf-cfrg-aegis-aead-18, Section 3) over a batch of messages.
 *
 * One message per work-item: AEGIS is serial within a message (each 32-byte block updates the
 * whole 1024-bit state), so the parallelism is the batch.  The state (8 AES blocks = 32 words)
 * lives in registers; AESRound is a T-table round (one 1 KiB table T0, the other three are its
 * byte rotations) read from work-group memory, AEGIS_COPIES copies interleaved by bank as in
 * aes.cl (lane l reads copy l % AEGIS_COPIES).  Blocks are 4 little-endian words (word c = column
 * c, byte r = row r).
 *
 * Memory access.  Consecutive work-items hold consecutive messages, which lie far apart in the
 * concatenated text (16 KiB apart for a batch of 16 KiB messages): a work-item reading its own
 * message would make every load of a warp touch a different line.  Instead the work-group stages
 * the text through work-group memory: for tile t it copies bytes [t*TILE, (t+1)*TILE) of each of
 * its AEGIS_GROUP messages into a tile (one row per message, rows padded by one word against bank
 * conflicts), with consecutive work-items reading consecutive words of one message (128-byte
 * coalesced runs for TILE = 128); each work-item then runs its blocks out of its row and, for the
 * message phase, writes the output back into the row, and the work-group stores the rows the same
 * coalesced way: aligned words inside a message, bytes at its two ends (messages start at any byte
 * offset; neighbouring messages of other work-groups own the other bytes of a shared word).  The
 * AAD is staged the same way.  A work-group runs as many tiles as its longest message needs:
 * batches of equal (or sorted) lengths waste nothing.
 *
 * Knobs (defines): AEGIS_GROUP work-items (= messages) per work-group, the launch's local size
 * (the driver sets both); AEGIS_TILE_BLOCKS 32-byte blocks per message per tile (4: 128 bytes);
 * AEGIS_COPIES copies of the table (32: no bank conflicts between the lanes of a warp; 16: 2-way;
 * 1: one copy); AEGIS_TABLE_LOCAL 1: the table in work-group memory (GPUs), 0: read from the
 * constant table (CPU devices, where both are cached memory; PoCL 3.0's optimizer also
 * miscomputes the work-group-memory variant, see docs/ciphers/aegis-128l.md).  Work-group memory: 1 KiB * AEGIS_COPIES + AEGIS_GROUP * (32 * AEGIS_TILE_BLOCKS
 * + 4 + 16) bytes (41 KiB with the defaults, under CUDA's 48 KiB of static shared memory).
 *
 * Buffers: the text and AAD buffers must extend at least 8 bytes past their last byte (the
 * unaligned word loads read up to one word beyond a message; the bytes read there are masked).
 *
 * SECURITY: the table lookups are indexed by secret state: they leak through bank conflicts and
 * cache timing.  This kernel is NOT constant-time.
 *
 * The table T0[x] = (2 S(x), S(x), S(x), 3 S(x)) is aes.cl's AES_T0, compiled before this file
 * (tests/test_aegis.py checks the round against the model, which derives the S-box itself).
 */
#ifndef AEGIS_GROUP
#define AEGIS_GROUP 64
#endif
#ifndef AEGIS_TILE_BLOCKS
#define AEGIS_TILE_BLOCKS 4
#endif
#ifndef AEGIS_COPIES
#define AEGIS_COPIES 32
#endif
#ifndef AEGIS_TABLE_LOCAL
#define AEGIS_TABLE_LOCAL 1
#endif
#if AEGIS_TABLE_LOCAL
#define AEGIS_TAB_PTR LOCAL_PTR const uint *
#else
#undef AEGIS_COPIES
#define AEGIS_COPIES 1
#define AEGIS_TAB_PTR CONST_PTR const uint *
#endif
#define AEGIS_TILE_WORDS (8 * AEGIS_TILE_BLOCKS)
#define AEGIS_TILE_BYTES (32 * AEGIS_TILE_BLOCKS)
#define AEGIS_ROW (AEGIS_TILE_WORDS + 1)

#define AEGIS_ABSORB 0
#define AEGIS_ENC 1
#define AEGIS_DEC 2

/* the table is aes.cl's T0 (the driver compiles aes.cl first) */
#define AEGIS_T0 AES_T0

/* C0 and C1 of the draft (Section 2) as little-endian words */
#define AEGIS_C0_0 0x02010100u
#define AEGIS_C0_1 0x0d080503u
#define AEGIS_C0_2 0x59372215u
#define AEGIS_C0_3 0x6279e990u
#define AEGIS_C1_0 0x55183ddbu
#define AEGIS_C1_1 0xf12fc26du
#define AEGIS_C1_2 0x42311120u
#define AEGIS_C1_3 0xdd28b573u

#define AEGIS_T(b) (tab[(uint)(b) * AEGIS_COPIES + lane])
#define AEGIS_COL(a, b, c, d) \
    (AEGIS_T(BYTE0(a)) ^ ROTL32(AEGIS_T(BYTE1(b)), 8) ^ ROTL32(AEGIS_T(BYTE2(c)), 16) ^ ROTL32(AEGIS_T(BYTE3(d)), 24))

/* d = AESRound(s, k): SubBytes, ShiftRows, MixColumns of s, then ^ k (d and s distinct; k
 * is passed by value, so d may be the block k came from) */
DEVICE_FN void aegis_round(uint *d, const uint *s, uint k0, uint k1, uint k2, uint k3,
                           AEGIS_TAB_PTR tab, uint lane)
{
    d[0] = AEGIS_COL(s[0], s[1], s[2], s[3]) ^ k0;
    d[1] = AEGIS_COL(s[1], s[2], s[3], s[0]) ^ k1;
    d[2] = AEGIS_COL(s[2], s[3], s[0], s[1]) ^ k2;
    d[3] = AEGIS_COL(s[3], s[0], s[1], s[2]) ^ k3;
}

/* Update(M0, M1): block i of the state is S[4i .. 4i+3]; the blocks are replaced from S7 down to
 * S0, each from its old value and the old value of the block before it (S7's old value is kept
 * for S0) */
DEVICE_FN void aegis_update(uint *S, const uint *m0, const uint *m1, AEGIS_TAB_PTR tab, uint lane)
{
    const uint s7[4] = {S[28], S[29], S[30], S[31]};
    aegis_round(S + 28, S + 24, S[28], S[29], S[30], S[31], tab, lane);
    aegis_round(S + 24, S + 20, S[24], S[25], S[26], S[27], tab, lane);
    aegis_round(S + 20, S + 16, S[20], S[21], S[22], S[23], tab, lane);
    aegis_round(S + 16, S + 12, S[16] ^ m1[0], S[17] ^ m1[1], S[18] ^ m1[2], S[19] ^ m1[3], tab, lane);
    aegis_round(S + 12, S + 8, S[12], S[13], S[14], S[15], tab, lane);
    aegis_round(S + 8, S + 4, S[8], S[9], S[10], S[11], tab, lane);
    aegis_round(S + 4, S + 0, S[4], S[5], S[6], S[7], tab, lane);
    aegis_round(S + 0, s7, S[0] ^ m0[0], S[1] ^ m0[1], S[2] ^ m0[2], S[3] ^ m0[3], tab, lane);
}

/* Init(key, nonce) */
DEVICE_FN void aegis_init(uint *S, const uint *k, const uint *nv, AEGIS_TAB_PTR tab, uint lane)
{
    const uint c0[4] = {AEGIS_C0_0, AEGIS_C0_1, AEGIS_C0_2, AEGIS_C0_3};
    const uint c1[4] = {AEGIS_C1_0, AEGIS_C1_1, AEGIS_C1_2, AEGIS_C1_3};
#pragma unroll
    for (int w = 0; w < 4; w++) {
        S[w] = k[w] ^ nv[w];
        S[4 + w] = c1[w];
        S[8 + w] = c0[w];
        S[12 + w] = c1[w];
        S[16 + w] = k[w] ^ nv[w];
        S[20 + w] = k[w] ^ c0[w];
        S[24 + w] = k[w] ^ c1[w];
        S[28 + w] = k[w] ^ c0[w];
    }
    for (int r = 0; r < 10; r++) aegis_update(S, nv, k, tab, lane);
}

/* Copy bytes [pos, pos + TILE) of every message r of the work-group (start[r], len[r] in buf)
 * into row r of the tile, zero past the message's end; consecutive work-items read consecutive
 * words of one message. */
DEVICE_FN void aegis_stage_load(LOCAL_PTR uint *tile, LOCAL_PTR const ulong *start,
                                LOCAL_PTR const ulong *len, GLOBAL_RO const uchar *buf, ulong pos)
{
    GLOBAL_RO const uint *w32 = (GLOBAL_RO const uint *)buf;
    for (uint k = LID; k < AEGIS_GROUP * AEGIS_TILE_WORDS; k += AEGIS_GROUP) {
        const uint r = k / AEGIS_TILE_WORDS, w = k % AEGIS_TILE_WORDS;
        const ulong p = pos + 4u * w, n = len[r];
        uint v = 0u;
        if (p < n) {
            const ulong g = start[r] + p;
            const ulong a = g >> 2;
            const uint sh = 8u * (uint)(g & 3u);
            v = w32[a];
            if (sh) v = (v >> sh) | (w32[a + 1] << (32u - sh));
            if (n - p < 4u) v &= (1u << (8u * (uint)(n - p))) - 1u;
        }
        tile[r * AEGIS_ROW + w] = v;
    }
}

/* Store the first min(TILE, len[r] - pos) bytes of every row r to buf at start[r] + pos:
 * aligned words where the word lies inside the message's bytes of this tile, single bytes
 * elsewhere (the rest of such a word belongs to a neighbouring message or tile). */
DEVICE_FN void aegis_stage_store(LOCAL_PTR const uint *tile, LOCAL_PTR const ulong *start,
                                 LOCAL_PTR const ulong *len, GLOBAL uchar *buf, ulong pos)
{
    GLOBAL uint *w32 = (GLOBAL uint *)buf;
    for (uint k = LID; k < AEGIS_GROUP * (AEGIS_TILE_WORDS + 1); k += AEGIS_GROUP) {
        const uint r = k / (AEGIS_TILE_WORDS + 1), j = k % (AEGIS_TILE_WORDS + 1);
        const ulong n = len[r];
        if (pos >= n) continue;
        const ulong rem = n - pos;
        const int cnt = rem < (ulong)AEGIS_TILE_BYTES ? (int)rem : AEGIS_TILE_BYTES;
        const ulong g0 = start[r] + pos;
        const uint sh = (uint)(g0 & 3u);
        const int rel = 4 * (int)j - (int)sh;   /* the tile byte at byte 0 of global word a */
        if (rel >= cnt) continue;
        LOCAL_PTR const uint *row = tile + r * AEGIS_ROW;
        uint v = row[j];
        if (sh) v = (j ? row[j - 1] >> (32u - 8u * sh) : 0u) | (v << (8u * sh));
        const ulong a = (g0 >> 2) + j;
        if (rel >= 0 && rel + 4 <= cnt) {
            w32[a] = v;
        } else {
            for (int b = 0; b < 4; b++)
                if (rel + b >= 0 && rel + b < cnt) buf[4u * a + (uint)b] = (uchar)(v >> (8 * b));
        }
    }
}

/* Run this work-item's blocks of one tile: `row` holds them, `rem` (> 0) bytes of the message
 * are left from the tile's start.  ENC/DEC overwrite the row with the output. */
DEVICE_FN void aegis_tile(uint *S, LOCAL_PTR uint *row, ulong rem, uint mode,
                          AEGIS_TAB_PTR tab, uint lane)
{
    for (uint b = 0; b < AEGIS_TILE_BLOCKS; b++) {
        if ((ulong)(32u * b) >= rem) break;
        LOCAL_PTR uint *x = row + 8u * b;
        uint m0[4], m1[4];
        if (mode == AEGIS_ABSORB) {
#pragma unroll
            for (int w = 0; w < 4; w++) { m0[w] = x[w]; m1[w] = x[4 + w]; }
        } else {
            uint o[8];
#pragma unroll
            for (int w = 0; w < 4; w++) {
                o[w] = x[w] ^ S[24 + w] ^ S[4 + w] ^ (S[8 + w] & S[12 + w]);          /* z0 */
                o[4 + w] = x[4 + w] ^ S[8 + w] ^ S[20 + w] ^ (S[24 + w] & S[28 + w]); /* z1 */
            }
            const ulong left = rem - 32u * b;
            if (mode == AEGIS_DEC && left < 32u) {  /* DecPartial: the padding of xn is zero */
                const int nbytes = (int)left;
#pragma unroll
                for (int w = 0; w < 8; w++) {
                    const int keep = nbytes - 4 * w;
                    if (keep <= 0) o[w] = 0u;
                    else if (keep < 4) o[w] &= (1u << (8 * keep)) - 1u;
                }
            }
#pragma unroll
            for (int w = 0; w < 4; w++) {
                m0[w] = mode == AEGIS_DEC ? o[w] : x[w];
                m1[w] = mode == AEGIS_DEC ? o[4 + w] : x[4 + w];
            }
#pragma unroll
            for (int w = 0; w < 8; w++) x[w] = o[w];
        }
        aegis_update(S, m0, m1, tab, lane);
    }
}

/* the longest len[] of the work-group, in tiles */
DEVICE_FN ulong aegis_group_tiles(LOCAL_PTR const ulong *len)
{
    ulong most = 0;
    for (uint r = 0; r < AEGIS_GROUP; r++) most = len[r] > most ? len[r] : most;
    return (most + (AEGIS_TILE_BYTES - 1)) / AEGIS_TILE_BYTES;
}

/* One batch, one direction.  Message i (i < m): key keys[4 key_index[i] ..], nonce nonces[4 i ..],
 * AAD aad[aad_off[i] .. aad_off[i + 1]), text src[off[i] .. off[i + 1]) -> dst (same offsets);
 * its tag (tag_words words: 4 or 8) -> tags[tag_words i ..].  decrypt: 0 encrypts, 1 decrypts.
 * Launch with exactly AEGIS_GROUP work-items per work-group, ceil(m / AEGIS_GROUP) groups. */
KERNEL void aegis128l_batch(GLOBAL_RO const uint *RESTRICT keys, GLOBAL_RO const int *RESTRICT key_index,
                            GLOBAL_RO const uint *RESTRICT nonces, GLOBAL_RO const uchar *RESTRICT aad,
                            GLOBAL_RO const ulong *RESTRICT aad_off, GLOBAL_RO const uchar *RESTRICT src,
                            GLOBAL uchar *RESTRICT dst, GLOBAL_RO const ulong *RESTRICT off,
                            GLOBAL uint *RESTRICT tags, uint m, uint decrypt, uint tag_words)
{
#if AEGIS_TABLE_LOCAL
    LOCAL_VAR uint aegis_tab[256 * AEGIS_COPIES];
#endif
    LOCAL_VAR uint aegis_tilebuf[AEGIS_GROUP * AEGIS_ROW];
    LOCAL_VAR ulong aegis_start[AEGIS_GROUP];
    LOCAL_VAR ulong aegis_len[AEGIS_GROUP];

#if AEGIS_TABLE_LOCAL
    for (uint k = LID; k < 256u * AEGIS_COPIES; k += AEGIS_GROUP) aegis_tab[k] = AEGIS_T0[k / AEGIS_COPIES];
#else
    CONST_PTR const uint *aegis_tab = AEGIS_T0;
#endif
    const uint lane = LID & (AEGIS_COPIES - 1u);
    const ulong i = GID;
    const int active = i < (ulong)m;
    LOCAL_PTR uint *row = aegis_tilebuf + LID * AEGIS_ROW;
    uint S[32];
    BARRIER();

    ulong ad_len = 0, msg_len = 0, start = 0;
    if (active) {
        uint k[4], nv[4];
        const ulong ki = (ulong)(uint)key_index[i];
#pragma unroll
        for (int w = 0; w < 4; w++) { k[w] = keys[4u * ki + w]; nv[w] = nonces[4u * i + w]; }
        aegis_init(S, k, nv, aegis_tab, lane);
#pragma unroll
        for (int w = 0; w < 4; w++) k[w] = 0u;
        start = aad_off[i];
        ad_len = aad_off[i + 1] - start;
    }

    /* associated data: Absorb */
    aegis_start[LID] = start;
    aegis_len[LID] = ad_len;
    BARRIER();
    ulong tiles = aegis_group_tiles(aegis_len);
    for (ulong t = 0; t < tiles; t++) {
        const ulong pos = t * AEGIS_TILE_BYTES;
        aegis_stage_load(aegis_tilebuf, aegis_start, aegis_len, aad, pos);
        BARRIER();
        if (pos < ad_len) aegis_tile(S, row, ad_len - pos, AEGIS_ABSORB, aegis_tab, lane);
        BARRIER();
    }

    /* the text: Enc / Dec (+ DecPartial) */
    if (active) {
        start = off[i];
        msg_len = off[i + 1] - start;
    }
    BARRIER();
    aegis_start[LID] = start;
    aegis_len[LID] = msg_len;
    BARRIER();
    tiles = aegis_group_tiles(aegis_len);
    const uint mode = decrypt ? AEGIS_DEC : AEGIS_ENC;
    for (ulong t = 0; t < tiles; t++) {
        const ulong pos = t * AEGIS_TILE_BYTES;
        aegis_stage_load(aegis_tilebuf, aegis_start, aegis_len, src, pos);
        BARRIER();
        if (pos < msg_len) aegis_tile(S, row, msg_len - pos, mode, aegis_tab, lane);
        BARRIER();
        aegis_stage_store(aegis_tilebuf, aegis_start, aegis_len, dst, pos);
        BARRIER();
    }

    /* Finalize */
    if (!active) return;
    const ulong ad_bits = ad_len << 3, msg_bits = msg_len << 3;
    uint tv[4];
    tv[0] = S[8] ^ (uint)ad_bits;
    tv[1] = S[9] ^ (uint)(ad_bits >> 32);
    tv[2] = S[10] ^ (uint)msg_bits;
    tv[3] = S[11] ^ (uint)(msg_bits >> 32);
    for (int r = 0; r < 7; r++) aegis_update(S, tv, tv, aegis_tab, lane);
    GLOBAL uint *out = tags + (ulong)tag_words * i;
    if (tag_words == 4u) {
#pragma unroll
        for (int w = 0; w < 4; w++)
            out[w] = S[w] ^ S[4 + w] ^ S[8 + w] ^ S[12 + w] ^ S[16 + w] ^ S[20 + w] ^ S[24 + w];
    } else {
#pragma unroll
        for (int w = 0; w < 4; w++) {
            out[w] = S[w] ^ S[4 + w] ^ S[8 + w] ^ S[12 + w];
            out[4 + w] = S[16 + w] ^ S[20 + w] ^ S[24 + w] ^ S[28 + w];
        }
    }
}
