/* aes_bs.cl - constant-time (bitsliced, table-free) AES-128/192/256 (FIPS 197) for the generic
 * mode kernels (modes.cl): implementations "ct" and "ct-c" of ciphers/aes.py.
 *
 * No table, no secret-dependent memory access, no secret-dependent branch: every array index is a
 * compile-time constant (all loops over state words are fully unrolled), the only memory reads are
 * the round keys at addresses that depend on the round number alone (the same for every work-item),
 * and the only branches test the round counter.  SubBytes is a Boolean circuit, MixColumns and
 * AddRoundKey are XORs, ShiftRows is register renaming.
 *
 * Layout.  A work-item takes CG_BATCH = 32 blocks (modes.cl: block k in s[4k .. 4k+3], little-endian
 * words of the block bytes) and bitslices them in place: state word 8 p + b (p = 4 column + row the
 * byte position of FIPS 197's input array, b the bit, 0 = least significant) holds that bit of the
 * 32 blocks, bit k = block k.  Byte p of a block is bits 8 (p & 3) .. 8 (p & 3) + 7 of its word
 * p >> 2, so state word 32 w + j is bit j of word w of every block, kept in s[w + 4 j]: for each w
 * the conversion is one 32x32 bit-matrix transpose of s[w], s[w + 4], ..., s[w + 124] (5 swap
 * stages; the transpose is its own inverse, so the same code converts back).
 *
 * Round keys (key layout "bitsliced", made by AES.expand): word 128 r + 32 w + j is 0 or 0xffffffff,
 * bit j of word w of round key r of the usual schedule: FIPS 197 key expansion for encryption, the
 * equivalent inverse cipher's (FIPS 197 5.3.5: reversed, InvMixColumns on the middle keys) for
 * decryption, so both directions add the key after (Inv)MixColumns, in the same operations.  Keys
 * are read as uint4 at addresses fixed by r (uniform across the warp, cached); the rounds run in a
 * loop that is not unrolled, so the compiler cannot hoist (Nr+1) x 128 loop-invariant key words out
 * of the caller's block loop into registers, and the round code (~1,700 instructions) is not
 * repeated Nr times in the instruction cache.
 *
 * S-box: the 115-gate circuit (32 AND, 83 XOR/XNOR) of J. Boyar and R. Peralta, "A new combinational
 * logic minimization technique with applications to cryptology", SEA 2010, LNCS 6049, pp. 178-189
 * (eprint 2009/191).  (Their "A depth-16 circuit for the AES S-box", 2012, has 128 gates: depth does
 * not matter here, the 16 byte positions and the warps give the parallelism.)  Inverse S-box: with
 * S(x) = M inv(x) + 0x63 (M the affine matrix), S^-1(y) = inv(M^-1 (y + 0x63))
 * = M^-1 S'(M^-1 y + 0x05), S' = the circuit without its output constant: two XOR layers around the
 * same circuit.  Both are written as three-input operations (see the S-box section).
 * MixColumns: out_i = xtime(a_i + a_i+1) + a_i+1 + (a_i+2 + a_i+3); InvMixColumns = MixColumns
 * after a_0,2 += {04}(a_0 + a_2), a_1,3 += {04}(a_1 + a_3) ({0B,0D,09,0E} = {03,01,01,02} x
 * {00,04,00,05} as polynomials over GF(2^8) mod x^4 + 1, Daemen-Rijmen, "The Design of Rijndael").
 *
 * Cost per 32 blocks, in 32-bit 3-input logic operations (LOP3 on NVIDIA; the counts are those of
 * the SASS for sm_90): SubBytes 16 x 74 = 1,184 per round (inverse: 16 x 90 = 1,440), ShiftRows +
 * MixColumns + AddRoundKey 384 (decryption 568), last round 128, first AddRoundKey 128, and
 * 2 x 4 x 208 for the transposes (64 PRMT + 96 LOP3 + 48 right shifts each; the 48 left shifts go
 * to the IMAD pipe).  AES-128 encryption: 10 x 1,184 + 9 x 384 + 256 + 1,664 = 17,216, i.e. 538 per
 * block, ~34 per byte (at 64 such operations per clock per SM: 1.9 bytes per clock per SM at best).
 * CTR makes its counters bitsliced instead (counter tiles, below): 10 x 1,184 + 9 x 384 + 832 +
 * 128 (slicing) + 128 (key stream + last key + data) = 16,384.
 * Registers: the 128 state words, ~25 S-box temporaries, 32 key words for the column being mixed,
 * and the mode's own: 255 with NVRTC for sm_90 (a few spilled), so 8 warps per SM.  Capping them
 * (168: 12 warps per SM) measured slower on the H200 once the CTR kernel kept its loads in flight
 * (docs/benchmarks.md).
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

/* ---- three-input primitives ---------------------------------------------------------------------
 * NVIDIA GPUs do any 3-input bitwise function in one LOP3 (and any byte shuffle of two words in one
 * PRMT: portable.h's BYTE_PERM).  NVVM re-associates XOR chains and rewrites shift-and-mask pairs
 * into forms that take two or three instructions each (for AES-128-CTR: 2,793 LOP3 in the SASS
 * where the circuit needs 2,101), so on NVIDIA compilers (CUDA, NVIDIA OpenCL) the LOP3s are
 * spelled out in inline PTX when AES_BS_PTX is 1 (implementation "ct"; "ct-c" leaves them to the
 * compiler); otherwise, and for every other compiler, the plain C expression with the same value is compiled. */
