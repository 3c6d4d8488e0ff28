/* aes.cl - AES-128/192/256 block functions (FIPS 197) for the generic mode kernels (modes.cl).
 *
 * Blocks are 4 little-endian words (word c = column c, byte r of the word = row r).  Rounds use one
 * 1 KiB T-table; the other three T-tables are byte rotations of it (one funnel shift / byte
 * permute each).  Decryption is FIPS 197's equivalent inverse cipher (the host passes the
 * InvMixColumns-transformed keys).  AES_ROUNDS (10/12/14) is a compile-time constant.
 *
 * The tables below were computed from the S-box that ciphergrid/ciphers/aes.py derives
 * (GF(2^8) inverse + affine map): T0[x] = (2S, S, S, 3S), TD0[x] = (14Si, 9Si, 13Si, 11Si).
 *
 * Compile-time options (the practice ablation switches them one at a time, see ciphers/aes.py):
 *   AES_TABLES        1: T0 only, T1..T3 by rotation (3 rotations per column); 2: T0 and T1 held,
 *                     T2/T3 = T0/T1 rotated by 16 (one rotation per column); 4: all four (none).
 *   AES_COPIES        each table is held this many times in shared memory, interleaved so that copy
 *                     c lies in banks c, c+COPIES, ...; lane l reads copy l % COPIES, so lanes never
 *                     conflict on banks with 32 copies (Tezcan 2021's layout), at most 2-way with 16,
 *                     4-way with 8.  1: one copy (bank conflicts between lanes).
 *   AES_PRMT          1: bytes are extracted with byte permutes (one instruction on NVIDIA) instead of
 *                     shift-and-mask; 0: shift and mask.
 *   AES_KEYS_IN_REGS  1: round keys are loaded once per work-item into registers; 0: read from
 *                     device memory in every round.
 *   AES_MAD_INDEX     1: a lookup address is one multiply-add, b * (4 COPIES) + 4 lane, in bytes from
 *                     the table (an IMAD, which NVIDIA runs on the FMA pipe, beside the integer
 *                     ALU that bounds this kernel); 0: a word index b * COPIES + lane, which costs
 *                     the IMAD and a shift-add (LEA) on the integer ALU to make it a byte address.
 *   AES_MULHI_BYTE3   1: the top byte is extracted by a high multiply, mulhi(x, 256) = x >> 24 (an
 *                     IMAD.HI on the FMA pipe, written in PTX so no compiler turns it back into a
 *                     shift); only on NVIDIA compilers, elsewhere a shift.
 *   AES_DP4A          1: a lookup address, b * (4 COPIES) + 4 lane for byte b of a state word, is one
 *                     4-byte dot product with accumulate (dp4a: the word's bytes times those of
 *                     (4 COPIES) << 8 k, plus 4 lane), so no instruction extracts the byte (NVIDIA's
 *                     IDP.4A, written in PTX; elsewhere the same sum in C).  Needs AES_MAD_INDEX,
 *                     AES_TABLES 1 and 4 COPIES < 256.
 *   AES_LAST_PERMUTE  1: the last round's four S-box bytes of a column are gathered from their four
 *                     T0 words by three byte permutes (S(x) is byte 1 and byte 2 of T0[x]); 0: a
 *                     shift and a mask per byte, merged by ORs.
 *   AES_CTR_SLOTS     0: CTR runs modes.cl's kernel (a counter per block, every round computed).
 *                     1, 2, 4 or 8: CTR runs this file's kernel on counter sub-tiles (below): the
 *                     first round is one lookup a block and the second four instead of 32 (at
 *                     AES-128, 133 lookups a block where the kernel without them makes 160).
 *                     Needs work-groups of CG_LOCAL_SIZE, a multiple of 32 (the implementation's
 *                     local_size).
 *   AES_CTR_AT_ONCE   slots a work-item computes side by side (a divisor of AES_CTR_SLOTS;
 *                     independent lookups in flight, at the cost of registers).
 *   CG_BATCH          blocks per work-item per step (independent blocks give the scheduler ILP).
 *
 * SECURITY: lookups indexed by secret state leak through shared-memory bank conflicts and timing
 * (Jiang, Fei, Kaeli, HPCA 2016).  Replication removes bank conflicts between lanes but this is
 * still not a constant-time implementation; use the bitsliced kernel (aes_bs.cl) where keys of
 * different clients share a device.
 */
#define CG_BLOCK_WORDS 4
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef AES_TABLES
#define AES_TABLES 1
#endif
#ifndef AES_COPIES
#define AES_COPIES 32
#endif
#ifndef AES_PRMT
#define AES_PRMT 0
#endif
#ifndef AES_KEYS_IN_REGS
#define AES_KEYS_IN_REGS 1
#endif
#ifndef AES_MAD_INDEX
#define AES_MAD_INDEX 0
#endif
#ifndef AES_MULHI_BYTE3
#define AES_MULHI_BYTE3 0
#endif
#ifndef AES_LAST_PERMUTE
#define AES_LAST_PERMUTE 0
#endif
#ifndef AES_DP4A
#define AES_DP4A 0
#endif
#ifndef AES_CTR_SLOTS
#define AES_CTR_SLOTS 0
#endif
#ifndef AES_CTR_AT_ONCE
#define AES_CTR_AT_ONCE 1
#endif

#define AES_NRK (4 * (AES_ROUNDS + 1))

