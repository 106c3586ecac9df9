// add_rmsnorm_f16: the fused residual + RMSNorm. h = x + r, rounded to f16
// and stored; y = h / sqrt(mean_c(h^2) + eps) * g of that rounded h (what a
// following kernel reading h would compute), rounded once. One block of
// GRETA_BLOCK threads per row (grid-stride); rows of cols % 8 == 0 that fit
// GRETA_ROW_VECS 16-byte vectors per thread stay in registers (x and r read
// once, h and y written once); others take element-wise loops.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_add_rmsnorm_f16(const greta_f16* __restrict__ x, const greta_f16* __restrict__ rr,
                      const greta_f16* __restrict__ g, greta_f16* __restrict__ h, greta_f16* __restrict__ y,
                      uint32_t rows, uint32_t cols, float eps) {
    __shared__ float scratch[GRETA_BLOCK / 32];
    const unsigned short* xs = (const unsigned short*)x;
    const unsigned short* rs = (const unsigned short*)rr;
    const unsigned short* gs = (const unsigned short*)g;
    unsigned short* hs = (unsigned short*)h;
    unsigned short* ys = (unsigned short*)y;
    const uint32_t c8 = cols / 8u;
    for (uint32_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const greta_u64 base = (greta_u64)r * cols;
        if (cols % 8u == 0u && c8 <= GRETA_ROW_VECS * GRETA_BLOCK) {
            const greta_u4* xv = (const greta_u4*)(xs + base);
            const greta_u4* rv = (const greta_u4*)(rs + base);
            const greta_u4* gv = (const greta_u4*)gs;
            greta_u4* hv = (greta_u4*)(hs + base);
            greta_u4* yv = (greta_u4*)(ys + base);
            greta_u4 a[GRETA_ROW_VECS], b[GRETA_ROW_VECS];
#pragma unroll
            for (int u = 0; u < GRETA_ROW_VECS; ++u) {
                const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
                if (i < c8) {
                    a[u] = xv[i];
                    b[u] = rv[i];
                }
            }
            float ss = 0.0f;
#pragma unroll
            for (int u = 0; u < GRETA_ROW_VECS; ++u) {
                const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
                if (i < c8) {
                    float fa[8], fb[8];
                    greta_h8_unpack(a[u], fa);
                    greta_h8_unpack(b[u], fb);
#pragma unroll
                    for (int e = 0; e < 8; ++e) fa[e] += fb[e];
                    // Keep the rounded h: the norm reads what is stored.
                    a[u] = greta_h8_pack(fa);
                    hv[i] = a[u];
                    greta_h8_unpack(a[u], fa);
#pragma unroll
                    for (int e = 0; e < 8; ++e) ss = fmaf(fa[e], fa[e], ss);
                }
            }
            const float inv = 1.0f / sqrtf(greta_block_sum(ss, scratch) / (float)cols + eps);
#pragma unroll
            for (int u = 0; u < GRETA_ROW_VECS; ++u) {
                const uint32_t i = threadIdx.x + u * GRETA_BLOCK;
                if (i < c8) {
                    float f[8], gf[8];
                    greta_h8_unpack(a[u], f);
                    greta_h8_unpack(gv[i], gf);
#pragma unroll
                    for (int e = 0; e < 8; ++e) f[e] = f[e] * inv * gf[e];
                    yv[i] = greta_h8_pack(f);
                }
            }
            continue;
        }
        // Element-wise: h is written first, then read back by the same
        // thread (the same c), so no barrier is needed before the second loop.
        float ss = 0.0f;
        for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK) {
            const unsigned short hb = greta_h_from_f32(greta_f16_bits_to_f32(xs[base + c]) +
                                                       greta_f16_bits_to_f32(rs[base + c]));
            hs[base + c] = hb;
            const float v = greta_f16_bits_to_f32(hb);
            ss = fmaf(v, v, ss);
        }
        const float inv = 1.0f / sqrtf(greta_block_sum(ss, scratch) / (float)cols + eps);
        for (uint32_t c = threadIdx.x; c < cols; c += GRETA_BLOCK)
            ys[base + c] = greta_h_from_f32(greta_f16_bits_to_f32(hs[base + c]) * inv * greta_f16_bits_to_f32(gs[c]));
    }
}
