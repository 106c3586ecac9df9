#version 450
#extension GL_EXT_control_flow_attributes : require
// attn_prefill_f16: causal attention of `tokens` queries (positions
// pos0 + t) over an f16 KV cache ([max_seq][heads][head_dim]), flash-
// attention style: workgroup (qb, h) owns BQ = 32 query rows of head h and
// walks the key tiles of BK = 32 positions they can see, with an online
// softmax (running max m and sum l per row, the output rescaled by
// exp(m_old - m_new) whenever the max grows). Q, K and V tiles live in
// shared memory as 32-bit words of two halves (16 KiB at head_dim 128 for
// all three); scores of a tile go through shared memory, f32 arithmetic,
// the output rounded once to f16.
//
//   S = Q K^T / sqrt(head_dim): invocation t computes rows 2 (t/8) + {0,1}
//     and keys t%8 + 8 j (j < 4) of the tile: 8 dots, 6 shared loads per
//     16 FMAs.
//   per row (32 invocations): mask (key > query position, or past the
//     valid rows), new max, weights in place, alpha, l.
//   O += P V: invocation t owns row t/4 and the words t%4 + 4 i of the
//     row (HD/8 of them), in registers for the whole walk.
// Specialization constant 0: head_dim (HD; the planner passes the op's).
// Where the device has 16x16x16 cooperative matrices the planner runs
// attn_prefill_f16_cm.comp instead (same bindings and push constants;
// runtime/src/vulkan/plan/attn.rs); this kernel is the fallback (lavapipe).
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint HD = 128;
layout(set = 0, binding = 0) readonly buffer Q { uint q[]; };
layout(set = 0, binding = 1) readonly buffer K { uint k[]; };
layout(set = 0, binding = 2) readonly buffer V { uint v[]; };
layout(set = 0, binding = 3) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint tokens; uint heads; uint head_dim; uint pos0; uint max_seq; } p;

const uint BQ = 32u;
const uint BK = 32u;
const uint WG = 128u;
const uint HW = HD / 2u;   // words per row
const uint NW = HD / 8u;   // words per invocation in P V
const float NEG_INF = -1.0 / 0.0;

shared uint qs[BQ * HW];
shared uint ks[BK * HW];
shared uint vs[BK * HW];
shared float ss[BQ * (BK + 1u)];
shared float row_m[BQ];
shared float row_l[BQ];
shared float row_a[BQ];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint qb = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
    uint q0 = qb * BQ;
    uint d2 = p.heads * HW;  // words per cache / query row
    float scale = inversesqrt(float(HD));
    for (uint i = t; i < BQ * HW; i += WG) {
        uint rr = i / HW, w = i % HW;
        qs[i] = (q0 + rr < p.tokens) ? q[(q0 + rr) * d2 + h * HW + w] : 0u;
    }
    if (t < BQ) {
        row_m[t] = NEG_INF;
        row_l[t] = 0.0;
    }
    float acc[2u * NW];
    [[unroll]] for (uint i = 0u; i < 2u * NW; ++i) acc[i] = 0.0;
    // Keys any row of the block sees: 0 .. pos0 + last row (inclusive).
    uint last = min(q0 + BQ, p.tokens) - 1u;
    uint nkeys = p.pos0 + last + 1u;
    uint sr = 2u * (t / 8u), sk = t % 8u;
    uint orow = t / 4u, ow = t % 4u;
    for (uint k0 = 0u; k0 < nkeys; k0 += BK) {
        barrier();  // the previous tile's readers are done
        for (uint i = t; i < BK * HW; i += WG) {
            uint rr = i / HW, w = i % HW;
            bool in_ = k0 + rr < nkeys;
            uint at = (k0 + rr) * d2 + h * HW + w;
            ks[i] = in_ ? k[at] : 0u;
            vs[i] = in_ ? v[at] : 0u;
        }
        barrier();
        float s[2][4];
        [[unroll]] for (uint a = 0u; a < 2u; ++a)
            [[unroll]] for (uint j = 0u; j < 4u; ++j) s[a][j] = 0.0;
        for (uint w = 0u; w < HW; ++w) {
            vec2 qa = unpackHalf2x16(qs[sr * HW + w]);
            vec2 qc = unpackHalf2x16(qs[(sr + 1u) * HW + w]);
            [[unroll]] for (uint j = 0u; j < 4u; ++j) {
                vec2 kk = unpackHalf2x16(ks[(sk + 8u * j) * HW + w]);
                s[0][j] += dot(qa, kk);
                s[1][j] += dot(qc, kk);
            }
        }
        [[unroll]] for (uint a = 0u; a < 2u; ++a)
            [[unroll]] for (uint j = 0u; j < 4u; ++j) ss[(sr + a) * (BK + 1u) + sk + 8u * j] = s[a][j] * scale;
        barrier();
        if (t < BQ) {
            uint qpos = p.pos0 + q0 + t;
            float m_old = row_m[t];
            float mx = m_old;
            for (uint c = 0u; c < BK; ++c) {
                uint kpos = k0 + c;
                float x = (kpos <= qpos && kpos < nkeys) ? ss[t * (BK + 1u) + c] : NEG_INF;
                ss[t * (BK + 1u) + c] = x;
                mx = max(mx, x);
            }
            // Rows past `tokens` (a partial last block) see only masked keys
            // beyond key 0..; every real row sees key 0 in the first tile, so
            // mx is finite from there on.
            float alpha = (m_old == NEG_INF) ? 0.0 : exp(m_old - mx);
            float l = row_l[t] * alpha;
            for (uint c = 0u; c < BK; ++c) {
                float x = ss[t * (BK + 1u) + c];
                float e = (x == NEG_INF) ? 0.0 : exp(x - mx);
                ss[t * (BK + 1u) + c] = e;
                l += e;
            }
            row_m[t] = mx;
            row_l[t] = l;
            row_a[t] = alpha;
        }
        barrier();
        float alpha = row_a[orow];
        [[unroll]] for (uint i = 0u; i < 2u * NW; ++i) acc[i] *= alpha;
        for (uint c = 0u; c < BK; ++c) {
            float pc = ss[orow * (BK + 1u) + c];
            [[unroll]] for (uint i = 0u; i < NW; ++i) {
                vec2 vv = unpackHalf2x16(vs[c * HW + ow + 4u * i]);
                acc[2u * i] += pc * vv.x;
                acc[2u * i + 1u] += pc * vv.y;
            }
        }
    }
    uint row = q0 + orow;
    if (row < p.tokens) {
        float inv = 1.0 / row_l[orow];
        [[unroll]] for (uint i = 0u; i < NW; ++i) {
            o[row * d2 + h * HW + ow + 4u * i] = packHalf2x16(vec2(acc[2u * i], acc[2u * i + 1u]) * inv);
        }
    }
}
