/* des.cl - DES (FIPS 46-3) and TDEA (NIST SP 800-67) block functions, the "fast" implementation,
 * for the generic mode kernels (modes.cl).
 *
 * The classic SP-box formulation (Outerbridge's d3des; Hoey's swap-move permutations):
 *
 * - a block is 2 little-endian words of its bytes; the halves are read big-endian (FIPS 46-3
 *   numbers bit 1 as the most significant of byte 0);
 * - IP and IP^-1 are 5 "swap-moves" each (t = ((a >> s) ^ b) & m; b ^= t; a ^= t << s) and a
 *   rotation, not 64 single-bit moves;
 * - both halves are held rotated left by one bit: then the eight 6-bit groups of E(R) are the low
 *   six bits of the four bytes of R (groups 2, 4, 6, 8) and of R rotated right by 4 (groups
 *   1, 3, 5, 7), so E costs one rotation; the host gives the round keys in the same shape (key
 *   layout "sp" of ciphers/des.py: two words per round key);
 * - S-box and P are merged: SP_j[x] = P(S_j(x) in its 4 output bits), rotated like the halves,
 *   8 tables of 64 words (computed by ciphers/des.py sp_tables()), so a round is 2 key additions,
 *   one rotation, 8 extractions, 8 lookups and 8 XORs;
 * - the tables live in work-group memory, DES_COPIES copies interleaved so that copy c lies in the
 *   banks c, c + DES_COPIES, ...: lane l reads copy l % DES_COPIES (as aes.cl);
 * - the round keys (16 per pass, DES_PASSES = 1 for DES, 3 for TDEA) are loaded once per
 *   work-item into registers (DES_KEYS_IN_REGS = 1) or into work-group memory (0: every lane
 *   reads the same word, a broadcast);
 * - TDEA runs 48 rounds in one work-item: IP^-1 of a pass and IP of the next cancel, only the
 *   halves swap; the host orders the round keys (K1, K2 reversed, K3 for encryption).
 *
 * Compile-time options:
 *   DES_PASSES        1 (DES) or 3 (TDEA); from the cipher's defines().
 *   DES_COPIES        copies of the 2 KiB of SP tables in work-group memory: 1, 2, 4, 8, 16, 32
 *                     (32: no bank conflicts between lanes, 64 KiB per work-group).
 *   DES_KEYS_IN_REGS  1: round keys in registers (32 or 96 words); 0: in work-group memory.
 *   CG_BATCH          blocks per work-item per step.
 *
 * SECURITY: lookups indexed by secret state leak through shared-memory bank conflicts and timing;
 * this kernel is NOT constant-time.
 */
#define CG_BLOCK_WORDS 2
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef DES_PASSES
#error "DES_PASSES comes from the cipher's defines()"
#endif
#ifndef DES_COPIES
#define DES_COPIES 16
#endif
#ifndef DES_KEYS_IN_REGS
#define DES_KEYS_IN_REGS 1
#endif
#define DES_NK (32 * DES_PASSES)
#define DES_TSIZE (512 * DES_COPIES)

