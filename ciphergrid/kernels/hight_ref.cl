/* hight_ref.cl - HIGHT ("reference"): the specification (TTAS.KO-12.0040/R1, ISO/IEC 18033-3)
 * transcribed byte by byte, one block per work-item; constant-time (HIGHT has no tables).
 *
 * Block bytes P0..P7 are the block's bytes in memory order (ciphergrid/algorithms/hight.py: the
 * specification prints them P7..P0), so word 0 holds P0..P3 and word 1 P4..P7, little-endian.
 * Keys (the host's plain layout): the bytes WK0..WK7, SK0..SK127 as 34 little-endian words.
 * Decryption uses the same keys (the host's decryption schedule is the same array).
 */

#define CG_BLOCK_WORDS 2

/* byte j of WK0..WK7 SK0..SK127 */
#define HIGHT_KB(k, j) (((k)[(j) >> 2] >> (8 * ((j) & 3))) & 0xffu)
#define HIGHT_WK(k, i) HIGHT_KB(k, (i))
#define HIGHT_SK(k, i) HIGHT_KB(k, 8 + (i))

#define CG_ENC_LOCALS
#define CG_ENC_SETUP(rk) GLOBAL_RO const uint *hight_keys = (rk);
#define CG_ENC_PARAMS , GLOBAL_RO const uint *hk
#define CG_ENC_ARGS , hight_keys

#define CG_DEC_LOCALS
#define CG_DEC_SETUP(dk) GLOBAL_RO const uint *hight_keys = (dk);
#define CG_DEC_PARAMS , GLOBAL_RO const uint *hk
#define CG_DEC_ARGS , hight_keys

DEVICE_FN uint hight_rotl8(uint x, uint n)
{
    return ((x << n) | (x >> (8u - n))) & 0xffu;
}

/* the two byte functions: F0(x) = x<<<1 ^ x<<<2 ^ x<<<7, F1(x) = x<<<3 ^ x<<<4 ^ x<<<6 */
DEVICE_FN uint hight_f0(uint x)
{
    return hight_rotl8(x, 1) ^ hight_rotl8(x, 2) ^ hight_rotl8(x, 7);
}

DEVICE_FN uint hight_f1(uint x)
{
    return hight_rotl8(x, 3) ^ hight_rotl8(x, 4) ^ hight_rotl8(x, 6);
}

DEVICE_FN void hight_ref_unpack(const uint *s, uint *b)
{
    for (int j = 0; j < 8; j++) b[j] = (s[j >> 2] >> (8 * (j & 3))) & 0xffu;
}

DEVICE_FN void hight_ref_pack(const uint *b, uint *s)
{
    s[0] = b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24);
    s[1] = b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24);
}

DEVICE_FN void hight_ref_encrypt(uint *s, GLOBAL_RO const uint *hk)
{
    uint P[8], X[8], Y[8];
    hight_ref_unpack(s, P);
    /* initial transformation */
    X[0] = (P[0] + HIGHT_WK(hk, 0)) & 0xffu;
    X[1] = P[1];
    X[2] = P[2] ^ HIGHT_WK(hk, 1);
    X[3] = P[3];
    X[4] = (P[4] + HIGHT_WK(hk, 2)) & 0xffu;
    X[5] = P[5];
    X[6] = P[6] ^ HIGHT_WK(hk, 3);
    X[7] = P[7];
    /* rounds 0..30: round function, then the byte rotation */
    for (int i = 0; i < 31; i++) {
        Y[1] = X[0];
        Y[3] = X[2];
        Y[5] = X[4];
        Y[7] = X[6];
        Y[0] = X[7] ^ ((hight_f0(X[6]) + HIGHT_SK(hk, 4 * i + 3)) & 0xffu);
        Y[2] = (X[1] + (hight_f1(X[0]) ^ HIGHT_SK(hk, 4 * i))) & 0xffu;
        Y[4] = X[3] ^ ((hight_f0(X[2]) + HIGHT_SK(hk, 4 * i + 1)) & 0xffu);
        Y[6] = (X[5] + (hight_f1(X[4]) ^ HIGHT_SK(hk, 4 * i + 2))) & 0xffu;
        for (int j = 0; j < 8; j++) X[j] = Y[j];
    }
    /* round 31: no rotation */
    X[1] = (X[1] + (hight_f1(X[0]) ^ HIGHT_SK(hk, 124))) & 0xffu;
    X[3] = X[3] ^ ((hight_f0(X[2]) + HIGHT_SK(hk, 125)) & 0xffu);
    X[5] = (X[5] + (hight_f1(X[4]) ^ HIGHT_SK(hk, 126))) & 0xffu;
    X[7] = X[7] ^ ((hight_f0(X[6]) + HIGHT_SK(hk, 127)) & 0xffu);
    /* final transformation */
    P[0] = (X[0] + HIGHT_WK(hk, 4)) & 0xffu;
    P[1] = X[1];
    P[2] = X[2] ^ HIGHT_WK(hk, 5);
    P[3] = X[3];
    P[4] = (X[4] + HIGHT_WK(hk, 6)) & 0xffu;
    P[5] = X[5];
    P[6] = X[6] ^ HIGHT_WK(hk, 7);
    P[7] = X[7];
    hight_ref_pack(P, s);
}

