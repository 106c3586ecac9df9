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
// Everywhere else: f32 FMAs over shared tiles, the GLSL twin's algorithm
// (attn_prefill_f16.comp) on 32 rows at a time, twice per block.
#include "common.h"

#define GRETA_PRE_THREADS 128
#define GRETA_PRE_BQ 64
// Shared memory of either path, in 32-bit words: the tensor-core path's two
// stages of K and V tiles (32 keys of 128 + 8 halves each) are the larger.
#define GRETA_PRE_PITCH (128 + 8)
#define GRETA_PRE_MMA_BK 32
#define GRETA_PRE_SMEM_WORDS (2 * 2 * GRETA_PRE_MMA_BK * GRETA_PRE_PITCH / 2)

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
#define GRETA_PRE_FBK 32
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
        float s[2][4];
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
            for (int j = 0; j < 4; ++j) s[a][j] = 0.0f;
        for (uint32_t w = 0; w < HW; ++w) {
            const uint32_t qa = qs[sr * HW + w], qc = qs[(sr + 1) * HW + w];
            const float qa0 = greta_pre_lo(qa), qa1 = greta_pre_hi(qa), qc0 = greta_pre_lo(qc), qc1 = greta_pre_hi(qc);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const uint32_t kw = ks[(sk + 8 * j) * HW + w];
                const float k0f = greta_pre_lo(kw), k1f = greta_pre_hi(kw);
                s[0][j] = fmaf(qa0, k0f, fmaf(qa1, k1f, s[0][j]));
                s[1][j] = fmaf(qc0, k0f, fmaf(qc1, k1f, s[1][j]));
            }
        }
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
            for (int j = 0; j < 4; ++j) ss[(sr + a) * (GRETA_PRE_FBK + 1) + sk + 8 * j] = s[a][j] * scale;
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

extern "C" __global__ void __launch_bounds__(GRETA_PRE_THREADS)
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
    for (uint32_t sub = 0; sub < GRETA_PRE_BQ; sub += GRETA_PRE_FBQ) {
        if (q0 + sub >= tokens) break;
        greta_pre_fma(smem, (const uint32_t*)q, (const uint32_t*)k_cache, (const uint32_t*)v_cache, (uint32_t*)o,
                      tokens, heads, head_dim, pos0, q0 + sub, h);
    }
}
