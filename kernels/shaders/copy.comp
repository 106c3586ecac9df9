#version 450
// y[i] = x[i] for i < n. vec4 loads/stores, grid-stride loop; tail as in fill.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { uvec4 x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uvec4 y[]; };
layout(push_constant) uniform P { uint n; } p;

void main() {
    uint n4 = p.n >> 2;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < n4; i += stride) {
        y[i] = x[i];
    }
    uint tail = p.n & 3u;
    if (gl_GlobalInvocationID.x < tail) {
        y[n4][gl_GlobalInvocationID.x] = x[n4][gl_GlobalInvocationID.x];
    }
}
