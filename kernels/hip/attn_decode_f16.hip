// attn_decode_f16: one token's attention over the first `len` rows of an
// f16 KV cache ([max_seq][heads][head_dim]), split along the sequence and
// combined in one launch (flash decoding):
//
// Block (h, s) of GRETA_DEC_THREADS threads walks `iters` chunks of C
// positions of head h (chunks s*iters.., the head's last block fewer; the
// planner picks `iters`, runtime/src/gpu/launch.rs). A row of head_dim
// halves is read as 16-byte vectors of 8 halves by LP lanes (head_dim/8
// rounded up to a power of two; lanes past the row idle), so G = 128/LP
// rows are read at once, and each thread issues its 8 rows of K and V (16
// loads of 16 bytes) before using any: C = 8 G positions (64 at head_dim
// 128, the op's chunk rule, which sizes the scratch). Scores (q pre-scaled
// by 1/sqrt(head_dim)) are summed over the LP lanes of a row by shuffles
// (xor masks below LP <= 32 stay inside a row's lanes on 32- and 64-wide
// waves); each group of LP lanes keeps its own running max m, sum l and
// weighted V over its rows (an online softmax: no barrier per chunk), and
// the G groups are merged through shared memory into the block's partial:
//   part[(h*splits + s)*head_dim + e]                          weighted V
//   part[heads*splits*head_dim + (h*splits + s)*2 + {0,1}]      M, L
//   part[heads*chunks*(head_dim + 2) + h]                       counter (u32)
// The counters are where the largest plan (one chunk per block) would put
// them, past every partial. Each block counts itself done on its head's
// counter after a fence; the last one combines the head: o = sum_s
// exp(M_s - M) V_s / sum_s exp(M_s - M) L_s, rounded once to f16 (to
// nearest), reading the others' partials from L2 after a fence, and sets
// the counter back to 0 for the next launch (the runtime zeroes the scratch
// before the first).
#include "common.h"

#define GRETA_DEC_THREADS 128

