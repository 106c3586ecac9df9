//! How each [`Op`] maps onto its kernel (the same for HIP and CUDA): symbol, grid, block and the
//! scalar arguments that follow the buffer pointers (inputs, then outputs,
//! in [`Op::inputs`]/[`Op::outputs`] order — the same contract as GLSL —
//! then the op's scratch and any host-made tables).

use super::driver::{DevPtr, Dims, Driver, GpuDevice, GpuError, TensorMap, TileMapSpec};
use greta_kernels::hip_src::kernel_symbol;
use greta_kernels::Scalar;
use greta_kernels::{HostBuf, Op};

/// Threads per block of the element-wise and row kernels (GRETA_BLOCK in common.h).
pub const BLOCK: u32 = 256;
/// 16-byte vectors each thread of a streaming kernel moves per grid-stride
/// step (GRETA_VEC_UNROLL in common.h).
pub const VEC_UNROLL: u32 = 4;
/// Most blocks per compute unit of a streaming grid. The grid covers the
/// data in one pass (each thread moves VEC_UNROLL vectors) up to this cap,
/// then strides: on an H100 a one-pass grid moved 1 GiB at the driver's
/// memcpy rate (2965-3000 GB/s), while a persistent grid of 4, 8, 16 or 64
/// blocks per SM stayed at 2800-2890 GB/s (2026-11-25, scripts/gpu/hip_variants.cu).
pub const BLOCKS_PER_CU: u32 = 1024;
/// Block tile of C and threads of the f32 GEMM (GEMM32_BM/BN/THREADS in gemm_f32.hip).
pub const GEMM32_TILE: u32 = 128;
pub const GEMM32_THREADS: u32 = 256;
/// Dispatches per repeat of the noop op, timed together and reported per
/// dispatch (as the Vulkan noop batch).
pub const NOOP_BATCH: u32 = 64;
/// The kernel that holds the stream before each timed noop batch (noop.hip)
/// and for how many GPU clock cycles: about 0.5 ms at 1.8 GHz, longer than
/// the host takes to enqueue 64 launches (~3.5 us each on an H100 host).
pub const HOLD_SYMBOL: &str = "greta_noop_hold";
pub const HOLD_CYCLES: u32 = 1_000_000;

/// A kernel argument by value: device pointers, 32-bit scalars and the
/// tensor maps of the Hopper GEMMs are all the kernels take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelArg {
    Ptr(DevPtr),
    U32(u32),
    F32(f32),
    Map(TensorMap),
}

/// Where one argument's bytes wait for the driver, which reads
/// `sizeof(parameter)` bytes from its address: room and alignment for the
/// largest, a tensor map (128 bytes, 64-byte aligned).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct ArgSlot(pub [u64; 16]);

impl KernelArg {
    /// The argument in a slot, little-endian from its first byte.
    pub fn slot(&self) -> ArgSlot {
        let mut s = ArgSlot([0; 16]);
        match *self {
            KernelArg::Ptr(p) => s.0[0] = p.0,
            KernelArg::U32(v) => s.0[0] = v as u64,
            KernelArg::F32(v) => s.0[0] = v.to_bits() as u64,
            KernelArg::Map(m) => s.0 = m.0,
        }
        s
    }
}

/// A tensor map a launch passes after the op's buffer pointers, encoded
/// when the launch is made from the op's buffer `buffer` (its position
/// among the inputs, outputs and scratch, in binding order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapArg {
    pub buffer: usize,
    pub spec: TileMapSpec,
}

/// The arguments of a launch, in the kernels' order: the op's buffers
/// (`bufs`, binding order), the tensor maps `maps` names (encoded by
/// `driver` from those buffers), then `scalars`.
pub fn arguments<D: Driver>(
    driver: &D,
    bufs: &[DevPtr],
    maps: &[MapArg],
    scalars: &[KernelArg],
) -> Result<Vec<KernelArg>, GpuError> {
    arguments_with(bufs, maps, scalars, |p, spec| driver.tensor_map(p, spec))
}

