// TEST-ONLY: a copy with a wrong index: y[n/2] receives x[(n/2 + 1) % n].
// Exists so tests can prove the checker catches it (needs n >= 2 and inputs
// that differ there).
#include "common.h"

extern "C" __global__ void greta_test_broken_copy(const uint32_t* __restrict__ x, uint32_t* __restrict__ y,
                                                  uint32_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t src = (i == n / 2) ? (i + 1) % n : i;
        y[i] = x[src];
    }
}