#ifndef AES_BS_PTX
#define AES_BS_PTX 0
#endif
/* NVIDIA compilers (CUDA, and NVIDIA's OpenCL, which also takes inline PTX) */
#if AES_BS_PTX && (defined(__CUDACC__) || defined(cl_nv_pragma_unroll))
#define AES_BS_ASM 1
#else
#define AES_BS_ASM 0
#endif
#if AES_BS_ASM
/* one function per truth table used below: AES_BS_LOP3(.., 0x96, ..) calls aes_bs_lop3_0x96 */
#define AES_BS_DEF_LOP3(T)                                                                  \
    DEVICE_FN uint aes_bs_lop3_##T(uint a, uint b, uint c)                                  \
    {                                                                                       \
        uint d;                                                                             \
        asm("lop3.b32 %0, %1, %2, %3, " #T ";" : "=r"(d) : "r"(a), "r"(b), "r"(c));          \
        return d;                                                                           \
    }
AES_BS_DEF_LOP3(0x14) AES_BS_DEF_LOP3(0x28) AES_BS_DEF_LOP3(0x3c) AES_BS_DEF_LOP3(0x48)
AES_BS_DEF_LOP3(0x60) AES_BS_DEF_LOP3(0x69) AES_BS_DEF_LOP3(0x6a) AES_BS_DEF_LOP3(0x6c)
AES_BS_DEF_LOP3(0x82) AES_BS_DEF_LOP3(0x96) AES_BS_DEF_LOP3(0xa6) AES_BS_DEF_LOP3(0xc0)
AES_BS_DEF_LOP3(0xc3) AES_BS_DEF_LOP3(0xe4) AES_BS_DEF_LOP3(0xca)
#define aes_bs_xor3(a, b, c) aes_bs_lop3_0x96((a), (b), (c))
/* (x & m) | (y & ~m) */
#define aes_bs_sel(m, x, y) aes_bs_lop3_0xca((m), (x), (y))
#else
#define aes_bs_xor3(a, b, c) ((a) ^ (b) ^ (c))
#define aes_bs_sel(m, x, y) (((x) & (m)) | ((y) & ~(m)))
#endif

/* ---- S-box ---------------------------------------------------------------------------------------
 * The 115-gate circuit of Boyar and Peralta (SEA 2010, see the top of this file; 32 AND, 83 XOR/XNOR,
 * inputs x0 = bit 7 .. x7 = bit 0), and for the inverse the same circuit between the two M^-1 layers,
 * covered by three-input operations: every AES_BS_LOP3(a, b, c, table, expr) below computes one
 * node of that circuit (named as in the paper: y.., t.., z.., s..) from three earlier nodes or
 * inputs; expr is the cone of the circuit's gates it replaces, table the same function as an LOP3
 * truth table (a = 0xf0, b = 0xcc, c = 0xaa; "0u" pads two-input operations).  The cover is a
 * minimum-size one found by integer programming over all 3-input cuts of the circuit (a node may be
 * recomputed inside several cuts); the gates, hence the function, are those of the paper, and the
 * tests check the result against FIPS 197 on every device.  On NVIDIA GPUs each AES_BS_LOP3 is one
 * LOP3 instruction (74 per S-box, 90 per inverse S-box, where the compiler's own mapping of the
 * 2-input gates gives 85 and ~100); other compilers evaluate expr. */
#if AES_BS_ASM
#define AES_BS_LOP3(a, b, c, table, expr) aes_bs_lop3_##table((a), (b), (c))
#else
#define AES_BS_LOP3(a, b, c, table, expr) (expr)
#endif

/* q[0..7] <- S(q): bit b of one byte position in q[b] (74 three-input operations) */
DEVICE_FN void aes_bs_sbox(uint *q)
{
    const uint q0 = q[0], q1 = q[1], q2 = q[2], q3 = q[3], q4 = q[4], q5 = q[5], q6 = q[6], q7 = q[7];
    const uint y14 = AES_BS_LOP3(q4, q2, 0u, 0x3c, (q4 ^ q2));
    const uint y13 = AES_BS_LOP3(q7, q1, 0u, 0x3c, (q7 ^ q1));
    const uint y9 = AES_BS_LOP3(q7, q4, 0u, 0x3c, (q7 ^ q4));
    const uint y8 = AES_BS_LOP3(q7, q2, 0u, 0x3c, (q7 ^ q2));
    const uint y1 = AES_BS_LOP3(q6, q5, q0, 0x96, ((q6 ^ q5) ^ q0));
    const uint y12 = AES_BS_LOP3(q7, q1, y14, 0x96, ((q7 ^ q1) ^ y14));
    const uint y3 = AES_BS_LOP3(q1, y8, y1, 0x96, ((y1 ^ q1) ^ y8));
    const uint y15 = AES_BS_LOP3(q3, q2, y12, 0x96, ((q3 ^ y12) ^ q2));
    const uint y20 = AES_BS_LOP3(q6, q3, y12, 0x96, ((q3 ^ y12) ^ q6));
    const uint y10 = AES_BS_LOP3(q6, q5, y15, 0x96, (y15 ^ (q6 ^ q5)));
    const uint y11 = AES_BS_LOP3(q7, q4, y20, 0x96, (y20 ^ (q7 ^ q4)));
    const uint y7 = AES_BS_LOP3(q0, y11, 0u, 0x3c, (q0 ^ y11));
    const uint y17 = AES_BS_LOP3(y10, y11, 0u, 0x3c, (y10 ^ y11));
    const uint y16 = AES_BS_LOP3(q6, q5, y11, 0x96, ((q6 ^ q5) ^ y11));
    const uint t3 = AES_BS_LOP3(q0, y3, y15, 0x48, (y3 & (y15 ^ q0)));
    const uint t4 = AES_BS_LOP3(y12, y15, t3, 0x6a, (t3 ^ (y12 & y15)));
    const uint t5 = AES_BS_LOP3(q4, q0, y1, 0x48, ((y1 ^ q4) & q0));
    const uint t6 = AES_BS_LOP3(y12, y15, t5, 0x6a, (t5 ^ (y12 & y15)));
    const uint t7 = AES_BS_LOP3(q7, q1, y16, 0x28, ((q7 ^ q1) & y16));
    const uint t9 = AES_BS_LOP3(q1, y1, t7, 0xa6, (((y1 ^ q1) & y1) ^ t7));
    const uint t10 = AES_BS_LOP3(q7, y1, y7, 0x28, ((y1 ^ q7) & y7));
    const uint t12 = AES_BS_LOP3(q7, q4, y11, 0x28, ((q7 ^ q4) & y11));
    const uint t14 = AES_BS_LOP3(y14, y17, t12, 0x6a, ((y14 & y17) ^ t12));
    const uint t16 = AES_BS_LOP3(y8, y10, t12, 0x6a, ((y8 & y10) ^ t12));
    const uint t18 = AES_BS_LOP3(t6, t16, 0u, 0x3c, (t6 ^ t16));
    const uint t19 = AES_BS_LOP3(t9, t14, 0u, 0x3c, (t9 ^ t14));
    const uint t20 = AES_BS_LOP3(t7, t10, t16, 0x96, ((t10 ^ t7) ^ t16));
    const uint t21 = AES_BS_LOP3(y20, t4, t14, 0x96, ((t4 ^ t14) ^ y20));
    const uint t22 = AES_BS_LOP3(y8, y10, t18, 0x96, (t18 ^ (y10 ^ y8)));
    const uint t23 = AES_BS_LOP3(y13, y16, t19, 0x96, (t19 ^ (y13 ^ y16)));
    const uint t24 = AES_BS_LOP3(q7, y16, t20, 0x96, (t20 ^ (q7 ^ y16)));
    const uint t27 = AES_BS_LOP3(t21, t23, t24, 0x6a, (t24 ^ (t21 & t23)));
    const uint t29 = AES_BS_LOP3(t21, t22, t27, 0xe4, (((t21 ^ t22) & t27) ^ t22));
    const uint t31 = AES_BS_LOP3(t21, t22, t23, 0x6c, (t22 ^ (t21 & t23)));
    const uint t33 = AES_BS_LOP3(t23, t24, t31, 0xe4, ((t31 & (t23 ^ t24)) ^ t24));
    const uint t36 = AES_BS_LOP3(t24, t27, t33, 0x60, (t24 & (t27 ^ t33)));
    const uint t37 = AES_BS_LOP3(t23, t33, t36, 0x96, (t36 ^ (t23 ^ t33)));
    const uint t39 = AES_BS_LOP3(t27, t29, t36, 0x48, (t29 & (t27 ^ t36)));
    const uint t40 = AES_BS_LOP3(t21, t22, t39, 0x96, ((t21 ^ t22) ^ t39));
    const uint t41 = AES_BS_LOP3(t37, t40, 0u, 0x3c, (t40 ^ t37));
    const uint t42 = AES_BS_LOP3(t29, t33, 0u, 0x3c, (t29 ^ t33));
    const uint t44 = AES_BS_LOP3(t33, t37, 0u, 0x3c, (t33 ^ t37));
    const uint z1 = AES_BS_LOP3(q0, y15, t37, 0x28, (t37 & (y15 ^ q0)));
    const uint z2 = AES_BS_LOP3(q0, t33, 0u, 0xc0, (t33 & q0));
    const uint z3 = AES_BS_LOP3(y16, t29, t40, 0x60, ((t29 ^ t40) & y16));
    const uint z4 = AES_BS_LOP3(y1, t40, 0u, 0xc0, (t40 & y1));
    const uint z7 = AES_BS_LOP3(y17, t41, t42, 0x60, ((t42 ^ t41) & y17));
    const uint z10 = AES_BS_LOP3(y3, t37, 0u, 0xc0, (t37 & y3));
    const uint z11 = AES_BS_LOP3(q4, y1, t33, 0x28, (t33 & (y1 ^ q4)));
    const uint z12 = AES_BS_LOP3(y13, t29, t40, 0x60, ((t29 ^ t40) & y13));
    const uint z13 = AES_BS_LOP3(q1, y1, t40, 0x28, (t40 & (y1 ^ q1)));
    const uint z14 = AES_BS_LOP3(q7, y1, t29, 0x28, (t29 & (y1 ^ q7)));
    const uint z16 = AES_BS_LOP3(y14, t41, t42, 0x60, ((t42 ^ t41) & y14));
    const uint t46 = AES_BS_LOP3(y9, t42, z16, 0x6a, ((t42 & y9) ^ z16));
    const uint t48 = AES_BS_LOP3(y7, t29, z13, 0x6a, ((t29 & y7) ^ z13));
    const uint t49 = AES_BS_LOP3(y12, t44, z10, 0x6a, ((t44 & y12) ^ z10));
    const uint t51 = AES_BS_LOP3(y7, t29, z2, 0x6a, (z2 ^ (t29 & y7)));
    const uint t52 = AES_BS_LOP3(y10, t41, z7, 0x6a, (z7 ^ (t41 & y10)));
    const uint t53 = AES_BS_LOP3(y15, t44, z3, 0x6a, ((t44 & y15) ^ z3));
    const uint t54 = AES_BS_LOP3(y11, t42, z7, 0x6a, ((t42 & y11) ^ z7));
    const uint t55 = AES_BS_LOP3(y8, t41, z16, 0x6a, (z16 ^ (t41 & y8)));
    const uint t57 = AES_BS_LOP3(z2, z12, t53, 0x96, ((z2 ^ z12) ^ t53));
    const uint t62 = AES_BS_LOP3(z4, t46, t52, 0x96, (t52 ^ (z4 ^ t46)));
    const uint t63 = AES_BS_LOP3(z4, t46, t49, 0x96, (t49 ^ (z4 ^ t46)));
    const uint t64 = AES_BS_LOP3(z3, z4, t54, 0x96, (z4 ^ (z3 ^ t54)));
    const uint t65 = AES_BS_LOP3(z14, t57, t62, 0x96, ((z14 ^ t57) ^ t62));
    const uint s0 = AES_BS_LOP3(z3, t54, t63, 0x96, ((z3 ^ t54) ^ t63));
    const uint s6 = AES_BS_LOP3(z12, t48, t62, 0x69, ~((z12 ^ t48) ^ t62));
    const uint s7 = AES_BS_LOP3(t46, t48, t57, 0x69, ~(t48 ^ (t46 ^ t57)));
    const uint s3 = AES_BS_LOP3(z1, t53, t63, 0x96, (t53 ^ (z1 ^ t63)));
    const uint s4 = AES_BS_LOP3(z1, t51, t63, 0x96, (t51 ^ (z1 ^ t63)));
    const uint s5 = AES_BS_LOP3(z10, z11, t65, 0x96, ((z10 ^ z11) ^ t65));
    const uint s1 = AES_BS_LOP3(t64, s3, 0u, 0xc3, ~(t64 ^ s3));
    const uint s2 = AES_BS_LOP3(t55, t64, t65, 0x69, ~(t55 ^ (t64 ^ t65)));
    q[0] = s7; q[1] = s6; q[2] = s5; q[3] = s4; q[4] = s3; q[5] = s2; q[6] = s1; q[7] = s0;
}

/* q[0..7] <- S^-1(q) (90 three-input operations) */
DEVICE_FN void aes_bs_inv_sbox(uint *q)
{
    const uint q0 = q[0], q1 = q[1], q2 = q[2], q3 = q[3], q4 = q[4], q5 = q[5], q6 = q[6], q7 = q[7];
    const uint r0 = AES_BS_LOP3(q7, q5, q2, 0x69, ~((q2 ^ q5) ^ q7));
    const uint r1 = AES_BS_LOP3(q6, q3, q0, 0x96, ((q3 ^ q6) ^ q0));
    const uint r2 = AES_BS_LOP3(q7, q4, q1, 0x69, ~((q4 ^ q7) ^ q1));
    const uint r3 = AES_BS_LOP3(q5, q2, q0, 0x96, ((q5 ^ q0) ^ q2));
    const uint r4 = AES_BS_LOP3(q6, q3, q1, 0x96, ((q6 ^ q1) ^ q3));
    const uint r5 = AES_BS_LOP3(q7, q4, q2, 0x96, ((q7 ^ q2) ^ q4));
    const uint r6 = AES_BS_LOP3(q5, q3, q0, 0x96, ((q0 ^ q3) ^ q5));
    const uint r7 = AES_BS_LOP3(q6, q4, q1, 0x96, ((q1 ^ q4) ^ q6));
    const uint y14 = AES_BS_LOP3(r2, r4, 0u, 0x3c, (r4 ^ r2));
    const uint y13 = AES_BS_LOP3(r1, r7, 0u, 0x3c, (r7 ^ r1));
    const uint y8 = AES_BS_LOP3(r2, r7, 0u, 0x3c, (r7 ^ r2));
    const uint y1 = AES_BS_LOP3(r0, r5, r6, 0x96, ((r6 ^ r5) ^ r0));
    const uint y12 = AES_BS_LOP3(y14, y13, 0u, 0x3c, (y13 ^ y14));
    const uint y2 = AES_BS_LOP3(r7, y1, 0u, 0x3c, (y1 ^ r7));
    const uint y5 = AES_BS_LOP3(r1, y1, 0u, 0x3c, (y1 ^ r1));
    const uint y15 = AES_BS_LOP3(r2, r3, y12, 0x96, ((r3 ^ y12) ^ r2));
    const uint y20 = AES_BS_LOP3(r3, r6, y12, 0x96, ((r3 ^ y12) ^ r6));
    const uint y6 = AES_BS_LOP3(r0, y15, 0u, 0x3c, (y15 ^ r0));
    const uint y10 = AES_BS_LOP3(r5, r6, y15, 0x96, (y15 ^ (r6 ^ r5)));
    const uint y11 = AES_BS_LOP3(r4, r7, y20, 0x96, (y20 ^ (r7 ^ r4)));
    const uint y17 = AES_BS_LOP3(y10, y11, 0u, 0x3c, (y10 ^ y11));
    const uint y16 = AES_BS_LOP3(r5, r6, y11, 0x96, ((r6 ^ r5) ^ y11));
    const uint t2 = AES_BS_LOP3(r2, r3, y12, 0x82, (y12 & ((r3 ^ y12) ^ r2)));
    const uint t3 = AES_BS_LOP3(y8, y5, y6, 0x28, ((y5 ^ y8) & y6));
    const uint t4 = AES_BS_LOP3(t2, t3, 0u, 0x3c, (t3 ^ t2));
    const uint t5 = AES_BS_LOP3(r0, r4, y1, 0x60, ((y1 ^ r4) & r0));
    const uint t7 = AES_BS_LOP3(r1, r7, y16, 0x28, ((r7 ^ r1) & y16));
    const uint t9 = AES_BS_LOP3(r1, y1, t7, 0xa6, (((y1 ^ r1) & y1) ^ t7));
    const uint t10 = AES_BS_LOP3(r0, y2, y11, 0x48, (y2 & (r0 ^ y11)));
    const uint t12 = AES_BS_LOP3(r4, r7, y20, 0x14, ((r7 ^ r4) & (y20 ^ (r7 ^ r4))));
    const uint t14 = AES_BS_LOP3(y14, y17, t12, 0x6a, ((y14 & y17) ^ t12));
    const uint t16 = AES_BS_LOP3(y8, y10, t12, 0x6a, ((y8 & y10) ^ t12));
    const uint t18 = AES_BS_LOP3(t2, t5, t16, 0x96, ((t5 ^ t2) ^ t16));
    const uint t19 = AES_BS_LOP3(t9, t14, 0u, 0x3c, (t9 ^ t14));
    const uint t20 = AES_BS_LOP3(t7, t10, t16, 0x96, ((t10 ^ t7) ^ t16));
    const uint t21 = AES_BS_LOP3(y20, t4, t14, 0x96, ((t4 ^ t14) ^ y20));
    const uint t22 = AES_BS_LOP3(y8, y10, t18, 0x96, (t18 ^ (y10 ^ y8)));
    const uint t23 = AES_BS_LOP3(y13, y16, t19, 0x96, (t19 ^ (y13 ^ y16)));
    const uint t24 = AES_BS_LOP3(r7, y16, t20, 0x96, (t20 ^ (r7 ^ y16)));
    const uint t27 = AES_BS_LOP3(t21, t23, t24, 0x6a, (t24 ^ (t21 & t23)));
    const uint t29 = AES_BS_LOP3(t21, t22, t27, 0xe4, (((t21 ^ t22) & t27) ^ t22));
    const uint t31 = AES_BS_LOP3(t21, t22, t23, 0x6c, (t22 ^ (t21 & t23)));
    const uint t33 = AES_BS_LOP3(t23, t24, t31, 0xe4, ((t31 & (t23 ^ t24)) ^ t24));
    const uint t36 = AES_BS_LOP3(t24, t27, t33, 0x60, (t24 & (t27 ^ t33)));
    const uint t37 = AES_BS_LOP3(t23, t33, t36, 0x96, (t36 ^ (t23 ^ t33)));
    const uint t39 = AES_BS_LOP3(t27, t29, t36, 0x48, (t29 & (t27 ^ t36)));
    const uint t40 = AES_BS_LOP3(t21, t22, t39, 0x96, ((t21 ^ t22) ^ t39));
    const uint t41 = AES_BS_LOP3(t37, t40, 0u, 0x3c, (t40 ^ t37));
    const uint t42 = AES_BS_LOP3(t29, t33, 0u, 0x3c, (t29 ^ t33));
    const uint t44 = AES_BS_LOP3(t33, t37, 0u, 0x3c, (t33 ^ t37));
    const uint z2 = AES_BS_LOP3(r0, t33, 0u, 0xc0, (t33 & r0));
    const uint z3 = AES_BS_LOP3(y16, t29, t40, 0x60, ((t29 ^ t40) & y16));
    const uint z4 = AES_BS_LOP3(y1, t40, 0u, 0xc0, (t40 & y1));
    const uint z5 = AES_BS_LOP3(r0, y11, t29, 0x28, (t29 & (r0 ^ y11)));
    const uint z7 = AES_BS_LOP3(y17, t41, t42, 0x60, ((t42 ^ t41) & y17));
    const uint z10 = AES_BS_LOP3(y8, y5, t37, 0x28, (t37 & (y5 ^ y8)));
    const uint z11 = AES_BS_LOP3(r4, y1, t33, 0x28, (t33 & (y1 ^ r4)));
    const uint z12 = AES_BS_LOP3(y13, t29, t40, 0x60, ((t29 ^ t40) & y13));
    const uint z15 = AES_BS_LOP3(r4, r7, t42, 0x28, (t42 & (r7 ^ r4)));
    const uint z16 = AES_BS_LOP3(y14, t41, t42, 0x60, ((t42 ^ t41) & y14));
    const uint t46 = AES_BS_LOP3(z15, z16, 0u, 0x3c, (z15 ^ z16));
    const uint t48 = AES_BS_LOP3(y5, t40, z5, 0x6a, (z5 ^ (t40 & y5)));
    const uint t49 = AES_BS_LOP3(y12, t44, z10, 0x6a, ((t44 & y12) ^ z10));
    const uint t52 = AES_BS_LOP3(y10, t41, z7, 0x6a, (z7 ^ (t41 & y10)));
    const uint t53 = AES_BS_LOP3(y15, t44, z3, 0x6a, ((t44 & y15) ^ z3));
    const uint t54 = AES_BS_LOP3(y11, t42, z7, 0x6a, ((t42 & y11) ^ z7));
    const uint t55 = AES_BS_LOP3(y8, t41, z16, 0x6a, (z16 ^ (t41 & y8)));
    const uint t57 = AES_BS_LOP3(z2, z12, t53, 0x96, ((z2 ^ z12) ^ t53));
    const uint t61 = AES_BS_LOP3(y2, t29, t57, 0x6a, ((t29 & y2) ^ t57));
    const uint t62 = AES_BS_LOP3(z4, t46, t52, 0x96, (t52 ^ (z4 ^ t46)));
    const uint t63 = AES_BS_LOP3(z4, t46, t49, 0x96, (t49 ^ (z4 ^ t46)));
    const uint t64 = AES_BS_LOP3(z3, z4, t54, 0x96, (z4 ^ (z3 ^ t54)));
    const uint t65 = AES_BS_LOP3(t61, t62, 0u, 0x3c, (t61 ^ t62));
    const uint t66 = AES_BS_LOP3(y6, t37, t63, 0x6a, ((t37 & y6) ^ t63));
    const uint s0 = AES_BS_LOP3(z3, t54, t63, 0x96, ((z3 ^ t54) ^ t63));
    const uint s6 = AES_BS_LOP3(z12, t48, t62, 0x96, ((z12 ^ t48) ^ t62));
    const uint s7 = AES_BS_LOP3(t46, t48, t57, 0x96, (t48 ^ (t46 ^ t57)));
    const uint s3 = AES_BS_LOP3(t53, t66, 0u, 0x3c, (t53 ^ t66));
    const uint s4 = AES_BS_LOP3(z2, z5, t66, 0x96, ((z2 ^ z5) ^ t66));
    const uint s5 = AES_BS_LOP3(z10, z11, t65, 0x96, ((z10 ^ z11) ^ t65));
    const uint s1 = AES_BS_LOP3(t64, s3, 0u, 0x3c, (t64 ^ s3));
    const uint s2 = AES_BS_LOP3(t55, t64, t65, 0x96, (t55 ^ (t64 ^ t65)));
    const uint o0 = AES_BS_LOP3(s0, s5, s2, 0x96, ((s5 ^ s2) ^ s0));
    const uint o1 = AES_BS_LOP3(s7, s4, s1, 0x96, ((s4 ^ s1) ^ s7));
    const uint o2 = AES_BS_LOP3(s0, s6, s3, 0x96, ((s3 ^ s0) ^ s6));
    const uint o3 = AES_BS_LOP3(s7, s5, s2, 0x96, ((s2 ^ s7) ^ s5));
    const uint o4 = AES_BS_LOP3(s6, s4, s1, 0x96, ((s1 ^ s6) ^ s4));
    const uint o5 = AES_BS_LOP3(s0, s3, s5, 0x96, ((s0 ^ s5) ^ s3));
    const uint o6 = AES_BS_LOP3(s7, s4, s2, 0x96, ((s7 ^ s4) ^ s2));
    const uint o7 = AES_BS_LOP3(s6, s3, s1, 0x96, ((s6 ^ s3) ^ s1));
    q[0] = o0; q[1] = o1; q[2] = o2; q[3] = o3; q[4] = o4; q[5] = o5; q[6] = o6; q[7] = o7;
}

/* ---- linear layers ------------------------------------------------------------------------------ */

/* state word i (= 32 w + j: bit j of word w of every block, i.e. bit i & 7 of byte position i >> 3)
 * lives in s[w + 4 j]: the batch array of modes.cl is bitsliced in place, with no register moves */
#define AES_BS_AT(i) (((i) >> 5) + 4 * ((i) & 31))
/* bit b of byte position p */
#define AES_BS_PB(p, b) AES_BS_AT(8 * (p) + (b))

/* the 32 words of round key r for the 4 byte positions of column c (state words 32 c .. 32 c + 31) */
DEVICE_FN void aes_bs_key_column(uint *kk, GLOBAL_RO const uint4 *RESTRICT bsk, int r, int c)
{
#pragma unroll
    for (int q = 0; q < 8; q++) {
        const uint4 v = bsk[32 * r + 8 * c + q];
        kk[4 * q + 0] = v.x; kk[4 * q + 1] = v.y; kk[4 * q + 2] = v.z; kk[4 * q + 3] = v.w;
    }
}

/* SubBytes (encrypt) or InvSubBytes, every byte position in place */
DEVICE_FN void aes_bs_sub_bytes(uint *s)
{
#pragma unroll
    for (int p = 0; p < 16; p++) {
        uint q[8];
#pragma unroll
        for (int b = 0; b < 8; b++) q[b] = s[AES_BS_PB(p, b)];
        aes_bs_sbox(q);
#pragma unroll
        for (int b = 0; b < 8; b++) s[AES_BS_PB(p, b)] = q[b];
    }
}

DEVICE_FN void aes_bs_inv_sub_bytes(uint *s)
{
#pragma unroll
    for (int p = 0; p < 16; p++) {
        uint q[8];
#pragma unroll
        for (int b = 0; b < 8; b++) q[b] = s[AES_BS_PB(p, b)];
        aes_bs_inv_sbox(q);
#pragma unroll
        for (int b = 0; b < 8; b++) s[AES_BS_PB(p, b)] = q[b];
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
        for (int i = 0; i < 32; i++) s[AES_BS_AT(32 * c + i)] ^= kk[i];
    }
}

/* one column of MixColumns plus its round key: a[i][j] = bit j of row i, kk[8i+j] the key masks,
 * o[8i+j] the result (w = a_i+1 + (a_i+2 + a_i+3) + key, then out_i = xtime(a_i + a_i+1) + w, one
 * LOP3 each).  Shared by encryption and by decryption (InvMixColumns = MixColumns after a
 * pre-multiplication there). */
DEVICE_FN void aes_bs_mix_column_key(uint a[4][8], const uint *kk, uint *o)
{
    uint u[4][8];
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 8; j++) u[i][j] = a[i][j] ^ a[(i + 1) & 3][j];
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint w[8];
#pragma unroll
        for (int j = 0; j < 8; j++) w[j] = aes_bs_xor3(a[(i + 1) & 3][j], u[(i + 2) & 3][j], kk[8 * i + j]);
        const uint h = u[i][7];
        uint *q = o + 8 * i;
        q[0] = h ^ w[0];
        q[1] = aes_bs_xor3(u[i][0], h, w[1]);
        q[2] = u[i][1] ^ w[2];
        q[3] = aes_bs_xor3(u[i][2], h, w[3]);
        q[4] = aes_bs_xor3(u[i][3], h, w[4]);
        q[5] = u[i][4] ^ w[5];
        q[6] = u[i][5] ^ w[6];
        q[7] = u[i][6] ^ w[7];
    }
}