/// [`arguments`] with the tensor maps from `encode`.
fn arguments_with(
    bufs: &[DevPtr],
    maps: &[MapArg],
    scalars: &[KernelArg],
    mut encode: impl FnMut(DevPtr, &TileMapSpec) -> Result<TensorMap, GpuError>,
) -> Result<Vec<KernelArg>, GpuError> {
    let mut args: Vec<KernelArg> = bufs.iter().map(|&p| KernelArg::Ptr(p)).collect();
    for m in maps {
        let base = bufs.get(m.buffer).ok_or_else(|| {
            GpuError::Invalid(format!(
                "a tensor map of buffer {} of a launch with {} buffers",
                m.buffer,
                bufs.len()
            ))
        })?;
        args.push(KernelArg::Map(encode(*base, &m.spec)?));
    }
    args.extend(scalars.iter().copied());
    Ok(args)
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub symbol: String,
    pub dims: Dims,
    pub scalars: Vec<KernelArg>,
    /// Launches per timed repeat (the repeat's time is divided by it).
    pub batch: u32,
    /// GPU cycles of [`HOLD_SYMBOL`] launched before each timed repeat (0: none).
    pub hold_cycles: u32,
    /// Later launches of each repeat, in order on the same stream (each
    /// sees the previous one's writes), with the same arguments: the
    /// passes of a memory test (memtest). The op's scratch
    /// ([`Op::scratch`]) is allocated after its outputs, zeroed before the
    /// first launch, and passed after their pointers, to every launch.
    pub then: Vec<(String, Dims)>,
    /// Tensor maps passed after the buffer pointers ([`arguments`]).
    pub maps: Vec<MapArg>,
    /// Read-only tables computed on the host (rms_gemv_rope_kv_f16's
    /// cos/sin table, [`greta_kernels::rope_table`]), uploaded with the
    /// inputs and passed after the scratch, before any tensor maps and the
    /// scalars.
    pub aux: Vec<HostBuf>,
}

/// Threads of the attention kernels' blocks (GRETA_DEC_THREADS,
/// GRETA_PRE_THREADS) and query rows per prefill block (GRETA_PRE_BQ).
pub const ATTN_THREADS: u32 = 128;
pub const ATTN_PREFILL_BQ: u32 = 64;

/// attn_decode_f16's launch from `base` (its symbol and shape scalars):
/// a block per head and split, heads along x (blocks that run together
/// read whole cache rows), each walking `per_group` chunks of the
/// sequence, which follows the shape scalars. The last block of each head
/// combines its partials: one launch, no second pass.
pub fn attn_decode(
    base: Plan,
    heads: usize,
    head_dim: usize,
    len: usize,
    per_group: usize,
) -> Plan {
    let splits = greta_kernels::attn_decode_splits(head_dim, len, per_group) as u32;
    let mut scalars = base.scalars.clone();
    scalars.push(KernelArg::U32(per_group as u32));
    Plan {
        dims: Dims::new([heads as u32, splits, 1], [ATTN_THREADS, 1, 1]),
        scalars,
        ..base
    }
}

/// attn_decode_f16's built-in launch `plan` (made by [`attn_decode`]: its
/// last scalar is the chunks per block) split again, `per_group` chunks per
/// block: the chunk count replaced, never a second one pushed (the kernel
/// reads the first, and a grid for another split than the one it reads
/// leaves chunks unread or reads past its partials).
pub fn attn_decode_resplit(mut plan: Plan, head_dim: usize, len: usize, per_group: usize) -> Plan {
    plan.dims.grid[1] = greta_kernels::attn_decode_splits(head_dim, len, per_group) as u32;
    if let Some(last) = plan.scalars.last_mut() {
        *last = KernelArg::U32(per_group as u32);
    }
    plan
}

fn blocks_for(total: usize, dev: &GpuDevice) -> u32 {
    // The kernels stride over the grid, so the grid only needs to fill the GPU.
    let want = total.div_ceil(BLOCK as usize).max(1);
    let cap = (dev.max_grid[0].max(1) as usize).min(1 << 20);
    want.min(cap) as u32
}

