#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
//! variant gemv_add_f16 ADD
//! variant gemv_add_f16_v8 ADD V8
//! variant rms_gemv_swiglu_f16 SWIGLU
//! variant rms_gemv_swiglu_f16_v8 SWIGLU V8
//! variant rms_gemv_rope_kv_f16 ROPE
//! variant rms_gemv_rope_kv_f16_v8 ROPE V8
// The decode projections with the block's small steps fused in: gemv_f16's
// loop (a subgroup per unit of work, grid-stride; its lanes split the
// columns, subgroupAdd folds them; no shared memory, no barrier) with
//  - ADD:    y[o] = r[o] + W[o] x                      (residual epilogue)
//  - SWIGLU: a[j] = silu(W[j] n) * W[rows + j] n       (norm prologue,
//            SwiGLU epilogue; a unit is the gate row j and the up row j)
//  - ROPE:   [q; k; v] = W n, RoPE of q and k at pos0, k and v into row
//            pos0 of the caches (norm prologue; a unit is the pair of rows
//            i, i + head_dim/2 of one head that RoPE mixes)
// where n = x / sqrt(mean(x^2) + eps) * g: the prologue scales x by g as it
// loads and sums x^2 beside the dot products (x is the short decode row, in
// cache after the first unit), and the epilogue multiplies the folded sums
// by the inverse RMS; mathematically W (x r g) = r W (x g). The _v8
// variants (cols % 8 == 0) read 16-byte vectors of 8 halves, UNROLL per
// lane in flight; the plain ones read halves. One rounding to f16 per
// output. ROPE's cos/sin of pos0 * theta^(-2i/head_dim) come from a
// [head_dim/2] table the runtime computes in f64 (as rope_kv_f16.comp).
//
// Specialization constants: 0 workgroup size, 1 UNROLL (the _v8 variants),
// 2 SG_PLANNED (the subgroup size the planner sized the dispatch for; the
// kernel reads gl_SubgroupSize and strides over any units left), 3 PROBE
// (NORM only; 1 is a diagnostic variant, wrong on purpose: the norm's sum
// of x^2 leaves out the last lane that has columns, as a prologue that lost
// a lane would; `--inject prologue` runs it to show the layer's check
// catches it).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint UNROLL = 4;
layout(constant_id = 2) const uint SG_PLANNED = 32;
layout(constant_id = 3) const uint PROBE = 0;

#if defined(SWIGLU) || defined(ROPE)
#define NORM 1
#define PAIR 1
#endif

#ifdef V8
#define VEC uvec4
#else
#define VEC float16_t
#endif

#ifdef ADD
layout(set = 0, binding = 0) readonly buffer X { VEC x[]; };
layout(set = 0, binding = 1) readonly buffer W { VEC w[]; };
layout(set = 0, binding = 2) readonly buffer R { float16_t r[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float16_t y[]; };
layout(push_constant) uniform P { uint rows; uint cols; } p;
#else
layout(set = 0, binding = 0) readonly buffer X { VEC x[]; };
layout(set = 0, binding = 1) readonly buffer G { VEC g[]; };
layout(set = 0, binding = 2) readonly buffer W { VEC w[]; };
#endif
#ifdef SWIGLU
layout(set = 0, binding = 3) writeonly buffer A { float16_t a[]; };
layout(push_constant) uniform P { uint rows; uint cols; float eps; } p;
#endif
#ifdef ROPE
layout(set = 0, binding = 3) writeonly buffer Q { float16_t q[]; };
layout(set = 0, binding = 4) buffer KC { float16_t kc[]; };
layout(set = 0, binding = 5) buffer VC { float16_t vc[]; };
layout(set = 0, binding = 6) readonly buffer T { vec2 cs[]; };
layout(push_constant) uniform P { uint heads; uint head_dim; uint pos0; float eps; } p;
#endif

// The per-lane sums of one unit: acc0 (and acc1) the dot products with the
// (scaled) input, ss the sum of x^2 (NORM).
float acc0, acc1, ss;

#ifdef V8
vec4 lo4(uvec4 v) { return vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y)); }
vec4 hi4(uvec4 v) { return vec4(unpackHalf2x16(v.z), unpackHalf2x16(v.w)); }

// One 8-half step: wa (and wb) against x (scaled by gg under NORM; its
// squares summed where `sq`).
void step8(uvec4 wa, uvec4 wb, uvec4 xv, uvec4 gg, bool sq) {
    vec4 x0 = lo4(xv), x1 = hi4(xv);
#ifdef NORM
    ss += sq ? dot(x0, x0) + dot(x1, x1) : 0.0;
    x0 *= lo4(gg);
    x1 *= hi4(gg);
#endif
    acc0 += dot(lo4(wa), x0) + dot(hi4(wa), x1);
#ifdef PAIR
    acc1 += dot(lo4(wb), x0) + dot(hi4(wb), x1);
#endif
}
#endif

