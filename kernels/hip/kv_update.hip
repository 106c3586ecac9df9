// kv_update: cache[l][pos+j][h][d] = new[l][j][h][d] for both K and V.
// Caches are [layers][max_seq][heads][head_dim], new rows
// [layers][n_new][heads][head_dim]; nothing outside the written rows is
// touched. One thread per element of the new rows.
#include "common.h"

extern "C" __global__ void greta_kv_update(const float* __restrict__ k_new, const float* __restrict__ v_new,
                                           float* __restrict__ k_cache, float* __restrict__ v_cache,
                                           uint32_t layers, uint32_t max_seq, uint32_t heads,
                                           uint32_t head_dim, uint32_t pos, uint32_t n_new) {
    const uint32_t row = heads * head_dim;
    const uint32_t total = layers * n_new * row;
    for (greta_u64 g = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += (greta_u64)gridDim.x * blockDim.x) {
        const uint32_t e = g % row;
        const uint32_t lj = g / row;  // l * n_new + j
        const uint32_t j = lj % n_new, l = lj / n_new;
        const greta_u64 dst = ((greta_u64)l * max_seq + pos + j) * row + e;
        k_cache[dst] = k_new[g];
        v_cache[dst] = v_new[g];
    }
}
