/* misty1.cl - MISTY1 block functions (RFC 2994; ISO/IEC 18033-3) for the generic mode kernels
 * (modes.cl): 64-bit blocks, a 128-bit key, MISTY1_ROUNDS (8) rounds.
 *
 * Byte order.  The RFC works on big-endian halves: D0 = bytes 0..3, D1 = bytes 4..7, C = D1 || D0,
 * each half made of two big-endian 16-bit quarters.  The mode kernels hand over little-endian words
 * (s[0] = bytes 0..3), so each block is byte-swapped on the way in and out (BSWAP32).
 *
 * Two implementations, chosen by MISTY1_FAST (ciphergrid/algorithms/misty1.py):
 *
 *   0 ("reference")  the RFC's functions as written in its section 2.3: FI on the S-boxes S7/S9 in
 *                    constant memory, FO/FL/FLINV indexing the expanded key EK[0..31] of section 2.2
 *                    (the plain key layout) in device memory, one block per work-item.
 *   1 ("fast")       the same cipher on the "rounds" key layout (per FO: KO1..KO4, KI1..KI3; per FL:
 *                    KL1, KL2), with
 *                    - a fused FI: with x = hi9 || lo7, the first half of FI is A[hi] ^ B[lo] where
 *                      A[v] = (S9[v] & 0x7f) << 9 | S9[v] and B[u] = (S7[u] ^ u) << 9 | u, so FI is
 *                      y = A[hi] ^ B[lo] ^ KI;  FI = (y & 0xfe00) | (S9[y & 0x1ff] ^ (y >> 9)):
 *                      three lookups and a handful of 32-bit operations, no 7/9-bit juggling;
 *                    - FL on the whole 32-bit half: x ^= (x >> 16) & KL1; x ^= (x | KL2) << 16;
 *                    - tables in work-group memory: T9[v] = A[v] | S9[v] << 16 (512 words) and
 *                      T7[u] = B[u] (128 words), MISTY1_COPIES copies interleaved so that copy c lies
 *                      in banks c, c + COPIES, ...; lane l reads copy l % COPIES (fewer bank
 *                      conflicts between lanes for more shared memory: 2.5 KiB per copy);
 *                    - round keys in registers (MISTY1_KEYS_IN_REGS), persistent grid, CG_BATCH
 *                      blocks per work-item step.
 *
 * Compile-time options of the fast kernel (the lead's knobs):
 *   MISTY1_COPIES        copies of the tables (a power of two, 1..32); default 8 (20 KiB).
 *   MISTY1_KEYS_IN_REGS  1: the 76 round keys are loaded once per work-item into registers;
 *                        0: read from device memory at each use.
 *   MISTY1_SPLIT_T9      1: A and S9 in two 512-word tables (4.5 KiB per copy, no masking);
 *                        0: one packed table (2.5 KiB per copy, one mask or shift per lookup).
 *   CG_BATCH             blocks per work-item per step.
 *
 * The S-box tables S7 and S9 below are RFC 2994 section 2.3's S7TABLE and S9TABLE.
 *
 * SECURITY: both kernels index tables with secret data (constant memory, shared memory): neither is
 * constant-time; lookups leak through bank conflicts and cache timing.
 */
#define CG_BLOCK_WORDS 2
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef MISTY1_ROUNDS
#define MISTY1_ROUNDS 8
#endif
#if MISTY1_ROUNDS != 8
#error "kernels/misty1.cl is written for 8 rounds"
#endif
#ifndef MISTY1_FAST
#define MISTY1_FAST 1
#endif
#ifndef MISTY1_COPIES
#define MISTY1_COPIES 8
#endif
#ifndef MISTY1_KEYS_IN_REGS
#define MISTY1_KEYS_IN_REGS 1
#endif
#ifndef MISTY1_SPLIT_T9
#define MISTY1_SPLIT_T9 0
#endif

