// rmsnorm: y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * w[c].
// One block of GRETA_BLOCK threads per row; rows that fit GRETA_ROW_VECS
// vectors per thread stay in registers (one read, one write).
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_rmsnorm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
              uint32_t rows, uint32_t cols, float eps) {
    __shared__ float scratch[GRETA_BLOCK / 32];
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (greta_u64)r * cols;
    float* yr = y + (greta_u64)r * cols;
    const uint32_t c4 = cols / 4;
    if (cols % 4 == 0 && c4 <= GRETA_ROW_VECS * GRETA_BLOCK) {
        const greta_f4* xv = (const greta_f4*)xr;
        const greta_f4* wv = (const greta_f4*)w;
        greta_f4* yv = (greta_f4*)yr;
        greta_f4 v[GRETA_ROW_VECS];
        float ss = 0.0f;
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                v[u] = xv[i];
                ss = fmaf(v[u].x, v[u].x, ss);
                ss = fmaf(v[u].y, v[u].y, ss);
                ss = fmaf(v[u].z, v[u].z, ss);
                ss = fmaf(v[u].w, v[u].w, ss);
            }
        }
        const float inv = 1.0f / sqrtf(greta_block_sum(ss, scratch) / (float)cols + eps);
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                const greta_f4 g = wv[i];
                greta_f4 o;
                o.x = v[u].x * inv * g.x;
                o.y = v[u].y * inv * g.y;
                o.z = v[u].z * inv * g.z;
                o.w = v[u].w * inv * g.w;
                yv[i] = o;
            }
        }
        return;
    }
    float ss = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) ss = fmaf(xr[c], xr[c], ss);
    const float inv = 1.0f / sqrtf(greta_block_sum(ss, scratch) / (float)cols + eps);
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) yr[c] = xr[c] * inv * w[c];
}
