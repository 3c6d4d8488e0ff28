/* cast5.cl - CAST-128 (CAST5, RFC 2144) block functions for the generic mode kernels (modes.cl).
 *
 * A block is two little-endian words of its bytes (the contract of ciphergrid/algorithms/base.py);
 * CAST-128 reads the block as two big-endian halves L0 = bytes 0..3, R0 = bytes 4..7, so each half
 * is byte-swapped on the way in and out.  The schedule (33 words, made on the host by
 * ciphergrid/algorithms/cast5.py) is Km1..Km16, Kr1..Kr16, and the round count: 12 for keys of
 * 80 bits or less, 16 above (RFC 2144 section 2.5).  The round count is a value the kernels read,
 * the same for every work-item of a launch: one compiled program serves every key size.
 * Decryption runs the same rounds backwards (round n first) with the same schedule.
 *
 * Round i (1-based) uses f1 for i = 1, 4, 7, 10, 13, 16; f2 for i = 2, 5, 8, 11, 14; f3 for
 * i = 3, 6, 9, 12, 15 (RFC 2144 section 2.2), with I = (Kmi op D) <<< Kri and Ia..Id its bytes,
 * most significant first:
 *     f1: I = (Km + D) <<< Kr   f = ((S1[Ia] ^ S2[Ib]) - S3[Ic]) + S4[Id]
 *     f2: I = (Km ^ D) <<< Kr   f = ((S1[Ia] - S2[Ib]) + S3[Ic]) ^ S4[Id]
 *     f3: I = (Km - D) <<< Kr   f = ((S1[Ia] + S2[Ib]) ^ S3[Ic]) - S4[Id]
 *
 * Two implementations (ciphergrid/algorithms/cast5.py ``implementations``), chosen by
 * CAST5_REFERENCE:
 *
 *   1  "reference": the RFC's rounds in a loop over the round count, S1..S4 read from the
 *      constant tables below, keys read from device memory in every round.
 *   0  "fast": S1..S4 copied into work-group memory, CAST5_COPIES times, interleaved so that copy
 *      c lies in banks c, c + COPIES, ... and lane l reads copy l % COPIES (fewer bank conflicts
 *      between the lanes of a warp); Km and Kr in registers; 12 rounds unrolled, then 4 more (or,
 *      decrypting, 4 first) behind a branch on the round count, uniform across the launch.
 *      Compile-time options:
 *        CAST5_COPIES     copies of the four tables (a power of two, 1..32): 4 KiB each.
 *                         8 (32 KiB, as AES's 32 copies of one 1 KiB table): lanes l, l + 8,
 *                         l + 16, l + 24 share a copy and meet on a bank when their bytes agree
 *                         mod 4 but differ.  1, 2, 4: fewer copies, more conflicts, more
 *                         work-groups per SM.  16 (64 KiB) and 32 (128 KiB) exceed the 48 KiB of
 *                         static shared memory a CUDA kernel (or NVIDIA OpenCL) may declare.
 *        CAST5_PRMT       1: bytes are extracted, and halves byte-swapped, with byte permutes
 *                         (one PRMT on NVIDIA); 0: shifts and masks.
 *        CAST5_MAD_INDEX  1: a lookup address is one multiply-add in bytes, b * 4 COPIES + 4 lane
 *                         (as AES_MAD_INDEX); 0: a word index b * COPIES + lane.
 *        CG_BATCH         blocks per work-item per step (Implementation.batch).
 *
 * SECURITY: both kernels index tables by secret data (key-dependent bytes); neither is constant
 * time (cache and bank-conflict timing).
 *
 * The tables S1..S4 are those of RFC 2144 Appendix A (the same numbers as S1..S4 in
 * ciphergrid/algorithms/cast5.py; tests/test_cast5.py checks that the two copies agree).
 */
#define CG_BLOCK_WORDS 2
#ifndef CG_BATCH
#define CG_BATCH 1
#endif
#ifndef CAST5_REFERENCE
#define CAST5_REFERENCE 0
#endif
#ifndef CAST5_COPIES
#define CAST5_COPIES 8
#endif
#ifndef CAST5_PRMT
#define CAST5_PRMT 0
#endif
#ifndef CAST5_MAD_INDEX
#define CAST5_MAD_INDEX 0
#endif
#define CAST5_NWORDS 33   /* Km1..16, Kr1..16, rounds */

/* ---- RFC 2144 Appendix A: the round function's S-boxes S1..S4 ------------------------------ */