CONST_TABLE uint AES_T0[256] = {
    0xa56363c6u, 0x847c7cf8u, 0x997777eeu, 0x8d7b7bf6u, 0x0df2f2ffu, 0xbd6b6bd6u, 0xb16f6fdeu, 0x54c5c591u,
    0x50303060u, 0x03010102u, 0xa96767ceu, 0x7d2b2b56u, 0x19fefee7u, 0x62d7d7b5u, 0xe6abab4du, 0x9a7676ecu,
    0x45caca8fu, 0x9d82821fu, 0x40c9c989u, 0x877d7dfau, 0x15fafaefu, 0xeb5959b2u, 0xc947478eu, 0x0bf0f0fbu,
    0xecadad41u, 0x67d4d4b3u, 0xfda2a25fu, 0xeaafaf45u, 0xbf9c9c23u, 0xf7a4a453u, 0x967272e4u, 0x5bc0c09bu,
    0xc2b7b775u, 0x1cfdfde1u, 0xae93933du, 0x6a26264cu, 0x5a36366cu, 0x413f3f7eu, 0x02f7f7f5u, 0x4fcccc83u,
    0x5c343468u, 0xf4a5a551u, 0x34e5e5d1u, 0x08f1f1f9u, 0x937171e2u, 0x73d8d8abu, 0x53313162u, 0x3f15152au,
    0x0c040408u, 0x52c7c795u, 0x65232346u, 0x5ec3c39du, 0x28181830u, 0xa1969637u, 0x0f05050au, 0xb59a9a2fu,
    0x0907070eu, 0x36121224u, 0x9b80801bu, 0x3de2e2dfu, 0x26ebebcdu, 0x6927274eu, 0xcdb2b27fu, 0x9f7575eau,
    0x1b090912u, 0x9e83831du, 0x742c2c58u, 0x2e1a1a34u, 0x2d1b1b36u, 0xb26e6edcu, 0xee5a5ab4u, 0xfba0a05bu,
    0xf65252a4u, 0x4d3b3b76u, 0x61d6d6b7u, 0xceb3b37du, 0x7b292952u, 0x3ee3e3ddu, 0x712f2f5eu, 0x97848413u,
    0xf55353a6u, 0x68d1d1b9u, 0x00000000u, 0x2cededc1u, 0x60202040u, 0x1ffcfce3u, 0xc8b1b179u, 0xed5b5bb6u,
    0xbe6a6ad4u, 0x46cbcb8du, 0xd9bebe67u, 0x4b393972u, 0xde4a4a94u, 0xd44c4c98u, 0xe85858b0u, 0x4acfcf85u,
    0x6bd0d0bbu, 0x2aefefc5u, 0xe5aaaa4fu, 0x16fbfbedu, 0xc5434386u, 0xd74d4d9au, 0x55333366u, 0x94858511u,
    0xcf45458au, 0x10f9f9e9u, 0x06020204u, 0x817f7ffeu, 0xf05050a0u, 0x443c3c78u, 0xba9f9f25u, 0xe3a8a84bu,
    0xf35151a2u, 0xfea3a35du, 0xc0404080u, 0x8a8f8f05u, 0xad92923fu, 0xbc9d9d21u, 0x48383870u, 0x04f5f5f1u,
    0xdfbcbc63u, 0xc1b6b677u, 0x75dadaafu, 0x63212142u, 0x30101020u, 0x1affffe5u, 0x0ef3f3fdu, 0x6dd2d2bfu,
    0x4ccdcd81u, 0x140c0c18u, 0x35131326u, 0x2fececc3u, 0xe15f5fbeu, 0xa2979735u, 0xcc444488u, 0x3917172eu,
    0x57c4c493u, 0xf2a7a755u, 0x827e7efcu, 0x473d3d7au, 0xac6464c8u, 0xe75d5dbau, 0x2b191932u, 0x957373e6u,
    0xa06060c0u, 0x98818119u, 0xd14f4f9eu, 0x7fdcdca3u, 0x66222244u, 0x7e2a2a54u, 0xab90903bu, 0x8388880bu,
    0xca46468cu, 0x29eeeec7u, 0xd3b8b86bu, 0x3c141428u, 0x79dedea7u, 0xe25e5ebcu, 0x1d0b0b16u, 0x76dbdbadu,
    0x3be0e0dbu, 0x56323264u, 0x4e3a3a74u, 0x1e0a0a14u, 0xdb494992u, 0x0a06060cu, 0x6c242448u, 0xe45c5cb8u,
    0x5dc2c29fu, 0x6ed3d3bdu, 0xefacac43u, 0xa66262c4u, 0xa8919139u, 0xa4959531u, 0x37e4e4d3u, 0x8b7979f2u,
    0x32e7e7d5u, 0x43c8c88bu, 0x5937376eu, 0xb76d6ddau, 0x8c8d8d01u, 0x64d5d5b1u, 0xd24e4e9cu, 0xe0a9a949u,
    0xb46c6cd8u, 0xfa5656acu, 0x07f4f4f3u, 0x25eaeacfu, 0xaf6565cau, 0x8e7a7af4u, 0xe9aeae47u, 0x18080810u,
    0xd5baba6fu, 0x887878f0u, 0x6f25254au, 0x722e2e5cu, 0x241c1c38u, 0xf1a6a657u, 0xc7b4b473u, 0x51c6c697u,
    0x23e8e8cbu, 0x7cdddda1u, 0x9c7474e8u, 0x211f1f3eu, 0xdd4b4b96u, 0xdcbdbd61u, 0x868b8b0du, 0x858a8a0fu,
    0x907070e0u, 0x423e3e7cu, 0xc4b5b571u, 0xaa6666ccu, 0xd8484890u, 0x05030306u, 0x01f6f6f7u, 0x120e0e1cu,
    0xa36161c2u, 0x5f35356au, 0xf95757aeu, 0xd0b9b969u, 0x91868617u, 0x58c1c199u, 0x271d1d3au, 0xb99e9e27u,
    0x38e1e1d9u, 0x13f8f8ebu, 0xb398982bu, 0x33111122u, 0xbb6969d2u, 0x70d9d9a9u, 0x898e8e07u, 0xa7949433u,
    0xb69b9b2du, 0x221e1e3cu, 0x92878715u, 0x20e9e9c9u, 0x49cece87u, 0xff5555aau, 0x78282850u, 0x7adfdfa5u,
    0x8f8c8c03u, 0xf8a1a159u, 0x80898909u, 0x170d0d1au, 0xdabfbf65u, 0x31e6e6d7u, 0xc6424284u, 0xb86868d0u,
    0xc3414182u, 0xb0999929u, 0x772d2d5au, 0x110f0f1eu, 0xcbb0b07bu, 0xfc5454a8u, 0xd6bbbb6du, 0x3a16162cu,
};

