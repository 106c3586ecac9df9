// gemm_f16: C[m][n] = sum_k A[m][k] * B[k][n] with A, B in f16 (IEEE
// binary16) and products accumulated and stored in f32, on the GPU's
// matrix units where it has them.
//
// One kernel, one tiling: a block of GRETA_F16_THREADS threads computes a
// GRETA_F16_BM x GRETA_F16_BN tile of C, stepping over k GRETA_F16_BK at a
// time through shared memory (A row-major, B transposed, so both are read
// along k; rows GRETA_F16_PITCH halves apart), double-buffered except on
// CDNA, where one stage lets three blocks share a compute unit's LDS. Each wave owns
// a wave tile of C made of the matrix instruction's tiles. Which instruction
// is chosen here, at compile time, per target:
//   NVIDIA sm_80+          mma.sync m16n8k16 (inline PTX)
//   gfx90a, gfx94x, gfx950 v_mfma_f32_16x16x16f16
//   gfx11 (RDNA3/3.5)      v_wmma_f32_16x16x16_f16, wave32
//   gfx12 (RDNA4)          v_wmma_f32_16x16x16_f16, wave32, the gfx12 layout
//   anything else          scalar FMAs over the same shared tiles
// Which lane holds which element of each operand and result is not written
// here: matrix_lanes.h is generated from kernels/src/matrix_lanes.rs, where
// the layouts are cited and a CPU model of each instruction runs this
// tiling against a reference GEMM. Every layout there keeps elements
// (2i, 2i+1) of a lane at k and k+1 with k even, so operands are read from
// shared memory as 32-bit pairs.
//
// On NVIDIA the operands come from shared memory by ldmatrix instead (its
// result layout is mma.sync's fragment layout by definition; B is staged
// k-major for ldmatrix.trans), tiles move global -> shared by cp.async in
// two stages when rows are 16-byte aligned, and a block is 4 warps of
// 64 x 64: measured on an H100 (docs/performance.md, 2026-11-25), the
// per-element gather left the kernel bound on shared-memory instructions.
#include "common.h"

#if defined(GRETA_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GRETA_F16_PATH 1
#define GRETA_MX(x) GRETA_MMA_SYNC_##x
#elif defined(GRETA_HIP) && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
                             defined(__gfx942__) || defined(__gfx950__))
#define GRETA_F16_PATH 2
#define GRETA_MX(x) GRETA_MFMA16_##x
#elif defined(GRETA_HIP) && (defined(__GFX11__) || defined(__gfx1100__) || defined(__gfx1101__) || \
                             defined(__gfx1102__) || defined(__gfx1103__) || defined(__gfx1150__) ||  \
                             defined(__gfx1151__) || defined(__gfx1152__) || defined(__gfx1153__))
#define GRETA_F16_PATH 3
#define GRETA_MX(x) GRETA_WMMA11_##x
#elif defined(GRETA_HIP) && (defined(__GFX12__) || defined(__gfx1200__) || defined(__gfx1201__))
#define GRETA_F16_PATH 4
#define GRETA_MX(x) GRETA_WMMA12_##x
#else
#define GRETA_F16_PATH 0
#endif

// Shared-memory stages of the A and B tiles: the instruction's (matrix_lanes.rs
// `stages`: one on CDNA, where two would leave one block per compute unit),
// two for the scalar fallback. With one stage the register-prefetch loop
// below takes a second barrier per k step before it stores the next tile.
#if GRETA_F16_PATH == 0
#define GRETA_F16_STAGES 2
#else
#define GRETA_F16_STAGES GRETA_MX(STAGES)
#endif
#if GRETA_F16_PATH == 1 && GRETA_F16_STAGES != 2
#error "gemm_f16: the cp.async pipeline is written for two stages"
#endif

