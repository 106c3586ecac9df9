// gemv_add_f16: y[o] = r[o] + sum_i w[o][i] x[i]; x, w, r, y f16, f32
// arithmetic, y rounded once: gemv_f16 with the residual add in its
// epilogue (the loop is greta_fgemv_sums in common.h). A group of 32 lanes
// per row, grid-stride over the rows.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_gemv_add_f16(const greta_f16* __restrict__ x, const greta_f16* __restrict__ w, const greta_f16* __restrict__ r,
                   greta_f16* __restrict__ y, uint32_t rows, uint32_t cols) {
    const uint32_t lane = threadIdx.x & 31u;
    const greta_u64 groups = (greta_u64)gridDim.x * (GRETA_BLOCK / 32);
    const unsigned short* xs = (const unsigned short*)x;
    const unsigned short* ws = (const unsigned short*)w;
    const unsigned short* rs = (const unsigned short*)r;
    unsigned short* ys = (unsigned short*)y;
    // The loop bound is the same for all 32 lanes of a group: the shuffles
    // always see the whole group.
    for (greta_u64 o = (greta_u64)blockIdx.x * (GRETA_BLOCK / 32) + threadIdx.x / 32; o < rows; o += groups) {
        float s[3];
        greta_fgemv_sums<false, false>(xs, xs, ws + o * cols, ws + o * cols, cols, lane, s);
        if (lane == 0) ys[o] = greta_h_from_f32(s[0] + greta_f16_bits_to_f32(rs[o]));
    }
}
