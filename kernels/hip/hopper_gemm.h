// The Hopper GEMM (NVIDIA compute capability 9.0, compiled for sm_90a
// only): the main loop of gemm_f16 and linear_f16 on wgmma, the
// warpgroup-wide asynchronous matrix instruction that reads both operands
// straight from shared memory, fed by the tensor memory accelerator (TMA:
// cp.async.bulk.tensor, one thread issuing whole 2-D tiles that land
// 128-byte swizzled, completing on an mbarrier). Everything here is inside
// `GRETA_HOPPER`, defined only when NVRTC compiles for sm_90a (it defines
// __CUDA_ARCH_FEAT_SM90_ALL there and nowhere else): sm_90 and older
// builds, and HIP, compile the kernels of gemm_f16.hip and linear_f16.hip
// as before and never see an instruction of this file.
//
// One block: 3 warpgroups of 128 threads. Warpgroup 0 is the producer: its
// thread 0 loads, for each k step of GRETA_HOP_BK, the A tile (BM x BK,
// K-major) and the B tile (BK x BN: K-major for linear_f16's W [n][k],
// N-major for gemm_f16's B [k][n], as BN / 64 boxes 64 columns wide) into
// one of STAGES shared-memory stages, and says how many bytes will land on
// the stage's `full` barrier. Warpgroups 1 and 2 are the consumers: each
// owns 64 rows of the block's BM = 128 and all BN columns of C, waits on
// `full`, issues BK / 16 wgmma m64nBNk16 over the stage, and once the
// previous stage's wgmmas are done (wait_group 1: one batch stays in
// flight behind the next) releases that stage on its `empty` barrier, one
// arrival per warp. The producer refills a stage only after its `empty`
// phase completed. Registers: setmaxnreg moves them from the producer (40
// a thread) to the consumers (232), whose accumulators are BN / 2 f32 a
// thread.
//
// Layouts (kernels/src/wgmma_model.rs runs this index arithmetic on the
// CPU against a reference GEMM, and fails on a wrong swizzle, stride,
// transpose flag or accumulator map):
// - Shared memory, per stage: a box of R rows x 64 halves (128 bytes a
//   row) lands with the 16-byte chunk c of row r at chunk c ^ (r % 8):
//   TMA's CU_TENSOR_MAP_SWIZZLE_128B, which is wgmma's 128-byte swizzle
//   (both XOR address bits 4-6 with bits 7-9, so every tile starts at a
//   1024-byte boundary).
// - K-major operand (A; B of linear_f16): 8-row groups 1024 bytes apart
//   (the descriptor's stride offset), the 16 k values of one wgmma 32
//   bytes into the row: the k16 step kk starts 32 * kk bytes in, and the
//   hardware swizzles the whole address.
// - N-major operand (B of gemm_f16): 64 columns a 128-byte row, 8 k rows a
//   1024-byte group (stride offset), the 64-column boxes 64 * 128 bytes
//   apart (the leading offset); the k16 step kk starts 2048 * kk bytes in.
// - Accumulators: register 4j + r of thread t of a consumer warpgroup is
//   C row 16 (t / 32) + (t % 32) / 4 + 8 (r / 2), column 8 j + 2 (t % 4) +
//   r % 2 of its 64-row half (the PTX ISA's wgmma D fragment for f32).
// Shapes: m a multiple of BM, n of BN, k of BK (the runtime plans the
// kernels of gemm_f16.hip and linear_f16.hip otherwise; a launch that
// breaks this returns without writing), rows 16-byte aligned (TMA).
#if defined(GRETA_CUDA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GRETA_HOPPER 1

#define GRETA_HOP_BM 128
#define GRETA_HOP_BK 64
#define GRETA_HOP_THREADS 384
// Block rows walked together (neighbouring blocks share A and B strips in L2).
#define GRETA_HOP_GROUP 8
// Registers a thread after setmaxnreg: 128 x 40 + 256 x 232 <= 65536.
#define GRETA_HOP_PRODUCER_REGS 40
#define GRETA_HOP_CONSUMER_REGS 232

// A CUtensorMap (cuda.h's, 128 opaque bytes, 64-byte aligned), encoded on
// the host by cuTensorMapEncodeTiled and passed by value.
struct __align__(64) greta_tmap {
    unsigned long long opaque[16];
};

