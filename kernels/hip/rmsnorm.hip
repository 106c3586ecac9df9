// rmsnorm: y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * w[c].
// One block of GRETA_BLOCK threads per row.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_rmsnorm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
              uint32_t rows, uint32_t cols, float eps) {
    __shared__ float scratch[GRETA_BLOCK];
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (greta_u64)r * cols;
    float ss = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) ss = fmaf(xr[c], xr[c], ss);
    ss = greta_block_sum(ss, scratch);
    const float inv = 1.0f / sqrtf(ss / (float)cols + eps);
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) y[(greta_u64)r * cols + c] = xr[c] * inv * w[c];
}