CONST_TABLE uint AES_TD0[256] = {
    0x50a7f451u, 0x5365417eu, 0xc3a4171au, 0x965e273au, 0xcb6bab3bu, 0xf1459d1fu, 0xab58faacu, 0x9303e34bu,
    0x55fa3020u, 0xf66d76adu, 0x9176cc88u, 0x254c02f5u, 0xfcd7e54fu, 0xd7cb2ac5u, 0x80443526u, 0x8fa362b5u,
    0x495ab1deu, 0x671bba25u, 0x980eea45u, 0xe1c0fe5du, 0x02752fc3u, 0x12f04c81u, 0xa397468du, 0xc6f9d36bu,
    0xe75f8f03u, 0x959c9215u, 0xeb7a6dbfu, 0xda595295u, 0x2d83bed4u, 0xd3217458u, 0x2969e049u, 0x44c8c98eu,
    0x6a89c275u, 0x78798ef4u, 0x6b3e5899u, 0xdd71b927u, 0xb64fe1beu, 0x17ad88f0u, 0x66ac20c9u, 0xb43ace7du,
    0x184adf63u, 0x82311ae5u, 0x60335197u, 0x457f5362u, 0xe07764b1u, 0x84ae6bbbu, 0x1ca081feu, 0x942b08f9u,
    0x58684870u, 0x19fd458fu, 0x876cde94u, 0xb7f87b52u, 0x23d373abu, 0xe2024b72u, 0x578f1fe3u, 0x2aab5566u,
    0x0728ebb2u, 0x03c2b52fu, 0x9a7bc586u, 0xa50837d3u, 0xf2872830u, 0xb2a5bf23u, 0xba6a0302u, 0x5c8216edu,
    0x2b1ccf8au, 0x92b479a7u, 0xf0f207f3u, 0xa1e2694eu, 0xcdf4da65u, 0xd5be0506u, 0x1f6234d1u, 0x8afea6c4u,
    0x9d532e34u, 0xa055f3a2u, 0x32e18a05u, 0x75ebf6a4u, 0x39ec830bu, 0xaaef6040u, 0x069f715eu, 0x51106ebdu,
    0xf98a213eu, 0x3d06dd96u, 0xae053eddu, 0x46bde64du, 0xb58d5491u, 0x055dc471u, 0x6fd40604u, 0xff155060u,
    0x24fb9819u, 0x97e9bdd6u, 0xcc434089u, 0x779ed967u, 0xbd42e8b0u, 0x888b8907u, 0x385b19e7u, 0xdbeec879u,
    0x470a7ca1u, 0xe90f427cu, 0xc91e84f8u, 0x00000000u, 0x83868009u, 0x48ed2b32u, 0xac70111eu, 0x4e725a6cu,
    0xfbff0efdu, 0x5638850fu, 0x1ed5ae3du, 0x27392d36u, 0x64d90f0au, 0x21a65c68u, 0xd1545b9bu, 0x3a2e3624u,
    0xb1670a0cu, 0x0fe75793u, 0xd296eeb4u, 0x9e919b1bu, 0x4fc5c080u, 0xa220dc61u, 0x694b775au, 0x161a121cu,
    0x0aba93e2u, 0xe52aa0c0u, 0x43e0223cu, 0x1d171b12u, 0x0b0d090eu, 0xadc78bf2u, 0xb9a8b62du, 0xc8a91e14u,
    0x8519f157u, 0x4c0775afu, 0xbbdd99eeu, 0xfd607fa3u, 0x9f2601f7u, 0xbcf5725cu, 0xc53b6644u, 0x347efb5bu,
    0x7629438bu, 0xdcc623cbu, 0x68fcedb6u, 0x63f1e4b8u, 0xcadc31d7u, 0x10856342u, 0x40229713u, 0x2011c684u,
    0x7d244a85u, 0xf83dbbd2u, 0x1132f9aeu, 0x6da129c7u, 0x4b2f9e1du, 0xf330b2dcu, 0xec52860du, 0xd0e3c177u,
    0x6c16b32bu, 0x99b970a9u, 0xfa489411u, 0x2264e947u, 0xc48cfca8u, 0x1a3ff0a0u, 0xd82c7d56u, 0xef903322u,
    0xc74e4987u, 0xc1d138d9u, 0xfea2ca8cu, 0x360bd498u, 0xcf81f5a6u, 0x28de7aa5u, 0x268eb7dau, 0xa4bfad3fu,
    0xe49d3a2cu, 0x0d927850u, 0x9bcc5f6au, 0x62467e54u, 0xc2138df6u, 0xe8b8d890u, 0x5ef7392eu, 0xf5afc382u,
    0xbe805d9fu, 0x7c93d069u, 0xa92dd56fu, 0xb31225cfu, 0x3b99acc8u, 0xa77d1810u, 0x6e639ce8u, 0x7bbb3bdbu,
    0x097826cdu, 0xf418596eu, 0x01b79aecu, 0xa89a4f83u, 0x656e95e6u, 0x7ee6ffaau, 0x08cfbc21u, 0xe6e815efu,
    0xd99be7bau, 0xce366f4au, 0xd4099feau, 0xd67cb029u, 0xafb2a431u, 0x31233f2au, 0x3094a5c6u, 0xc066a235u,
    0x37bc4e74u, 0xa6ca82fcu, 0xb0d090e0u, 0x15d8a733u, 0x4a9804f1u, 0xf7daec41u, 0x0e50cd7fu, 0x2ff69117u,
    0x8dd64d76u, 0x4db0ef43u, 0x544daaccu, 0xdf0496e4u, 0xe3b5d19eu, 0x1b886a4cu, 0xb81f2cc1u, 0x7f516546u,
    0x04ea5e9du, 0x5d358c01u, 0x737487fau, 0x2e410bfbu, 0x5a1d67b3u, 0x52d2db92u, 0x335610e9u, 0x1347d66du,
    0x8c61d79au, 0x7a0ca137u, 0x8e14f859u, 0x893c13ebu, 0xee27a9ceu, 0x35c961b7u, 0xede51ce1u, 0x3cb1477au,
    0x59dfd29cu, 0x3f73f255u, 0x79ce1418u, 0xbf37c773u, 0xeacdf753u, 0x5baafd5fu, 0x146f3ddfu, 0x86db4478u,
    0x81f3afcau, 0x3ec468b9u, 0x2c342438u, 0x5f40a3c2u, 0x72c31d16u, 0x0c25e2bcu, 0x8b493c28u, 0x41950dffu,
    0x7101a839u, 0xdeb30c08u, 0x9ce4b4d8u, 0x90c15664u, 0x6184cb7bu, 0x70b632d5u, 0x745c6c48u, 0x4257b8d0u,
};

