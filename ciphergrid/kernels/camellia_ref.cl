/* camellia_ref.cl - Camellia (RFC 3713), the "reference" implementation: a straight transcription
 * of the specification for the generic mode kernels (modes.cl).  No tuning: one block per
 * work-item (grid "per-block"), the byte S-boxes of RFC 3713 section 2.4.4, the 64-bit halves of
 * section 2.3, subkeys read from device memory at each use.
 *
 * Subkeys (ciphergrid/algorithms/camellia.py): 32-bit values, the high half of a 64-bit subkey
 * first, in the order of use:  kw1 kw2 | k1 .. k(CAM_ROUNDS) | ke1 .. ke(2F) | kw3 kw4.  The host
 * passes them in reverse order for decryption (RFC 3713 section 2.3.3), so one block function
 * serves both directions.  CAM_ROUNDS (18 or 24) comes from the cipher's defines().
 *
 * Block convention: the generic kernels hold a block as 4 little-endian words of its bytes;
 * Camellia reads the block as a big-endian 128-bit number M, D1 = M >> 64, D2 = M & MASK64.
 *
 * Table indexed by secret data: NOT constant time.
 */
#define CG_BLOCK_WORDS 4
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef CAM_ROUNDS
#error "CAM_ROUNDS comes from the cipher's defines()"
#endif
#define CAMR_NFL (CAM_ROUNDS / 6 - 1)       /* FL / FL^-1 layers: 2 or 3 */

