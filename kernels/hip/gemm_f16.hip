// gemm_f16: C[m][n] = sum_k A[m][k] * B[k][n] with A, B in f16 (IEEE
// binary16) and products accumulated and stored in f32. Same tiling as
// gemm_f32; inputs are widened to f32 when staged in shared memory.
#include "common.h"

#define GEMM16_TILE 16

extern "C" __global__ void greta_gemm_f16(const greta_f16* __restrict__ a, const greta_f16* __restrict__ b,
                                          float* __restrict__ c, uint32_t m, uint32_t n, uint32_t k) {
    __shared__ float as[GEMM16_TILE][GEMM16_TILE];
    __shared__ float bs[GEMM16_TILE][GEMM16_TILE + 1];
    const uint32_t tx = threadIdx.x, ty = threadIdx.y;
    const uint32_t row = blockIdx.y * GEMM16_TILE + ty;
    const uint32_t col = blockIdx.x * GEMM16_TILE + tx;
    float acc = 0.0f;
    for (uint32_t k0 = 0; k0 < k; k0 += GEMM16_TILE) {
        as[ty][tx] = (row < m && k0 + tx < k) ? greta_f16_to_f32(a[row * k + k0 + tx]) : 0.0f;
        bs[ty][tx] = (col < n && k0 + ty < k) ? greta_f16_to_f32(b[(k0 + ty) * n + col]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (uint32_t p = 0; p < GEMM16_TILE; ++p) acc = fmaf(as[ty][p], bs[p][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
