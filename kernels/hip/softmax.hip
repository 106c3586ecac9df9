// softmax, row-wise: y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r).
// One block of GRETA_BLOCK threads per row; expf (not the fast __expf) so
// the result meets the f32 tolerance. Rows that fit GRETA_ROW_VECS vectors
// per thread stay in registers, and each exponential is computed once.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_softmax(const float* __restrict__ x, float* __restrict__ y, uint32_t rows, uint32_t cols) {
    __shared__ float scratch[GRETA_BLOCK / 32];
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + (greta_u64)r * cols;
    float* yr = y + (greta_u64)r * cols;
    const uint32_t c4 = cols / 4;
    if (cols % 4 == 0 && c4 <= GRETA_ROW_VECS * GRETA_BLOCK) {
        const greta_f4* xv = (const greta_f4*)xr;
        greta_f4 v[GRETA_ROW_VECS];
        float mx = -INFINITY;
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                v[u] = xv[i];
                mx = fmaxf(mx, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
            }
        }
        mx = greta_block_max(mx, scratch);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                v[u].x = expf(v[u].x - mx);
                v[u].y = expf(v[u].y - mx);
                v[u].z = expf(v[u].z - mx);
                v[u].w = expf(v[u].w - mx);
                s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
            }
        }
        const float inv = 1.0f / greta_block_sum(s, scratch);
        greta_f4* yv = (greta_f4*)yr;
#pragma unroll
        for (int u = 0; u < GRETA_ROW_VECS; ++u) {
            const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
            if (i < c4) {
                greta_f4 o;
                o.x = v[u].x * inv;
                o.y = v[u].y * inv;
                o.z = v[u].z * inv;
                o.w = v[u].w * inv;
                yv[i] = o;
            }
        }
        return;
    }
    float mx = -INFINITY;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) mx = fmaxf(mx, xr[c]);
    mx = greta_block_max(mx, scratch);
    float s = 0.0f;
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) s += expf(xr[c] - mx);
    const float inv = 1.0f / greta_block_sum(s, scratch);
    for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) yr[c] = expf(xr[c] - mx) * inv;
}
