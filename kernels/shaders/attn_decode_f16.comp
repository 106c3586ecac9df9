#version 450
// attn_decode_f16: one token's attention over the first `len` rows of an
// f16 KV cache ([max_seq][heads][head_dim]), split along the sequence and
// combined in one dispatch (flash decoding).
//
// Workgroup (h, s) walks `iters` chunks of C positions of head h (chunks
// s*iters.., the head's last workgroup fewer; the planner picks `iters`).
// A row of head_dim halves is read as uvec4s of 8 halves by LP lanes
// (head_dim/8 rounded up to a power of two; lanes past the row idle), so
// G = 128/LP rows are read at once and each invocation holds 8 rows of V in
// flight: C = 8 G (64 at head_dim 128; the op's chunk rule, which sizes the
// scratch). Scores (scaled by 1/sqrt(head_dim)) go through shared memory;
// the workgroup keeps a running max M, and each invocation its rows' sum of
// exp(score - M) and weighted V, rescaled when M grows (an online softmax
// over the chunks). The workgroup's partial goes to the scratch:
//   part[(h*splits + s)*head_dim + e]                         weighted V
//   part[heads*splits*head_dim + (h*splits + s)*2 + {0,1}]     M, L
//   part[heads*chunks*(head_dim + 2) + h]                      counter (uint)
// The counters are where the largest plan (one chunk per workgroup) would
// put them, past every partial. Each workgroup counts itself done on its
// head's counter after a memory barrier; the last one combines the head:
// o = sum_s exp(M_s - M) V_s / sum_s exp(M_s - M) L_s, rounded once to
// f16, and sets the counter back to 0 for the next dispatch (the scratch
// is uploaded as zeros). The scratch is coherent: the combining workgroup
// reads what the others wrote.
// f16 travels as 32-bit words (no 16-bit storage needed), arithmetic in f32.
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) readonly buffer Q { uint q[]; };
layout(set = 0, binding = 1) readonly buffer K { uvec4 k[]; };
layout(set = 0, binding = 2) readonly buffer V { uvec4 v[]; };
layout(set = 0, binding = 3) writeonly buffer O { uint o[]; };
layout(set = 0, binding = 4) coherent buffer S { uint part[]; };
layout(push_constant) uniform P { uint heads; uint head_dim; uint len; uint max_seq; uint iters; } p;

const uint WG = 128u;
const float NEG_INF = -1.0 / 0.0;

shared float part_dot[8u * WG];
shared float scores[8u * WG];
shared float red[8u * WG];
shared float tree[WG];
shared float tree2[16];
shared uint last;

uint lanes_per_row() {
    uint l = p.head_dim / 8u;
    return l <= 1u ? 1u : (1u << (findMSB(l - 1u) + 1u));
}

// Max or sum over the workgroup, in two barriers: 16 invocations fold 8
// values each, then every invocation folds their 16. (A later call writes
// `tree` only after every invocation has left this one's second barrier,
// and `tree2` only after its own first.)
float block_reduce(float x, bool is_max) {
    uint t = gl_LocalInvocationID.x;
    tree[t] = x;
    barrier();
    if (t < 16u) {
        float r = tree[t * 8u];
        for (uint i = 1u; i < 8u; ++i) {
            r = is_max ? max(r, tree[t * 8u + i]) : r + tree[t * 8u + i];
        }
        tree2[t] = r;
    }
    barrier();
    float r = tree2[0];
    for (uint i = 1u; i < 16u; ++i) {
        r = is_max ? max(r, tree2[i]) : r + tree2[i];
    }
    return r;
}

float dot8(vec4 qa, vec4 qb, uvec4 kk) {
    vec2 k0 = unpackHalf2x16(kk.x), k1 = unpackHalf2x16(kk.y);
    vec2 k2 = unpackHalf2x16(kk.z), k3 = unpackHalf2x16(kk.w);
    return dot(qa, vec4(k0, k1)) + dot(qb, vec4(k2, k3));
}

float ld(uint i) { return uintBitsToFloat(part[i]); }