/* RFC 2994 section 2.3, S7TABLE */
CONST_TABLE uchar MISTY1_S7[128] = {
    0x1b, 0x32, 0x33, 0x5a, 0x3b, 0x10, 0x17, 0x54, 0x5b, 0x1a, 0x72, 0x73, 0x6b, 0x2c, 0x66, 0x49,
    0x1f, 0x24, 0x13, 0x6c, 0x37, 0x2e, 0x3f, 0x4a, 0x5d, 0x0f, 0x40, 0x56, 0x25, 0x51, 0x1c, 0x04,
    0x0b, 0x46, 0x20, 0x0d, 0x7b, 0x35, 0x44, 0x42, 0x2b, 0x1e, 0x41, 0x14, 0x4b, 0x79, 0x15, 0x6f,
    0x0e, 0x55, 0x09, 0x36, 0x74, 0x0c, 0x67, 0x53, 0x28, 0x0a, 0x7e, 0x38, 0x02, 0x07, 0x60, 0x29,
    0x19, 0x12, 0x65, 0x2f, 0x30, 0x39, 0x08, 0x68, 0x5f, 0x78, 0x2a, 0x4c, 0x64, 0x45, 0x75, 0x3d,
    0x59, 0x48, 0x03, 0x57, 0x7c, 0x4f, 0x62, 0x3c, 0x1d, 0x21, 0x5e, 0x27, 0x6a, 0x70, 0x4d, 0x3a,
    0x01, 0x6d, 0x6e, 0x63, 0x18, 0x77, 0x23, 0x05, 0x26, 0x76, 0x00, 0x31, 0x2d, 0x7a, 0x7f, 0x61,
    0x50, 0x22, 0x11, 0x06, 0x47, 0x16, 0x52, 0x4e, 0x71, 0x3e, 0x69, 0x43, 0x34, 0x5c, 0x58, 0x7d
};

