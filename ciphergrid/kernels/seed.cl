/* seed.cl - SEED (RFC 4269) block functions for the generic mode kernels (modes.cl): the "fast"
 * implementation, the practices of aes.cl applied to SEED.
 *
 * SEED's G function is four table lookups, G(X) = SS0[X0] ^ SS1[X1] ^ SS2[X2] ^ SS3[X3] (the
 * SS tables of RFC 4269's implementation notes, 8 -> 32 bits; X0 the least significant byte);
 * F costs three G, a block 48 G, i.e. 192 lookups.  SS2 and SS3 are SS0 and SS1 rotated by 16 bits
 * (their bytes are the same S-box values under the masks in another order), so two tables suffice.
 * The tables below were computed by ciphergrid/algorithms/seed.py from the S-boxes it derives.
 *
 * Compile-time options (ciphergrid/algorithms/seed.py names the combinations):
 *   SEED_TABLES       2: SS0 and SS1 held, SS2/SS3 by one rotation per G; 4: all four held.
 *   SEED_COPIES       each table is held this many times in work-group memory, interleaved so that
 *                     copy c lies in banks c, c + COPIES, ...; lane l reads copy l % COPIES (a power
 *                     of two): 32 copies, no bank conflicts between lanes; 16, at most 2-way.
 *                     Memory: SEED_TABLES x 1 KiB x SEED_COPIES (2 x 16: 32 KiB; CUDA's static
 *                     shared memory stops at 48 KiB).
 *   SEED_PRMT         1: on NVIDIA compilers, bytes are extracted and words byte-swapped with byte
 *                     permutes (one PRMT each); elsewhere, and with 0, shifts and masks.
 *   SEED_MAD_INDEX    1: a lookup address is one multiply-add in bytes (b * 4 COPIES + 4 lane), as
 *                     in aes.cl; 0: a word index.
 *   SEED_KEYS_IN_REGS 1: the 32 round-key words are loaded once per work-item into registers;
 *                     0: read from device memory in every round.
 *   CG_BATCH          blocks per work-item per step (independent blocks give the scheduler ILP).
 *
 * Round keys: K_1,0 K_1,1 ... K_16,0 K_16,1 from the host; decryption is the same network with the
 * host's reversed schedule.  SEED's words are big-endian: each block word is byte-swapped on the
 * way in and out.
 *
 * SECURITY: lookups indexed by secret state leak through bank conflicts and timing; this is not a
 * constant-time implementation.
 */
#define CG_BLOCK_WORDS 4
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef SEED_ROUNDS
#define SEED_ROUNDS 16
#endif
#if SEED_ROUNDS != 16
#error "SEED has 16 rounds"
#endif
#ifndef SEED_TABLES
#define SEED_TABLES 2
#endif
#ifndef SEED_COPIES
#define SEED_COPIES 16
#endif
#ifndef SEED_PRMT
#define SEED_PRMT 1
#endif
#ifndef SEED_MAD_INDEX
#define SEED_MAD_INDEX 1
#endif
#ifndef SEED_KEYS_IN_REGS
#define SEED_KEYS_IN_REGS 1
#endif
#if SEED_TABLES != 2 && SEED_TABLES != 4
#error "SEED_TABLES must be 2 or 4"
#endif
#if (SEED_COPIES & (SEED_COPIES - 1)) != 0
#error "SEED_COPIES must be a power of two"
#endif