CONST_TABLE uint CAST5_S1[256] = {
    0x30fb40d4u, 0x9fa0ff0bu, 0x6beccd2fu, 0x3f258c7au, 0x1e213f2fu, 0x9c004dd3u, 0x6003e540u, 0xcf9fc949u,
    0xbfd4af27u, 0x88bbbdb5u, 0xe2034090u, 0x98d09675u, 0x6e63a0e0u, 0x15c361d2u, 0xc2e7661du, 0x22d4ff8eu,
    0x28683b6fu, 0xc07fd059u, 0xff2379c8u, 0x775f50e2u, 0x43c340d3u, 0xdf2f8656u, 0x887ca41au, 0xa2d2bd2du,
    0xa1c9e0d6u, 0x346c4819u, 0x61b76d87u, 0x22540f2fu, 0x2abe32e1u, 0xaa54166bu, 0x22568e3au, 0xa2d341d0u,
    0x66db40c8u, 0xa784392fu, 0x004dff2fu, 0x2db9d2deu, 0x97943facu, 0x4a97c1d8u, 0x527644b7u, 0xb5f437a7u,
    0xb82cbaefu, 0xd751d159u, 0x6ff7f0edu, 0x5a097a1fu, 0x827b68d0u, 0x90ecf52eu, 0x22b0c054u, 0xbc8e5935u,
    0x4b6d2f7fu, 0x50bb64a2u, 0xd2664910u, 0xbee5812du, 0xb7332290u, 0xe93b159fu, 0xb48ee411u, 0x4bff345du,
    0xfd45c240u, 0xad31973fu, 0xc4f6d02eu, 0x55fc8165u, 0xd5b1caadu, 0xa1ac2daeu, 0xa2d4b76du, 0xc19b0c50u,
    0x882240f2u, 0x0c6e4f38u, 0xa4e4bfd7u, 0x4f5ba272u, 0x564c1d2fu, 0xc59c5319u, 0xb949e354u, 0xb04669feu,
    0xb1b6ab8au, 0xc71358ddu, 0x6385c545u, 0x110f935du, 0x57538ad5u, 0x6a390493u, 0xe63d37e0u, 0x2a54f6b3u,
    0x3a787d5fu, 0x6276a0b5u, 0x19a6fcdfu, 0x7a42206au, 0x29f9d4d5u, 0xf61b1891u, 0xbb72275eu, 0xaa508167u,
    0x38901091u, 0xc6b505ebu, 0x84c7cb8cu, 0x2ad75a0fu, 0x874a1427u, 0xa2d1936bu, 0x2ad286afu, 0xaa56d291u,
    0xd7894360u, 0x425c750du, 0x93b39e26u, 0x187184c9u, 0x6c00b32du, 0x73e2bb14u, 0xa0bebc3cu, 0x54623779u,
    0x64459eabu, 0x3f328b82u, 0x7718cf82u, 0x59a2cea6u, 0x04ee002eu, 0x89fe78e6u, 0x3fab0950u, 0x325ff6c2u,
    0x81383f05u, 0x6963c5c8u, 0x76cb5ad6u, 0xd49974c9u, 0xca180dcfu, 0x380782d5u, 0xc7fa5cf6u, 0x8ac31511u,
    0x35e79e13u, 0x47da91d0u, 0xf40f9086u, 0xa7e2419eu, 0x31366241u, 0x051ef495u, 0xaa573b04u, 0x4a805d8du,
    0x548300d0u, 0x00322a3cu, 0xbf64cddfu, 0xba57a68eu, 0x75c6372bu, 0x50afd341u, 0xa7c13275u, 0x915a0bf5u,
    0x6b54bfabu, 0x2b0b1426u, 0xab4cc9d7u, 0x449ccd82u, 0xf7fbf265u, 0xab85c5f3u, 0x1b55db94u, 0xaad4e324u,
    0xcfa4bd3fu, 0x2deaa3e2u, 0x9e204d02u, 0xc8bd25acu, 0xeadf55b3u, 0xd5bd9e98u, 0xe31231b2u, 0x2ad5ad6cu,
    0x954329deu, 0xadbe4528u, 0xd8710f69u, 0xaa51c90fu, 0xaa786bf6u, 0x22513f1eu, 0xaa51a79bu, 0x2ad344ccu,
    0x7b5a41f0u, 0xd37cfbadu, 0x1b069505u, 0x41ece491u, 0xb4c332e6u, 0x032268d4u, 0xc9600accu, 0xce387e6du,
    0xbf6bb16cu, 0x6a70fb78u, 0x0d03d9c9u, 0xd4df39deu, 0xe01063dau, 0x4736f464u, 0x5ad328d8u, 0xb347cc96u,
    0x75bb0fc3u, 0x98511bfbu, 0x4ffbcc35u, 0xb58bcf6au, 0xe11f0abcu, 0xbfc5fe4au, 0xa70aec10u, 0xac39570au,
    0x3f04442fu, 0x6188b153u, 0xe0397a2eu, 0x5727cb79u, 0x9ceb418fu, 0x1cacd68du, 0x2ad37c96u, 0x0175cb9du,
    0xc69dff09u, 0xc75b65f0u, 0xd9db40d8u, 0xec0e7779u, 0x4744ead4u, 0xb11c3274u, 0xdd24cb9eu, 0x7e1c54bdu,
    0xf01144f9u, 0xd2240eb1u, 0x9675b3fdu, 0xa3ac3755u, 0xd47c27afu, 0x51c85f4du, 0x56907596u, 0xa5bb15e6u,
    0x580304f0u, 0xca042cf1u, 0x011a37eau, 0x8dbfaadbu, 0x35ba3e4au, 0x3526ffa0u, 0xc37b4d09u, 0xbc306ed9u,
    0x98a52666u, 0x5648f725u, 0xff5e569du, 0x0ced63d0u, 0x7c63b2cfu, 0x700b45e1u, 0xd5ea50f1u, 0x85a92872u,
    0xaf1fbda7u, 0xd4234870u, 0xa7870bf3u, 0x2d3b4d79u, 0x42e04198u, 0x0cd0ede7u, 0x26470db8u, 0xf881814cu,
    0x474d6ad7u, 0x7c0c5e5cu, 0xd1231959u, 0x381b7298u, 0xf5d2f4dbu, 0xab838653u, 0x6e2f1e23u, 0x83719c9eu,
    0xbd91e046u, 0x9a56456eu, 0xdc39200cu, 0x20c8c571u, 0x962bda1cu, 0xe1e696ffu, 0xb141ab08u, 0x7cca89b9u,
    0x1a69e783u, 0x02cc4843u, 0xa2f7c579u, 0x429ef47du, 0x427b169cu, 0x5ac9f049u, 0xdd8f0f00u, 0x5c8165bfu,
};