/* RFC 2994 section 2.3, S9TABLE */
CONST_TABLE uint MISTY1_S9[512] = {
    0x1c3u, 0x0cbu, 0x153u, 0x19fu, 0x1e3u, 0x0e9u, 0x0fbu, 0x035u, 0x181u, 0x0b9u, 0x117u, 0x1ebu, 0x133u, 0x009u, 0x02du, 0x0d3u,
    0x0c7u, 0x14au, 0x037u, 0x07eu, 0x0ebu, 0x164u, 0x193u, 0x1d8u, 0x0a3u, 0x11eu, 0x055u, 0x02cu, 0x01du, 0x1a2u, 0x163u, 0x118u,
    0x14bu, 0x152u, 0x1d2u, 0x00fu, 0x02bu, 0x030u, 0x13au, 0x0e5u, 0x111u, 0x138u, 0x18eu, 0x063u, 0x0e3u, 0x0c8u, 0x1f4u, 0x01bu,
    0x001u, 0x09du, 0x0f8u, 0x1a0u, 0x16du, 0x1f3u, 0x01cu, 0x146u, 0x07du, 0x0d1u, 0x082u, 0x1eau, 0x183u, 0x12du, 0x0f4u, 0x19eu,
    0x1d3u, 0x0ddu, 0x1e2u, 0x128u, 0x1e0u, 0x0ecu, 0x059u, 0x091u, 0x011u, 0x12fu, 0x026u, 0x0dcu, 0x0b0u, 0x18cu, 0x10fu, 0x1f7u,
    0x0e7u, 0x16cu, 0x0b6u, 0x0f9u, 0x0d8u, 0x151u, 0x101u, 0x14cu, 0x103u, 0x0b8u, 0x154u, 0x12bu, 0x1aeu, 0x017u, 0x071u, 0x00cu,
    0x047u, 0x058u, 0x07fu, 0x1a4u, 0x134u, 0x129u, 0x084u, 0x15du, 0x19du, 0x1b2u, 0x1a3u, 0x048u, 0x07cu, 0x051u, 0x1cau, 0x023u,
    0x13du, 0x1a7u, 0x165u, 0x03bu, 0x042u, 0x0dau, 0x192u, 0x0ceu, 0x0c1u, 0x06bu, 0x09fu, 0x1f1u, 0x12cu, 0x184u, 0x0fau, 0x196u,
    0x1e1u, 0x169u, 0x17du, 0x031u, 0x180u, 0x10au, 0x094u, 0x1dau, 0x186u, 0x13eu, 0x11cu, 0x060u, 0x175u, 0x1cfu, 0x067u, 0x119u,
    0x065u, 0x068u, 0x099u, 0x150u, 0x008u, 0x007u, 0x17cu, 0x0b7u, 0x024u, 0x019u, 0x0deu, 0x127u, 0x0dbu, 0x0e4u, 0x1a9u, 0x052u,
    0x109u, 0x090u, 0x19cu, 0x1c1u, 0x028u, 0x1b3u, 0x135u, 0x16au, 0x176u, 0x0dfu, 0x1e5u, 0x188u, 0x0c5u, 0x16eu, 0x1deu, 0x1b1u,
    0x0c3u, 0x1dfu, 0x036u, 0x0eeu, 0x1eeu, 0x0f0u, 0x093u, 0x049u, 0x09au, 0x1b6u, 0x069u, 0x081u, 0x125u, 0x00bu, 0x05eu, 0x0b4u,
    0x149u, 0x1c7u, 0x174u, 0x03eu, 0x13bu, 0x1b7u, 0x08eu, 0x1c6u, 0x0aeu, 0x010u, 0x095u, 0x1efu, 0x04eu, 0x0f2u, 0x1fdu, 0x085u,
    0x0fdu, 0x0f6u, 0x0a0u, 0x16fu, 0x083u, 0x08au, 0x156u, 0x09bu, 0x13cu, 0x107u, 0x167u, 0x098u, 0x1d0u, 0x1e9u, 0x003u, 0x1feu,
    0x0bdu, 0x122u, 0x089u, 0x0d2u, 0x18fu, 0x012u, 0x033u, 0x06au, 0x142u, 0x0edu, 0x170u, 0x11bu, 0x0e2u, 0x14fu, 0x158u, 0x131u,
    0x147u, 0x05du, 0x113u, 0x1cdu, 0x079u, 0x161u, 0x1a5u, 0x179u, 0x09eu, 0x1b4u, 0x0ccu, 0x022u, 0x132u, 0x01au, 0x0e8u, 0x004u,
    0x187u, 0x1edu, 0x197u, 0x039u, 0x1bfu, 0x1d7u, 0x027u, 0x18bu, 0x0c6u, 0x09cu, 0x0d0u, 0x14eu, 0x06cu, 0x034u, 0x1f2u, 0x06eu,
    0x0cau, 0x025u, 0x0bau, 0x191u, 0x0feu, 0x013u, 0x106u, 0x02fu, 0x1adu, 0x172u, 0x1dbu, 0x0c0u, 0x10bu, 0x1d6u, 0x0f5u, 0x1ecu,
    0x10du, 0x076u, 0x114u, 0x1abu, 0x075u, 0x10cu, 0x1e4u, 0x159u, 0x054u, 0x11fu, 0x04bu, 0x0c4u, 0x1beu, 0x0f7u, 0x029u, 0x0a4u,
    0x00eu, 0x1f0u, 0x077u, 0x04du, 0x17au, 0x086u, 0x08bu, 0x0b3u, 0x171u, 0x0bfu, 0x10eu, 0x104u, 0x097u, 0x15bu, 0x160u, 0x168u,
    0x0d7u, 0x0bbu, 0x066u, 0x1ceu, 0x0fcu, 0x092u, 0x1c5u, 0x06fu, 0x016u, 0x04au, 0x0a1u, 0x139u, 0x0afu, 0x0f1u, 0x190u, 0x00au,
    0x1aau, 0x143u, 0x17bu, 0x056u, 0x18du, 0x166u, 0x0d4u, 0x1fbu, 0x14du, 0x194u, 0x19au, 0x087u, 0x1f8u, 0x123u, 0x0a7u, 0x1b8u,
    0x141u, 0x03cu, 0x1f9u, 0x140u, 0x02au, 0x155u, 0x11au, 0x1a1u, 0x198u, 0x0d5u, 0x126u, 0x1afu, 0x061u, 0x12eu, 0x157u, 0x1dcu,
    0x072u, 0x18au, 0x0aau, 0x096u, 0x115u, 0x0efu, 0x045u, 0x07bu, 0x08du, 0x145u, 0x053u, 0x05fu, 0x178u, 0x0b2u, 0x02eu, 0x020u,
    0x1d5u, 0x03fu, 0x1c9u, 0x1e7u, 0x1acu, 0x044u, 0x038u, 0x014u, 0x0b1u, 0x16bu, 0x0abu, 0x0b5u, 0x05au, 0x182u, 0x1c8u, 0x1d4u,
    0x018u, 0x177u, 0x064u, 0x0cfu, 0x06du, 0x100u, 0x199u, 0x130u, 0x15au, 0x005u, 0x120u, 0x1bbu, 0x1bdu, 0x0e0u, 0x04fu, 0x0d6u,
    0x13fu, 0x1c4u, 0x12au, 0x015u, 0x006u, 0x0ffu, 0x19bu, 0x0a6u, 0x043u, 0x088u, 0x050u, 0x15fu, 0x1e8u, 0x121u, 0x073u, 0x17eu,
    0x0bcu, 0x0c2u, 0x0c9u, 0x173u, 0x189u, 0x1f5u, 0x074u, 0x1ccu, 0x1e6u, 0x1a8u, 0x195u, 0x01fu, 0x041u, 0x00du, 0x1bau, 0x032u,
    0x03du, 0x1d1u, 0x080u, 0x0a8u, 0x057u, 0x1b9u, 0x162u, 0x148u, 0x0d9u, 0x105u, 0x062u, 0x07au, 0x021u, 0x1ffu, 0x112u, 0x108u,
    0x1c0u, 0x0a9u, 0x11du, 0x1b0u, 0x1a6u, 0x0cdu, 0x0f3u, 0x05cu, 0x102u, 0x05bu, 0x1d9u, 0x144u, 0x1f6u, 0x0adu, 0x0a5u, 0x03au,
    0x1cbu, 0x136u, 0x17fu, 0x046u, 0x0e1u, 0x01eu, 0x1ddu, 0x0e6u, 0x137u, 0x1fau, 0x185u, 0x08cu, 0x08fu, 0x040u, 0x1b5u, 0x0beu,
    0x078u, 0x000u, 0x0acu, 0x110u, 0x15eu, 0x124u, 0x002u, 0x1bcu, 0x0a2u, 0x0eau, 0x070u, 0x1fcu, 0x116u, 0x15cu, 0x04cu, 0x1c2u
};

