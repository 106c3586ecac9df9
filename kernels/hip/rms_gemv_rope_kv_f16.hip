// rms_gemv_rope_kv_f16: the QKV projection of one decode token with the
// RMSNorm in its prologue and RoPE and the KV-cache write in its epilogue.
// n = x / sqrt(mean(x^2) + eps) * g, [q; k; v] = W n (W [3d][d], d = heads
// x head_dim); q and k rotated at pos0 as rope_kv_f16 does, q written, k
// and v into row pos0 of the caches [max_seq][heads][head_dim] (nothing
// else of them is touched). f32 arithmetic, each output rounded once to
// f16. A group of 32 lanes per unit: the rows i and i + head_dim/2 of one
// head of q, k or v, the pair RoPE mixes (greta_fgemv_sums in common.h);
// its angle pos0 * theta^(-2i/head_dim) comes as cos/sin from a
// [head_dim/2] table the runtime computes in f64 on the host (it reaches
// thousands of radians; f64 pow/sincos on the device held gfx942 to 2
// waves per SIMD), as the Vulkan kernel reads it.
//
// greta_rms_gemv_rope_kv_f16_probe: the same with a prologue that is wrong
// on purpose (greta_fgemv_sums' PROBE: one lane's columns left out of the
// norm), which `--inject prologue` runs in the decode graph to show that
// the layer's check catches a fused prologue gone wrong.
#include "common.h"

template <bool PROBE>
__device__ inline void greta_rms_gemv_rope_kv(const greta_f16* __restrict__ x, const greta_f16* __restrict__ g,
                                              const greta_f16* __restrict__ w, greta_f16* __restrict__ q,
                                              greta_f16* __restrict__ k_cache, greta_f16* __restrict__ v_cache,
                                              const float* __restrict__ cs, uint32_t heads, uint32_t head_dim,
                                              uint32_t pos0, float eps) {
    const uint32_t lane = threadIdx.x & 31u;
    const greta_u64 groups = (greta_u64)gridDim.x * (GRETA_BLOCK / 32);
    const unsigned short* xs = (const unsigned short*)x;
    const unsigned short* gs = (const unsigned short*)g;
    const unsigned short* ws = (const unsigned short*)w;
    unsigned short* qs = (unsigned short*)q;
    unsigned short* kc = (unsigned short*)k_cache;
    unsigned short* vc = (unsigned short*)v_cache;
    const uint32_t half = head_dim / 2u, cols = heads * head_dim, per_sec = cols / 2u;
    const greta_u64 units = 3ull * per_sec, row = (greta_u64)pos0 * cols;
    for (greta_u64 o = (greta_u64)blockIdx.x * (GRETA_BLOCK / 32) + threadIdx.x / 32; o < units; o += groups) {
        const uint32_t sec = (uint32_t)(o / per_sec), within = (uint32_t)(o % per_sec);
        const uint32_t head = within / half, i = within % half;
        const greta_u64 r0 = (greta_u64)sec * cols + head * head_dim + i;
        float s[3];
        greta_fgemv_sums<true, true, PROBE>(xs, gs, ws + r0 * cols, ws + (r0 + half) * cols, cols, lane, s);
        if (lane == 0) {
            const float inv = 1.0f / sqrtf(s[2] / (float)cols + eps);
            const float va = s[0] * inv, vb = s[1] * inv;
            const greta_u64 at = (greta_u64)head * head_dim + i;
            if (sec == 2u) {
                vc[row + at] = greta_h_from_f32(va);
                vc[row + at + half] = greta_h_from_f32(vb);
            } else {
                const float c = cs[2 * i], sf = cs[2 * i + 1];
                const float ya = va * c - vb * sf, yb = va * sf + vb * c;
                unsigned short* dst = sec == 0u ? qs + at : kc + row + at;
                dst[0] = greta_h_from_f32(ya);
                dst[half] = greta_h_from_f32(yb);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_rms_gemv_rope_kv_f16(const greta_f16* __restrict__ x, const greta_f16* __restrict__ g,
                           const greta_f16* __restrict__ w, greta_f16* __restrict__ q,
                           greta_f16* __restrict__ k_cache, greta_f16* __restrict__ v_cache,
                           const float* __restrict__ cs, uint32_t heads, uint32_t head_dim, uint32_t pos0,
                           uint32_t max_seq, float theta, float eps) {
    (void)max_seq;
    (void)theta;
    greta_rms_gemv_rope_kv<false>(x, g, w, q, k_cache, v_cache, cs, heads, head_dim, pos0, eps);
}

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_rms_gemv_rope_kv_f16_probe(const greta_f16* __restrict__ x, const greta_f16* __restrict__ g,
                                 const greta_f16* __restrict__ w, greta_f16* __restrict__ q,
                                 greta_f16* __restrict__ k_cache, greta_f16* __restrict__ v_cache,
                                 const float* __restrict__ cs, uint32_t heads, uint32_t head_dim, uint32_t pos0,
                                 uint32_t max_seq, float theta, float eps) {
    (void)max_seq;
    (void)theta;
    greta_rms_gemv_rope_kv<true>(x, g, w, q, k_cache, v_cache, cs, heads, head_dim, pos0, eps);
}
