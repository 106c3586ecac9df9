// attn_prefill_f16: causal attention of `tokens` queries (positions
// pos0 + t) over an f16 KV cache ([max_seq][heads][head_dim]), flash-
// attention style (online softmax over key tiles: running max m and sum l
// per row, the output rescaled by exp(m_old - m_new) when the max grows),
// f32 softmax and accumulation, the output rounded once to f16.
//
// Block (h, qb), GRETA_PRE_THREADS = 128 threads, owns GRETA_PRE_BQ = 64
// query rows of head h (query blocks in reverse order: the longest first). Two ways to compute it, chosen per target at
// compile time and per head_dim at run time:
//
// NVIDIA sm_80+, head_dim 64 or 128: tensor cores (mma.sync m16n8k16, f16
// in, f32 accumulate; lane layouts as gemm_f16.hip, matrix_lanes.rs
// MMA_SYNC). Each warp owns 16 query rows: its Q fragments are loaded once
// (ldmatrix) and held in registers; tiles of 32 keys of K and V go global
// -> shared by cp.async in two stages (the next tile is in flight while
// this one is multiplied, gemm_f16.hip's pattern), S stays in registers (the C fragment of two n8 tiles
// is the A fragment of P for P V, after rounding P to f16), and O
// (16 x head_dim per warp) stays in registers for the whole walk. Scores
// are scaled by log2(e)/sqrt(head_dim) so the softmax uses exp2.
//
// CDNA (gfx90a, gfx94x, gfx950), head_dim 64 or 128: v_mfma_f32_16x16x16f16
// (matrix_lanes.rs MFMA16's layouts, ATTN_MFMA16's tiling). The block's two
// waves of 64 own 32 query rows each; the queries run along n of both
// products: S^T = K Q^T (A = K from shared memory, B = Q^T held in
// registers for the whole walk), then O^T = V^T P^T, whose B operand
// (P^T: key k, query j in lane 16 floor(k/4) + j, element k % 4) is the
// accumulator layout of S^T element for element, so P goes from the
// softmax to the next MFMA in registers, and each lane's query is one
// column of both accumulators (its running max, sum and rescale are its
// own, shared with the three lanes 16 apart). One shared stage of 32 keys
// (K key-major, V transposed so V^T's A operand is one 8-byte read), the
// next tile loaded into registers while this one is multiplied and a
// second barrier before the next store (gemm_f16.hip's CDNA schedule):
// 17,664 bytes at head_dim 128 where two stages of the tensor-core tiles
// took 34,816 and left one block, one wave per SIMD, on a 64 KiB compute
// unit. attn_mfma_model.rs runs this path on the CPU against the op's
// reference and checks its barrier schedule for races.
//
// Everywhere else: f32 FMAs over shared tiles, the GLSL twin's algorithm
// (attn_prefill_f16.comp) on 32 rows at a time, twice per block.
#include "common.h"

#define GRETA_PRE_THREADS 128
#define GRETA_PRE_BQ 64
#if defined(GRETA_HIP) && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
                           defined(__gfx942__) || defined(__gfx950__))
#define GRETA_PRE_MFMA 1
#endif
#if defined(GRETA_PRE_MFMA)
// Shared memory, in 32-bit words, the larger of the MFMA path's tiles and
// the f32 FMA path's (16 keys per tile here), both at head_dim 128: under
// 21,845 bytes, three blocks (two waves per SIMD) per 64 KiB compute unit.
#define GRETA_PRE_FBK 16
#define GRETA_PRE_MF_KP(hd) ((hd) + 4)                 // K row pitch, halves
#define GRETA_PRE_MF_VP (GRETA_ATTN_MFMA16_KEYS + 4)  // V^T row pitch, halves
#define GRETA_PRE_MF_WORDS(hd) ((GRETA_ATTN_MFMA16_KEYS * GRETA_PRE_MF_KP(hd) + (hd) * GRETA_PRE_MF_VP) / 2)
#define GRETA_PRE_FMA_WORDS(hd) \
    ((32 + 2 * GRETA_PRE_FBK) * (hd) / 2 + 32 * (GRETA_PRE_FBK + 1) + 3 * 32)
#define GRETA_PRE_SMEM_WORDS \
    (GRETA_PRE_MF_WORDS(128) > GRETA_PRE_FMA_WORDS(128) ? GRETA_PRE_MF_WORDS(128) : GRETA_PRE_FMA_WORDS(128))
