#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_NV_cooperative_matrix2 : require
//! spirv 1.6
// attn_prefill_f16_cm2: attn_prefill_f16_cm (same workgroups, subgroups,
// K/V staging and products on 16x16x16 subgroup tiles) with the online
// softmax kept in the S tiles, through VK_NV_cooperative_matrix2's matrix
// operations, instead of going through shared memory:
//   - row max and row sum: coopMatReduceNV along rows (the result holds
//     each row's value in every column, so it has the O tiles' layout and
//     multiplies them component-wise);
//   - the causal mask (only on tiles that cross the subgroup's diagonal)
//     and the weights exp2(S - M): per-element functions, which are given
//     each element's row and column;
//   - P is converted from an accumulator to an A operand (f16) in
//     registers.
// KHR cooperative matrices alone leave the accumulator layout to the
// driver, which is why attn_prefill_f16_cm rounds S through shared memory
// (on the H200: 267 us at 2048 tokens, against 236 us for the CUDA twin
// whose S stays in registers). The per-row values are 16x16 tiles here,
// so a lane holds no scalar of its own.
//
// Tile 0 holds key 0, which every row sees, so each row's M is finite
// after the first tile a subgroup computes, and a later tile whose keys a
// row cannot see gives it weights 2^-inf = 0 and a rescale of 1.
//
// Same bindings, push constants and results as attn_prefill_f16.comp; the
// f16 rounding of P is the term op's TOLERANCE allows for, as in
// attn_prefill_f16_cm.
//
// Specialization constants: 0 HD (head_dim, a multiple of 16, <= 128),
// 1 the workgroup size (4 SG), 2 SG (the device's fixed subgroup size, a
// multiple of 16 up to 64), 3 BK (keys per tile, a multiple of 16 from 32
// to 64).
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint HD = 128;
layout(constant_id = 2) const uint SG = 32;
layout(constant_id = 3) const uint BK = 48;
layout(set = 0, binding = 0) readonly buffer Q { uvec4 q[]; };
layout(set = 0, binding = 1) readonly buffer K { uvec4 k[]; };
layout(set = 0, binding = 2) readonly buffer V { uvec4 v[]; };
layout(set = 0, binding = 3) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint tokens; uint heads; uint head_dim; uint pos0; uint max_seq; } p;

const uint T = 16u;
const uint NSG = 4u;
const uint BQ = NSG * T;   // 64
const uint WG = gl_WorkGroupSize.x;
const uint DT = HD / T;    // head_dim tiles
const uint RV = HD / 8u;   // uvec4 per row
const uint RS = RV + 1u;   // padded row stride of the staged rows, in uvec4
const uint NPT = (BK * RV + WG - 1u) / WG;  // staged words per invocation per tile
const float NEG_INF = -1.0 / 0.0;

#define TILE coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>

// K rows at 0, V rows at BK * RS; Q's 64 rows pass through the same space
// once at the start (BQ <= 2 BK).
shared uvec4 kv[2u * BK * RS];
// Each subgroup's 16 x 16 f32 output tile on its way out.
shared float os[NSG * T * T];

float max_of(const in float a, const in float b) { return max(a, b); }
float sum_of(const in float a, const in float b) { return a + b; }
// Row r of a tile is query position qpos + r, column c key kpos + c.
float causal(const in uint r, const in uint c, const in float s, const in uint qpos,
             const in uint kpos, const in uint nkeys) {
    return (kpos + c <= qpos + r && kpos + c < nkeys) ? s : NEG_INF;
}
float pow2(const in uint r, const in uint c, const in float x) { return exp2(x); }
float larger(const in uint r, const in uint c, const in float a, const in float b) { return max(a, b); }
float inverse(const in uint r, const in uint c, const in float x) { return 1.0 / x; }