#if !MISTY1_FAST
/* ---- reference: RFC 2994 section 2.3, function by function ---------------------------------- */

#define MISTY1_EK GLOBAL_RO const uint *

DEVICE_FN uint misty1_fi(uint fi_in, uint fi_key)
{
    uint d9 = fi_in >> 7;
    uint d7 = fi_in & 0x7fu;
    d9 = MISTY1_S9[d9] ^ d7;
    d7 = (uint)MISTY1_S7[d7] ^ d9;
    d7 = d7 & 0x7fu;
    d7 = d7 ^ (fi_key >> 9);
    d9 = d9 ^ (fi_key & 0x1ffu);
    d9 = MISTY1_S9[d9] ^ d7;
    return (d7 << 9) | d9;
}

DEVICE_FN uint misty1_fo(MISTY1_EK ek, uint fo_in, int k)
{
    uint t0 = fo_in >> 16;
    uint t1 = fo_in & 0xffffu;
    t0 = t0 ^ ek[k];
    t0 = misty1_fi(t0, ek[((k + 5) % 8) + 8]);
    t0 = t0 ^ t1;
    t1 = t1 ^ ek[(k + 2) % 8];
    t1 = misty1_fi(t1, ek[((k + 1) % 8) + 8]);
    t1 = t1 ^ t0;
    t0 = t0 ^ ek[(k + 7) % 8];
    t0 = misty1_fi(t0, ek[((k + 3) % 8) + 8]);
    t0 = t0 ^ t1;
    t1 = t1 ^ ek[(k + 4) % 8];
    return (t1 << 16) | t0;
}

DEVICE_FN uint misty1_fl(MISTY1_EK ek, uint fl_in, int k)
{
    uint d0 = fl_in >> 16;
    uint d1 = fl_in & 0xffffu;
    if (k % 2 == 0) {
        d1 = d1 ^ (d0 & ek[k / 2]);
        d0 = d0 ^ (d1 | ek[((k / 2 + 6) % 8) + 8]);
    } else {
        d1 = d1 ^ (d0 & ek[(((k - 1) / 2 + 2) % 8) + 8]);
        d0 = d0 ^ (d1 | ek[((k - 1) / 2 + 4) % 8]);
    }
    return (d0 << 16) | d1;
}