/* InvMixColumns = MixColumns after this: a_0,2 += {04}(a_0 + a_2), a_1,3 += {04}(a_1 + a_3) */
DEVICE_FN void aes_bs_inv_premul(uint a[4][8])
{
#pragma unroll
    for (int i = 0; i < 2; i++) {
        /* y = {04} d = xtime(xtime(d)), d = a_i + a_i+2; a_i += y, a_i+2 += y */
        uint d[8];
#pragma unroll
        for (int j = 0; j < 8; j++) d[j] = a[i][j] ^ a[i + 2][j];
        const uint y4 = aes_bs_xor3(d[2], d[6], d[7]);
#pragma unroll
        for (int h = 0; h < 4; h += 2) {
            uint *x = a[i + h];
            x[0] ^= d[6];
            x[1] = aes_bs_xor3(x[1], d[6], d[7]);
            x[2] = aes_bs_xor3(x[2], d[0], d[7]);
            x[3] = aes_bs_xor3(x[3], d[1], d[6]);
            x[4] ^= y4;
            x[5] = aes_bs_xor3(x[5], d[3], d[7]);
            x[6] ^= d[4];
            x[7] ^= d[5];
        }
    }
}

/* The linear part of round r, in place, with its round key:
 *   encryption (inv = 0): s <- MixColumns(ShiftRows(s)) + key, or ShiftRows(s) + key in the last
 *     round (mix = 0); output column c row i takes input byte position 4 ((c + i) mod 4) + i;
 *   decryption (inv = 1): InvShiftRows (byte position 4 ((c - i) mod 4) + i) and InvMixColumns =
 *     MixColumns after aes_bs_inv_premul; the equivalent inverse cipher's middle round keys are
 *     InvMixColumns-transformed, so the key is added after mixing in both directions.
 * key = 0 (with mix = 0 only) leaves the round key out: the CTR counter tiles' last round.
 * inv, mix and key are compile-time constants at every call (the code is specialised by inlining). */
