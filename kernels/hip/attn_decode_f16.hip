// attn_decode_f16: one token's attention over the first `len` rows of an
// f16 KV cache ([max_seq][heads][head_dim]), in two launches (the op's
// second pass, runtime/src/gpu/launch.rs):
//
// greta_attn_decode_f16 (block (h, s), GRETA_DEC_THREADS threads): chunk s
// of C positions of head h. A row of head_dim halves is read as 16-byte
// vectors of 8 halves by LP lanes (head_dim/8 rounded up to a power of
// two; lanes past the row idle), so G = 128/LP rows are read at once, and
// each thread issues its 8 rows of K and V (16 loads of 16 bytes) before
// using any: C = 8 G positions (64 at head_dim 128, the op's
// ATTN_DECODE_CHUNK rule, which sizes the scratch). Scores (q pre-scaled by
// 1/sqrt(head_dim)) are summed over the LP lanes of a row by shuffles
// (xor masks below LP <= 32 stay inside a row's lanes on 32- and 64-wide
// waves); the block's max M, sum L of exp(s - M) and weighted V sum go to
// the scratch, laid out as the GLSL twin's:
//   part[(h*splits + s)*head_dim + e]                         weighted V
//   part[heads*splits*head_dim + (h*splits + s)*2 + {0,1}]     M, L
// greta_attn_decode_f16_combine (block h): o = sum_s exp(M_s - M) V_s /
// sum_s exp(M_s - M) L_s, rounded once to f16 (to nearest).
#include "common.h"

#define GRETA_DEC_THREADS 128

#if defined(GRETA_CUDA)
__device__ inline uint32_t greta_dec_pack(float a, float b) {
    unsigned short x, y;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(a));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(y) : "f"(b));
    return (uint32_t)x | ((uint32_t)y << 16);
}
#else
__device__ inline uint32_t greta_dec_pack(float a, float b) {
    return (uint32_t)__builtin_bit_cast(unsigned short, (_Float16)a) |
           ((uint32_t)__builtin_bit_cast(unsigned short, (_Float16)b) << 16);
}
#endif
__device__ inline float greta_dec_lo(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w & 0xffffu)); }
__device__ inline float greta_dec_hi(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w >> 16)); }

__device__ inline uint32_t greta_dec_lanes(uint32_t head_dim) {
    uint32_t l = head_dim / 8, lp = 1;
    while (lp < l) lp <<= 1;
    return lp;
}

// Max or sum over the block's 128 threads (lanes combine in 32-wide groups
// by shuffles, then 4 values through shared memory); every thread gets it.
__device__ inline float greta_dec_reduce(float v, float* sh, bool is_max) {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) {
        const float o = greta_shfl_xor(v, m);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    float r = sh[0];
#pragma unroll
    for (int g = 1; g < GRETA_DEC_THREADS / 32; ++g) r = is_max ? fmaxf(r, sh[g]) : r + sh[g];
    __syncthreads();
    return r;
}

