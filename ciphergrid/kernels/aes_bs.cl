/* aes_bs.cl - constant-time (bitsliced, table-free) AES-128/192/256 (FIPS 197) for the generic
 * mode kernels (modes.cl): implementation "ct" of ciphers/aes.py.
 *
 * No table, no secret-dependent memory access, no secret-dependent branch: every array index is a
 * compile-time constant (all loops over state words are fully unrolled), the only memory reads are
 * the round keys at addresses that depend on the round number alone (uniform across work-items),
 * and the only branches test the round number.  SubBytes is a Boolean circuit, MixColumns and
 * AddRoundKey are XORs, ShiftRows is register renaming.
 *
 * Layout.  A work-item takes CG_BATCH = 32 blocks (modes.cl: block k in s[4k .. 4k+3], little-endian
 * words of the block bytes) and bitslices them: state word 8 p + b (0 <= p < 16 the byte position
 * of FIPS 197's input array, p = 4 column + row; 0 <= b < 8 the bit, 0 = least significant) holds
 * that bit of the 32 blocks, bit k = block k.  Since byte p of a block is bits 8 (p & 3) .. of its
 * word p >> 2, state word 32 w + j is bit j of word w of every block: the conversion is one 32x32
 * bit-matrix transpose per word w (5 stages of shifts and masks), and its own inverse.
 *
 * Round keys (key layout "bitsliced", made by AES.expand): word 128 r + i is 0 or 0xffffffff, bit i
 * of round key r of the FIPS 197 encryption schedule (i = 8 p + b as above), for r = 0 .. Nr.  Round
 * keys are read as uint4 from device memory at addresses fixed by r (uniform: one transaction per
 * warp, served by the L1/constant cache); the rounds run in a loop that is not unrolled, so the
 * compiler cannot hoist (Nr+1) * 128 loop-invariant key words into registers.  Decryption is the
 * straightforward inverse cipher (FIPS 197 5.3) on the same encryption schedule, walked backwards.
 *
 * S-box: the 115-gate circuit (32 AND, 83 XOR/XNOR) of J. Boyar and R. Peralta, "A new combinational
 * logic minimization technique with applications to cryptology", SEA 2010, LNCS 6049, pp. 178-189
 * (eprint 2009/191), written here from its gate list.  Inverse S-box: with S(x) = M inv(x) + 0x63
 * (M the affine matrix), S^-1(y) = inv(M^-1 (y + 0x63)) = M^-1 S'(M^-1 y + 0x05), S' = the circuit
 * without its output constant (M^-1 0x63 = 0x05): two XOR layers around the same circuit.
 * MixColumns: out_i = xtime(a_i + a_i+1) + a_i+1 + (a_i+2 + a_i+3); InvMixColumns = MixColumns
 * after the map a_0,2 += xtime^2(a_0 + a_2), a_1,3 += xtime^2(a_1 + a_3) (the Rijndael book's
 * factorisation of the InvMixColumns polynomial: {0B,0D,09,0E} = {03,01,01,02} x {00,04,00,05}).
 *
 * Cost per 32 blocks (2-input operations; LOP3 on NVIDIA merges many of them): 16 x 115 gates per
 * round for SubBytes, 4 x (32 + 32 x 3 + 12) = 560 for MixColumns + AddRoundKey, 128 for the first
 * AddRoundKey, 2 x 4 x 320 for the transposes.  Register use: 128 state words + ~30 S-box
 * temporaries + 4 key words + the mode's own.
 */
#define CG_BLOCK_WORDS 4
#ifndef CG_BATCH
#define CG_BATCH 32
#endif
#if CG_BATCH != 32
#error "aes_bs.cl bitslices 32 blocks per work-item: CG_BATCH must be 32"
#endif
#ifndef AES_ROUNDS
#error "aes_bs.cl needs AES_ROUNDS (10, 12 or 14)"
#endif