#else
// Shared memory of either path, in 32-bit words: the tensor-core path's two
// stages of K and V tiles (32 keys of 128 + 8 halves each) are the larger.
#define GRETA_PRE_PITCH (128 + 8)
#define GRETA_PRE_MMA_BK 32
#define GRETA_PRE_SMEM_WORDS (2 * 2 * GRETA_PRE_MMA_BK * GRETA_PRE_PITCH / 2)
#define GRETA_PRE_FBK 32
#endif

#if defined(GRETA_CUDA)
__device__ inline uint32_t greta_pre_pack(float a, float b) {
    unsigned short x, y;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(a));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(y) : "f"(b));
    return (uint32_t)x | ((uint32_t)y << 16);
}
#else
__device__ inline uint32_t greta_pre_pack(float a, float b) {
    return (uint32_t)__builtin_bit_cast(unsigned short, (_Float16)a) |
           ((uint32_t)__builtin_bit_cast(unsigned short, (_Float16)b) << 16);
}
#endif
__device__ inline uint32_t greta_pre_min(uint32_t a, uint32_t b) { return a < b ? a : b; }
__device__ inline float greta_pre_lo(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w & 0xffffu)); }
__device__ inline float greta_pre_hi(uint32_t w) { return greta_f16_bits_to_f32((unsigned short)(w >> 16)); }

// ---- f32 FMA path (32 query rows per call) -------------------------------
#define GRETA_PRE_FBQ 32
// Keys per tile: GRETA_PRE_FBK (above); each thread scores 2 rows x
// GRETA_PRE_FSJ keys, 8 apart.
#define GRETA_PRE_FSJ (GRETA_PRE_FBK / 8)
#define GRETA_PRE_MAX_NW 16  // head_dim <= 128: words per thread in P V

