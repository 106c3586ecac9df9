#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
//! variant layernorm
//! variant layernorm_vec4 VEC4
//! variant layernorm_reg VEC4 REG
// y[r][c] = (x[r][c] - mean) / sqrt(var + eps) * w[c] + b[c], biased
// variance computed in a second pass around the mean (no cancellation).
// One workgroup per row (grid-stride over rows).
// The _vec4 variant (cols % 4 == 0) reads and writes vec4s: a quarter of the
// memory instructions, full-width transactions. The _reg variant keeps the
// row in registers (NPT vec4s per invocation, constant 1, with
// cols <= 4 * NPT * workgroup size): x is read from memory once; both
// passes (mean, then variance around it) run over the registers.
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
layout(set = 0, binding = 1) readonly buffer W { T w[]; };
layout(set = 0, binding = 2) readonly buffer B { T b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { T y[]; };
layout(push_constant) uniform P { uint rows; uint cols; float eps; } p;

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
        float s = 0.0;
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            uint c = tid + j * wg;
            v[j] = c < n ? x[base + c] : T(0.0);
            s += SUM(v[j]);
        }
        float mean = wg_sum(s) / float(p.cols);
        float q = 0.0;
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            uint c = tid + j * wg;
            T d = v[j] - mean;
            q += c < n ? SQ(d) : 0.0;
        }
        float inv = inversesqrt(wg_sum(q) / float(p.cols) + p.eps);
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            uint c = tid + j * wg;
            if (c < n) { y[base + c] = fma((v[j] - mean) * inv, w[c], b[c]); }
        }
    }
#else
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint base = r * n;
        float s = 0.0;
        for (uint c = tid; c < n; c += wg) { s += SUM(x[base + c]); }
        float mean = wg_sum(s) / float(p.cols);
        float q = 0.0;
        for (uint c = tid; c < n; c += wg) { T d = x[base + c] - mean; q += SQ(d); }
        float inv = inversesqrt(wg_sum(q) / float(p.cols) + p.eps);
        for (uint c = tid; c < n; c += wg) { y[base + c] = fma((x[base + c] - mean) * inv, w[c], b[c]); }
    }
#endif
}
