// rmsnorm_f16: y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * g[c]; x,
// g, y f16, f32 arithmetic, y rounded once. One block of GRETA_BLOCK
// threads per row (grid-stride). Rows of cols % 8 == 0 with at most
// GRETA_ROW_VECS 16-byte vectors (8 halves) per thread stay in registers:
// read once, written once. Others take element-wise loops (x re-read from
// cache).
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_rmsnorm_f16(const greta_f16* __restrict__ x, const greta_f16* __restrict__ g, greta_f16* __restrict__ y,
                  uint32_t rows, uint32_t cols, float eps) {
    __shared__ float scratch[GRETA_BLOCK / 32];
    const unsigned short* xs = (const unsigned short*)x;
    const unsigned short* gs = (const unsigned short*)g;
    unsigned short* ys = (unsigned short*)y;
    const uint32_t c8 = cols / 8u;
    for (uint32_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const greta_u64 base = (greta_u64)r * cols;
        if (cols % 8u == 0u && c8 <= GRETA_ROW_VECS * GRETA_BLOCK) {
            const greta_u4* xv = (const greta_u4*)(xs + base);
            const greta_u4* gv = (const greta_u4*)gs;
            greta_u4* yv = (greta_u4*)(ys + base);
            greta_u4 v[GRETA_ROW_VECS];
            float ss = 0.0f;
#pragma unroll
            for (int u = 0; u < GRETA_ROW_VECS; ++u) {
                const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
                if (i < c8) v[u] = xv[i];
            }
#pragma unroll
            for (int u = 0; u < GRETA_ROW_VECS; ++u) {
                const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
                if (i < c8) {
                    float f[8];
                    greta_h8_unpack(v[u], f);
#pragma unroll
                    for (int e = 0; e < 8; ++e) ss = fmaf(f[e], f[e], ss);
                }
            }
            const float inv = 1.0f / sqrtf(greta_block_sum(ss, scratch) / (float)cols + eps);
#pragma unroll
            for (int u = 0; u < GRETA_ROW_VECS; ++u) {
                const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
                if (i < c8) {
                    float f[8], gf[8];
                    greta_h8_unpack(v[u], f);
                    greta_h8_unpack(gv[i], gf);
#pragma unroll
                    for (int e = 0; e < 8; ++e) f[e] = f[e] * inv * gf[e];
                    yv[i] = greta_h8_pack(f);
                }
            }
            continue;
        }
        float ss = 0.0f;
        for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) {
            const float v = greta_f16_bits_to_f32(xs[base + c]);
            ss = fmaf(v, v, ss);
        }
        const float inv = 1.0f / sqrtf(greta_block_sum(ss, scratch) / (float)cols + eps);
        for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK)
            ys[base + c] = greta_h_from_f32(greta_f16_bits_to_f32(xs[base + c]) * inv * greta_f16_bits_to_f32(gs[c]));
    }
}