__device__ inline void greta_pre_fma(uint32_t* smem, const uint32_t* __restrict__ q, const uint32_t* __restrict__ k,
                                     const uint32_t* __restrict__ v, uint32_t* __restrict__ o, uint32_t tokens,
                                     uint32_t heads, uint32_t hd, uint32_t pos0, uint32_t q0, uint32_t h) {
    const uint32_t HW = hd / 2, NW = hd / 8;
    uint32_t* qs = smem;
    uint32_t* ks = qs + GRETA_PRE_FBQ * HW;
    uint32_t* vs = ks + GRETA_PRE_FBK * HW;
    float* ss = (float*)(vs + GRETA_PRE_FBK * HW);
    float* row_m = ss + GRETA_PRE_FBQ * (GRETA_PRE_FBK + 1);
    float* row_l = row_m + GRETA_PRE_FBQ;
    float* row_a = row_l + GRETA_PRE_FBQ;
    const uint32_t t = threadIdx.x;
    const greta_u64 d2 = (greta_u64)heads * HW;
    const float scale = 1.0f / sqrtf((float)hd);
    __syncthreads();  // a previous call's readers are done with smem
    for (uint32_t i = t; i < GRETA_PRE_FBQ * HW; i += GRETA_PRE_THREADS) {
        const uint32_t rr = i / HW, w = i % HW;
        qs[i] = (q0 + rr < tokens) ? q[(greta_u64)(q0 + rr) * d2 + h * HW + w] : 0u;
    }
    if (t < GRETA_PRE_FBQ) {
        row_m[t] = -INFINITY;
        row_l[t] = 0.0f;
    }
    float acc[2 * GRETA_PRE_MAX_NW];
#pragma unroll
    for (int i = 0; i < 2 * GRETA_PRE_MAX_NW; ++i) acc[i] = 0.0f;
    const uint32_t last = greta_pre_min(q0 + GRETA_PRE_FBQ, tokens) - 1;
    const uint32_t nkeys = pos0 + last + 1;
    const uint32_t sr = 2 * (t / 8), sk = t % 8;
    const uint32_t orow = t / 4, ow = t % 4;
    for (uint32_t k0 = 0; k0 < nkeys; k0 += GRETA_PRE_FBK) {
        __syncthreads();
        for (uint32_t i = t; i < GRETA_PRE_FBK * HW; i += GRETA_PRE_THREADS) {
            const uint32_t rr = i / HW, w = i % HW;
            const bool in = k0 + rr < nkeys;
            const greta_u64 at = (greta_u64)(k0 + rr) * d2 + h * HW + w;
            ks[i] = in ? k[at] : 0u;
            vs[i] = in ? v[at] : 0u;
        }
        __syncthreads();
        float s[2][GRETA_PRE_FSJ];
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
            for (int j = 0; j < GRETA_PRE_FSJ; ++j) s[a][j] = 0.0f;
        for (uint32_t w = 0; w < HW; ++w) {
            const uint32_t qa = qs[sr * HW + w], qc = qs[(sr + 1) * HW + w];
            const float qa0 = greta_pre_lo(qa), qa1 = greta_pre_hi(qa), qc0 = greta_pre_lo(qc), qc1 = greta_pre_hi(qc);
#pragma unroll
            for (int j = 0; j < GRETA_PRE_FSJ; ++j) {
                const uint32_t kw = ks[(sk + 8 * j) * HW + w];
                const float k0f = greta_pre_lo(kw), k1f = greta_pre_hi(kw);
                s[0][j] = fmaf(qa0, k0f, fmaf(qa1, k1f, s[0][j]));
                s[1][j] = fmaf(qc0, k0f, fmaf(qc1, k1f, s[1][j]));
            }
        }
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
            for (int j = 0; j < GRETA_PRE_FSJ; ++j) ss[(sr + a) * (GRETA_PRE_FBK + 1) + sk + 8 * j] = s[a][j] * scale;
        __syncthreads();
        if (t < GRETA_PRE_FBQ) {
            const uint32_t qpos = pos0 + q0 + t;
            const float m_old = row_m[t];
            float mx = m_old;
            float* row = ss + t * (GRETA_PRE_FBK + 1);
            for (uint32_t c = 0; c < GRETA_PRE_FBK; ++c) {
                const uint32_t kpos = k0 + c;
                const float x = (kpos <= qpos && kpos < nkeys) ? row[c] : -INFINITY;
                row[c] = x;
                mx = fmaxf(mx, x);
            }
            // Every row sees key 0 in the first tile: mx is finite.
            const float alpha = (m_old == -INFINITY) ? 0.0f : expf(m_old - mx);
            float l = row_l[t] * alpha;
            for (uint32_t c = 0; c < GRETA_PRE_FBK; ++c) {
                const float e = (row[c] == -INFINITY) ? 0.0f : expf(row[c] - mx);
                row[c] = e;
                l += e;
            }
            row_m[t] = mx;
            row_l[t] = l;
            row_a[t] = alpha;
        }
        __syncthreads();
        const float alpha = row_a[orow];
#pragma unroll
        for (int i = 0; i < 2 * GRETA_PRE_MAX_NW; ++i) acc[i] *= alpha;
        for (uint32_t c = 0; c < GRETA_PRE_FBK; ++c) {
            const float pc = ss[orow * (GRETA_PRE_FBK + 1) + c];
#pragma unroll
            for (uint32_t i = 0; i < GRETA_PRE_MAX_NW; ++i) {
                if (i < NW) {
                    const uint32_t vw = vs[c * HW + ow + 4 * i];
                    acc[2 * i] = fmaf(pc, greta_pre_lo(vw), acc[2 * i]);
                    acc[2 * i + 1] = fmaf(pc, greta_pre_hi(vw), acc[2 * i + 1]);
                }
            }
        }
    }
    const uint32_t row = q0 + orow;
    if (row < tokens) {
        const float inv = 1.0f / row_l[orow];
#pragma unroll
        for (uint32_t i = 0; i < GRETA_PRE_MAX_NW; ++i) {
            if (i < NW) o[(greta_u64)row * d2 + h * HW + ow + 4 * i] = greta_pre_pack(acc[2 * i] * inv, acc[2 * i + 1] * inv);
        }
    }
}

