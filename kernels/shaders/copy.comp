#version 450
#extension GL_EXT_control_flow_attributes : require
// y[i] = x[i] for i < n. vec4 loads/stores; each invocation moves U vec4s
// per iteration (constant 1), all U loads issued before the first store so
// that U loads are in flight, grid-stride over the rest; tail as in fill.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint U = 1;
layout(set = 0, binding = 0) readonly buffer X { uvec4 x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uvec4 y[]; };
layout(push_constant) uniform P { uint n; } p;

void main() {
    uint n4 = p.n >> 2;
    uint wg = gl_WorkGroupSize.x;
    uint step = gl_NumWorkGroups.x * wg * U;
    uvec4 t[U];
    for (uint base = gl_WorkGroupID.x * wg * U + gl_LocalInvocationID.x; base < n4; base += step) {
        [[unroll]] for (uint j = 0u; j < U; j++) {
            uint i = base + j * wg;
            if (i < n4) { t[j] = x[i]; }
        }
        [[unroll]] for (uint j = 0u; j < U; j++) {
            uint i = base + j * wg;
            if (i < n4) { y[i] = t[j]; }
        }
    }
    uint tail = p.n & 3u;
    if (gl_GlobalInvocationID.x < tail) {
        y[n4][gl_GlobalInvocationID.x] = x[n4][gl_GlobalInvocationID.x];
    }
}
