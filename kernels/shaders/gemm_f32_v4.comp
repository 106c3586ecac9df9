#version 450
#extension GL_EXT_control_flow_attributes : require
// C[M][N] = A[M][K] * B[K][N], f32, row-major, for N % 4 == 0 and K % 4 == 0
// (the planner falls back to gemm.comp otherwise).
//
// Why a second f32 kernel: gemm.comp reads shared memory one float at a time
// and stalls on every slice's global loads. Here every global and shared
// access is a vec4 (128-bit), and the next BK slice is fetched into
// registers while the current one is multiplied (two shared buffers, one
// barrier per slice), so the FMA pipes stay fed.
//
// A workgroup computes a BM x BN block with (BM/8) x (BN/8) invocations;
// each invocation holds 8 x 8 accumulators as four 4 x 4 quadrants, half a
// block apart (rows ty*4 and BM/2 + ty*4, columns tx*4 and BN/2 + tx*4): the
// vec4 shared reads of one subgroup then hit consecutive addresses (no bank
// conflicts) and each row of the final store is two coalesced vec4 runs.
// A is staged transposed (k-major) with one vec4 of padding per k row, so
// the four scalar stores of a transposed vec4 land in distinct banks.
// Edges: rows and columns beyond M/N and k beyond K load as zero and are not
// stored (whole vec4s, since N and K are multiples of 4).
//
// Specialization constants: 0 BM, 1 BN, 2 BK (multiples of 8, 8, 4), 3 the
// workgroup size, which must be (BM/8)*(BN/8).

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 8;

layout(set = 0, binding = 0) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 1) readonly buffer B { vec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer C { vec4 c[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; } p;

const uint WG = gl_WorkGroupSize.x;
const uint AS4 = BM / 4u + 1u;         // vec4s per k row of the transposed A slice (one of padding)
const uint BS4 = BN / 4u;              // vec4s per k row of the B slice
const uint A_PER = BM * BK / 4u / WG;  // vec4s of A each invocation fetches per slice
const uint B_PER = BK * BN / 4u / WG;

shared vec4 As[2u * BK * AS4];
shared vec4 Bs[2u * BK * BS4];

vec4 ga[A_PER];
vec4 gb[B_PER];

void fetch(uint k0, uint row0, uint col0) {
    uint kv = p.K / 4u;
    uint nv = p.N / 4u;
    [[unroll]] for (uint v = 0u; v < A_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        uint r = row0 + i / (BK / 4u);
        uint k = k0 / 4u + i % (BK / 4u);
        ga[v] = (r < p.M && k < kv) ? a[r * kv + k] : vec4(0.0);
    }
    [[unroll]] for (uint v = 0u; v < B_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        uint k = k0 + i / BS4;
        uint cv = col0 / 4u + i % BS4;
        gb[v] = (k < p.K && cv < nv) ? b[k * nv + cv] : vec4(0.0);
    }
}

void stage(uint s) {
    [[unroll]] for (uint v = 0u; v < A_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        uint r = i / (BK / 4u);
        uint k = (i % (BK / 4u)) * 4u;
        uint base = (s * BK + k) * AS4 + r / 4u;
        uint lane = r & 3u;
        As[base][lane] = ga[v].x;
        As[base + AS4][lane] = ga[v].y;
        As[base + 2u * AS4][lane] = ga[v].z;
        As[base + 3u * AS4][lane] = ga[v].w;
    }
    [[unroll]] for (uint v = 0u; v < B_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        Bs[s * BK * BS4 + i] = gb[v];
    }
}

void main() {
    const uint NTX = BN / 8u;
    uint tx = gl_LocalInvocationID.x % NTX;
    uint ty = gl_LocalInvocationID.x / NTX;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;

    // acc[i * 2 + h]: row i of the invocation's 8 (quadrant row i / 4),
    // column half h.
    vec4 acc[16];
    [[unroll]] for (uint i = 0u; i < 16u; i++) { acc[i] = vec4(0.0); }

    fetch(0u, row0, col0);
    stage(0u);
    barrier();
    uint slices = (p.K + BK - 1u) / BK;
    for (uint t = 0u; t < slices; t++) {
        uint s = t & 1u;
        bool more = t + 1u < slices;
        if (more) { fetch((t + 1u) * BK, row0, col0); }
        [[unroll]] for (uint kk = 0u; kk < BK; kk++) {
            uint ab = (s * BK + kk) * AS4;
            vec4 a0 = As[ab + ty];
            vec4 a1 = As[ab + BM / 8u + ty];
            uint bb = s * BK * BS4 + kk * BS4;
            vec4 b0 = Bs[bb + tx];
            vec4 b1 = Bs[bb + BS4 / 2u + tx];
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                acc[i * 2u] = fma(vec4(a0[i]), b0, acc[i * 2u]);
                acc[i * 2u + 1u] = fma(vec4(a0[i]), b1, acc[i * 2u + 1u]);
                acc[(4u + i) * 2u] = fma(vec4(a1[i]), b0, acc[(4u + i) * 2u]);
                acc[(4u + i) * 2u + 1u] = fma(vec4(a1[i]), b1, acc[(4u + i) * 2u + 1u]);
            }
        }
        if (more) { stage(s ^ 1u); }
        barrier();
    }

    uint nv = p.N / 4u;
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint r = row0 + (i / 4u) * (BM / 2u) + ty * 4u + i % 4u;
        if (r >= p.M) { continue; }
        [[unroll]] for (uint h = 0u; h < 2u; h++) {
            uint cv = col0 / 4u + h * (BS4 / 2u) + tx;
            if (cv < nv) { c[r * nv + cv] = acc[i * 2u + h]; }
        }
    }
}
