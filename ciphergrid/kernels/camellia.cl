/* camellia.cl - Camellia-128/192/256 (RFC 3713), the "fast" implementation for the generic mode
 * kernels (modes.cl).
 *
 * Subkeys (ciphergrid/algorithms/camellia.py): 32-bit values, the high half of each 64-bit subkey
 * first, in the order of use:  kw1 kw2 | k1 .. k(CAM_ROUNDS) | ke1 .. ke(2F) | kw3 kw4; the host
 * reverses them for decryption (RFC 3713 section 2.3.3), so both directions run one block
 * function on the same tables.  CAM_ROUNDS (18 or 24) comes from the cipher's defines().
 *
 * The F-function on 32-bit words.  With x = F_IN ^ KE split into bytes t1..t8 (t1 the most
 * significant) and SP tables that spread one S-box output over the bytes of a word (bytes listed
 * most significant first):
 *     SP1110[b] = (s1, s1, s1, 0)   SP0222[b] = (0, s2, s2, s2)
 *     SP3033[b] = (s3, 0, s3, s3)   SP4404[b] = (s4, s4, 0, s4)
 * the P-function of RFC 3713 section 2.4.1 becomes
 *     Q = SP1110[t1] ^ SP0222[t2] ^ SP3033[t3] ^ SP4404[t4]      (the left half's bytes)
 *     P = SP0222[t5] ^ SP3033[t6] ^ SP4404[t7] ^ SP1110[t8]      (the right half's bytes)
 *     F_OUT = (P ^ Q, P ^ Q ^ (Q >>> 8))
 * (the right half's bytes feed both output halves alike; the left half's feed the right output
 * half through Q ^ (Q >>> 8)).  8 lookups, 8 XORs and a rotation per round.  The tables are built
 * in work-group memory by every work-group from SBOX1 (RFC 3713 section 2.4.4), SBOX2..4 being
 * its rotations as the RFC defines them.
 *
 * Block convention: the generic kernels hold a block as 4 little-endian words of its bytes;
 * Camellia reads it big-endian (D1 = bytes 0..7), so a block is byte-swapped on entry and exit.
 *
 * Compile-time options (the implementations of ciphergrid/algorithms/camellia.py set them):
 *   CAM_COPIES        each SP table is held this many times in work-group memory, interleaved so that
 *                     copy c lies in banks c, c + COPIES, ...; lane l reads copy l % COPIES (as
 *                     aes.cl).  The four tables take 4 KiB per copy: 8 copies = 32 KiB (the static
 *                     shared-memory limit of CUDA is 48 KiB, so 16 copies do not fit there).
 *   CAM_PRMT          1: bytes are extracted and blocks byte-swapped with byte permutes (one
 *                     instruction on NVIDIA); 0: shifts and masks.
 *   CAM_KEYS_IN_REGS  1: the 52 / 68 subkey words are loaded once per work-item into registers;
 *                     0: read from device memory at each use.
 *   CG_BATCH          blocks per work-item per step.
 *
 * SECURITY: lookups indexed by secret state leak through shared-memory bank conflicts and timing;
 * this is NOT a constant-time implementation.
 */
#define CG_BLOCK_WORDS 4
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef CAM_ROUNDS
#error "CAM_ROUNDS comes from the cipher's defines()"
#endif
#ifndef CAM_COPIES
#define CAM_COPIES 8
#endif
#ifndef CAM_PRMT
#define CAM_PRMT 0
#endif
#ifndef CAM_KEYS_IN_REGS
#define CAM_KEYS_IN_REGS 1
#endif
#ifndef CAM_MAD_INDEX
#define CAM_MAD_INDEX 0
#endif

#define CAM_NFL (CAM_ROUNDS / 6 - 1)              /* FL / FL^-1 layers: 2 or 3 */
#define CAM_NRK (2 * (4 + CAM_ROUNDS + 2 * CAM_NFL)) /* subkey words: 52 or 68 */
/* word index of the high half of subkey kw1 / k(r+1) / ke(j+1) / kw3 */
#define CAM_KW1 0
#define CAM_K(r) (4 + 2 * (r))
#define CAM_KE(j) (4 + 2 * CAM_ROUNDS + 2 * (j))
#define CAM_KW3 (4 + 2 * CAM_ROUNDS + 4 * CAM_NFL)

