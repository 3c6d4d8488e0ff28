/* portable.h - the few macros that let one kernel file compile as OpenCL C 1.2 and as CUDA C++
 * (NVRTC).  Kernel files use only these spellings for address spaces, indices and barriers.
 *
 *   KERNEL                 kernel entry point
 *   GLOBAL / GLOBAL_RO     pointer to device memory (RO: read-only, may use the read-only cache)
 *   LOCAL_VAR              declaration of work-group shared memory at kernel scope
 *   LOCAL_PTR              pointer parameter into work-group shared memory
 *   CONST_TABLE            program-scope constant table; CONST_PTR a pointer parameter into it
 *   DEVICE_FN              non-kernel function (inlined)
 *   BARRIER()              work-group barrier on shared memory
 *   GID LID LSIZE GSIZE GROUP_ID NGROUPS   1-D work-item indices
 */
#ifndef CG_PORTABLE_H
#define CG_PORTABLE_H

#if defined(__OPENCL_VERSION__)
#define KERNEL __kernel
#define GLOBAL __global
#define GLOBAL_RO __global
#define LOCAL_VAR __local
#define LOCAL_PTR __local
#define CONST_TABLE __constant
#define CONST_PTR __constant
#define DEVICE_FN static inline
#define RESTRICT restrict
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define GID ((ulong)get_global_id(0))
#define LID ((uint)get_local_id(0))
#define LSIZE ((uint)get_local_size(0))
#define GSIZE ((ulong)get_global_size(0))
#define GROUP_ID ((ulong)get_group_id(0))
#define NGROUPS ((ulong)get_num_groups(0))
#define MAKE_UINT4(a, b, c, d) ((uint4)((a), (b), (c), (d)))
#define MAKE_UINT2(a, b) ((uint2)((a), (b)))
#define ROTL32(x, n) rotate((uint)(x), (uint)(n))
#define MUL_HI64(a, b) mul_hi((ulong)(a), (ulong)(b))
#else /* CUDA through NVRTC */
/* macros, not typedefs: host headers (sys/types.h) may already declare ulong differently */
#define uint unsigned int
#define ulong unsigned long long
#define uchar unsigned char
#if defined(CG_MAX_REGS)
/* cap registers per work-item (an implementation's "max_registers": more warps per SM) */
#define KERNEL extern "C" __global__ __maxnreg__(CG_MAX_REGS)
#elif defined(CG_MIN_BLOCKS) && defined(CG_LOCAL_SIZE)
/* cap registers so that CG_MIN_BLOCKS work-groups of CG_LOCAL_SIZE fit on one SM */
#define KERNEL extern "C" __global__ __launch_bounds__(CG_LOCAL_SIZE, CG_MIN_BLOCKS)
#else
#define KERNEL extern "C" __global__
#endif
#define GLOBAL
#define GLOBAL_RO
#define LOCAL_VAR __shared__
#define LOCAL_PTR
#define CONST_TABLE __constant__
#define CONST_PTR
#define DEVICE_FN static __device__ __forceinline__
#define RESTRICT __restrict__
#define BARRIER() __syncthreads()
#define GID ((ulong)blockIdx.x * (ulong)blockDim.x + (ulong)threadIdx.x)
#define LID ((uint)threadIdx.x)
#define LSIZE ((uint)blockDim.x)
#define GSIZE ((ulong)gridDim.x * (ulong)blockDim.x)
#define GROUP_ID ((ulong)blockIdx.x)
#define NGROUPS ((ulong)gridDim.x)
#define MAKE_UINT4(a, b, c, d) make_uint4((a), (b), (c), (d))
#define MAKE_UINT2(a, b) make_uint2((a), (b))
#define ROTL32(x, n) __funnelshift_l((uint)(x), (uint)(x), (n))
#define MUL_HI64(a, b) __umul64hi((ulong)(a), (ulong)(b))
#endif

/* BYTE_PERM(x, y, s): byte k of the result is byte (s >> 4k) & 7 of the 8-byte value y:x
 * (CUDA __byte_perm / PTX prmt; one instruction on NVIDIA, a shift-and-mask loop elsewhere). */
#if defined(__CUDACC__)
#define BYTE_PERM(x, y, s) __byte_perm((x), (y), (s))
#elif defined(cl_nv_pragma_unroll)
DEVICE_FN uint cg_prmt(uint x, uint y, uint s)
{
    uint r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
    return r;
}
#define BYTE_PERM(x, y, s) cg_prmt((x), (y), (s))
#else
/* one byte of the result: byte (s >> 4k) & 7 of y:x, as 32-bit selects and shifts (a constant
 * selector folds to one shift and mask; a 64-bit shift by a variable amount in a loop kept CPU
 * compilers from vectorizing the kernels that extract bytes this way) */
#define CG_PRMT_BYTE(x, y, s, k)                                                        \
    (((((((s) >> (4 * (k))) & 4u) ? (y) : (x)) >> (8 * (((s) >> (4 * (k))) & 3u))) & 0xffu) \
     << (8 * (k)))
DEVICE_FN uint cg_prmt(uint x, uint y, uint s)
{
    return CG_PRMT_BYTE(x, y, s, 0) | CG_PRMT_BYTE(x, y, s, 1) | CG_PRMT_BYTE(x, y, s, 2) |
           CG_PRMT_BYTE(x, y, s, 3);
}
#define BYTE_PERM(x, y, s) cg_prmt((x), (y), (s))
#endif

#define BSWAP32(x) ((((x) & 0xffu) << 24) | (((x) & 0xff00u) << 8) | (((x) >> 8) & 0xff00u) | ((x) >> 24))
#define BYTE0(x) ((x) & 0xffu)
#define BYTE1(x) (((x) >> 8) & 0xffu)
#define BYTE2(x) (((x) >> 16) & 0xffu)
#define BYTE3(x) ((x) >> 24)

#endif /* CG_PORTABLE_H */