/* SP_1 .. SP_8, 64 words each: ROTL(P(S_j(x) << (28 - 4 (j - 1))), 1), from ciphers/des.py */
CONST_TABLE uint DES_SP[512] = {
    0x01010400u, 0x00000000u, 0x00010000u, 0x01010404u, 0x01010004u, 0x00010404u, 0x00000004u, 0x00010000u,
    0x00000400u, 0x01010400u, 0x01010404u, 0x00000400u, 0x01000404u, 0x01010004u, 0x01000000u, 0x00000004u,
    0x00000404u, 0x01000400u, 0x01000400u, 0x00010400u, 0x00010400u, 0x01010000u, 0x01010000u, 0x01000404u,
    0x00010004u, 0x01000004u, 0x01000004u, 0x00010004u, 0x00000000u, 0x00000404u, 0x00010404u, 0x01000000u,
    0x00010000u, 0x01010404u, 0x00000004u, 0x01010000u, 0x01010400u, 0x01000000u, 0x01000000u, 0x00000400u,
    0x01010004u, 0x00010000u, 0x00010400u, 0x01000004u, 0x00000400u, 0x00000004u, 0x01000404u, 0x00010404u,
    0x01010404u, 0x00010004u, 0x01010000u, 0x01000404u, 0x01000004u, 0x00000404u, 0x00010404u, 0x01010400u,
    0x00000404u, 0x01000400u, 0x01000400u, 0x00000000u, 0x00010004u, 0x00010400u, 0x00000000u, 0x01010004u,
    0x80108020u, 0x80008000u, 0x00008000u, 0x00108020u, 0x00100000u, 0x00000020u, 0x80100020u, 0x80008020u,
    0x80000020u, 0x80108020u, 0x80108000u, 0x80000000u, 0x80008000u, 0x00100000u, 0x00000020u, 0x80100020u,
    0x00108000u, 0x00100020u, 0x80008020u, 0x00000000u, 0x80000000u, 0x00008000u, 0x00108020u, 0x80100000u,
    0x00100020u, 0x80000020u, 0x00000000u, 0x00108000u, 0x00008020u, 0x80108000u, 0x80100000u, 0x00008020u,
    0x00000000u, 0x00108020u, 0x80100020u, 0x00100000u, 0x80008020u, 0x80100000u, 0x80108000u, 0x00008000u,
    0x80100000u, 0x80008000u, 0x00000020u, 0x80108020u, 0x00108020u, 0x00000020u, 0x00008000u, 0x80000000u,
    0x00008020u, 0x80108000u, 0x00100000u, 0x80000020u, 0x00100020u, 0x80008020u, 0x80000020u, 0x00100020u,
    0x00108000u, 0x00000000u, 0x80008000u, 0x00008020u, 0x80000000u, 0x80100020u, 0x80108020u, 0x00108000u,
    0x00000208u, 0x08020200u, 0x00000000u, 0x08020008u, 0x08000200u, 0x00000000u, 0x00020208u, 0x08000200u,
    0x00020008u, 0x08000008u, 0x08000008u, 0x00020000u, 0x08020208u, 0x00020008u, 0x08020000u, 0x00000208u,
    0x08000000u, 0x00000008u, 0x08020200u, 0x00000200u, 0x00020200u, 0x08020000u, 0x08020008u, 0x00020208u,
    0x08000208u, 0x00020200u, 0x00020000u, 0x08000208u, 0x00000008u, 0x08020208u, 0x00000200u, 0x08000000u,
    0x08020200u, 0x08000000u, 0x00020008u, 0x00000208u, 0x00020000u, 0x08020200u, 0x08000200u, 0x00000000u,
    0x00000200u, 0x00020008u, 0x08020208u, 0x08000200u, 0x08000008u, 0x00000200u, 0x00000000u, 0x08020008u,
    0x08000208u, 0x00020000u, 0x08000000u, 0x08020208u, 0x00000008u, 0x00020208u, 0x00020200u, 0x08000008u,
    0x08020000u, 0x08000208u, 0x00000208u, 0x08020000u, 0x00020208u, 0x00000008u, 0x08020008u, 0x00020200u,
    0x00802001u, 0x00002081u, 0x00002081u, 0x00000080u, 0x00802080u, 0x00800081u, 0x00800001u, 0x00002001u,
    0x00000000u, 0x00802000u, 0x00802000u, 0x00802081u, 0x00000081u, 0x00000000u, 0x00800080u, 0x00800001u,
    0x00000001u, 0x00002000u, 0x00800000u, 0x00802001u, 0x00000080u, 0x00800000u, 0x00002001u, 0x00002080u,
    0x00800081u, 0x00000001u, 0x00002080u, 0x00800080u, 0x00002000u, 0x00802080u, 0x00802081u, 0x00000081u,
    0x00800080u, 0x00800001u, 0x00802000u, 0x00802081u, 0x00000081u, 0x00000000u, 0x00000000u, 0x00802000u,
    0x00002080u, 0x00800080u, 0x00800081u, 0x00000001u, 0x00802001u, 0x00002081u, 0x00002081u, 0x00000080u,
    0x00802081u, 0x00000081u, 0x00000001u, 0x00002000u, 0x00800001u, 0x00002001u, 0x00802080u, 0x00800081u,
    0x00002001u, 0x00002080u, 0x00800000u, 0x00802001u, 0x00000080u, 0x00800000u, 0x00002000u, 0x00802080u,
    0x00000100u, 0x02080100u, 0x02080000u, 0x42000100u, 0x00080000u, 0x00000100u, 0x40000000u, 0x02080000u,
    0x40080100u, 0x00080000u, 0x02000100u, 0x40080100u, 0x42000100u, 0x42080000u, 0x00080100u, 0x40000000u,
    0x02000000u, 0x40080000u, 0x40080000u, 0x00000000u, 0x40000100u, 0x42080100u, 0x42080100u, 0x02000100u,
    0x42080000u, 0x40000100u, 0x00000000u, 0x42000000u, 0x02080100u, 0x02000000u, 0x42000000u, 0x00080100u,
    0x00080000u, 0x42000100u, 0x00000100u, 0x02000000u, 0x40000000u, 0x02080000u, 0x42000100u, 0x40080100u,
    0x02000100u, 0x40000000u, 0x42080000u, 0x02080100u, 0x40080100u, 0x00000100u, 0x02000000u, 0x42080000u,
    0x42080100u, 0x00080100u, 0x42000000u, 0x42080100u, 0x02080000u, 0x00000000u, 0x40080000u, 0x42000000u,
    0x00080100u, 0x02000100u, 0x40000100u, 0x00080000u, 0x00000000u, 0x40080000u, 0x02080100u, 0x40000100u,
    0x20000010u, 0x20400000u, 0x00004000u, 0x20404010u, 0x20400000u, 0x00000010u, 0x20404010u, 0x00400000u,
    0x20004000u, 0x00404010u, 0x00400000u, 0x20000010u, 0x00400010u, 0x20004000u, 0x20000000u, 0x00004010u,
    0x00000000u, 0x00400010u, 0x20004010u, 0x00004000u, 0x00404000u, 0x20004010u, 0x00000010u, 0x20400010u,
    0x20400010u, 0x00000000u, 0x00404010u, 0x20404000u, 0x00004010u, 0x00404000u, 0x20404000u, 0x20000000u,
    0x20004000u, 0x00000010u, 0x20400010u, 0x00404000u, 0x20404010u, 0x00400000u, 0x00004010u, 0x20000010u,
    0x00400000u, 0x20004000u, 0x20000000u, 0x00004010u, 0x20000010u, 0x20404010u, 0x00404000u, 0x20400000u,
    0x00404010u, 0x20404000u, 0x00000000u, 0x20400010u, 0x00000010u, 0x00004000u, 0x20400000u, 0x00404010u,
    0x00004000u, 0x00400010u, 0x20004010u, 0x00000000u, 0x20404000u, 0x20000000u, 0x00400010u, 0x20004010u,
    0x00200000u, 0x04200002u, 0x04000802u, 0x00000000u, 0x00000800u, 0x04000802u, 0x00200802u, 0x04200800u,
    0x04200802u, 0x00200000u, 0x00000000u, 0x04000002u, 0x00000002u, 0x04000000u, 0x04200002u, 0x00000802u,
    0x04000800u, 0x00200802u, 0x00200002u, 0x04000800u, 0x04000002u, 0x04200000u, 0x04200800u, 0x00200002u,
    0x04200000u, 0x00000800u, 0x00000802u, 0x04200802u, 0x00200800u, 0x00000002u, 0x04000000u, 0x00200800u,
    0x04000000u, 0x00200800u, 0x00200000u, 0x04000802u, 0x04000802u, 0x04200002u, 0x04200002u, 0x00000002u,
    0x00200002u, 0x04000000u, 0x04000800u, 0x00200000u, 0x04200800u, 0x00000802u, 0x00200802u, 0x04200800u,
    0x00000802u, 0x04000002u, 0x04200802u, 0x04200000u, 0x00200800u, 0x00000000u, 0x00000002u, 0x04200802u,
    0x00000000u, 0x00200802u, 0x04200000u, 0x00000800u, 0x04000002u, 0x04000800u, 0x00000800u, 0x00200002u,
    0x10001040u, 0x00001000u, 0x00040000u, 0x10041040u, 0x10000000u, 0x10001040u, 0x00000040u, 0x10000000u,
    0x00040040u, 0x10040000u, 0x10041040u, 0x00041000u, 0x10041000u, 0x00041040u, 0x00001000u, 0x00000040u,
    0x10040000u, 0x10000040u, 0x10001000u, 0x00001040u, 0x00041000u, 0x00040040u, 0x10040040u, 0x10041000u,
    0x00001040u, 0x00000000u, 0x00000000u, 0x10040040u, 0x10000040u, 0x10001000u, 0x00041040u, 0x00040000u,
    0x00041040u, 0x00040000u, 0x10041000u, 0x00001000u, 0x00000040u, 0x10040040u, 0x00001000u, 0x00041040u,
    0x10001000u, 0x00000040u, 0x10000040u, 0x10040000u, 0x10040040u, 0x10000000u, 0x00040000u, 0x10001040u,
    0x00000000u, 0x10041040u, 0x00040040u, 0x10000040u, 0x10040000u, 0x10001000u, 0x10001040u, 0x00000000u,
    0x10041040u, 0x00041000u, 0x00041000u, 0x00001040u, 0x00001040u, 0x00040040u, 0x10000000u, 0x10041000u,
};

