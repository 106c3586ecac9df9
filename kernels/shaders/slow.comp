#version 450
// TEST-ONLY: one invocation runs `iters` xorshift32 steps, a serial
// dependency chain no compiler can shorten, then writes the result. Used
// with a tiny timeout to prove that a slow or hung kernel is reported, not waited for.
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint iters; } p;

void main() {
    uint x = 0x12345678u;
    for (uint i = 0u; i < p.iters; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    y[0] = x;
}
