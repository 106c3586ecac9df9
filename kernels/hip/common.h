// Shared helpers for greta's HIP kernels. Every kernel is `extern "C"` so
// the runtime finds it by its plain name (greta_<op>). Sizes are 32-bit, as
// the op contracts in greta-kernels promise; grid-stride loop counters are
// 64-bit so `i += stride` cannot wrap past a size near 2^32.
//
// No system header is included: the runtime compiles these files with hiprtc
// (HIP) or NVRTC (CUDA), which ship different headers (ROCm 5.2's hiprtc
// finds none at all), so a short per-backend prelude (prelude_hip.h,
// prelude_cuda.h) defines the few names that differ: uint32_t, greta_u64,
// greta_f16 and greta_f16_to_f32.
#pragma once

// Threads per block of the element-wise kernels and the row reductions.
#define GRETA_BLOCK 256

// Streaming kernels: each thread moves GRETA_VEC_UNROLL 16-byte vectors per
// grid-stride step (several independent loads in flight before the first
// store), so a grid of a few blocks per compute unit keeps the memory busy.
#ifndef GRETA_VEC_UNROLL
#define GRETA_VEC_UNROLL 4
#endif

// 16-byte vectors (greta_f4: 4 x f32, greta_u4: 4 x u32) come from the
// prelude: clang's ext_vector_type on HIP, float4/uint4 on CUDA. A buffer is
// 16-byte aligned (the allocators give 256 bytes), so element 4*i of a
// 32-bit buffer starts a vector.

// Sum of `v` over the block; every thread gets the result. `scratch` holds
// GRETA_BLOCK / 32 floats. Lanes first combine within groups of 32 through
// register shuffles (xor masks below 32 stay inside a group on 32- and
// 64-wide waves alike, so the wave size need not be known), then one value
// per group goes through shared memory: two barriers per reduction.
__device__ inline float greta_block_sum(float v, float* scratch) {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v += greta_shfl_xor(v, m);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = 0.0f;
#pragma unroll
    for (int g = 0; g < GRETA_BLOCK / 32; ++g) r += scratch[g];
    __syncthreads();
    return r;
}

__device__ inline float greta_block_max(float v, float* scratch) {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, greta_shfl_xor(v, m));
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[0];
#pragma unroll
    for (int g = 1; g < GRETA_BLOCK / 32; ++g) r = fmaxf(r, scratch[g]);
    __syncthreads();
    return r;
}

// Row kernels keep a row in registers when it has at most GRETA_ROW_VECS
// 16-byte vectors per thread (8192 f32 columns at 256 threads) and cols is
// a multiple of 4: the row is read from memory once and written once.
// Longer or odd rows take the element-wise loops (re-reads from cache).
#ifndef GRETA_ROW_VECS
#define GRETA_ROW_VECS 8
#endif

// f16 values as raw bits (unsigned short) in both compilers: the block ops
// (gemv_f16, linear_f16, rmsnorm_f16, add_rmsnorm_f16, swiglu_f16) read
// them 8 at a time as one 16-byte greta_u4 and store their f16 results
// rounded once, to nearest even.
#if defined(GRETA_CUDA)
__device__ inline unsigned short greta_h_from_f32(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#else
__device__ inline unsigned short greta_h_from_f32(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
#endif
// The low and high half of a 32-bit word, widened.
__device__ inline float greta_h_lo(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w & 0xffffu)); }
__device__ inline float greta_h_hi(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w >> 16)); }
// Two f32 values as one word of two halves (a in the low half).
__device__ inline uint32_t greta_h2_from_f32(float a, float b) {
    return (uint32_t)greta_h_from_f32(a) | ((uint32_t)greta_h_from_f32(b) << 16);
}
// The 8 halves of a 16-byte vector, widened, in memory order.
__device__ inline void greta_h8_unpack(greta_u4 v, float* f) {
    f[0] = greta_h_lo(v.x);
    f[1] = greta_h_hi(v.x);
    f[2] = greta_h_lo(v.y);
    f[3] = greta_h_hi(v.y);
    f[4] = greta_h_lo(v.z);
    f[5] = greta_h_hi(v.z);
    f[6] = greta_h_lo(v.w);
    f[7] = greta_h_hi(v.w);
}
__device__ inline greta_u4 greta_h8_pack(const float* f) {
    greta_u4 v;
    v.x = greta_h2_from_f32(f[0], f[1]);
    v.y = greta_h2_from_f32(f[2], f[3]);
    v.z = greta_h2_from_f32(f[4], f[5]);
    v.w = greta_h2_from_f32(f[6], f[7]);
    return v;
}
