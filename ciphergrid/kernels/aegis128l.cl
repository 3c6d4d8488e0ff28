/* aegis128l.cl - AEGIS-128L (draft-irtf-cfrg-aegis-aead-18, Section 3) over a batch of messages.
 *
 * One message per work-item: AEGIS is serial within a message (each 32-byte block updates the
 * whole 1024-bit state), so the parallelism is the batch.  The state (8 AES blocks = 32 words)
 * lives in registers; AESRound is a T-table round read from work-group memory: T0 alone (the
 * other three are its byte rotations) or T0 and T1 (AEGIS_TABLES 2: one rotation per column
 * instead of three), AEGIS_COPIES copies interleaved by bank as in aes.cl (lane l reads copy
 * l % AEGIS_COPIES).  Blocks are 4 little-endian words (word c = column c, byte r = row r).
 *
 * Instructions per lookup (NVIDIA): one byte extraction (a mask, a byte permute, or for the top
 * byte a high multiply on the FMA pipe), one IMAD for the address (b * stride + this lane's
 * copy: the stride is a kernel argument, not a constant, so no compiler turns it into a shift
 * and an add, and on CUDA the load is PTX on a 32-bit shared address, so none splits the
 * address into window base + lane + offset), one LDS.  An Update (8 AES rounds, 128 lookups) of
 * the direct kernel's block loop is about 607 instructions (NVRTC 12.9, sm_90): 290 on the
 * integer ALU (byte extraction 96, rotations 96, XORs 88), 183 IMAD, 128 LDS.
 *
 * Memory access (AEGIS_STAGE).
 *  0 (direct): each work-item reads and writes its own message: messages that start 16-byte
 *    aligned (the usual batch: the buffers are) load a block as two 16-byte loads, issued one
 *    block ahead (the loads of block b + 1 fly while block b is computed: the latency is hidden
 *    by the work-item's own work, no barrier, no tile memory), and store it as two 16-byte
 *    stores; other messages and the last partial block take word loads (masked past the end)
 *    and byte stores.  A warp's load touches 32 lines (one per message), but each 32-byte
 *    sector is read whole by its work-item, two loads back to back.
 *  1 (staged): the work-group stages tiles through work-group memory: tile t is bytes
 *    [t*TILE, (t+1)*TILE) of each of its AEGIS_GROUP messages, one row per message (rows padded
 *    by one word against bank conflicts), consecutive work-items reading consecutive words of
 *    one message; each work-item runs its blocks from its row and writes the output into it,
 *    and the work-group stores the rows the same coalesced way (aligned words inside a message,
 *    bytes at its two ends: neighbouring messages own the other bytes of a shared word).
 *  2 (pipelined staging): as 1, with tile t + 1's loads issued into registers before tile t is
 *    computed and put into the tile after; tiles that every message of the work-group fills
 *    word-aligned take lean copies (one load or store per word, no checks).
 * A staged work-group runs as many tiles as its longest message needs: batches of equal (or
 * sorted) lengths waste nothing.
 *
 * Knobs (defines): AEGIS_GROUP work-items (= messages) per work-group, the launch's local size
 * (the driver sets both); AEGIS_STAGE (above); AEGIS_TILE_BLOCKS 32-byte blocks per message per
 * tile (stages 1, 2); AEGIS_COPIES copies of the table (32: no bank conflicts between the lanes
 * of a warp; 16: 2-way; 1: one copy); AEGIS_TABLES 1 or 2; AEGIS_MULHI 1: the top byte by
 * mul.hi (NVIDIA); AEGIS_MAD 1: the stride argument (0: the constant, which compilers turn into
 * a shift and adds); AEGIS_UNROLL blocks per iteration of the direct block loop (NVIDIA);
 * AEGIS_TABLE_LOCAL 1: the table in work-group memory (GPUs), 0: read from the constant table
 * (CPU devices, where both are cached memory; PoCL 3.0's optimizer also miscomputes the
 * work-group-memory variant and the pipelined staging, see docs/ciphers/aegis-128l.md).
 * Work-group memory: 1 KiB * AEGIS_COPIES * AEGIS_TABLES, + AEGIS_GROUP * (32 *
 * AEGIS_TILE_BLOCKS + 4 + 16) bytes when staged; at most 48 KiB (CUDA's static shared memory).
 *
 * Kernel argument `stride`: the table's bytes per entry, 4 * AEGIS_COPIES * AEGIS_TABLES (the
 * driver passes it).
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
#ifndef AEGIS_STAGE
#define AEGIS_STAGE 0
#endif
#ifndef AEGIS_TILE_BLOCKS
#define AEGIS_TILE_BLOCKS 4
#endif
#ifndef AEGIS_COPIES
#define AEGIS_COPIES 32
#endif
#ifndef AEGIS_TABLES
#define AEGIS_TABLES 1
#endif
#ifndef AEGIS_MULHI
#define AEGIS_MULHI 1
#endif
#ifndef AEGIS_UNROLL
#define AEGIS_UNROLL 1
#endif
#ifndef AEGIS_MAD
#define AEGIS_MAD 1
#endif
#ifndef AEGIS_TABLE_LOCAL
#define AEGIS_TABLE_LOCAL 1
#endif
#if AEGIS_TABLE_LOCAL && AEGIS_MAD && defined(__CUDACC__)
#define AEGIS_TAB_PTR uint
#elif AEGIS_TABLE_LOCAL
#define AEGIS_TAB_PTR LOCAL_PTR const uchar *
#else
#undef AEGIS_COPIES
#define AEGIS_COPIES 1
#undef AEGIS_TABLES
#define AEGIS_TABLES 1
#define AEGIS_TAB_PTR CONST_PTR const uchar *
#endif
#if AEGIS_TABLES != 1 && AEGIS_TABLES != 2
#error "AEGIS_TABLES: 1 or 2"
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

/* Table layout, in bytes: entry b (0..255) is AEGIS_STRIDE bytes, AEGIS_TABLES rows of
 * AEGIS_COPIES words (row 0: T0[b], row 1: T1[b] = ROTL8(T0[b])), copy c of a row in word c (bank
 * c + row * AEGIS_COPIES).  `tab` points at this lane's copy of entry 0 (the table + 4 * lane), so
 * a lookup is one multiply-add b * AEGIS_STRIDE + tab (an IMAD, on NVIDIA's FMA pipe) and a load
 * with the row's byte offset as its immediate. */
