// TEST-ONLY: a copy with a wrong index: y[n/2] receives x[(n/2 + 1) % n].
// Exists so tests can prove the checker catches it (needs n >= 2 and inputs
// that differ there).
#include "common.h"

extern "C" __global__ void greta_test_broken_copy(const uint32_t* __restrict__ x, uint32_t* __restrict__ y,
                                                  uint32_t n) {
    for (greta_u64 i = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (greta_u64)gridDim.x * blockDim.x) {
        const greta_u64 src = (i == n / 2) ? (i + 1) % n : i;
        y[i] = x[src];
    }
}
