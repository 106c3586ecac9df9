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