CONST_TABLE uint CAST5_S2[256] = {
    0x1f201094u, 0xef0ba75bu, 0x69e3cf7eu, 0x393f4380u, 0xfe61cf7au, 0xeec5207au, 0x55889c94u, 0x72fc0651u,
    0xada7ef79u, 0x4e1d7235u, 0xd55a63ceu, 0xde0436bau, 0x99c430efu, 0x5f0c0794u, 0x18dcdb7du, 0xa1d6eff3u,
    0xa0b52f7bu, 0x59e83605u, 0xee15b094u, 0xe9ffd909u, 0xdc440086u, 0xef944459u, 0xba83ccb3u, 0xe0c3cdfbu,
    0xd1da4181u, 0x3b092ab1u, 0xf997f1c1u, 0xa5e6cf7bu, 0x01420ddbu, 0xe4e7ef5bu, 0x25a1ff41u, 0xe180f806u,
    0x1fc41080u, 0x179bee7au, 0xd37ac6a9u, 0xfe5830a4u, 0x98de8b7fu, 0x77e83f4eu, 0x79929269u, 0x24fa9f7bu,
    0xe113c85bu, 0xacc40083u, 0xd7503525u, 0xf7ea615fu, 0x62143154u, 0x0d554b63u, 0x5d681121u, 0xc866c359u,
    0x3d63cf73u, 0xcee234c0u, 0xd4d87e87u, 0x5c672b21u, 0x071f6181u, 0x39f7627fu, 0x361e3084u, 0xe4eb573bu,
    0x602f64a4u, 0xd63acd9cu, 0x1bbc4635u, 0x9e81032du, 0x2701f50cu, 0x99847ab4u, 0xa0e3df79u, 0xba6cf38cu,
    0x10843094u, 0x2537a95eu, 0xf46f6ffeu, 0xa1ff3b1fu, 0x208cfb6au, 0x8f458c74u, 0xd9e0a227u, 0x4ec73a34u,
    0xfc884f69u, 0x3e4de8dfu, 0xef0e0088u, 0x3559648du, 0x8a45388cu, 0x1d804366u, 0x721d9bfdu, 0xa58684bbu,
    0xe8256333u, 0x844e8212u, 0x128d8098u, 0xfed33fb4u, 0xce280ae1u, 0x27e19ba5u, 0xd5a6c252u, 0xe49754bdu,
    0xc5d655ddu, 0xeb667064u, 0x77840b4du, 0xa1b6a801u, 0x84db26a9u, 0xe0b56714u, 0x21f043b7u, 0xe5d05860u,
    0x54f03084u, 0x066ff472u, 0xa31aa153u, 0xdadc4755u, 0xb5625dbfu, 0x68561be6u, 0x83ca6b94u, 0x2d6ed23bu,
    0xeccf01dbu, 0xa6d3d0bau, 0xb6803d5cu, 0xaf77a709u, 0x33b4a34cu, 0x397bc8d6u, 0x5ee22b95u, 0x5f0e5304u,
    0x81ed6f61u, 0x20e74364u, 0xb45e1378u, 0xde18639bu, 0x881ca122u, 0xb96726d1u, 0x8049a7e8u, 0x22b7da7bu,
    0x5e552d25u, 0x5272d237u, 0x79d2951cu, 0xc60d894cu, 0x488cb402u, 0x1ba4fe5bu, 0xa4b09f6bu, 0x1ca815cfu,
    0xa20c3005u, 0x8871df63u, 0xb9de2fcbu, 0x0cc6c9e9u, 0x0beeff53u, 0xe3214517u, 0xb4542835u, 0x9f63293cu,
    0xee41e729u, 0x6e1d2d7cu, 0x50045286u, 0x1e6685f3u, 0xf33401c6u, 0x30a22c95u, 0x31a70850u, 0x60930f13u,
    0x73f98417u, 0xa1269859u, 0xec645c44u, 0x52c877a9u, 0xcdff33a6u, 0xa02b1741u, 0x7cbad9a2u, 0x2180036fu,
    0x50d99c08u, 0xcb3f4861u, 0xc26bd765u, 0x64a3f6abu, 0x80342676u, 0x25a75e7bu, 0xe4e6d1fcu, 0x20c710e6u,
    0xcdf0b680u, 0x17844d3bu, 0x31eef84du, 0x7e0824e4u, 0x2ccb49ebu, 0x846a3baeu, 0x8ff77888u, 0xee5d60f6u,
    0x7af75673u, 0x2fdd5cdbu, 0xa11631c1u, 0x30f66f43u, 0xb3faec54u, 0x157fd7fau, 0xef8579ccu, 0xd152de58u,
    0xdb2ffd5eu, 0x8f32ce19u, 0x306af97au, 0x02f03ef8u, 0x99319ad5u, 0xc242fa0fu, 0xa7e3ebb0u, 0xc68e4906u,
    0xb8da230cu, 0x80823028u, 0xdcdef3c8u, 0xd35fb171u, 0x088a1bc8u, 0xbec0c560u, 0x61a3c9e8u, 0xbca8f54du,
    0xc72feffau, 0x22822e99u, 0x82c570b4u, 0xd8d94e89u, 0x8b1c34bcu, 0x301e16e6u, 0x273be979u, 0xb0ffeaa6u,
    0x61d9b8c6u, 0x00b24869u, 0xb7ffce3fu, 0x08dc283bu, 0x43daf65au, 0xf7e19798u, 0x7619b72fu, 0x8f1c9ba4u,
    0xdc8637a0u, 0x16a7d3b1u, 0x9fc393b7u, 0xa7136eebu, 0xc6bcc63eu, 0x1a513742u, 0xef6828bcu, 0x520365d6u,
    0x2d6a77abu, 0x3527ed4bu, 0x821fd216u, 0x095c6e2eu, 0xdb92f2fbu, 0x5eea29cbu, 0x145892f5u, 0x91584f7fu,
    0x5483697bu, 0x2667a8ccu, 0x85196048u, 0x8c4baceau, 0x833860d4u, 0x0d23e0f9u, 0x6c387e8au, 0x0ae6d249u,
    0xb284600cu, 0xd835731du, 0xdcb1c647u, 0xac4c56eau, 0x3ebd81b3u, 0x230eabb0u, 0x6438bc87u, 0xf0b5b1fau,
    0x8f5ea2b3u, 0xfc184642u, 0x0a036b7au, 0x4fb089bdu, 0x649da589u, 0xa345415eu, 0x5c038323u, 0x3e5d3bb9u,
    0x43d79572u, 0x7e6dd07cu, 0x06dfdf1eu, 0x6c6cc4efu, 0x7160a539u, 0x73bfbe70u, 0x83877605u, 0x4523ecf1u,
};

