// fill: y[i] = value for i < n (u32).
#include "common.h"

extern "C" __global__ void greta_fill(uint32_t* __restrict__ y, uint32_t n, uint32_t value) {
    for (greta_u64 i = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (greta_u64)gridDim.x * blockDim.x) {
        y[i] = value;
    }
}
