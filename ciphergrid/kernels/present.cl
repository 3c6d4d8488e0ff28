/* present.cl - PRESENT-80/128 (Bogdanov et al., CHES 2007; ISO/IEC 29192-2), implementation
 * "reference" of algorithms/present.py: a straight transcription of the paper, one block per
 * work-item, for the generic mode kernels (modes.cl).  Not constant time (the S-box is a table
 * indexed by secret data); the constant-time kernel is present_bs.cl.
 *
 * The paper's 64-bit state b63..b0 is the big-endian number of the 8 block bytes; the contract
 * gives the block as two little-endian words of its bytes, so state = BSWAP(w0) : BSWAP(w1).
 * Round keys (host layout, PRESENT.expand): K_1 .. K_32 as (high word, low word) pairs, in the
 * order of the direction (decryption: K_32 first).
 *
 *   encryption:  for i = 1..31 { addRoundKey(K_i); sBoxLayer; pLayer }  addRoundKey(K_32)
 *   decryption:  addRoundKey(K_32); for i = 31..1 { pLayer^-1; sBoxLayer^-1; addRoundKey(K_i) }
 */
#define CG_BLOCK_WORDS 2

#ifndef PRESENT_ROUNDS
#define PRESENT_ROUNDS 31
#endif

#define CG_ENC_LOCALS
#define CG_ENC_SETUP(k) GLOBAL_RO const uint *present_rk = (k);
#define CG_ENC_PARAMS , GLOBAL_RO const uint *RESTRICT rk
#define CG_ENC_ARGS , present_rk
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(k) GLOBAL_RO const uint *present_rk = (k);
#define CG_DEC_PARAMS , GLOBAL_RO const uint *RESTRICT rk
#define CG_DEC_ARGS , present_rk

/* the S-box of the paper (section 3) and its inverse */
CONST_TABLE uint present_sbox[16] = {
    0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2
};
CONST_TABLE uint present_inv_sbox[16] = {
    0x5, 0xE, 0xF, 0x8, 0xC, 0x1, 0x2, 0xD, 0xB, 0x4, 0x6, 0x3, 0x0, 0x7, 0x9, 0xA
};

DEVICE_FN ulong present_key(GLOBAL_RO const uint *rk, int i)
{
    return ((ulong)rk[2 * i] << 32) | rk[2 * i + 1];
}

DEVICE_FN ulong present_sbox_layer(ulong x, CONST_PTR const uint *box)
{
    ulong y = 0;
    for (int n = 0; n < 16; n++)
        y |= (ulong)box[(x >> (4 * n)) & 15] << (4 * n);
    return y;
}

/* pLayer: bit i moves to bit 16 i mod 63 (bit 63 stays); inverse: bit P(i) back to bit i */
DEVICE_FN ulong present_player(ulong x)
{
    ulong y = 0;
    for (int i = 0; i < 64; i++) {
        int p = i == 63 ? 63 : (16 * i) % 63;
        y |= ((x >> i) & 1) << p;
    }
    return y;
}

DEVICE_FN ulong present_inv_player(ulong x)
{
    ulong y = 0;
    for (int i = 0; i < 64; i++) {
        int p = i == 63 ? 63 : (16 * i) % 63;
        y |= ((x >> p) & 1) << i;
    }
    return y;
}

DEVICE_FN ulong present_load(const uint *s)
{
    return ((ulong)BSWAP32(s[0]) << 32) | BSWAP32(s[1]);
}

DEVICE_FN void present_store(uint *s, ulong x)
{
    s[0] = BSWAP32((uint)(x >> 32));
    s[1] = BSWAP32((uint)x);
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) {
        ulong x = present_load(s + 2 * b);
        for (int i = 0; i < PRESENT_ROUNDS; i++) {
            x ^= present_key(rk, i);
            x = present_sbox_layer(x, present_sbox);
            x = present_player(x);
        }
        x ^= present_key(rk, PRESENT_ROUNDS);
        present_store(s + 2 * b, x);
    }
}

/* rk: the decryption schedule, K_32 first */
DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) {
        ulong x = present_load(s + 2 * b) ^ present_key(rk, 0);
        for (int i = 1; i <= PRESENT_ROUNDS; i++) {
            x = present_inv_player(x);
            x = present_sbox_layer(x, present_inv_sbox);
            x ^= present_key(rk, i);
        }
        present_store(s + 2 * b, x);
    }
}
