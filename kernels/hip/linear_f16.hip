// linear_f16: y[t][o] = sum_i x[t][i] w[o][i] (Y = X W^T, "NT": both
// operands are read along i), x and w f16, f32 accumulation, y rounded once
// to f16. The prefill projections of a transformer block, on the matrix
// units where the GPU has them.
//
// The tiling and the matrix instructions are gemm_f16.hip's (the lane
// layouts and tile sizes of matrix_lanes.h, generated from
// kernels/src/matrix_lanes.rs): as there, a block computes a GRETA_F16_BM x
// GRETA_F16_BN tile of Y (tokens x out features), stepping over i
// GRETA_F16_BK at a time through shared memory with rows GRETA_F16_PITCH
// halves apart, double-buffered except on CDNA (one stage, as there). What differs is the layout: W is [out][in],
// which is exactly the "col" (k-contiguous) B operand the instructions
// want, so both tiles are staged the same way, straight copies of 16-byte
// row pieces with no transpose; on NVIDIA both come to the registers by
// ldmatrix without .trans. The result is stored as f16 (pairs of adjacent
// columns as one 32-bit store where mma.sync's layout gives them).
//   NVIDIA sm_80+          mma.sync m16n8k16 (inline PTX), cp.async staging
//   gfx90a, gfx94x, gfx950 v_mfma_f32_16x16x16f16
//   gfx11 (RDNA3/3.5)      v_wmma_f32_16x16x16_f16, wave32
//   gfx12 (RDNA4)          v_wmma_f32_16x16x16_f16, wave32, the gfx12 layout
//   anything else          scalar FMAs over the same shared tiles
// Names here carry `lin` so they cannot collide with gemm_f16.hip's in the
// one translation unit all kernels are compiled as.
#include "common.h"

#if defined(GRETA_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GRETA_LIN_PATH 1
#define GRETA_LX(x) GRETA_MMA_SYNC_##x
#elif defined(GRETA_HIP) && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
                             defined(__gfx942__) || defined(__gfx950__))
#define GRETA_LIN_PATH 2
#define GRETA_LX(x) GRETA_MFMA16_##x
#elif defined(GRETA_HIP) && (defined(__GFX11__) || defined(__gfx1100__) || defined(__gfx1101__) || \
                             defined(__gfx1102__) || defined(__gfx1103__) || defined(__gfx1150__) ||  \
                             defined(__gfx1151__) || defined(__gfx1152__) || defined(__gfx1153__))
#define GRETA_LIN_PATH 3
#define GRETA_LX(x) GRETA_WMMA11_##x
#elif defined(GRETA_HIP) && (defined(__GFX12__) || defined(__gfx1200__) || defined(__gfx1201__))
#define GRETA_LIN_PATH 4
#define GRETA_LX(x) GRETA_WMMA12_##x
#else
#define GRETA_LIN_PATH 0
#endif

// Shared-memory stages of the A and B tiles: the instruction's (matrix_lanes.rs
// `stages`: one on CDNA, where two would leave one block per compute unit),
// two for the scalar fallback. With one stage the register-prefetch loop
// below takes a second barrier per k step before it stores the next tile.
#if GRETA_LIN_PATH == 0
#define GRETA_LIN_STAGES 2
#else
#define GRETA_LIN_STAGES GRETA_LX(STAGES)
#endif
#if GRETA_LIN_PATH == 1 && GRETA_LIN_STAGES != 2
#error "linear_f16: the cp.async pipeline is written for two stages"
#endif

