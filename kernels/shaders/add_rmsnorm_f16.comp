#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
//! variant add_rmsnorm_f16
//! variant add_rmsnorm_f16_v8 V8
// The fused residual + RMSNorm: h = x + r rounded to f16 and stored, then
// y = h / sqrt(mean(h^2) + eps) * g of that ROUNDED h (what a following
// kernel reading h computes), y rounded once; f32 arithmetic. One workgroup
// per row (grid-stride over rows). The _v8 variant (cols % 8 == 0,
// cols <= 8 * NPT * workgroup size) keeps the row in registers as 16-byte
// vectors of 8 halves (NPT per invocation): x and r read once, h and y
// written once. The plain variant (any cols) loops over halves; each
// invocation reads back only the h elements it wrote itself.
//
// Specialization constants: 0 workgroup size, 1 NPT (the _v8 variant).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NPT = 1;
#ifdef V8
layout(set = 0, binding = 0) readonly buffer X { uvec4 x[]; };
layout(set = 0, binding = 1) readonly buffer R { uvec4 res[]; };
layout(set = 0, binding = 2) readonly buffer G { uvec4 g[]; };
layout(set = 0, binding = 3) writeonly buffer H { uvec4 h[]; };
layout(set = 0, binding = 4) writeonly buffer Y { uvec4 y[]; };
#else
layout(set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(set = 0, binding = 1) readonly buffer R { float16_t res[]; };
layout(set = 0, binding = 2) readonly buffer G { float16_t g[]; };
layout(set = 0, binding = 3) buffer H { float16_t h[]; };
layout(set = 0, binding = 4) writeonly buffer Y { float16_t y[]; };
#endif
layout(push_constant) uniform P { uint rows; uint cols; float eps; } p;

shared float red[256];

float wg_sum(float v) {
    float s = subgroupAdd(v);
    if (subgroupElect()) { red[gl_SubgroupID] = s; }
    barrier();
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) { t += red[i]; }
    barrier();
    return t;
}

#ifdef V8
void unpack8(uvec4 v, out vec4 lo, out vec4 hi) {
    lo = vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y));
    hi = vec4(unpackHalf2x16(v.z), unpackHalf2x16(v.w));
}
uvec4 pack8(vec4 lo, vec4 hi) {
    return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
}
#endif

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
#ifdef V8
    uint n = p.cols >> 3;
    uvec4 v[NPT];
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint base = r * n;
        uvec4 rv[NPT];
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            uint c = tid + j * wg;
            v[j] = c < n ? x[base + c] : uvec4(0u);
            rv[j] = c < n ? res[base + c] : uvec4(0u);
        }
        float ss = 0.0;
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            vec4 lo, hi, rlo, rhi;
            unpack8(v[j], lo, hi);
            unpack8(rv[j], rlo, rhi);
            // Round h to f16 first: the norm reads what is stored.
            v[j] = pack8(lo + rlo, hi + rhi);
            uint c = tid + j * wg;
            if (c < n) { h[base + c] = v[j]; }
            unpack8(v[j], lo, hi);
            ss += dot(lo, lo) + dot(hi, hi);
        }
        float inv = inversesqrt(wg_sum(ss) / float(p.cols) + p.eps);
        [[unroll]] for (uint j = 0u; j < NPT; j++) {
            uint c = tid + j * wg;
            if (c < n) {
                vec4 lo, hi, glo, ghi;
                unpack8(v[j], lo, hi);
                unpack8(g[c], glo, ghi);
                y[base + c] = pack8(lo * inv * glo, hi * inv * ghi);
            }
        }
    }
#else
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint base = r * p.cols;
        float ss = 0.0;
        for (uint c = tid; c < p.cols; c += wg) {
            float16_t hv = float16_t(float(x[base + c]) + float(res[base + c]));
            h[base + c] = hv;
            float f = float(hv);
            ss += f * f;
        }
        float inv = inversesqrt(wg_sum(ss) / float(p.cols) + p.eps);
        for (uint c = tid; c < p.cols; c += wg) { y[base + c] = float16_t(float(h[base + c]) * inv * float(g[c])); }
    }
#endif
}