/* SBOX1, RFC 3713 section 2.4.4 */
CONST_TABLE uchar CAMR_SBOX1[256] = {
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

DEVICE_FN uint camr_rotl8(uint x, uint s)
{
    return ((x << s) | (x >> (8u - s))) & 0xffu;
}

/* SBOX2..SBOX4 as RFC 3713 section 2.4.4 defines them from SBOX1 */
DEVICE_FN uint camr_s1(uint x) { return CAMR_SBOX1[x]; }
DEVICE_FN uint camr_s2(uint x) { return camr_rotl8(CAMR_SBOX1[x], 1u); }
DEVICE_FN uint camr_s3(uint x) { return camr_rotl8(CAMR_SBOX1[x], 7u); }
DEVICE_FN uint camr_s4(uint x) { return CAMR_SBOX1[camr_rotl8(x, 1u)]; }

/* the 64-bit subkey number i of the schedule */
DEVICE_FN ulong camr_key(GLOBAL_RO const uint *k, int i)
{
    return ((ulong)k[2 * i] << 32) | (ulong)k[2 * i + 1];
}

/* F-function, RFC 3713 section 2.4.1 */
DEVICE_FN ulong camr_f(ulong f_in, ulong ke)
{
    ulong x = f_in ^ ke;
    uint t1 = camr_s1((uint)(x >> 56) & 0xffu);
    uint t2 = camr_s2((uint)(x >> 48) & 0xffu);
    uint t3 = camr_s3((uint)(x >> 40) & 0xffu);
    uint t4 = camr_s4((uint)(x >> 32) & 0xffu);
    uint t5 = camr_s2((uint)(x >> 24) & 0xffu);
    uint t6 = camr_s3((uint)(x >> 16) & 0xffu);
    uint t7 = camr_s4((uint)(x >> 8) & 0xffu);
    uint t8 = camr_s1((uint)x & 0xffu);
    uint y1 = t1 ^ t3 ^ t4 ^ t6 ^ t7 ^ t8;
    uint y2 = t1 ^ t2 ^ t4 ^ t5 ^ t7 ^ t8;
    uint y3 = t1 ^ t2 ^ t3 ^ t5 ^ t6 ^ t8;
    uint y4 = t2 ^ t3 ^ t4 ^ t5 ^ t6 ^ t7;
    uint y5 = t1 ^ t2 ^ t6 ^ t7 ^ t8;
    uint y6 = t2 ^ t3 ^ t5 ^ t7 ^ t8;
    uint y7 = t3 ^ t4 ^ t5 ^ t6 ^ t8;
    uint y8 = t1 ^ t4 ^ t5 ^ t6 ^ t7;
    return ((ulong)y1 << 56) | ((ulong)y2 << 48) | ((ulong)y3 << 40) | ((ulong)y4 << 32) |
           ((ulong)y5 << 24) | ((ulong)y6 << 16) | ((ulong)y7 << 8) | (ulong)y8;
}

DEVICE_FN uint camr_rotl32(uint x, uint n)
{
    return (x << n) | (x >> (32u - n));
}

/* FL, RFC 3713 section 2.4.2 */
DEVICE_FN ulong camr_fl(ulong fl_in, ulong ke)
{
    uint x1 = (uint)(fl_in >> 32), x2 = (uint)fl_in;
    uint k1 = (uint)(ke >> 32), k2 = (uint)ke;
    x2 = x2 ^ camr_rotl32(x1 & k1, 1u);
    x1 = x1 ^ (x2 | k2);
    return ((ulong)x1 << 32) | (ulong)x2;
}

/* FL^-1, RFC 3713 section 2.4.3 */
DEVICE_FN ulong camr_flinv(ulong flinv_in, ulong ke)
{
    uint y1 = (uint)(flinv_in >> 32), y2 = (uint)flinv_in;
    uint k1 = (uint)(ke >> 32), k2 = (uint)ke;
    y1 = y1 ^ (y2 | k2);
    y2 = y2 ^ camr_rotl32(y1 & k1, 1u);
    return ((ulong)y1 << 32) | (ulong)y2;
}

DEVICE_FN ulong camr_load_be64(const uint *w)
{
    return ((ulong)BSWAP32(w[0]) << 32) | (ulong)BSWAP32(w[1]);
}

DEVICE_FN void camr_store_be64(uint *w, ulong v)
{
    w[0] = BSWAP32((uint)(v >> 32));
    w[1] = BSWAP32((uint)v);
}

/* RFC 3713 section 2.3.2 (data randomizing), for either schedule order */
DEVICE_FN void camr_block(uint *s, GLOBAL_RO const uint *k)
{
    ulong d1 = camr_load_be64(s), d2 = camr_load_be64(s + 2);
    d1 ^= camr_key(k, 0);                                /* prewhitening: kw1, kw2 */
    d2 ^= camr_key(k, 1);
    for (int r = 0; r < CAM_ROUNDS; r += 2) {
        if (r && r % 6 == 0) {                           /* FL / FL^-1 after every six rounds */
            int l = r / 6 - 1;
            d1 = camr_fl(d1, camr_key(k, 2 + CAM_ROUNDS + 2 * l));
            d2 = camr_flinv(d2, camr_key(k, 3 + CAM_ROUNDS + 2 * l));
        }
        d2 ^= camr_f(d1, camr_key(k, 2 + r));
        d1 ^= camr_f(d2, camr_key(k, 3 + r));
    }
    d2 ^= camr_key(k, 2 + CAM_ROUNDS + 2 * CAMR_NFL);   /* postwhitening: kw3, kw4 */
    d1 ^= camr_key(k, 3 + CAM_ROUNDS + 2 * CAMR_NFL);
    camr_store_be64(s, d2);                              /* C = D2 || D1 */
    camr_store_be64(s + 2, d1);
}

/* the kernels name their key parameter differently (k, rk, ek, k1, ...): the setup gives it one name */
#define CG_ENC_LOCALS
#define CG_ENC_SETUP(rk) GLOBAL_RO const uint *camr_k = (rk);
#define CG_ENC_PARAMS , GLOBAL_RO const uint *rk
#define CG_ENC_ARGS , camr_k
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(dk) GLOBAL_RO const uint *camr_k = (dk);
#define CG_DEC_PARAMS , GLOBAL_RO const uint *dk
#define CG_DEC_ARGS , camr_k

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) camr_block(s + 4 * b, rk);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) camr_block(s + 4 * b, dk);
}
