// swiglu_f16: a[r][c] = silu(gu[r][c]) * gu[r][cols + c], silu(z) =
// z / (1 + exp(-z)); f16 in and out, f32 arithmetic, a rounded once.
// Grid-stride over the output; with cols % 8 == 0 each step is one
// 16-byte vector of gate, one of up and one of a (8 halves each).
#include "common.h"

__device__ inline float greta_silu_mul(float gate, float up) { return gate / (1.0f + expf(-gate)) * up; }

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_swiglu_f16(const greta_f16* __restrict__ gu, greta_f16* __restrict__ a, uint32_t rows, uint32_t cols) {
    const unsigned short* gs = (const unsigned short*)gu;
    unsigned short* as = (unsigned short*)a;
    const greta_u64 stride = (greta_u64)gridDim.x * blockDim.x;
    const greta_u64 id = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (cols % 8u == 0u) {
        const uint32_t c8 = cols / 8u;
        const greta_u64 n8 = (greta_u64)rows * c8;
        const greta_u4* gv = (const greta_u4*)gs;
        greta_u4* av = (greta_u4*)as;
        for (greta_u64 i = id; i < n8; i += stride) {
            // Element counts fit 32 bits (the op contract): 32-bit division.
            const greta_u64 r = (uint32_t)i / c8, c = (uint32_t)i % c8;
            const greta_u4 gate = gv[r * 2u * c8 + c], up = gv[r * 2u * c8 + c8 + c];
            float fg[8], fu[8];
            greta_h8_unpack(gate, fg);
            greta_h8_unpack(up, fu);
#pragma unroll
            for (int e = 0; e < 8; ++e) fg[e] = greta_silu_mul(fg[e], fu[e]);
            av[i] = greta_h8_pack(fg);
        }
        return;
    }
    const greta_u64 n = (greta_u64)rows * cols;
    for (greta_u64 i = id; i < n; i += stride) {
        const greta_u64 r = (uint32_t)i / cols, c = (uint32_t)i % cols;
        as[i] = greta_h_from_f32(
            greta_silu_mul(greta_f16_bits_to_f32(gs[r * 2u * cols + c]), greta_f16_bits_to_f32(gs[r * 2u * cols + cols + c])));
    }
}
