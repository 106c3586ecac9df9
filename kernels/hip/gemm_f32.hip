// gemm_f32: C[m][n] = sum_k A[m][k] * B[k][n], row-major f32.
// Tiled through shared memory: a 16x16 block computes a 16x16 tile of C,
// stepping over k 16 at a time. Simple and correct, not tuned: hipBLAS runs
// beside it as the ceiling.
#include "common.h"

#define GEMM_TILE 16

extern "C" __global__ void greta_gemm_f32(const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ c, uint32_t m, uint32_t n, uint32_t k) {
    __shared__ float as[GEMM_TILE][GEMM_TILE];
    __shared__ float bs[GEMM_TILE][GEMM_TILE + 1];
    const uint32_t tx = threadIdx.x, ty = threadIdx.y;
    const uint32_t row = blockIdx.y * GEMM_TILE + ty;
    const uint32_t col = blockIdx.x * GEMM_TILE + tx;
    float acc = 0.0f;
    for (uint32_t k0 = 0; k0 < k; k0 += GEMM_TILE) {
        as[ty][tx] = (row < m && k0 + tx < k) ? a[row * k + k0 + tx] : 0.0f;
        bs[ty][tx] = (col < n && k0 + ty < k) ? b[(k0 + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (uint32_t p = 0; p < GEMM_TILE; ++p) acc = fmaf(as[ty][p], bs[p][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