#if GRETA_F16_PATH == 1
// The shared-memory address of a generic pointer into shared memory.
__device__ inline uint32_t greta_smem(const void* p) {
    uint32_t a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
// Four 8 x 8 f16 matrices from shared memory, one row address per lane
// (lanes 8i..8i+7 give matrix i's rows); .trans delivers them transposed.
// Lane l receives row l / 4, columns 2 (l % 4) and + 1 of each: exactly
// mma.sync's fragment layout (matrix_lanes.rs, MMA_SYNC).
__device__ inline void greta_ldsm4(uint32_t* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(greta_smem(p)));
}
__device__ inline void greta_ldsm4_trans(uint32_t* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(greta_smem(p)));
}
// 16 bytes global -> shared without passing through registers (sm_80+);
// `in` false writes 16 zero bytes and reads nothing.
__device__ inline void greta_cp16(void* dst, const void* src, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(greta_smem(dst)), "l"(src), "r"(in ? 16 : 0));
}
__device__ inline void greta_cp_commit() { asm volatile("cp.async.commit_group;"); }
__device__ inline void greta_cp_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
// D = A B + D on one m16n8k16 tile; a: 4 registers of 2 halves, b: 2.
__device__ inline void greta_mx_step(float* d, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#elif GRETA_F16_PATH == 2
typedef _Float16 greta_h4 __attribute__((ext_vector_type(4)));
typedef unsigned int greta_w2 __attribute__((ext_vector_type(2)));
typedef float greta_mx_acc __attribute__((ext_vector_type(4)));
__device__ inline void greta_mx_step(greta_mx_acc& d, const uint32_t* a, const uint32_t* b) {
    greta_w2 wa, wb;
    wa.x = a[0];
    wa.y = a[1];
    wb.x = b[0];
    wb.y = b[1];
    d = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(greta_h4, wa), __builtin_bit_cast(greta_h4, wb), d,
                                              0, 0, 0);
}
#elif GRETA_F16_PATH == 3
typedef _Float16 greta_h16 __attribute__((ext_vector_type(16)));
typedef unsigned int greta_w8 __attribute__((ext_vector_type(8)));
typedef float greta_mx_acc __attribute__((ext_vector_type(8)));
__device__ inline void greta_mx_step(greta_mx_acc& d, const uint32_t* a, const uint32_t* b) {
    greta_w8 wa, wb;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        wa[i] = a[i];
        wb[i] = b[i];
    }
    d = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(greta_h16, wa), __builtin_bit_cast(greta_h16, wb),
                                                   d);
}
#elif GRETA_F16_PATH == 4
typedef _Float16 greta_h8 __attribute__((ext_vector_type(8)));
typedef unsigned int greta_w4 __attribute__((ext_vector_type(4)));
typedef float greta_mx_acc __attribute__((ext_vector_type(8)));
__device__ inline void greta_mx_step(greta_mx_acc& d, const uint32_t* a, const uint32_t* b) {
    greta_w4 wa, wb;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        wa[i] = a[i];
        wb[i] = b[i];
    }
    d = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(greta_h8, wa),
                                                         __builtin_bit_cast(greta_h8, wb), d);
}
#endif