__device__ __forceinline__ uint32_t greta_hop_smem(const void* p) {
    uint32_t a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

__device__ __forceinline__ void greta_mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// One arrival that also says `bytes` more will land before the phase completes.
__device__ __forceinline__ void greta_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void greta_mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void greta_mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
// A 2-D box at element coordinates (x inner, y outer) of the tensor `map`
// describes, into shared memory at `dst`; its bytes complete on `bar`.
__device__ __forceinline__ void greta_tma_2d(uint32_t dst, const greta_tmap* map, uint32_t x, uint32_t y,
                                             uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            dst),
        "l"((greta_u64)map), "r"(x), "r"(y), "r"(bar)
        : "memory");
}
__device__ __forceinline__ void greta_tma_prefetch(const greta_tmap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"((greta_u64)map) : "memory");
}

// A wgmma shared-memory descriptor with the 128-byte swizzle: start address,
// leading and stride byte offsets (each in 16-byte units, 14 bits).
__device__ __forceinline__ greta_u64 greta_wgmma_desc(uint32_t addr, uint32_t lead, uint32_t stride) {
    return (greta_u64)((addr & 0x3ffffu) >> 4) | ((greta_u64)((lead >> 4) & 0x3fffu) << 16) |
           ((greta_u64)((stride >> 4) & 0x3fffu) << 32) | (1ull << 62);
}
__device__ __forceinline__ void greta_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void greta_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void greta_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Pins the accumulators where they are: no ordinary instruction that reads
// or writes them moves across this point (wgmma.fence and wait_group
// order them against the asynchronous matrix instructions only).
template <int R>
__device__ __forceinline__ void greta_wgmma_pin(float* d) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R>
__device__ __forceinline__ void greta_setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void greta_setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

// D (64 x 256 f32: 128 registers a thread, the layout above) += A B, A 64 x 16
// (K-major) and B 16 x 256 (K-major when TB is 0, N-major when 1), both in
// shared memory as descriptors `da`, `db` say. Asynchronous: wgmma.wait_group
// says when it is done.
template <int TB>
__device__ __forceinline__ void greta_wgmma_n256(float* d, greta_u64 da, greta_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, %131;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(1), "n"(TB));
}

// D (64 x 128 f32: 64 registers a thread, the layout above) += A B, A 64 x 16
// (K-major) and B 16 x 128 (K-major when TB is 0, N-major when 1), both in
// shared memory as descriptors `da`, `db` say. Asynchronous: wgmma.wait_group
// says when it is done.
template <int TB>
__device__ __forceinline__ void greta_wgmma_n128(float* d, greta_u64 da, greta_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, %67;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1), "n"(TB));
}

template <int BN, int TB>
__device__ __forceinline__ void greta_wgmma(float* d, greta_u64 da, greta_u64 db) {
    if (BN == 256) {
        greta_wgmma_n256<TB>(d, da, db);
    } else {
        greta_wgmma_n128<TB>(d, da, db);
    }
}

extern __shared__ __attribute__((aligned(16))) unsigned char greta_hop_dyn[];

// Bytes of dynamic shared memory a block of (BN, STAGES) takes: the stages,
// their 2 barriers each, and 1 KiB to align the first stage (the runtime's
// tune.rs computes the same: HopperVariant::shared_bytes).
#define GRETA_HOP_SHARED(BN, STAGES) ((STAGES) * (GRETA_HOP_BM + (BN)) * GRETA_HOP_BK * 2 + (STAGES) * 16 + 1024)

