// gemv_f16: y[o] = sum_i w[o][i] x[i]; x, w, y f16, f32 accumulation, y
// rounded once. Memory-bound: every byte of w is read once, so the kernel
// is built to keep many loads in flight and nothing else in the way.
//
// Each group of 32 lanes (a warp on NVIDIA, half a wave64 on CDNA: xor
// shuffles below 32 stay inside it) owns one row at a time, grid-stride over
// the rows. With cols % 8 == 0 the row is read as 16-byte vectors (8
// halves), GRETA_GEMV_UNROLL of them per lane in flight before any is used,
// x's matching vectors beside them (x is small and stays in cache); the
// lane's f32 partial sum is folded over the 32 lanes by shuffles. Other
// widths take a scalar loop (rows not 16-byte aligned).
#include "common.h"

#ifndef GRETA_GEMV_UNROLL
#define GRETA_GEMV_UNROLL 4
#endif

// acc + the dot product of 8 halves of a with 8 halves of b.
__device__ inline float greta_gemv_dot8(greta_u4 a, greta_u4 b, float acc) {
    acc = fmaf(greta_h_lo(a.x), greta_h_lo(b.x), acc);
    acc = fmaf(greta_h_hi(a.x), greta_h_hi(b.x), acc);
    acc = fmaf(greta_h_lo(a.y), greta_h_lo(b.y), acc);
    acc = fmaf(greta_h_hi(a.y), greta_h_hi(b.y), acc);
    acc = fmaf(greta_h_lo(a.z), greta_h_lo(b.z), acc);
    acc = fmaf(greta_h_hi(a.z), greta_h_hi(b.z), acc);
    acc = fmaf(greta_h_lo(a.w), greta_h_lo(b.w), acc);
    acc = fmaf(greta_h_hi(a.w), greta_h_hi(b.w), acc);
    return acc;
}

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_gemv_f16(const greta_f16* __restrict__ x, const greta_f16* __restrict__ w, greta_f16* __restrict__ y,
               uint32_t rows, uint32_t cols) {
    const uint32_t lane = threadIdx.x & 31u;
    const greta_u64 groups = (greta_u64)gridDim.x * (GRETA_BLOCK / 32);
    const unsigned short* xs = (const unsigned short*)x;
    const unsigned short* ws = (const unsigned short*)w;
    unsigned short* ys = (unsigned short*)y;
    // The loop bound is the same for all 32 lanes of a group: the shuffles
    // below always see the whole group.
    for (greta_u64 o = (greta_u64)blockIdx.x * (GRETA_BLOCK / 32) + threadIdx.x / 32; o < rows; o += groups) {
        float acc = 0.0f;
        if (cols % 8u == 0u) {
            const greta_u4* wv = (const greta_u4*)(ws + o * cols);
            const greta_u4* xv = (const greta_u4*)xs;
            const uint32_t n8 = cols / 8u;
            uint32_t i = lane;
            for (; i + 32u * (GRETA_GEMV_UNROLL - 1) < n8; i += 32u * GRETA_GEMV_UNROLL) {
                greta_u4 a[GRETA_GEMV_UNROLL], b[GRETA_GEMV_UNROLL];
#pragma unroll
                for (int u = 0; u < GRETA_GEMV_UNROLL; ++u) a[u] = wv[i + 32u * u];
#pragma unroll
                for (int u = 0; u < GRETA_GEMV_UNROLL; ++u) b[u] = xv[i + 32u * u];
#pragma unroll
                for (int u = 0; u < GRETA_GEMV_UNROLL; ++u) acc = greta_gemv_dot8(a[u], b[u], acc);
            }
            for (; i < n8; i += 32u) acc = greta_gemv_dot8(wv[i], xv[i], acc);
        } else {
            const unsigned short* wr = ws + o * cols;
            for (uint32_t c = lane; c < cols; c += 32u)
                acc = fmaf(greta_f16_bits_to_f32(wr[c]), greta_f16_bits_to_f32(xs[c]), acc);
        }
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) acc += greta_shfl_xor(acc, m);
        if (lane == 0) ys[o] = greta_h_from_f32(acc);
    }
}