/* uniform batch interface: no shared memory, the round keys stay in device memory */
#define CG_ENC_LOCALS
#define CG_ENC_SETUP(k) GLOBAL_RO const uint4 *cg_bsk = (GLOBAL_RO const uint4 *)(k);
#define CG_ENC_PARAMS , GLOBAL_RO const uint4 *RESTRICT bsk
#define CG_ENC_ARGS , cg_bsk
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(k) GLOBAL_RO const uint4 *cg_bsk = (GLOBAL_RO const uint4 *)(k);
#define CG_DEC_PARAMS , GLOBAL_RO const uint4 *RESTRICT bsk
#define CG_DEC_ARGS , cg_bsk

/* ---- S-box ---------------------------------------------------------------------------------------
 * q[0..7]: the bits 0..7 of one byte position, replaced by the bits of S(x) + (c ? 0 : 0x63)...
 * precisely: nc = 0xffffffff gives the AES S-box, nc = 0 gives S' = M inv(x) (no constant).
 * Boyar-Peralta number the bits from the most significant: x0 = bit 7, ..., x7 = bit 0. */
DEVICE_FN void aes_bs_sbox(uint *q, const uint nc)
{
    const uint x0 = q[7], x1 = q[6], x2 = q[5], x3 = q[4];
    const uint x4 = q[3], x5 = q[2], x6 = q[1], x7 = q[0];

    /* top linear layer (23 XOR) */
    const uint y14 = x3 ^ x5, y13 = x0 ^ x6, y9 = x0 ^ x3, y8 = x0 ^ x5, t0 = x1 ^ x2;
    const uint y1 = t0 ^ x7, y4 = y1 ^ x3, y12 = y13 ^ y14, y2 = y1 ^ x0, y5 = y1 ^ x6;
    const uint y3 = y5 ^ y8, t1 = x4 ^ y12, y15 = t1 ^ x5, y20 = t1 ^ x1, y6 = y15 ^ x7;
    const uint y10 = y15 ^ t0, y11 = y20 ^ y9, y7 = x7 ^ y11, y17 = y10 ^ y11, y19 = y10 ^ y8;
    const uint y16 = t0 ^ y11, y21 = y13 ^ y16, y18 = x0 ^ y16;

    /* non-linear middle: inversion in GF(2^8) through GF(2^4) (32 AND, 30 XOR) */
    const uint t2 = y12 & y15, t3 = y3 & y6, t4 = t3 ^ t2, t5 = y4 & x7, t6 = t5 ^ t2;
    const uint t7 = y13 & y16, t8 = y5 & y1, t9 = t8 ^ t7, t10 = y2 & y7, t11 = t10 ^ t7;
    const uint t12 = y9 & y11, t13 = y14 & y17, t14 = t13 ^ t12, t15 = y8 & y10, t16 = t15 ^ t12;
    const uint t17 = t4 ^ t14, t18 = t6 ^ t16, t19 = t9 ^ t14, t20 = t11 ^ t16;
    const uint t21 = t17 ^ y20, t22 = t18 ^ y19, t23 = t19 ^ y21, t24 = t20 ^ y18;
    const uint t25 = t21 ^ t22, t26 = t21 & t23, t27 = t24 ^ t26, t28 = t25 & t27, t29 = t28 ^ t22;
    const uint t30 = t23 ^ t24, t31 = t22 ^ t26, t32 = t31 & t30, t33 = t32 ^ t24, t34 = t23 ^ t33;
    const uint t35 = t27 ^ t33, t36 = t24 & t35, t37 = t36 ^ t34, t38 = t27 ^ t36, t39 = t29 & t38;
    const uint t40 = t25 ^ t39;
    const uint t41 = t40 ^ t37, t42 = t29 ^ t33, t43 = t29 ^ t40, t44 = t33 ^ t37, t45 = t42 ^ t41;
    const uint z0 = t44 & y15, z1 = t37 & y6, z2 = t33 & x7, z3 = t43 & y16, z4 = t40 & y1;
    const uint z5 = t29 & y7, z6 = t42 & y11, z7 = t45 & y17, z8 = t41 & y10, z9 = t44 & y12;
    const uint z10 = t37 & y3, z11 = t33 & y4, z12 = t43 & y13, z13 = t40 & y5, z14 = t29 & y2;
    const uint z15 = t42 & y9, z16 = t45 & y14, z17 = t41 & y8;

    /* bottom linear layer (30 XOR/XNOR; the XNORs are the constant 0x63) */
    const uint t46 = z15 ^ z16, t47 = z10 ^ z11, t48 = z5 ^ z13, t49 = z9 ^ z10, t50 = z2 ^ z12;
    const uint t51 = z2 ^ z5, t52 = z7 ^ z8, t53 = z0 ^ z3, t54 = z6 ^ z7, t55 = z16 ^ z17;
    const uint t56 = z12 ^ t48, t57 = t50 ^ t53, t58 = z4 ^ t46, t59 = z3 ^ t54, t60 = t46 ^ t57;
    const uint t61 = z14 ^ t57, t62 = t52 ^ t58, t63 = t49 ^ t58, t64 = z4 ^ t59, t65 = t61 ^ t62;
    const uint t66 = z1 ^ t63, t67 = t64 ^ t65;
    const uint s0 = t59 ^ t63;
    const uint s6 = t56 ^ t62 ^ nc;
    const uint s7 = t48 ^ t60 ^ nc;
    const uint s3 = t53 ^ t66;
    const uint s4 = t51 ^ t66;
    const uint s5 = t47 ^ t65;
    const uint s1 = t64 ^ s3 ^ nc;
    const uint s2 = t55 ^ t67 ^ nc;

    q[7] = s0; q[6] = s1; q[5] = s2; q[4] = s3;
    q[3] = s4; q[2] = s5; q[1] = s6; q[0] = s7;
}

