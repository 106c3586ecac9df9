// rms_gemv_swiglu_f16: the gate/up projection of a decode token with the
// RMSNorm in its prologue and SwiGLU in its epilogue:
// n = x / sqrt(mean(x^2) + eps) * g, a[j] = silu(W[j] n) * W[rows + j] n,
// silu(z) = z / (1 + exp(-z)); f32 arithmetic, a rounded once to f16. A
// group of 32 lanes per output j (its gate and up rows share the loads of
// x and g; greta_fgemv_sums in common.h), grid-stride.
#include "common.h"

extern "C" __global__ void __launch_bounds__(GRETA_BLOCK)
greta_rms_gemv_swiglu_f16(const greta_f16* __restrict__ x, const greta_f16* __restrict__ g,
                          const greta_f16* __restrict__ w, greta_f16* __restrict__ a, uint32_t rows, uint32_t cols,
                          float eps) {
    const uint32_t lane = threadIdx.x & 31u;
    const greta_u64 groups = (greta_u64)gridDim.x * (GRETA_BLOCK / 32);
    const unsigned short* xs = (const unsigned short*)x;
    const unsigned short* gs = (const unsigned short*)g;
    const unsigned short* ws = (const unsigned short*)w;
    unsigned short* as = (unsigned short*)a;
    for (greta_u64 o = (greta_u64)blockIdx.x * (GRETA_BLOCK / 32) + threadIdx.x / 32; o < rows; o += groups) {
        float s[3];
        greta_fgemv_sums<true, true>(xs, gs, ws + o * cols, ws + (rows + o) * cols, cols, lane, s);
        if (lane == 0) {
            const float inv = 1.0f / sqrtf(s[2] / (float)cols + eps);
            const float gate = s[0] * inv, up = s[1] * inv;
            as[o] = greta_h_from_f32(gate / (1.0f + expf(-gate)) * up);
        }
    }
}
