// layernorm: y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * w[c] + b[c],
// biased variance, computed in two passes (mean, then centred squares) for
// accuracy. One block of GRETA_BLOCK threads per row.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_layernorm(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                float* __restrict__ y, uint32_t rows, uint32_t cols, float eps) {
    __shared__ float scratch[GRETA_BLOCK];
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (greta_u64)r * cols;
    float s = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) s += xr[c];
    const float mean = greta_block_sum(s, scratch) / (float)cols;
    float v = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) {
        const float d = xr[c] - mean;
        v = fmaf(d, d, v);
    }
    const float inv = 1.0f / sqrtf(greta_block_sum(v, scratch) / (float)cols + eps);
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) {
        y[(greta_u64)r * cols + c] = (xr[c] - mean) * inv * w[c] + b[c];
    }
}
