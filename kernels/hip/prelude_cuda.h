// Prelude for CUDA (NVRTC): names the kernels use that HIP and CUDA spell
// differently. NVRTC predefines the CUDA built-ins (threadIdx,
// __syncthreads, fmaf, expf, ...) and needs no header for them.
typedef unsigned int uint32_t;
typedef unsigned long long greta_u64;
// IEEE binary16 as its raw bits, widened by the PTX conversion: no
// cuda_fp16.h, whose presence in NVRTC depends on the CUDA version.
typedef unsigned short greta_f16;
__device__ inline float greta_f16_to_f32(greta_f16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
// 16-byte vectors for the streaming kernels and the row reductions: NVRTC
// predefines float4 and uint4.
typedef float4 greta_f4;
typedef uint4 greta_u4;
#define GRETA_CUDA 1
// Exchange within a warp.
__device__ inline float greta_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
// An f16 held as its raw bits (shared-memory tiles of the f16 GEMM), widened.
__device__ inline float greta_f16_bits_to_f32(unsigned short h) { return greta_f16_to_f32(h); }