DEVICE_FN uint misty1_flinv(MISTY1_EK ek, uint fl_in, int k)
{
    uint d0 = fl_in >> 16;
    uint d1 = fl_in & 0xffffu;
    if (k % 2 == 0) {
        d0 = d0 ^ (d1 | ek[((k / 2 + 6) % 8) + 8]);
        d1 = d1 ^ (d0 & ek[k / 2]);
    } else {
        d0 = d0 ^ (d1 | ek[((k - 1) / 2 + 4) % 8]);
        d1 = d1 ^ (d0 & ek[(((k - 1) / 2 + 2) % 8) + 8]);
    }
    return (d0 << 16) | d1;
}

DEVICE_FN void misty1_encrypt1(uint *s, MISTY1_EK ek)
{
    uint d0 = BSWAP32(s[0]), d1 = BSWAP32(s[1]);
    /* 0 round */
    d0 = misty1_fl(ek, d0, 0);
    d1 = misty1_fl(ek, d1, 1);
    d1 = d1 ^ misty1_fo(ek, d0, 0);
    /* 1 round */
    d0 = d0 ^ misty1_fo(ek, d1, 1);
    /* 2 round */
    d0 = misty1_fl(ek, d0, 2);
    d1 = misty1_fl(ek, d1, 3);
    d1 = d1 ^ misty1_fo(ek, d0, 2);
    /* 3 round */
    d0 = d0 ^ misty1_fo(ek, d1, 3);
    /* 4 round */
    d0 = misty1_fl(ek, d0, 4);
    d1 = misty1_fl(ek, d1, 5);
    d1 = d1 ^ misty1_fo(ek, d0, 4);
    /* 5 round */
    d0 = d0 ^ misty1_fo(ek, d1, 5);
    /* 6 round */
    d0 = misty1_fl(ek, d0, 6);
    d1 = misty1_fl(ek, d1, 7);
    d1 = d1 ^ misty1_fo(ek, d0, 6);
    /* 7 round */
    d0 = d0 ^ misty1_fo(ek, d1, 7);
    /* final */
    d0 = misty1_fl(ek, d0, 8);
    d1 = misty1_fl(ek, d1, 9);
    /* C = D1 || D0 */
    s[0] = BSWAP32(d1);
    s[1] = BSWAP32(d0);
}

DEVICE_FN void misty1_decrypt1(uint *s, MISTY1_EK ek)
{
    uint d0 = BSWAP32(s[1]), d1 = BSWAP32(s[0]);
    d0 = misty1_flinv(ek, d0, 8);
    d1 = misty1_flinv(ek, d1, 9);
    d0 = d0 ^ misty1_fo(ek, d1, 7);
    d1 = d1 ^ misty1_fo(ek, d0, 6);
    d0 = misty1_flinv(ek, d0, 6);
    d1 = misty1_flinv(ek, d1, 7);
    d0 = d0 ^ misty1_fo(ek, d1, 5);
    d1 = d1 ^ misty1_fo(ek, d0, 4);
    d0 = misty1_flinv(ek, d0, 4);
    d1 = misty1_flinv(ek, d1, 5);
    d0 = d0 ^ misty1_fo(ek, d1, 3);
    d1 = d1 ^ misty1_fo(ek, d0, 2);
    d0 = misty1_flinv(ek, d0, 2);
    d1 = misty1_flinv(ek, d1, 3);
    d0 = d0 ^ misty1_fo(ek, d1, 1);
    d1 = d1 ^ misty1_fo(ek, d0, 0);
    d0 = misty1_flinv(ek, d0, 0);
    d1 = misty1_flinv(ek, d1, 1);
    /* P = D0 || D1 */
    s[0] = BSWAP32(d0);
    s[1] = BSWAP32(d1);
}

#define CG_ENC_LOCALS
#define CG_ENC_SETUP(rk) MISTY1_EK misty1_ek = (rk);
#define CG_ENC_PARAMS , MISTY1_EK ek
#define CG_ENC_ARGS , misty1_ek
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(rk) MISTY1_EK misty1_ek = (rk);
#define CG_DEC_PARAMS , MISTY1_EK ek
#define CG_DEC_ARGS , misty1_ek

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) misty1_encrypt1(s + 2 * k, ek);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) misty1_decrypt1(s + 2 * k, ek);
}

