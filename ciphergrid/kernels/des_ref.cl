/* des_ref.cl - DES (FIPS 46-3) and TDEA (NIST SP 800-67) block functions, the "reference"
 * implementation: FIPS 46-3 transcribed bit by bit, one block per work-item, no tuning.
 *
 * A block is 2 little-endian words of its bytes; FIPS 46-3 numbers the bits of the block 1..64
 * from the most significant bit of byte 0, so the block is read as one big-endian 64-bit value.
 * Each of the DES_PASSES passes (1: DES, 3: TDEA, a define from ciphers/des.py) is a whole DES
 * operation: IP, 16 rounds L' = R, R' = L ^ f(R, K_n), the halves swapped back, IP^-1.  The host
 * sends 16 round keys per pass in the order the rounds use them (reversed for a decrypting pass),
 * two words each: bits 1..24 and 25..48 of K_n.  Decryption is the same function on the
 * decryption schedule.
 *
 * The tables are those of FIPS 46-3 (the bit numbers of IP, IP^-1, E and P; the S-boxes in its
 * row/column layout), as ciphers/des.py writes them.
 *
 * SECURITY: table lookups indexed by secret data; not constant-time.
 */
#define CG_BLOCK_WORDS 2
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef DES_PASSES
#error "DES_PASSES comes from the cipher's defines()"
#endif

CONST_TABLE uchar DESR_IP[64] = {
    58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4,
    62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
    57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3,
    61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
};
CONST_TABLE uchar DESR_FP[64] = {
    40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31,
    38, 6, 46, 14, 54, 22, 62, 30, 37, 5, 45, 13, 53, 21, 61, 29,
    36, 4, 44, 12, 52, 20, 60, 28, 35, 3, 43, 11, 51, 19, 59, 27,
    34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25,
};
CONST_TABLE uchar DESR_E[48] = {
    32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11,
    12, 13, 12, 13, 14, 15, 16, 17, 16, 17, 18, 19, 20, 21, 20, 21,
    22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1,
};
CONST_TABLE uchar DESR_P[32] = {
    16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10,
    2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25,
};
CONST_TABLE uchar DESR_S[512] = {
    14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7,
    0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
    4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0,
    15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13,
    15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10,
    3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
    0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15,
    13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9,
    10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8,
    13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
    13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7,
    1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12,
    7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15,
    13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
    10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4,
    3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14,
    2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9,
    14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
    4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14,
    11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3,
    12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11,
    10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
    9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6,
    4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13,
    4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1,
    13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
    1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2,
    6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12,
    13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7,
    1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
    7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8,
    2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11,
};

/* the bits of v (width bits, bit 1 the most significant) picked by table t of n entries */
DEVICE_FN ulong desr_permute(ulong v, CONST_PTR const uchar *t, int n, int width)
{
    ulong out = 0;
    for (int i = 0; i < n; i++)
        out = (out << 1) | ((v >> (width - t[i])) & 1u);
    return out;
}

/* f(R, K): E, the key added, S_1 .. S_8 (row = bits 1 and 6 of the group, column = bits 2..5), P */
DEVICE_FN uint desr_f(uint r, ulong k)
{
    ulong x = desr_permute(r, DESR_E, 48, 32) ^ k;
    uint s = 0;
    for (int j = 0; j < 8; j++) {
        uint b = (uint)(x >> (42 - 6 * j)) & 63u;
        uint row = ((b >> 4) & 2u) | (b & 1u), col = (b >> 1) & 15u;
        s = (s << 4) | DESR_S[64 * j + 16 * row + col];
    }
    return (uint)desr_permute(s, DESR_P, 32, 32);
}

DEVICE_FN void desr_block(uint *s, GLOBAL_RO const uint *ks)
{
    ulong v = ((ulong)BSWAP32(s[0]) << 32) | BSWAP32(s[1]);
    for (int p = 0; p < DES_PASSES; p++) {
        v = desr_permute(v, DESR_IP, 64, 64);
        uint l = (uint)(v >> 32), r = (uint)v;
        for (int n = 0; n < 16; n++) {
            ulong k = ((ulong)ks[32 * p + 2 * n] << 24) | ks[32 * p + 2 * n + 1];
            uint t = l ^ desr_f(r, k);
            l = r;
            r = t;
        }
        v = desr_permute(((ulong)r << 32) | l, DESR_FP, 64, 64);  /* R16 L16, then IP^-1 */
    }
    s[0] = BSWAP32((uint)(v >> 32));
    s[1] = BSWAP32((uint)v);
}

#define CG_ENC_LOCALS
#define CG_ENC_SETUP(rk) GLOBAL_RO const uint *desr_k = (rk);
#define CG_ENC_PARAMS , GLOBAL_RO const uint *ks
#define CG_ENC_ARGS , desr_k
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(dk) GLOBAL_RO const uint *desr_k = (dk);
#define CG_DEC_PARAMS , GLOBAL_RO const uint *ks
#define CG_DEC_ARGS , desr_k

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) desr_block(s + 2 * b, ks);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) desr_block(s + 2 * b, ks);
}
