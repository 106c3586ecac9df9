#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
// attn_prefill_f16_cm: attn_prefill_f16 (causal attention of `tokens`
// queries at positions pos0 + t over an f16 KV cache [max_seq][heads]
// [head_dim]) with both products on VK_KHR_cooperative_matrix, 16x16x16
// f16 x f16 -> f32 subgroup tiles. Same bindings, push constants and
// results as attn_prefill_f16.comp (the planner picks one; see there for
// the scalar version of the same walk).
//
// Workgroup (qb, h): BQ = 64 query rows of head h, four subgroups of SG
// invocations, subgroup s owning rows 16 s .. 16 s + 15. Blocks are
// numbered from the end of the sequence, so the longest walks (the last
// rows see the most keys) start first. Per key tile of BK = 32 positions:
//   - the workgroup stages K and V rows (f16, 128-bit words, rows padded
//     by 8 halves) in shared memory, from registers each invocation loaded
//     while the previous tile was computed;
//   - S = Q K^T: each subgroup's Q rows stay in A tiles (registers) for
//     the whole walk, K is read as B in column-major order (no transpose);
//     the f32 S tiles go to the subgroup's slice of shared memory;
//   - online softmax in f32: lane l of the subgroup owns row l / LPR and
//     every LPR-th column pair; the row max is combined through shared
//     memory, the weights exp2(x - max) (the scale and log2(e) folded into
//     x) rounded to f16 into the subgroup's P tile, the row sums kept per
//     lane in f32;
//   - the O accumulators (f32, 16 x head_dim per subgroup, registers) are
//     rescaled by alpha = exp2(m_old - m_new) per row: an accumulator tile
//     whose row r holds alpha_r is loaded from shared memory and multiplied
//     in component-wise (both tiles have the same layout, whatever the
//     device's), then O += P V with V read as B in row-major order.
// A subgroup whose rows see none of a tile's keys (past the diagonal)
// skips its products but keeps to the workgroup's barriers. At the end
// each O tile leaves through shared memory: lanes divide by the row sum
// and round pairs to f16 once (rows past `tokens` are not written; no f16
// accumulator shape is needed of the device).
//
// The f16 rounding of P (relative 2^-11 on weights in [0, 1]) is the
// matrix-unit term op's TOLERANCE allows for (kernels/src/ops/
// attn_prefill_f16.rs).
//
// Specialization constants: 0 HD (head_dim, a multiple of 16, <= 128),
// 1 the workgroup size (4 SG), 2 SG (the device's fixed subgroup size, a
// multiple of 16 up to 64).
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint HD = 128;
layout(constant_id = 2) const uint SG = 32;
layout(set = 0, binding = 0) readonly buffer Q { uvec4 q[]; };
layout(set = 0, binding = 1) readonly buffer K { uvec4 k[]; };
layout(set = 0, binding = 2) readonly buffer V { uvec4 v[]; };
layout(set = 0, binding = 3) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint tokens; uint heads; uint head_dim; uint pos0; uint max_seq; } p;

const uint T = 16u;
const uint NSG = 4u;
const uint BQ = NSG * T;   // 64
const uint BK = 32u;
const uint WG = gl_WorkGroupSize.x;
const uint DT = HD / T;    // head_dim tiles
const uint RV = HD / 8u;   // uvec4 per row
const uint RS = RV + 1u;   // padded row stride of the staged rows, in uvec4
const uint SST = BK + 4u;  // row stride of a subgroup's S slice, in floats
const uint PSW = BK / 2u + 4u;  // row stride of a P tile, in words (2 halves)
const uint LPR = SG / T;   // lanes per row in the softmax
const uint CPP = BK / 2u / LPR;  // column pairs per lane
const uint NPT = (BK * RV + WG - 1u) / WG;  // staged words per invocation per tile
const float NEG_INF = -1.0 / 0.0;