#if GRETA_LIN_PATH == 1
__device__ inline uint32_t greta_lin_smem(const void* p) {
    uint32_t a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
// Four 8 x 8 f16 matrices from shared memory; lanes 8i..8i+7 give matrix
// i's row addresses; lane l receives row l / 4, columns 2 (l % 4) and + 1
// of each: mma.sync's A fragment for a row-major tile, and its B fragment
// for a tile stored [n][k] (matrix_lanes.rs, MMA_SYNC).
__device__ inline void greta_lin_ldsm4(uint32_t* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(greta_lin_smem(p)));
}
// 16 bytes global -> shared (sm_80+); `in` false writes zeros, reads nothing.
__device__ inline void greta_lin_cp16(void* dst, const void* src, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(greta_lin_smem(dst)), "l"(src),
                 "r"(in ? 16 : 0));
}
__device__ inline void greta_lin_cp_commit() { asm volatile("cp.async.commit_group;"); }
__device__ inline void greta_lin_cp_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ inline void greta_lin_mx_step(float* d, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#elif GRETA_LIN_PATH == 2
typedef _Float16 greta_lin_h4 __attribute__((ext_vector_type(4)));
typedef unsigned int greta_lin_w2 __attribute__((ext_vector_type(2)));
typedef float greta_lin_acc __attribute__((ext_vector_type(4)));
__device__ inline void greta_lin_mx_step(greta_lin_acc& d, const uint32_t* a, const uint32_t* b) {
    greta_lin_w2 wa, wb;
    wa.x = a[0];
    wa.y = a[1];
    wb.x = b[0];
    wb.y = b[1];
    d = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(greta_lin_h4, wa), __builtin_bit_cast(greta_lin_h4, wb),
                                              d, 0, 0, 0);
}
#elif GRETA_LIN_PATH == 3
typedef _Float16 greta_lin_h16 __attribute__((ext_vector_type(16)));
typedef unsigned int greta_lin_w8 __attribute__((ext_vector_type(8)));
typedef float greta_lin_acc __attribute__((ext_vector_type(8)));
__device__ inline void greta_lin_mx_step(greta_lin_acc& d, const uint32_t* a, const uint32_t* b) {
    greta_lin_w8 wa, wb;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        wa[i] = a[i];
        wb[i] = b[i];
    }
    d = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(greta_lin_h16, wa),
                                                   __builtin_bit_cast(greta_lin_h16, wb), d);
}
#elif GRETA_LIN_PATH == 4
typedef _Float16 greta_lin_h8 __attribute__((ext_vector_type(8)));
typedef unsigned int greta_lin_w4 __attribute__((ext_vector_type(4)));
typedef float greta_lin_acc __attribute__((ext_vector_type(8)));
__device__ inline void greta_lin_mx_step(greta_lin_acc& d, const uint32_t* a, const uint32_t* b) {
    greta_lin_w4 wa, wb;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        wa[i] = a[i];
        wb[i] = b[i];
    }
    d = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(greta_lin_h8, wa),
                                                         __builtin_bit_cast(greta_lin_h8, wb), d);
}
#endif

// Eight consecutive halves of row r of a rows x cols f16 matrix from column
// c, as raw bits; zero past the edges. One 16-byte load when the row
// stride keeps it aligned (cols % 8 == 0).
__device__ inline greta_u4 greta_lin_load8(const unsigned short* __restrict__ p, uint32_t rows, uint32_t cols,
                                           uint32_t r, uint32_t c) {
    greta_u4 v;
    if (r < rows && c + 7 < cols && (cols % 8) == 0) {
        v = *(const greta_u4*)(p + (greta_u64)r * cols + c);
    } else {
        uint32_t w[4];
        const greta_u64 base = (greta_u64)r * cols;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const uint32_t lo = (r < rows && c + 2 * j < cols) ? p[base + c + 2 * j] : 0u;
            const uint32_t hi = (r < rows && c + 2 * j + 1 < cols) ? p[base + c + 2 * j + 1] : 0u;
            w[j] = lo | (hi << 16);
        }
        v.x = w[0];
        v.y = w[1];
        v.z = w[2];
        v.w = w[3];
    }
    return v;
}

#if defined(GRETA_CUDA)
#define GRETA_LIN_THREADS GRETA_MMA_SYNC_THREADS
#else
#define GRETA_LIN_THREADS GRETA_F16_HIP_THREADS
#endif
#define GRETA_LIN_TN (GRETA_F16_BM * GRETA_F16_BN / (GRETA_LIN_THREADS * 8))
#if GRETA_F16_BM != GRETA_F16_BN || (GRETA_F16_BM * GRETA_F16_BK / 8) % GRETA_LIN_THREADS != 0
#error "linear_f16: the loaders need BM == BN and BM * BK / 8 a multiple of the block size"
#endif
#define GRETA_LIN_CHUNKS (GRETA_F16_BM * GRETA_F16_BK / 8 / GRETA_LIN_THREADS)
// Chunk q of a tile: 8 halves of tile row q / (BK/8) from column (q % (BK/8)) * 8.
#define GRETA_LIN_QR(q) ((q) / (GRETA_F16_BK / 8))
#define GRETA_LIN_QC(q) (((q) % (GRETA_F16_BK / 8)) * 8)

