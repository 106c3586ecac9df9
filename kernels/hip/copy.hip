// copy: y[i] = x[i] for i < n (u32).
#include "common.h"

extern "C" __global__ void greta_copy(const uint32_t* __restrict__ x, uint32_t* __restrict__ y, uint32_t n) {
    for (greta_u64 i = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (greta_u64)gridDim.x * blockDim.x) {
        y[i] = x[i];
    }
}