CONST_TABLE uint CAST5_S3[256] = {
    0x8defc240u, 0x25fa5d9fu, 0xeb903dbfu, 0xe810c907u, 0x47607fffu, 0x369fe44bu, 0x8c1fc644u, 0xaececa90u,
    0xbeb1f9bfu, 0xeefbcaeau, 0xe8cf1950u, 0x51df07aeu, 0x920e8806u, 0xf0ad0548u, 0xe13c8d83u, 0x927010d5u,
    0x11107d9fu, 0x07647db9u, 0xb2e3e4d4u, 0x3d4f285eu, 0xb9afa820u, 0xfade82e0u, 0xa067268bu, 0x8272792eu,
    0x553fb2c0u, 0x489ae22bu, 0xd4ef9794u, 0x125e3fbcu, 0x21fffceeu, 0x825b1bfdu, 0x9255c5edu, 0x1257a240u,
    0x4e1a8302u, 0xbae07fffu, 0x528246e7u, 0x8e57140eu, 0x3373f7bfu, 0x8c9f8188u, 0xa6fc4ee8u, 0xc982b5a5u,
    0xa8c01db7u, 0x579fc264u, 0x67094f31u, 0xf2bd3f5fu, 0x40fff7c1u, 0x1fb78dfcu, 0x8e6bd2c1u, 0x437be59bu,
    0x99b03dbfu, 0xb5dbc64bu, 0x638dc0e6u, 0x55819d99u, 0xa197c81cu, 0x4a012d6eu, 0xc5884a28u, 0xccc36f71u,
    0xb843c213u, 0x6c0743f1u, 0x8309893cu, 0x0feddd5fu, 0x2f7fe850u, 0xd7c07f7eu, 0x02507fbfu, 0x5afb9a04u,
    0xa747d2d0u, 0x1651192eu, 0xaf70bf3eu, 0x58c31380u, 0x5f98302eu, 0x727cc3c4u, 0x0a0fb402u, 0x0f7fef82u,
    0x8c96fdadu, 0x5d2c2aaeu, 0x8ee99a49u, 0x50da88b8u, 0x8427f4a0u, 0x1eac5790u, 0x796fb449u, 0x8252dc15u,
    0xefbd7d9bu, 0xa672597du, 0xada840d8u, 0x45f54504u, 0xfa5d7403u, 0xe83ec305u, 0x4f91751au, 0x925669c2u,
    0x23efe941u, 0xa903f12eu, 0x60270df2u, 0x0276e4b6u, 0x94fd6574u, 0x927985b2u, 0x8276dbcbu, 0x02778176u,
    0xf8af918du, 0x4e48f79eu, 0x8f616ddfu, 0xe29d840eu, 0x842f7d83u, 0x340ce5c8u, 0x96bbb682u, 0x93b4b148u,
    0xef303cabu, 0x984faf28u, 0x779faf9bu, 0x92dc560du, 0x224d1e20u, 0x8437aa88u, 0x7d29dc96u, 0x2756d3dcu,
    0x8b907ceeu, 0xb51fd240u, 0xe7c07ce3u, 0xe566b4a1u, 0xc3e9615eu, 0x3cf8209du, 0x6094d1e3u, 0xcd9ca341u,
    0x5c76460eu, 0x00ea983bu, 0xd4d67881u, 0xfd47572cu, 0xf76cedd9u, 0xbda8229cu, 0x127dadaau, 0x438a074eu,
    0x1f97c090u, 0x081bdb8au, 0x93a07ebeu, 0xb938ca15u, 0x97b03cffu, 0x3dc2c0f8u, 0x8d1ab2ecu, 0x64380e51u,
    0x68cc7bfbu, 0xd90f2788u, 0x12490181u, 0x5de5ffd4u, 0xdd7ef86au, 0x76a2e214u, 0xb9a40368u, 0x925d958fu,
    0x4b39fffau, 0xba39aee9u, 0xa4ffd30bu, 0xfaf7933bu, 0x6d498623u, 0x193cbcfau, 0x27627545u, 0x825cf47au,
    0x61bd8ba0u, 0xd11e42d1u, 0xcead04f4u, 0x127ea392u, 0x10428db7u, 0x8272a972u, 0x9270c4a8u, 0x127de50bu,
    0x285ba1c8u, 0x3c62f44fu, 0x35c0eaa5u, 0xe805d231u, 0x428929fbu, 0xb4fcdf82u, 0x4fb66a53u, 0x0e7dc15bu,
    0x1f081fabu, 0x108618aeu, 0xfcfd086du, 0xf9ff2889u, 0x694bcc11u, 0x236a5caeu, 0x12deca4du, 0x2c3f8cc5u,
    0xd2d02dfeu, 0xf8ef5896u, 0xe4cf52dau, 0x95155b67u, 0x494a488cu, 0xb9b6a80cu, 0x5c8f82bcu, 0x89d36b45u,
    0x3a609437u, 0xec00c9a9u, 0x44715253u, 0x0a874b49u, 0xd773bc40u, 0x7c34671cu, 0x02717ef6u, 0x4feb5536u,
    0xa2d02fffu, 0xd2bf60c4u, 0xd43f03c0u, 0x50b4ef6du, 0x07478cd1u, 0x006e1888u, 0xa2e53f55u, 0xb9e6d4bcu,
    0xa2048016u, 0x97573833u, 0xd7207d67u, 0xde0f8f3du, 0x72f87b33u, 0xabcc4f33u, 0x7688c55du, 0x7b00a6b0u,
    0x947b0001u, 0x570075d2u, 0xf9bb88f8u, 0x8942019eu, 0x4264a5ffu, 0x856302e0u, 0x72dbd92bu, 0xee971b69u,
    0x6ea22fdeu, 0x5f08ae2bu, 0xaf7a616du, 0xe5c98767u, 0xcf1febd2u, 0x61efc8c2u, 0xf1ac2571u, 0xcc8239c2u,
    0x67214cb8u, 0xb1e583d1u, 0xb7dc3e62u, 0x7f10bdceu, 0xf90a5c38u, 0x0ff0443du, 0x606e6dc6u, 0x60543a49u,
    0x5727c148u, 0x2be98a1du, 0x8ab41738u, 0x20e1be24u, 0xaf96da0fu, 0x68458425u, 0x99833be5u, 0x600d457du,
    0x282f9350u, 0x8334b362u, 0xd91d1120u, 0x2b6d8da0u, 0x642b1e31u, 0x9c305a00u, 0x52bce688u, 0x1b03588au,
    0xf7baefd5u, 0x4142ed9cu, 0xa4315c11u, 0x83323ec5u, 0xdfef4636u, 0xa133c501u, 0xe9d3531cu, 0xee353783u,
};

