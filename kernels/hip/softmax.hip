// softmax, row-wise: y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r).
// One block of GRETA_BLOCK threads per row; expf (not the fast __expf) so
// the result meets the f32 tolerance.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_softmax(const float* __restrict__ x, float* __restrict__ y, uint32_t rows, uint32_t cols) {
    __shared__ float scratch[GRETA_BLOCK];
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (greta_u64)r * cols;
    float mx = -INFINITY;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) mx = fmaxf(mx, xr[c]);
    mx = greta_block_max(mx, scratch);
    float s = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) s += expf(xr[c] - mx);
    const float inv = 1.0f / greta_block_sum(s, scratch);
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) y[(greta_u64)r * cols + c] = expf(xr[c] - mx) * inv;
}
