// vec_add: c[i] = a[i] + b[i] (f32). 16-byte vectors, GRETA_VEC_UNROLL
// pairs of loads in flight per thread; the n % 4 tail element-wise.
#include "common.h"

extern "C" __global__ void greta_vec_add(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ c, uint32_t n) {
    const greta_f4* av = (const greta_f4*)a;
    const greta_f4* bv = (const greta_f4*)b;
    greta_f4* cv = (greta_f4*)c;
    const greta_u64 nv = n / 4;
    const greta_u64 stride = (greta_u64)gridDim.x * blockDim.x;
    const greta_u64 id = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x;
    greta_u64 i = id;
    for (; i + (GRETA_VEC_UNROLL - 1) * stride < nv; i += GRETA_VEC_UNROLL * stride) {
        greta_f4 x[GRETA_VEC_UNROLL], y[GRETA_VEC_UNROLL];
#pragma unroll
        for (int u = 0; u < GRETA_VEC_UNROLL; ++u) {
            x[u] = av[i + u * stride];
            y[u] = bv[i + u * stride];
        }
#pragma unroll
        for (int u = 0; u < GRETA_VEC_UNROLL; ++u) {
            greta_f4 s;
            s.x = x[u].x + y[u].x;
            s.y = x[u].y + y[u].y;
            s.z = x[u].z + y[u].z;
            s.w = x[u].w + y[u].w;
            cv[i + u * stride] = s;
        }
    }
    for (; i < nv; i += stride) {
        const greta_f4 x = av[i], y = bv[i];
        greta_f4 s;
        s.x = x.x + y.x;
        s.y = x.y + y.y;
        s.z = x.z + y.z;
        s.w = x.w + y.w;
        cv[i] = s;
    }
    if (id < n - nv * 4) c[nv * 4 + id] = a[nv * 4 + id] + b[nv * 4 + id];
}
