// memtest: the passes of the memory test of a slice (kernels/src/ops/memtest.rs
// says what they are and why; memtest.comp is the Vulkan twin). The
// runtime launches greta_memtest (the clear of the error record), then for
// each selected pattern P its three passes greta_memtest_pP_1 (write),
// _2 (check, then write the inverse) and _3 (check the inverse), each a
// launch of its own on one stream, so every check reads memory an earlier
// launch wrote. Word flip_word is written XOR flip_mask in passes 1 and 2.
#include "common.h"

#define GRETA_MEMTEST_HEAD 4u
#define GRETA_MEMTEST_SLOT 4u
#define GRETA_MEMTEST_SLOTS 8u
#define GRETA_MEMTEST_RECORD (GRETA_MEMTEST_HEAD + GRETA_MEMTEST_SLOTS * GRETA_MEMTEST_SLOT)

__device__ inline uint32_t greta_memtest_value(uint32_t pattern, uint32_t i, uint32_t seed) {
    if (pattern == 0u) return 1u << (i & 31u);
    if (pattern == 1u) return i;
    if (pattern == 2u) return (i & 1u) == 0u ? 0x55555555u : 0xaaaaaaaau;
    uint32_t x = i ^ (seed * 0x9e3779b9u);
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

__device__ inline void greta_memtest_record(uint32_t* errors, uint32_t i, uint32_t want, uint32_t got,
                                            uint32_t pattern, uint32_t check) {
    uint32_t slot = atomicAdd(&errors[0], 1u);
    atomicOr(&errors[1], want ^ got);
    if (slot < GRETA_MEMTEST_SLOTS) {
        uint32_t at = GRETA_MEMTEST_HEAD + slot * GRETA_MEMTEST_SLOT;
        errors[at] = i;
        errors[at + 1] = want;
        errors[at + 2] = got;
        errors[at + 3] = pattern * 4u + check;
    }
}

__device__ inline void greta_memtest_pass(uint32_t* errors, uint32_t* mem, uint32_t words, uint32_t seed,
                                          uint32_t flip_word, uint32_t flip_mask, uint32_t pattern,
                                          uint32_t phase) {
    const greta_u64 stride = (greta_u64)gridDim.x * blockDim.x;
    for (greta_u64 j = (greta_u64)blockIdx.x * blockDim.x + threadIdx.x; j < words; j += stride) {
        const uint32_t i = (uint32_t)j;
        const uint32_t v = greta_memtest_value(pattern, i, seed);
        const uint32_t flip = i == flip_word ? flip_mask : 0u;
        if (phase == 1u) {
            mem[i] = v ^ flip;
        } else if (phase == 2u) {
            const uint32_t got = mem[i];
            if (got != v) greta_memtest_record(errors, i, v, got, pattern, 1u);
            mem[i] = ~v ^ flip;
        } else {
            const uint32_t got = mem[i];
            if (got != ~v) greta_memtest_record(errors, i, ~v, got, pattern, 2u);
        }
    }
}

extern "C" __global__ void greta_memtest(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem,
                                         uint32_t words, uint32_t patterns, uint32_t seed,
                                         uint32_t flip_word, uint32_t flip_mask) {
    for (uint32_t j = threadIdx.x; j < GRETA_MEMTEST_RECORD; j += blockDim.x) errors[j] = 0u;
}

// Each pass, written out: the runtime launches them by name.
extern "C" __global__ void greta_memtest_p0_1(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 0u, 1u);
}
extern "C" __global__ void greta_memtest_p0_2(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 0u, 2u);
}
extern "C" __global__ void greta_memtest_p0_3(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 0u, 3u);
}
extern "C" __global__ void greta_memtest_p1_1(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 1u, 1u);
}
extern "C" __global__ void greta_memtest_p1_2(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 1u, 2u);
}
extern "C" __global__ void greta_memtest_p1_3(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 1u, 3u);
}
extern "C" __global__ void greta_memtest_p2_1(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 2u, 1u);
}
extern "C" __global__ void greta_memtest_p2_2(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 2u, 2u);
}
extern "C" __global__ void greta_memtest_p2_3(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 2u, 3u);
}
extern "C" __global__ void greta_memtest_p3_1(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 3u, 1u);
}
extern "C" __global__ void greta_memtest_p3_2(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 3u, 2u);
}
extern "C" __global__ void greta_memtest_p3_3(uint32_t* __restrict__ errors, uint32_t* __restrict__ mem, uint32_t words, uint32_t patterns, uint32_t seed, uint32_t flip_word, uint32_t flip_mask) {
    greta_memtest_pass(errors, mem, words, seed, flip_word, flip_mask, 3u, 3u);
}
