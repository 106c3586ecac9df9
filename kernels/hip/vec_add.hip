// vec_add: c[i] = a[i] + b[i] (f32).
#include "common.h"

extern "C" __global__ void greta_vec_add(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ c, uint32_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}
