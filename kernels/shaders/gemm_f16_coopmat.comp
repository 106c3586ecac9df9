#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
// C[M][N] = A[M][K] * B[K][N] with A, B in f16 (packed two per uint, as in
// gemm_f16) and f32 accumulation, on VK_KHR_cooperative_matrix.
//
// A workgroup computes a BM x BN block of C. Per BK-deep slice, A and B are
// staged in shared memory as f16 (zero-padded at the edges); the block's
// (BM/CM) x (BN/CN) cooperative tiles are shared round-robin among however
// many subgroups the driver formed (gl_NumSubgroups), so the kernel is
// correct for any subgroup size (wave32/wave64). The f32 accumulators live in
// shared memory (Cs) between slices; the final store is bounds-checked.
// CM x CN x CK is a shape the device reported for f16 x f16 -> f32.
//
// Specialization constants: 0 BM, 1 BN, 2 BK, 3 CM, 4 CN, 5 workgroup size, 6 CK.

layout(local_size_x_id = 5) in;
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 3) const uint CM = 16;
layout(constant_id = 4) const uint CN = 16;
layout(constant_id = 6) const uint CK = 16;

layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; } p;

shared float16_t As[BM * BK];
shared float16_t Bs[BK * BN];
shared float Cs[BM * BN];

float16_t ldA(uint i) { vec2 v = unpackHalf2x16(a[i >> 1]); return float16_t((i & 1u) == 0u ? v.x : v.y); }
float16_t ldB(uint i) { vec2 v = unpackHalf2x16(b[i >> 1]); return float16_t((i & 1u) == 0u ? v.x : v.y); }

void main() {
    const uint TILES_N = BN / CN;
    const uint TILES = (BM / CM) * TILES_N;
    uint tid = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;

    for (uint i = tid; i < BM * BN; i += wg) { Cs[i] = 0.0; }

    for (uint k0 = 0u; k0 < p.K; k0 += BK) {
        for (uint i = tid; i < BM * BK; i += wg) {
            uint gr = row0 + i / BK;
            uint gk = k0 + i % BK;
            As[i] = (gr < p.M && gk < p.K) ? ldA(gr * p.K + gk) : float16_t(0.0);
        }
        for (uint i = tid; i < BK * BN; i += wg) {
            uint gk = k0 + i / BN;
            uint gc = col0 + i % BN;
            Bs[i] = (gk < p.K && gc < p.N) ? ldB(gk * p.N + gc) : float16_t(0.0);
        }
        barrier();
        for (uint tile = gl_SubgroupID; tile < TILES; tile += gl_NumSubgroups) {
            uint tm = tile / TILES_N;
            uint tn = tile % TILES_N;
            coopmat<float, gl_ScopeSubgroup, CM, CN, gl_MatrixUseAccumulator> acc;
            coopMatLoad(acc, Cs, tm * CM * BN + tn * CN, BN, gl_CooperativeMatrixLayoutRowMajor);
            for (uint kk = 0u; kk < BK; kk += CK) {
                coopmat<float16_t, gl_ScopeSubgroup, CM, CK, gl_MatrixUseA> ma;
                coopmat<float16_t, gl_ScopeSubgroup, CK, CN, gl_MatrixUseB> mb;
                coopMatLoad(ma, As, tm * CM * BK + kk, BK, gl_CooperativeMatrixLayoutRowMajor);
                coopMatLoad(mb, Bs, kk * BN + tn * CN, BN, gl_CooperativeMatrixLayoutRowMajor);
                acc = coopMatMulAdd(ma, mb, acc);
            }
            coopMatStore(acc, Cs, tm * CM * BN + tn * CN, BN, gl_CooperativeMatrixLayoutRowMajor);
        }
        barrier();
    }

    for (uint i = tid; i < BM * BN; i += wg) {
        uint r = row0 + i / BN;
        uint col = col0 + i % BN;
        if (r < p.M && col < p.N) { c[r * p.N + col] = Cs[i]; }
    }
}
