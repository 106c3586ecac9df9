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
// 16-byte vectors for the streaming kernels and the row reductions.
typedef float greta_f4 __attribute__((ext_vector_type(4)));
typedef unsigned int greta_u4 __attribute__((ext_vector_type(4)));
#define GRETA_HIP 1
// Exchange within a wave (HIP's __shfl_xor; width = the wave).
__device__ inline float greta_shfl_xor(float v, int m) { return __shfl_xor(v, m); }
// An f16 held as its raw bits (shared-memory tiles of the f16 GEMM), widened.
__device__ inline float greta_f16_bits_to_f32(unsigned short h) { return (float)__builtin_bit_cast(_Float16, h); }