CONST_TABLE uchar AES_INV_SBOX[256] = {
    0x52, 0x09, 0x6a, 0xd5, 0x30, 0x36, 0xa5, 0x38, 0xbf, 0x40, 0xa3, 0x9e, 0x81, 0xf3, 0xd7, 0xfb,
    0x7c, 0xe3, 0x39, 0x82, 0x9b, 0x2f, 0xff, 0x87, 0x34, 0x8e, 0x43, 0x44, 0xc4, 0xde, 0xe9, 0xcb,
    0x54, 0x7b, 0x94, 0x32, 0xa6, 0xc2, 0x23, 0x3d, 0xee, 0x4c, 0x95, 0x0b, 0x42, 0xfa, 0xc3, 0x4e,
    0x08, 0x2e, 0xa1, 0x66, 0x28, 0xd9, 0x24, 0xb2, 0x76, 0x5b, 0xa2, 0x49, 0x6d, 0x8b, 0xd1, 0x25,
    0x72, 0xf8, 0xf6, 0x64, 0x86, 0x68, 0x98, 0x16, 0xd4, 0xa4, 0x5c, 0xcc, 0x5d, 0x65, 0xb6, 0x92,
    0x6c, 0x70, 0x48, 0x50, 0xfd, 0xed, 0xb9, 0xda, 0x5e, 0x15, 0x46, 0x57, 0xa7, 0x8d, 0x9d, 0x84,
    0x90, 0xd8, 0xab, 0x00, 0x8c, 0xbc, 0xd3, 0x0a, 0xf7, 0xe4, 0x58, 0x05, 0xb8, 0xb3, 0x45, 0x06,
    0xd0, 0x2c, 0x1e, 0x8f, 0xca, 0x3f, 0x0f, 0x02, 0xc1, 0xaf, 0xbd, 0x03, 0x01, 0x13, 0x8a, 0x6b,
    0x3a, 0x91, 0x11, 0x41, 0x4f, 0x67, 0xdc, 0xea, 0x97, 0xf2, 0xcf, 0xce, 0xf0, 0xb4, 0xe6, 0x73,
    0x96, 0xac, 0x74, 0x22, 0xe7, 0xad, 0x35, 0x85, 0xe2, 0xf9, 0x37, 0xe8, 0x1c, 0x75, 0xdf, 0x6e,
    0x47, 0xf1, 0x1a, 0x71, 0x1d, 0x29, 0xc5, 0x89, 0x6f, 0xb7, 0x62, 0x0e, 0xaa, 0x18, 0xbe, 0x1b,
    0xfc, 0x56, 0x3e, 0x4b, 0xc6, 0xd2, 0x79, 0x20, 0x9a, 0xdb, 0xc0, 0xfe, 0x78, 0xcd, 0x5a, 0xf4,
    0x1f, 0xdd, 0xa8, 0x33, 0x88, 0x07, 0xc7, 0x31, 0xb1, 0x12, 0x10, 0x59, 0x27, 0x80, 0xec, 0x5f,
    0x60, 0x51, 0x7f, 0xa9, 0x19, 0xb5, 0x4a, 0x0d, 0x2d, 0xe5, 0x7a, 0x9f, 0x93, 0xc9, 0x9c, 0xef,
    0xa0, 0xe0, 0x3b, 0x4d, 0xae, 0x2a, 0xf5, 0xb0, 0xc8, 0xeb, 0xbb, 0x3c, 0x83, 0x53, 0x99, 0x61,
    0x17, 0x2b, 0x04, 0x7e, 0xba, 0x77, 0xd6, 0x26, 0xe1, 0x69, 0x14, 0x63, 0x55, 0x21, 0x0c, 0x7d,
};