CONST_TABLE uint CAST5_S4[256] = {
    0x9db30420u, 0x1fb6e9deu, 0xa7be7befu, 0xd273a298u, 0x4a4f7bdbu, 0x64ad8c57u, 0x85510443u, 0xfa020ed1u,
    0x7e287affu, 0xe60fb663u, 0x095f35a1u, 0x79ebf120u, 0xfd059d43u, 0x6497b7b1u, 0xf3641f63u, 0x241e4adfu,
    0x28147f5fu, 0x4fa2b8cdu, 0xc9430040u, 0x0cc32220u, 0xfdd30b30u, 0xc0a5374fu, 0x1d2d00d9u, 0x24147b15u,
    0xee4d111au, 0x0fca5167u, 0x71ff904cu, 0x2d195ffeu, 0x1a05645fu, 0x0c13fefeu, 0x081b08cau, 0x05170121u,
    0x80530100u, 0xe83e5efeu, 0xac9af4f8u, 0x7fe72701u, 0xd2b8ee5fu, 0x06df4261u, 0xbb9e9b8au, 0x7293ea25u,
    0xce84ffdfu, 0xf5718801u, 0x3dd64b04u, 0xa26f263bu, 0x7ed48400u, 0x547eebe6u, 0x446d4ca0u, 0x6cf3d6f5u,
    0x2649abdfu, 0xaea0c7f5u, 0x36338cc1u, 0x503f7e93u, 0xd3772061u, 0x11b638e1u, 0x72500e03u, 0xf80eb2bbu,
    0xabe0502eu, 0xec8d77deu, 0x57971e81u, 0xe14f6746u, 0xc9335400u, 0x6920318fu, 0x081dbb99u, 0xffc304a5u,
    0x4d351805u, 0x7f3d5ce3u, 0xa6c866c6u, 0x5d5bcca9u, 0xdaec6feau, 0x9f926f91u, 0x9f46222fu, 0x3991467du,
    0xa5bf6d8eu, 0x1143c44fu, 0x43958302u, 0xd0214eebu, 0x022083b8u, 0x3fb6180cu, 0x18f8931eu, 0x281658e6u,
    0x26486e3eu, 0x8bd78a70u, 0x7477e4c1u, 0xb506e07cu, 0xf32d0a25u, 0x79098b02u, 0xe4eabb81u, 0x28123b23u,
    0x69dead38u, 0x1574ca16u, 0xdf871b62u, 0x211c40b7u, 0xa51a9ef9u, 0x0014377bu, 0x041e8ac8u, 0x09114003u,
    0xbd59e4d2u, 0xe3d156d5u, 0x4fe876d5u, 0x2f91a340u, 0x557be8deu, 0x00eae4a7u, 0x0ce5c2ecu, 0x4db4bba6u,
    0xe756bdffu, 0xdd3369acu, 0xec17b035u, 0x06572327u, 0x99afc8b0u, 0x56c8c391u, 0x6b65811cu, 0x5e146119u,
    0x6e85cb75u, 0xbe07c002u, 0xc2325577u, 0x893ff4ecu, 0x5bbfc92du, 0xd0ec3b25u, 0xb7801ab7u, 0x8d6d3b24u,
    0x20c763efu, 0xc366a5fcu, 0x9c382880u, 0x0ace3205u, 0xaac9548au, 0xeca1d7c7u, 0x041afa32u, 0x1d16625au,
    0x6701902cu, 0x9b757a54u, 0x31d477f7u, 0x9126b031u, 0x36cc6fdbu, 0xc70b8b46u, 0xd9e66a48u, 0x56e55a79u,
    0x026a4cebu, 0x52437effu, 0x2f8f76b4u, 0x0df980a5u, 0x8674cde3u, 0xedda04ebu, 0x17a9be04u, 0x2c18f4dfu,
    0xb7747f9du, 0xab2af7b4u, 0xefc34d20u, 0x2e096b7cu, 0x1741a254u, 0xe5b6a035u, 0x213d42f6u, 0x2c1c7c26u,
    0x61c2f50fu, 0x6552daf9u, 0xd2c231f8u, 0x25130f69u, 0xd8167fa2u, 0x0418f2c8u, 0x001a96a6u, 0x0d1526abu,
    0x63315c21u, 0x5e0a72ecu, 0x49bafefdu, 0x187908d9u, 0x8d0dbd86u, 0x311170a7u, 0x3e9b640cu, 0xcc3e10d7u,
    0xd5cad3b6u, 0x0caec388u, 0xf73001e1u, 0x6c728affu, 0x71eae2a1u, 0x1f9af36eu, 0xcfcbd12fu, 0xc1de8417u,
    0xac07be6bu, 0xcb44a1d8u, 0x8b9b0f56u, 0x013988c3u, 0xb1c52fcau, 0xb4be31cdu, 0xd8782806u, 0x12a3a4e2u,
    0x6f7de532u, 0x58fd7eb6u, 0xd01ee900u, 0x24adffc2u, 0xf4990fc5u, 0x9711aac5u, 0x001d7b95u, 0x82e5e7d2u,
    0x109873f6u, 0x00613096u, 0xc32d9521u, 0xada121ffu, 0x29908415u, 0x7fbb977fu, 0xaf9eb3dbu, 0x29c9ed2au,
    0x5ce2a465u, 0xa730f32cu, 0xd0aa3fe8u, 0x8a5cc091u, 0xd49e2ce7u, 0x0ce454a9u, 0xd60acd86u, 0x015f1919u,
    0x77079103u, 0xdea03af6u, 0x78a8565eu, 0xdee356dfu, 0x21f05cbeu, 0x8b75e387u, 0xb3c50651u, 0xb8a5c3efu,
    0xd8eeb6d2u, 0xe523be77u, 0xc2154529u, 0x2f69efdfu, 0xafe67afbu, 0xf470c4b2u, 0xf3e0eb5bu, 0xd6cc9876u,
    0x39e4460cu, 0x1fda8538u, 0x1987832fu, 0xca007367u, 0xa99144f8u, 0x296b299eu, 0x492fc295u, 0x9266beabu,
    0xb5676e69u, 0x9bd3dddau, 0xdf7e052fu, 0xdb25701cu, 0x1b5e51eeu, 0xf65324e6u, 0x6afce36cu, 0x0316cc04u,
    0x8644213eu, 0xb7dc59d0u, 0x7965291fu, 0xccd6fd43u, 0x41823979u, 0x932bcdf6u, 0xb657c34du, 0x4edfd282u,
    0x7ae5290cu, 0x3cb9536bu, 0x851e20feu, 0x9833557eu, 0x13ecf0b0u, 0xd3ffb372u, 0x3f85c5c1u, 0x0aef7ed2u,
};
#if CAST5_REFERENCE
/* ==== "reference": RFC 2144 section 2.2, one round after the other ============================ */