DEVICE_FN void aes_bs_linear(uint *s, GLOBAL_RO const uint4 *RESTRICT bsk, int r, const int inv,
                             const int mix, const int key)
{
    uint t[128];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        uint a[4][8], kk[32];
        if (key) aes_bs_key_column(kk, bsk, r, c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 8; j++) a[i][j] = s[AES_BS_PB(4 * ((inv ? c - i : c + i) & 3) + i, j)];
        }
        if (mix) {
            if (inv) aes_bs_inv_premul(a);
            aes_bs_mix_column_key(a, kk, t + 32 * c);
        } else {
#pragma unroll
            for (int i = 0; i < 4; i++) {
#pragma unroll
                for (int j = 0; j < 8; j++) t[32 * c + 8 * i + j] = key ? a[i][j] ^ kk[8 * i + j] : a[i][j];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 128; i++) s[AES_BS_AT(i)] = t[i];
}

/* ---- bitslicing ----------------------------------------------------------------------------------
 * For each word w, the 32 words s[w + 4 k] (word w of block k) are a 32x32 bit matrix; transposing
 * it in place gives s[w + 4 j] bit k = bit j of word w of block k = state word 32 w + j.  The
 * transpose is its own inverse.  Swap stage sh exchanges the bits under ~m of a with the bits
 * under m of b (a holds row k, b row k + sh, k & sh == 0). */