/* SBOX1, RFC 3713 section 2.4.4 */
CONST_TABLE uchar CAM_SBOX1[256] = {
    0x70, 0x82, 0x2c, 0xec, 0xb3, 0x27, 0xc0, 0xe5, 0xe4, 0x85, 0x57, 0x35, 0xea, 0x0c, 0xae, 0x41,
    0x23, 0xef, 0x6b, 0x93, 0x45, 0x19, 0xa5, 0x21, 0xed, 0x0e, 0x4f, 0x4e, 0x1d, 0x65, 0x92, 0xbd,
    0x86, 0xb8, 0xaf, 0x8f, 0x7c, 0xeb, 0x1f, 0xce, 0x3e, 0x30, 0xdc, 0x5f, 0x5e, 0xc5, 0x0b, 0x1a,
    0xa6, 0xe1, 0x39, 0xca, 0xd5, 0x47, 0x5d, 0x3d, 0xd9, 0x01, 0x5a, 0xd6, 0x51, 0x56, 0x6c, 0x4d,
    0x8b, 0x0d, 0x9a, 0x66, 0xfb, 0xcc, 0xb0, 0x2d, 0x74, 0x12, 0x2b, 0x20, 0xf0, 0xb1, 0x84, 0x99,
    0xdf, 0x4c, 0xcb, 0xc2, 0x34, 0x7e, 0x76, 0x05, 0x6d, 0xb7, 0xa9, 0x31, 0xd1, 0x17, 0x04, 0xd7,
    0x14, 0x58, 0x3a, 0x61, 0xde, 0x1b, 0x11, 0x1c, 0x32, 0x0f, 0x9c, 0x16, 0x53, 0x18, 0xf2, 0x22,
    0xfe, 0x44, 0xcf, 0xb2, 0xc3, 0xb5, 0x7a, 0x91, 0x24, 0x08, 0xe8, 0xa8, 0x60, 0xfc, 0x69, 0x50,
    0xaa, 0xd0, 0xa0, 0x7d, 0xa1, 0x89, 0x62, 0x97, 0x54, 0x5b, 0x1e, 0x95, 0xe0, 0xff, 0x64, 0xd2,
    0x10, 0xc4, 0x00, 0x48, 0xa3, 0xf7, 0x75, 0xdb, 0x8a, 0x03, 0xe6, 0xda, 0x09, 0x3f, 0xdd, 0x94,
    0x87, 0x5c, 0x83, 0x02, 0xcd, 0x4a, 0x90, 0x33, 0x73, 0x67, 0xf6, 0xf3, 0x9d, 0x7f, 0xbf, 0xe2,
    0x52, 0x9b, 0xd8, 0x26, 0xc8, 0x37, 0xc6, 0x3b, 0x81, 0x96, 0x6f, 0x4b, 0x13, 0xbe, 0x63, 0x2e,
    0xe9, 0x79, 0xa7, 0x8c, 0x9f, 0x6e, 0xbc, 0x8e, 0x29, 0xf5, 0xf9, 0xb6, 0x2f, 0xfd, 0xb4, 0x59,
    0x78, 0x98, 0x06, 0x6a, 0xe7, 0x46, 0x71, 0xba, 0xd4, 0x25, 0xab, 0x42, 0x88, 0xa2, 0x8d, 0xfa,
    0x72, 0x07, 0xb9, 0x55, 0xf8, 0xee, 0xac, 0x0a, 0x36, 0x49, 0x2a, 0x68, 0x3c, 0x38, 0xf1, 0xa4,
    0x40, 0x28, 0xd3, 0x7b, 0xbb, 0xc9, 0x43, 0xc1, 0x15, 0xe3, 0xad, 0xf4, 0x77, 0xc7, 0x80, 0x9e
};