#if GRETA_LIN_PATH == 1
// One BK step on shared buffer `buf`: per k16, A fragments by ldmatrix
// (rows lane % 16, k halves lane / 16), B fragments by ldmatrix over the
// [n][k] tile: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7),
// (n 8-15, k 8-15) are b0, b1 of n8 tile j and b0, b1 of tile j + 1.
#define GRETA_LIN_MMA_STEP(buf)                                                                              \
    _Pragma("unroll") for (int kk = 0; kk < GRETA_F16_BK; kk += GRETA_LX(K)) {                               \
        uint32_t af[GRETA_LX(FRAGS_M)][4];                                                                   \
        uint32_t bf[GRETA_LX(FRAGS_N)][2];                                                                   \
        _Pragma("unroll") for (int i = 0; i < GRETA_LX(FRAGS_M); ++i)                                        \
            greta_lin_ldsm4(af[i], &as[buf][wr + i * GRETA_LX(M) + lane % 16][kk + (lane / 16) * 8]);        \
        _Pragma("unroll") for (int j = 0; j < GRETA_LX(FRAGS_N); j += 2) {                                   \
            uint32_t r[4];                                                                                   \
            greta_lin_ldsm4(r, &bs[buf][wc + j * GRETA_LX(N) + (lane / 16) * 8 + lane % 8]                    \
                                   [kk + ((lane / 8) % 2) * 8]);                                             \
            bf[j][0] = r[0];                                                                                 \
            bf[j][1] = r[1];                                                                                 \
            bf[j + 1][0] = r[2];                                                                             \
            bf[j + 1][1] = r[3];                                                                             \
        }                                                                                                    \
        _Pragma("unroll") for (int i = 0; i < GRETA_LX(FRAGS_M); ++i)                                        \
            _Pragma("unroll") for (int j = 0; j < GRETA_LX(FRAGS_N); ++j)                                    \
                greta_lin_mx_step(acc[i][j], af[i], bf[j]);                                                  \
    }
#endif

extern "C" __global__ void __launch_bounds__(GRETA_LIN_THREADS)
greta_linear_f16(const greta_f16* __restrict__ x, const greta_f16* __restrict__ w, greta_f16* __restrict__ y,
                 uint32_t tokens, uint32_t rows, uint32_t cols) {
    // Y (tokens x rows) = X (tokens x cols) W^T: m = tokens, n = rows, k = cols.
    const uint32_t m = tokens, n = rows, k = cols;
    __shared__ __attribute__((aligned(16))) unsigned short as[GRETA_LIN_STAGES][GRETA_F16_BM][GRETA_F16_PITCH];
    __shared__ __attribute__((aligned(16))) unsigned short bs[GRETA_LIN_STAGES][GRETA_F16_BN][GRETA_F16_PITCH];
    const unsigned short* ab = (const unsigned short*)x;
    const unsigned short* bb = (const unsigned short*)w;
    unsigned short* yb = (unsigned short*)y;
    const uint32_t t = threadIdx.x;
    const uint32_t bm0 = blockIdx.y * GRETA_F16_BM, bn0 = blockIdx.x * GRETA_F16_BN;

#if GRETA_LIN_PATH == 0
    const uint32_t ty = t / (GRETA_F16_BN / GRETA_LIN_TN), tx = t % (GRETA_F16_BN / GRETA_LIN_TN);
    float acc[8][GRETA_LIN_TN];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < GRETA_LIN_TN; ++j) acc[i][j] = 0.0f;
#else
    const uint32_t wave = t / GRETA_LX(WAVE), lane = t % GRETA_LX(WAVE);
    const uint32_t wr = GRETA_LX(WAVE_ROW)(wave), wc = GRETA_LX(WAVE_COL)(wave);
#if GRETA_LIN_PATH == 1
    float acc[GRETA_LX(FRAGS_M)][GRETA_LX(FRAGS_N)][GRETA_LX(C_ELEMS)];
#else
    greta_lin_acc acc[GRETA_LX(FRAGS_M)][GRETA_LX(FRAGS_N)];
#endif
#pragma unroll
    for (int i = 0; i < GRETA_LX(FRAGS_M); ++i)
#pragma unroll
        for (int j = 0; j < GRETA_LX(FRAGS_N); ++j)
#pragma unroll
            for (int r = 0; r < GRETA_LX(C_ELEMS); ++r) acc[i][j][r] = 0.0f;
#endif

    uint32_t buf = 0;
