// TEST-ONLY: a copy with a wrong index. The thread for element n/2 writes
// element n/2 + 1 instead, so n/2 is never written and n/2 + 1 is written
// twice. Exists so tests can prove the checker catches it.
#include "common.h"

extern "C" __global__ void greta_test_broken_copy(const uint32_t* __restrict__ x, uint32_t* __restrict__ y,
                                                  uint32_t n) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const uint32_t j = (i == n / 2) ? i + 1 : i;
        if (j < n) y[j] = x[j];
    }
}
