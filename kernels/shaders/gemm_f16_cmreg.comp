#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
// C[M][N] = A[M][K] * B[K][N], A and B f16 row-major (as gemm_f16 packs
// them), f32 accumulation and output, on VK_KHR_cooperative_matrix with
// 16x16x16 tiles, for M % BM == 0, N % BN == 0, K % BK == 0 and a subgroup
// size of SG (the planner checks all of it and falls back to
// gemm_f16_coopmat otherwise).
//
// Why this kernel: gemm_f16_coopmat keeps its accumulators in shared memory
// and reloads them every slice, so it is bound by shared-memory traffic, not
// by the tensor cores. Here each subgroup owns a WM x WN sub-block of C whose
// (WM/16) x (WN/16) accumulators stay in registers for the whole K loop;
// operands are staged in shared memory with 128-bit loads and stores. With
// STAGES = 2 the next slice is fetched while the current one is multiplied
// (one barrier per slice); STAGES = 1 halves the shared memory, which lets
// larger blocks or deeper slices fit the 48 KiB NVIDIA's Vulkan driver
// gives a workgroup. DIRECT = 0 fetches through registers (the loads are in
// flight during the multiply); DIRECT = 1 copies global -> shared in one
// statement, which a compiler may turn into asynchronous copies and which
// frees the registers. Rows of the staged slices are
// padded by 8 halves so that the 8 rows one 16x16 tile load touches fall in
// distinct banks.
//
// Specialization constants: 0 BM, 1 BN, 2 BK (multiples of 16), 3 workgroup
// size (a multiple of SG), 4 SGN (subgroups side by side along N; the rest
// stack along M), 5 SG (the device's subgroup size), 6 STAGES (1 or 2),
// 7 DIRECT (0 or 1), 8 GROUP_M (0: blocks in dispatch order; g > 0: the
// dispatch walks g block rows at a time, column by column, so that
// workgroups running at the same time share A and B panels in L2),
// 9 PROBE (diagnostic, never a default or tuning candidate: 1 skips every
// load after the first slice, so the result is wrong and the time is the
// ceiling of the multiply loop alone, shared-memory reads included).

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 4) const uint SGN = 2;
layout(constant_id = 5) const uint SG = 32;
layout(constant_id = 6) const uint STAGES = 2;
layout(constant_id = 7) const uint DIRECT = 0;
layout(constant_id = 8) const uint GROUP_M = 0;
layout(constant_id = 9) const uint PROBE = 0;

layout(set = 0, binding = 0) readonly buffer A { uvec4 a[]; };
layout(set = 0, binding = 1) readonly buffer B { uvec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; } p;

const uint T = 16u;
const uint WG = gl_WorkGroupSize.x;
const uint SGM = WG / SG / SGN;
const uint WM = BM / SGM;
const uint WN = BN / SGN;
const uint TM = WM / T;
const uint TN = WN / T;
// Row strides of the staged slices in uvec4s (8 halves each), padded.
const uint AST = BK / 8u + 1u;
const uint BST = BN / 8u + 1u;
const uint A_STAGE = BM * AST;
const uint B_STAGE = BK * BST;
const uint A_PER = BM * BK / 8u / WG;
const uint B_PER = BK * BN / 8u / WG;

shared uvec4 As[STAGES * A_STAGE];
shared uvec4 Bs[STAGES * B_STAGE];

uvec4 ga[A_PER];
uvec4 gb[B_PER];

void fetch(uint k0, uint row0, uint col0) {
    uint kv = p.K / 8u;
    uint nv = p.N / 8u;
    [[unroll]] for (uint v = 0u; v < A_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        ga[v] = a[(row0 + i / (BK / 8u)) * kv + k0 / 8u + i % (BK / 8u)];
    }
    [[unroll]] for (uint v = 0u; v < B_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        gb[v] = b[(k0 + i / (BN / 8u)) * nv + col0 / 8u + i % (BN / 8u)];
    }
}

void stage(uint s) {
    [[unroll]] for (uint v = 0u; v < A_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        As[s * A_STAGE + (i / (BK / 8u)) * AST + i % (BK / 8u)] = ga[v];
    }
    [[unroll]] for (uint v = 0u; v < B_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        Bs[s * B_STAGE + (i / (BN / 8u)) * BST + i % (BN / 8u)] = gb[v];
    }
}

void copy(uint k0, uint s, uint row0, uint col0) {
    uint kv = p.K / 8u;
    uint nv = p.N / 8u;
    [[unroll]] for (uint v = 0u; v < A_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        As[s * A_STAGE + (i / (BK / 8u)) * AST + i % (BK / 8u)] =
            a[(row0 + i / (BK / 8u)) * kv + k0 / 8u + i % (BK / 8u)];
    }
    [[unroll]] for (uint v = 0u; v < B_PER; v++) {
        uint i = gl_LocalInvocationID.x + v * WG;
        Bs[s * B_STAGE + (i / (BN / 8u)) * BST + i % (BN / 8u)] =
            b[(k0 + i / (BN / 8u)) * nv + col0 / 8u + i % (BN / 8u)];
    }
}

void main() {
    uint sg = gl_SubgroupID;
    uint wm0 = (sg / SGN) * WM;
    uint wn0 = (sg % SGN) * WN;
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

    coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator> acc[TM * TN];
    [[unroll]] for (uint i = 0u; i < TM * TN; i++) {
        acc[i] = coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>(0.0);
    }

    if (DIRECT == 1u) {
        copy(0u, 0u, row0, col0);
    } else {
        fetch(0u, row0, col0);
        stage(0u);
    }
    barrier();
    uint slices = p.K / BK;
    for (uint t = 0u; t < slices; t++) {
        uint s = STAGES == 2u ? (t & 1u) : 0u;
        bool more = t + 1u < slices && PROBE == 0u;
        uint kn = (t + 1u) * BK;
        if (more) {
            if (DIRECT == 0u) {
                fetch(kn, row0, col0);
            } else if (STAGES == 2u) {
                copy(kn, s ^ 1u, row0, col0);
            }
        }
        [[unroll]] for (uint kk = 0u; kk < BK; kk += T) {
            coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA> ma[TM];
            coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> mb[TN];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                coopMatLoad(ma[i], As, s * A_STAGE + (wm0 + i * T) * AST + kk / 8u, AST,
                            gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                coopMatLoad(mb[j], Bs, s * B_STAGE + kk * BST + (wn0 + j * T) / 8u, BST,
                            gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint j = 0u; j < TN; j++) {
                    acc[i * TN + j] = coopMatMulAdd(ma[i], mb[j], acc[i * TN + j]);
                }
            }
        }
        if (STAGES == 1u) {
            barrier();
            if (more) {
                if (DIRECT == 0u) {
                    stage(0u);
                } else {
                    copy(kn, 0u, row0, col0);
                }
            }
        } else if (more && DIRECT == 0u) {
            stage(s ^ 1u);
        }
        barrier();
    }

    [[unroll]] for (uint i = 0u; i < TM; i++) {
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            coopMatStore(acc[i * TN + j], c, (row0 + wm0 + i * T) * p.N + col0 + wn0 + j * T, p.N,
                         gl_CooperativeMatrixLayoutRowMajor);
        }
    }
}