// C = A B over a BM x BN tile per block: A (m x k) by `ta`, B by `tb` (N_MAJOR:
// k x n, else n x k as linear_f16's W), C (m x n) f32 or, with OUT_F16, f16
// rounded once.
template <int BN, int STAGES, bool N_MAJOR, bool OUT_F16>
__device__ __forceinline__ void greta_hop_gemm(const greta_tmap* ta, const greta_tmap* tb, void* out, uint32_t m,
                                               uint32_t n, uint32_t k) {
    constexpr uint32_t BM = GRETA_HOP_BM, BK = GRETA_HOP_BK;
    constexpr uint32_t A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
    // A 64-column box of an N-major B tile: BK rows of 128 bytes.
    constexpr uint32_t B_BOX = 64 * BK * 2;
    static_assert(BN == 128 || BN == 256, "wgmma n of the consumers");
    static_assert(STAGES >= 2, "the producer refills a stage the consumers released");
    static_assert(GRETA_HOP_SHARED(BN, STAGES) <= 227 * 1024, "sm_90's shared memory a block");
    if (m % BM != 0 || n % BN != 0 || k % BK != 0 || k == 0) return;
    const uint32_t tiles_n = n / BN, tiles_m = m / BM;
    const uint32_t pid = blockIdx.x;
    if (pid >= tiles_n * tiles_m) return;
    const uint32_t per_group = GRETA_HOP_GROUP * tiles_n;
    const uint32_t first = (pid / per_group) * GRETA_HOP_GROUP;
    const uint32_t rows = (tiles_m - first) < GRETA_HOP_GROUP ? (tiles_m - first) : GRETA_HOP_GROUP;
    const uint32_t in_group = pid % per_group;
    const uint32_t bm0 = (first + in_group % rows) * BM, bn0 = (in_group / rows) * BN;
    const uint32_t steps = k / BK;

    const uint32_t base = (greta_hop_smem(greta_hop_dyn) + 1023u) & ~1023u;
    const uint32_t a_s = base, b_s = base + STAGES * A_BYTES;
    const uint32_t full = b_s + STAGES * B_BYTES, empty = full + STAGES * 8;
    const uint32_t wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            greta_mbar_init(full + 8 * s, 1);
            greta_mbar_init(empty + 8 * s, 8);  // one arrival per consumer warp
        }
        // The barriers are seen initialised by the copy engine too.
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        greta_setmaxnreg_dec<GRETA_HOP_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            greta_tma_prefetch(ta);
            greta_tma_prefetch(tb);
            for (uint32_t kt = 0; kt < steps; ++kt) {
                const uint32_t s = kt % STAGES;
                // Stage s held tile kt - STAGES: wait until both consumers
                // released it (that phase of `empty`).
                if (kt >= STAGES) greta_mbar_wait(empty + 8 * s, ((kt / STAGES) + 1) & 1);
                const uint32_t bar = full + 8 * s;
                greta_mbar_expect_tx(bar, A_BYTES + B_BYTES);
                greta_tma_2d(a_s + s * A_BYTES, ta, kt * BK, bm0, bar);
                if (N_MAJOR) {
#pragma unroll
                    for (uint32_t j = 0; j < BN / 64; ++j)
                        greta_tma_2d(b_s + s * B_BYTES + j * B_BOX, tb, bn0 + 64 * j, kt * BK, bar);
                } else {
                    greta_tma_2d(b_s + s * B_BYTES, tb, kt * BK, bn0, bar);
                }
            }
        }
        return;
    }

    greta_setmaxnreg_inc<GRETA_HOP_CONSUMER_REGS>();
    const uint32_t half = wg - 1;  // this warpgroup's 64 rows of the tile
    const uint32_t t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
    greta_wgmma_pin<BN / 2>(d);
    for (uint32_t kt = 0; kt < steps; ++kt) {
        const uint32_t s = kt % STAGES;
        greta_mbar_wait(full + 8 * s, (kt / STAGES) & 1);
        greta_wgmma_fence();
#pragma unroll
        for (uint32_t kk = 0; kk < BK / 16; ++kk) {
            const greta_u64 da = greta_wgmma_desc(a_s + s * A_BYTES + half * 64 * 128 + kk * 32, 16, 1024);
            const greta_u64 db = N_MAJOR ? greta_wgmma_desc(b_s + s * B_BYTES + kk * 2048, B_BOX, 1024)
                                         : greta_wgmma_desc(b_s + s * B_BYTES + kk * 32, 16, 1024);
            greta_wgmma<BN, N_MAJOR ? 1 : 0>(d, da, db);
        }
        greta_wgmma_commit();
        // Step kt - 1's wgmmas are done: its stage goes back to the producer.
        greta_wgmma_wait<1>();
        if (kt > 0 && lane == 0) greta_mbar_arrive(empty + 8 * ((kt - 1) % STAGES));
    }
    greta_wgmma_wait<0>();
    greta_wgmma_pin<BN / 2>(d);

    const uint32_t row = bm0 + half * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const uint32_t col = bn0 + 8 * j + 2 * (lane % 4);
        const greta_u64 at0 = (greta_u64)row * n + col, at1 = (greta_u64)(row + 8) * n + col;
        if (OUT_F16) {
            unsigned short* y = (unsigned short*)out;
            *(uint32_t*)(y + at0) = greta_h2_from_f32(d[4 * j], d[4 * j + 1]);
            *(uint32_t*)(y + at1) = greta_h2_from_f32(d[4 * j + 2], d[4 * j + 3]);
        } else {
            float* c = (float*)out;
            float2 lo, hi;
            lo.x = d[4 * j];
            lo.y = d[4 * j + 1];
            hi.x = d[4 * j + 2];
            hi.y = d[4 * j + 3];
            *(float2*)(c + at0) = lo;
            *(float2*)(c + at1) = hi;
        }
    }
}
#endif
