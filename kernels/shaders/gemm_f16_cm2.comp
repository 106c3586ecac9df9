#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
//! spirv 1.6
// C[M][N] = A[M][K] * B[K][N], A and B f16 (row-major, as gemm_f16 packs
// them), f32 accumulation and output, on VK_NV_cooperative_matrix2:
// workgroup-scope matrices (the driver splits a BM x BN block over the
// workgroup's subgroups and stages the operands itself) loaded straight from
// the buffers through tensor layouts. Blocks that lie wholly inside the
// matrices (and K % (BK * UK) == 0) use unclamped layouts; the edge blocks use
// clamp-to-zero loads and bounds-checked stores, so any M, N, K is correct.
//
// Specialization constants: 0 BM, 1 BN, 2 BK, 3 workgroup size, 4 UK.

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 4) const uint UK = 4;

layout(set = 0, binding = 0) readonly buffer A { float16_t a[]; };
layout(set = 0, binding = 1) readonly buffer B { float16_t b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; } p;

void main() {
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);

    if (row0 + BM <= p.M && col0 + BN <= p.N && p.K % (BK * UK) == 0u) {
        tensorLayoutNV<2> tA = createTensorLayoutNV(2);
        tensorLayoutNV<2> tB = createTensorLayoutNV(2);
        tA = setTensorLayoutDimensionNV(tA, p.M, p.K);
        tB = setTensorLayoutDimensionNV(tB, p.K, p.N);
        // UK slices per trip, unrolled: the compiler may issue the next
        // slices' loads before the current product (software pipelining).
        for (uint k0 = 0u; k0 < p.K; k0 += BK * UK) {
            [[unroll]] for (uint u = 0u; u < UK; u++) {
                coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
                coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
                coopMatLoadTensorNV(ma, a, 0, sliceTensorLayoutNV(tA, row0, BM, k0 + u * BK, BK));
                coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(tB, k0 + u * BK, BK, col0, BN));
                acc = coopMatMulAdd(ma, mb, acc);
            }
        }
    } else {
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tA =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tB =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        tA = setTensorLayoutDimensionNV(tA, p.M, p.K);
        tB = setTensorLayoutDimensionNV(tB, p.K, p.N);
        for (uint k0 = 0u; k0 < p.K; k0 += BK) {
            coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
            coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
            coopMatLoadTensorNV(ma, a, 0, sliceTensorLayoutNV(tA, row0, BM, k0, BK));
            coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(tB, k0, BK, col0, BN));
            acc = coopMatMulAdd(ma, mb, acc);
        }
    }
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tC =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tC = setTensorLayoutDimensionNV(tC, p.M, p.N);
    coopMatStoreTensorNV(acc, c, 0, sliceTensorLayoutNV(tC, row0, BM, col0, BN));
}
