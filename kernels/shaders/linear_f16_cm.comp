#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
//! variant linear_f16_cm
//! variant linear_f16_cm_cs CS
//! variant linear_f16_cm_bt BT
//! variant linear_f16_cm_bt_cs BT CS
// y[t][o] = sum_i x[t][i] w[o][i] (Y = X W^T, "NT"): x, w, y f16, f32
// accumulation, y rounded once; on VK_KHR_cooperative_matrix with 16x16x16
// tiles, for tokens % BM == 0, rows % BN == 0, cols % BK == 0 and a
// subgroup size of SG (the planner checks all of it and falls back to the
// tiled linear_f16 otherwise).
//
// gemm_f16_cmreg's scheme (see there) for the NT layout: each subgroup owns
// a WM x WN block of Y whose accumulators stay in registers for the whole
// i loop; slices of x (BM x BK) and of w (BN x BK) are both rows read
// along i, staged in shared memory with 128-bit loads and stores in two
// stages (the next slice's global loads are in flight during the multiply;
// one barrier per slice), rows padded by 8 halves. W's slice, stored
// [n][k], is the B operand in column-major layout, so no transpose
// happens anywhere. The accumulators are converted to f16 accumulator tiles
// and stored straight to Y: that needs the device to have f16 accumulators
// of 16x16x16 (the planner's `coop16_f16` limit).
//
// The _cs variants (for devices with only f16 x f16 -> f32 16x16x16 tiles)
// let each f32 tile leave through a small shared tile per subgroup instead,
// its lanes rounding pairs to f16. On NVIDIA's driver (580.159.04, H200)
// that epilogue made the whole kernel 6.5x slower at every tile tried
// (5847 vs 906 us at 2048x12288x4096; docs/performance.md, 2026-11-26), so
// it is used only where the direct store cannot be.
//
// The _bt variant (a tuning candidate, not a default) stages W's slice
// transposed, [k][n] in halves, so that B is loaded row-major as
// gemm_f16_cmreg loads it. It was written when the shared-tile epilogue's
// slowness was taken for the column-major B load's; measured on
// 2026-11-26 it is 27% slower than the plain variant on the H200.
//
// Specialization constants: 0 BM, 1 BN, 2 BK (multiples of 16), 3
// workgroup size (a multiple of SG), 4 SGN (subgroups side by side along
// N; the rest stack along M), 5 SG (the device's subgroup size).
layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 4) const uint SGN = 2;
layout(constant_id = 5) const uint SG = 32;

layout(set = 0, binding = 0) readonly buffer X { uvec4 x[]; };
layout(set = 0, binding = 1) readonly buffer W { uvec4 w[]; };
#ifdef CS
// Y as words of two halves: the epilogue writes adjacent pairs.
layout(set = 0, binding = 2) writeonly buffer Y { uint y[]; };
#else
layout(set = 0, binding = 2) writeonly buffer Y { float16_t y[]; };
#endif
layout(push_constant) uniform P { uint M; uint N; uint K; } p;

const uint T = 16u;
const uint WG = gl_WorkGroupSize.x;
const uint SGM = WG / SG / SGN;
const uint WM = BM / SGM;
const uint WN = BN / SGN;
const uint TM = WM / T;
const uint TN = WN / T;
// Row strides of the staged slices in uvec4s (8 halves each), padded.
const uint ST = BK / 8u + 1u;
const uint A_STAGE = BM * ST;
const uint B_STAGE = BN * ST;
const uint A_PER = BM * BK / 8u / WG;
const uint B_PER = BN * BK / 8u / WG;

shared uvec4 As[2u * A_STAGE];
#ifdef BT
// W's slice as [k][n] halves, rows padded by 8 halves.
const uint BTS = BN + 8u;
const uint BT_STAGE = BK * BTS;
shared float16_t Bt[2u * BT_STAGE];
#else
shared uvec4 Bs[2u * B_STAGE];
#endif
#ifdef CS
// Per subgroup, one 16 x 16 f32 tile on its way out.
shared float Cs[(WG / SG) * T * T];
#endif

uvec4 ga[A_PER];
uvec4 gb[B_PER];

void fetch(uint k0, uint row0, uint col0) {
    uint kv = p.K / 8u;
    [[unroll]] for (uint v = 0u; v < A_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        ga[v] = x[(row0 + i / (BK / 8u)) * kv + k0 / 8u + i % (BK / 8u)];
    }
    [[unroll]] for (uint v = 0u; v < B_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        gb[v] = w[(col0 + i / (BK / 8u)) * kv + k0 / 8u + i % (BK / 8u)];
    }
}

