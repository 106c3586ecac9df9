// rope_kv_f16: RoPE ("rotate half") of a fused QKV projection into the KV
// cache. qkv is [tokens][3][heads][head_dim] f16; q (rotated) goes to
// q[tokens][heads][head_dim], k (rotated) and v (copied) to rows pos0 + t
// of the caches [max_seq][heads][head_dim]; nothing else of the caches is
// touched. Arithmetic in f32, each output rounded once to f16 (to nearest).
// One block per token (grid-stride): its head_dim/2 angles
// (pos0 + t) * theta^(-2i/head_dim) are formed and reduced in f64 once
// (as rope.hip: p*f reaches thousands of radians) into a shared cos/sin
// table, then every head of the token is rotated from it, a pair of
// 32-bit words (elements i, i+1 and i+h, i+h+1, h = head_dim/2) per thread.
#include "common.h"

#if defined(GRETA_CUDA)
__device__ inline uint32_t greta_rkv_pack(float a, float b) {
    unsigned short x, y;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(a));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(y) : "f"(b));
    return (uint32_t)x | ((uint32_t)y << 16);
}
#else
__device__ inline uint32_t greta_rkv_pack(float a, float b) {
    return (uint32_t)__builtin_bit_cast(unsigned short, (_Float16)a) |
           ((uint32_t)__builtin_bit_cast(unsigned short, (_Float16)b) << 16);
}
#endif
__device__ inline float greta_rkv_lo(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w & 0xffffu)); }
__device__ inline float greta_rkv_hi(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w >> 16)); }

// head_dim <= 256 (the op's rule): at most 128 angles per token.
#define GRETA_RKV_MAX_HALF 128

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_rope_kv_f16(const greta_f16* __restrict__ qkv, greta_f16* __restrict__ q, greta_f16* __restrict__ k_cache,
                  greta_f16* __restrict__ v_cache, uint32_t tokens, uint32_t heads, uint32_t head_dim, uint32_t pos0,
                  uint32_t max_seq, float theta) {
    (void)max_seq;
    __shared__ float cs[GRETA_RKV_MAX_HALF][2];
    const uint32_t* src = (const uint32_t*)qkv;
    uint32_t* qo = (uint32_t*)q;
    uint32_t* kc = (uint32_t*)k_cache;
    uint32_t* vc = (uint32_t*)v_cache;
    const uint32_t half = head_dim / 2, hw = half / 2, d2 = heads * head_dim / 2;
    for (uint32_t t = blockIdx.x; t < tokens; t += gridDim.x) {
        __syncthreads();  // the previous token's readers are done with cs
        for (uint32_t i = threadIdx.x; i < half; i += blockDim.x) {
            const double p = (double)pos0 + (double)t;
            const double f = pow((double)theta, -2.0 * (double)i / (double)head_dim);
            double s, c;
            sincos(p * f, &s, &c);
            cs[i][0] = (float)c;
            cs[i][1] = (float)s;
        }
        __syncthreads();
        const uint32_t items = heads * hw;
        for (uint32_t idx = threadIdx.x; idx < items; idx += blockDim.x) {
            const uint32_t h = idx / hw, w = idx % hw;
            const uint32_t hoff = h * (head_dim / 2) + w;
            const greta_u64 s0 = (greta_u64)t * 3 * d2 + hoff;
            const float c0 = cs[2 * w][0], s0_ = cs[2 * w][1], c1 = cs[2 * w + 1][0], s1 = cs[2 * w + 1][1];
            const greta_u64 dq = (greta_u64)t * d2 + hoff;
            const greta_u64 dc = ((greta_u64)pos0 + t) * d2 + hoff;
#pragma unroll
            for (int part = 0; part < 2; ++part) {
                const uint32_t lo = src[s0 + part * d2], hi = src[s0 + part * d2 + hw];
                const float a0 = greta_rkv_lo(lo), a1 = greta_rkv_hi(lo), b0 = greta_rkv_lo(hi), b1 = greta_rkv_hi(hi);
                const uint32_t ya = greta_rkv_pack(a0 * c0 - b0 * s0_, a1 * c1 - b1 * s1);
                const uint32_t yb = greta_rkv_pack(a0 * s0_ + b0 * c0, a1 * s1 + b1 * c1);
                uint32_t* dst = part == 0 ? qo + dq : kc + dc;
                dst[0] = ya;
                dst[hw] = yb;
            }
            vc[dc] = src[s0 + 2 * d2];
            vc[dc + hw] = src[s0 + 2 * d2 + hw];
        }
    }
}
