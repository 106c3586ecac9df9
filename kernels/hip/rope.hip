// rope, "rotate half" (GPT-NeoX / Hugging Face Llama) form. x, y are
// [tokens][heads][head_dim]; for token t, p = pos0 + t, i < h = head_dim/2,
// f = theta^(-2i/head_dim), a = p*f:
//   y[i]   = x[i] cos a - x[i+h] sin a
//   y[i+h] = x[i] sin a + x[i+h] cos a
// One thread per (token, head, i). The angle is formed and reduced in f64:
// p*f reaches thousands of radians, where an f32 angle alone would miss the
// f32 tolerance at long positions.
#include "common.h"

extern "C" __global__ void greta_rope(const float* __restrict__ x, float* __restrict__ y, uint32_t tokens,
                                      uint32_t heads, uint32_t head_dim, uint32_t pos0, float theta) {
    const uint32_t half = head_dim / 2;
    const uint32_t total = tokens * heads * half;
    for (greta_u64 g = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += (greta_u64)gridDim.x * blockDim.x) {
        const uint32_t i = g % half;
        const uint32_t th = g / half;  // token * heads + head
        const uint32_t t = th / heads;
        const double p = (double)pos0 + (double)t;
        const double f = pow((double)theta, -2.0 * (double)i / (double)head_dim);
        double s, c;
        sincos(p * f, &s, &c);
        const greta_u64 base = (greta_u64)th * head_dim;
        const float a = x[base + i], b = x[base + i + half];
        y[base + i] = (float)((double)a * c - (double)b * s);
        y[base + i + half] = (float)((double)a * s + (double)b * c);
    }
}