// ---- tensor-core path (NVIDIA sm_80+) -------------------------------------
#if defined(GRETA_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GRETA_PRE_MMA 1
__device__ inline uint32_t greta_pre_smem(const void* p) {
    uint32_t a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
__device__ inline void greta_pre_ldsm4(uint32_t* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(greta_pre_smem(p)));
}
__device__ inline void greta_pre_ldsm4_trans(uint32_t* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(greta_pre_smem(p)));
}
__device__ inline void greta_pre_cp16(void* dst, const void* src, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(greta_pre_smem(dst)), "l"(src), "r"(in ? 16 : 0));
}
__device__ inline void greta_pre_commit() { asm volatile("cp.async.commit_group;"); }
__device__ inline void greta_pre_wait1() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ inline void greta_pre_wait0() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ inline void greta_pre_mma(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two f32 -> one register of two f16 (a in the low half), rounded to nearest.
__device__ inline uint32_t greta_pre_h2(float a, float b) {
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
}

template <int HD>
__device__ inline void greta_pre_mma_path(unsigned short* smem, const unsigned short* __restrict__ q,
                                          const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
                                          uint32_t* __restrict__ o, uint32_t tokens, uint32_t heads, uint32_t pos0,
                                          uint32_t q0, uint32_t h) {
    constexpr int P = HD + 8;   // row pitch in halves: ldmatrix rows fall in distinct banks
    constexpr int KC = HD / 16; // k16 steps of Q K^T
    constexpr int NT = HD / 8;  // n8 tiles of O
    constexpr int CH = HD / 8;  // 16-byte chunks per row
    constexpr int BK = GRETA_PRE_MMA_BK;  // keys per tile
    // Two stages of K and V tiles: [stage][key][P]; Q is staged through
    // the K tiles of both stages (64 rows) before the walk.
    unsigned short(*ks)[BK][P] = (unsigned short(*)[BK][P])smem;
    unsigned short(*vs)[BK][P] = (unsigned short(*)[BK][P])(smem + 2 * BK * P);
    unsigned short(*qs)[P] = (unsigned short(*)[P])smem;
    const uint32_t t = threadIdx.x, lane = t % 32, warp = t / 32;
    const greta_u64 d = (greta_u64)heads * HD;
    const float sl2 = 1.4426950408889634f / sqrtf((float)HD);

    for (uint32_t i = t; i < 64 * CH; i += GRETA_PRE_THREADS) {
        const uint32_t rr = i / CH, c = (i % CH) * 8;
        const bool in = q0 + rr < tokens;
        greta_pre_cp16(&qs[rr][c], in ? q + (greta_u64)(q0 + rr) * d + h * HD + c : q, in);
    }
    greta_pre_commit();
    greta_pre_wait0();
    __syncthreads();
    uint32_t qf[KC][4];
#pragma unroll
    for (int kk = 0; kk < KC; ++kk) greta_pre_ldsm4(qf[kk], &qs[warp * 16 + lane % 16][kk * 16 + (lane / 16) * 8]);
    __syncthreads();  // every warp holds its Q: the stages may be refilled

    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    const uint32_t row0 = q0 + warp * 16 + lane / 4;  // this lane's rows: row0, row0 + 8
    const uint32_t qpos[2] = {pos0 + row0, pos0 + row0 + 8};
    const uint32_t last = greta_pre_min(q0 + 64, tokens) - 1;
    const uint32_t nkeys = pos0 + last + 1;
    const uint32_t steps = (nkeys + BK - 1) / BK;
    // The block's warps see different key ranges; a warp whose rows end
    // before a tile skips its math but still joins the barriers.
    const uint32_t warp_last = pos0 + greta_pre_min(q0 + warp * 16 + 15, tokens - 1);
    // Tile kt (keys kt*BK..) into stage b: K and V rows, zero past nkeys.
#define GRETA_PRE_ISSUE(kt, b)                                                                     \
    for (uint32_t i = t; i < BK * CH; i += GRETA_PRE_THREADS) {                                    \
        const uint32_t rr = i / CH, c = (i % CH) * 8, key = (kt) * BK + rr;                        \
        const bool in = key < nkeys;                                                               \
        const greta_u64 at = (greta_u64)key * d + h * HD + c;                                      \
        greta_pre_cp16(&ks[b][rr][c], in ? k + at : k, in);                                        \
        greta_pre_cp16(&vs[b][rr][c], in ? v + at : v, in);                                        \
    }                                                                                              \
    greta_pre_commit();
    GRETA_PRE_ISSUE(0, 0)
    for (uint32_t kt = 0; kt < steps; ++kt) {
        const uint32_t b = kt & 1, k0 = kt * BK;
        greta_pre_wait0();
        // Tile kt is in stage b for every thread, and every warp is done
        // with the other stage (tile kt - 1): refill it with tile kt + 1,
        // in flight while this one is multiplied (gemm_f16.hip's pattern).
        __syncthreads();
        if (kt + 1 < steps) {
            GRETA_PRE_ISSUE(kt + 1, b ^ 1)
        }
        if (k0 > warp_last) continue;  // every key of the tile is in this warp's future
        float s[BK / 8][4];
#pragma unroll
        for (int j = 0; j < BK / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KC; ++kk) {
#pragma unroll
            for (int j = 0; j < BK / 8; j += 2) {
                uint32_t r[4];
                greta_pre_ldsm4(r, &ks[b][j * 8 + (lane / 16) * 8 + lane % 8][kk * 16 + ((lane / 8) & 1) * 8]);
                greta_pre_mma(s[j], qf[kk], r[0], r[1]);
                greta_pre_mma(s[j + 1], qf[kk], r[2], r[3]);
            }
        }
        // Mask, scale (to log2 units), row max over the 4 lanes of a row.
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int j = 0; j < BK / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const uint32_t key = k0 + j * 8 + 2 * (lane % 4) + (e & 1);
                const int rh = e >> 1;
                const float x = (key <= qpos[rh] && key < nkeys) ? s[j][e] * sl2 : -INFINITY;
                s[j][e] = x;
                mx[rh] = fmaxf(mx[rh], x);
            }
#pragma unroll
        for (int rh = 0; rh < 2; ++rh) {
            mx[rh] = fmaxf(mx[rh], __shfl_xor_sync(0xffffffffu, mx[rh], 1));
            mx[rh] = fmaxf(mx[rh], __shfl_xor_sync(0xffffffffu, mx[rh], 2));
        }
        float alpha[2];
#pragma unroll
        for (int rh = 0; rh < 2; ++rh) {
            // Every row sees key 0 in the first tile: mx is finite.
            alpha[rh] = (m[rh] == -INFINITY) ? 0.0f : exp2f(m[rh] - mx[rh]);
            m[rh] = mx[rh];
            l[rh] *= alpha[rh];
        }
#pragma unroll
        for (int j = 0; j < BK / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int rh = e >> 1;
                const float pe = (s[j][e] == -INFINITY) ? 0.0f : exp2f(s[j][e] - m[rh]);
                s[j][e] = pe;
                l[rh] += pe;  // this lane's part; the 4 lanes of a row add up at the end
            }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            acc[j][0] *= alpha[0];
            acc[j][1] *= alpha[0];
            acc[j][2] *= alpha[1];
            acc[j][3] *= alpha[1];
        }
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t a[4];
            a[0] = greta_pre_h2(s[2 * kk][0], s[2 * kk][1]);
            a[1] = greta_pre_h2(s[2 * kk][2], s[2 * kk][3]);
            a[2] = greta_pre_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            a[3] = greta_pre_h2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int j = 0; j < NT; j += 2) {
                uint32_t r[4];
                greta_pre_ldsm4_trans(r, &vs[b][kk * 16 + lane % 16][j * 8 + (lane / 16) * 8]);
                greta_pre_mma(acc[j], a, r[0], r[1]);
                greta_pre_mma(acc[j + 1], a, r[2], r[3]);
            }
        }
    }