#if DES_KEYS_IN_REGS
#define DES_RK_PTR const uint *
#define DES_KEYS(rk) uint des_rk[DES_NK]; des_load_keys(des_rk, rk);
DEVICE_FN void des_load_keys(uint *dst, GLOBAL_RO const uint *RESTRICT src)
{
#pragma unroll
    for (int i = 0; i < DES_NK; i++) dst[i] = src[i];
}
#define DES_KEY_LOCALS
#else
#define DES_RK_PTR LOCAL_PTR const uint *
#define DES_KEYS(rk) \
    for (uint des_i = LID; des_i < DES_NK; des_i += LSIZE) des_rk[des_i] = (rk)[des_i];
#define DES_KEY_LOCALS LOCAL_VAR uint des_rk[DES_NK];
#endif

#define DES_SETUP(rk)                                                        \
    for (uint des_i = LID; des_i < DES_TSIZE; des_i += LSIZE)                \
        des_sp[des_i] = DES_SP[des_i / DES_COPIES];                          \
    DES_KEYS(rk)                                                             \
    LOCAL_PTR const uchar *des_t = (LOCAL_PTR const uchar *)des_sp + 4u * (LID & (DES_COPIES - 1u)); \
    BARRIER();

#define CG_ENC_LOCALS LOCAL_VAR uint des_sp[DES_TSIZE]; DES_KEY_LOCALS
#define CG_ENC_SETUP(rk) DES_SETUP(rk)
#define CG_ENC_PARAMS , DES_RK_PTR rk, LOCAL_PTR const uchar *t
#define CG_ENC_ARGS , des_rk, des_t
#define CG_DEC_LOCALS LOCAL_VAR uint des_sp[DES_TSIZE]; DES_KEY_LOCALS
#define CG_DEC_SETUP(dk) DES_SETUP(dk)
#define CG_DEC_PARAMS , DES_RK_PTR rk, LOCAL_PTR const uchar *t
#define CG_DEC_ARGS , des_rk, des_t