#if GRETA_LIN_PATH == 1
    // Rows 16-byte aligned (cols % 8 == 0): every chunk is wholly inside
    // or wholly outside its matrix (then zero-filled), so tiles move global
    // -> shared by cp.async, two stages, one barrier per step.
    if ((k % 8) == 0) {
        const uint32_t steps = (k + GRETA_F16_BK - 1) / GRETA_F16_BK;
#define GRETA_LIN_ISSUE(kt, b)                                                                         \
    _Pragma("unroll") for (int i = 0; i < GRETA_LIN_CHUNKS; ++i) {                                     \
        const uint32_t q = t + i * GRETA_LIN_THREADS;                                                  \
        const uint32_t kc = (kt) * GRETA_F16_BK + GRETA_LIN_QC(q);                                     \
        const uint32_t ar = bm0 + GRETA_LIN_QR(q), br = bn0 + GRETA_LIN_QR(q);                         \
        const bool ain = ar < m && kc < k, bin = br < n && kc < k;                                     \
        greta_lin_cp16(&as[b][GRETA_LIN_QR(q)][GRETA_LIN_QC(q)], ain ? ab + (greta_u64)ar * k + kc : ab, ain); \
        greta_lin_cp16(&bs[b][GRETA_LIN_QR(q)][GRETA_LIN_QC(q)], bin ? bb + (greta_u64)br * k + kc : bb, bin); \
    }                                                                                                  \
    greta_lin_cp_commit();
        GRETA_LIN_ISSUE(0, 0)
        for (uint32_t kt = 0; kt < steps; ++kt) {
            greta_lin_cp_wait_all();
            // Tile kt is in `buf` for every thread and every thread is done
            // with the other buffer (step kt - 1): refill it.
            __syncthreads();
            if (kt + 1 < steps) {
                GRETA_LIN_ISSUE(kt + 1, buf ^ 1)
            }
            GRETA_LIN_MMA_STEP(buf)
            buf ^= 1;
        }
#undef GRETA_LIN_ISSUE
    } else
#endif
    {
        greta_u4 ra[GRETA_LIN_CHUNKS], rb[GRETA_LIN_CHUNKS];
#define GRETA_LIN_LOAD(k0)                                                                             \
    _Pragma("unroll") for (int i = 0; i < GRETA_LIN_CHUNKS; ++i) {                                     \
        const uint32_t q = t + i * GRETA_LIN_THREADS;                                                  \
        ra[i] = greta_lin_load8(ab, m, k, bm0 + GRETA_LIN_QR(q), (k0) + GRETA_LIN_QC(q));              \
        rb[i] = greta_lin_load8(bb, n, k, bn0 + GRETA_LIN_QR(q), (k0) + GRETA_LIN_QC(q));              \
    }
        GRETA_LIN_LOAD(0)
        for (uint32_t k0 = 0; k0 < k; k0 += GRETA_F16_BK) {
#pragma unroll
            for (int i = 0; i < GRETA_LIN_CHUNKS; ++i) {
                const uint32_t q = t + i * GRETA_LIN_THREADS;
                *(greta_u4*)&as[buf][GRETA_LIN_QR(q)][GRETA_LIN_QC(q)] = ra[i];
                *(greta_u4*)&bs[buf][GRETA_LIN_QR(q)][GRETA_LIN_QC(q)] = rb[i];
            }
            __syncthreads();
            if (k0 + GRETA_F16_BK < k) {
                GRETA_LIN_LOAD(k0 + GRETA_F16_BK)
            }
#if GRETA_LIN_PATH == 0
#pragma unroll 4
            for (int p = 0; p < GRETA_F16_BK; ++p) {
                float av[8], bv[GRETA_LIN_TN];
#pragma unroll
                for (int i = 0; i < 8; ++i) av[i] = greta_f16_bits_to_f32(as[buf][ty * 8 + i][p]);
#pragma unroll
                for (int j = 0; j < GRETA_LIN_TN; ++j) bv[j] = greta_f16_bits_to_f32(bs[buf][tx * GRETA_LIN_TN + j][p]);
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int j = 0; j < GRETA_LIN_TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
#elif GRETA_LIN_PATH == 1
            GRETA_LIN_MMA_STEP(buf)
#else
#pragma unroll
            for (int kk = 0; kk < GRETA_F16_BK; kk += GRETA_LX(K)) {
                uint32_t af[GRETA_LX(FRAGS_M)][GRETA_LX(A_ELEMS) / 2];
                uint32_t bf[GRETA_LX(FRAGS_N)][GRETA_LX(B_ELEMS) / 2];
#pragma unroll
                for (int i = 0; i < GRETA_LX(FRAGS_M); ++i)
#pragma unroll
                    for (int e = 0; e < GRETA_LX(A_ELEMS) / 2; ++e)
                        af[i][e] = *(const uint32_t*)&as[buf][wr + i * GRETA_LX(M) + GRETA_LX(A_ROW)(lane, 2 * e)]
                                                       [kk + GRETA_LX(A_K)(lane, 2 * e)];
#pragma unroll
                for (int j = 0; j < GRETA_LX(FRAGS_N); ++j)
#pragma unroll
                    for (int e = 0; e < GRETA_LX(B_ELEMS) / 2; ++e)
                        bf[j][e] = *(const uint32_t*)&bs[buf][wc + j * GRETA_LX(N) + GRETA_LX(B_COL)(lane, 2 * e)]
                                                       [kk + GRETA_LX(B_K)(lane, 2 * e)];
#pragma unroll
                for (int i = 0; i < GRETA_LX(FRAGS_M); ++i)
#pragma unroll
                    for (int j = 0; j < GRETA_LX(FRAGS_N); ++j) greta_lin_mx_step(acc[i][j], af[i], bf[j]);
            }
#endif
#if GRETA_LIN_STAGES == 1
            // One stage: the next step stores into it, after every wave's reads.
            __syncthreads();
#else
            // The other buffer is written next: every thread passed this
            // step's barrier after its last read of it.
            buf ^= 1;
#endif
        }
#undef GRETA_LIN_LOAD
    }

#if GRETA_LIN_PATH == 0
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const uint32_t row = bm0 + ty * 8 + i;
#pragma unroll
        for (int j = 0; j < GRETA_LIN_TN; ++j) {
            const uint32_t col = bn0 + tx * GRETA_LIN_TN + j;
            if (row < m && col < n) yb[(greta_u64)row * n + col] = greta_h_from_f32(acc[i][j]);
        }
    }
