#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
//! spirv 1.6
// y[t][o] = sum_i x[t][i] w[o][i] (Y = X W^T, W [rows][cols]): x, w, y f16,
// f32 accumulation, y rounded once; on VK_NV_cooperative_matrix2.
//
// Both operands are read along i (K-contiguous, "TN"), the order the matrix
// units take their operands in: X's BM x BK slice is the A matrix as it
// lies, and W's BN x BK slice becomes the BK x BN B matrix through a
// transposed tensor view, so nothing is transposed through registers or
// shared memory. The matrices are workgroup-scope: the driver splits the
// BM x BN block over the workgroup's subgroups and stages the operands
// itself (on NVIDIA, through shared memory with asynchronous copies).
//
// gemm_f16_cm2 loads its B as [K][N] and runs at a quarter of this kernel's
// rate on the H200; the two differ in B's order and in the strides below.
//
// Interior blocks (the whole BM x BN block inside Y, K a multiple of BK * UK
// and of 8) use unclamped layouts whose row stride is given as a multiple of
// 8 halves, so the driver may load 16 bytes at a time; UK slices per loop
// trip, unrolled, so the next slices' loads can be issued before the current
// product. The store of an interior block (N a multiple of 8) is unclamped
// with the same kind of stride: through the clamped layout it cost the
// layer's four projections 4-7% of their time on the H200 (2026-11-30).
// Edge blocks use clamp-to-zero loads and a clamped store, so any shape is
// correct.
//
// Blocks run in dispatch order (GROUP_M = 0: along a row of blocks, so the
// workgroups resident at once share X's rows and stream all of W), or
// GROUP_M rows of blocks at a time, column by column, so that they share
// W's rows in L2 as well.
//
// Specialization constants: 0 BM, 1 BN, 2 BK, 3 workgroup size, 4 UK,
// 5 GROUP_M.

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 256;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 4) const uint UK = 4;
layout(constant_id = 5) const uint GROUP_M = 0;

layout(set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(set = 0, binding = 1) readonly buffer W { float16_t w[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float16_t y[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; } p;

void main() {
    uint bi = gl_WorkGroupID.y;
    uint bj = gl_WorkGroupID.x;
    if (GROUP_M > 0u) {
        uint nbn = gl_NumWorkGroups.x;
        uint id = gl_WorkGroupID.y * nbn + gl_WorkGroupID.x;
        uint per_group = GROUP_M * nbn;
        uint first = (id / per_group) * GROUP_M;
        uint rows = min(gl_NumWorkGroups.y - first, GROUP_M);
        bi = first + (id % per_group) % rows;
        bj = (id % per_group) / rows;
    }
    uint row0 = bi * BM;
    uint col0 = bj * BN;
    // W's slice [BN][BK] read as B = its transpose, [BK][BN].
    tensorViewNV<2, false, 1, 0> wT = createTensorViewNV(2, false, 1, 0);
    coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);

    if (row0 + BM <= p.M && col0 + BN <= p.N && p.K % (BK * UK) == 0u && p.K % 8u == 0u) {
        // K & ~7 == K here; written so the compiler knows the rows start on
        // 16-byte boundaries.
        uint stride = p.K & ~7u;
        tensorLayoutNV<2> tX = createTensorLayoutNV(2);
        tensorLayoutNV<2> tW = createTensorLayoutNV(2);
        tX = setTensorLayoutDimensionNV(tX, p.M, p.K);
        tW = setTensorLayoutDimensionNV(tW, p.N, p.K);
        tX = setTensorLayoutStrideNV(tX, stride, 1);
        tW = setTensorLayoutStrideNV(tW, stride, 1);
        for (uint k0 = 0u; k0 < p.K; k0 += BK * UK) {
            [[unroll]] for (uint u = 0u; u < UK; u++) {
                uint k = k0 + u * BK;
                coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
                coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
                coopMatLoadTensorNV(ma, x, 0, sliceTensorLayoutNV(tX, row0, BM, k, BK));
                coopMatLoadTensorNV(mb, w, 0, sliceTensorLayoutNV(tW, col0, BN, k, BK), wT);
                acc = coopMatMulAdd(ma, mb, acc);
            }
        }
    } else {
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tX =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tW =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        tX = setTensorLayoutDimensionNV(tX, p.M, p.K);
        tW = setTensorLayoutDimensionNV(tW, p.N, p.K);
        for (uint k = 0u; k < p.K; k += BK) {
            coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
            coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
            coopMatLoadTensorNV(ma, x, 0, sliceTensorLayoutNV(tX, row0, BM, k, BK));
            coopMatLoadTensorNV(mb, w, 0, sliceTensorLayoutNV(tW, col0, BN, k, BK), wT);
            acc = coopMatMulAdd(ma, mb, acc);
        }
    }
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> yh =
        coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc);
    if (row0 + BM <= p.M && col0 + BN <= p.N && p.N % 8u == 0u) {
        // An interior block: unclamped, rows on 16-byte boundaries.
        tensorLayoutNV<2> tY = createTensorLayoutNV(2);
        tY = setTensorLayoutDimensionNV(tY, p.M, p.N);
        tY = setTensorLayoutStrideNV(tY, p.N & ~7u, 1);
        coopMatStoreTensorNV(yh, y, 0, sliceTensorLayoutNV(tY, row0, BM, col0, BN));
    } else {
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tY =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        tY = setTensorLayoutDimensionNV(tY, p.M, p.N);
        coopMatStoreTensorNV(yh, y, 0, sliceTensorLayoutNV(tY, row0, BM, col0, BN));
    }
}
