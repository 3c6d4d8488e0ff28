/* toy_cipher.cl - TOY64, a test-only 64-bit block cipher (tests/test_toy_cipher.py holds its
 * declaration and its Python model).  NOT SECURE: it exists to drive the 64-bit (CG_BLOCK_WORDS == 2)
 * path of kernels/modes.cl through the block-function contract of ciphergrid/algorithms/base.py.
 *
 * A block is two little-endian 32-bit words (l, r) = (bytes 0..3, bytes 4..7).  The schedule (from
 * the host, TOY_ROUNDS + 4 words) is  w0 w1 | k[0] .. k[TOY_ROUNDS-1] | w2 w3:
 *
 *     l ^= w0; r ^= w1;
 *     for i < TOY_ROUNDS:  (l, r) = (r, l ^ F(r, k[i]))       F(x, k) = rotl(x + k, 7) ^ rotl(x, 19)
 *     out = (r ^ w2, l ^ w3)                                   (the Feistel's last swap)
 *
 * A Feistel network with a final swap is undone by the same network with the schedule reversed
 * (w2 w3 | k[TOY_ROUNDS-1] .. k[0] | w0 w1): the host's decryption schedule, so cg_decrypt_batch
 * runs the same block function on other keys.  The schedule is copied into work-group memory by
 * CG_*_SETUP (a table fill and a barrier, as a table cipher's setup does).
 */

#define CG_BLOCK_WORDS 2

#ifndef TOY_ROUNDS
#error "TOY_ROUNDS comes from the cipher's defines()"
#endif
#define TOY_NKEYS (TOY_ROUNDS + 4)

#define TOY_F(x, k) (ROTL32((x) + (k), 7) ^ ROTL32((x), 19))

#define TOY_SETUP(rk)                                                    \
    for (uint toy_i = LID; toy_i < TOY_NKEYS; toy_i += LSIZE)            \
        toy_k[toy_i] = (rk)[toy_i];                                      \
    BARRIER();

#define CG_ENC_LOCALS LOCAL_VAR uint toy_k[TOY_NKEYS];
#define CG_ENC_SETUP(rk) TOY_SETUP(rk)
#define CG_ENC_PARAMS , LOCAL_PTR const uint *ks
#define CG_ENC_ARGS , toy_k

#define CG_DEC_LOCALS LOCAL_VAR uint toy_k[TOY_NKEYS];
#define CG_DEC_SETUP(dk) TOY_SETUP(dk)
#define CG_DEC_PARAMS , LOCAL_PTR const uint *ks
#define CG_DEC_ARGS , toy_k

DEVICE_FN void toy_block(uint *s, LOCAL_PTR const uint *ks)
{
    uint l = s[0] ^ ks[0], r = s[1] ^ ks[1];
#pragma unroll
    for (int i = 0; i < TOY_ROUNDS; i++) {
        uint t = r;
        r = l ^ TOY_F(r, ks[2 + i]);
        l = t;
    }
    s[0] = r ^ ks[TOY_ROUNDS + 2];
    s[1] = l ^ ks[TOY_ROUNDS + 3];
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) toy_block(s + 2 * b, ks);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) toy_block(s + 2 * b, ks);
}