#define AES_TSIZE (AES_TABLES * 256 * AES_COPIES)
/* word of table tb (0..AES_TABLES-1) for byte value b, in this lane's copy.  `lane` is the copy
 * number, or with AES_MAD_INDEX its byte offset (4 * copy). */
#if AES_MAD_INDEX
#define AES_LANE_UNIT 4u
#define AES_L(t, tb, b) (*(LOCAL_PTR const uint *)((LOCAL_PTR const uchar *)(t) + \
    (lane + ((tb) * 256u + (uint)(b)) * (4u * AES_COPIES))))
#else
#define AES_LANE_UNIT 1u
#define AES_L(t, tb, b) ((t)[((tb) * 256 + (uint)(b)) * AES_COPIES + lane])
#endif
#if AES_MULHI_BYTE3 && (defined(__CUDACC__) || defined(cl_nv_pragma_unroll))
DEVICE_FN uint aes_byte3_mulhi(uint x)
{
    uint r;
    asm("mul.hi.u32 %0, %1, 256;" : "=r"(r) : "r"(x));
    return r;
}
#define AES_BYTE3(x) aes_byte3_mulhi(x)
#elif AES_MULHI_BYTE3
#define AES_BYTE3(x) BYTE3(x)
#else
#define AES_BYTE3(x) BYTE_PERM((x), 0u, 0x4443u)
#endif
#if AES_PRMT
#define AES_B0(x) BYTE_PERM((x), 0u, 0x4440u)
#define AES_B1(x) BYTE_PERM((x), 0u, 0x4441u)
#define AES_B2(x) BYTE_PERM((x), 0u, 0x4442u)
#define AES_B3(x) AES_BYTE3(x)
#else
#define AES_B0(x) BYTE0(x)
#define AES_B1(x) BYTE1(x)
#define AES_B2(x) BYTE2(x)
#define AES_B3(x) BYTE3(x)
#endif

/* AES_LB(t, tb, x, k): word of table tb for byte k (a literal 0..3) of state word x */
#if AES_DP4A
#if !AES_MAD_INDEX || AES_TABLES != 1 || AES_COPIES > 63
#error "AES_DP4A needs AES_MAD_INDEX, AES_TABLES 1 and AES_COPIES < 64"
#endif
#if defined(__CUDACC__) || defined(cl_nv_pragma_unroll)
DEVICE_FN uint aes_dp4a(uint x, uint m, uint c)
{
    uint r;
    asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(m), "r"(c));
    return r;
}
#else
DEVICE_FN uint aes_dp4a(uint x, uint m, uint c)
{
    return c + BYTE0(x) * BYTE0(m) + BYTE1(x) * BYTE1(m) + BYTE2(x) * BYTE2(m) + BYTE3(x) * BYTE3(m);
}
#endif
#define AES_LB(t, tb, x, k) (*(LOCAL_PTR const uint *)((LOCAL_PTR const uchar *)(t) + \
    aes_dp4a((x), (4u * AES_COPIES) << (8 * (k)), lane)))
#else
#define AES_LB(t, tb, x, k) AES_L(t, tb, AES_B##k(x))
#endif

/* one column of a full round from table set t: T0[a] ^ T1[b] ^ T2[c] ^ T3[d] */
#if AES_TABLES == 4
#define AES_COL(t, a, b, c, d) \
    (AES_LB(t, 0, a, 0) ^ AES_LB(t, 1, b, 1) ^ AES_LB(t, 2, c, 2) ^ AES_LB(t, 3, d, 3))
#elif AES_TABLES == 2
#define AES_COL(t, a, b, c, d) \
    (AES_LB(t, 0, a, 0) ^ AES_LB(t, 1, b, 1) ^ ROTL32(AES_LB(t, 0, c, 2) ^ AES_LB(t, 1, d, 3), 16))
#else
#define AES_COL(t, a, b, c, d)                                                        \
    (AES_LB(t, 0, a, 0) ^ ROTL32(AES_LB(t, 0, b, 1), 8) ^                              \
     ROTL32(AES_LB(t, 0, c, 2), 16) ^ ROTL32(AES_LB(t, 0, d, 3), 24))
#endif

/* fill table set t (AES_TABLES rotations of base, AES_COPIES copies each) */
#define AES_FILL(t, base, tsize)                                                     \
    for (uint cg_k = LID; cg_k < (tsize); cg_k += LSIZE) {                           \
        uint cg_tb = cg_k / (256u * AES_COPIES);                                     \
        uint cg_b = (cg_k / AES_COPIES) & 255u;                                      \
        uint cg_v = (base)[cg_b];                                                    \
        (t)[cg_k] = cg_tb ? ROTL32(cg_v, 8u * cg_tb) : cg_v;                         \
    }