#else
/* ---- fast: fused FI tables in work-group memory, keys in registers ---------------------------- */

#define MISTY1_NRK 76                       /* 8 FO x 7 words + 10 FL x 2 words */
#define MISTY1_FO_KEY(k, j) (7 * (k) + (j))  /* j: 0..3 KO1..KO4, 4..6 KI1..KI3 */
#define MISTY1_FL_KEY(k, j) (56 + 2 * (k) + (j))

#if MISTY1_KEYS_IN_REGS
#define MISTY1_RK_PTR const uint *
#define MISTY1_KEYS(rk) uint misty1_rk[MISTY1_NRK]; misty1_load_keys(misty1_rk, rk);
DEVICE_FN void misty1_load_keys(uint *dst, GLOBAL_RO const uint *RESTRICT src)
{
#pragma unroll
    for (int i = 0; i < MISTY1_NRK; i++) dst[i] = src[i];
}
#else
#define MISTY1_RK_PTR GLOBAL_RO const uint *RESTRICT
#define MISTY1_KEYS(rk) GLOBAL_RO const uint *misty1_rk = (rk);
#endif

#define MISTY1_L(t, v) ((t)[(uint)(v) * MISTY1_COPIES + lane])
#if MISTY1_SPLIT_T9
#define MISTY1_T9_WORDS (2 * 512 * MISTY1_COPIES)
#define MISTY1_A(v) MISTY1_L(t9, v)
#define MISTY1_SB9(v) MISTY1_L(t9 + 512 * MISTY1_COPIES, v)
#define MISTY1_PUT_T9(t9, i, a, v) { (t9)[i] = (a); (t9)[512u * MISTY1_COPIES + (i)] = (v); }
#else
#define MISTY1_T9_WORDS (512 * MISTY1_COPIES)
#define MISTY1_A(v) (MISTY1_L(t9, v) & 0xffffu)
#define MISTY1_SB9(v) (MISTY1_L(t9, v) >> 16)
#define MISTY1_PUT_T9(t9, i, a, v) { (t9)[i] = (a) | ((v) << 16); }
#endif
#define MISTY1_T7_WORDS (128 * MISTY1_COPIES)

/* T9 (A | S9 << 16, or A then S9) and T7 (B), each value MISTY1_COPIES times in a row */
#define MISTY1_FILL(t9, t7)                                                         \
    for (uint m_i = LID; m_i < 512u * MISTY1_COPIES; m_i += LSIZE) {                \
        const uint m_v = MISTY1_S9[m_i / MISTY1_COPIES];                            \
        const uint m_a = ((m_v & 0x7fu) << 9) | m_v;                                \
        MISTY1_PUT_T9(t9, m_i, m_a, m_v)                                            \
    }                                                                               \
    for (uint m_i = LID; m_i < 128u * MISTY1_COPIES; m_i += LSIZE) {                \
        const uint m_u = m_i / MISTY1_COPIES;                                       \
        (t7)[m_i] = (((uint)MISTY1_S7[m_u] ^ m_u) << 9) | m_u;                      \
    }

#define MISTY1_SETUP(rk)                                                    \
    MISTY1_FILL(misty1_t9, misty1_t7)                                       \
    MISTY1_KEYS(rk)                                                         \
    const uint misty1_lane = LID & (MISTY1_COPIES - 1u);                    \
    BARRIER();

#define CG_ENC_LOCALS LOCAL_VAR uint misty1_t9[MISTY1_T9_WORDS]; LOCAL_VAR uint misty1_t7[MISTY1_T7_WORDS];
#define CG_ENC_SETUP(rk) MISTY1_SETUP(rk)
#define CG_ENC_PARAMS , MISTY1_RK_PTR rk, LOCAL_PTR const uint *t9, LOCAL_PTR const uint *t7, uint lane
#define CG_ENC_ARGS , misty1_rk, misty1_t9, misty1_t7, misty1_lane
#define CG_DEC_LOCALS CG_ENC_LOCALS
#define CG_DEC_SETUP(rk) MISTY1_SETUP(rk)
#define CG_DEC_PARAMS CG_ENC_PARAMS
#define CG_DEC_ARGS CG_ENC_ARGS

