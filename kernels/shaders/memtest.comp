#version 450
#extension GL_KHR_memory_scope_semantics : require
// memtest: one pass of the memory test of a slice (kernels/src/ops/memtest.rs
// says what the passes are and why). The runtime records the clear, then
// for each selected pattern its three passes, each a dispatch behind a
// barrier; `pattern` and `phase` say which. Every invocation grid-strides
// over the slice, so any workgroup count covers it.
//   phase 0: clear the error record (one workgroup)
//   phase 1: mem[i] = v(i)
//   phase 2: check mem[i] == v(i), then mem[i] = ~v(i)
//   phase 3: check mem[i] == ~v(i)
// Word flip_word is written XOR flip_mask in phases 1 and 2 (0: nothing).
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer E { uint errors[]; };
layout(set = 0, binding = 1) buffer M { uint mem[]; };
// The dispatch covers words base .. base + n of the slice, bound from word
// base on (one chunk of at most maxStorageBufferRange): mem[j] is word
// base + j, whose index the patterns, the injection and the record use.
layout(push_constant) uniform P {
    uint n;
    uint seed;
    uint flip_word;
    uint flip_mask;
    uint pattern;
    uint phase;
    uint base;
} p;

// Must match kernels/src/ops/memtest.rs.
const uint HEAD = 4u;
const uint SLOT = 4u;
const uint SLOTS = 8u;
const uint RECORD = HEAD + SLOTS * SLOT;

uint value(uint i) {
    if (p.pattern == 0u) return 1u << (i & 31u);
    if (p.pattern == 1u) return i;
    if (p.pattern == 2u) return (i & 1u) == 0u ? 0x55555555u : 0xaaaaaaaau;
    uint x = i ^ (p.seed * 0x9e3779b9u);
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

uint flip(uint i) {
    return i == p.flip_word ? p.flip_mask : 0u;
}

// Queue-family scope: the Vulkan memory model's device scope is an optional
// feature (vulkanMemoryModelDeviceScope); every invocation of a dispatch is
// in one queue family, which is all the record needs.
void record(uint i, uint want, uint got, uint check) {
    uint slot = atomicAdd(errors[0], 1u, gl_ScopeQueueFamily, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
    atomicOr(errors[1], want ^ got, gl_ScopeQueueFamily, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
    if (slot < SLOTS) {
        uint at = HEAD + slot * SLOT;
        errors[at] = i;
        errors[at + 1u] = want;
        errors[at + 2u] = got;
        errors[at + 3u] = p.pattern * 4u + check;
    }
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint id = gl_GlobalInvocationID.x;
    if (p.phase == 0u) {
        for (uint j = id; j < RECORD; j += stride) errors[j] = 0u;
        return;
    }
    for (uint j = id; j < p.n; j += stride) {
        uint i = p.base + j;
        uint v = value(i);
        if (p.phase == 1u) {
            mem[j] = v ^ flip(i);
        } else if (p.phase == 2u) {
            uint got = mem[j];
            if (got != v) record(i, v, got, 1u);
            mem[j] = ~v ^ flip(i);
        } else {
            uint got = mem[j];
            if (got != ~v) record(i, ~v, got, 2u);
        }
        // j + stride must not wrap past n (< 2^32).
        if (j >= p.n - min(p.n, stride)) break;
    }
}
