#version 450
// TEST-ONLY: one invocation runs `iters` xorshift32 steps, a serial
// dependency chain no compiler can shorten, then writes the result. Used
// with a tiny timeout to prove that a slow or hung kernel is reported, not
// waited for. The count is split over nested loops of at most 1024
// iterations because llvmpipe/lavapipe caps any single loop at 65535
// iterations (its infinite-loop guard).
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint iters; } p;

uint step(uint x) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
}

void main() {
    uint x = 0x12345678u;
    uint a = p.iters >> 20;
    uint b = (p.iters >> 10) & 1023u;
    uint c = p.iters & 1023u;
    for (uint i = 0u; i < a; i++) {
        for (uint j = 0u; j < 1024u; j++) {
            for (uint k = 0u; k < 1024u; k++) { x = step(x); }
        }
    }
    for (uint j = 0u; j < b; j++) {
        for (uint k = 0u; k < 1024u; k++) { x = step(x); }
    }
    for (uint k = 0u; k < c; k++) { x = step(x); }
    y[0] = x;
}