#define AEGIS_STRIDE (4u * AEGIS_COPIES * AEGIS_TABLES)
#define AEGIS_TAB_WORDS (256 * AEGIS_COPIES * AEGIS_TABLES)
#if AEGIS_TABLE_LOCAL && AEGIS_MAD && defined(__CUDACC__)
/* CUDA: `tab` is the 32-bit shared-memory address, the load is PTX, so that no compiler splits
 * the address into the shared window's base + lane + b * stride (three operands, an IADD3 on
 * the integer ALU after the multiply) */
DEVICE_FN uint aegis_lds(uint a)
{
    uint v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a));
    return v;
}
DEVICE_FN uint aegis_lds_row1(uint a)
{
    uint v;
    asm volatile("ld.shared.u32 %0, [%1+%2];" : "=r"(v) : "r"(a), "n"(4 * AEGIS_COPIES));
    return v;
}
DEVICE_FN uint aegis_shared_addr(const void *p)
{
    unsigned long long a;
    asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (uint)a;
}
#define AEGIS_L(row, b) ((row) ? aegis_lds_row1((uint)(b) * stride + tab) : aegis_lds((uint)(b) * stride + tab))
#elif AEGIS_TABLE_LOCAL && AEGIS_MAD
#define AEGIS_L(row, b) (*(LOCAL_PTR const uint *)(tab + (uint)(b) * stride + (row) * 4u * AEGIS_COPIES))
#elif AEGIS_TABLE_LOCAL
#define AEGIS_L(row, b) (*(LOCAL_PTR const uint *)(tab + (uint)(b) * AEGIS_STRIDE + (row) * 4u * AEGIS_COPIES))
#else
#define AEGIS_L(row, b) (*(CONST_PTR const uint *)(tab + (uint)(b) * AEGIS_STRIDE))
#endif