#define AES_BS_SWAP(a, b, sh, m)                              \
    {                                                          \
        const uint sa_ = (a), sb_ = (b);                       \
        (a) = aes_bs_sel((m), sa_, sb_ << (sh));               \
        (b) = aes_bs_sel((m), sa_ >> (sh), sb_);               \
    }
/* stages 16 and 8 move whole bytes: one byte permutation per word */
#define AES_BS_SWAP_BYTES(a, b, sel_a, sel_b)                 \
    {                                                          \
        const uint sa_ = (a), sb_ = (b);                       \
        (a) = BYTE_PERM(sa_, sb_, (sel_a));                  \
        (b) = BYTE_PERM(sa_, sb_, (sel_b));                  \
    }

/* the 32x32 bit matrix s[o + st k], k < 32 (o, st compile-time constants after inlining) */
DEVICE_FN void aes_bs_transpose32(uint *s, const int o, const int st)
{
    /* sh = 16: a = (a.lo16, b.lo16), b = (a.hi16, b.hi16) */
#pragma unroll
    for (int k = 0; k < 16; k++) AES_BS_SWAP_BYTES(s[o + st * k], s[o + st * (k + 16)], 0x5410u, 0x7632u)
    /* sh = 8: a = (a0, b0, a2, b2), b = (a1, b1, a3, b3) */
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 8) == 0) AES_BS_SWAP_BYTES(s[o + st * k], s[o + st * (k + 8)], 0x6240u, 0x7351u)
    }
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 4) == 0) AES_BS_SWAP(s[o + st * k], s[o + st * (k + 4)], 4, 0x0f0f0f0fu)
    }
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if ((k & 2) == 0) AES_BS_SWAP(s[o + st * k], s[o + st * (k + 2)], 2, 0x33333333u)
    }