#undef GRETA_PRE_ISSUE
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
        l[rh] += __shfl_xor_sync(0xffffffffu, l[rh], 1);
        l[rh] += __shfl_xor_sync(0xffffffffu, l[rh], 2);
    }
    const uint32_t HW = HD / 2;
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
        const uint32_t row = row0 + 8 * rh;
        if (row < tokens) {
            const float inv = 1.0f / l[rh];
#pragma unroll
            for (int j = 0; j < NT; ++j)
                o[(greta_u64)row * heads * HW + h * HW + j * 4 + lane % 4] =
                    greta_pre_pack(acc[j][2 * rh] * inv, acc[j][2 * rh + 1] * inv);
        }
    }
}
#endif

// ---- MFMA path (CDNA) -----------------------------------------------------
#if defined(GRETA_PRE_MFMA)
#define GRETA_PRE_MX(x) GRETA_MFMA16_##x
#if GRETA_ATTN_MFMA16_THREADS != GRETA_PRE_THREADS || \
    GRETA_ATTN_MFMA16_QUERIES * GRETA_PRE_THREADS / GRETA_MFMA16_WAVE != GRETA_PRE_BQ
#error "attn_prefill_f16: ATTN_MFMA16's waves must cover the block's query rows"
#endif
typedef _Float16 greta_pre_h4 __attribute__((ext_vector_type(4)));
typedef unsigned int greta_pre_w2 __attribute__((ext_vector_type(2)));
typedef float greta_pre_acc __attribute__((ext_vector_type(4)));
// d + a b on one 16 x 16 x 16 tile; a, b: two registers of two halves.
__device__ inline greta_pre_acc greta_pre_mfma(const uint32_t* a, const uint32_t* b, greta_pre_acc d) {
    greta_pre_w2 wa, wb;
    wa.x = a[0];
    wa.y = a[1];
    wb.x = b[0];
    wb.y = b[1];
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(greta_pre_h4, wa), __builtin_bit_cast(greta_pre_h4, wb),
                                                 d, 0, 0, 0);
}