DEVICE_FN uint cast5_ref_f(uint round, uint d, uint km, uint kr)
{
    uint i, a, b, c, e;
    switch (round % 3u) {
    case 0u: /* f1: rounds 1, 4, 7, ... (0-based 0, 3, 6, ...) */
        i = ROTL32(km + d, kr);
        a = CAST5_S1[i >> 24]; b = CAST5_S2[(i >> 16) & 0xffu];
        c = CAST5_S3[(i >> 8) & 0xffu]; e = CAST5_S4[i & 0xffu];
        return ((a ^ b) - c) + e;
    case 1u: /* f2 */
        i = ROTL32(km ^ d, kr);
        a = CAST5_S1[i >> 24]; b = CAST5_S2[(i >> 16) & 0xffu];
        c = CAST5_S3[(i >> 8) & 0xffu]; e = CAST5_S4[i & 0xffu];
        return ((a - b) + c) ^ e;
    default: /* f3 */
        i = ROTL32(km - d, kr);
        a = CAST5_S1[i >> 24]; b = CAST5_S2[(i >> 16) & 0xffu];
        c = CAST5_S3[(i >> 8) & 0xffu]; e = CAST5_S4[i & 0xffu];
        return ((a + b) ^ c) - e;
    }
}

DEVICE_FN uint cast5_ref_rounds(GLOBAL_RO const uint *RESTRICT k)
{
    return k[32] <= 12u ? 12u : 16u;
}