#if AES_KEYS_IN_REGS
#define AES_RK_PTR const uint *
#define AES_KEYS(rk) uint cg_rk[AES_NRK]; aes_load_keys(cg_rk, rk);
DEVICE_FN void aes_load_keys(uint *dst, GLOBAL_RO const uint *RESTRICT src)
{
#pragma unroll
    for (int i = 0; i < AES_NRK; i++) dst[i] = src[i];
}
#else
#define AES_RK_PTR GLOBAL_RO const uint *RESTRICT
#define AES_KEYS(rk) GLOBAL_RO const uint *cg_rk = (rk);
#endif

#define CG_ENC_LOCALS LOCAL_VAR uint cg_t0[AES_TSIZE];
#define CG_ENC_SETUP(rk)                                         \
    AES_FILL(cg_t0, AES_T0, AES_TSIZE)                           \
    AES_KEYS(rk)                                                 \
    const uint cg_lane = (LID & (AES_COPIES - 1u)) * AES_LANE_UNIT; \
    BARRIER();
#define CG_ENC_PARAMS , AES_RK_PTR rk, LOCAL_PTR const uint *t0, uint lane
#define CG_ENC_ARGS , cg_rk, cg_t0, cg_lane

#define CG_DEC_LOCALS LOCAL_VAR uint cg_td0[AES_TSIZE]; LOCAL_VAR uchar cg_isb[256 * AES_COPIES];
#define CG_DEC_SETUP(dk)                                         \
    AES_FILL(cg_td0, AES_TD0, AES_TSIZE)                         \
    for (uint cg_k = LID; cg_k < 256u * AES_COPIES; cg_k += LSIZE) \
        cg_isb[cg_k] = AES_INV_SBOX[cg_k / AES_COPIES];          \
    AES_KEYS(dk)                                                 \
    const uint cg_lane = (LID & (AES_COPIES - 1u)) * AES_LANE_UNIT; \
    BARRIER();
#define CG_DEC_PARAMS , AES_RK_PTR dk, LOCAL_PTR const uint *td0, LOCAL_PTR const uchar *isb, uint lane
#define CG_DEC_ARGS , cg_rk, cg_td0, cg_isb, cg_lane

/* R(1) R(2) ... R(AES_ROUNDS - 1), written out: NVIDIA's OpenCL compiler leaves a "#pragma unroll"
 * round loop rolled (the round keys "in registers" then live in local memory, and every table index
 * costs a 64-bit address add); CUDA unrolled it anyway, to the same code */
#if AES_ROUNDS >= 12
#define AES_ROUNDS_10_11(R) R(10) R(11)
#else
#define AES_ROUNDS_10_11(R)
#endif
#if AES_ROUNDS >= 14
#define AES_ROUNDS_12_13(R) R(12) R(13)
#else
#define AES_ROUNDS_12_13(R)
#endif
#define AES_MIDDLE_ROUNDS(R) \
    R(1) R(2) R(3) R(4) R(5) R(6) R(7) R(8) R(9) AES_ROUNDS_10_11(R) AES_ROUNDS_12_13(R)

#define AES_TE(a, b, c, d) AES_COL(t0, a, b, c, d)
/* last round: S(x) is byte 1 (and byte 2) of T0[x] = (2 S(x), S(x), S(x), 3 S(x)) */
#if AES_LAST_PERMUTE
/* bytes 0, 1 from T0[a], T0[b] (their byte 1); bytes 2, 3 from T0[c] (its byte 2), T0[d] (byte 1) */
#define AES_SE(a, b, c, d)                                                                 \
    BYTE_PERM(BYTE_PERM(AES_LB(t0, 0, a, 0), AES_LB(t0, 0, b, 1), 0x0051u),                \
              BYTE_PERM(AES_LB(t0, 0, c, 2), AES_LB(t0, 0, d, 3), 0x5200u), 0x7610u)
#else
#define AES_SB(x, k) ((AES_LB(t0, 0, x, k) >> 8) & 0xffu)
#define AES_SE(a, b, c, d) \
    (AES_SB(a, 0) | (AES_SB(b, 1) << 8) | (AES_SB(c, 2) << 16) | (AES_SB(d, 3) << 24))
#endif

DEVICE_FN void aes_encrypt1(uint *s, AES_RK_PTR rk, LOCAL_PTR const uint *t0, uint lane)
{
    uint s0 = s[0] ^ rk[0], s1 = s[1] ^ rk[1], s2 = s[2] ^ rk[2], s3 = s[3] ^ rk[3];
#define AES_ENC_ROUND(r)                                      \
    {                                                         \
        const uint u0 = AES_TE(s0, s1, s2, s3) ^ rk[4 * (r) + 0]; \
        const uint u1 = AES_TE(s1, s2, s3, s0) ^ rk[4 * (r) + 1]; \
        const uint u2 = AES_TE(s2, s3, s0, s1) ^ rk[4 * (r) + 2]; \
        const uint u3 = AES_TE(s3, s0, s1, s2) ^ rk[4 * (r) + 3]; \
        s0 = u0; s1 = u1; s2 = u2; s3 = u3;                   \
    }
    AES_MIDDLE_ROUNDS(AES_ENC_ROUND)
    s[0] = AES_SE(s0, s1, s2, s3) ^ rk[4 * AES_ROUNDS + 0];
    s[1] = AES_SE(s1, s2, s3, s0) ^ rk[4 * AES_ROUNDS + 1];
    s[2] = AES_SE(s2, s3, s0, s1) ^ rk[4 * AES_ROUNDS + 2];
    s[3] = AES_SE(s3, s0, s1, s2) ^ rk[4 * AES_ROUNDS + 3];
}