#pragma unroll
    for (int k = 0; k < 32; k += 2) AES_BS_SWAP(s[o + st * k], s[o + st * (k + 1)], 1, 0x55555555u)
}

DEVICE_FN void aes_bs_transpose(uint *s)
{
#pragma unroll
    for (int w = 0; w < 4; w++) aes_bs_transpose32(s, w, 4);
}

/* ---- CTR counter blocks made bitsliced (the optional counter-tile hook of modes.cl) -----------------
 * With work-groups of CG_LOCAL_SIZE = 2^m work-items, modes.cl's tiled CTR kernel gives each
 * work-item c, the counter block of its slot 0 (4 words as in the block), and guarantees that slot k
 * holds counter c + k 2^m with bits m .. m + 4 of c zero: no carry, so every bitsliced word of the
 * 32 counters is one bit of c, the same in all 32 blocks (0 or ~0), except the five words of counter
 * bits m + t, which are bit t of the slot number k: the fixed masks 0xaaaaaaaa, 0xcccccccc, ...
 * The first round key is added to c before slicing (plain round keys follow the masks in the key
 * buffer).  This replaces the input transpose and the first AddRoundKey (832 + 128 operations per
 * 32 blocks, with the counters' own arithmetic) by ~135.  The last round key is not added in the
 * bitsliced domain either: the last round is S-box then ShiftRows (register renaming) and the
 * transpose, and kx gets the plain key for the mode to add with the data (one 3-input XOR, where
 * the keystream alone needed a 2-input one).  Only the counters are public-data dependent; keys
 * enter as before, through XORs. */