CONST_TABLE uint SEED_SS0[256] = {
    0x2989a1a8u, 0x05858184u, 0x16c6d2d4u, 0x13c3d3d0u, 0x14445054u, 0x1d0d111cu, 0x2c8ca0acu, 0x25052124u,
    0x1d4d515cu, 0x03434340u, 0x18081018u, 0x1e0e121cu, 0x11415150u, 0x3cccf0fcu, 0x0acac2c8u, 0x23436360u,
    0x28082028u, 0x04444044u, 0x20002020u, 0x1d8d919cu, 0x20c0e0e0u, 0x22c2e2e0u, 0x08c8c0c8u, 0x17071314u,
    0x2585a1a4u, 0x0f8f838cu, 0x03030300u, 0x3b4b7378u, 0x3b8bb3b8u, 0x13031310u, 0x12c2d2d0u, 0x2ecee2ecu,
    0x30407070u, 0x0c8c808cu, 0x3f0f333cu, 0x2888a0a8u, 0x32023230u, 0x1dcdd1dcu, 0x36c6f2f4u, 0x34447074u,
    0x2ccce0ecu, 0x15859194u, 0x0b0b0308u, 0x17475354u, 0x1c4c505cu, 0x1b4b5358u, 0x3d8db1bcu, 0x01010100u,
    0x24042024u, 0x1c0c101cu, 0x33437370u, 0x18889098u, 0x10001010u, 0x0cccc0ccu, 0x32c2f2f0u, 0x19c9d1d8u,
    0x2c0c202cu, 0x27c7e3e4u, 0x32427270u, 0x03838380u, 0x1b8b9398u, 0x11c1d1d0u, 0x06868284u, 0x09c9c1c8u,
    0x20406060u, 0x10405050u, 0x2383a3a0u, 0x2bcbe3e8u, 0x0d0d010cu, 0x3686b2b4u, 0x1e8e929cu, 0x0f4f434cu,
    0x3787b3b4u, 0x1a4a5258u, 0x06c6c2c4u, 0x38487078u, 0x2686a2a4u, 0x12021210u, 0x2f8fa3acu, 0x15c5d1d4u,
    0x21416160u, 0x03c3c3c0u, 0x3484b0b4u, 0x01414140u, 0x12425250u, 0x3d4d717cu, 0x0d8d818cu, 0x08080008u,
    0x1f0f131cu, 0x19899198u, 0x00000000u, 0x19091118u, 0x04040004u, 0x13435350u, 0x37c7f3f4u, 0x21c1e1e0u,
    0x3dcdf1fcu, 0x36467274u, 0x2f0f232cu, 0x27072324u, 0x3080b0b0u, 0x0b8b8388u, 0x0e0e020cu, 0x2b8ba3a8u,
    0x2282a2a0u, 0x2e4e626cu, 0x13839390u, 0x0d4d414cu, 0x29496168u, 0x3c4c707cu, 0x09090108u, 0x0a0a0208u,
    0x3f8fb3bcu, 0x2fcfe3ecu, 0x33c3f3f0u, 0x05c5c1c4u, 0x07878384u, 0x14041014u, 0x3ecef2fcu, 0x24446064u,
    0x1eced2dcu, 0x2e0e222cu, 0x0b4b4348u, 0x1a0a1218u, 0x06060204u, 0x21012120u, 0x2b4b6368u, 0x26466264u,
    0x02020200u, 0x35c5f1f4u, 0x12829290u, 0x0a8a8288u, 0x0c0c000cu, 0x3383b3b0u, 0x3e4e727cu, 0x10c0d0d0u,
    0x3a4a7278u, 0x07474344u, 0x16869294u, 0x25c5e1e4u, 0x26062224u, 0x00808080u, 0x2d8da1acu, 0x1fcfd3dcu,
    0x2181a1a0u, 0x30003030u, 0x37073334u, 0x2e8ea2acu, 0x36063234u, 0x15051114u, 0x22022220u, 0x38083038u,
    0x34c4f0f4u, 0x2787a3a4u, 0x05454144u, 0x0c4c404cu, 0x01818180u, 0x29c9e1e8u, 0x04848084u, 0x17879394u,
    0x35053134u, 0x0bcbc3c8u, 0x0ecec2ccu, 0x3c0c303cu, 0x31417170u, 0x11011110u, 0x07c7c3c4u, 0x09898188u,
    0x35457174u, 0x3bcbf3f8u, 0x1acad2d8u, 0x38c8f0f8u, 0x14849094u, 0x19495158u, 0x02828280u, 0x04c4c0c4u,
    0x3fcff3fcu, 0x09494148u, 0x39093138u, 0x27476364u, 0x00c0c0c0u, 0x0fcfc3ccu, 0x17c7d3d4u, 0x3888b0b8u,
    0x0f0f030cu, 0x0e8e828cu, 0x02424240u, 0x23032320u, 0x11819190u, 0x2c4c606cu, 0x1bcbd3d8u, 0x2484a0a4u,
    0x34043034u, 0x31c1f1f0u, 0x08484048u, 0x02c2c2c0u, 0x2f4f636cu, 0x3d0d313cu, 0x2d0d212cu, 0x00404040u,
    0x3e8eb2bcu, 0x3e0e323cu, 0x3c8cb0bcu, 0x01c1c1c0u, 0x2a8aa2a8u, 0x3a8ab2b8u, 0x0e4e424cu, 0x15455154u,
    0x3b0b3338u, 0x1cccd0dcu, 0x28486068u, 0x3f4f737cu, 0x1c8c909cu, 0x18c8d0d8u, 0x0a4a4248u, 0x16465254u,
    0x37477374u, 0x2080a0a0u, 0x2dcde1ecu, 0x06464244u, 0x3585b1b4u, 0x2b0b2328u, 0x25456164u, 0x3acaf2f8u,
    0x23c3e3e0u, 0x3989b1b8u, 0x3181b1b0u, 0x1f8f939cu, 0x1e4e525cu, 0x39c9f1f8u, 0x26c6e2e4u, 0x3282b2b0u,
    0x31013130u, 0x2acae2e8u, 0x2d4d616cu, 0x1f4f535cu, 0x24c4e0e4u, 0x30c0f0f0u, 0x0dcdc1ccu, 0x08888088u,
    0x16061214u, 0x3a0a3238u, 0x18485058u, 0x14c4d0d4u, 0x22426260u, 0x29092128u, 0x07070304u, 0x33033330u,
    0x28c8e0e8u, 0x1b0b1318u, 0x05050104u, 0x39497178u, 0x10809090u, 0x2a4a6268u, 0x2a0a2228u, 0x1a8a9298u,
};
CONST_TABLE uint SEED_SS1[256] = {
    0x38380830u, 0xe828c8e0u, 0x2c2d0d21u, 0xa42686a2u, 0xcc0fcfc3u, 0xdc1eced2u, 0xb03383b3u, 0xb83888b0u,
    0xac2f8fa3u, 0x60204060u, 0x54154551u, 0xc407c7c3u, 0x44044440u, 0x6c2f4f63u, 0x682b4b63u, 0x581b4b53u,
    0xc003c3c3u, 0x60224262u, 0x30330333u, 0xb43585b1u, 0x28290921u, 0xa02080a0u, 0xe022c2e2u, 0xa42787a3u,
    0xd013c3d3u, 0x90118191u, 0x10110111u, 0x04060602u, 0x1c1c0c10u, 0xbc3c8cb0u, 0x34360632u, 0x480b4b43u,
    0xec2fcfe3u, 0x88088880u, 0x6c2c4c60u, 0xa82888a0u, 0x14170713u, 0xc404c4c0u, 0x14160612u, 0xf434c4f0u,
    0xc002c2c2u, 0x44054541u, 0xe021c1e1u, 0xd416c6d2u, 0x3c3f0f33u, 0x3c3d0d31u, 0x8c0e8e82u, 0x98188890u,
    0x28280820u, 0x4c0e4e42u, 0xf436c6f2u, 0x3c3e0e32u, 0xa42585a1u, 0xf839c9f1u, 0x0c0d0d01u, 0xdc1fcfd3u,
    0xd818c8d0u, 0x282b0b23u, 0x64264662u, 0x783a4a72u, 0x24270723u, 0x2c2f0f23u, 0xf031c1f1u, 0x70324272u,
    0x40024242u, 0xd414c4d0u, 0x40014141u, 0xc000c0c0u, 0x70334373u, 0x64274763u, 0xac2c8ca0u, 0x880b8b83u,
    0xf437c7f3u, 0xac2d8da1u, 0x80008080u, 0x1c1f0f13u, 0xc80acac2u, 0x2c2c0c20u, 0xa82a8aa2u, 0x34340430u,
    0xd012c2d2u, 0x080b0b03u, 0xec2ecee2u, 0xe829c9e1u, 0x5c1d4d51u, 0x94148490u, 0x18180810u, 0xf838c8f0u,
    0x54174753u, 0xac2e8ea2u, 0x08080800u, 0xc405c5c1u, 0x10130313u, 0xcc0dcdc1u, 0x84068682u, 0xb83989b1u,
    0xfc3fcff3u, 0x7c3d4d71u, 0xc001c1c1u, 0x30310131u, 0xf435c5f1u, 0x880a8a82u, 0x682a4a62u, 0xb03181b1u,
    0xd011c1d1u, 0x20200020u, 0xd417c7d3u, 0x00020202u, 0x20220222u, 0x04040400u, 0x68284860u, 0x70314171u,
    0x04070703u, 0xd81bcbd3u, 0x9c1d8d91u, 0x98198991u, 0x60214161u, 0xbc3e8eb2u, 0xe426c6e2u, 0x58194951u,
    0xdc1dcdd1u, 0x50114151u, 0x90108090u, 0xdc1cccd0u, 0x981a8a92u, 0xa02383a3u, 0xa82b8ba3u, 0xd010c0d0u,
    0x80018181u, 0x0c0f0f03u, 0x44074743u, 0x181a0a12u, 0xe023c3e3u, 0xec2ccce0u, 0x8c0d8d81u, 0xbc3f8fb3u,
    0x94168692u, 0x783b4b73u, 0x5c1c4c50u, 0xa02282a2u, 0xa02181a1u, 0x60234363u, 0x20230323u, 0x4c0d4d41u,
    0xc808c8c0u, 0x9c1e8e92u, 0x9c1c8c90u, 0x383a0a32u, 0x0c0c0c00u, 0x2c2e0e22u, 0xb83a8ab2u, 0x6c2e4e62u,
    0x9c1f8f93u, 0x581a4a52u, 0xf032c2f2u, 0x90128292u, 0xf033c3f3u, 0x48094941u, 0x78384870u, 0xcc0cccc0u,
    0x14150511u, 0xf83bcbf3u, 0x70304070u, 0x74354571u, 0x7c3f4f73u, 0x34350531u, 0x10100010u, 0x00030303u,
    0x64244460u, 0x6c2d4d61u, 0xc406c6c2u, 0x74344470u, 0xd415c5d1u, 0xb43484b0u, 0xe82acae2u, 0x08090901u,
    0x74364672u, 0x18190911u, 0xfc3ecef2u, 0x40004040u, 0x10120212u, 0xe020c0e0u, 0xbc3d8db1u, 0x04050501u,
    0xf83acaf2u, 0x00010101u, 0xf030c0f0u, 0x282a0a22u, 0x5c1e4e52u, 0xa82989a1u, 0x54164652u, 0x40034343u,
    0x84058581u, 0x14140410u, 0x88098981u, 0x981b8b93u, 0xb03080b0u, 0xe425c5e1u, 0x48084840u, 0x78394971u,
    0x94178793u, 0xfc3cccf0u, 0x1c1e0e12u, 0x80028282u, 0x20210121u, 0x8c0c8c80u, 0x181b0b13u, 0x5c1f4f53u,
    0x74374773u, 0x54144450u, 0xb03282b2u, 0x1c1d0d11u, 0x24250521u, 0x4c0f4f43u, 0x00000000u, 0x44064642u,
    0xec2dcde1u, 0x58184850u, 0x50124252u, 0xe82bcbe3u, 0x7c3e4e72u, 0xd81acad2u, 0xc809c9c1u, 0xfc3dcdf1u,
    0x30300030u, 0x94158591u, 0x64254561u, 0x3c3c0c30u, 0xb43686b2u, 0xe424c4e0u, 0xb83b8bb3u, 0x7c3c4c70u,
    0x0c0e0e02u, 0x50104050u, 0x38390931u, 0x24260622u, 0x30320232u, 0x84048480u, 0x68294961u, 0x90138393u,
    0x34370733u, 0xe427c7e3u, 0x24240420u, 0xa42484a0u, 0xc80bcbc3u, 0x50134353u, 0x080a0a02u, 0x84078783u,
    0xd819c9d1u, 0x4c0c4c40u, 0x80038383u, 0x8c0f8f83u, 0xcc0ecec2u, 0x383b0b33u, 0x480a4a42u, 0xb43787b3u,
};