template <int HD>
__device__ inline void greta_pre_mfma_path(uint32_t* smem, const uint32_t* __restrict__ q, const uint32_t* __restrict__ k,
                                           const uint32_t* __restrict__ v, uint32_t* __restrict__ o, uint32_t tokens,
                                           uint32_t heads, uint32_t pos0, uint32_t q0, uint32_t h) {
    constexpr int BK = GRETA_ATTN_MFMA16_KEYS;    // keys per tile
    constexpr int QW = GRETA_ATTN_MFMA16_QUERIES;  // query rows per wave
    constexpr int QT = QW / GRETA_PRE_MX(N);       // their n tiles
    constexpr int KT = BK / GRETA_PRE_MX(M);       // m tiles of keys in S^T, k steps in O^T
    constexpr int DT = HD / GRETA_PRE_MX(K);       // k steps of S^T, m tiles of dims in O^T
    constexpr int KP = GRETA_PRE_MF_KP(HD), VP = GRETA_PRE_MF_VP;
    constexpr int CH = HD / 8;  // 16-byte chunks per row
    constexpr int LOADS = BK * CH / GRETA_PRE_THREADS;
    static_assert(LOADS * GRETA_PRE_THREADS == BK * CH, "whole chunks of K and V per thread");
    static_assert(GRETA_PRE_MF_WORDS(HD) <= GRETA_PRE_SMEM_WORDS, "the tiles fit the block's shared memory");
    static_assert(GRETA_PRE_MX(M) == GRETA_PRE_MX(K) && HD % GRETA_PRE_MX(K) == 0, "square tiles along head_dim");
    unsigned short* ks = (unsigned short*)smem;  // [BK][KP]
    unsigned short* vt = ks + BK * KP;           // [HD][VP]: V transposed
    const uint32_t t = threadIdx.x, lane = t % GRETA_PRE_MX(WAVE), wave = t / GRETA_PRE_MX(WAVE);
    const uint32_t HW = HD / 2;
    const greta_u64 d2 = (greta_u64)heads * HW;  // 32-bit words per token of q, k, v, o
    const float sl2 = 1.4426950408889634f / sqrtf((float)HD);
    const uint32_t wq0 = q0 + wave * QW;  // this wave's first query row

    // Q^T as B operands for the whole walk (query rows past the end zero).
    uint32_t qf[QT][DT][2];
#pragma unroll
    for (int qt = 0; qt < QT; ++qt)
#pragma unroll
        for (int kk = 0; kk < DT; ++kk)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const uint32_t row = wq0 + qt * GRETA_PRE_MX(N) + GRETA_PRE_MX(B_COL)(lane, 2 * e);
                const uint32_t dim = kk * GRETA_PRE_MX(K) + GRETA_PRE_MX(B_K)(lane, 2 * e);
                qf[qt][kk][e] = row < tokens ? q[(greta_u64)row * d2 + h * HW + dim / 2] : 0u;
            }
    greta_pre_acc acc[QT][DT];
#pragma unroll
    for (int qt = 0; qt < QT; ++qt)