/* L_i = R_{i-1}, R_i = L_{i-1} ^ f_i(R_{i-1}); the ciphertext is R_n || L_n */
DEVICE_FN void cast5_ref_encrypt1(uint *s, GLOBAL_RO const uint *RESTRICT k)
{
    const uint n = cast5_ref_rounds(k);
    uint l = BSWAP32(s[0]), r = BSWAP32(s[1]);
    for (uint i = 0; i < n; i++) {
        const uint t = r;
        r = l ^ cast5_ref_f(i, r, k[i], k[16 + i]);
        l = t;
    }
    s[0] = BSWAP32(r);
    s[1] = BSWAP32(l);
}

/* the rounds in reverse order on (R_n, L_n): ends at (R_0, L_0); the plaintext is L_0 || R_0 */
DEVICE_FN void cast5_ref_decrypt1(uint *s, GLOBAL_RO const uint *RESTRICT k)
{
    const uint n = cast5_ref_rounds(k);
    uint l = BSWAP32(s[0]), r = BSWAP32(s[1]);
    for (uint j = 0; j < n; j++) {
        const uint i = n - 1u - j;
        const uint t = r;
        r = l ^ cast5_ref_f(i, r, k[i], k[16 + i]);
        l = t;
    }
    s[0] = BSWAP32(r);
    s[1] = BSWAP32(l);
}

#define CG_ENC_LOCALS
#define CG_ENC_SETUP(rk) GLOBAL_RO const uint *cg_k = (rk);
#define CG_ENC_PARAMS , GLOBAL_RO const uint *RESTRICT k
#define CG_ENC_ARGS , cg_k
#define CG_DEC_LOCALS
#define CG_DEC_SETUP(rk) GLOBAL_RO const uint *cg_k = (rk);
#define CG_DEC_PARAMS , GLOBAL_RO const uint *RESTRICT k
#define CG_DEC_ARGS , cg_k

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) cast5_ref_encrypt1(s + 2 * b, k);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
    for (int b = 0; b < CG_BATCH; b++) cast5_ref_decrypt1(s + 2 * b, k);
}

#else
/* ==== "fast": tables in work-group memory, keys in registers =================================== */

#if CAST5_PRMT
#define CAST5_IA(x) BYTE_PERM((x), 0u, 0x4443u)
#define CAST5_IB(x) BYTE_PERM((x), 0u, 0x4442u)
#define CAST5_IC(x) BYTE_PERM((x), 0u, 0x4441u)
#define CAST5_ID(x) BYTE_PERM((x), 0u, 0x4440u)
#define CAST5_BSWAP(x) BYTE_PERM((x), 0u, 0x0123u)
#else
#define CAST5_IA(x) BYTE3(x)
#define CAST5_IB(x) BYTE2(x)
#define CAST5_IC(x) BYTE1(x)
#define CAST5_ID(x) BYTE0(x)
#define CAST5_BSWAP(x) BSWAP32(x)
#endif

#define CAST5_TSIZE (4 * 256 * CAST5_COPIES)
/* word of table t (0..3: S1..S4) for byte b in this lane's copy; `lane` is the copy number, or
 * with CAST5_MAD_INDEX its byte offset (4 * copy) */
#if CAST5_MAD_INDEX
#define CAST5_LANE_UNIT 4u
#define CAST5_L(t, b) (*(LOCAL_PTR const uint *)((LOCAL_PTR const uchar *)(sb) + \
    ((t) * 1024u * CAST5_COPIES + lane + (uint)(b) * (4u * CAST5_COPIES))))
#else
#define CAST5_LANE_UNIT 1u
#define CAST5_L(t, b) ((sb)[((t) * 256u + (uint)(b)) * CAST5_COPIES + lane])
#endif

#define CAST5_F1(d, km, kr) cast5_f1((d), (km), (kr), sb, lane)
#define CAST5_F2(d, km, kr) cast5_f2((d), (km), (kr), sb, lane)
#define CAST5_F3(d, km, kr) cast5_f3((d), (km), (kr), sb, lane)

DEVICE_FN uint cast5_f1(uint d, uint km, uint kr, LOCAL_PTR const uint *sb, uint lane)
{
    const uint i = ROTL32(km + d, kr);
    return ((CAST5_L(0, CAST5_IA(i)) ^ CAST5_L(1, CAST5_IB(i))) - CAST5_L(2, CAST5_IC(i)))
           + CAST5_L(3, CAST5_ID(i));
}

DEVICE_FN uint cast5_f2(uint d, uint km, uint kr, LOCAL_PTR const uint *sb, uint lane)
{
    const uint i = ROTL32(km ^ d, kr);
    return ((CAST5_L(0, CAST5_IA(i)) - CAST5_L(1, CAST5_IB(i))) + CAST5_L(2, CAST5_IC(i)))
           ^ CAST5_L(3, CAST5_ID(i));
}

DEVICE_FN uint cast5_f3(uint d, uint km, uint kr, LOCAL_PTR const uint *sb, uint lane)
{
    const uint i = ROTL32(km - d, kr);
    return ((CAST5_L(0, CAST5_IA(i)) + CAST5_L(1, CAST5_IB(i))) ^ CAST5_L(2, CAST5_IC(i)))
           - CAST5_L(3, CAST5_ID(i));
}

/* the four tables, CAST5_COPIES copies each: word (t 256 + b) COPIES + c = S_{t+1}[b] */
#define CAST5_FILL(sbuf)                                                             \
    for (uint cg_k = LID; cg_k < (uint)CAST5_TSIZE; cg_k += LSIZE) {                 \
        const uint cg_t = cg_k / (256u * CAST5_COPIES);                              \
        const uint cg_b = (cg_k / CAST5_COPIES) & 255u;                              \
        (sbuf)[cg_k] = cg_t == 0u ? CAST5_S1[cg_b] : cg_t == 1u ? CAST5_S2[cg_b]     \
                     : cg_t == 2u ? CAST5_S3[cg_b] : CAST5_S4[cg_b];                 \
    }

