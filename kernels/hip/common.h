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

// Sum of `v` over the block; every thread gets the result. `scratch` holds
// GRETA_BLOCK floats. A shared-memory tree: independent of the wave size
// (64 on CDNA, 32 or 64 on RDNA).
__device__ inline float greta_block_sum(float v, float* scratch) {
    const unsigned t = threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (unsigned s = GRETA_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) scratch[t] += scratch[t + s];
        __syncthreads();
    }
    const float r = scratch[0];
    __syncthreads();
    return r;
}

__device__ inline float greta_block_max(float v, float* scratch) {
    const unsigned t = threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (unsigned s = GRETA_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) scratch[t] = fmaxf(scratch[t], scratch[t + s]);
        __syncthreads();
    }
    const float r = scratch[0];
    __syncthreads();
    return r;
}