#pragma unroll
        for (int j = 0; j < DT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[qt][j][r] = 0.0f;
    float m[QT], l[QT];
    uint32_t qpos[QT];  // each lane's query position in n tile qt (one column of S^T and O^T)
#pragma unroll
    for (int qt = 0; qt < QT; ++qt) {
        m[qt] = -INFINITY;
        l[qt] = 0.0f;
        qpos[qt] = pos0 + wq0 + qt * GRETA_PRE_MX(N) + GRETA_PRE_MX(C_COL)(lane, 0);
    }
    const uint32_t last = greta_pre_min(q0 + GRETA_PRE_BQ, tokens) - 1;
    const uint32_t nkeys = pos0 + last + 1;
    const uint32_t steps = (nkeys + BK - 1) / BK;
    // A wave whose rows end before a tile skips its math but joins the barriers.
    const uint32_t wave_last = pos0 + greta_pre_min(wq0 + QW - 1, tokens - 1);

    // Chunk i of tile kt into registers: K row-major (consecutive lanes
    // along a row), V with consecutive lanes on consecutive keys, so that
    // the transposed 16-bit stores of a wave hit consecutive halves.
    greta_u4 rk[LOADS], rv[LOADS];
#define GRETA_PRE_MF_LOAD(kt)                                                                  \
    _Pragma("unroll") for (int i = 0; i < LOADS; ++i) {                                        \
        const uint32_t c = t + i * GRETA_PRE_THREADS;                                          \
        const uint32_t kr = (kt) * BK + c / CH, vr = (kt) * BK + c % BK;                       \
        const greta_u4 zero = {0u, 0u, 0u, 0u};                                                \
        rk[i] = kr < nkeys ? *(const greta_u4*)(k + (greta_u64)kr * d2 + h * HW + (c % CH) * 4) : zero; \
        rv[i] = vr < nkeys ? *(const greta_u4*)(v + (greta_u64)vr * d2 + h * HW + (c / BK) * 4) : zero; \
    }
    GRETA_PRE_MF_LOAD(0)
    for (uint32_t kt = 0; kt < steps; ++kt) {
        const uint32_t k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < LOADS; ++i) {
            const uint32_t c = t + i * GRETA_PRE_THREADS;
            greta_pre_w2* kd = (greta_pre_w2*)(ks + (c / CH) * KP + (c % CH) * 8);
            kd[0] = greta_pre_w2{rk[i].x, rk[i].y};
            kd[1] = greta_pre_w2{rk[i].z, rk[i].w};
            const uint32_t key = c % BK, dim = (c / BK) * 8;
            const uint32_t w[4] = {rv[i].x, rv[i].y, rv[i].z, rv[i].w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                vt[(dim + 2 * j) * VP + key] = (unsigned short)(w[j] & 0xffffu);
                vt[(dim + 2 * j + 1) * VP + key] = (unsigned short)(w[j] >> 16);
            }
        }
        __syncthreads();  // tile kt is in shared memory for every wave
        if (kt + 1 < steps) {
            GRETA_PRE_MF_LOAD(kt + 1)  // in flight while tile kt is multiplied
        }
        if (k0 <= wave_last) {
            // S^T = K Q^T: KT x QT tiles of 16 keys x 16 queries.
            greta_pre_acc s[KT][QT];
#pragma unroll
            for (int j = 0; j < KT; ++j)
#pragma unroll
                for (int qt = 0; qt < QT; ++qt)
#pragma unroll
                    for (int r = 0; r < 4; ++r) s[j][qt][r] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < DT; ++kk)
#pragma unroll
                for (int j = 0; j < KT; ++j) {
                    uint32_t a[2];
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        a[e] = *(const uint32_t*)&ks[(j * GRETA_PRE_MX(M) + GRETA_PRE_MX(A_ROW)(lane, 2 * e)) * KP +
                                                     kk * GRETA_PRE_MX(K) + GRETA_PRE_MX(A_K)(lane, 2 * e)];
#pragma unroll
                    for (int qt = 0; qt < QT; ++qt) s[j][qt] = greta_pre_mfma(a, qf[qt][kk], s[j][qt]);
                }
            // Mask, scale (to log2 units), online softmax per query column.
            uint32_t p[KT][QT][2];
#pragma unroll
            for (int qt = 0; qt < QT; ++qt) {
                float mx = m[qt];
#pragma unroll
                for (int j = 0; j < KT; ++j)
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        const uint32_t key = k0 + j * GRETA_PRE_MX(M) + GRETA_PRE_MX(C_ROW)(lane, r);
                        const float x = (key <= qpos[qt] && key < nkeys) ? s[j][qt][r] * sl2 : -INFINITY;
                        s[j][qt][r] = x;
                        mx = fmaxf(mx, x);
                    }
                // The column's other keys are in the lanes 16 and 32 apart.
                mx = fmaxf(mx, greta_shfl_xor(mx, 16));
                mx = fmaxf(mx, greta_shfl_xor(mx, 32));
                // Every row sees key 0 in the first tile: mx is finite.
                const float alpha = (m[qt] == -INFINITY) ? 0.0f : exp2f(m[qt] - mx);
                m[qt] = mx;
                l[qt] *= alpha;
#pragma unroll
                for (int j = 0; j < KT; ++j) {
                    float pe[4];
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        pe[r] = (s[j][qt][r] == -INFINITY) ? 0.0f : exp2f(s[j][qt][r] - mx);
                        l[qt] += pe[r];  // this lane's part; the column's 4 lanes add up at the end
                    }
                    // S^T's accumulator element r is P^T's B element r.
                    p[j][qt][0] = greta_pre_pack(pe[0], pe[1]);
                    p[j][qt][1] = greta_pre_pack(pe[2], pe[3]);
                }
#pragma unroll
                for (int j = 0; j < DT; ++j) acc[qt][j] *= alpha;
            }
            // O^T += V^T P^T: DT x QT tiles of 16 dims x 16 queries, KT k steps.