#if CAM_PRMT
#define CAM_B0(x) BYTE_PERM((x), 0u, 0x4440u)
#define CAM_B1(x) BYTE_PERM((x), 0u, 0x4441u)
#define CAM_B2(x) BYTE_PERM((x), 0u, 0x4442u)
#define CAM_B3(x) BYTE_PERM((x), 0u, 0x4443u)
#define CAM_BSWAP(x) BYTE_PERM((x), 0u, 0x0123u)
#else
#define CAM_B0(x) BYTE0(x)
#define CAM_B1(x) BYTE1(x)
#define CAM_B2(x) BYTE2(x)
#define CAM_B3(x) BYTE3(x)
#define CAM_BSWAP(x) BSWAP32(x)
#endif

/* the tables: SP1110, SP0222, SP3033, SP4404 (tb = 0..3), CAM_COPIES copies each, interleaved */
#define CAM_TSIZE (4 * 256 * CAM_COPIES)
/* CAM_MAD_INDEX 1: the lookup address is one multiply-add in bytes, lane + entry * (4 COPIES),
 * with lane = 4 * copy (as AES_MAD_INDEX in aes.cl: an IMAD on the FMA pipe instead of the IMAD
 * and a shift-add on the integer ALU); 0: a word index entry * COPIES + copy */
#if CAM_MAD_INDEX
#define CAM_LANE_UNIT 4u
#define CAM_SP(tb, b) (*(LOCAL_PTR const uint *)((LOCAL_PTR const uchar *)t + \
    (lane + ((tb) * 256u + (uint)(b)) * (4u * CAM_COPIES))))
#else
#define CAM_LANE_UNIT 1u
#define CAM_SP(tb, b) (t[((tb) * 256u + (uint)(b)) * CAM_COPIES + lane])
#endif

DEVICE_FN uint cam_rotl8(uint x, uint s)
{
    return ((x << s) | (x >> (8u - s))) & 0xffu;
}

/* entry k of the table block (table tb, byte b, copy k % CAM_COPIES) */
DEVICE_FN uint cam_table_entry(uint k)
{
    const uint tb = k / (256u * CAM_COPIES);
    const uint b = (k / CAM_COPIES) & 255u;
    if (tb == 0) return (uint)CAM_SBOX1[b] * 0x01010100u;                       /* s1: 1110 */
    if (tb == 1) return cam_rotl8(CAM_SBOX1[b], 1u) * 0x00010101u;              /* s2: 0222 */
    if (tb == 2) return cam_rotl8(CAM_SBOX1[b], 7u) * 0x01000101u;              /* s3: 3033 */
    return (uint)CAM_SBOX1[cam_rotl8(b, 1u)] * 0x01010001u;                     /* s4: 4404 */
}

#if CAM_KEYS_IN_REGS
#define CAM_RK_PTR const uint *
#define CAM_KEYS(rk) uint cam_rk[CAM_NRK]; cam_load_keys(cam_rk, rk);
DEVICE_FN void cam_load_keys(uint *dst, GLOBAL_RO const uint *RESTRICT src)
{
#pragma unroll
    for (int i = 0; i < CAM_NRK; i++) dst[i] = src[i];
}
#else
#define CAM_RK_PTR GLOBAL_RO const uint *RESTRICT
#define CAM_KEYS(rk) GLOBAL_RO const uint *cam_rk = (rk);
#endif

#define CAM_SETUP(rk)                                                    \
    for (uint cam_k = LID; cam_k < CAM_TSIZE; cam_k += LSIZE)            \
        cam_t[cam_k] = cam_table_entry(cam_k);                           \
    CAM_KEYS(rk)                                                         \
    const uint cam_lane = (LID & (CAM_COPIES - 1u)) * CAM_LANE_UNIT;     \
    BARRIER();

