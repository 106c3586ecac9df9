#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
//! variant softmax
//! variant softmax_vec4 VEC4
//! variant softmax_reg VEC4 REG
// Row-wise softmax, max-subtracted: y = exp(x - max) / sum(exp(x - max)).
// One workgroup per row (grid-stride over rows); any cols.
// The _vec4 variant (cols % 4 == 0) reads and writes vec4s: a quarter of the
// memory instructions, full-width transactions. The _reg variant keeps the
// row in registers (NPT vec4s per invocation, constant 1, with
// cols <= 4 * NPT * workgroup size): x is read once, exp computed once.
layout(local_size_x_id = 0) in;
#ifdef REG
layout(constant_id = 1) const uint NPT = 1;
#endif
#ifdef VEC4
#define T vec4
#define SUM(v) dot(v, vec4(1.0))
#define SQ(v) dot(v, v)
#define MAX4(v) max(max(v.x, v.y), max(v.z, v.w))
#else
#define T float
#define SUM(v) (v)
#define SQ(v) ((v) * (v))
#define MAX4(v) (v)
#endif
layout(set = 0, binding = 0) readonly buffer X { T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform P { uint rows; uint cols; } p;

shared float red[256];

// Workgroup-wide sum/max: subgroup reduction, one partial per subgroup in
// shared memory, then every invocation folds the partials in the same
// order (identical result everywhere, no extra barrier round).
float wg_sum(float v) {
    float s = subgroupAdd(v);
    if (subgroupElect()) { red[gl_SubgroupID] = s; }
    barrier();
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) { t += red[i]; }
    barrier();
    return t;
}

float wg_max(float v) {
    float s = subgroupMax(v);
    if (subgroupElect()) { red[gl_SubgroupID] = s; }
    barrier();
    float t = red[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++) { t = max(t, red[i]); }
    barrier();
    return t;
}

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
#ifdef VEC4
    uint n = p.cols >> 2;
#else
    uint n = p.cols;
#endif
#ifdef REG
    T v[NPT];
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint base = r * n;
        float m = -3.402823466e+38;
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            uint c = tid + j * wg;
            v[j] = c < n ? x[base + c] : T(-3.402823466e+38);
            m = max(m, MAX4(v[j]));
        }
        m = wg_max(m);
        float s = 0.0;
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            v[j] = exp(v[j] - m);
            s += SUM(v[j]);
        }
        float inv = 1.0 / wg_sum(s);
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            uint c = tid + j * wg;
            if (c < n) { y[base + c] = v[j] * inv; }
        }
    }
#else
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint base = r * n;
        float m = -3.402823466e+38;
        for (uint c = tid; c < n; c += wg) { m = max(m, MAX4(x[base + c])); }
        m = wg_max(m);
        float s = 0.0;
        for (uint c = tid; c < n; c += wg) { s += SUM(exp(x[base + c] - m)); }
        float inv = 1.0 / wg_sum(s);
        for (uint c = tid; c < n; c += wg) { y[base + c] = exp(x[base + c] - m) * inv; }
    }
#endif
}