#if defined(CG_LOCAL_SIZE) && CG_BLOCK_WORDS == 4 && !defined(AES_BS_NO_CTR_TILE)
#if (CG_LOCAL_SIZE & (CG_LOCAL_SIZE - 1)) == 0 && CG_LOCAL_SIZE <= 1024
#define CG_CTR_TILE 1
#define AES_BS_LOG2_LS (CG_LOCAL_SIZE >= 1024 ? 10 : CG_LOCAL_SIZE >= 512 ? 9 : CG_LOCAL_SIZE >= 256 ? 8 : \
                        CG_LOCAL_SIZE >= 128 ? 7 : CG_LOCAL_SIZE >= 64 ? 6 : CG_LOCAL_SIZE >= 32 ? 5 :   \
                        CG_LOCAL_SIZE >= 16 ? 4 : CG_LOCAL_SIZE >= 8 ? 3 : CG_LOCAL_SIZE >= 4 ? 2 :      \
                        CG_LOCAL_SIZE >= 2 ? 1 : 0)
#endif
#endif

#ifdef CG_CTR_TILE
/* 0 or ~0: bit j of x (j a compile-time constant) */
DEVICE_FN uint aes_bs_bit_mask(uint x, const int j)
{
#if AES_BS_ASM
    /* byte j >> 3 of x << (7 - (j & 7)) has the bit as its sign: prmt replicates it (one PRMT; the
     * eight shifts per word go to the IMAD pipe) */
    uint r;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(x << (7 - (j & 7))), "r"(0x8888u | (0x1111u * (j >> 3))));
    return r;
