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

// f16 values as raw bits (unsigned short) in both compilers: the block ops
// (gemv_f16, linear_f16, rmsnorm_f16, add_rmsnorm_f16, swiglu_f16) read
// them 8 at a time as one 16-byte greta_u4 and store their f16 results
// rounded once, to nearest even.
#if defined(GRETA_CUDA)
__device__ inline unsigned short greta_h_from_f32(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#else
__device__ inline unsigned short greta_h_from_f32(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
#endif
// The low and high half of a 32-bit word, widened.
__device__ inline float greta_h_lo(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w & 0xffffu)); }
__device__ inline float greta_h_hi(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w >> 16)); }
// Two f32 values as one word of two halves (a in the low half).
__device__ inline uint32_t greta_h2_from_f32(float a, float b) {
    return (uint32_t)greta_h_from_f32(a) | ((uint32_t)greta_h_from_f32(b) << 16);
}
// The 8 halves of a 16-byte vector, widened, in memory order.
__device__ inline void greta_h8_unpack(greta_u4 v, float* f) {
    f[0] = greta_h_lo(v.x);
    f[1] = greta_h_hi(v.x);
    f[2] = greta_h_lo(v.y);
    f[3] = greta_h_hi(v.y);
    f[4] = greta_h_lo(v.z);
    f[5] = greta_h_hi(v.z);
    f[6] = greta_h_lo(v.w);
    f[7] = greta_h_hi(v.w);
}
__device__ inline greta_u4 greta_h8_pack(const float* f) {
    greta_u4 v;
    v.x = greta_h2_from_f32(f[0], f[1]);
    v.y = greta_h2_from_f32(f[2], f[3]);
    v.z = greta_h2_from_f32(f[4], f[5]);
    v.w = greta_h2_from_f32(f[6], f[7]);
    return v;
}

// The decode projections with the transformer block's small steps fused
// in (gemv_add_f16, rms_gemv_swiglu_f16, rms_gemv_rope_kv_f16): gemv_f16's
// loop (a group of 32 lanes per unit of work, 16-byte vectors with
// GRETA_FGEMV_UNROLL in flight where cols % 8 == 0, halves otherwise) over
// one row w0 or two rows w0, w1 that share the input's loads. With NORM the
// input is x scaled by g as it is loaded, and ss gets sum x^2 beside the dot
// products: the caller multiplies the sums by the inverse RMS, since
// W (x r g) = r W (x g). s[0], s[1]: the dot products; s[2]: sum x^2. Every
// lane gets the sums folded over its 32. PROBE (a diagnostic variant, wrong
// on purpose: `--inject prologue`) leaves the last lane that has columns
// (lane 31 of a long row) out of sum x^2, as a prologue that lost one lane
// of its norm would: 1/32 of a long row, more of a short one.
#ifndef GRETA_FGEMV_UNROLL
#define GRETA_FGEMV_UNROLL 4
#endif
template <bool NORM, bool PAIR, bool PROBE = false>
__device__ inline void greta_fgemv_sums(const unsigned short* __restrict__ xs, const unsigned short* __restrict__ gs,
                                        const unsigned short* __restrict__ w0, const unsigned short* __restrict__ w1,
                                        uint32_t cols, uint32_t lane, float* s) {
    float a0 = 0.0f, a1 = 0.0f, ss = 0.0f;
    if (cols % 8u == 0u) {
        const greta_u4* wv0 = (const greta_u4*)w0;
        const greta_u4* wv1 = (const greta_u4*)w1;
        const greta_u4* xv = (const greta_u4*)xs;
        const greta_u4* gv = (const greta_u4*)gs;
        const uint32_t n8 = cols / 8u;
        const uint32_t drop = (n8 < 32u ? n8 : 32u) - 1u;
        uint32_t i = lane;
        for (; i < n8; i += 32u * GRETA_FGEMV_UNROLL) {
            greta_u4 wa[GRETA_FGEMV_UNROLL], wb[GRETA_FGEMV_UNROLL], xx[GRETA_FGEMV_UNROLL], gg[GRETA_FGEMV_UNROLL];
#pragma unroll
            for (int u = 0; u < GRETA_FGEMV_UNROLL; ++u) {
                const uint32_t k = i + 32u * u;
                if (k < n8) {
                    wa[u] = wv0[k];
                    if (PAIR) wb[u] = wv1[k];
                    xx[u] = xv[k];
                    if (NORM) gg[u] = gv[k];
                }
            }
#pragma unroll
            for (int u = 0; u < GRETA_FGEMV_UNROLL; ++u) {
                if (i + 32u * u >= n8) break;
                float xf[8], wf[8];
                greta_h8_unpack(xx[u], xf);
                if (NORM) {
                    float gf[8];
                    greta_h8_unpack(gg[u], gf);
#pragma unroll
                    for (int e = 0; e < 8; ++e) {
                        if (!PROBE || lane != drop) ss = fmaf(xf[e], xf[e], ss);
                        xf[e] *= gf[e];
                    }
                }
                greta_h8_unpack(wa[u], wf);
#pragma unroll
                for (int e = 0; e < 8; ++e) a0 = fmaf(wf[e], xf[e], a0);
                if (PAIR) {
                    greta_h8_unpack(wb[u], wf);
#pragma unroll
                    for (int e = 0; e < 8; ++e) a1 = fmaf(wf[e], xf[e], a1);
                }
            }
        }
    } else {
        const uint32_t drop = (cols < 32u ? cols : 32u) - 1u;
        for (uint32_t c = lane; c < cols; c += 32u) {
            float xf = greta_f16_bits_to_f32(xs[c]);
            if (NORM) {
                if (!PROBE || lane != drop) ss = fmaf(xf, xf, ss);
                xf *= greta_f16_bits_to_f32(gs[c]);
            }
            a0 = fmaf(greta_f16_bits_to_f32(w0[c]), xf, a0);
            if (PAIR) a1 = fmaf(greta_f16_bits_to_f32(w1[c]), xf, a1);
        }
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) {
        a0 += greta_shfl_xor(a0, m);
        if (PAIR) a1 += greta_shfl_xor(a1, m);
        if (NORM) ss += greta_shfl_xor(ss, m);
    }
    s[0] = a0;
    s[1] = a1;
    s[2] = ss;
}