#define AES_TD(a, b, c, d) AES_COL(td0, a, b, c, d)
#define AES_IS(x) ((uint)isb[(uint)(x) * AES_COPIES + lane / AES_LANE_UNIT])
#define AES_SD(a, b, c, d) \
    (AES_IS(AES_B0(a)) | (AES_IS(AES_B1(b)) << 8) | (AES_IS(AES_B2(c)) << 16) | (AES_IS(AES_B3(d)) << 24))

DEVICE_FN void aes_decrypt1(uint *s, AES_RK_PTR dk, LOCAL_PTR const uint *td0,
                            LOCAL_PTR const uchar *isb, uint lane)
{
    uint s0 = s[0] ^ dk[0], s1 = s[1] ^ dk[1], s2 = s[2] ^ dk[2], s3 = s[3] ^ dk[3];
#define AES_DEC_ROUND(r)                                      \
    {                                                         \
        const uint u0 = AES_TD(s0, s3, s2, s1) ^ dk[4 * (r) + 0]; \
        const uint u1 = AES_TD(s1, s0, s3, s2) ^ dk[4 * (r) + 1]; \
        const uint u2 = AES_TD(s2, s1, s0, s3) ^ dk[4 * (r) + 2]; \
        const uint u3 = AES_TD(s3, s2, s1, s0) ^ dk[4 * (r) + 3]; \
        s0 = u0; s1 = u1; s2 = u2; s3 = u3;                   \
    }
    AES_MIDDLE_ROUNDS(AES_DEC_ROUND)
    s[0] = AES_SD(s0, s3, s2, s1) ^ dk[4 * AES_ROUNDS + 0];
    s[1] = AES_SD(s1, s0, s3, s2) ^ dk[4 * AES_ROUNDS + 1];
    s[2] = AES_SD(s2, s1, s0, s3) ^ dk[4 * AES_ROUNDS + 2];
    s[3] = AES_SD(s3, s2, s1, s0) ^ dk[4 * AES_ROUNDS + 3];
}

/* the uniform batch interface: CG_BATCH blocks, block k in s[4k .. 4k+3] */
DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) aes_encrypt1(s + 4 * k, rk, t0, lane);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int k = 0; k < CG_BATCH; k++) aes_decrypt1(s + 4 * k, dk, td0, isb, lane);
}

/* ---- CTR on counter sub-tiles (AES_CTR_SLOTS) -----------------------------------------------------
 * The counters are cut into sub-tiles of 32 AES_CTR_SLOTS consecutive values aligned on that size
 * (a divisor of 256, so the 15 leading bytes of a sub-tile's counters are equal and only the last,
 * byte 15 = row 3 of column 3, differs); 32 consecutive work-items take a sub-tile, item l its
 * counters l + 32 k (slot k < AES_CTR_SLOTS): every load and store of a slot is one 512-byte run.
 * Byte 15 of the first round's input reaches only column 0 of the first round's output, so
 *   round 1, column 0:  a ^ rot24(T0[x15])          (columns 1-3: the same for the sub-tile)
 *   round 2, column j:  k_j ^ rotation of T0[byte (4 - j) mod 4 of round 1's column 0]
 * where a and k_0..k_3 are the sub-tile's (aes_ctr_consts, computed by each work-item once per
 * sub-tile) and x15 = byte 15 of counter ^ first round key = x15(slot 0) ^ 32 k.  The last round
 * key is added with the data.  A launch's block b has counter ctr + b: sub-tile 0 starts at ctr
 * rounded down, and counters outside [ctr, ctr + n) are neither loaded nor stored. */
#if AES_CTR_SLOTS
#if !defined(CG_LOCAL_SIZE) || (CG_LOCAL_SIZE % 32) != 0
#error "AES_CTR_SLOTS needs work-groups of CG_LOCAL_SIZE work-items, a multiple of 32"
#endif
#if AES_CTR_SLOTS != 1 && AES_CTR_SLOTS != 2 && AES_CTR_SLOTS != 4 && AES_CTR_SLOTS != 8
#error "AES_CTR_SLOTS must be 1, 2, 4 or 8"
#endif
#if AES_TABLES != 1
#error "AES_CTR_SLOTS works with AES_TABLES 1"
#endif
#if AES_CTR_AT_ONCE < 1 || AES_CTR_SLOTS % AES_CTR_AT_ONCE != 0
#error "AES_CTR_AT_ONCE must divide AES_CTR_SLOTS"
#endif
#define CG_CTR_OWN 1
#define AES_SUB (32u * AES_CTR_SLOTS)
#define AES_T0_ZERO 0xa56363c6u /* T0[0]: cancels the lookups of the placeholder zero bytes below */

/* kc[0] = round 1's column 0 less rot24(T0[x15]); kc[1 + j] = round 2's column j less its term of
 * round 1's column 0.  x3 is the first round's input word 3 whose byte 3 is left out (zeroed: its
 * T0[0] term is cancelled, as those of the zero words standing for round 1's column 0). */
