#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
//! variant gemv_f16
//! variant gemv_f16_v8 V8
// y[o] = sum_i w[o][i] x[i]; x, w, y f16, f32 accumulation, y rounded once.
// Memory-bound: w is read once. Each subgroup owns one row at a time
// (grid-stride over rows: workgroup g, subgroup s take row
// g * gl_NumSubgroups + s), its lanes split the row's columns and the
// partial sums are folded by subgroupAdd: no shared memory, no barrier, so
// any subgroup size works and the planner only sizes the dispatch. The _v8
// variant (cols % 8 == 0) reads 16-byte vectors of 8 halves, UNROLL of them
// per lane in flight before any is used (x's matching vectors beside them;
// x is small and stays in cache); the plain variant reads halves.
//
// Specialization constants: 0 workgroup size, 1 UNROLL (the _v8 variant),
// 2 SG_PLANNED (the subgroup size the planner sized the dispatch for; the
// kernel itself reads gl_SubgroupSize and strides over any rows left).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint UNROLL = 4;
layout(constant_id = 2) const uint SG_PLANNED = 32;
#ifdef V8
layout(set = 0, binding = 0) readonly buffer X { uvec4 x[]; };
layout(set = 0, binding = 1) readonly buffer W { uvec4 w[]; };
#else
layout(set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(set = 0, binding = 1) readonly buffer W { float16_t w[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Y { float16_t y[]; };
layout(push_constant) uniform P { uint rows; uint cols; } p;

#ifdef V8
float dot8(uvec4 a, uvec4 b) {
    vec4 a0 = vec4(unpackHalf2x16(a.x), unpackHalf2x16(a.y));
    vec4 a1 = vec4(unpackHalf2x16(a.z), unpackHalf2x16(a.w));
    vec4 b0 = vec4(unpackHalf2x16(b.x), unpackHalf2x16(b.y));
    vec4 b1 = vec4(unpackHalf2x16(b.z), unpackHalf2x16(b.w));
    return dot(a0, b0) + dot(a1, b1);
}
#endif

void main() {
    uint lane = gl_SubgroupInvocationID;
    uint sgs = gl_SubgroupSize;
    uint per_wg = gl_NumSubgroups;
    for (uint o = gl_WorkGroupID.x * per_wg + gl_SubgroupID; o < p.rows; o += gl_NumWorkGroups.x * per_wg) {
        float acc = 0.0;
#ifdef V8
        uint n8 = p.cols >> 3;
        uint base = o * n8;
        uint i = lane;
        for (; i + sgs * (UNROLL - 1u) < n8; i += sgs * UNROLL) {
            uvec4 a[UNROLL];
            uvec4 b[UNROLL];
            [[unroll]] for (uint u = 0u; u < UNROLL; u++) { a[u] = w[base + i + u * sgs]; }
            [[unroll]] for (uint u = 0u; u < UNROLL; u++) { b[u] = x[i + u * sgs]; }
            [[unroll]] for (uint u = 0u; u < UNROLL; u++) { acc += dot8(a[u], b[u]); }
        }
        for (; i < n8; i += sgs) { acc += dot8(w[base + i], x[i]); }
#else
        uint base = o * p.cols;
        for (uint c = lane; c < p.cols; c += sgs) { acc += float(w[base + c]) * float(x[c]); }
#endif
        acc = subgroupAdd(acc);
        if (subgroupElect()) { y[o] = float16_t(acc); }
    }
}