/* FI(x, ki) for a 16-bit x: three lookups */
#define MISTY1_FI(x, ki, y)                                                                 \
    (y = MISTY1_A((x) >> 7) ^ MISTY1_L(t7, (x) & 0x7fu) ^ (ki),                             \
     (y & 0xfe00u) | (MISTY1_SB9(y & 0x1ffu) ^ (y >> 9)))

/* FO(x, k): the three FI of RFC 2994's FO, the KO XORs on the 16-bit halves */
#define MISTY1_FO(x, k, out)                                                                \
    {                                                                                       \
        uint f_y;                                                                           \
        uint f_t0 = (x) >> 16, f_t1 = (x) & 0xffffu;                                        \
        f_t0 ^= rk[MISTY1_FO_KEY(k, 0)];                                                    \
        f_t0 = MISTY1_FI(f_t0, rk[MISTY1_FO_KEY(k, 4)], f_y) ^ f_t1;                        \
        f_t1 ^= rk[MISTY1_FO_KEY(k, 1)];                                                    \
        f_t1 = MISTY1_FI(f_t1, rk[MISTY1_FO_KEY(k, 5)], f_y) ^ f_t0;                        \
        f_t0 ^= rk[MISTY1_FO_KEY(k, 2)];                                                    \
        f_t0 = MISTY1_FI(f_t0, rk[MISTY1_FO_KEY(k, 6)], f_y) ^ f_t1;                        \
        f_t1 ^= rk[MISTY1_FO_KEY(k, 3)];                                                    \
        out ^= (f_t1 << 16) | f_t0;                                                         \
    }

/* FL / FLINV on the 32-bit half d0 || d1 */
#define MISTY1_FL(x, k)                                                                     \
    {                                                                                       \
        x ^= (x >> 16) & rk[MISTY1_FL_KEY(k, 0)];                                           \
        x ^= (x | rk[MISTY1_FL_KEY(k, 1)]) << 16;                                           \
    }
#define MISTY1_FLINV(x, k)                                                                  \
    {                                                                                       \
        x ^= (x | rk[MISTY1_FL_KEY(k, 1)]) << 16;                                           \
        x ^= (x >> 16) & rk[MISTY1_FL_KEY(k, 0)];                                           \
    }

DEVICE_FN void misty1_encrypt1(uint *s, MISTY1_RK_PTR rk, LOCAL_PTR const uint *t9,
                               LOCAL_PTR const uint *t7, uint lane)
{
    uint d0 = BSWAP32(s[0]), d1 = BSWAP32(s[1]);
#define MISTY1_ENC_2ROUNDS(r)       \
    MISTY1_FL(d0, r)                \
    MISTY1_FL(d1, r + 1)            \
    MISTY1_FO(d0, r, d1)            \
    MISTY1_FO(d1, r + 1, d0)
    MISTY1_ENC_2ROUNDS(0)
    MISTY1_ENC_2ROUNDS(2)
    MISTY1_ENC_2ROUNDS(4)
    MISTY1_ENC_2ROUNDS(6)
    MISTY1_FL(d0, 8)
    MISTY1_FL(d1, 9)
    s[0] = BSWAP32(d1);
    s[1] = BSWAP32(d0);
}

DEVICE_FN void misty1_decrypt1(uint *s, MISTY1_RK_PTR rk, LOCAL_PTR const uint *t9,
                               LOCAL_PTR const uint *t7, uint lane)
{
    uint d0 = BSWAP32(s[1]), d1 = BSWAP32(s[0]);
    MISTY1_FLINV(d0, 8)
    MISTY1_FLINV(d1, 9)
#define MISTY1_DEC_2ROUNDS(r)       \
    MISTY1_FO(d1, r + 1, d0)        \
    MISTY1_FO(d0, r, d1)            \
    MISTY1_FLINV(d0, r)             \
    MISTY1_FLINV(d1, r + 1)
    MISTY1_DEC_2ROUNDS(6)
    MISTY1_DEC_2ROUNDS(4)
    MISTY1_DEC_2ROUNDS(2)
    MISTY1_DEC_2ROUNDS(0)
    s[0] = BSWAP32(d0);
    s[1] = BSWAP32(d1);
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) misty1_encrypt1(s + 2 * k, rk, t9, t7, lane);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) misty1_decrypt1(s + 2 * k, rk, t9, t7, lane);
}

#endif /* MISTY1_FAST */
