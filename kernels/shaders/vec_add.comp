#version 450
#extension GL_EXT_control_flow_attributes : require
// c[i] = a[i] + b[i] (f32). vec4 loads/stores; U vec4s per invocation per
// iteration (constant 1), loads first, grid-stride; tail as in fill.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint U = 1;
layout(set = 0, binding = 0) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 1) readonly buffer B { vec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer C { vec4 c[]; };
layout(push_constant) uniform P { uint n; } p;

void main() {
    uint n4 = p.n >> 2;
    uint wg = gl_WorkGroupSize.x;
    uint step = gl_NumWorkGroups.x * wg * U;
    vec4 ta[U];
    vec4 tb[U];
    for (uint base = gl_WorkGroupID.x * wg * U + gl_LocalInvocationID.x; base < n4; base += step) {
        [[unroll]] for (uint j = 0u; j < U; j++) {
            uint i = base + j * wg;
            if (i < n4) { ta[j] = a[i]; tb[j] = b[i]; }
        }
        [[unroll]] for (uint j = 0u; j < U; j++) {
            uint i = base + j * wg;
            if (i < n4) { c[i] = ta[j] + tb[j]; }
        }
    }
    uint tail = p.n & 3u;
    if (gl_GlobalInvocationID.x < tail) {
        uint j = gl_GlobalInvocationID.x;
        c[n4][j] = a[n4][j] + b[n4][j];
    }
}
