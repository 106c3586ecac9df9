#version 450
// y[i] = value for i < n. vec4 stores, grid-stride loop (any n, any
// workgroup count); the n % 4 tail is written by the first invocations.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) writeonly buffer Y { uvec4 y[]; };
layout(push_constant) uniform P { uint n; uint value; } p;

void main() {
    uint n4 = p.n >> 2;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uvec4 v = uvec4(p.value);
    for (uint i = gl_GlobalInvocationID.x; i < n4; i += stride) {
        y[i] = v;
    }
    uint tail = p.n & 3u;
    if (gl_GlobalInvocationID.x < tail) {
        y[n4][gl_GlobalInvocationID.x] = p.value;
    }
}
