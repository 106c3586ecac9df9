#version 450
#extension GL_EXT_control_flow_attributes : require
// y[i] = value for i < n. vec4 stores; each invocation writes U vec4s per
// iteration (U = constant 1, spaced one workgroup apart so every store
// instruction stays coalesced), grid-stride over the rest (any n, any
// workgroup count); the n % 4 tail is written by the first invocations.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint U = 1;
layout(set = 0, binding = 0) writeonly buffer Y { uvec4 y[]; };
layout(push_constant) uniform P { uint n; uint value; } p;

void main() {
    uint n4 = p.n >> 2;
    uint wg = gl_WorkGroupSize.x;
    uint step = gl_NumWorkGroups.x * wg * U;
    uvec4 v = uvec4(p.value);
    for (uint base = gl_WorkGroupID.x * wg * U + gl_LocalInvocationID.x; base < n4; base += step) {
        [[unroll]] for (uint j = 0u; j < U; j++) {
            uint i = base + j * wg;
            if (i < n4) { y[i] = v; }
        }
    }
    uint tail = p.n & 3u;
    if (gl_GlobalInvocationID.x < tail) {
        y[n4][gl_GlobalInvocationID.x] = p.value;
    }
}