#pragma unroll
            for (int kk = 0; kk < KT; ++kk)
#pragma unroll
                for (int j = 0; j < DT; ++j) {
                    uint32_t a[2];
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        a[e] = *(const uint32_t*)&vt[(j * GRETA_PRE_MX(M) + GRETA_PRE_MX(A_ROW)(lane, 2 * e)) * VP +
                                                     kk * GRETA_PRE_MX(K) + GRETA_PRE_MX(A_K)(lane, 2 * e)];
#pragma unroll
                    for (int qt = 0; qt < QT; ++qt) acc[qt][j] = greta_pre_mfma(a, p[kk][qt], acc[qt][j]);
                }
        }
        __syncthreads();  // every wave is done with tile kt: the next store may begin
    }
#undef GRETA_PRE_MF_LOAD
#pragma unroll
    for (int qt = 0; qt < QT; ++qt) {
        l[qt] += greta_shfl_xor(l[qt], 16);
        l[qt] += greta_shfl_xor(l[qt], 32);
        const uint32_t row = wq0 + qt * GRETA_PRE_MX(N) + GRETA_PRE_MX(C_COL)(lane, 0);
        if (row < tokens) {
            const float inv = 1.0f / l[qt];
#pragma unroll
            for (int j = 0; j < DT; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const uint32_t dim = j * GRETA_PRE_MX(M) + GRETA_PRE_MX(C_ROW)(lane, 2 * e);
                    o[(greta_u64)row * d2 + h * HW + dim / 2] =
                        greta_pre_pack(acc[qt][j][2 * e] * inv, acc[qt][j][2 * e + 1] * inv);
                }
        }
    }
}
#endif

#if defined(GRETA_PRE_MFMA)
#define GRETA_PRE_OCCUPANCY __attribute__((amdgpu_waves_per_eu(2)))
#else
#define GRETA_PRE_OCCUPANCY
#endif
extern "C" __global__ void __launch_bounds__(GRETA_PRE_THREADS) GRETA_PRE_OCCUPANCY
greta_attn_prefill_f16(const greta_f16* __restrict__ q, const greta_f16* __restrict__ k_cache,
                       const greta_f16* __restrict__ v_cache, greta_f16* __restrict__ o, uint32_t tokens,
                       uint32_t heads, uint32_t head_dim, uint32_t pos0, uint32_t max_seq) {
    (void)max_seq;
    __shared__ __attribute__((aligned(16))) uint32_t smem[GRETA_PRE_SMEM_WORDS];
    // Grid (heads, query blocks), the last query block first: the causal
    // blocks with the most keys start first and the short ones fill the tail.
    const uint32_t h = blockIdx.x, q0 = (gridDim.y - 1 - blockIdx.y) * GRETA_PRE_BQ;
#if defined(GRETA_PRE_MMA)
    if (head_dim == 128) {
        greta_pre_mma_path<128>((unsigned short*)smem, (const unsigned short*)q, (const unsigned short*)k_cache,
                                (const unsigned short*)v_cache, (uint32_t*)o, tokens, heads, pos0, q0, h);
        return;
    }
    if (head_dim == 64) {
        greta_pre_mma_path<64>((unsigned short*)smem, (const unsigned short*)q, (const unsigned short*)k_cache,
                               (const unsigned short*)v_cache, (uint32_t*)o, tokens, heads, pos0, q0, h);
        return;
    }
#endif
#if defined(GRETA_PRE_MFMA)
    if (head_dim == 128) {
        greta_pre_mfma_path<128>(smem, (const uint32_t*)q, (const uint32_t*)k_cache, (const uint32_t*)v_cache,
                                 (uint32_t*)o, tokens, heads, pos0, q0, h);
        return;
    }
    if (head_dim == 64) {
        greta_pre_mfma_path<64>(smem, (const uint32_t*)q, (const uint32_t*)k_cache, (const uint32_t*)v_cache,
                                (uint32_t*)o, tokens, heads, pos0, q0, h);
        return;
    }
#endif
    for (uint32_t sub = 0; sub < GRETA_PRE_BQ; sub += GRETA_PRE_FBQ) {
        if (q0 + sub >= tokens) break;
        greta_pre_fma(smem, (const uint32_t*)q, (const uint32_t*)k_cache, (const uint32_t*)v_cache, (uint32_t*)o,
                      tokens, heads, head_dim, pos0, q0 + sub, h);
    }
}