// Eight consecutive halves of row `r` of a rows x cols f16 matrix from
// column `c`, as raw bits; zero past the edges. 16-byte loads when the row
// stride keeps them aligned (cols % 8 == 0).
__device__ inline greta_u4 greta_f16_load8(const unsigned short* __restrict__ p, uint32_t rows, uint32_t cols,
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

// Threads of a block: MMA_SYNC's on CUDA (its scalar fallback too), one
// size for every HIP target; runtime/src/gpu/launch.rs launches the same.
#if defined(GRETA_CUDA)
#define GRETA_F16_THREADS GRETA_MMA_SYNC_THREADS
#else
#define GRETA_F16_THREADS GRETA_F16_HIP_THREADS
#endif
// The scalar fallback: each thread an 8 x GRETA_F16_TN sub-tile.
#define GRETA_F16_TN (GRETA_F16_BM * GRETA_F16_BN / (GRETA_F16_THREADS * 8))

// One chunk count serves both tiles (BM x BK of A, BK x BN of B).
#if GRETA_F16_BM != GRETA_F16_BN || (GRETA_F16_BM * GRETA_F16_BK / 8) % GRETA_F16_THREADS != 0
#error "gemm_f16: the loaders need BM == BN and BM * BK / 8 a multiple of the block size"
#endif
#define GRETA_F16_CHUNKS ((GRETA_F16_BM * GRETA_F16_BK / 8 + GRETA_F16_THREADS - 1) / GRETA_F16_THREADS)

#if GRETA_F16_PATH == 1
// One BK step of the tensor-core path on shared buffer `buf`: per k16,
// A fragments by ldmatrix, B fragments (two n8 tiles each) by
// ldmatrix.trans, then FRAGS_M x FRAGS_N mma.sync.
#define GRETA_F16_MMA_STEP(buf)                                                                          \
    _Pragma("unroll")                                                                                    \
        for (int kk = 0; kk < GRETA_F16_BK; kk += GRETA_MX(K)) {                                         \
            uint32_t af[GRETA_MX(FRAGS_M)][4];                                                           \
            uint32_t bf[GRETA_MX(FRAGS_N)][2];                                                           \
    _Pragma("unroll")                                                                                    \
            for (int i = 0; i < GRETA_MX(FRAGS_M); ++i)                                                  \
                greta_ldsm4(af[i], &as[buf][wr + i * GRETA_MX(M) + lane % 16][kk + (lane / 16) * 8]);    \
    _Pragma("unroll")                                                                                    \
            for (int j = 0; j < GRETA_MX(FRAGS_N); j += 2) {                                             \
                uint32_t r[4];                                                                           \
                greta_ldsm4_trans(r, &bs[buf][kk + lane % 16][wc + j * GRETA_MX(N) + (lane / 16) * 8]);  \
                bf[j][0] = r[0];                                                                         \
                bf[j][1] = r[1];                                                                         \
                bf[j + 1][0] = r[2];                                                                     \
                bf[j + 1][1] = r[3];                                                                     \
            }                                                                                            \
    _Pragma("unroll")                                                                                    \
            for (int i = 0; i < GRETA_MX(FRAGS_M); ++i)                                                  \
    _Pragma("unroll")                                                                                    \
                for (int j = 0; j < GRETA_MX(FRAGS_N); ++j) greta_mx_step(acc[i][j], af[i], bf[j]);      \
        }
#endif

extern "C" __global__ void __launch_bounds__(GRETA_F16_THREADS)
greta_gemm_f16(const greta_f16* __restrict__ a, const greta_f16* __restrict__ b, float* __restrict__ c, uint32_t m,
               uint32_t n, uint32_t k) {
    __shared__ __attribute__((aligned(16))) unsigned short as[GRETA_F16_STAGES][GRETA_F16_BM][GRETA_F16_PITCH];
#if GRETA_F16_PATH == 1
    // B k-major (rows of n, 8 halves of padding): 16-byte stores, and
    // ldmatrix.trans reads mma.sync's column-major B fragments from it.
    __shared__ __attribute__((aligned(16))) unsigned short bs[2][GRETA_F16_BK][GRETA_F16_BN + 8];
#else
    __shared__ __attribute__((aligned(16))) unsigned short bs[GRETA_F16_STAGES][GRETA_F16_BN][GRETA_F16_PITCH];
#endif
    const unsigned short* ab = (const unsigned short*)a;
    const unsigned short* bb = (const unsigned short*)b;
    const uint32_t t = threadIdx.x;
    const uint32_t bm0 = blockIdx.y * GRETA_F16_BM, bn0 = blockIdx.x * GRETA_F16_BN;

    // Loader roles. A: chunk q holds 8 halves of row q / (BK/8) from k
    // (q % (BK/8)) * 8. B: chunk q holds 8 halves of row (k) q % BK from
    // column (q / BK) * 8; consecutive lanes take consecutive k so the
    // transposed 16-bit stores of a wave hit consecutive words.
    greta_u4 ra[GRETA_F16_CHUNKS], rb[GRETA_F16_CHUNKS];
#define GRETA_F16_LOAD(k0)                                                                           \
    _Pragma("unroll") for (int i = 0; i < GRETA_F16_CHUNKS; ++i) {                                   \
        const uint32_t q = t + i * GRETA_F16_THREADS;                                                \
        ra[i] = greta_f16_load8(ab, m, k, bm0 + q / (GRETA_F16_BK / 8), (k0) + (q % (GRETA_F16_BK / 8)) * 8); \
        rb[i] = GRETA_F16_LOAD_B(q, k0);                                                             \
    }
#if GRETA_F16_PATH == 1
    // B chunk q: row (k) q / (BN/8), columns from (q % (BN/8)) * 8.
#define GRETA_F16_LOAD_B(q, k0) \
    greta_f16_load8(bb, k, n, (k0) + (q) / (GRETA_F16_BN / 8), bn0 + ((q) % (GRETA_F16_BN / 8)) * 8)
#else
#define GRETA_F16_LOAD_B(q, k0) greta_f16_load8(bb, k, n, (k0) + (q) % GRETA_F16_BK, bn0 + ((q) / GRETA_F16_BK) * 8)
#endif

#if GRETA_F16_PATH == 0
    // No matrix unit: each thread an 8 x TN sub-tile with scalar FMAs.
    const uint32_t ty = t / (GRETA_F16_BN / GRETA_F16_TN), tx = t % (GRETA_F16_BN / GRETA_F16_TN);
    float acc[8][GRETA_F16_TN];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < GRETA_F16_TN; ++j) acc[i][j] = 0.0f;
#else
    const uint32_t wave = t / GRETA_MX(WAVE), lane = t % GRETA_MX(WAVE);
    const uint32_t wr = GRETA_MX(WAVE_ROW)(wave), wc = GRETA_MX(WAVE_COL)(wave);
#if GRETA_F16_PATH == 1
    float acc[GRETA_MX(FRAGS_M)][GRETA_MX(FRAGS_N)][GRETA_MX(C_ELEMS)];
#else
    greta_mx_acc acc[GRETA_MX(FRAGS_M)][GRETA_MX(FRAGS_N)];
#endif
#pragma unroll
    for (int i = 0; i < GRETA_MX(FRAGS_M); ++i)
#pragma unroll
        for (int j = 0; j < GRETA_MX(FRAGS_N); ++j)
#pragma unroll
            for (int r = 0; r < GRETA_MX(C_ELEMS); ++r) acc[i][j][r] = 0.0f;
#endif

    uint32_t buf = 0;
#if GRETA_F16_PATH == 1
    // Rows 16-byte aligned (k, n multiples of 8): every chunk is wholly
    // inside the matrix or wholly outside (zero-filled), so tiles go global
    // -> shared by cp.async, two stages: the next tile is in flight while
    // this one is multiplied; one barrier per step.
    if ((k % 8) == 0 && (n % 8) == 0) {
        const uint32_t steps = (k + GRETA_F16_BK - 1) / GRETA_F16_BK;
#define GRETA_F16_ISSUE(kt, b)                                                                       \
    _Pragma("unroll") for (int i = 0; i < GRETA_F16_CHUNKS; ++i) {                                   \
        const uint32_t q = t + i * GRETA_F16_THREADS;                                                \
        const uint32_t ar = bm0 + q / (GRETA_F16_BK / 8), ac = (kt) * GRETA_F16_BK + (q % (GRETA_F16_BK / 8)) * 8; \
        const bool ain = ar < m && ac < k;                                                           \
        greta_cp16(&as[b][q / (GRETA_F16_BK / 8)][(q % (GRETA_F16_BK / 8)) * 8],                     \
                   ain ? ab + (greta_u64)ar * k + ac : ab, ain);                                     \
        const uint32_t br = (kt) * GRETA_F16_BK + q / (GRETA_F16_BN / 8), bc = bn0 + (q % (GRETA_F16_BN / 8)) * 8; \
        const bool bin = br < k && bc < n;                                                           \
        greta_cp16(&bs[b][q / (GRETA_F16_BN / 8)][(q % (GRETA_F16_BN / 8)) * 8],                     \
                   bin ? bb + (greta_u64)br * n + bc : bb, bin);                                     \
    }                                                                                                \
    greta_cp_commit();
        GRETA_F16_ISSUE(0, 0)
        for (uint32_t kt = 0; kt < steps; ++kt) {
            greta_cp_wait_all();
            // Tile kt is in `buf` for every thread, and every thread is
            // done with the other buffer (step kt - 1): refill it.
            __syncthreads();
            if (kt + 1 < steps) {
                GRETA_F16_ISSUE(kt + 1, buf ^ 1)
            }
            GRETA_F16_MMA_STEP(buf)
            buf ^= 1;
        }
#undef GRETA_F16_ISSUE
    } else
#endif
    {
    GRETA_F16_LOAD(0)
    for (uint32_t k0 = 0; k0 < k; k0 += GRETA_F16_BK) {
#pragma unroll
        for (int i = 0; i < GRETA_F16_CHUNKS; ++i) {
            const uint32_t q = t + i * GRETA_F16_THREADS;
            *(greta_u4*)&as[buf][q / (GRETA_F16_BK / 8)][(q % (GRETA_F16_BK / 8)) * 8] = ra[i];
#if GRETA_F16_PATH == 1
            *(greta_u4*)&bs[buf][q / (GRETA_F16_BN / 8)][(q % (GRETA_F16_BN / 8)) * 8] = rb[i];
#else
            const uint32_t kr = q % GRETA_F16_BK, nc = (q / GRETA_F16_BK) * 8;
            const uint32_t w[4] = {rb[i].x, rb[i].y, rb[i].z, rb[i].w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                bs[buf][nc + 2 * j][kr] = (unsigned short)(w[j] & 0xffffu);
                bs[buf][nc + 2 * j + 1][kr] = (unsigned short)(w[j] >> 16);
            }
#endif
        }
        __syncthreads();
        if (k0 + GRETA_F16_BK < k) {
            GRETA_F16_LOAD(k0 + GRETA_F16_BK)
        }
#if GRETA_F16_PATH == 0
#pragma unroll 4
        for (int p = 0; p < GRETA_F16_BK; ++p) {
            float av[8], bv[GRETA_F16_TN];
#pragma unroll
            for (int i = 0; i < 8; ++i) av[i] = greta_f16_bits_to_f32(as[buf][ty * 8 + i][p]);
#pragma unroll
            for (int j = 0; j < GRETA_F16_TN; ++j) {
#if GRETA_F16_PATH == 1
                bv[j] = greta_f16_bits_to_f32(bs[buf][p][tx * GRETA_F16_TN + j]);
#else
                bv[j] = greta_f16_bits_to_f32(bs[buf][tx * GRETA_F16_TN + j][p]);
#endif
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < GRETA_F16_TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
#elif GRETA_F16_PATH == 1
        GRETA_F16_MMA_STEP(buf)
#else
#pragma unroll
        for (int kk = 0; kk < GRETA_F16_BK; kk += GRETA_MX(K)) {
            uint32_t af[GRETA_MX(FRAGS_M)][GRETA_MX(A_ELEMS) / 2];
            uint32_t bf[GRETA_MX(FRAGS_N)][GRETA_MX(B_ELEMS) / 2];
#pragma unroll
            for (int i = 0; i < GRETA_MX(FRAGS_M); ++i)
#pragma unroll
                for (int e = 0; e < GRETA_MX(A_ELEMS) / 2; ++e)
                    af[i][e] = *(const uint32_t*)&as[buf][wr + i * GRETA_MX(M) + GRETA_MX(A_ROW)(lane, 2 * e)]
                                                   [kk + GRETA_MX(A_K)(lane, 2 * e)];
#pragma unroll
            for (int j = 0; j < GRETA_MX(FRAGS_N); ++j)
#pragma unroll
                for (int e = 0; e < GRETA_MX(B_ELEMS) / 2; ++e)
                    bf[j][e] = *(const uint32_t*)&bs[buf][wc + j * GRETA_MX(N) + GRETA_MX(B_COL)(lane, 2 * e)]
                                                   [kk + GRETA_MX(B_K)(lane, 2 * e)];
#pragma unroll
            for (int i = 0; i < GRETA_MX(FRAGS_M); ++i)
#pragma unroll
                for (int j = 0; j < GRETA_MX(FRAGS_N); ++j) greta_mx_step(acc[i][j], af[i], bf[j]);
        }
#endif
#if GRETA_F16_STAGES == 1
        // One stage: the next step stores into it, after every wave's reads.
        __syncthreads();
#else
        // The other buffer is written next: every thread passed this
        // step's barrier after its last read of it.
        buf ^= 1;
#endif
    }
    }
#undef GRETA_F16_LOAD
#undef GRETA_F16_LOAD_B

#if GRETA_F16_PATH == 0
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const uint32_t row = bm0 + ty * 8 + i;
#pragma unroll
        for (int j = 0; j < GRETA_F16_TN; ++j) {
            const uint32_t col = bn0 + tx * GRETA_F16_TN + j;
            if (row < m && col < n) c[(greta_u64)row * n + col] = acc[i][j];
        }
    }
#else
#pragma unroll
    for (int i = 0; i < GRETA_MX(FRAGS_M); ++i)
#pragma unroll
        for (int j = 0; j < GRETA_MX(FRAGS_N); ++j)
#pragma unroll
            for (int r = 0; r < GRETA_MX(C_ELEMS); ++r) {
                const uint32_t row = bm0 + wr + i * GRETA_MX(M) + GRETA_MX(C_ROW)(lane, r);
                const uint32_t col = bn0 + wc + j * GRETA_MX(N) + GRETA_MX(C_COL)(lane, r);
                if (row < m && col < n) c[(greta_u64)row * n + col] = acc[i][j][r];
            }
#endif
}

#if GRETA_F16_PATH == 1
// Tune variants of the tensor-core path (NVIDIA sm_80+): `greta smoke
// --tune` times each against the kernel above and caches the fastest
// correct one per device and shape class (runtime/src/gpu/tune.rs,
// CUDA_F16_VARIANTS, lists the same instantiations). What differs from the
// kernel above: block tiles of BM x BN with one warp per 64 x 64 of C (the
// same fragments, ldmatrix and mma.sync steps), a STAGES-deep cp.async
// pipeline in dynamic shared memory (over the static 48 KiB: the runtime
// raises the kernel's limit before the launch), every fragment of a BK
// step loaded before its first mma.sync (ldmatrix latency overlaps the
// tensor work instead of stalling it), and blocks walked in groups of 8
// block rows so neighbouring blocks share their A and B strips in L2.
// Rows of A and B must be 16-byte aligned (k, n multiples of 8); the
// runtime runs the kernel above otherwise.
extern __shared__ __attribute__((aligned(16))) unsigned short greta_f16_dyn[];

template <int N>
__device__ inline void greta_cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

template <int BM, int BN, int STAGES>
__device__ __forceinline__ void greta_gemm_f16_tiles(const unsigned short* __restrict__ ab,
                                                     const unsigned short* __restrict__ bb, float* __restrict__ c,
                                                     uint32_t m, uint32_t n, uint32_t k) {
    constexpr int BK = 32;      // F16_BK in tune.rs
    constexpr int AP = BK + 8;  // A row pitch in halves (F16_PAD)
    constexpr int BP = BN + 8;  // B row pitch (k-major, as above)
    constexpr int A_STAGE = BM * AP, B_STAGE = BK * BP;
    constexpr int WARPS_N = BN / 64;
    constexpr int THREADS = 32 * (BM / 64) * WARPS_N;
    constexpr int A_CHUNKS = BM * BK / 8 / THREADS, B_CHUNKS = BK * BN / 8 / THREADS;
    constexpr int FM = 64 / GRETA_MMA_SYNC_M, FN = 64 / GRETA_MMA_SYNC_N;
    static_assert(A_CHUNKS * THREADS * 8 == BM * BK && B_CHUNKS * THREADS * 8 == BK * BN, "whole chunks");
    static_assert(STAGES >= 2 && FN % 2 == 0, "pipeline and B fragment pairs");
    unsigned short* as = greta_f16_dyn;
    unsigned short* bs = greta_f16_dyn + STAGES * A_STAGE;
    const uint32_t t = threadIdx.x, wave = t / 32, lane = t % 32;
    const uint32_t wr = (wave / WARPS_N) * 64, wc = (wave % WARPS_N) * 64;
    // Block (bx, by) from the launch order, 8 block rows per group.
    const uint32_t gx = gridDim.x, gy = gridDim.y;
    const uint32_t pid = blockIdx.y * gx + blockIdx.x;
    const uint32_t per_group = 8 * gx;
    const uint32_t first = (pid / per_group) * 8;
    const uint32_t rows = (gy - first) < 8u ? (gy - first) : 8u;
    const uint32_t in_group = pid % per_group;
    const uint32_t bm0 = (first + in_group % rows) * BM, bn0 = (in_group / rows) * BN;

    float acc[FM][FN][4];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

    const uint32_t steps = (k + BK - 1) / BK;
    // Tile kt of A and B into stage s; one commit group per call, empty
    // past the last tile, so wait_group counts the same on every step.
#define GRETA_F16_TILE(kt, s)                                                                           \
    if ((kt) < steps) {                                                                                 \
        _Pragma("unroll") for (int i = 0; i < A_CHUNKS; ++i) {                                          \
            const uint32_t q = t + i * THREADS, r = q / (BK / 8), cc = (q % (BK / 8)) * 8;              \
            const uint32_t ar = bm0 + r, ac = (kt) * BK + cc;                                           \
            const bool in = ar < m && ac < k;                                                           \
            greta_cp16(as + (s) * A_STAGE + r * AP + cc, in ? ab + (greta_u64)ar * k + ac : ab, in);    \
        }                                                                                               \
        _Pragma("unroll") for (int i = 0; i < B_CHUNKS; ++i) {                                          \
            const uint32_t q = t + i * THREADS, r = q / (BN / 8), cc = (q % (BN / 8)) * 8;              \
            const uint32_t br = (kt) * BK + r, bc = bn0 + cc;                                           \
            const bool in = br < k && bc < n;                                                           \
            greta_cp16(bs + (s) * B_STAGE + r * BP + cc, in ? bb + (greta_u64)br * n + bc : bb, in);    \
        }                                                                                               \
    }                                                                                                   \
    greta_cp_commit();
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        GRETA_F16_TILE((uint32_t)s, s)
    }
    for (uint32_t kt = 0; kt < steps; ++kt) {
        // Tile kt has landed (this thread's copies), then the barrier: every
        // thread's copies, and every thread is done with step kt - 1's
        // stage, which the tile STAGES - 1 ahead now refills.
        greta_cp_wait<STAGES - 2>();
        __syncthreads();
        {
            const uint32_t nk = kt + STAGES - 1;
            GRETA_F16_TILE(nk, nk % STAGES)
        }
        const unsigned short* a_s = as + (kt % STAGES) * A_STAGE;
        const unsigned short* b_s = bs + (kt % STAGES) * B_STAGE;
        uint32_t af[BK / 16][FM][4];
        uint32_t bf[BK / 16][FN][2];
#pragma unroll
        for (int h = 0; h < BK / 16; ++h) {
            const int kk = h * 16;
#pragma unroll
            for (int i = 0; i < FM; ++i)
                greta_ldsm4(af[h][i], a_s + (wr + i * 16 + lane % 16) * AP + kk + (lane / 16) * 8);
#pragma unroll
            for (int j = 0; j < FN; j += 2) {
                uint32_t r4[4];
                greta_ldsm4_trans(r4, b_s + (kk + lane % 16) * BP + wc + j * 8 + (lane / 16) * 8);
                bf[h][j][0] = r4[0];
                bf[h][j][1] = r4[1];
                bf[h][j + 1][0] = r4[2];
                bf[h][j + 1][1] = r4[3];
            }
        }
#pragma unroll
        for (int h = 0; h < BK / 16; ++h)
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) greta_mx_step(acc[i][j], af[h][i], bf[h][j]);
    }
