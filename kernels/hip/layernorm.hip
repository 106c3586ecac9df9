// layernorm: y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * w[c] + b[c],
// biased variance, computed in two passes (mean, then centred squares) for
// accuracy. One block of GRETA_BLOCK threads per row; rows that fit
// GRETA_ROW_VECS vectors per thread stay in registers between the passes.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_layernorm(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                float* __restrict__ y, uint32_t rows, uint32_t cols, float eps) {
    __shared__ float scratch[GRETA_BLOCK / 32];
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (greta_u64)r * cols;
    float* yr = y + (greta_u64)r * cols;
    const uint32_t c4 = cols / 4;
    if (cols % 4 == 0 && c4 <= GRETA_ROW_VECS * GRETA_BLOCK) {
        const greta_f4* xv = (const greta_f4*)xr;
        greta_f4 v[GRETA_ROW_VECS];
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                v[u] = xv[i];
                s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
            }
        }
        const float mean = greta_block_sum(s, scratch) / (float)cols;
        float q = 0.0f;
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                v[u].x -= mean;
                v[u].y -= mean;
                v[u].z -= mean;
                v[u].w -= mean;
                q = fmaf(v[u].x, v[u].x, q);
                q = fmaf(v[u].y, v[u].y, q);
                q = fmaf(v[u].z, v[u].z, q);
                q = fmaf(v[u].w, v[u].w, q);
            }
        }
        const float inv = 1.0f / sqrtf(greta_block_sum(q, scratch) / (float)cols + eps);
        const greta_f4* wv = (const greta_f4*)w;
        const greta_f4* bv = (const greta_f4*)b;
        greta_f4* yv = (greta_f4*)yr;
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                const greta_f4 g = wv[i], h = bv[i];
                greta_f4 o;
                o.x = v[u].x * inv * g.x + h.x;
                o.y = v[u].y * inv * g.y + h.y;
                o.z = v[u].z * inv * g.z + h.z;
                o.w = v[u].w * inv * g.w + h.w;
                yv[i] = o;
            }
        }
        return;
    }
    float s = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) s += xr[c];
    const float mean = greta_block_sum(s, scratch) / (float)cols;
    float v = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) {
        const float d = xr[c] - mean;
        v = fmaf(d, d, v);
    }
    const float inv = 1.0f / sqrtf(greta_block_sum(v, scratch) / (float)cols + eps);
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}
