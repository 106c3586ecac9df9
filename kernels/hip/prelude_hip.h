// Prelude for HIP (hiprtc, or hipcc as a fallback): names the kernels use
// that HIP and CUDA spell differently. hiprtc predefines the HIP built-ins
// (threadIdx, __syncthreads, fmaf, expf, ...) but, on ROCm 5.2, no header
// can be included, so the integer types are declared here; redeclaring a
// typedef with the same type is legal where a header already declared it.
typedef unsigned int uint32_t;
typedef unsigned long long greta_u64;
// IEEE binary16 as clang's native type: the f16 GEMM reads raw halves.
typedef _Float16 greta_f16;
__device__ inline float greta_f16_to_f32(greta_f16 h) { return (float)h; }
#ifndef INFINITY
#define INFINITY __builtin_huge_valf()
#endif