#define SEED_NRK (2 * SEED_ROUNDS)
#define SEED_TSIZE (SEED_TABLES * 256 * SEED_COPIES)

#if SEED_PRMT && (defined(__CUDACC__) || defined(cl_nv_pragma_unroll))
#define SEED_B0(x) BYTE_PERM((x), 0u, 0x4440u)
#define SEED_B1(x) BYTE_PERM((x), 0u, 0x4441u)
#define SEED_B2(x) BYTE_PERM((x), 0u, 0x4442u)
#define SEED_B3(x) BYTE_PERM((x), 0u, 0x4443u)
#define SEED_BSWAP(x) BYTE_PERM((x), 0u, 0x0123u)
#else
#define SEED_B0(x) BYTE0(x)
#define SEED_B1(x) BYTE1(x)
#define SEED_B2(x) BYTE2(x)
#define SEED_B3(x) BYTE3(x)
#define SEED_BSWAP(x) BSWAP32(x)
#endif

/* word of table tb for byte value b, in this lane's copy (`lane`: the copy number, or with
 * SEED_MAD_INDEX its byte offset 4 * copy) */
#if SEED_MAD_INDEX
#define SEED_LANE_UNIT 4u
#define SEED_L(tb, b) (*(LOCAL_PTR const uint *)((LOCAL_PTR const uchar *)tab + \
    (lane + ((tb) * 256u + (uint)(b)) * (4u * SEED_COPIES))))