void main() {
    uint hd = p.head_dim, L = hd / 8u, LP = lanes_per_row(), G = WG / LP, C = 8u * G;
    uint t = gl_LocalInvocationID.x, r = t % LP, g = t / LP;
    // Heads along x: the workgroups that run at once read every head of
    // their chunks, i.e. whole cache rows, not one slice of each.
    uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y;
    uint chunks = (p.len + C - 1u) / C, splits = (chunks + p.iters - 1u) / p.iters;
    uint d = p.heads * hd;
    float scale = inversesqrt(float(hd));
    vec4 qa = vec4(0.0), qb = vec4(0.0);
    if (r < L) {
        uint qw = (h * hd + r * 8u) / 2u;
        qa = vec4(unpackHalf2x16(q[qw]), unpackHalf2x16(q[qw + 1u])) * scale;
        qb = vec4(unpackHalf2x16(q[qw + 2u]), unpackHalf2x16(q[qw + 3u])) * scale;
    }
    // The workgroup's running max; this invocation's sum of its rows'
    // weights (counted by lane 0 of each row) and its 8 elements of their
    // weighted V.
    float M = NEG_INF, l = 0.0;
    float acc[8];
    for (uint e = 0u; e < 8u; ++e) acc[e] = 0.0;
    uint c_end = min((s + 1u) * p.iters, chunks);
    for (uint c = s * p.iters; c < c_end; ++c) {
        uvec4 vv[8];
        for (uint j = 0u; j < 8u; ++j) {
            uint pos = c * C + g + G * j;
            float dp = 0.0;
            vv[j] = uvec4(0u);
            if (pos < p.len && r < L) {
                uint at = (pos * d + h * hd + r * 8u) / 8u;
                dp = dot8(qa, qb, k[at]);
                vv[j] = v[at];
            }
            // Row i = g + G j's LP partial dots, rotated by i within the
            // row's slots: the invocation that sums a row then reads a
            // different bank from its neighbours (not 16 to a bank).
            part_dot[j * WG + g * LP + ((r + g + G * j) & (LP - 1u))] = dp;
        }
        barrier();
        // Score of chunk row i = g + G j: the sum of its LP lanes' dots.
        float m = NEG_INF;
        for (uint i = t; i < C; i += WG) {
            uint gg = i % G, j = i / G;
            float sc = 0.0;
            for (uint rr = 0u; rr < LP; ++rr) sc += part_dot[j * WG + gg * LP + ((rr + i) & (LP - 1u))];
            sc = (c * C + i < p.len) ? sc : NEG_INF;
            scores[i] = sc;
            m = max(m, sc);
        }
        // The chunk's first position is < len: the new max is finite.
        float Mn = max(M, block_reduce(m, true));
        float f = exp(M - Mn);
        l *= f;
        for (uint e = 0u; e < 8u; ++e) acc[e] *= f;
        for (uint j = 0u; j < 8u; ++j) {
            float w = exp(scores[g + G * j] - Mn);
            l += r == 0u ? w : 0.0;
            vec2 v0 = unpackHalf2x16(vv[j].x), v1 = unpackHalf2x16(vv[j].y);
            vec2 v2 = unpackHalf2x16(vv[j].z), v3 = unpackHalf2x16(vv[j].w);
            acc[0] += w * v0.x; acc[1] += w * v0.y; acc[2] += w * v1.x; acc[3] += w * v1.y;
            acc[4] += w * v2.x; acc[5] += w * v2.y; acc[6] += w * v3.x; acc[7] += w * v3.y;
        }
        M = Mn;
        // The next chunk overwrites the dots and scores.
        barrier();
    }
    float Ls = block_reduce(l, false);
    if (r < L) {
        for (uint e = 0u; e < 8u; ++e) red[g * hd + r * 8u + e] = acc[e];
    }
    barrier();
    uint slot = h * splits + s;
    for (uint e = t; e < hd; e += WG) {
        float sum = 0.0;
        for (uint gg = 0u; gg < G; ++gg) sum += red[gg * hd + e];
        part[slot * hd + e] = floatBitsToUint(sum);
    }
    uint mlb = p.heads * splits * hd;
    if (t == 0u) {
        part[mlb + slot * 2u] = floatBitsToUint(M);
        part[mlb + slot * 2u + 1u] = floatBitsToUint(Ls);
    }
    // Count this workgroup done on its head; the last one combines.
    uint count = p.heads * chunks * (hd + 2u) + h;
    memoryBarrierBuffer();
    barrier();
    if (t == 0u) {
        last = atomicAdd(part[count], 1u) == splits - 1u ? 1u : 0u;
    }
    barrier();
    if (last == 0u) {
        return;
    }
    memoryBarrierBuffer();
    uint ml = mlb + h * splits * 2u;
    float mx = NEG_INF;
    for (uint k2 = t; k2 < splits; k2 += WG) mx = max(mx, ld(ml + 2u * k2));
    float Mh = block_reduce(mx, true);
    float ls = 0.0;
    for (uint k2 = t; k2 < splits; k2 += WG) ls += exp(ld(ml + 2u * k2) - Mh) * ld(ml + 2u * k2 + 1u);
    float Lh = block_reduce(ls, false);
    // Weighted V: invocation (sg, e4) sums 4 elements over the splits sg,
    // sg + SG, ..., then the SG sums meet in `red`.
    uint E4 = hd / 4u, SG = WG / E4;
    if (t < SG * E4) {
        uint e4 = t % E4, sg = t / E4;
        uint pv = h * splits * hd + e4 * 4u;
        vec4 a = vec4(0.0);
        for (uint k2 = sg; k2 < splits; k2 += SG) {
            float w = exp(ld(ml + 2u * k2) - Mh);
            uint at = pv + k2 * hd;
            a += w * vec4(ld(at), ld(at + 1u), ld(at + 2u), ld(at + 3u));
        }
        uint at = sg * hd + e4 * 4u;
        red[at] = a.x;
        red[at + 1u] = a.y;
        red[at + 2u] = a.z;
        red[at + 3u] = a.w;
    }
    barrier();
    for (uint w = t; w < hd / 2u; w += WG) {
        vec2 x = vec2(0.0);
        for (uint sg = 0u; sg < SG; ++sg) x += vec2(red[sg * hd + 2u * w], red[sg * hd + 2u * w + 1u]);
        o[(h * hd) / 2u + w] = packHalf2x16(x / Lh);
    }
    if (t == 0u) {
        part[count] = 0u;
    }
}