/* SP_{j+1}[x] in this lane's copy (t: the lane's byte offset into the tables; one multiply-add
 * makes the address, the table's offset is a constant) */
#define DES_SPL(j, x) (*(LOCAL_PTR const uint *)(t + (x) * (4u * DES_COPIES) + (j) * (256u * DES_COPIES)))
#define DES_G(w, sh) (((w) >> (sh)) & 63u)

/* l ^= f(r, K_n): r and l rotated left by one, K_n = (rk[i], rk[i + 1]) */
#define DES_ROUND(l, r, i)                                                          \
    {                                                                               \
        const uint des_a = ROTL32((r), 28) ^ rk[(i)];                               \
        const uint des_b = (r) ^ rk[(i) + 1];                                       \
        (l) ^= DES_SPL(0, DES_G(des_a, 24)) ^ DES_SPL(2, DES_G(des_a, 16))          \
             ^ DES_SPL(4, DES_G(des_a, 8)) ^ DES_SPL(6, DES_G(des_a, 0))            \
             ^ DES_SPL(1, DES_G(des_b, 24)) ^ DES_SPL(3, DES_G(des_b, 16))          \
             ^ DES_SPL(5, DES_G(des_b, 8)) ^ DES_SPL(7, DES_G(des_b, 0));           \
    }
