#version 450
// c[i] = a[i] + b[i] (f32). vec4 loads/stores, grid-stride loop; tail as in fill.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 1) readonly buffer B { vec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer C { vec4 c[]; };
layout(push_constant) uniform P { uint n; } p;

void main() {
    uint n4 = p.n >> 2;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < n4; i += stride) {
        c[i] = a[i] + b[i];
    }
    uint tail = p.n & 3u;
    if (gl_GlobalInvocationID.x < tail) {
        uint j = gl_GlobalInvocationID.x;
        c[n4][j] = a[n4][j] + b[n4][j];
    }
}
