// vec_add: c[i] = a[i] + b[i] (f32).
#include "common.h"

extern "C" __global__ void greta_vec_add(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ c, uint32_t n) {
    for (greta_u64 i = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (greta_u64)gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}
