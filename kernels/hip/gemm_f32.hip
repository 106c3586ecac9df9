// gemm_f32: C[m][n] = sum_k A[m][k] * B[k][n], row-major f32.
// Register-tiled: a block of 256 threads computes a GEMM32_BM x GEMM32_BN
// (128 x 128) tile of C, each thread an 8 x 8 sub-tile (two 4-row by two
// 4-column quarters, 64 apart, so the shared-memory reads of a wave hit
// distinct banks), stepping over k GEMM32_BK (8) at a time. Tiles are
// staged through shared memory, double-buffered: the next tile's global
// loads are in registers while the current one is multiplied, one barrier
// per step. A is stored k-major (transposed) so both operands are read as
// 16-byte vectors. Loads past the matrix edge read zero; 16-byte loads are
// used where the row stride keeps them aligned (k % 4 == 0 for A,
// n % 4 == 0 for B), element loads elsewhere.
#include "common.h"

#define GEMM32_BM 128
#define GEMM32_BN 128
#define GEMM32_BK 8
#define GEMM32_THREADS 256

// One thread's share of a tile: 4 consecutive floats of A (a row, along k)
// and of B (a row of B, along n).
__device__ inline greta_f4 greta_gemm32_load(const float* __restrict__ p, uint32_t rows, uint32_t cols,
                                             uint32_t r, uint32_t c, bool aligned) {
    greta_f4 v;
    if (r < rows && c + 3 < cols && aligned) {
        v = *(const greta_f4*)(p + (greta_u64)r * cols + c);
    } else {
        const bool in = r < rows;
        const greta_u64 base = (greta_u64)r * cols;
        v.x = (in && c + 0 < cols) ? p[base + c + 0] : 0.0f;
        v.y = (in && c + 1 < cols) ? p[base + c + 1] : 0.0f;
        v.z = (in && c + 2 < cols) ? p[base + c + 2] : 0.0f;
        v.w = (in && c + 3 < cols) ? p[base + c + 3] : 0.0f;
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(GEMM32_THREADS)
greta_gemm_f32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, uint32_t m,
               uint32_t n, uint32_t k) {
    __shared__ __attribute__((aligned(16))) float as[2][GEMM32_BK][GEMM32_BM];
    __shared__ __attribute__((aligned(16))) float bs[2][GEMM32_BK][GEMM32_BN];
    const uint32_t t = threadIdx.x;
    const uint32_t bm0 = blockIdx.y * GEMM32_BM, bn0 = blockIdx.x * GEMM32_BN;
    // Loader roles: A tile 128 x 8 = 256 vectors (row t/2, k 4*(t%2));
    // B tile 8 x 128 = 256 vectors (k row t/32, column 4*(t%32)).
    const uint32_t ar = t / 2, ak = (t % 2) * 4;
    const uint32_t bk = t / 32, bc = (t % 32) * 4;
    const bool a_al = (k % 4) == 0, b_al = (n % 4) == 0;
    // Compute roles: rows ty*4 + {0..3} and 64 + ty*4 + {0..3}, likewise columns.
    const uint32_t ty = t / 16, tx = t % 16;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    greta_f4 ra = greta_gemm32_load(a, m, k, bm0 + ar, ak, a_al);
    greta_f4 rb = greta_gemm32_load(b, k, n, bk, bn0 + bc, b_al);
    uint32_t buf = 0;
    for (uint32_t k0 = 0; k0 < k; k0 += GEMM32_BK) {
        as[buf][ak + 0][ar] = ra.x;
        as[buf][ak + 1][ar] = ra.y;
        as[buf][ak + 2][ar] = ra.z;
        as[buf][ak + 3][ar] = ra.w;
        *(greta_f4*)&bs[buf][bk][bc] = rb;
        __syncthreads();
        if (k0 + GEMM32_BK < k) {
            ra = greta_gemm32_load(a, m, k, bm0 + ar, k0 + GEMM32_BK + ak, a_al);
            rb = greta_gemm32_load(b, k, n, k0 + GEMM32_BK + bk, bn0 + bc, b_al);
        }
#pragma unroll
        for (int p = 0; p < GEMM32_BK; ++p) {
            const greta_f4 a0 = *(const greta_f4*)&as[buf][p][ty * 4];
            const greta_f4 a1 = *(const greta_f4*)&as[buf][p][64 + ty * 4];
            const greta_f4 b0 = *(const greta_f4*)&bs[buf][p][tx * 4];
            const greta_f4 b1 = *(const greta_f4*)&bs[buf][p][64 + tx * 4];
            const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        // The other buffer is written next: no barrier needed before it, as
        // every thread passed this step's barrier after its last read of it.
        buf ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const uint32_t row = bm0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (row >= m) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t col = bn0 + h * 64 + tx * 4;
            float* out = c + (greta_u64)row * n + col;
            if (col + 3 < n && (n % 4) == 0) {
                greta_f4 o;
                o.x = acc[i][h * 4 + 0];
                o.y = acc[i][h * 4 + 1];
                o.z = acc[i][h * 4 + 2];
                o.w = acc[i][h * 4 + 3];
                *(greta_f4*)out = o;
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < n) out[j] = acc[i][h * 4 + j];
            }
        }
    }
}
