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