DEVICE_FN void hight_ref_decrypt(uint *s, GLOBAL_RO const uint *hk)
{
    uint C[8], X[8], Y[8];
    hight_ref_unpack(s, C);
    /* the final transformation undone */
    X[0] = (C[0] - HIGHT_WK(hk, 4)) & 0xffu;
    X[1] = C[1];
    X[2] = C[2] ^ HIGHT_WK(hk, 5);
    X[3] = C[3];
    X[4] = (C[4] - HIGHT_WK(hk, 6)) & 0xffu;
    X[5] = C[5];
    X[6] = C[6] ^ HIGHT_WK(hk, 7);
    X[7] = C[7];
    /* round 31 undone */
    X[1] = (X[1] - (hight_f1(X[0]) ^ HIGHT_SK(hk, 124))) & 0xffu;
    X[3] = X[3] ^ ((hight_f0(X[2]) + HIGHT_SK(hk, 125)) & 0xffu);
    X[5] = (X[5] - (hight_f1(X[4]) ^ HIGHT_SK(hk, 126))) & 0xffu;
    X[7] = X[7] ^ ((hight_f0(X[6]) + HIGHT_SK(hk, 127)) & 0xffu);
    /* rounds 30..0 undone: the rotation back, then the round function inverted */
    for (int i = 30; i >= 0; i--) {
        Y[0] = X[1];
        Y[2] = X[3];
        Y[4] = X[5];
        Y[6] = X[7];
        Y[7] = X[0] ^ ((hight_f0(Y[6]) + HIGHT_SK(hk, 4 * i + 3)) & 0xffu);
        Y[1] = (X[2] - (hight_f1(Y[0]) ^ HIGHT_SK(hk, 4 * i))) & 0xffu;
        Y[3] = X[4] ^ ((hight_f0(Y[2]) + HIGHT_SK(hk, 4 * i + 1)) & 0xffu);
        Y[5] = (X[6] - (hight_f1(Y[4]) ^ HIGHT_SK(hk, 4 * i + 2))) & 0xffu;
        for (int j = 0; j < 8; j++) X[j] = Y[j];
    }
    /* the initial transformation undone */
    C[0] = (X[0] - HIGHT_WK(hk, 0)) & 0xffu;
    C[1] = X[1];
    C[2] = X[2] ^ HIGHT_WK(hk, 1);
    C[3] = X[3];
    C[4] = (X[4] - HIGHT_WK(hk, 2)) & 0xffu;
    C[5] = X[5];
    C[6] = X[6] ^ HIGHT_WK(hk, 3);
    C[7] = X[7];
    hight_ref_pack(C, s);
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) hight_ref_encrypt(s + 2 * b, hk);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) hight_ref_decrypt(s + 2 * b, hk);
}