#else
#define SEED_LANE_UNIT 1u
#define SEED_L(tb, b) (tab[((tb) * 256u + (uint)(b)) * SEED_COPIES + lane])
#endif

#if SEED_TABLES == 4
#define SEED_G(x) (SEED_L(0, SEED_B0(x)) ^ SEED_L(1, SEED_B1(x)) ^ SEED_L(2, SEED_B2(x)) ^ SEED_L(3, SEED_B3(x)))
#else
#define SEED_G(x) (SEED_L(0, SEED_B0(x)) ^ SEED_L(1, SEED_B1(x)) ^ \
                   ROTL32(SEED_L(0, SEED_B2(x)) ^ SEED_L(1, SEED_B3(x)), 16))
#endif

/* fill the tables: table tb is SS(tb & 1) rotated by 16 when tb >= 2, SEED_COPIES copies each */
#define SEED_FILL(t)                                                                 \
    for (uint seed_i = LID; seed_i < SEED_TSIZE; seed_i += LSIZE) {                  \
        uint seed_tb = seed_i / (256u * SEED_COPIES);                                \
        uint seed_b = (seed_i / SEED_COPIES) & 255u;                                 \
        uint seed_v = (seed_tb & 1u) ? SEED_SS1[seed_b] : SEED_SS0[seed_b];          \
        (t)[seed_i] = seed_tb >= 2u ? ROTL32(seed_v, 16u) : seed_v;                  \
    }