/* q <- M^-1 q: bit i of the result = bits i+2, i+5, i+7 (mod 8) of q */
DEVICE_FN void aes_bs_inv_linear(uint *q)
{
    uint r[8];
#pragma unroll
    for (int i = 0; i < 8; i++) r[i] = q[(i + 2) & 7] ^ q[(i + 5) & 7] ^ q[(i + 7) & 7];
#pragma unroll
    for (int i = 0; i < 8; i++) q[i] = r[i];
}

/* S^-1(y) = M^-1 S'(M^-1 y + 0x05) */
DEVICE_FN void aes_bs_inv_sbox(uint *q)
{
    aes_bs_inv_linear(q);
    q[0] = ~q[0];
    q[2] = ~q[2];
    aes_bs_sbox(q, 0u);
    aes_bs_inv_linear(q);
}

/* ---- linear layers ------------------------------------------------------------------------------ */

/* x <- xtime(x) = {02} x in GF(2^8) (AES polynomial x^8 + x^4 + x^3 + x + 1) */
#define AES_BS_XTIME(d, x)                                                    \
    {                                                                          \
        (d)[0] = (x)[7]; (d)[1] = (x)[0] ^ (x)[7]; (d)[2] = (x)[1];           \
        (d)[3] = (x)[2] ^ (x)[7]; (d)[4] = (x)[3] ^ (x)[7]; (d)[5] = (x)[4];  \
        (d)[6] = (x)[5]; (d)[7] = (x)[6];                                     \
    }

/* 32 key words of round key r for state words 32 c .. 32 c + 31 (= column c) */
DEVICE_FN void aes_bs_key_column(uint *kk, GLOBAL_RO const uint4 *RESTRICT bsk, int r, int c)
{
#pragma unroll
    for (int q = 0; q < 8; q++) {
        const uint4 v = bsk[32 * r + 8 * c + q];
        kk[4 * q + 0] = v.x; kk[4 * q + 1] = v.y; kk[4 * q + 2] = v.z; kk[4 * q + 3] = v.w;
    }
}

/* s ^= round key r */
DEVICE_FN void aes_bs_add_key(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
#pragma unroll
    for (int c = 0; c < 4; c++) {
        uint kk[32];
        aes_bs_key_column(kk, bsk, r, c);
#pragma unroll
        for (int i = 0; i < 32; i++) s[32 * c + i] ^= kk[i];
    }
}

