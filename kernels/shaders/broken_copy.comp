#version 450
// TEST-ONLY: a copy with a wrong index. y[n/2] receives x[(n/2 + 1) % n]
// instead of x[n/2]; every other element is copied correctly. Exists to
// prove that the smoke checker catches a subtly wrong kernel.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint n; } p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        uint src = (i == p.n / 2u) ? (i + 1u) % p.n : i;
        y[i] = x[src];
    }
}
