// fill: y[i] = value for i < n (u32). 16-byte stores, GRETA_VEC_UNROLL per
// grid-stride step; the n % 4 tail element-wise.
#include "common.h"

extern "C" __global__ void greta_fill(uint32_t* __restrict__ y, uint32_t n, uint32_t value) {
    greta_u4* yv = (greta_u4*)y;
    greta_u4 v;
    v.x = value;
    v.y = value;
    v.z = value;
    v.w = value;
    const greta_u64 nv = n / 4;
    const greta_u64 stride = (greta_u64)gridDim.x * blockDim.x;
    const greta_u64 id = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x;
    greta_u64 i = id;
    for (; i + (GRETA_VEC_UNROLL - 1) * stride < nv; i += GRETA_VEC_UNROLL * stride) {
#pragma unroll
        for (int u = 0; u < GRETA_VEC_UNROLL; ++u) yv[i + u * stride] = v;
    }
    for (; i < nv; i += stride) yv[i] = v;
    if (id < n - nv * 4) y[nv * 4 + id] = value;
}