// K rows at 0, V rows at BK * RS; Q's 64 rows pass through the same space
// once at the start (BQ == 2 BK).
shared uvec4 kv[2u * BK * RS];
shared float ss[NSG * T * SST];
shared uint ps[NSG * T * PSW];
shared float red[NSG * SG];
shared float rinv[NSG * T];

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
    coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator> acc[DT];
    [[unroll]] for (uint d = 0u; d < DT; ++d) {
        acc[d] = coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>(0.0);
    }

    // Keys any row of the block sees: 0 .. pos0 + last row (inclusive);
    // this subgroup's rows: up to its own last real row.
    uint last = min(q0 + BQ, p.tokens) - 1u;
    uint nkeys = p.pos0 + last + 1u;
    uint r0 = q0 + sgi * T;
    bool live = r0 < p.tokens;
    uint sub_keys = live ? p.pos0 + min(r0 + T, p.tokens) : 0u;
    uint srow = lane / LPR, part = lane % LPR;
    uint qpos = p.pos0 + r0 + srow;
    uint sbase = sgi * T * SST;
    uint pbase = sgi * T * PSW;
    uint rbase = sgi * SG;
    float sl2 = inversesqrt(float(HD)) * 1.4426950408889634;
    float m = NEG_INF;  // the row's running max (the same in its LPR lanes)
    float l = 0.0;      // this lane's share of the row's running sum

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
            [[unroll]] for (uint j = 0u; j < BK / T; ++j) {
                coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator> s =
                    coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>(0.0);
                [[unroll]] for (uint d = 0u; d < DT; ++d) {
                    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> kb;
                    coopMatLoad(kb, kv, j * T * RS + 2u * d, RS, gl_CooperativeMatrixLayoutColumnMajor);
                    s = coopMatMulAdd(qa[d], kb, s);
                }
                coopMatStore(s, ss, sbase + j * T, SST, gl_CooperativeMatrixLayoutRowMajor);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            vec2 x[CPP];
            float mx = m;
            [[unroll]] for (uint c = 0u; c < CPP; ++c) {
                uint col = 2u * (part + LPR * c);
                uint kpos = k0 + col;
                vec2 sv = vec2(ss[sbase + srow * SST + col], ss[sbase + srow * SST + col + 1u]) * sl2;
                x[c].x = (kpos <= qpos && kpos < nkeys) ? sv.x : NEG_INF;
                x[c].y = (kpos + 1u <= qpos && kpos + 1u < nkeys) ? sv.y : NEG_INF;
                mx = max(mx, max(x[c].x, x[c].y));
            }
            red[rbase + lane] = mx;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (uint o2 = 0u; o2 < LPR; ++o2) mx = max(mx, red[rbase + srow * LPR + o2]);
            // Before a row's first visible key m is -inf: nothing to rescale.
            float alpha = (m == NEG_INF) ? 0.0 : exp2(m - mx);
            float sum = 0.0;
            [[unroll]] for (uint c = 0u; c < CPP; ++c) {
                float ex = (x[c].x == NEG_INF) ? 0.0 : exp2(x[c].x - mx);
                float ey = (x[c].y == NEG_INF) ? 0.0 : exp2(x[c].y - mx);
                ps[pbase + srow * PSW + part + LPR * c] = packHalf2x16(vec2(ex, ey));
                sum += ex + ey;
            }
            l = l * alpha + sum;
            m = mx;
            // The alpha tile (row r = alpha of row r) over the S slice, whose
            // reads all happened before the barrier above.
            [[unroll]] for (uint c = 0u; c < T / LPR; ++c) ss[sbase + srow * T + part * (T / LPR) + c] = alpha;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator> at;
            coopMatLoad(at, ss, sbase, T, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint d = 0u; d < DT; ++d) acc[d] = acc[d] * at;

            [[unroll]] for (uint kk = 0u; kk < BK / T; ++kk) {
                coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA> pa;
                coopMatLoad(pa, ps, pbase + kk * (T / 2u), PSW, gl_CooperativeMatrixLayoutRowMajor);
                [[unroll]] for (uint d = 0u; d < DT; ++d) {
                    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> vb;
                    coopMatLoad(vb, kv, (BK + kk * T) * RS + 2u * d, RS, gl_CooperativeMatrixLayoutRowMajor);
                    acc[d] = coopMatMulAdd(pa, vb, acc[d]);
                }
            }
        }
    }
    if (!live) return;  // no barrier follows: the rest is the subgroup's own

    // Row sums: this lane's share, then the LPR shares of its row.
    red[rbase + lane] = l;
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    if (part == 0u) {
        float lt = 0.0;
        [[unroll]] for (uint o2 = 0u; o2 < LPR; ++o2) lt += red[rbase + srow * LPR + o2];
        rinv[sgi * T + srow] = 1.0 / lt;
    }
    uint d2 = p.heads * (HD / 2u);  // words per output row
    [[unroll]] for (uint d = 0u; d < DT; ++d) {
        subgroupMemoryBarrierShared();
        subgroupBarrier();  // rinv written; the previous tile's readers done
        coopMatStore(acc[d], ss, sbase, T, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint w = lane; w < T * T / 2u; w += SG) {
            uint r = w / (T / 2u), cp = w % (T / 2u);
            if (r0 + r < p.tokens) {
                vec2 val = vec2(ss[sbase + r * T + 2u * cp], ss[sbase + r * T + 2u * cp + 1u]) * rinv[sgi * T + r];
                o[(r0 + r) * d2 + h * (HD / 2u) + d * (T / 2u) + cp] = packHalf2x16(val);
            }
        }
    }
}