void main() {
    uint t = gl_LocalInvocationID.x;
    uint sgi = gl_SubgroupID;
    uint lane = gl_SubgroupInvocationID;
    uint nqb = (p.tokens + BQ - 1u) / BQ;
    uint q0 = (nqb - 1u - gl_WorkGroupID.x) * BQ;
    uint h = gl_WorkGroupID.y;
    uint dv = p.heads * RV;  // uvec4 per cache / query row
    uint hv = h * RV;

    for (uint i = t; i < BQ * RV; i += WG) {
        uint r = i / RV, c = i % RV;
        kv[r * RS + c] = (q0 + r < p.tokens) ? q[(q0 + r) * dv + hv + c] : uvec4(0u);
    }
    barrier();
    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA> qa[DT];
    [[unroll]] for (uint d = 0u; d < DT; ++d) {
        coopMatLoad(qa[d], kv, sgi * T * RS + 2u * d, RS, gl_CooperativeMatrixLayoutRowMajor);
    }
    TILE acc[DT];
    [[unroll]] for (uint d = 0u; d < DT; ++d) acc[d] = TILE(0.0);

    // Keys any row of the block sees: 0 .. pos0 + last row (inclusive);
    // this subgroup's rows: up to its own last real row.
    uint last = min(q0 + BQ, p.tokens) - 1u;
    uint nkeys = p.pos0 + last + 1u;
    uint r0 = q0 + sgi * T;
    bool live = r0 < p.tokens;
    uint sub_keys = live ? p.pos0 + min(r0 + T, p.tokens) : 0u;
    float sl2 = inversesqrt(float(HD)) * 1.4426950408889634;
    TILE m = TILE(NEG_INF);  // each row's running max, in every column
    TILE l = TILE(0.0);      // each row's running sum, likewise

    // The next key tile's K and V rows wait in registers while this one is
    // computed, so their loads overlap the products rather than stalling
    // the workgroup between its two barriers.
    uvec4 nk[NPT], nv[NPT];
    [[unroll]] for (uint j = 0u; j < NPT; ++j) {
        uint i = t + j * WG;
        uint r = i / RV, c = i % RV;
        bool in_ = i < BK * RV && r < nkeys;
        uint at = r * dv + hv + c;
        nk[j] = in_ ? k[at] : uvec4(0u);
        nv[j] = in_ ? v[at] : uvec4(0u);
    }
    for (uint k0 = 0u; k0 < nkeys; k0 += BK) {
        barrier();  // the previous tile's (or Q's) readers are done
        [[unroll]] for (uint j = 0u; j < NPT; ++j) {
            uint i = t + j * WG;
            if (i < BK * RV) {
                uint r = i / RV, c = i % RV;
                kv[r * RS + c] = nk[j];
                kv[(BK + r) * RS + c] = nv[j];
            }
        }
        barrier();
        uint k1 = k0 + BK;
        if (k1 < nkeys) {
            [[unroll]] for (uint j = 0u; j < NPT; ++j) {
                uint i = t + j * WG;
                uint r = i / RV, c = i % RV;
                bool in_ = i < BK * RV && k1 + r < nkeys;
                uint at = (k1 + r) * dv + hv + c;
                nk[j] = in_ ? k[at] : uvec4(0u);
                nv[j] = in_ ? v[at] : uvec4(0u);
            }
        }
        // Subgroup-uniform: tiles past this subgroup's diagonal are skipped.
        if (k0 < sub_keys) {
            TILE s[BK / T];
            [[unroll]] for (uint j = 0u; j < BK / T; ++j) {
                s[j] = TILE(0.0);
                [[unroll]] for (uint d = 0u; d < DT; ++d) {
                    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> kb;
                    coopMatLoad(kb, kv, j * T * RS + 2u * d, RS, gl_CooperativeMatrixLayoutColumnMajor);
                    s[j] = coopMatMulAdd(qa[d], kb, s[j]);
                }
                s[j] = s[j] * sl2;
            }
            // Every key of the tile is visible to every row of the
            // subgroup unless the tile crosses its diagonal (its first row
            // sees keys up to pos0 + r0) or the block's last key.
            if (k0 + BK > p.pos0 + r0 + 1u) {
                [[unroll]] for (uint j = 0u; j < BK / T; ++j) {
                    coopMatPerElementNV(s[j], s[j], causal, p.pos0 + r0, k0 + j * T, nkeys);
                }
            }
            TILE mx, m_old = m;
            coopMatReduceNV(mx, s[0], gl_CooperativeMatrixReduceRowNV, max_of);
            [[unroll]] for (uint j = 1u; j < BK / T; ++j) {
                TILE mj;
                coopMatReduceNV(mj, s[j], gl_CooperativeMatrixReduceRowNV, max_of);
                coopMatPerElementNV(mx, mx, larger, mj);
            }
            coopMatPerElementNV(m, mx, larger, m_old);
            TILE alpha;
            coopMatPerElementNV(alpha, m_old - m, pow2);
            l = l * alpha;
            [[unroll]] for (uint d = 0u; d < DT; ++d) acc[d] = acc[d] * alpha;
            [[unroll]] for (uint kk = 0u; kk < BK / T; ++kk) {
                TILE pw, sums;
                coopMatPerElementNV(pw, s[kk] - m, pow2);
                coopMatReduceNV(sums, pw, gl_CooperativeMatrixReduceRowNV, sum_of);
                l = l + sums;
                coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA> pa =
                    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA>(pw);
                [[unroll]] for (uint d = 0u; d < DT; ++d) {
                    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> vb;
                    coopMatLoad(vb, kv, (BK + kk * T) * RS + 2u * d, RS, gl_CooperativeMatrixLayoutRowMajor);
                    acc[d] = coopMatMulAdd(pa, vb, acc[d]);
                }
            }
        }
    }
    if (!live) return;  // no barrier follows: the rest is the subgroup's own

    TILE rinv;
    coopMatPerElementNV(rinv, l, inverse);
    uint d2 = p.heads * (HD / 2u);  // words per output row
    uint obase = sgi * T * T;
    [[unroll]] for (uint d = 0u; d < DT; ++d) {
        subgroupMemoryBarrierShared();
        subgroupBarrier();  // the previous tile's readers are done
        coopMatStore(acc[d] * rinv, os, obase, T, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint w = lane; w < T * T / 2u; w += SG) {
            uint r = w / (T / 2u), cp = w % (T / 2u);
            if (r0 + r < p.tokens) {
                vec2 val = vec2(os[obase + r * T + 2u * cp], os[obase + r * T + 2u * cp + 1u]);
                o[(r0 + r) * d2 + h * (HD / 2u) + d * (T / 2u) + cp] = packHalf2x16(val);
            }
        }
    }
}