#undef GRETA_F16_TILE
    greta_cp_wait<0>();
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const uint32_t row = bm0 + wr + i * GRETA_MMA_SYNC_M + GRETA_MMA_SYNC_C_ROW(lane, r);
                const uint32_t col = bn0 + wc + j * GRETA_MMA_SYNC_N + GRETA_MMA_SYNC_C_COL(lane, r);
                if (row < m && col < n) c[(greta_u64)row * n + col] = acc[i][j][r];
            }
}

// One kernel per (BM, BN, STAGES): greta_gemm_f16_bm<BM>_bn<BN>_s<STAGES>,
// the arguments of greta_gemm_f16.
#define GRETA_F16_VARIANT(BM_, BN_, S_)                                                                  \
    extern "C" __global__ void __launch_bounds__(32 * (BM_ / 64) * (BN_ / 64))                          \
        greta_gemm_f16_bm##BM_##_bn##BN_##_s##S_(const greta_f16* __restrict__ a,                        \
                                                 const greta_f16* __restrict__ b, float* __restrict__ c, \
                                                 uint32_t m, uint32_t n, uint32_t k) {                   \
        greta_gemm_f16_tiles<BM_, BN_, S_>((const unsigned short*)a, (const unsigned short*)b, c, m, n, k); \
    }
