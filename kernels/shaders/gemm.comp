#version 450
//! variant gemm_f32
//! variant gemm_f16 F16_INPUT
// C[M][N] = A[M][K] * B[K][N], row-major, f32 accumulation and output.
// In gemm_f16, A and B hold IEEE halves packed two per uint (element i in
// bits 16*(i&1) of word i>>1), read with unpackHalf2x16: no 16-bit storage
// feature needed.
//
// Tiling: a workgroup computes a BM x BN block of C, stepping through K in
// BK-deep slices staged in shared memory (A slice stored transposed). Each
// invocation accumulates TM x TN outputs in registers, spaced BM/TM rows and
// BN/TN columns apart so that shared-memory reads are conflict-free and
// global stores coalesce. All five sizes are specialization constants
// (constant ids 0-4); the workgroup size (id 5) must be (BM/TM)*(BN/TN).
// Edges (M, N, K not multiples of the tile) are zero-padded on load and
// masked on store.

layout(local_size_x_id = 5) in;
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;
layout(constant_id = 4) const uint TN = 4;

#ifdef F16_INPUT
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uint b[]; };
float loadA(uint i) { vec2 v = unpackHalf2x16(a[i >> 1]); return (i & 1u) == 0u ? v.x : v.y; }
float loadB(uint i) { vec2 v = unpackHalf2x16(b[i >> 1]); return (i & 1u) == 0u ? v.x : v.y; }
#else
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
float loadA(uint i) { return a[i]; }
float loadB(uint i) { return b[i]; }
#endif
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; } p;

// A is stored transposed with one word of padding per row: the column-wise
// stores of the load loop then hit distinct banks.
const uint AS = BM + 1u;
shared float As[BK * AS];
shared float Bs[BK * BN];

void main() {
    const uint NTX = BN / TN;
    const uint NTY = BM / TM;
    const uint threads = NTX * NTY;
    uint tid = gl_LocalInvocationID.x;
    uint tx = tid % NTX;
    uint ty = tid / NTX;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;

    float acc[TM * TN];
    for (uint i = 0u; i < TM * TN; i++) { acc[i] = 0.0; }
    float ra[TM];
    float rb[TN];

    for (uint k0 = 0u; k0 < p.K; k0 += BK) {
        // A slice: BM rows x BK columns; consecutive invocations read along a row.
        for (uint i = tid; i < BM * BK; i += threads) {
            uint mm = i / BK;
            uint kk = i % BK;
            uint gr = row0 + mm;
            uint gk = k0 + kk;
            As[kk * AS + mm] = (gr < p.M && gk < p.K) ? loadA(gr * p.K + gk) : 0.0;
        }
        // B slice: BK rows x BN columns, read along a row.
        for (uint i = tid; i < BK * BN; i += threads) {
            uint kk = i / BN;
            uint nn = i % BN;
            uint gk = k0 + kk;
            uint gc = col0 + nn;
            Bs[kk * BN + nn] = (gk < p.K && gc < p.N) ? loadB(gk * p.N + gc) : 0.0;
        }
        barrier();
        for (uint kk = 0u; kk < BK; kk++) {
            for (uint i = 0u; i < TM; i++) { ra[i] = As[kk * AS + ty + i * NTY]; }
            for (uint j = 0u; j < TN; j++) { rb[j] = Bs[kk * BN + tx + j * NTX]; }
            for (uint i = 0u; i < TM; i++) {
                for (uint j = 0u; j < TN; j++) {
                    acc[i * TN + j] = fma(ra[i], rb[j], acc[i * TN + j]);
                }
            }
        }
        barrier();
    }

    for (uint i = 0u; i < TM; i++) {
        uint r = row0 + ty + i * NTY;
        if (r >= p.M) { continue; }
        for (uint j = 0u; j < TN; j++) {
            uint col = col0 + tx + j * NTX;
            if (col < p.N) { c[r * p.N + col] = acc[i * TN + j]; }
        }
    }
}