#if SEED_KEYS_IN_REGS
#define SEED_RK_PTR const uint *
#define SEED_KEYS(rk) uint seed_rk[SEED_NRK]; seed_load_keys(seed_rk, rk);
DEVICE_FN void seed_load_keys(uint *dst, GLOBAL_RO const uint *RESTRICT src)
{
#pragma unroll
    for (int i = 0; i < SEED_NRK; i++) dst[i] = src[i];
}
#else
#define SEED_RK_PTR GLOBAL_RO const uint *RESTRICT
#define SEED_KEYS(rk) GLOBAL_RO const uint *seed_rk = (rk);
#endif

#define SEED_SETUP(rk)                                                    \
    SEED_FILL(seed_tab)                                                   \
    SEED_KEYS(rk)                                                         \
    const uint seed_lane = (LID & (SEED_COPIES - 1u)) * SEED_LANE_UNIT;   \
    BARRIER();

#define CG_ENC_LOCALS LOCAL_VAR uint seed_tab[SEED_TSIZE];
#define CG_ENC_SETUP(rk) SEED_SETUP(rk)
#define CG_ENC_PARAMS , SEED_RK_PTR k, LOCAL_PTR const uint *tab, uint lane
#define CG_ENC_ARGS , seed_rk, seed_tab, seed_lane

