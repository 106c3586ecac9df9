#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// y[t][o] = sum_i x[t][i] w[o][i] (Y = X W^T, "NT"): x, w, y f16, f32
// accumulation, y rounded once. The plain tiled kernel, for devices without
// cooperative matrices (lavapipe) and any shape: a workgroup computes a
// BM x BN block of Y (tokens x out features) stepping over i BK at a time;
// both slices are read along i (x rows, w rows) and staged in shared
// memory k-major as f32, so the inner loop reads rows of both. Each
// invocation accumulates TM x TN outputs spaced BM/TM rows and BN/TN
// columns apart (conflict-free shared reads, coalesced stores). Edges are
// zero-padded on load and masked on store.
//
// Specialization constants: 0 BM, 1 BN, 2 BK, 3 TM, 4 TN, 5 workgroup size
// ((BM/TM) * (BN/TN)).
layout(local_size_x_id = 5) in;
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;
layout(constant_id = 4) const uint TN = 4;

layout(set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(set = 0, binding = 1) readonly buffer W { float16_t w[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float16_t y[]; };
layout(push_constant) uniform P { uint tokens; uint rows; uint cols; } p;

shared float As[BK * BM];
shared float Bs[BK * BN];

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    const uint SM = BM / TM;
    const uint SN = BN / TN;
    uint ty = tid / SN;
    uint tx = tid % SN;
    float acc[TM * TN];
    [[unroll]] for (uint i = 0u; i < TM * TN; i++) { acc[i] = 0.0; }
    for (uint k0 = 0u; k0 < p.cols; k0 += BK) {
        for (uint i = tid; i < BM * BK; i += wg) {
            uint r = i / BK;
            uint k = i % BK;
            bool in_ = row0 + r < p.tokens && k0 + k < p.cols;
            As[k * BM + r] = in_ ? float(x[(row0 + r) * p.cols + k0 + k]) : 0.0;
        }
        for (uint i = tid; i < BN * BK; i += wg) {
            uint r = i / BK;
            uint k = i % BK;
            bool in_ = col0 + r < p.rows && k0 + k < p.cols;
            Bs[k * BN + r] = in_ ? float(w[(col0 + r) * p.cols + k0 + k]) : 0.0;
        }
        barrier();
        for (uint k = 0u; k < BK; k++) {
            float a[TM];
            float b[TN];
            [[unroll]] for (uint i = 0u; i < TM; i++) { a[i] = As[k * BM + ty + i * SM]; }
            [[unroll]] for (uint j = 0u; j < TN; j++) { b[j] = Bs[k * BN + tx + j * SN]; }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint j = 0u; j < TN; j++) { acc[i * TN + j] += a[i] * b[j]; }
            }
        }
        barrier();
    }
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        uint row = row0 + ty + i * SM;
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            uint col = col0 + tx + j * SN;
            if (row < p.tokens && col < p.rows) { y[row * p.rows + col] = float16_t(acc[i * TN + j]); }
        }
    }
}