/// Blocks of a streaming kernel over `n` 32-bit elements: one pass (each
/// thread moves VEC_UNROLL 4-element vectors), at most BLOCKS_PER_CU per
/// compute unit.
fn stream_blocks(n: usize, dev: &GpuDevice) -> u32 {
    let per_block = (BLOCK * VEC_UNROLL * 4) as usize;
    let want = n.div_ceil(per_block).max(1);
    let full = (dev.compute_units.max(1) as usize).saturating_mul(BLOCKS_PER_CU as usize);
    let cap = (dev.max_grid[0].max(1) as usize).min(1 << 20);
    want.min(full).min(cap).max(1) as u32
}

/// The launch of `op` on `dev`: gemm_f16 and linear_f16 on the Hopper
/// kernels where the loaded code has them and the shape fits their tiles
/// ([`super::hopper`]), every other launch [`builtin`]'s.
pub fn plan(op: &Op, dev: &GpuDevice) -> Plan {
    match super::hopper::default_for(op, dev) {
        Some(v) => super::hopper::plan(op, v, builtin(op, dev)),
        None => builtin(op, dev),
    }
}

/// The launch of `op` on `dev` on the kernel of its own file
/// (`greta_<op>`). Sizes were validated to fit 32 bits. The scalars are
/// the op's shape as it declares it ([`Op::shape_scalars`]); what differs
/// per op is only the grid.
pub fn builtin(op: &Op, dev: &GpuDevice) -> Plan {
    let scalars: Vec<KernelArg> = op
        .shape_scalars()
        .into_iter()
        .map(|s| match s {
            Scalar::U32(v) => KernelArg::U32(v),
            Scalar::F32(v) => KernelArg::F32(v),
        })
        .collect();
    let launch = |grid: [u32; 3], block: [u32; 3]| Plan {
        symbol: kernel_symbol(op.name()),
        dims: Dims::new(grid, block),
        scalars: scalars.clone(),
        batch: 1,
        hold_cycles: 0,
        then: vec![],
        maps: vec![],
        aux: vec![],
    };
    let linear = |total: usize| launch([blocks_for(total, dev), 1, 1], [BLOCK, 1, 1]);
    // A unit of work per 32 lanes, BLOCK / 32 per block, grid-stride past the cap.
    let per_warp = |units: usize| {
        let blocks = units.div_ceil((BLOCK / 32) as usize).max(1);
        let cap = (dev.max_grid[0].max(1) as usize).min(1 << 20);
        launch([blocks.min(cap) as u32, 1, 1], [BLOCK, 1, 1])
    };
    match *op {
        // Composite ops have no kernel: `Backend::run` runs their graph. An
        // empty grid is refused by `launch_on` should one ever get here.
        Op::BlockDecode { .. } | Op::BlockPrefill { .. } => launch([0, 0, 0], [0, 0, 0]),
        Op::Noop => Plan {
            batch: NOOP_BATCH,
            hold_cycles: HOLD_CYCLES,
            ..launch([1, 1, 1], [64, 1, 1])
        },
        Op::Fill { n, .. } | Op::Copy { n } | Op::VecAdd { n } => {
            launch([stream_blocks(n, dev), 1, 1], [BLOCK, 1, 1])
        }
        Op::TestBrokenCopy { n } => linear(n),
        Op::GemmF32 { m, n, .. } => launch(
            [
                (n as u32).div_ceil(GEMM32_TILE),
                (m as u32).div_ceil(GEMM32_TILE),
                1,
            ],
            [GEMM32_THREADS, 1, 1],
        ),
        Op::GemmF16 { m, n, .. } => {
            use greta_kernels::matrix_lanes::{BM, BN, HIP_THREADS, MMA_SYNC};
            // gemm_f16.hip: MMA_SYNC's block size on CUDA (its scalar
            // fallback too), HIP_THREADS on every HIP target.
            let threads = match dev.api {
                super::driver::Api::Cuda => MMA_SYNC.threads,
                super::driver::Api::Hip => HIP_THREADS,
            };
            launch(
                [(n as u32).div_ceil(BN), (m as u32).div_ceil(BM), 1],
                [threads, 1, 1],
            )
        }
        Op::RmsNorm { rows, .. } | Op::LayerNorm { rows, .. } | Op::Softmax { rows, .. } => {
            launch([rows as u32, 1, 1], [BLOCK, 1, 1])
        }
        Op::Rope {
            tokens,
            heads,
            head_dim,
            ..
        } => linear(tokens * heads * head_dim / 2),
        Op::KvUpdate {
            layers,
            heads,
            head_dim,
            n_new,
            ..
        } => linear(layers * n_new * heads * head_dim),
        Op::TestSlow { .. } => launch([1, 1, 1], [64, 1, 1]),
        // memtest.hip: the clear (one block), then each selected pattern's
        // write, check-and-invert and check, each its own launch (a check
        // reads through memory what the launch before wrote), grid-stride.
        Op::Memtest {
            words, patterns, ..
        } => {
            let dims = linear(words).dims;
            let then = (0..greta_kernels::MEMTEST_PATTERNS.len() as u32)
                .filter(|p| patterns >> p & 1 == 1)
                .flat_map(|p| (1..=3).map(move |phase| (p, phase)))
                .map(|(p, phase)| (format!("{}_p{p}_{phase}", kernel_symbol(op.name())), dims))
                .collect();
            Plan {
                then,
                ..launch([1, 1, 1], [BLOCK, 1, 1])
            }
        }
        // A block per token (its angles once in shared memory), grid-stride.
        Op::RopeKvF16 { tokens, .. } => launch(
            [(tokens as u32).clamp(1, dev.max_grid[0].max(1)), 1, 1],
            [BLOCK, 1, 1],
        ),
        Op::AttnDecodeF16 {
            heads,
            head_dim,
            len,
            ..
        } => attn_decode(
            launch([1, 1, 1], [ATTN_THREADS, 1, 1]),
            heads,
            head_dim,
            len,
            greta_kernels::attn_decode_chunks_per_group(
                heads,
                head_dim,
                len,
                (dev.compute_units.max(1) as usize)
                    .saturating_mul(greta_kernels::ATTN_DECODE_GROUPS_PER_CU),
            ),
        ),
        // Heads along x, query blocks along y (the kernel walks them
        // last-first: the causal blocks with the most keys start first).
        Op::AttnPrefillF16 { tokens, heads, .. } => launch(
            [heads as u32, (tokens as u32).div_ceil(ATTN_PREFILL_BQ), 1],
            [ATTN_THREADS, 1, 1],
        ),
        // gemv_f16.hip: a row per 32 lanes, BLOCK / 32 rows per block.
        Op::GemvF16 { rows, .. } => per_warp(rows),
        // The fused decode projections (common.h's greta_fgemv_sums): as
        // gemv_f16, a unit of work per 32 lanes; a unit is a row, a gate
        // and up row, or the pair of rows RoPE mixes.
        Op::GemvAddF16 { rows, .. } | Op::RmsGemvSwigluF16 { rows, .. } => per_warp(rows),
        // Its RoPE angles come from a cos/sin table of pos0 made on the
        // host in f64, bound after the outputs: no f64 pow/sincos on the
        // device (on gfx942 they held the kernel to 2 waves per SIMD).
        Op::RmsGemvRopeKvF16 {
            heads,
            head_dim,
            pos0,
            theta,
            ..
        } => Plan {
            aux: vec![HostBuf::F32(greta_kernels::rope_table(
                1, head_dim, pos0, theta,
            ))],
            ..per_warp(3 * heads * head_dim / 2)
        },
        // linear_f16.hip: gemm_f16's tiling (m = tokens, n = rows) and block size.
        Op::LinearF16 { tokens, rows, .. } => {
            use greta_kernels::matrix_lanes::{BM, BN, HIP_THREADS, MMA_SYNC};
            let threads = match dev.api {
                super::driver::Api::Cuda => MMA_SYNC.threads,
                super::driver::Api::Hip => HIP_THREADS,
            };
            launch(
                [(rows as u32).div_ceil(BN), (tokens as u32).div_ceil(BM), 1],
                [threads, 1, 1],
            )
        }
        // A block per row (the kernels stride over rows past the grid).
        Op::RmsNormF16 { rows, .. } | Op::AddRmsNormF16 { rows, .. } => launch(
            [(rows as u32).min(dev.max_grid[0].max(1)), 1, 1],
            [BLOCK, 1, 1],
        ),
        // 8 outputs per thread where rows are 16-byte aligned.
        Op::SwigluF16 { rows, cols } => {
            let per = if cols.is_multiple_of(8) { 8 } else { 1 };
            linear((rows * cols).div_ceil(per))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::driver::Api;
    use greta_kernels::hip_src::SOURCES;

    fn dev() -> GpuDevice {
        GpuDevice {
            api: Api::Hip,
            ordinal: 0,
            name: "test".into(),
            arch: "gfx942".into(),
            arch_source: "test".into(),
            compute_units: 304,
            total_memory_bytes: 192 << 30,
            warp_size: 64,
            max_shared_memory_per_block: 65536,
            max_threads_per_block: 1024,
            max_grid: [i32::MAX as u32; 3],
            integrated: false,
            pci_bus_id: String::new(),
            pci_vendor_id: 0x1002,
            pci_device_id: 0x74a1,
            uuid: None,
            runtime_version: "6.3.42134".into(),
            driver_version: "6.3.42134".into(),
            driver_version_raw: 0,
            kernels_for: None,
            hopper_kernels: false,
        }
    }

    /// Counts the parameters of `greta_<name>` in its source: a launch with
    /// the wrong number of arguments would read garbage on the GPU.
    fn source_params(symbol: &str) -> usize {
        let text = SOURCES
            .iter()
            .map(|(_, t)| *t)
            .find(|t| t.contains(&format!("{symbol}(")))
            .unwrap();
        let at = text.find(&format!("{symbol}(")).unwrap() + symbol.len() + 1;
        let params = &text[at..at + text[at..].find(')').unwrap()];
        if params.trim().is_empty() {
            0
        } else {
            params.split(',').count()
        }
    }

    #[test]
    fn every_launch_passes_as_many_arguments_as_its_kernel_takes() {
        let ops = [
            Op::Noop,
            Op::Fill { n: 1000, value: 7 },
            Op::Copy { n: 1000 },
            Op::VecAdd { n: 1000 },
            Op::GemmF32 { m: 33, n: 17, k: 9 },
            Op::GemmF16 { m: 33, n: 17, k: 9 },
            Op::RmsNorm {
                rows: 3,
                cols: 100,
                eps: 1e-6,
            },
            Op::LayerNorm {
                rows: 3,
                cols: 100,
                eps: 1e-5,
            },
            Op::Softmax { rows: 3, cols: 100 },
            Op::Rope {
                tokens: 4,
                heads: 2,
                head_dim: 8,
                pos0: 3,
                theta: 1e4,
            },
            Op::KvUpdate {
                layers: 2,
                max_seq: 16,
                heads: 2,
                head_dim: 8,
                pos: 3,
                n_new: 2,
            },
            Op::TestBrokenCopy { n: 10 },
            Op::TestSlow { iters: 10 },
            Op::RopeKvF16 {
                tokens: 3,
                heads: 2,
                head_dim: 8,
                pos0: 1,
                max_seq: 9,
                theta: 1e4,
            },
            Op::AttnDecodeF16 {
                heads: 2,
                head_dim: 128,
                len: 100,
                max_seq: 120,
            },
            Op::AttnPrefillF16 {
                tokens: 65,
                heads: 2,
                head_dim: 64,
                pos0: 3,
                max_seq: 70,
            },
            Op::GemvF16 { rows: 37, cols: 75 },
            Op::LinearF16 {
                tokens: 19,
                rows: 40,
                cols: 72,
            },
            Op::RmsNormF16 {
                rows: 3,
                cols: 75,
                eps: 1e-5,
            },
            Op::AddRmsNormF16 {
                rows: 3,
                cols: 75,
                eps: 1e-5,
            },
            Op::SwigluF16 { rows: 3, cols: 75 },
            Op::Memtest {
                words: 1000,
                patterns: 0xf,
                seed: 3,
                flip_word: 0,
                flip_mask: 0,
            },
        ];
        // And every kernel of the catalogue (the ops added since the list).
        let every = Op::catalogue().into_iter().filter(|o| !o.is_composite());
        for op in ops.into_iter().chain(every) {
            let p = plan(&op, &dev());
            let buffers = op.inputs().len() + op.outputs().len() + op.scratch().len() + p.aux.len();
            assert_eq!(buffers + p.scalars.len(), source_params(&p.symbol), "{op}");
            assert!(!p.dims.is_empty(), "{op}");
            for (symbol, dims) in &p.then {
                assert_eq!(
                    buffers + p.scalars.len(),
                    source_params(symbol),
                    "{op}: {symbol}"
                );
                assert!(!dims.is_empty(), "{op}: {symbol}");
            }
        }
        // memtest: the clear, then three passes of each selected pattern.
        let m = plan(
            &Op::Memtest {
                words: 1000,
                patterns: 0b1001,
                seed: 3,
                flip_word: 0,
                flip_mask: 0,
            },
            &dev(),
        );
        assert_eq!(m.symbol, "greta_memtest");
        let then: Vec<&str> = m.then.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            then,
            [
                "greta_memtest_p0_1",
                "greta_memtest_p0_2",
                "greta_memtest_p0_3",
                "greta_memtest_p3_1",
                "greta_memtest_p3_2",
                "greta_memtest_p3_3"
            ]
        );
        // attn_decode_f16: 3 heads x 2 chunks of 64 positions, a block
        // each (304 CUs want far more blocks than that), the combine in the
        // same launch; at len 4096 on 304 CUs, 32 heads x 64 chunks: 2
        // chunks a block (1024 blocks, the fewest chunks that still give
        // 1216), on 2 CUs every chunk of a head in one block.
        // Prefill: 2 heads x 3 blocks of 64 query rows.
        let decode = |len: usize, heads: usize, dev: &GpuDevice| {
            plan(
                &Op::AttnDecodeF16 {
                    heads,
                    head_dim: 128,
                    len,
                    max_seq: len + 20,
                },
                dev,
            )
        };
        let d = decode(100, 3, &dev());
        assert_eq!(d.dims, Dims::new([3, 2, 1], [128, 1, 1]));
        assert!(d.then.is_empty());
        assert_eq!(d.scalars.last(), Some(&KernelArg::U32(1)));
        let d = decode(4096, 32, &dev());
        assert_eq!(d.dims, Dims::new([32, 32, 1], [128, 1, 1]));
        assert_eq!(d.scalars.last(), Some(&KernelArg::U32(2)));
        let tiny = GpuDevice {
            compute_units: 2,
            ..dev()
        };
        let d = decode(4096, 32, &tiny);
        assert_eq!(d.dims, Dims::new([32, 1, 1], [128, 1, 1]));
        assert_eq!(d.scalars.last(), Some(&KernelArg::U32(64)));
        let p = plan(
            &Op::AttnPrefillF16 {
                tokens: 129,
                heads: 2,
                head_dim: 64,
                pos0: 3,
                max_seq: 140,
            },
            &dev(),
        );
        assert_eq!(p.dims, Dims::new([2, 3, 1], [128, 1, 1]));
        let g = plan(
            &Op::GemmF32 {
                m: 300,
                n: 17,
                k: 9,
            },
            &dev(),
        );
        assert_eq!(g.dims, Dims::new([1, 3, 1], [256, 1, 1]));
        let h = plan(
            &Op::GemmF16 {
                m: 33,
                n: 129,
                k: 9,
            },
            &dev(),
        );
        assert_eq!(h.dims, Dims::new([2, 1, 1], [256, 1, 1]));
        // Streaming: one block per 4096 elements (one pass) up to
        // BLOCKS_PER_CU per CU (304 CUs: 311296 blocks), then a grid-stride loop.
        let f = plan(&Op::Fill { n: 1000, value: 7 }, &dev());
        assert_eq!(f.dims, Dims::new([1, 1, 1], [256, 1, 1]));
        let f = plan(&Op::Copy { n: 40_000 }, &dev());
        assert_eq!(f.dims, Dims::new([10, 1, 1], [256, 1, 1]));
        let f = plan(&Op::VecAdd { n: 1 << 28 }, &dev());
        assert_eq!(f.dims, Dims::new([1 << 16, 1, 1], [256, 1, 1]));
        let small = GpuDevice {
            compute_units: 2,
            ..dev()
        };
        let f = plan(&Op::Copy { n: 1 << 28 }, &small);
        assert_eq!(f.dims, Dims::new([2 * 1024, 1, 1], [256, 1, 1]));
        assert_eq!(f.batch, 1);
        assert_eq!(plan(&Op::Noop, &dev()).batch, NOOP_BATCH);
        assert_eq!(plan(&Op::Noop, &dev()).hold_cycles, HOLD_CYCLES);
        assert_eq!(
            source_params(HOLD_SYMBOL),
            1,
            "the hold kernel takes its cycles"
        );
    }

    /// Buffers, then each tensor map encoded from the buffer it names, then
    /// the scalars; a map of a buffer the launch does not have is an error.
    #[test]
    fn a_launch_passes_buffers_then_tensor_maps_then_the_shape() {
        let bufs = [DevPtr(0x1000), DevPtr(0x2000), DevPtr(0x3000)];
        let spec = TileMapSpec {
            cols: 64,
            rows: 128,
            box_cols: 64,
            box_rows: 128,
        };
        let maps = [MapArg { buffer: 1, spec }, MapArg { buffer: 0, spec }];
        let scalars = [KernelArg::U32(7), KernelArg::U32(9)];
        let encode = |p: DevPtr, s: &TileMapSpec| -> Result<TensorMap, GpuError> {
            let mut m = TensorMap([0; 16]);
            m.0[0] = p.0;
            m.0[1] = s.rows;
            Ok(m)
        };
        let args = arguments_with(&bufs, &maps, &scalars, encode).unwrap();
        let mut m1 = TensorMap([0; 16]);
        m1.0[..2].copy_from_slice(&[0x2000, 128]);
        let mut m0 = TensorMap([0; 16]);
        m0.0[..2].copy_from_slice(&[0x1000, 128]);
        assert_eq!(
            args,
            vec![
                KernelArg::Ptr(bufs[0]),
                KernelArg::Ptr(bufs[1]),
                KernelArg::Ptr(bufs[2]),
                KernelArg::Map(m1),
                KernelArg::Map(m0),
                scalars[0],
                scalars[1],
            ]
        );
        let far = [MapArg { buffer: 3, spec }];
        let e = arguments_with(&bufs, &far, &scalars, encode).unwrap_err();
        assert!(
            e.to_string()
                .contains("buffer 3 of a launch with 3 buffers"),
            "{e}"
        );
        // The encoder's refusal reaches the caller.
        let refuse = |_: DevPtr, _: &TileMapSpec| -> Result<TensorMap, GpuError> {
            Err(GpuError::Invalid("no tensor maps here".into()))
        };
        let e = arguments_with(&bufs, &maps, &scalars, refuse).unwrap_err();
        assert!(e.to_string().contains("no tensor maps here"), "{e}");
    }

    #[test]
    fn arguments_are_laid_out_little_endian_in_their_slots() {
        let first = |a: KernelArg| {
            let s = a.slot();
            assert!(s.0[1..].iter().all(|&w| w == 0), "{a:?}");
            s.0[0]
        };
        assert_eq!(first(KernelArg::U32(7)), 7);
        assert_eq!(first(KernelArg::F32(1.5)), 1.5f32.to_bits() as u64);
        assert_eq!(
            first(KernelArg::Ptr(DevPtr(0x1234_5678_9abc))),
            0x1234_5678_9abc
        );
        let map = TensorMap(std::array::from_fn(|i| i as u64 * 3 + 1));
        assert_eq!(KernelArg::Map(map).slot().0, map.0);
        assert_eq!(std::mem::align_of::<ArgSlot>(), 64);
        assert_eq!(std::mem::size_of::<ArgSlot>(), 128);
    }
}