/* Byte extraction: on NVIDIA one instruction each (a mask, two byte permutes, and for the top
 * byte with AEGIS_MULHI a high multiply mulhi(x, 256) = x >> 24 on the FMA pipe beside the
 * integer ALU that the rotations and XORs load); shifts and masks elsewhere. */
#if defined(__CUDACC__) || defined(cl_nv_pragma_unroll)
#define AEGIS_B0(x) ((x) & 0xffu)
#define AEGIS_B1(x) BYTE_PERM((x), 0u, 0x4441u)
#define AEGIS_B2(x) BYTE_PERM((x), 0u, 0x4442u)
#if AEGIS_MULHI
DEVICE_FN uint aegis_byte3(uint x)
{
    uint r;
    asm("mul.hi.u32 %0, %1, 256;" : "=r"(r) : "r"(x));
    return r;
}
#define AEGIS_B3(x) aegis_byte3(x)
#else
#define AEGIS_B3(x) ((x) >> 24)
#endif
#else
#define AEGIS_B0(x) BYTE0(x)
#define AEGIS_B1(x) BYTE1(x)
#define AEGIS_B2(x) BYTE2(x)
#define AEGIS_B3(x) BYTE3(x)
#endif

/* one column of SubBytes+ShiftRows+MixColumns: T0[a] ^ T1[b] ^ T2[c] ^ T3[d], Tk = ROTL(T0, 8k);
 * from T0 alone three rotations, from T0 and T1 one (T2 ^ T3 = ROTL16(T0 ^ T1)) */
#if AEGIS_TABLES == 2
#define AEGIS_COL(a, b, c, d) \
    (AEGIS_L(0, AEGIS_B0(a)) ^ AEGIS_L(1, AEGIS_B1(b)) ^ ROTL32(AEGIS_L(0, AEGIS_B2(c)) ^ AEGIS_L(1, AEGIS_B3(d)), 16))
#else
#define AEGIS_COL(a, b, c, d) \
    (AEGIS_L(0, AEGIS_B0(a)) ^ ROTL32(AEGIS_L(0, AEGIS_B1(b)), 8) ^ ROTL32(AEGIS_L(0, AEGIS_B2(c)), 16) ^ \
     ROTL32(AEGIS_L(0, AEGIS_B3(d)), 24))
#endif

/* d = AESRound(s, k): SubBytes, ShiftRows, MixColumns of s, then ^ k (d and s distinct; k
 * is passed by value, so d may be the block k came from) */
DEVICE_FN void aegis_round(uint *d, const uint *s, uint k0, uint k1, uint k2, uint k3, AEGIS_TAB_PTR tab, uint stride)
{
    d[0] = AEGIS_COL(s[0], s[1], s[2], s[3]) ^ k0;
    d[1] = AEGIS_COL(s[1], s[2], s[3], s[0]) ^ k1;
    d[2] = AEGIS_COL(s[2], s[3], s[0], s[1]) ^ k2;
    d[3] = AEGIS_COL(s[3], s[0], s[1], s[2]) ^ k3;
}

/* Update(M0, M1): block i of the state is S[4i .. 4i+3]; the blocks are replaced from S7 down to
 * S0, each from its old value and the old value of the block before it (S7's old value is kept
 * for S0) */
DEVICE_FN void aegis_update(uint *S, const uint *m0, const uint *m1, AEGIS_TAB_PTR tab, uint stride)
{
    const uint s7[4] = {S[28], S[29], S[30], S[31]};
    aegis_round(S + 28, S + 24, S[28], S[29], S[30], S[31], tab, stride);
    aegis_round(S + 24, S + 20, S[24], S[25], S[26], S[27], tab, stride);
    aegis_round(S + 20, S + 16, S[20], S[21], S[22], S[23], tab, stride);
    aegis_round(S + 16, S + 12, S[16] ^ m1[0], S[17] ^ m1[1], S[18] ^ m1[2], S[19] ^ m1[3], tab, stride);
    aegis_round(S + 12, S + 8, S[12], S[13], S[14], S[15], tab, stride);
    aegis_round(S + 8, S + 4, S[8], S[9], S[10], S[11], tab, stride);
    aegis_round(S + 4, S + 0, S[4], S[5], S[6], S[7], tab, stride);
    aegis_round(S + 0, s7, S[0] ^ m0[0], S[1] ^ m0[1], S[2] ^ m0[2], S[3] ^ m0[3], tab, stride);
}