extern "C" __global__ void __launch_bounds__(GRETA_DEC_THREADS)
greta_attn_decode_f16(const greta_f16* __restrict__ q, const greta_f16* __restrict__ k_cache,
                      const greta_f16* __restrict__ v_cache, greta_f16* __restrict__ o, float* __restrict__ part,
                      uint32_t heads, uint32_t head_dim, uint32_t len, uint32_t max_seq) {
    (void)o;
    (void)max_seq;
    __shared__ float red[8 * GRETA_DEC_THREADS];
    __shared__ float sh[GRETA_DEC_THREADS / 32];
    const uint32_t hd = head_dim, L = hd / 8, LP = greta_dec_lanes(hd), G = GRETA_DEC_THREADS / LP, C = 8 * G;
    const uint32_t t = threadIdx.x, r = t % LP, g = t / LP;
    // Heads along x: the blocks that run at once read every head of their
    // chunks, i.e. whole 8 KiB cache rows, not one 256-byte slice of each.
    const uint32_t h = blockIdx.x, s = blockIdx.y;
    const uint32_t splits = (len + C - 1) / C;
    const greta_u64 d = (greta_u64)heads * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float qf[8];
    if (r < L) {
        const greta_u4 qv = *(const greta_u4*)((const unsigned short*)q + h * hd + r * 8);
        const uint32_t w[4] = {qv.x, qv.y, qv.z, qv.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            qf[2 * i] = greta_dec_lo(w[i]) * scale;
            qf[2 * i + 1] = greta_dec_hi(w[i]) * scale;
        }
    } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) qf[i] = 0.0f;
    }
    greta_u4 kk[8], vv[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const uint32_t pos = s * C + g + G * j;
        if (pos < len && r < L) {
            const greta_u64 at = (greta_u64)pos * d + (greta_u64)h * hd + r * 8;
            kk[j] = *(const greta_u4*)((const unsigned short*)k_cache + at);
            vv[j] = *(const greta_u4*)((const unsigned short*)v_cache + at);
        } else {
            kk[j].x = kk[j].y = kk[j].z = kk[j].w = 0u;
            vv[j] = kk[j];
        }
    }
    float sc[8];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const uint32_t w[4] = {kk[j].x, kk[j].y, kk[j].z, kk[j].w};
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            acc = fmaf(qf[2 * i], greta_dec_lo(w[i]), acc);
            acc = fmaf(qf[2 * i + 1], greta_dec_hi(w[i]), acc);
        }
        for (uint32_t msk = LP / 2; msk > 0; msk >>= 1) acc += greta_shfl_xor(acc, (int)msk);
        sc[j] = (s * C + g + G * j < len) ? acc : -INFINITY;
        m = fmaxf(m, sc[j]);
    }
    const float M = greta_dec_reduce(m, sh, true);
    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = 0.0f;
    float l = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float wgt = expf(sc[j] - M);
        l += wgt;
        const uint32_t w[4] = {vv[j].x, vv[j].y, vv[j].z, vv[j].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            acc[2 * i] = fmaf(wgt, greta_dec_lo(w[i]), acc[2 * i]);
            acc[2 * i + 1] = fmaf(wgt, greta_dec_hi(w[i]), acc[2 * i + 1]);
        }
    }
    // Each row's weights are in its LP lanes alike: count them once.
    const float Ls = greta_dec_reduce(r == 0 ? l : 0.0f, sh, false);
    if (r < L) {
#pragma unroll
        for (int e = 0; e < 8; ++e) red[g * hd + r * 8 + e] = acc[e];
    }
    __syncthreads();
    const uint32_t slot = h * splits + s;
    for (uint32_t e = t; e < hd; e += GRETA_DEC_THREADS) {
        float sum = 0.0f;
        for (uint32_t gg = 0; gg < G; ++gg) sum += red[gg * hd + e];
        part[(greta_u64)slot * hd + e] = sum;
    }
    if (t == 0) {
        const greta_u64 b = (greta_u64)heads * splits * hd + (greta_u64)slot * 2;
        part[b] = M;
        part[b + 1] = Ls;
    }
}

extern "C" __global__ void __launch_bounds__(GRETA_DEC_THREADS)
greta_attn_decode_f16_combine(const greta_f16* __restrict__ q, const greta_f16* __restrict__ k_cache,
                              const greta_f16* __restrict__ v_cache, greta_f16* __restrict__ o,
                              const float* __restrict__ part, uint32_t heads, uint32_t head_dim, uint32_t len,
                              uint32_t max_seq) {
    (void)q;
    (void)k_cache;
    (void)v_cache;
    (void)max_seq;
    const uint32_t hd = head_dim, C = 8 * (GRETA_DEC_THREADS / greta_dec_lanes(hd));
    const uint32_t splits = (len + C - 1) / C;
    const uint32_t t = threadIdx.x, h = blockIdx.x;
    const greta_u64 b = (greta_u64)heads * splits * hd + (greta_u64)h * splits * 2;
    float M = -INFINITY;
    for (uint32_t s = 0; s < splits; ++s) M = fmaxf(M, part[b + 2 * s]);
    float L = 0.0f;
    for (uint32_t s = 0; s < splits; ++s) L += expf(part[b + 2 * s] - M) * part[b + 2 * s + 1];
    const float inv = 1.0f / L;
    uint32_t* ow = (uint32_t*)o;
    for (uint32_t w = t; w < hd / 2; w += GRETA_DEC_THREADS) {
        float a = 0.0f, c = 0.0f;
        for (uint32_t s = 0; s < splits; ++s) {
            const float f = expf(part[b + 2 * s] - M);
            const greta_u64 at = ((greta_u64)h * splits + s) * hd + 2 * w;
            a = fmaf(f, part[at], a);
            c = fmaf(f, part[at + 1], c);
        }
        ow[(h * hd) / 2 + w] = greta_dec_pack(a * inv, c * inv);
    }
}