/* s <- MixColumns(ShiftRows(s)) + round key r.  Output column c row i takes input byte position
 * 4 ((c + i) mod 4) + i. */
DEVICE_FN void aes_bs_mix_columns(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
    uint t[128];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        uint a[4][8], u[4][8], kk[32];
        aes_bs_key_column(kk, bsk, r, c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 8; j++) a[i][j] = s[8 * (4 * ((c + i) & 3) + i) + j];
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 8; j++) u[i][j] = a[i][j] ^ a[(i + 1) & 3][j];
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint x[8];
            AES_BS_XTIME(x, u[i])
#pragma unroll
            for (int j = 0; j < 8; j++)
                t[32 * c + 8 * i + j] = x[j] ^ a[(i + 1) & 3][j] ^ u[(i + 2) & 3][j] ^ kk[8 * i + j];
        }
    }
#pragma unroll
    for (int i = 0; i < 128; i++) s[i] = t[i];
}

/* s <- ShiftRows(s) + round key r (the last round) */
DEVICE_FN void aes_bs_shift_rows_key(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
    uint t[128];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        uint kk[32];
        aes_bs_key_column(kk, bsk, r, c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 8; j++)
                t[32 * c + 8 * i + j] = s[8 * (4 * ((c + i) & 3) + i) + j] ^ kk[8 * i + j];
        }
    }
#pragma unroll
    for (int i = 0; i < 128; i++) s[i] = t[i];
}

/* s <- InvMixColumns(InvShiftRows(s) + round key r).  InvShiftRows: output column c row i takes
 * input byte position 4 ((c - i) mod 4) + i. */
DEVICE_FN void aes_bs_inv_mix_columns(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
    uint t[128];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        uint a[4][8], u[4][8], kk[32];
        aes_bs_key_column(kk, bsk, r, c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 8; j++)
                a[i][j] = s[8 * (4 * ((c - i) & 3) + i) + j] ^ kk[8 * i + j];
        }
        /* a_0, a_2 += {04}(a_0 + a_2); a_1, a_3 += {04}(a_1 + a_3) */
#pragma unroll
        for (int i = 0; i < 2; i++) {
            uint d[8], x[8], y[8];
#pragma unroll
            for (int j = 0; j < 8; j++) d[j] = a[i][j] ^ a[i + 2][j];
            AES_BS_XTIME(x, d)
            AES_BS_XTIME(y, x)
#pragma unroll
            for (int j = 0; j < 8; j++) {
                a[i][j] ^= y[j];
                a[i + 2][j] ^= y[j];
            }
        }
        /* then MixColumns */
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 8; j++) u[i][j] = a[i][j] ^ a[(i + 1) & 3][j];
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint x[8];
            AES_BS_XTIME(x, u[i])
#pragma unroll
            for (int j = 0; j < 8; j++)
                t[32 * c + 8 * i + j] = x[j] ^ a[(i + 1) & 3][j] ^ u[(i + 2) & 3][j];
        }
    }
#pragma unroll
    for (int i = 0; i < 128; i++) s[i] = t[i];
}

/* s <- InvShiftRows(s) + round key r (the last decryption round, r = 0) */
DEVICE_FN void aes_bs_inv_shift_rows_key(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r)
{
    uint t[128];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        uint kk[32];
        aes_bs_key_column(kk, bsk, r, c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 8; j++)
                t[32 * c + 8 * i + j] = s[8 * (4 * ((c - i) & 3) + i) + j] ^ kk[8 * i + j];
        }
    }
#pragma unroll
    for (int i = 0; i < 128; i++) s[i] = t[i];
}

/* ---- bitslicing: 32x32 bit-matrix transpose of a[0..31] (a'[j] bit k = a[k] bit j) -------------- */