void stage(uint s) {
    [[unroll]] for (uint v = 0u; v < A_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        As[s * A_STAGE + (i / (BK / 8u)) * ST + i % (BK / 8u)] = ga[v];
    }
    [[unroll]] for (uint v = 0u; v < B_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
#ifdef BT
        // Row n of W's slice, halves k0..k0+7, written down column n.
        uint n = i / (BK / 8u);
        uint k0 = (i % (BK / 8u)) * 8u;
        uint at = s * BT_STAGE + k0 * BTS + n;
        vec2 h0 = unpackHalf2x16(gb[v].x);
        vec2 h1 = unpackHalf2x16(gb[v].y);
        vec2 h2 = unpackHalf2x16(gb[v].z);
        vec2 h3 = unpackHalf2x16(gb[v].w);
        Bt[at] = float16_t(h0.x);
        Bt[at + BTS] = float16_t(h0.y);
        Bt[at + 2u * BTS] = float16_t(h1.x);
        Bt[at + 3u * BTS] = float16_t(h1.y);
        Bt[at + 4u * BTS] = float16_t(h2.x);
        Bt[at + 5u * BTS] = float16_t(h2.y);
        Bt[at + 6u * BTS] = float16_t(h3.x);
        Bt[at + 7u * BTS] = float16_t(h3.y);
#else
        Bs[s * B_STAGE + (i / (BK / 8u)) * ST + i % (BK / 8u)] = gb[v];
#endif
    }
}

void main() {
    uint sg = gl_SubgroupID;
    uint wm0 = (sg / SGN) * WM;
    uint wn0 = (sg % SGN) * WN;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;

    coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator> acc[TM * TN];
    [[unroll]] for (uint i = 0u; i < TM * TN; i++) {
        acc[i] = coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>(0.0);
    }

    fetch(0u, row0, col0);
    stage(0u);
    barrier();
    uint slices = p.K / BK;
    for (uint t = 0u; t < slices; t++) {
        uint s = t & 1u;
        bool more = t + 1u < slices;
        if (more) { fetch((t + 1u) * BK, row0, col0); }
        [[unroll]] for (uint kk = 0u; kk < BK; kk += T) {
            coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA> ma[TM];
            coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> mb[TN];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                coopMatLoad(ma[i], As, s * A_STAGE + (wm0 + i * T) * ST + kk / 8u, ST,
                            gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (uint j = 0u; j < TN; j++) {
#ifdef BT
                coopMatLoad(mb[j], Bt, s * BT_STAGE + kk * BTS + wn0 + j * T, BTS,
                            gl_CooperativeMatrixLayoutRowMajor);
#else
                coopMatLoad(mb[j], Bs, s * B_STAGE + (wn0 + j * T) * ST + kk / 8u, ST,
                            gl_CooperativeMatrixLayoutColumnMajor);
#endif
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint j = 0u; j < TN; j++) {
                    acc[i * TN + j] = coopMatMulAdd(ma[i], mb[j], acc[i * TN + j]);
                }
            }
        }
        if (more) { stage(s ^ 1u); }
        barrier();
    }

#ifdef CS
    // Out through shared memory: each f32 tile is stored in the subgroup's
    // slot (only f32 accumulators are needed of the device), and its lanes
    // round pairs of adjacent columns to f16 and store them as one word
    // (N is a multiple of BN, so every pair starts on an even element).
    uint lane = gl_SubgroupInvocationID;
    uint slot = sg * T * T;
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            coopMatStore(acc[i * TN + j], Cs, slot, T, gl_CooperativeMatrixLayoutRowMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = 2u * lane; e < T * T; e += 2u * SG) {
                uint r = row0 + wm0 + i * T + e / T;
                uint c = col0 + wn0 + j * T + e % T;
                y[(r * p.N + c) >> 1] = packHalf2x16(vec2(Cs[slot + e], Cs[slot + e + 1u]));
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
    }
#else
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator> h =
                coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>(acc[i * TN + j]);
            coopMatStore(h, y, (row0 + wm0 + i * T) * p.N + col0 + wn0 + j * T, p.N,
                         gl_CooperativeMatrixLayoutRowMajor);
        }
    }
#endif
}