#else
    return (uint)((int)(x << (31 - j)) >> 31);
#endif
}

DEVICE_FN void aes_bs_ctr_slice(uint *s, const uint *c, GLOBAL_RO const uint4 *RESTRICT bsk)
{
    const uint4 k0 = bsk[32 * (AES_ROUNDS + 1)];      /* plain round key 0 */
    const uint z[4] = {c[0] ^ k0.x, c[1] ^ k0.y, c[2] ^ k0.z, c[3] ^ k0.w};
#pragma unroll
    for (int i = 0; i < 128; i++) s[AES_BS_AT(i)] = aes_bs_bit_mask(z[i >> 5], i & 31);
    /* counter bit m + t (big-endian counter: byte 15 - (bit >> 3)) is bit t of the slot k */
    const uint slot_bits[5] = {0xaaaaaaaau, 0xccccccccu, 0xf0f0f0f0u, 0xff00ff00u, 0xffff0000u};
#pragma unroll
    for (int t = 0; t < 5; t++) {
        const int i = AES_BS_LOG2_LS + t;
        s[AES_BS_PB(15 - (i >> 3), i & 7)] ^= slot_bits[t];
    }
}

/* s <- the 32 counter blocks of c (see above) encrypted, less the last round key; kx <- that key */
DEVICE_FN void cg_ctr_tile_batch(uint *s, const uint *c, uint *kx CG_ENC_PARAMS)
{
#pragma unroll 1
    for (int r = 0; r <= AES_ROUNDS; r++) {
        if (r == 0) {
            aes_bs_ctr_slice(s, c, bsk);
        } else {
            aes_bs_sub_bytes(s);
            if (r < AES_ROUNDS)
                aes_bs_linear(s, bsk, r, 0, 1, 1);
            else {
                aes_bs_linear(s, bsk, r, 0, 0, 0);   /* ShiftRows alone: register renaming */
                aes_bs_transpose(s);                 /* bitsliced -> blocks */
            }
        }
    }
    const uint4 kl = bsk[32 * (AES_ROUNDS + 1) + AES_ROUNDS];
    kx[0] = kl.x; kx[1] = kl.y; kx[2] = kl.z; kx[3] = kl.w;
}
#endif

/* ---- the uniform batch interface: CG_BATCH = 32 blocks, block k in s[4k .. 4k+3] -----------------
 * One rolled loop (the code of a round is large, and the key loads must depend on the round number
 * so that they are not hoisted out of the caller's block loop).  Bitslicing back happens inside the
 * loop too: the caller's stores then see opaque loop results, so the compiler cannot sink the
 * transpose into each block's conditional store (it did, recomputing every output word from scratch
 * at 5x the cost).  All branches test the round counter only. */
DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll 1
    for (int r = 0; r <= AES_ROUNDS + 1; r++) {
        if (r == 0) {
            aes_bs_transpose(s);                 /* blocks -> bitsliced */
            aes_bs_add_key(s, bsk, 0);
        } else if (r <= AES_ROUNDS) {
            aes_bs_sub_bytes(s);
            if (r < AES_ROUNDS)
                aes_bs_linear(s, bsk, r, 0, 1, 1);
            else
                aes_bs_linear(s, bsk, r, 0, 0, 1);
        } else {
            aes_bs_transpose(s);                 /* bitsliced -> blocks */
        }
    }
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    /* the equivalent inverse cipher (FIPS 197 5.3.5) with the host's decryption schedule */
#pragma unroll 1
    for (int r = 0; r <= AES_ROUNDS + 1; r++) {
        if (r == 0) {
            aes_bs_transpose(s);
            aes_bs_add_key(s, bsk, 0);
        } else if (r <= AES_ROUNDS) {
            /* InvShiftRows commutes with InvSubBytes: substitute in place, shift while mixing */
            aes_bs_inv_sub_bytes(s);
            if (r < AES_ROUNDS)
                aes_bs_linear(s, bsk, r, 1, 1, 1);
            else
                aes_bs_linear(s, bsk, r, 1, 0, 1);
        } else {
            aes_bs_transpose(s);
        }
    }
}