#elif GRETA_LIN_PATH == 1
    // mma.sync's C: elements (0, 1) and (2, 3) of a lane are two adjacent
    // columns of one row, the first even: one 32-bit store when n is even.
#pragma unroll
    for (int i = 0; i < GRETA_LX(FRAGS_M); ++i)
#pragma unroll
        for (int j = 0; j < GRETA_LX(FRAGS_N); ++j)
#pragma unroll
            for (int r = 0; r < GRETA_LX(C_ELEMS); r += 2) {
                const uint32_t row = bm0 + wr + i * GRETA_LX(M) + GRETA_LX(C_ROW)(lane, r);
                const uint32_t col = bn0 + wc + j * GRETA_LX(N) + GRETA_LX(C_COL)(lane, r);
                if (row >= m) continue;
                const greta_u64 at = (greta_u64)row * n + col;
                if (n % 2 == 0 && col + 1 < n) {
                    *(uint32_t*)(yb + at) = greta_h2_from_f32(acc[i][j][r], acc[i][j][r + 1]);
                } else {
                    if (col < n) yb[at] = greta_h_from_f32(acc[i][j][r]);
                    if (col + 1 < n) yb[at + 1] = greta_h_from_f32(acc[i][j][r + 1]);
                }
            }
#else
#pragma unroll
    for (int i = 0; i < GRETA_LX(FRAGS_M); ++i)
#pragma unroll
        for (int j = 0; j < GRETA_LX(FRAGS_N); ++j)
#pragma unroll
            for (int r = 0; r < GRETA_LX(C_ELEMS); ++r) {
                const uint32_t row = bm0 + wr + i * GRETA_LX(M) + GRETA_LX(C_ROW)(lane, r);
                const uint32_t col = bn0 + wc + j * GRETA_LX(N) + GRETA_LX(C_COL)(lane, r);
                if (row < m && col < n) yb[(greta_u64)row * n + col] = greta_h_from_f32(acc[i][j][r]);
            }
#endif
}

#if defined(GRETA_HOPPER)
// The Hopper kernels (hopper_gemm.h; compiled for sm_90a only): W is
// [out][in], K-major as wgmma's B wants it, like X. One kernel per (BN,
// STAGES): greta_linear_f16_wgmma_bn<BN>_s<STAGES>, the arguments of
// greta_linear_f16 with the tensor maps of x and w before the shape.
#define GRETA_HOP_LIN_VARIANT(BN_, S_)                                                                           \
    extern "C" __global__ void __launch_bounds__(GRETA_HOP_THREADS, 1) greta_linear_f16_wgmma_bn##BN_##_s##S_( \
        const greta_f16* __restrict__ x, const greta_f16* __restrict__ w, greta_f16* __restrict__ y,             \
        const __grid_constant__ greta_tmap tx, const __grid_constant__ greta_tmap tw, uint32_t tokens,           \
        uint32_t rows, uint32_t cols) {                                                                          \
        greta_hop_gemm<BN_, S_, false, true>(&tx, &tw, y, tokens, rows, cols);                                   \
    }
GRETA_HOP_LIN_VARIANT(256, 4)
GRETA_HOP_LIN_VARIANT(128, 6)
#undef GRETA_HOP_LIN_VARIANT
#endif
