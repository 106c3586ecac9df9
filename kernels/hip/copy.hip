// copy: y[i] = x[i] for i < n (u32). 16-byte vectors, GRETA_VEC_UNROLL of
// them in flight per thread; the n % 4 tail element-wise.
#include "common.h"

extern "C" __global__ void greta_copy(const uint32_t* __restrict__ x, uint32_t* __restrict__ y, uint32_t n) {
    const greta_u4* xv = (const greta_u4*)x;
    greta_u4* yv = (greta_u4*)y;
    const greta_u64 nv = n / 4;
    const greta_u64 stride = (greta_u64)gridDim.x * blockDim.x;
    const greta_u64 id = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x;
    greta_u64 i = id;
    for (; i + (GRETA_VEC_UNROLL - 1) * stride < nv; i += GRETA_VEC_UNROLL * stride) {
        greta_u4 v[GRETA_VEC_UNROLL];
#pragma unroll
        for (int u = 0; u < GRETA_VEC_UNROLL; ++u) v[u] = xv[i + u * stride];
#pragma unroll
        for (int u = 0; u < GRETA_VEC_UNROLL; ++u) yv[i + u * stride] = v[u];
    }
    for (; i < nv; i += stride) yv[i] = xv[i];
    if (id < n - nv * 4) y[nv * 4 + id] = x[nv * 4 + id];
}
