#version 450
//! variant attn_decode_f16
//! variant attn_decode_f16_combine COMBINE
// attn_decode_f16: one token's attention over the first `len` rows of an
// f16 KV cache ([max_seq][heads][head_dim]), in two dispatches.
//
// Split (workgroup (h, s)): chunk s of CHUNK positions of head h. A row of
// head_dim halves is read as uvec4s of 8 halves by LP lanes (head_dim/8
// rounded up to a power of two; lanes past the row idle), so G = 128/LP
// rows are read at once and each invocation holds 8 rows of K and V in
// flight: CHUNK = 8 G (64 at head_dim 128; the op's ATTN_DECODE_CHUNK
// rule, which sizes the scratch). Scores (scaled by 1/sqrt(head_dim)) go
// through shared memory; the workgroup's max M, sum L of exp(s - M) and
// weighted V sum (head_dim floats) go to the scratch:
//   part[(h*splits + s)*head_dim + e]          weighted V
//   part[heads*splits*head_dim + (h*splits + s)*2 + {0,1}]   M, L
// Combine (workgroup h): o = sum_s exp(M_s - M) V_s / sum_s exp(M_s - M) L_s,
// rounded once to f16.
// f16 travels as 32-bit words (no 16-bit storage needed), arithmetic in f32.
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) readonly buffer Q { uint q[]; };
layout(set = 0, binding = 1) readonly buffer K { uvec4 k[]; };
layout(set = 0, binding = 2) readonly buffer V { uvec4 v[]; };
layout(set = 0, binding = 3) writeonly buffer O { uint o[]; };
layout(set = 0, binding = 4) buffer S { float part[]; };
layout(push_constant) uniform P { uint heads; uint head_dim; uint len; uint max_seq; } p;

const uint WG = 128u;
const float NEG_INF = -1.0 / 0.0;

uint lanes_per_row() {
    uint l = p.head_dim / 8u;
    return l <= 1u ? 1u : (1u << (findMSB(l - 1u) + 1u));
}

uint chunk() { return 8u * (WG / lanes_per_row()); }

#ifndef COMBINE
shared float part_dot[8u * WG];
shared float scores[8u * WG];
shared float red[8u * WG];
shared float tree[WG];

float block_reduce(float x, bool is_max) {
    uint t = gl_LocalInvocationID.x;
    tree[t] = x;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            tree[t] = is_max ? max(tree[t], tree[t + s]) : tree[t] + tree[t + s];
        }
        barrier();
    }
    float r = tree[0];
    barrier();
    return r;
}

float dot8(vec4 qa, vec4 qb, uvec4 kk) {
    vec2 k0 = unpackHalf2x16(kk.x), k1 = unpackHalf2x16(kk.y);
    vec2 k2 = unpackHalf2x16(kk.z), k3 = unpackHalf2x16(kk.w);
    return dot(qa, vec4(k0, k1)) + dot(qb, vec4(k2, k3));
}

void main() {
    uint hd = p.head_dim, L = hd / 8u, LP = lanes_per_row(), G = WG / LP, C = 8u * G;
    uint t = gl_LocalInvocationID.x, r = t % LP, g = t / LP;
    // Heads along x: the workgroups that run at once read every head of
    // their chunks, i.e. whole cache rows, not one slice of each.
    uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y;
    uint splits = (p.len + C - 1u) / C;
    uint d = p.heads * hd;
    float scale = inversesqrt(float(hd));
    vec4 qa = vec4(0.0), qb = vec4(0.0);
    if (r < L) {
        uint qw = (h * hd + r * 8u) / 2u;
        qa = vec4(unpackHalf2x16(q[qw]), unpackHalf2x16(q[qw + 1u])) * scale;
        qb = vec4(unpackHalf2x16(q[qw + 2u]), unpackHalf2x16(q[qw + 3u])) * scale;
    }
    uvec4 vv[8];
    for (uint j = 0u; j < 8u; ++j) {
        uint pos = s * C + g + G * j;
        float dp = 0.0;
        vv[j] = uvec4(0u);
        if (pos < p.len && r < L) {
            uint at = (pos * d + h * hd + r * 8u) / 8u;
            dp = dot8(qa, qb, k[at]);
            vv[j] = v[at];
        }
        part_dot[j * WG + t] = dp;
    }
    barrier();
    // Score of chunk row c = g + G j: the sum of its LP lanes' partial dots.
    float m = NEG_INF;
    for (uint c = t; c < C; c += WG) {
        uint gg = c % G, j = c / G;
        float sc = 0.0;
        for (uint rr = 0u; rr < LP; ++rr) sc += part_dot[j * WG + gg * LP + rr];
        sc = (s * C + c < p.len) ? sc : NEG_INF;
        scores[c] = sc;
        m = max(m, sc);
    }
    float M = block_reduce(m, true);
    float l = 0.0;
    for (uint c = t; c < C; c += WG) l += exp(scores[c] - M);
    float Ls = block_reduce(l, false);
    // Weighted V of this invocation's 8 rows, then summed over the G groups.
    float acc[8];
    for (uint e = 0u; e < 8u; ++e) acc[e] = 0.0;
    for (uint j = 0u; j < 8u; ++j) {
        float w = exp(scores[g + G * j] - M);
        vec2 v0 = unpackHalf2x16(vv[j].x), v1 = unpackHalf2x16(vv[j].y);
        vec2 v2 = unpackHalf2x16(vv[j].z), v3 = unpackHalf2x16(vv[j].w);
        acc[0] += w * v0.x; acc[1] += w * v0.y; acc[2] += w * v1.x; acc[3] += w * v1.y;
        acc[4] += w * v2.x; acc[5] += w * v2.y; acc[6] += w * v3.x; acc[7] += w * v3.y;
    }
    if (r < L) {
        for (uint e = 0u; e < 8u; ++e) red[g * hd + r * 8u + e] = acc[e];
    }
    barrier();
    uint slot = h * splits + s;
    for (uint e = t; e < hd; e += WG) {
        float sum = 0.0;
        for (uint gg = 0u; gg < G; ++gg) sum += red[gg * hd + e];
        part[slot * hd + e] = sum;
    }
    if (t == 0u) {
        uint b = p.heads * splits * hd + slot * 2u;
        part[b] = M;
        part[b + 1u] = Ls;
    }
}
#else
void main() {
    uint hd = p.head_dim, C = chunk();
    uint splits = (p.len + C - 1u) / C;
    uint t = gl_LocalInvocationID.x, h = gl_WorkGroupID.x;
    uint b = p.heads * splits * hd + h * splits * 2u;
    float M = NEG_INF;
    for (uint s = 0u; s < splits; ++s) M = max(M, part[b + 2u * s]);
    float L = 0.0;
    for (uint s = 0u; s < splits; ++s) L += exp(part[b + 2u * s] - M) * part[b + 2u * s + 1u];
    for (uint w = t; w < hd / 2u; w += WG) {
        vec2 acc = vec2(0.0);
        for (uint s = 0u; s < splits; ++s) {
            float f = exp(part[b + 2u * s] - M);
            uint at = (h * splits + s) * hd + 2u * w;
            acc += f * vec2(part[at], part[at + 1u]);
        }
        o[(h * hd) / 2u + w] = packHalf2x16(acc / L);
    }
}
#endif