#define CG_ENC_LOCALS LOCAL_VAR uint cam_t[CAM_TSIZE];
#define CG_ENC_SETUP(rk) CAM_SETUP(rk)
#define CG_ENC_PARAMS , CAM_RK_PTR k, LOCAL_PTR const uint *t, uint lane
#define CG_ENC_ARGS , cam_rk, cam_t, cam_lane
#define CG_DEC_LOCALS CG_ENC_LOCALS
#define CG_DEC_SETUP(dk) CAM_SETUP(dk)
#define CG_DEC_PARAMS CG_ENC_PARAMS
#define CG_DEC_ARGS CG_ENC_ARGS

/* one round: (yh, yl) ^= F((xh, xl), subkey at word i) */
#define CAM_ROUND(xh, xl, yh, yl, i)                                                        \
    {                                                                                       \
        const uint ch = (xh) ^ k[(i)], cl = (xl) ^ k[(i) + 1];                              \
        const uint q = CAM_SP(0, CAM_B3(ch)) ^ CAM_SP(1, CAM_B2(ch)) ^                      \
                       CAM_SP(2, CAM_B1(ch)) ^ CAM_SP(3, CAM_B0(ch));                       \
        const uint p = CAM_SP(1, CAM_B3(cl)) ^ CAM_SP(2, CAM_B2(cl)) ^                      \
                       CAM_SP(3, CAM_B1(cl)) ^ CAM_SP(0, CAM_B0(cl)) ^ q;                   \
        (yh) ^= p;                                                                          \
        (yl) ^= p ^ ROTL32(q, 24);                                                          \
    }
/* rounds r+1 and r+2: D2 ^= F(D1, k(r+1)); D1 ^= F(D2, k(r+2)) */
#define CAM_PAIR(r) CAM_ROUND(d1h, d1l, d2h, d2l, CAM_K(r)) CAM_ROUND(d2h, d2l, d1h, d1l, CAM_K((r) + 1))
#define CAM_SIX(r) CAM_PAIR(r) CAM_PAIR((r) + 2) CAM_PAIR((r) + 4)
/* FL on D1 with ke(2j+1), FL^-1 on D2 with ke(2j+2) (RFC 3713 sections 2.4.2, 2.4.3) */
#define CAM_FL(j)                                                                           \
    {                                                                                       \
        d1l ^= ROTL32(d1h & k[CAM_KE(2 * (j))], 1);                                         \
        d1h ^= d1l | k[CAM_KE(2 * (j)) + 1];                                                \
        d2h ^= d2l | k[CAM_KE(2 * (j) + 1) + 1];                                            \
        d2l ^= ROTL32(d2h & k[CAM_KE(2 * (j) + 1)], 1);                                     \
    }

/* written out (no round loop): the subkey indices are constants, so "keys in registers" are */
DEVICE_FN void cam_block(uint *s, CAM_RK_PTR k, LOCAL_PTR const uint *t, uint lane)
{
    uint d1h = CAM_BSWAP(s[0]) ^ k[CAM_KW1], d1l = CAM_BSWAP(s[1]) ^ k[CAM_KW1 + 1];
    uint d2h = CAM_BSWAP(s[2]) ^ k[CAM_KW1 + 2], d2l = CAM_BSWAP(s[3]) ^ k[CAM_KW1 + 3];
    CAM_SIX(0)
    CAM_FL(0)
    CAM_SIX(6)
    CAM_FL(1)
    CAM_SIX(12)
#if CAM_ROUNDS == 24
    CAM_FL(2)
    CAM_SIX(18)
#endif
    /* postwhitening: D2 ^= kw3, D1 ^= kw4; C = D2 || D1 */
    s[0] = CAM_BSWAP(d2h ^ k[CAM_KW3]);
    s[1] = CAM_BSWAP(d2l ^ k[CAM_KW3 + 1]);
    s[2] = CAM_BSWAP(d1h ^ k[CAM_KW3 + 2]);
    s[3] = CAM_BSWAP(d1l ^ k[CAM_KW3 + 3]);
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) cam_block(s + 4 * b, k, t, lane);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) cam_block(s + 4 * b, k, t, lane);
}