// The sums of rows r0 (and r1) against the input, over this lane's columns.
void sums(uint r0, uint r1, uint cols, uint lane, uint sgs) {
    acc0 = 0.0;
    acc1 = 0.0;
    ss = 0.0;
#ifdef V8
    uint have = cols >> 3;
#else
    uint have = cols;
#endif
    bool sq = PROBE == 0u || lane != min(sgs, have) - 1u;
#ifdef V8
    uint n8 = cols >> 3;
    uint b0 = r0 * n8, b1 = r1 * n8;
    uint i = lane;
    for (; i + sgs * (UNROLL - 1u) < n8; i += sgs * UNROLL) {
        uvec4 wa[UNROLL];
        uvec4 wb[UNROLL];
        uvec4 xv[UNROLL];
        uvec4 gg[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) { wa[u] = w[b0 + i + u * sgs]; }
#ifdef PAIR
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) { wb[u] = w[b1 + i + u * sgs]; }
#endif
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) { xv[u] = x[i + u * sgs]; }
#ifdef NORM
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) { gg[u] = g[i + u * sgs]; }
#endif
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) { step8(wa[u], wb[u], xv[u], gg[u], sq); }
    }
    for (; i < n8; i += sgs) {
        uvec4 wb = uvec4(0u), gg = uvec4(0u);
#ifdef PAIR
        wb = w[b1 + i];
#endif
#ifdef NORM
        gg = g[i];
#endif
        step8(w[b0 + i], wb, x[i], gg, sq);
    }
#else
    uint b0 = r0 * cols, b1 = r1 * cols;
    for (uint c = lane; c < cols; c += sgs) {
        float xv = float(x[c]);
#ifdef NORM
        ss += sq ? xv * xv : 0.0;
        xv *= float(g[c]);
#endif
        acc0 += float(w[b0 + c]) * xv;
#ifdef PAIR
        acc1 += float(w[b1 + c]) * xv;
#endif
    }
#endif
    acc0 = subgroupAdd(acc0);
#ifdef PAIR
    acc1 = subgroupAdd(acc1);
#endif
#ifdef NORM
    ss = subgroupAdd(ss);
#endif
}

void main() {
    uint lane = gl_SubgroupInvocationID;
    uint sgs = gl_SubgroupSize;
    uint per_wg = gl_NumSubgroups;
#ifdef ADD
    uint units = p.rows, cols = p.cols;
#endif
#ifdef SWIGLU
    uint units = p.rows, cols = p.cols;
#endif
#ifdef ROPE
    uint hd = p.head_dim, half_ = hd >> 1u, cols = p.heads * hd;
    uint units = 3u * (cols >> 1u);
#endif
    for (uint o = gl_WorkGroupID.x * per_wg + gl_SubgroupID; o < units; o += gl_NumWorkGroups.x * per_wg) {
#ifdef ADD
        sums(o, o, cols, lane, sgs);
        if (subgroupElect()) { y[o] = float16_t(acc0 + float(r[o])); }
#endif
#ifdef SWIGLU
        sums(o, p.rows + o, cols, lane, sgs);
        if (subgroupElect()) {
            float inv = 1.0 / sqrt(ss / float(cols) + p.eps);
            float gate = acc0 * inv, up = acc1 * inv;
            a[o] = float16_t(gate / (1.0 + exp(-gate)) * up);
        }
#endif
#ifdef ROPE
        // Unit o: section (q, k, v), head, index i < head_dim/2.
        uint per_sec = cols >> 1u;
        uint sec = o / per_sec, within = o % per_sec;
        uint head = within / half_, i = within % half_;
        uint r0 = sec * cols + head * hd + i;
        sums(r0, r0 + half_, cols, lane, sgs);
        if (subgroupElect()) {
            float inv = 1.0 / sqrt(ss / float(cols) + p.eps);
            float va = acc0 * inv, vb = acc1 * inv;
            uint at = head * hd + i;
            if (sec == 2u) {
                uint row = p.pos0 * cols;
                vc[row + at] = float16_t(va);
                vc[row + at + half_] = float16_t(vb);
            } else {
                vec2 c = cs[i];
                float ya = va * c.x - vb * c.y;
                float yb = va * c.y + vb * c.x;
                if (sec == 0u) {
                    q[at] = float16_t(ya);
                    q[at + half_] = float16_t(yb);
                } else {
                    uint row = p.pos0 * cols;
                    kc[row + at] = float16_t(ya);
                    kc[row + at + half_] = float16_t(yb);
                }
            }
        }
#endif
    }
}