#if defined(GRETA_CUDA)
__device__ inline uint32_t greta_dec_pack(float a, float b) {
    unsigned short x, y;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(a));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(y) : "f"(b));
    return (uint32_t)x | ((uint32_t)y << 16);
}
// Loads of what other blocks wrote, from L2 (never a stale L1 line).
__device__ inline float greta_dec_ld(const float* p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline greta_f4 greta_dec_ld4(const float* p) {
    greta_f4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}
#else
__device__ inline uint32_t greta_dec_pack(float a, float b) {
    return (uint32_t)__builtin_bit_cast(unsigned short, (_Float16)a) |
           ((uint32_t)__builtin_bit_cast(unsigned short, (_Float16)b) << 16);
}
// On AMD the device-scope fence before these loads invalidates the
// vector L1: plain loads see the other blocks' partials.
__device__ inline float greta_dec_ld(const float* p) { return *p; }
__device__ inline greta_f4 greta_dec_ld4(const float* p) { return *(const greta_f4*)p; }
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
                      const greta_f16* __restrict__ v_cache, greta_f16* __restrict__ o, float* part, uint32_t heads,
                      uint32_t head_dim, uint32_t len, uint32_t max_seq, uint32_t iters) {
    (void)max_seq;
    __shared__ float red[8 * GRETA_DEC_THREADS];
    __shared__ float gm[GRETA_DEC_THREADS], gl[GRETA_DEC_THREADS];
    __shared__ float sh[GRETA_DEC_THREADS / 32];
    __shared__ uint32_t last;
    const uint32_t hd = head_dim, L = hd / 8, LP = greta_dec_lanes(hd), G = GRETA_DEC_THREADS / LP, C = 8 * G;
    const uint32_t t = threadIdx.x, r = t % LP, g = t / LP;
    // Heads along x: the blocks that run at once read every head of their
    // chunks, i.e. whole 8 KiB cache rows, not one 256-byte slice of each.
    const uint32_t h = blockIdx.x, s = blockIdx.y;
    const uint32_t chunks = (len + C - 1) / C, splits = (chunks + iters - 1) / iters;
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
    // This group's running max, sum of exp(score - m) over its rows, and
    // weighted V (this lane's 8 elements of it).
    float m = -INFINITY, l = 0.0f, acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = 0.0f;
    const uint32_t c_end = (s + 1) * iters < chunks ? (s + 1) * iters : chunks;
    for (uint32_t c = s * iters; c < c_end; ++c) {
        greta_u4 kk[8], vv[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const uint32_t pos = c * C + g + G * j;
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
        float cm = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const uint32_t w[4] = {kk[j].x, kk[j].y, kk[j].z, kk[j].w};
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                dot = fmaf(qf[2 * i], greta_dec_lo(w[i]), dot);
                dot = fmaf(qf[2 * i + 1], greta_dec_hi(w[i]), dot);
            }
            for (uint32_t msk = LP / 2; msk > 0; msk >>= 1) dot += greta_shfl_xor(dot, (int)msk);
            sc[j] = (c * C + g + G * j < len) ? dot : -INFINITY;
            cm = fmaxf(cm, sc[j]);
        }
        // The same in every lane of the group: a group past len skips.
        if (cm > -INFINITY) {
            const float mn = fmaxf(m, cm), f = expf(m - mn);
            l *= f;
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[e] *= f;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const float wgt = expf(sc[j] - mn);
                l += wgt;
                const uint32_t w[4] = {vv[j].x, vv[j].y, vv[j].z, vv[j].w};
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    acc[2 * i] = fmaf(wgt, greta_dec_lo(w[i]), acc[2 * i]);
                    acc[2 * i + 1] = fmaf(wgt, greta_dec_hi(w[i]), acc[2 * i + 1]);
                }
            }
            m = mn;
        }
    }
    // The block's partial: the groups rescaled to the block's max M (group
    // 0 holds the block's first position, which is < len: M is finite).
    if (r == 0) {
        gm[g] = m;
        gl[g] = l;
    }
    __syncthreads();
    float M = -INFINITY;
    for (uint32_t k = 0; k < G; ++k) M = fmaxf(M, gm[k]);
    const float f = expf(m - M);
    if (r < L) {
#pragma unroll
        for (int e = 0; e < 8; ++e) red[g * hd + r * 8 + e] = acc[e] * f;
    }
    __syncthreads();
    const uint32_t slot = h * splits + s;
    for (uint32_t e = t; e < hd; e += GRETA_DEC_THREADS) {
        float sum = 0.0f;
        for (uint32_t gg = 0; gg < G; ++gg) sum += red[gg * hd + e];
        part[(greta_u64)slot * hd + e] = sum;
    }
    const greta_u64 mlb = (greta_u64)heads * splits * hd;
    if (t == 0) {
        float Ls = 0.0f;
        for (uint32_t k = 0; k < G; ++k) Ls += expf(gm[k] - M) * gl[k];
        part[mlb + (greta_u64)slot * 2] = M;
        part[mlb + (greta_u64)slot * 2 + 1] = Ls;
    }
    // Count this block done on its head; the last one combines.
    unsigned int* count = (unsigned int*)(part + (greta_u64)heads * chunks * (hd + 2)) + h;
    __threadfence();
    __syncthreads();
    if (t == 0) last = atomicAdd(count, 1u) == splits - 1u;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const float* ml = part + mlb + (greta_u64)h * splits * 2;
    float mx = -INFINITY;
    for (uint32_t k = t; k < splits; k += GRETA_DEC_THREADS) mx = fmaxf(mx, greta_dec_ld(ml + 2 * k));
    const float Mh = greta_dec_reduce(mx, sh, true);
    float ls = 0.0f;
    for (uint32_t k = t; k < splits; k += GRETA_DEC_THREADS)
        ls += expf(greta_dec_ld(ml + 2 * k) - Mh) * greta_dec_ld(ml + 2 * k + 1);
    const float Lh = greta_dec_reduce(ls, sh, false);
    // Weighted V: thread (sg, e4) sums 4 elements over the splits sg,
    // sg + SG, ... with 16-byte loads, then the SG sums meet in `red`.
    const uint32_t E4 = hd / 4, SG = GRETA_DEC_THREADS / E4;
    if (t < SG * E4) {
        const uint32_t e4 = t % E4, sg = t / E4;
        const float* pv = part + (greta_u64)h * splits * hd + e4 * 4;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        for (uint32_t k = sg; k < splits; k += SG) {
            const float w = expf(greta_dec_ld(ml + 2 * k) - Mh);
            const greta_f4 v = greta_dec_ld4(pv + (greta_u64)k * hd);
            a0 = fmaf(w, v.x, a0);
            a1 = fmaf(w, v.y, a1);
            a2 = fmaf(w, v.z, a2);
            a3 = fmaf(w, v.w, a3);
        }
        float* rr = red + sg * hd + e4 * 4;
        rr[0] = a0;
        rr[1] = a1;
        rr[2] = a2;
        rr[3] = a3;
    }
    __syncthreads();
    const float inv = 1.0f / Lh;
    uint32_t* ow = (uint32_t*)o;
    for (uint32_t w = t; w < hd / 2; w += GRETA_DEC_THREADS) {
        float x0 = 0.0f, x1 = 0.0f;
        for (uint32_t sg = 0; sg < SG; ++sg) {
            x0 += red[sg * hd + 2 * w];
            x1 += red[sg * hd + 2 * w + 1];
        }
        ow[(h * hd) / 2 + w] = greta_dec_pack(x0 * inv, x1 * inv);
    }
    if (t == 0) *count = 0u;
}
