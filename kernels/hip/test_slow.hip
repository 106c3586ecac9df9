// TEST-ONLY: one thread runs `iters` xorshift32 (13, 17, 5) steps from the
// seed 0x12345678 (a serial chain the compiler cannot shorten) and writes
// the result to y[0]; long enough to trip a submission timeout.
#include "common.h"

extern "C" __global__ void greta_test_slow(uint32_t* __restrict__ y, uint32_t iters) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    uint32_t x = 0x12345678u;
    for (uint32_t i = 0; i < iters; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    y[0] = x;
}