#define CG_DEC_LOCALS LOCAL_VAR uint seed_tab[SEED_TSIZE];
#define CG_DEC_SETUP(dk) SEED_SETUP(dk)
#define CG_DEC_PARAMS , SEED_RK_PTR k, LOCAL_PTR const uint *tab, uint lane
#define CG_DEC_ARGS , seed_rk, seed_tab, seed_lane

/* round i: (a0, a1) ^= F((b0, b1), K_i), the halves' roles alternating round by round (no swaps):
 * a = C ^ K_i,0;  t = G(a ^ D ^ K_i,1);  u = G(t + a);  D' = G(u + t);  C' = D' + u */
#define SEED_ROUND(a0, a1, b0, b1, i)                           \
    {                                                           \
        const uint seed_a = (b0) ^ k[2 * (i)];                  \
        uint seed_t = SEED_G(seed_a ^ (b1) ^ k[2 * (i) + 1]);   \
        const uint seed_u = SEED_G(seed_t + seed_a);            \
        seed_t = SEED_G(seed_u + seed_t);                       \
        (a1) ^= seed_t;                                         \
        (a0) ^= seed_t + seed_u;                                \
    }

/* the 16 rounds written out (NVIDIA's OpenCL compiler may leave a round loop rolled, see aes.cl) */
DEVICE_FN void seed_block(uint *s, SEED_RK_PTR k, LOCAL_PTR const uint *tab, uint lane)
{
    uint l0 = SEED_BSWAP(s[0]), l1 = SEED_BSWAP(s[1]), r0 = SEED_BSWAP(s[2]), r1 = SEED_BSWAP(s[3]);
    SEED_ROUND(l0, l1, r0, r1, 0)  SEED_ROUND(r0, r1, l0, l1, 1)
    SEED_ROUND(l0, l1, r0, r1, 2)  SEED_ROUND(r0, r1, l0, l1, 3)
    SEED_ROUND(l0, l1, r0, r1, 4)  SEED_ROUND(r0, r1, l0, l1, 5)
    SEED_ROUND(l0, l1, r0, r1, 6)  SEED_ROUND(r0, r1, l0, l1, 7)
    SEED_ROUND(l0, l1, r0, r1, 8)  SEED_ROUND(r0, r1, l0, l1, 9)
    SEED_ROUND(l0, l1, r0, r1, 10) SEED_ROUND(r0, r1, l0, l1, 11)
    SEED_ROUND(l0, l1, r0, r1, 12) SEED_ROUND(r0, r1, l0, l1, 13)
    SEED_ROUND(l0, l1, r0, r1, 14) SEED_ROUND(r0, r1, l0, l1, 15)
    /* after an even number of rounds (l, r) = (L16, R16); the output is R16 || L16 */
    s[0] = SEED_BSWAP(r0); s[1] = SEED_BSWAP(r1); s[2] = SEED_BSWAP(l0); s[3] = SEED_BSWAP(l1);
}

/* the uniform batch interface: CG_BATCH blocks, block j in s[4j .. 4j+3] */
DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int j = 0; j < CG_BATCH; j++) seed_block(s + 4 * j, k, tab, lane);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int j = 0; j < CG_BATCH; j++) seed_block(s + 4 * j, k, tab, lane);
}