/* Km and Kr into registers, written out (no loop a compiler might leave rolled) */
#define CAST5_LD(src, i) cg_km[i] = (src)[i]; cg_kr[i] = (src)[16 + (i)];
#define CAST5_KEYS(rk)                                                                \
    uint cg_km[16], cg_kr[16];                                                        \
    CAST5_LD(rk, 0) CAST5_LD(rk, 1) CAST5_LD(rk, 2) CAST5_LD(rk, 3)                    \
    CAST5_LD(rk, 4) CAST5_LD(rk, 5) CAST5_LD(rk, 6) CAST5_LD(rk, 7)                    \
    CAST5_LD(rk, 8) CAST5_LD(rk, 9) CAST5_LD(rk, 10) CAST5_LD(rk, 11)                  \
    CAST5_LD(rk, 12) CAST5_LD(rk, 13) CAST5_LD(rk, 14) CAST5_LD(rk, 15)                \
    const uint cg_full = (rk)[32] > 12u; /* 16 rounds (keys over 80 bits) */

#define CAST5_SETUP(rk)                                                   \
    CAST5_FILL(cg_sb)                                                     \
    CAST5_KEYS(rk)                                                        \
    const uint cg_lane = (LID & (CAST5_COPIES - 1u)) * CAST5_LANE_UNIT;   \
    BARRIER();

#define CG_ENC_LOCALS LOCAL_VAR uint cg_sb[CAST5_TSIZE];
#define CG_ENC_SETUP(rk) CAST5_SETUP(rk)
#define CG_ENC_PARAMS , const uint *km, const uint *kr, uint full, LOCAL_PTR const uint *sb, uint lane
#define CG_ENC_ARGS , cg_km, cg_kr, cg_full, cg_sb, cg_lane
#define CG_DEC_LOCALS LOCAL_VAR uint cg_sb[CAST5_TSIZE];
#define CG_DEC_SETUP(rk) CAST5_SETUP(rk)
#define CG_DEC_PARAMS CG_ENC_PARAMS
#define CG_DEC_ARGS CG_ENC_ARGS

/* one round on (l, r): L_i = R_{i-1}, R_i = L_{i-1} ^ f(R_{i-1}); i is 0-based here */
#define CAST5_ROUND(i, F) { const uint cg_t = r; r = l ^ F(r, km[i], kr[i]); l = cg_t; }

DEVICE_FN void cast5_encrypt1(uint *s, const uint *km, const uint *kr, uint full,
                              LOCAL_PTR const uint *sb, uint lane)
{
    uint l = CAST5_BSWAP(s[0]), r = CAST5_BSWAP(s[1]);
    CAST5_ROUND(0, CAST5_F1) CAST5_ROUND(1, CAST5_F2) CAST5_ROUND(2, CAST5_F3)
    CAST5_ROUND(3, CAST5_F1) CAST5_ROUND(4, CAST5_F2) CAST5_ROUND(5, CAST5_F3)
    CAST5_ROUND(6, CAST5_F1) CAST5_ROUND(7, CAST5_F2) CAST5_ROUND(8, CAST5_F3)
    CAST5_ROUND(9, CAST5_F1) CAST5_ROUND(10, CAST5_F2) CAST5_ROUND(11, CAST5_F3)
    if (full) {
        CAST5_ROUND(12, CAST5_F1) CAST5_ROUND(13, CAST5_F2) CAST5_ROUND(14, CAST5_F3)
        CAST5_ROUND(15, CAST5_F1)
    }
    s[0] = CAST5_BSWAP(r);
    s[1] = CAST5_BSWAP(l);
}

DEVICE_FN void cast5_decrypt1(uint *s, const uint *km, const uint *kr, uint full,
                              LOCAL_PTR const uint *sb, uint lane)
{
    uint l = CAST5_BSWAP(s[0]), r = CAST5_BSWAP(s[1]);
    if (full) {
        CAST5_ROUND(15, CAST5_F1) CAST5_ROUND(14, CAST5_F3) CAST5_ROUND(13, CAST5_F2)
        CAST5_ROUND(12, CAST5_F1)
    }
    CAST5_ROUND(11, CAST5_F3) CAST5_ROUND(10, CAST5_F2) CAST5_ROUND(9, CAST5_F1)
    CAST5_ROUND(8, CAST5_F3) CAST5_ROUND(7, CAST5_F2) CAST5_ROUND(6, CAST5_F1)
    CAST5_ROUND(5, CAST5_F3) CAST5_ROUND(4, CAST5_F2) CAST5_ROUND(3, CAST5_F1)
    CAST5_ROUND(2, CAST5_F3) CAST5_ROUND(1, CAST5_F2) CAST5_ROUND(0, CAST5_F1)
    s[0] = CAST5_BSWAP(r);
    s[1] = CAST5_BSWAP(l);
}

DEVICE_FN void cg_encrypt_batch(uint *s CG_ENC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) cast5_encrypt1(s + 2 * b, km, kr, full, sb, lane);
}

DEVICE_FN void cg_decrypt_batch(uint *s CG_DEC_PARAMS)
{
#pragma unroll
    for (int b = 0; b < CG_BATCH; b++) cast5_decrypt1(s + 2 * b, km, kr, full, sb, lane);
}

#endif /* CAST5_REFERENCE */