/* a keeps its bits under m and takes b's bits under m shifted up by sh; b takes a's upper bits */
#define AES_BS_SWAP(a, b, sh, m)                              \
    {                                                          \
        const uint sa_ = (a), sb_ = (b);                       \
        (a) = (sa_ & (m)) | ((sb_ << (sh)) & ~(m));            \
        (b) = ((sa_ >> (sh)) & (m)) | (sb_ & ~(m));            \
    }

DEVICE_FN void aes_bs_transpose32(uint *a)
{
#pragma unroll
    for (int k = 0; k < 16; k++) AES_BS_SWAP(a[k], a[k + 16], 16, 0x0000ffffu)
#pragma unroll
    for (int k = 0; k < 32; k += 16) {
#pragma unroll
        for (int l = 0; l < 8; l++) AES_BS_SWAP(a[k + l], a[k + l + 8], 8, 0x00ff00ffu)
    }
#pragma unroll
    for (int k = 0; k < 32; k += 8) {
#pragma unroll
        for (int l = 0; l < 4; l++) AES_BS_SWAP(a[k + l], a[k + l + 4], 4, 0x0f0f0f0fu)
    }
#pragma unroll
    for (int k = 0; k < 32; k += 4) {
#pragma unroll
        for (int l = 0; l < 2; l++) AES_BS_SWAP(a[k + l], a[k + l + 2], 2, 0x33333333u)
    }
#pragma unroll
    for (int k = 0; k < 32; k += 2) AES_BS_SWAP(a[k], a[k + 1], 1, 0x55555555u)
}

/* blocks (s[4k + w] = word w of block k) -> bitsliced state (b[32 w + j] bit k = bit j of that word) */
DEVICE_FN void aes_bs_slice(const uint *s, uint *b)
{
#pragma unroll
    for (int w = 0; w < 4; w++) {
#pragma unroll
        for (int k = 0; k < 32; k++) b[32 * w + k] = s[4 * k + w];
    }
    aes_bs_transpose32(b);
    aes_bs_transpose32(b + 32);
    aes_bs_transpose32(b + 64);
    aes_bs_transpose32(b + 96);
}

DEVICE_FN void aes_bs_unslice(uint *b, uint *s)
{
    aes_bs_transpose32(b);
    aes_bs_transpose32(b + 32);
    aes_bs_transpose32(b + 64);
    aes_bs_transpose32(b + 96);
#pragma unroll
    for (int w = 0; w < 4; w++) {
#pragma unroll
        for (int k = 0; k < 32; k++) s[4 * k + w] = b[32 * w + k];
    }
}

/* ---- the uniform batch interface: CG_BATCH = 32 blocks, block k in s[4k .. 4k+3] ---------------- */

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    uint b[128];
    aes_bs_slice(s, b);
    /* round 0 is AddRoundKey alone; the loop stays rolled (code size, and key loads that depend on
     * the round number so that they are not hoisted out of the caller's block loop) */
#pragma unroll 1
    for (int r = 0; r <= AES_ROUNDS; r++) {
        if (r == 0) {
            aes_bs_add_key(b, bsk, 0);
        } else {
#pragma unroll
            for (int p = 0; p < 16; p++) aes_bs_sbox(b + 8 * p, 0xffffffffu);
            if (r < AES_ROUNDS)
                aes_bs_mix_columns(b, bsk, r);
            else
                aes_bs_shift_rows_key(b, bsk, r);
        }
    }
    aes_bs_unslice(b, s);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    uint b[128];
    aes_bs_slice(s, b);
#pragma unroll 1
    for (int r = AES_ROUNDS; r >= 0; r--) {
        if (r == AES_ROUNDS) {
            aes_bs_add_key(b, bsk, AES_ROUNDS);
        } else {
            /* InvShiftRows commutes with InvSubBytes: substitute in place, shift while mixing */
#pragma unroll
            for (int p = 0; p < 16; p++) aes_bs_inv_sbox(b + 8 * p);
            if (r > 0)
                aes_bs_inv_mix_columns(b, bsk, r);
            else
                aes_bs_inv_shift_rows_key(b, bsk, 0);
        }
    }
    aes_bs_unslice(b, s);
}