/* Init(key, nonce) */
DEVICE_FN void aegis_init(uint *S, const uint *k, const uint *nv, AEGIS_TAB_PTR tab, uint stride)
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
    for (int r = 0; r < 10; r++) aegis_update(S, nv, k, tab, stride);
}

/* One block of the text (x: 8 words, zero past the message's end) through Absorb, Enc or Dec:
 * ENC/DEC overwrite x with the output; `left` (1..32) is the message's bytes in this block, < 32
 * only for the last block (DecPartial: the padding of the plaintext that Update takes is zero). */
DEVICE_FN void aegis_block(uint *S, uint *x, uint left, uint mode, AEGIS_TAB_PTR tab, uint stride)
{
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
        if (mode == AEGIS_DEC && left < 32u) {
#pragma unroll
            for (int w = 0; w < 8; w++) {
                const int keep = (int)left - 4 * w;
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
    aegis_update(S, m0, m1, tab, stride);
}

#if AEGIS_STAGE
/* ---- staged: the work-group copies tiles of its messages through work-group memory ---- */

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

/* The same copy in two halves, for software pipelining (AEGIS_STAGE 2): fetch the work-item's
 * AEGIS_TILE_WORDS words of the tile into registers (the loads fly while the tile before is
 * computed), put them into the tile later. */
DEVICE_FN void aegis_stage_fetch(uint *v, LOCAL_PTR const ulong *start, LOCAL_PTR const ulong *len,
                                 GLOBAL_RO const uchar *buf, ulong pos)
{
    GLOBAL_RO const uint *w32 = (GLOBAL_RO const uint *)buf;
#pragma unroll
    for (uint j = 0; j < AEGIS_TILE_WORDS; j++) {
        const uint k = LID + j * AEGIS_GROUP;
        const uint r = k / AEGIS_TILE_WORDS, w = k % AEGIS_TILE_WORDS;
        const ulong p = pos + 4u * w, n = len[r];
        uint x = 0u;
        if (p < n) {
            const ulong g = start[r] + p;
            const ulong a = g >> 2;
            const uint sh = 8u * (uint)(g & 3u);
            x = w32[a];
            if (sh) x = (x >> sh) | (w32[a + 1] << (32u - sh));
            if (n - p < 4u) x &= (1u << (8u * (uint)(n - p))) - 1u;
        }
        v[j] = x;
    }
}

DEVICE_FN void aegis_stage_put(LOCAL_PTR uint *tile, const uint *v)
{
#pragma unroll
    for (uint j = 0; j < AEGIS_TILE_WORDS; j++) {
        const uint k = LID + j * AEGIS_GROUP;
        tile[(k / AEGIS_TILE_WORDS) * AEGIS_ROW + k % AEGIS_TILE_WORDS] = v[j];
    }
}

/* Tiles that every message of the work-group fills and that start word-aligned (all tiles below
 * aegis_group_fast()) take the lean copies: one word load or store per word, no checks but the
 * row's: only the work-group's first `rows` rows hold messages (the last work-group of a batch
 * whose count is not a multiple of AEGIS_GROUP has fewer; its other rows stay zero). */
DEVICE_FN void aegis_fetch_fast(uint *v, LOCAL_PTR const ulong *start, GLOBAL_RO const uchar *buf, ulong pos,
                                uint rows)
{
#pragma unroll
    for (uint j = 0; j < AEGIS_TILE_WORDS; j++) {
        const uint k = LID + j * AEGIS_GROUP;
        const uint r = k / AEGIS_TILE_WORDS, w = k % AEGIS_TILE_WORDS;
        v[j] = r < rows ? *(GLOBAL_RO const uint *)(buf + (start[r] + pos + 4u * w)) : 0u;
    }
}

DEVICE_FN void aegis_store_fast(LOCAL_PTR const uint *tile, LOCAL_PTR const ulong *start, GLOBAL uchar *buf,
                                ulong pos, uint rows)
{
#pragma unroll
    for (uint j = 0; j < AEGIS_TILE_WORDS; j++) {
        const uint k = LID + j * AEGIS_GROUP;
        const uint r = k / AEGIS_TILE_WORDS, w = k % AEGIS_TILE_WORDS;
        if (r < rows) *(GLOBAL uint *)(buf + (start[r] + pos + 4u * w)) = tile[r * AEGIS_ROW + w];
    }
}

/* the number of leading tiles that every message of the work-group's first `rows` rows fills,
 * all of them starting word-aligned (0 if one does not).  (Counting the empty rows past the
 * batch's end made a whole work-group take the checked copies: a batch of 3872 x 16 KiB ran
 * 2.6x slower than one of 4096, H100, 2026-11-27.) */
DEVICE_FN ulong aegis_group_fast(LOCAL_PTR const ulong *start, LOCAL_PTR const ulong *len, uint rows)
{
    ulong least = ~(ulong)0;
    for (uint r = 0; r < rows; r++) {
        const ulong f = (start[r] & 3u) ? 0 : len[r] / AEGIS_TILE_BYTES;
        least = f < least ? f : least;
    }
    return least;
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
DEVICE_FN void aegis_tile(uint *S, LOCAL_PTR uint *row, ulong rem, uint mode, AEGIS_TAB_PTR tab, uint stride)
{
    for (uint b = 0; b < AEGIS_TILE_BLOCKS; b++) {
        if ((ulong)(32u * b) >= rem) break;
        LOCAL_PTR uint *xr = row + 8u * b;
        const ulong left = rem - 32u * b;
        uint x[8];
#pragma unroll
        for (int w = 0; w < 8; w++) x[w] = xr[w];
        aegis_block(S, x, left < 32u ? (uint)left : 32u, mode, tab, stride);
        if (mode != AEGIS_ABSORB) {
#pragma unroll
            for (int w = 0; w < 8; w++) xr[w] = x[w];
        }
    }
}

/* the longest len[] of the work-group, in tiles */
DEVICE_FN ulong aegis_group_tiles(LOCAL_PTR const ulong *len)
{
    ulong most = 0;
    for (uint r = 0; r < AEGIS_GROUP; r++) most = len[r] > most ? len[r] : most;
    return (most + (AEGIS_TILE_BYTES - 1)) / AEGIS_TILE_BYTES;
}

#else
/* ---- direct: each work-item reads and writes its own message, one block ahead ---- */

/* x = the n (>= 1) bytes of buf at byte offset g, zero past them: aligned word loads (the one
 * past the last byte of an unaligned run is inside the buffers' 8 bytes of padding) */
DEVICE_FN void aegis_load_words(uint *x, GLOBAL_RO const uchar *buf, ulong g, uint n)
{
    GLOBAL_RO const uint *w32 = (GLOBAL_RO const uint *)buf;
    const ulong a = g >> 2;
    const uint sh = 8u * (uint)(g & 3u);
#pragma unroll
    for (uint w = 0; w < 8u; w++) {
        uint v = 0u;
        if (4u * w < n) {
            v = w32[a + w];
            if (sh) v = (v >> sh) | (w32[a + w + 1] << (32u - sh));
            if (n - 4u * w < 4u) v &= (1u << (8u * (n - 4u * w))) - 1u;
        }
        x[w] = v;
    }
}

/* the first n (1..32) bytes of x to buf at byte offset g: whole words when g is word-aligned
 * and n = 32, else single bytes (the neighbouring bytes belong to other messages) */
DEVICE_FN void aegis_store_bytes(GLOBAL uchar *buf, ulong g, const uint *x, uint n)
{
    if ((g & 3u) == 0 && n == 32u) {
        GLOBAL uint *w32 = (GLOBAL uint *)(buf + g);
#pragma unroll
        for (int w = 0; w < 8; w++) w32[w] = x[w];
    } else {
#pragma unroll
        for (uint b = 0; b < 32u; b++)
            if (b < n) buf[g + b] = (uchar)(x[b >> 2] >> (8u * (b & 3u)));
    }
}

DEVICE_FN void aegis_load16(uint *x, GLOBAL_RO const uchar *p)
{
    const uint4 v0 = *(GLOBAL_RO const uint4 *)p;
    const uint4 v1 = *(GLOBAL_RO const uint4 *)(p + 16);
    x[0] = v0.x; x[1] = v0.y; x[2] = v0.z; x[3] = v0.w;
    x[4] = v1.x; x[5] = v1.y; x[6] = v1.z; x[7] = v1.w;
}

/* Absorb (mode AEGIS_ABSORB: src only) or Enc/Dec the n bytes of src at byte offset g0 (-> dst
 * at the same offset).  Messages that start 16-byte aligned (the buffers are) take the fast way:
 * two 16-byte loads per block, issued one block ahead so that they fly while the block before
 * runs, and two 16-byte stores; the others and the last partial block take word loads and byte
 * stores. */
DEVICE_FN void aegis_run(uint *S, GLOBAL_RO const uchar *src, GLOBAL uchar *dst, ulong g0, ulong n,
                         uint mode, AEGIS_TAB_PTR tab, uint stride)
{
    const ulong full = n >> 5;
    const int vec = (g0 & 15u) == 0;
    uint nx[8];
    if (vec && full) aegis_load16(nx, src + g0);
#if AEGIS_UNROLL > 1 && (defined(__CUDACC__) || defined(cl_nv_pragma_unroll))
#pragma unroll AEGIS_UNROLL
#endif
    for (ulong b = 0; b < full; b++) {
        const ulong g = g0 + 32u * b;
        uint x[8];
        if (vec) {
#pragma unroll
            for (int w = 0; w < 8; w++) x[w] = nx[w];
            if (b + 1 < full) aegis_load16(nx, src + g + 32u);
        } else {
            aegis_load_words(x, src, g, 32u);
        }
        aegis_block(S, x, 32u, mode, tab, stride);
        if (mode != AEGIS_ABSORB) {
            if (vec) {
                *(GLOBAL uint4 *)(dst + g) = MAKE_UINT4(x[0], x[1], x[2], x[3]);
                *(GLOBAL uint4 *)(dst + g + 16u) = MAKE_UINT4(x[4], x[5], x[6], x[7]);
            } else {
                aegis_store_bytes(dst, g, x, 32u);
            }
        }
    }
    const uint left = (uint)(n & 31u);
    if (left) {
        const ulong g = g0 + (full << 5);
        uint x[8];
        if (vec && left >= 16u) {   /* e.g. 16 bytes of AAD: one 16-byte load, not four words */
            GLOBAL_RO const uint *w32 = (GLOBAL_RO const uint *)(src + g);
            const uint4 v0 = *(GLOBAL_RO const uint4 *)(src + g);
            x[0] = v0.x; x[1] = v0.y; x[2] = v0.z; x[3] = v0.w;
#pragma unroll
            for (uint w = 4; w < 8u; w++) {
                uint v = 0u;
                if (4u * w < left) {
                    v = w32[w];
                    if (left - 4u * w < 4u) v &= (1u << (8u * (left - 4u * w))) - 1u;
                }
                x[w] = v;
            }
        } else {
            aegis_load_words(x, src, g, left);
        }
        aegis_block(S, x, left, mode, tab, stride);
        if (mode != AEGIS_ABSORB) aegis_store_bytes(dst, g, x, left);
    }
}
#endif

/* One batch, one direction.  Message i (i < m): key keys[4 key_index[i] ..], nonce nonces[4 i ..],
 * AAD aad[aad_off[i] .. aad_off[i + 1]), text src[off[i] .. off[i + 1]) -> dst (same offsets);
 * its tag (tag_words words: 4 or 8) -> tags[tag_words i ..].  decrypt: 0 encrypts, 1 decrypts.
 * Launch with exactly AEGIS_GROUP work-items per work-group, ceil(m / AEGIS_GROUP) groups. */
KERNEL void aegis128l_batch(GLOBAL_RO const uint *RESTRICT keys, GLOBAL_RO const int *RESTRICT key_index,
                            GLOBAL_RO const uint *RESTRICT nonces, GLOBAL_RO const uchar *RESTRICT aad,
                            GLOBAL_RO const ulong *RESTRICT aad_off, GLOBAL_RO const uchar *RESTRICT src,
                            GLOBAL uchar *RESTRICT dst, GLOBAL_RO const ulong *RESTRICT off,
                            GLOBAL uint *RESTRICT tags, uint base, uint m, uint decrypt,
                            uint tag_words, uint stride)
{
#if AEGIS_TABLE_LOCAL
    LOCAL_VAR uint aegis_tab[AEGIS_TAB_WORDS];
    for (uint k = LID; k < (uint)AEGIS_TAB_WORDS; k += AEGIS_GROUP) {
        const uint v = AEGIS_T0[k / (AEGIS_COPIES * AEGIS_TABLES)];
        aegis_tab[k] = (k / AEGIS_COPIES) % AEGIS_TABLES ? ROTL32(v, 8) : v;
    }
#if AEGIS_MAD && defined(__CUDACC__)
    AEGIS_TAB_PTR tab = aegis_shared_addr(aegis_tab) + 4u * (LID & (AEGIS_COPIES - 1u));
#else
    AEGIS_TAB_PTR tab = (LOCAL_PTR const uchar *)aegis_tab + 4u * (LID & (AEGIS_COPIES - 1u));
#endif
#else
    AEGIS_TAB_PTR tab = (CONST_PTR const uchar *)AEGIS_T0;
#endif
    const ulong i = base + GID;                 /* messages [base, m): a slice */
    const int active = i < (ulong)m;
    uint S[32];
#if AEGIS_STAGE
    LOCAL_VAR uint aegis_tilebuf[AEGIS_GROUP * AEGIS_ROW];
    LOCAL_VAR ulong aegis_start[AEGIS_GROUP];
    LOCAL_VAR ulong aegis_len[AEGIS_GROUP];
    LOCAL_PTR uint *row = aegis_tilebuf + LID * AEGIS_ROW;
#endif
    BARRIER();
#if !AEGIS_STAGE
    if (!active) return;
#endif

    ulong ad_len = 0, msg_len = 0, start = 0;
    if (active) {
        uint k[4], nv[4];
        const ulong ki = (ulong)(uint)key_index[i];
#pragma unroll
        for (int w = 0; w < 4; w++) { k[w] = keys[4u * ki + w]; nv[w] = nonces[4u * i + w]; }
        aegis_init(S, k, nv, tab, stride);
#pragma unroll
        for (int w = 0; w < 4; w++) k[w] = 0u;
        start = aad_off[i];
        ad_len = aad_off[i + 1] - start;
    }
    const uint mode = decrypt ? AEGIS_DEC : AEGIS_ENC;

#if AEGIS_STAGE == 2
    /* software-pipelined staging: tile t + 1's loads are issued before tile t is computed; the
     * tiles below `fast` take the lean copies */
    uint pre[AEGIS_TILE_WORDS];
    const ulong first = base + GROUP_ID * AEGIS_GROUP;
    const uint rows = (ulong)m - first < (ulong)AEGIS_GROUP ? (uint)((ulong)m - first) : AEGIS_GROUP;
    aegis_start[LID] = start;
    aegis_len[LID] = ad_len;
    BARRIER();
    ulong tiles = aegis_group_tiles(aegis_len);
    ulong fast = aegis_group_fast(aegis_start, aegis_len, rows);
    if (fast) aegis_fetch_fast(pre, aegis_start, aad, 0, rows);
    else if (tiles) aegis_stage_fetch(pre, aegis_start, aegis_len, aad, 0);
    for (ulong t = 0; t < tiles; t++) {
        const ulong pos = t * AEGIS_TILE_BYTES;
        aegis_stage_put(aegis_tilebuf, pre);
        BARRIER();
        if (t + 1 < fast) aegis_fetch_fast(pre, aegis_start, aad, pos + AEGIS_TILE_BYTES, rows);
        else if (t + 1 < tiles) aegis_stage_fetch(pre, aegis_start, aegis_len, aad, pos + AEGIS_TILE_BYTES);
        if (pos < ad_len) aegis_tile(S, row, ad_len - pos, AEGIS_ABSORB, tab, stride);
        BARRIER();
    }
    if (active) {
        start = off[i];
        msg_len = off[i + 1] - start;
    }
    BARRIER();   /* every work-item has read aegis_start and aegis_len for the AAD */
    aegis_start[LID] = start;
    aegis_len[LID] = msg_len;
    BARRIER();
    tiles = aegis_group_tiles(aegis_len);
    fast = aegis_group_fast(aegis_start, aegis_len, rows);
    if (fast) aegis_fetch_fast(pre, aegis_start, src, 0, rows);
    else if (tiles) aegis_stage_fetch(pre, aegis_start, aegis_len, src, 0);
    for (ulong t = 0; t < tiles; t++) {
        const ulong pos = t * AEGIS_TILE_BYTES;
        aegis_stage_put(aegis_tilebuf, pre);
        BARRIER();
        if (t + 1 < fast) aegis_fetch_fast(pre, aegis_start, src, pos + AEGIS_TILE_BYTES, rows);
        else if (t + 1 < tiles) aegis_stage_fetch(pre, aegis_start, aegis_len, src, pos + AEGIS_TILE_BYTES);
        if (pos < msg_len) aegis_tile(S, row, msg_len - pos, mode, tab, stride);
        BARRIER();
        if (t < fast) aegis_store_fast(aegis_tilebuf, aegis_start, dst, pos, rows);
        else aegis_stage_store(aegis_tilebuf, aegis_start, aegis_len, dst, pos);
        BARRIER();
    }
    if (!active) return;
#elif AEGIS_STAGE
    /* associated data: Absorb */
    aegis_start[LID] = start;
    aegis_len[LID] = ad_len;
    BARRIER();
    ulong tiles = aegis_group_tiles(aegis_len);
    for (ulong t = 0; t < tiles; t++) {
        const ulong pos = t * AEGIS_TILE_BYTES;
        aegis_stage_load(aegis_tilebuf, aegis_start, aegis_len, aad, pos);
        BARRIER();
        if (pos < ad_len) aegis_tile(S, row, ad_len - pos, AEGIS_ABSORB, tab, stride);
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
    for (ulong t = 0; t < tiles; t++) {
        const ulong pos = t * AEGIS_TILE_BYTES;
        aegis_stage_load(aegis_tilebuf, aegis_start, aegis_len, src, pos);
        BARRIER();
        if (pos < msg_len) aegis_tile(S, row, msg_len - pos, mode, tab, stride);
        BARRIER();
        aegis_stage_store(aegis_tilebuf, aegis_start, aegis_len, dst, pos);
        BARRIER();
    }
    if (!active) return;
#else
    aegis_run(S, aad, dst, start, ad_len, AEGIS_ABSORB, tab, stride);
    start = off[i];
    msg_len = off[i + 1] - start;
    /* one inlined copy per direction: the mode is a constant in each loop */
    if (mode == AEGIS_DEC) aegis_run(S, src, dst, start, msg_len, AEGIS_DEC, tab, stride);
    else aegis_run(S, src, dst, start, msg_len, AEGIS_ENC, tab, stride);
#endif

    /* Finalize */
    const ulong ad_bits = ad_len << 3, msg_bits = msg_len << 3;
    uint tv[4];
    tv[0] = S[8] ^ (uint)ad_bits;
    tv[1] = S[9] ^ (uint)(ad_bits >> 32);
    tv[2] = S[10] ^ (uint)msg_bits;
    tv[3] = S[11] ^ (uint)(msg_bits >> 32);
    for (int r = 0; r < 7; r++) aegis_update(S, tv, tv, tab, stride);
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