DEVICE_FN void aes_ctr_consts(uint *kc, uint x0, uint x1, uint x2, uint x3,
                              GLOBAL_RO const uint *RESTRICT k, LOCAL_PTR const uint *t0, uint lane)
{
    x3 &= 0x00ffffffu;
    const uint u1 = AES_TE(x1, x2, x3, x0) ^ k[5];
    const uint u2 = AES_TE(x2, x3, x0, x1) ^ k[6];
    const uint u3 = AES_TE(x3, x0, x1, x2) ^ k[7];
    kc[0] = AES_TE(x0, x1, x2, x3) ^ k[4] ^ ROTL32(AES_T0_ZERO, 24);
    kc[1] = AES_TE(0u, u1, u2, u3) ^ k[8] ^ AES_T0_ZERO;
    kc[2] = AES_TE(u1, u2, u3, 0u) ^ k[9] ^ ROTL32(AES_T0_ZERO, 24);
    kc[3] = AES_TE(u2, u3, 0u, u1) ^ k[10] ^ ROTL32(AES_T0_ZERO, 16);
    kc[4] = AES_TE(u3, 0u, u1, u2) ^ k[11] ^ ROTL32(AES_T0_ZERO, 8);
}

#if AES_ROUNDS >= 12
#define AES_ROUNDS_FROM_3(R) R(3) R(4) R(5) R(6) R(7) R(8) R(9) R(10) R(11) AES_ROUNDS_12_13(R)
#else
#define AES_ROUNDS_FROM_3(R) R(3) R(4) R(5) R(6) R(7) R(8) R(9)
#endif

/* one slot's key stream less the last round key */
DEVICE_FN void aes_ctr_slot(uint *s, const uint *kc, uint x15, AES_RK_PTR rk, LOCAL_PTR const uint *t0,
                            uint lane)
{
    const uint c0 = kc[0] ^ ROTL32(AES_L(t0, 0, x15), 24);
    uint s0 = kc[1] ^ AES_LB(t0, 0, c0, 0);
    uint s1 = kc[2] ^ ROTL32(AES_LB(t0, 0, c0, 3), 24);
    uint s2 = kc[3] ^ ROTL32(AES_LB(t0, 0, c0, 2), 16);
    uint s3 = kc[4] ^ ROTL32(AES_LB(t0, 0, c0, 1), 8);
    AES_ROUNDS_FROM_3(AES_ENC_ROUND)
    s[0] = AES_SE(s0, s1, s2, s3);
    s[1] = AES_SE(s1, s2, s3, s0);
    s[2] = AES_SE(s2, s3, s0, s1);
    s[3] = AES_SE(s3, s0, s1, s2);
}

KERNEL void cg_ctr(GLOBAL_RO const uint4 *in, GLOBAL uint4 *out,
                   GLOBAL_RO const uint *RESTRICT rk, ulong ctr_hi, ulong ctr_lo, ulong n)
{
    CG_ENC_LOCALS
    CG_ENC_SETUP(rk)
    const ulong off = ctr_lo & (AES_SUB - 1u);          /* block 0's place in its sub-tile */
    const ulong lo0 = ctr_lo - off;
    const ulong nsub = (off + n + AES_SUB - 1u) / AES_SUB;
    const uint l = LID & 31u;
    const uint kx0 = rk[4 * AES_ROUNDS], kx1 = rk[4 * AES_ROUNDS + 1], kx2 = rk[4 * AES_ROUNDS + 2],
               kx3 = rk[4 * AES_ROUNDS + 3];
    for (ulong q = GROUP_ID * (CG_LOCAL_SIZE / 32u) + LID / 32u; q < nsub;
         q += NGROUPS * (CG_LOCAL_SIZE / 32u)) {
        const ulong base = lo0 + q * AES_SUB;            /* the sub-tile's first counter (low half) */
        const ulong hi = ctr_hi + (base < lo0 ? 1u : 0u);
        const uint x3 = BSWAP32((uint)base) ^ rk[3];
        uint kc[5];
        aes_ctr_consts(kc, BSWAP32((uint)(hi >> 32)) ^ rk[0], BSWAP32((uint)hi) ^ rk[1],
                       BSWAP32((uint)(base >> 32)) ^ rk[2], x3, rk, cg_t0, cg_lane);
        const uint x15 = (x3 >> 24) ^ l;
        const ulong first = q * AES_SUB + l;             /* slot 0, in counters from lo0 */
        /* AES_CTR_AT_ONCE slots a step, their loads issued before their rounds (a step's code
         * is one copy of the rounds per slot; the steps are not unrolled) */
#pragma unroll 1
        for (uint k = 0; k < AES_CTR_SLOTS; k += AES_CTR_AT_ONCE) {
            uint4 d[AES_CTR_AT_ONCE];
            uint s[4 * AES_CTR_AT_ONCE];
#pragma unroll
            for (uint j = 0; j < AES_CTR_AT_ONCE; j++) {
                const ulong pos = first + 32u * (k + j);
                d[j] = MAKE_UINT4(0u, 0u, 0u, 0u);
                if (pos >= off && pos - off < n) d[j] = in[pos - off];
            }
#pragma unroll
            for (uint j = 0; j < AES_CTR_AT_ONCE; j++)
                aes_ctr_slot(s + 4 * j, kc, x15 ^ ((k + j) << 5), cg_rk, cg_t0, cg_lane);
#pragma unroll
            for (uint j = 0; j < AES_CTR_AT_ONCE; j++) {
                const ulong pos = first + 32u * (k + j);
                if (pos >= off && pos - off < n)
                    out[pos - off] = MAKE_UINT4(d[j].x ^ s[4 * j] ^ kx0, d[j].y ^ s[4 * j + 1] ^ kx1,
                                                d[j].z ^ s[4 * j + 2] ^ kx2, d[j].w ^ s[4 * j + 3] ^ kx3);
            }
        }
    }
}
#endif