GRETA_F16_VARIANT(128, 128, 3)
GRETA_F16_VARIANT(128, 128, 4)
GRETA_F16_VARIANT(128, 256, 3)
GRETA_F16_VARIANT(256, 128, 3)
GRETA_F16_VARIANT(128, 256, 4)
#undef GRETA_F16_VARIANT
#endif

#if defined(GRETA_HOPPER)
// The Hopper kernels (hopper_gemm.h; compiled for sm_90a only): B is [k][n],
// read N-major by wgmma. One kernel per (BN, STAGES):
// greta_gemm_f16_wgmma_bn<BN>_s<STAGES>, the arguments of greta_gemm_f16
// with the tensor maps of A and B (built by the runtime from a and b)
// before the shape. tune.rs (HOPPER_VARIANTS) lists the same.
#define GRETA_HOP_F16_VARIANT(BN_, S_)                                                                          \
    extern "C" __global__ void __launch_bounds__(GRETA_HOP_THREADS, 1) greta_gemm_f16_wgmma_bn##BN_##_s##S_(  \
        const greta_f16* __restrict__ a, const greta_f16* __restrict__ b, float* __restrict__ c,                \
        const __grid_constant__ greta_tmap ta, const __grid_constant__ greta_tmap tb, uint32_t m, uint32_t n,   \
        uint32_t k) {                                                                                           \
        greta_hop_gemm<BN_, S_, true, false>(&ta, &tb, c, m, n, k);                                             \
    }
GRETA_HOP_F16_VARIANT(256, 4)
GRETA_HOP_F16_VARIANT(128, 6)
#undef GRETA_HOP_F16_VARIANT
#endif