/* 16 rounds of pass p, written out (a rolled loop would put the key array in local memory) */
#define DES_2R(l, r, p, n) DES_ROUND(l, r, 32 * (p) + 4 * (n)) DES_ROUND(r, l, 32 * (p) + 4 * (n) + 2)
#define DES_PASS(l, r, p) \
    DES_2R(l, r, p, 0) DES_2R(l, r, p, 1) DES_2R(l, r, p, 2) DES_2R(l, r, p, 3) \
    DES_2R(l, r, p, 4) DES_2R(l, r, p, 5) DES_2R(l, r, p, 6) DES_2R(l, r, p, 7)

/* swap-move: the bits of a (shifted right by s) and b under mask m exchanged */
#define DES_SWAPMOVE(a, b, s, m) { const uint des_w = (((a) >> (s)) ^ (b)) & (m); (b) ^= des_w; (a) ^= des_w << (s); }

DEVICE_FN void des_block(uint *s, DES_RK_PTR rk, LOCAL_PTR const uchar *t)
{
    uint l = BSWAP32(s[0]), r = BSWAP32(s[1]);
    /* IP, leaving both halves rotated left by one */
    DES_SWAPMOVE(l, r, 4, 0x0f0f0f0fu)
    DES_SWAPMOVE(l, r, 16, 0x0000ffffu)
    DES_SWAPMOVE(r, l, 2, 0x33333333u)
    DES_SWAPMOVE(r, l, 8, 0x00ff00ffu)
    r = ROTL32(r, 1);
    { const uint w = (l ^ r) & 0xaaaaaaaau; l ^= w; r ^= w; }
    l = ROTL32(l, 1);
    DES_PASS(l, r, 0)
#if DES_PASSES == 3
    /* IP^-1 then IP: the halves swap */
    DES_PASS(r, l, 1)
    DES_PASS(l, r, 2)
#elif DES_PASSES != 1
#error "DES_PASSES must be 1 or 3"
#endif
    /* (l, r) = (L16, R16); the pre-output is R16 L16: IP^-1 of it */
    r = ROTL32(r, 31);
    { const uint w = (l ^ r) & 0xaaaaaaaau; l ^= w; r ^= w; }
    l = ROTL32(l, 31);
    DES_SWAPMOVE(l, r, 8, 0x00ff00ffu)
    DES_SWAPMOVE(l, r, 2, 0x33333333u)
    DES_SWAPMOVE(r, l, 16, 0x0000ffffu)
    DES_SWAPMOVE(r, l, 4, 0x0f0f0f0fu)
    s[0] = BSWAP32(r);
    s[1] = BSWAP32(l);
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) des_block(s + 2 * b, rk, t);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) des_block(s + 2 * b, rk, t);
}
