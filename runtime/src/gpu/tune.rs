//! Tuning of the HIP/CUDA kernels: the knobs each op takes on a device, the
//! candidates `greta smoke --tune` times, how a tuning changes the launch,
//! and which stored tuning a run without one uses.
//!
//! Two kinds of knob:
//! - chosen at launch, no recompile: the streaming ops (fill, copy,
//!   vec_add) take `wg` (threads per block; the kernels stride by
//!   `blockDim`) and `per_cu` (most blocks per compute unit of the grid;
//!   the default, [`launch::BLOCKS_PER_CU`], covers the data in one pass);
//! - chosen at compile time: gemm_f16 on NVIDIA (sm_80+, the `mma.sync`
//!   path) takes `bm`, `bn` and `stages`, each combination a kernel of its
//!   own in the one code object ([`F16Variant`]: `greta_gemm_f16_bm128_bn256_s3`
//!   is the template in `kernels/hip/gemm_f16.hip` instantiated for
//!   128 x 256 block tiles and a 3-stage `cp.async` pipeline in dynamic
//!   shared memory), so every candidate is compiled whenever the kernels
//!   are and a tune never waits on a compiler.
//!
//! - chosen at launch: attn_decode_f16 takes `chunks` (chunks of the KV
//!   sequence each block walks; the planner's choice fills the device).
//!
//! An empty tuning is the built-in launch ([`launch::plan`]), always the
//! first candidate. The other ops take no knob on these backends yet.

use super::driver::{Api, Dims, GpuDevice};
use super::hopper::{self, HopperVariant};
use super::launch::{self, Plan, BLOCKS_PER_CU, VEC_UNROLL};
use crate::tuning::{Knob, Tuning};
use crate::tuning_cache::{KeySpace, TuningCache};
use greta_kernels::Op;

/// The k depth one pipeline stage of the gemm_f16 variants holds (halves).
pub const F16_BK: u32 = 32;
/// Halves of padding per shared-memory row of the variants (A rows of
/// F16_BK, B rows of bn): rows 16 bytes apart in the banks, so the eight
/// row addresses of an `ldmatrix` hit distinct banks.
pub const F16_PAD: u32 = 8;
/// Rows and columns of C one warp of a variant computes.
pub const F16_WARP_TILE: u32 = 64;

/// One compiled variant of gemm_f16's tensor-core kernel (CUDA sm_80+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F16Variant {
    pub bm: u32,
    pub bn: u32,
    pub stages: u32,
}

/// Every variant `kernels/hip/gemm_f16.hip` instantiates (a test reads the
/// source for each symbol).
pub const CUDA_F16_VARIANTS: &[F16Variant] = &[
    F16Variant {
        bm: 128,
        bn: 128,
        stages: 3,
    },
    F16Variant {
        bm: 128,
        bn: 128,
        stages: 4,
    },
    F16Variant {
        bm: 128,
        bn: 256,
        stages: 3,
    },
    F16Variant {
        bm: 256,
        bn: 128,
        stages: 3,
    },
    F16Variant {
        bm: 128,
        bn: 256,
        stages: 4,
    },
];

impl F16Variant {
    pub fn symbol(&self) -> String {
        format!(
            "greta_gemm_f16_bm{}_bn{}_s{}",
            self.bm, self.bn, self.stages
        )
    }

    /// Threads of a block: one warp per 64 x 64 tile of C.
    pub fn threads(&self) -> u32 {
        32 * (self.bm / F16_WARP_TILE) * (self.bn / F16_WARP_TILE)
    }

    /// Dynamic shared memory of a block: per stage an A tile (bm rows of
    /// F16_BK halves) and a B tile (F16_BK rows of bn halves), padded.
    pub fn shared_bytes(&self) -> u32 {
        let per_stage = self.bm * (F16_BK + F16_PAD) + F16_BK * (self.bn + F16_PAD);
        self.stages * per_stage * 2
    }

    pub fn tuning(&self) -> Tuning {
        Tuning::of(&[
            (Knob::Bm, self.bm),
            (Knob::Bn, self.bn),
            (Knob::Stages, self.stages),
        ])
    }
}

/// The compute capability of an NVIDIA target (`sm_90` -> 90, `sm_90a` -> 90).
fn sm(dev: &GpuDevice) -> Option<u32> {
    if dev.api != Api::Cuda {
        return None;
    }
    let text = dev.arch.to_string();
    let digits: String = text
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Most dynamic shared memory a block may opt in to on this NVIDIA target
/// (CUDA programming guide, "Compute capabilities", shared memory per
/// block): 163 KiB on sm_80/87, 99 KiB on sm_86/89, 227 KiB on sm_90 and
/// newer; `None` below sm_80, where gemm_f16 has no tensor-core path.
fn optin_shared(sm: u32) -> Option<u32> {
    match sm {
        80 | 87 => Some(163 << 10),
        86 | 88 | 89 => Some(99 << 10),
        s if s >= 90 => Some(227 << 10),
        _ => None,
    }
}

/// The gemm_f16 variants this device can run.
fn f16_variants(dev: &GpuDevice) -> Vec<F16Variant> {
    let Some(limit) = sm(dev).and_then(optin_shared) else {
        return Vec::new();
    };
    CUDA_F16_VARIANTS
        .iter()
        .copied()
        .filter(|v| v.shared_bytes() <= limit && v.threads() <= dev.max_threads_per_block)
        .collect()
}

const STREAM_WG: [u32; 3] = [128, 512, 1024];
const STREAM_PER_CU: [u32; 3] = [4, 8, 32];

fn is_streaming(op: &Op) -> bool {
    matches!(op, Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. })
}

/// Tunings worth timing for `op` on `dev`, the built-in launch (empty) first.
pub fn candidates(op: &Op, dev: &GpuDevice) -> Vec<Tuning> {
    let mut out = vec![Tuning::default()];
    if is_streaming(op) {
        for wg in STREAM_WG {
            if wg <= dev.max_threads_per_block {
                out.push(Tuning::of(&[(Knob::Wg, wg), (Knob::PerCu, BLOCKS_PER_CU)]));
            }
        }
        for per_cu in STREAM_PER_CU {
            out.push(Tuning::of(&[
                (Knob::Wg, launch::BLOCK),
                (Knob::PerCu, per_cu),
            ]));
        }
    } else if let Op::GemmF16 { .. } | Op::LinearF16 { .. } = op {
        out.extend(hopper_candidates(op, dev));
        if let Op::GemmF16 { .. } = op {
            out.extend(f16_variants(dev).iter().map(F16Variant::tuning));
        }
    } else if let Op::AttnDecodeF16 { head_dim, len, .. } = *op {
        // Chunks per block from one (the most blocks) up to a head's whole
        // sequence in a few blocks.
        // Each a different number of blocks, the built-in launch's too.
        let chunks = len.div_ceil(greta_kernels::attn_decode_chunk(head_dim));
        let mut seen = std::collections::BTreeSet::new();
        if let Some(&launch::KernelArg::U32(per)) = launch::plan(op, dev).scalars.last() {
            seen.insert(greta_kernels::attn_decode_splits(
                head_dim,
                len,
                per as usize,
            ));
        }
        for per in ATTN_CHUNKS {
            let per = per.min(chunks.max(1));
            if seen.insert(greta_kernels::attn_decode_splits(head_dim, len, per)) {
                out.push(Tuning::of(&[(Knob::Chunks, per as u32)]));
            }
        }
    }
    out
}

/// On a device whose code has the Hopper kernels: where the built-in
/// launch is one, the op's own `mma.sync` kernel (`wgmma=0`), and every
/// other variant that fits the shape.
fn hopper_candidates(op: &Op, dev: &GpuDevice) -> Vec<Tuning> {
    let default = hopper::default_for(op, dev);
    let mut out = Vec::new();
    if default.is_some() {
        out.push(Tuning::of(&[(Knob::Wgmma, 0)]));
    }
    if dev.has_hopper_kernels() {
        out.extend(
            hopper::VARIANTS
                .iter()
                .filter(|v| Some(**v) != default && v.fits(op, dev))
                .map(HopperVariant::tuning),
        );
    }
    out
}

/// The chunks per block `--tune` tries for attn_decode_f16 (the built-in
/// launch first: the planner's choice for the device).
const ATTN_CHUNKS: [usize; 5] = [1, 2, 4, 8, 16];

/// Every kernel symbol a candidate of any catalogue op (or a diagnostic
/// run: the prologue probe) launches on `dev` beyond the ops' own
/// (`greta_<op>`): what a compile for that target must contain.
pub fn variant_symbols(dev: &GpuDevice) -> Vec<String> {
    f16_variants(dev)
        .iter()
        .map(F16Variant::symbol)
        .chain(hopper::symbols(dev))
        .chain(std::iter::once(PROBE_ROPE_SYMBOL.to_string()))
        .collect()
}

/// The dynamic shared memory a launch of the variant kernel `symbol` takes
/// (a gemm_f16 `mma.sync` variant or a Hopper kernel); `None` for any other
/// kernel (they take none).
pub fn variant_shared_bytes(symbol: &str) -> Option<u32> {
    CUDA_F16_VARIANTS
        .iter()
        .find(|v| v.symbol() == symbol)
        .map(F16Variant::shared_bytes)
        .or_else(|| {
            hopper::VARIANTS
                .iter()
                .find(|v| {
                    ["gemm_f16", "linear_f16"]
                        .iter()
                        .any(|op| v.symbol(op) == symbol)
                })
                .map(HopperVariant::shared_bytes)
        })
}

/// rms_gemv_rope_kv_f16's diagnostic variant (`probe=1`): its norm
/// prologue leaves one lane out, wrong on purpose (`--inject prologue`).
pub const PROBE_ROPE_SYMBOL: &str = "greta_rms_gemv_rope_kv_f16_probe";

/// [`variant_symbols`] of a device of `api` with target `arch` (1024
/// threads per block): the compile tests check each is in the object.
pub fn variant_symbols_for_target(api: Api, arch: &super::arch::Arch) -> Vec<String> {
    let dev = GpuDevice {
        api,
        ordinal: 0,
        name: String::new(),
        arch: arch.clone(),
        arch_source: String::new(),
        compute_units: 1,
        total_memory_bytes: 0,
        warp_size: 32,
        max_shared_memory_per_block: 49152,
        max_threads_per_block: 1024,
        max_grid: [1; 3],
        integrated: false,
        pci_bus_id: String::new(),
        pci_vendor_id: 0,
        pci_device_id: 0,
        uuid: None,
        runtime_version: String::new(),
        driver_version: String::new(),
        driver_version_raw: 0,
        kernels_for: Some(arch.clone()),
        hopper_kernels: api == Api::Cuda && arch.to_string() == "sm_90a",
    };
    variant_symbols(&dev)
}

/// [`variant_symbols_for_target`] of an NVIDIA architecture named as
/// text (`sm_90a`): what the every-architecture compile test checks each
/// CUBIN for.
pub fn cuda_variant_symbols(arch: &str) -> Vec<String> {
    variant_symbols_for_target(Api::Cuda, &super::arch::Arch::parse(arch))
}

/// Why `t` is no tuning of `op` on `dev`. A composite op (`block_decode`)
/// has no kernel of its own: its keys (`fuse`) are the graph's, checked by
/// the one rule every backend runs it by ([`crate::backend::composite_plan`]).
pub fn check(op: &Op, dev: &GpuDevice, t: &Tuning) -> Result<(), String> {
    if op.is_composite() {
        return crate::backend::composite_plan(op, Some(t)).map(|_| ());
    }
    plan(op, dev, t).map(|_| ())
}

/// The launch of `op` on `dev` with tuning `t`, and the tuning that runs
/// with its defaults filled in (what a cache stores). An empty tuning is
/// the built-in launch.
pub fn plan(op: &Op, dev: &GpuDevice, t: &Tuning) -> Result<(Plan, Tuning), String> {
    if t.0.is_empty() {
        // attn_decode_f16 says which split its planner chose (as Vulkan's
        // plans do): the chunks each block walks, its last scalar.
        let base = launch::plan(op, dev);
        let ran = match (op, base.scalars.last()) {
            (Op::AttnDecodeF16 { .. }, Some(&launch::KernelArg::U32(per))) => {
                Tuning::of(&[(Knob::Chunks, per)])
            }
            _ => Tuning::default(),
        };
        return Ok((base, ran));
    }
    // The launch on the op's own kernel: what the variants change.
    let base = launch::builtin(op, dev);
    let api = dev.api.label();
    let unknown = |allowed: &[Knob]| -> Result<(), String> {
        match t.0.keys().find(|k| !allowed.contains(k)) {
            Some(k) => Err(format!(
                "the {api} {} kernel takes no `{k}` (it takes: {})",
                op.name(),
                if allowed.is_empty() {
                    "nothing".to_string()
                } else {
                    allowed
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
            None => Ok(()),
        }
    };
    match *op {
        Op::Fill { n, .. } | Op::Copy { n } | Op::VecAdd { n } => {
            unknown(&[Knob::Wg, Knob::PerCu])?;
            let wg = t.get(Knob::Wg).unwrap_or(launch::BLOCK);
            let per_cu = t.get(Knob::PerCu).unwrap_or(BLOCKS_PER_CU);
            if !(wg == launch::BLOCK || STREAM_WG.contains(&wg)) || wg > dev.max_threads_per_block {
                return Err(format!(
                    "wg={wg} is no block size of the {api} streaming kernels (128, 256, 512, 1024; at most {} here)",
                    dev.max_threads_per_block
                ));
            }
            if !(1..=BLOCKS_PER_CU).contains(&per_cu) {
                return Err(format!("per_cu={per_cu} is outside 1..={BLOCKS_PER_CU}"));
            }
            let per_block = (wg * VEC_UNROLL * 4) as usize;
            let want = n.div_ceil(per_block).max(1);
            let full = (dev.compute_units.max(1) as usize).saturating_mul(per_cu as usize);
            let cap = (dev.max_grid[0].max(1) as usize).min(1 << 20);
            let blocks = want.min(full).min(cap).max(1) as u32;
            let ran = Tuning::of(&[(Knob::Wg, wg), (Knob::PerCu, per_cu)]);
            Ok((
                Plan {
                    dims: Dims::new([blocks, 1, 1], [wg, 1, 1]),
                    ..base
                },
                ran,
            ))
        }
        Op::GemmF16 { .. } | Op::LinearF16 { .. }
            if dev.api == Api::Cuda && t.get(Knob::Wgmma).is_some() =>
        {
            wgmma_plan(op, dev, t, base)
        }
        Op::LinearF16 { .. } if dev.api == Api::Cuda => {
            unknown(&[Knob::Wgmma])?;
            Ok((base, Tuning::default()))
        }
        Op::GemmF16 { m, n, k } => {
            if dev.api == Api::Cuda {
                unknown(&[Knob::Bm, Knob::Bn, Knob::Stages, Knob::Wgmma])?;
            } else {
                unknown(&[Knob::Bm, Knob::Bn, Knob::Stages])?;
            }
            let asked = F16Variant {
                bm: t.get(Knob::Bm).unwrap_or(0),
                bn: t.get(Knob::Bn).unwrap_or(0),
                stages: t.get(Knob::Stages).unwrap_or(0),
            };
            let known = f16_variants(dev);
            if !known.contains(&asked) {
                return Err(format!(
                    "bm={} bn={} stages={} is no gemm_f16 variant on this {api} device ({})",
                    asked.bm,
                    asked.bn,
                    asked.stages,
                    if known.is_empty() {
                        "it has none: they need NVIDIA sm_80 or newer".to_string()
                    } else {
                        known
                            .iter()
                            .map(|v| v.tuning().to_string())
                            .collect::<Vec<_>>()
                            .join("; ")
                    }
                ));
            }
            // The variants move tiles by 16-byte cp.async only: rows of A
            // and B must be 16-byte aligned. Other shapes of the same
            // class run the built-in kernel (and say so: `kernel`).
            if k % 8 != 0 || n % 8 != 0 {
                return Ok((base, Tuning::default()));
            }
            let v = asked;
            Ok((
                Plan {
                    symbol: v.symbol(),
                    dims: Dims {
                        shared_bytes: v.shared_bytes(),
                        ..Dims::new(
                            [(n as u32).div_ceil(v.bn), (m as u32).div_ceil(v.bm), 1],
                            [v.threads(), 1, 1],
                        )
                    },
                    ..base
                },
                v.tuning(),
            ))
        }
        Op::RmsGemvRopeKvF16 { .. } => {
            unknown(&[Knob::Probe])?;
            match t.get(Knob::Probe) {
                Some(0) => Ok((base, Tuning::default())),
                Some(1) => Ok((
                    Plan {
                        symbol: PROBE_ROPE_SYMBOL.to_string(),
                        ..base
                    },
                    Tuning::of(&[(Knob::Probe, 1)]),
                )),
                v => Err(format!("probe={v:?}: must be 0 or 1")),
            }
        }
        Op::AttnDecodeF16 { head_dim, len, .. } => {
            unknown(&[Knob::Chunks])?;
            let per_group = t.get(Knob::Chunks).unwrap_or(0) as usize;
            if !(1..=greta_kernels::ATTN_DECODE_MAX_CHUNKS).contains(&per_group) {
                return Err(format!(
                    "chunks={per_group}: the chunks each block walks must be 1..={}",
                    greta_kernels::ATTN_DECODE_MAX_CHUNKS
                ));
            }
            // More than the head has walks them all: the same launch.
            let chunks = len.div_ceil(greta_kernels::attn_decode_chunk(head_dim));
            let per_group = per_group.min(chunks.max(1));
            let plan = launch::attn_decode_resplit(base, head_dim, len, per_group);
            if plan.dims.grid[1] > dev.max_grid[1] {
                return Err(format!(
                    "chunks={per_group}: {} blocks per head exceed the device's grid ({})",
                    plan.dims.grid[1], dev.max_grid[1]
                ));
            }
            Ok((plan, Tuning::of(&[(Knob::Chunks, per_group as u32)])))
        }
        _ => {
            unknown(&[])?;
            Ok((base, Tuning::default()))
        }
    }
}

/// A tuning with `wgmma` of gemm_f16 or linear_f16 on CUDA: 0 the op's own
/// (`mma.sync`) kernel, alone; 1 a Hopper kernel (`bn` and `stages` name
/// the variant, the op's default without them), which needs code built for
/// sm_90a. A shape the variant's tiles do not divide runs the op's own
/// kernel, as the tuning a cache keeps for a class of shapes may meet one.
fn wgmma_plan(op: &Op, dev: &GpuDevice, t: &Tuning, base: Plan) -> Result<(Plan, Tuning), String> {
    let name = op.name();
    match t.get(Knob::Wgmma) {
        Some(0) => {
            if let Some(k) = t.0.keys().find(|k| **k != Knob::Wgmma) {
                return Err(format!(
                    "wgmma=0 (the {name} mma.sync kernel) takes no `{k}`; gemm_f16's mma.sync variants are bm, bn and stages without wgmma"
                ));
            }
            Ok((base, Tuning::of(&[(Knob::Wgmma, 0)])))
        }
        Some(1) => {
            if let Some(k) =
                t.0.keys()
                    .find(|k| ![Knob::Wgmma, Knob::Bn, Knob::Stages].contains(k))
            {
                return Err(format!(
                    "wgmma=1 (the {name} Hopper kernel) takes no `{k}` (it takes: bn, stages)"
                ));
            }
            if !dev.has_hopper_kernels() {
                return Err(format!(
                    "wgmma=1: the Hopper kernels need NVIDIA compute capability 9.0 with code built for sm_90a; this device's code is for {}",
                    dev.kernels_for
                        .as_ref()
                        .map_or_else(|| dev.arch.to_string(), |a| a.to_string())
                ));
            }
            let v = match (t.get(Knob::Bn), t.get(Knob::Stages)) {
                (None, None) => hopper::default_for(op, dev),
                (bn, stages) => {
                    let v = hopper::VARIANTS
                        .iter()
                        .copied()
                        .find(|v| Some(v.bn) == bn && Some(v.stages) == stages)
                        .ok_or_else(|| {
                            format!(
                                "bn={} stages={} is no Hopper variant of {name} (they are: {})",
                                bn.map_or("-".into(), |b| b.to_string()),
                                stages.map_or("-".into(), |s| s.to_string()),
                                hopper::VARIANTS
                                    .iter()
                                    .map(|v| format!("bn={} stages={}", v.bn, v.stages))
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            )
                        })?;
                    v.fits(op, dev).then_some(v)
                }
            };
            Ok(match v {
                Some(v) => (hopper::plan(op, v, base), v.tuning()),
                None => (base, Tuning::default()),
            })
        }
        Some(w) => Err(format!("wgmma={w} is neither 0 nor 1")),
        None => Ok((base, Tuning::default())),
    }
}

/// The tuning a run that asks for none uses: the cache's entry for `op`
/// when it is a tuning of `op` on `dev` (a damaged or foreign entry is
/// skipped with a warning and the built-in launch runs), else none.
pub fn cached(cache: Option<&TuningCache>, op: &Op, dev: &GpuDevice) -> Option<Tuning> {
    let e = cache?.get_vetted(
        KeySpace::Gpu,
        op,
        &|t| plan(op, dev, t).ok().map(|(_, runs)| runs),
        &|| candidates(op, dev),
    )?;
    match check(op, dev, &e.tuning) {
        Ok(()) => Some(e.tuning.clone()),
        Err(why) => {
            tracing::warn!(
                "cached {} tuning {} for {op} not usable, the built-in launch runs: {why}",
                dev.api.label(),
                e.tuning
            );
            None
        }
    }
}

/// The launch a run makes: the tuning it asks for, exactly (an empty one
/// is the built-in launch, what `--tune` times first); with none, the
/// cache's entry for its class when it still plans here ([`cached`]),
/// else the built-in launch. Also the tuning that runs (the run's stats).
pub fn launch_for(
    asked: Option<&Tuning>,
    cache: Option<&TuningCache>,
    op: &Op,
    dev: &GpuDevice,
) -> Result<(Plan, Tuning), String> {
    match asked {
        Some(t) => plan(op, dev, t),
        None => plan(op, dev, &cached(cache, op, dev).unwrap_or_default()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gpu::arch::Arch;
    use crate::info::DeviceInfo;
    use crate::tuning_cache::TunedEntry;

    /// An H100-class device whose loaded code is for `arch` (`sm_90a`:
    /// with the Hopper kernels).
    pub(crate) fn cuda_dev(arch: &str) -> GpuDevice {
        GpuDevice {
            api: Api::Cuda,
            ordinal: 0,
            name: "test nvidia".into(),
            arch: Arch::parse(arch),
            arch_source: "test".into(),
            compute_units: 132,
            total_memory_bytes: 80 << 30,
            warp_size: 32,
            max_shared_memory_per_block: 49152,
            max_threads_per_block: 1024,
            max_grid: [i32::MAX as u32, 65535, 65535],
            integrated: false,
            pci_bus_id: String::new(),
            pci_vendor_id: 0x10de,
            pci_device_id: 0x2330,
            uuid: None,
            runtime_version: "13.0".into(),
            driver_version: "580.159.04".into(),
            driver_version_raw: 13000,
            kernels_for: Some(Arch::parse(arch)),
            hopper_kernels: arch == "sm_90a",
        }
    }

    fn hip_dev() -> GpuDevice {
        GpuDevice {
            api: Api::Hip,
            arch: Arch::parse("gfx942"),
            compute_units: 304,
            warp_size: 64,
            pci_vendor_id: 0x1002,
            ..cuda_dev("sm_90")
        }
    }

    const F16: Op = Op::GemmF16 {
        m: 8192,
        n: 8192,
        k: 8192,
    };

    #[test]
    fn candidates_per_device_default_first_each_one_plans() {
        let h100 = cuda_dev("sm_90");
        let c = candidates(&F16, &h100);
        assert_eq!(c[0], Tuning::default());
        assert_eq!(c.len(), 1 + CUDA_F16_VARIANTS.len(), "{c:?}");
        // sm_86 opts in to 99 KiB: the 4-stage 128 x 256 variant (106 KiB) is out.
        let a10 = candidates(&F16, &cuda_dev("sm_86"));
        assert!(a10.len() < c.len() && a10.len() > 1, "{a10:?}");
        for t in &a10 {
            let v = t.get(Knob::Stages).unwrap_or(0) * t.get(Knob::Bn).unwrap_or(0);
            assert_ne!(v, 4 * 256, "{t}");
        }
        // No tensor-core path below sm_80, none on HIP: the built-in kernel alone.
        assert_eq!(
            candidates(&F16, &cuda_dev("sm_75")),
            vec![Tuning::default()]
        );
        assert_eq!(candidates(&F16, &hip_dev()), vec![Tuning::default()]);
        // Streaming ops on both APIs; ops without knobs have one candidate.
        let copy = Op::Copy { n: 1 << 28 };
        for dev in [&h100, &hip_dev()] {
            let c = candidates(&copy, dev);
            assert_eq!(c.len(), 7, "{c:?}");
            let mut seen = std::collections::BTreeSet::new();
            for t in &c {
                let (p, ran) = plan(&copy, dev, t).unwrap_or_else(|e| panic!("{t}: {e}"));
                assert!(!p.dims.is_empty());
                assert!(
                    seen.insert(format!("{:?}", p.dims)),
                    "{t}: a duplicate launch"
                );
                if !t.0.is_empty() {
                    assert_eq!(&ran, t);
                }
            }
        }
        assert_eq!(
            candidates(
                &Op::GemmF32 {
                    m: 64,
                    n: 64,
                    k: 64
                },
                &h100
            ),
            vec![Tuning::default()]
        );
        for t in &c {
            let (p, ran) = plan(&F16, &h100, t).unwrap();
            if t.0.is_empty() {
                assert_eq!(p.symbol, "greta_gemm_f16");
                assert_eq!(p.dims.shared_bytes, 0);
            } else {
                assert_eq!(&ran, t);
                assert!(p.symbol.starts_with("greta_gemm_f16_bm"), "{}", p.symbol);
                assert!(
                    p.dims.shared_bytes > 48 << 10,
                    "{t}: {}",
                    p.dims.shared_bytes
                );
                let bm = t.get(Knob::Bm).unwrap();
                let bn = t.get(Knob::Bn).unwrap();
                assert_eq!(p.dims.grid, [8192 / bn, 8192 / bm, 1]);
                assert_eq!(p.dims.block[0], 32 * (bm / 64) * (bn / 64));
            }
        }
    }

    /// Code built for sm_90a: the Hopper kernel is the built-in launch where
    /// the shape is whole tiles; `--tune` times it, the op's own kernel
    /// (`wgmma=0`), the other Hopper variant and (gemm_f16) the mma.sync
    /// variants, each a launch of its own that plans as asked.
    #[test]
    fn on_sm_90a_the_hopper_kernel_is_built_in_and_wgmma_picks_the_family() {
        let h200 = cuda_dev("sm_90a");
        let (p, ran) = plan(&F16, &h200, &Tuning::default()).unwrap();
        assert_eq!(
            (p.symbol.as_str(), ran),
            ("greta_gemm_f16_wgmma_bn256_s4", Tuning::default())
        );
        assert_eq!(p.maps.len(), 2);
        let c = candidates(&F16, &h200);
        assert_eq!(c.len(), 1 + 1 + 1 + CUDA_F16_VARIANTS.len(), "{c:?}");
        assert_eq!(c[1], Tuning::of(&[(Knob::Wgmma, 0)]));
        assert_eq!(c[2], hopper::VARIANTS[1].tuning());
        let mut symbols = std::collections::BTreeSet::new();
        for t in &c {
            let (p, ran) = plan(&F16, &h200, t).unwrap_or_else(|e| panic!("{t}: {e}"));
            if !t.0.is_empty() {
                assert_eq!(&ran, t);
            }
            assert_eq!(p.maps.is_empty(), !p.symbol.contains("wgmma"), "{t}");
            assert!(symbols.insert(p.symbol.clone()), "{t}: {} twice", p.symbol);
        }
        let (p, _) = plan(&F16, &h200, &Tuning::of(&[(Knob::Wgmma, 0)])).unwrap();
        assert_eq!(
            (p.symbol.as_str(), p.dims.shared_bytes),
            ("greta_gemm_f16", 0)
        );
        // wgmma=1 alone: the op's default variant.
        let (p, ran) = plan(&F16, &h200, &Tuning::of(&[(Knob::Wgmma, 1)])).unwrap();
        assert_eq!(p.symbol, "greta_gemm_f16_wgmma_bn256_s4");
        assert_eq!(ran, hopper::VARIANTS[0].tuning());
        // linear_f16: the built-in Hopper launch, wgmma=0, the other tile.
        let lin = Op::LinearF16 {
            tokens: 2048,
            rows: 12288,
            cols: 4096,
        };
        let c = candidates(&lin, &h200);
        assert_eq!(
            c,
            vec![
                Tuning::default(),
                Tuning::of(&[(Knob::Wgmma, 0)]),
                hopper::VARIANTS[1].tuning()
            ]
        );
        let symbols: Vec<String> = c
            .iter()
            .map(|t| plan(&lin, &h200, t).unwrap().0.symbol)
            .collect();
        assert_eq!(
            symbols,
            [
                "greta_linear_f16_wgmma_bn256_s4",
                "greta_linear_f16",
                "greta_linear_f16_wgmma_bn128_s6"
            ]
        );
        // A shape the tiles do not divide: no Hopper candidate, and a
        // cached Hopper tuning of its class runs the op's own kernel.
        let odd = Op::GemmF16 {
            m: 8000,
            n: 8000,
            k: 8000,
        };
        let c = candidates(&odd, &h200);
        assert_eq!(c.len(), 1 + CUDA_F16_VARIANTS.len(), "{c:?}");
        let (p, ran) = plan(&odd, &h200, &hopper::VARIANTS[0].tuning()).unwrap();
        assert_eq!(
            (p.symbol.as_str(), ran),
            ("greta_gemm_f16", Tuning::default())
        );
        // On sm_90 code (no sm_90a build): the old candidates only.
        assert_eq!(
            candidates(&lin, &cuda_dev("sm_90")),
            vec![Tuning::default()]
        );
    }

    #[test]
    fn a_wgmma_tuning_that_cannot_run_is_refused_with_why() {
        let h200 = cuda_dev("sm_90a");
        let lin = Op::LinearF16 {
            tokens: 2048,
            rows: 4096,
            cols: 4096,
        };
        for (op, dev, t, words) in [
            (
                F16,
                cuda_dev("sm_90"),
                Tuning::of(&[(Knob::Wgmma, 1)]),
                "code built for sm_90a; this device's code is for sm_90",
            ),
            (F16, h200.clone(), Tuning::of(&[(Knob::Wgmma, 2)]), "wgmma=2 is neither 0 nor 1"),
            (
                F16,
                h200.clone(),
                Tuning::of(&[(Knob::Wgmma, 0), (Knob::Bm, 128)]),
                "wgmma=0 (the gemm_f16 mma.sync kernel) takes no `bm`",
            ),
            (
                F16,
                h200.clone(),
                Tuning::of(&[(Knob::Wgmma, 1), (Knob::Bm, 128)]),
                "takes no `bm` (it takes: bn, stages)",
            ),
            (
                lin.clone(),
                h200.clone(),
                Tuning::of(&[(Knob::Wgmma, 1), (Knob::Bn, 192), (Knob::Stages, 4)]),
                "bn=192 stages=4 is no Hopper variant of linear_f16 (they are: bn=256 stages=4; bn=128 stages=6)",
            ),
            (
                lin,
                h200.clone(),
                Tuning::of(&[(Knob::Bn, 256)]),
                "the CUDA linear_f16 kernel takes no `bn` (it takes: wgmma)",
            ),
            (
                F16,
                hip_dev(),
                Tuning::of(&[(Knob::Wgmma, 1)]),
                "the HIP gemm_f16 kernel takes no `wgmma`",
            ),
        ] {
            let e = check(&op, &dev, &t).unwrap_err();
            assert!(e.contains(words), "{t}: {e}");
        }
    }

    /// A Hopper winner cached on an sm_90a build is skipped, not an error,
    /// where the code is sm_90's (`GRETA_CUDA_ARCH=sm_90`, or an NVRTC that
    /// cannot build sm_90a): the mma.sync kernel runs.
    #[test]
    fn a_cached_hopper_tuning_on_sm_90_code_runs_the_old_kernel() {
        let tmp = tempfile::tempdir().unwrap();
        let win = hopper::VARIANTS[1];
        let mut c = TuningCache::open(&info(), Some(tmp.path()));
        c.put_in(
            KeySpace::Gpu,
            &F16,
            TunedEntry {
                tuning: win.tuning(),
                kernel: win.symbol("gemm_f16").trim_start_matches("greta_").into(),
                median_ns: 1_800_000,
                measured_op: F16.to_string(),
            },
        );
        c.save().unwrap();
        let c = TuningCache::open(&info(), Some(tmp.path()));
        let (p, ran) = launch_for(None, Some(&c), &F16, &cuda_dev("sm_90a")).unwrap();
        assert_eq!((p.symbol, ran), (win.symbol("gemm_f16"), win.tuning()));
        assert_eq!(cached(Some(&c), &F16, &cuda_dev("sm_90")), None);
        let (p, _) = launch_for(None, Some(&c), &F16, &cuda_dev("sm_90")).unwrap();
        assert_eq!(p.symbol, "greta_gemm_f16");
    }

    /// attn_decode_f16's split: the built-in launch names the planner's
    /// chunks per block; `--tune` offers other splits, each a different
    /// number of blocks; `chunks` plans that many (more than the head has:
    /// all of them), and 0 or over 64 is refused.
    #[test]
    fn the_decode_attention_split_is_the_planners_or_the_one_asked() {
        let dev = cuda_dev("sm_90");
        let op = |len: usize| Op::AttnDecodeF16 {
            heads: 32,
            head_dim: 128,
            len,
            max_seq: len,
        };
        // 132 SMs x 4 blocks: 17 splits wanted; L512 has 8 chunks (1
        // each), L4096 64 (4 each: 16 splits).
        for (len, per, splits) in [(512, 1, 8), (4096, 4, 16)] {
            let (p, ran) = plan(&op(len), &dev, &Tuning::default()).unwrap();
            assert_eq!(ran, Tuning::of(&[(Knob::Chunks, per)]), "L{len}");
            assert_eq!(p.dims.grid, [32, splits, 1], "L{len}");
            let c = candidates(&op(len), &dev);
            let mut grids: Vec<u32> = c
                .iter()
                .map(|t| plan(&op(len), &dev, t).unwrap().0.dims.grid[1])
                .collect();
            let n = grids.len();
            grids.sort_unstable();
            grids.dedup();
            assert_eq!(grids.len(), n, "L{len}: {c:?}");
            assert!(n > 2 || len == 512, "L{len}: {c:?}");
        }
        // Every split passes the kernel the chunks its grid was made for,
        // in the one place the kernel reads them (a second chunk count
        // pushed after the planner's left the kernel walking the planner's:
        // wrong results and NaN on an H200, 2026-11-29).
        for len in [512, 4096] {
            let (builtin, _) = plan(&op(len), &dev, &Tuning::default()).unwrap();
            for t in candidates(&op(len), &dev) {
                let (p, ran) = plan(&op(len), &dev, &t).unwrap();
                assert_eq!(p.scalars.len(), builtin.scalars.len(), "L{len} {t}");
                let Some(&launch::KernelArg::U32(per)) = p.scalars.last() else {
                    panic!("L{len} {t}: no chunk count");
                };
                assert_eq!(ran, Tuning::of(&[(Knob::Chunks, per)]), "L{len} {t}");
                assert_eq!(
                    p.dims.grid[1] as usize,
                    greta_kernels::attn_decode_splits(128, len, per as usize),
                    "L{len} {t}"
                );
            }
        }
        let (p, ran) = plan(&op(4096), &dev, &Tuning::of(&[(Knob::Chunks, 64)])).unwrap();
        assert_eq!(
            (p.dims.grid, ran),
            ([32, 1, 1], Tuning::of(&[(Knob::Chunks, 64)]))
        );
        let (p, ran) = plan(&op(100), &dev, &Tuning::of(&[(Knob::Chunks, 8)])).unwrap();
        assert_eq!(
            (p.dims.grid, ran),
            ([32, 1, 1], Tuning::of(&[(Knob::Chunks, 2)]))
        );
        for bad in [0, 65] {
            let e = check(&op(512), &dev, &Tuning::of(&[(Knob::Chunks, bad)])).unwrap_err();
            assert!(e.contains("1..=64"), "{e}");
        }
        // One chunk per block of a cache longer than the grid's y reach.
        let e = check(&op(65536 * 64 + 1), &dev, &Tuning::of(&[(Knob::Chunks, 1)])).unwrap_err();
        assert!(e.contains("exceed the device's grid (65535)"), "{e}");
    }

    #[test]
    fn the_streaming_grid_follows_wg_and_per_cu() {
        let dev = cuda_dev("sm_90");
        let copy = Op::Copy { n: 1 << 28 };
        // The built-in launch and its spelled-out twin are the same launch.
        let (base, _) = plan(&copy, &dev, &Tuning::default()).unwrap();
        let (same, _) = plan(
            &copy,
            &dev,
            &Tuning::of(&[(Knob::Wg, 256), (Knob::PerCu, 1024)]),
        )
        .unwrap();
        assert_eq!(base.dims, same.dims);
        let (p, _) = plan(&copy, &dev, &Tuning::of(&[(Knob::PerCu, 8)])).unwrap();
        assert_eq!(p.dims, Dims::new([132 * 8, 1, 1], [256, 1, 1]));
        let (p, _) = plan(&copy, &dev, &Tuning::of(&[(Knob::Wg, 1024)])).unwrap();
        // 2^28 elements, 1024 threads x 4 vectors x 4 per block: 16384 blocks.
        assert_eq!(p.dims, Dims::new([16384, 1, 1], [1024, 1, 1]));
    }

    #[test]
    fn a_tuning_the_kernel_does_not_take_is_refused_with_why() {
        let dev = cuda_dev("sm_90");
        let copy = Op::Copy { n: 1000 };
        for (t, words) in [
            (Tuning::of(&[(Knob::Bm, 64)]), "takes no `bm`"),
            (Tuning::of(&[(Knob::Wg, 96)]), "wg=96"),
            (Tuning::of(&[(Knob::PerCu, 0)]), "per_cu=0"),
        ] {
            let e = check(&copy, &dev, &t).unwrap_err();
            assert!(e.contains(words), "{t}: {e}");
        }
        let e = check(&F16, &dev, &Tuning::of(&[(Knob::Bm, 64), (Knob::Bn, 64)])).unwrap_err();
        assert!(
            e.contains("no gemm_f16 variant") && e.contains("bm=128"),
            "{e}"
        );
        let e = check(&F16, &hip_dev(), &CUDA_F16_VARIANTS[0].tuning()).unwrap_err();
        assert!(e.contains("sm_80"), "{e}");
        let e = check(
            &Op::Softmax { rows: 2, cols: 8 },
            &dev,
            &Tuning::of(&[(Knob::Wg, 128)]),
        )
        .unwrap_err();
        assert!(e.contains("takes: nothing"), "{e}");
        // An unaligned shape of a tuned class runs the built-in kernel.
        let odd = Op::GemmF16 {
            m: 8192,
            n: 8191,
            k: 8192,
        };
        let (p, ran) = plan(&odd, &dev, &CUDA_F16_VARIANTS[2].tuning()).unwrap();
        assert_eq!(
            (p.symbol.as_str(), ran),
            ("greta_gemm_f16", Tuning::default())
        );
    }

    /// `block_decode`'s `fuse` (fused or unfused graph, what `--tune` times
    /// for it) is a tuning of the composite op on HIP and CUDA as on Vulkan:
    /// the check the GPU backends run before anything else takes both values
    /// and refuses the rest with the composite rule's words.
    #[test]
    fn a_composite_op_takes_its_graph_keys_on_hip_and_cuda() {
        let op = Op::BlockDecode {
            hidden: 128,
            heads: 4,
            head_dim: 32,
            ffn: 344,
            len: 301,
        };
        for dev in [cuda_dev("sm_90"), hip_dev()] {
            for t in crate::backend::composite_candidates(&op) {
                check(&op, &dev, &t).unwrap_or_else(|e| panic!("{t}: {e}"));
            }
            let e = check(&op, &dev, &Tuning::of(&[(Knob::Fuse, 2)])).unwrap_err();
            assert!(e.contains("fuse=2"), "{e}");
            let e = check(&op, &dev, &Tuning::of(&[(Knob::Wg, 128)])).unwrap_err();
            assert!(e.contains("does not apply") && e.contains("fuse"), "{e}");
        }
    }

    fn info() -> DeviceInfo {
        let mut d = DeviceInfo::placeholder();
        d.backend = crate::info::BackendKind::Cuda;
        d.name = "test nvidia".into();
        d.uuid = Some("00112233445566778899aabbccddeeff".parse().unwrap());
        d.driver_version = 13000;
        d
    }

    /// What a later run without a tuning picks: the stored winner, from a
    /// real file; a damaged entry (a variant this device has no kernel for,
    /// a knob the kernel does not take) is skipped, never an error; a
    /// Vulkan entry for the same class is not the GPU kernels'.
    #[test]
    fn a_run_without_a_tuning_takes_the_cached_one_unless_it_is_damaged() {
        let tmp = tempfile::tempdir().unwrap();
        let dev = cuda_dev("sm_90");
        let win = CUDA_F16_VARIANTS[2];
        let entry = |t: Tuning| TunedEntry {
            tuning: t,
            kernel: win.symbol().trim_start_matches("greta_").into(),
            median_ns: 2_000_000,
            measured_op: F16.to_string(),
        };
        let mut c = TuningCache::open(&info(), Some(tmp.path()));
        assert_eq!(cached(Some(&c), &F16, &dev), None, "empty cache");
        assert_eq!(cached(None, &F16, &dev), None, "no cache");
        // A Vulkan entry for the class does not answer.
        c.put(&F16, entry(Tuning::of(&[(Knob::Coopmat, 3)])));
        assert_eq!(cached(Some(&c), &F16, &dev), None);
        c.put_in(KeySpace::Gpu, &F16, entry(win.tuning()));
        c.save().unwrap();
        let c = TuningCache::open(&info(), Some(tmp.path()));
        assert_eq!(cached(Some(&c), &F16, &dev), Some(win.tuning()));
        // What the backend launches: the cached variant when the run asks
        // for nothing; exactly what it asks for otherwise (an empty tuning
        // is the built-in kernel, whatever the cache holds).
        let (p, ran) = launch_for(None, Some(&c), &F16, &dev).unwrap();
        assert_eq!((p.symbol, ran), (win.symbol(), win.tuning()));
        assert_eq!(p.dims.shared_bytes, win.shared_bytes());
        let (p, ran) = launch_for(Some(&Tuning::default()), Some(&c), &F16, &dev).unwrap();
        assert_eq!(
            (p.symbol.as_str(), ran),
            ("greta_gemm_f16", Tuning::default())
        );
        let other = CUDA_F16_VARIANTS[0];
        let (p, _) = launch_for(Some(&other.tuning()), Some(&c), &F16, &dev).unwrap();
        assert_eq!(p.symbol, other.symbol());
        let (p, _) = launch_for(None, None, &F16, &dev).unwrap();
        assert_eq!(p.symbol, "greta_gemm_f16");
        // A neighbouring shape of the class gets it too.
        let near = Op::GemmF16 {
            m: 8000,
            n: 8000,
            k: 8000,
        };
        assert_eq!(cached(Some(&c), &near, &dev), Some(win.tuning()));
        // The same file on a GPU that has no such variant: skipped.
        assert_eq!(cached(Some(&c), &F16, &cuda_dev("sm_75")), None);
        // Damaged entries in the file: a variant that does not exist, a
        // knob the kernel does not take.
        let path = c.path().unwrap().to_path_buf();
        for bad in [
            Tuning::of(&[(Knob::Bm, 96), (Knob::Bn, 128), (Knob::Stages, 3)]),
            Tuning::of(&[(Knob::Wg, 128)]),
        ] {
            let mut c = TuningCache::open(&info(), Some(tmp.path()));
            c.put_in(KeySpace::Gpu, &F16, entry(bad.clone()));
            c.save().unwrap();
            let c = TuningCache::open(&info(), Some(tmp.path()));
            assert!(c.get_in(KeySpace::Gpu, &F16).is_some(), "{bad}: loaded");
            assert_eq!(cached(Some(&c), &F16, &dev), None, "{bad}: used");
            let (p, ran) = launch_for(None, Some(&c), &F16, &dev).unwrap();
            assert_eq!(
                (p.symbol.as_str(), ran),
                ("greta_gemm_f16", Tuning::default())
            );
        }
        // A value that is no number: the file does not parse, and nothing
        // from it is used.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"wg\": 128", "\"wg\": \"big\"")).unwrap();
        let c = TuningCache::open(&info(), Some(tmp.path()));
        assert!(c.ignored.is_some(), "a damaged file was read");
        assert_eq!(cached(Some(&c), &F16, &dev), None);
    }

    #[test]
    fn every_variant_is_instantiated_in_the_source_and_fits_its_block() {
        let src = greta_kernels::hip_src::SOURCES
            .iter()
            .find(|(n, _)| *n == "gemm_f16.hip")
            .unwrap()
            .1;
        for v in CUDA_F16_VARIANTS {
            assert!(
                src.contains(&format!(
                    "GRETA_F16_VARIANT({}, {}, {})",
                    v.bm, v.bn, v.stages
                )),
                "{} is not instantiated in gemm_f16.hip",
                v.symbol()
            );
            assert!(v.threads() <= 1024 && v.threads() % 32 == 0, "{v:?}");
            // The loaders: whole chunks of 8 halves per thread.
            assert_eq!((v.bm * F16_BK / 8) % v.threads(), 0, "{v:?}");
            assert_eq!((v.bn * F16_BK / 8) % v.threads(), 0, "{v:?}");
        }
        // The GEMM variants on NVIDIA sm_80+, and everywhere the prologue
        // probe (`--inject prologue`).
        assert_eq!(
            variant_symbols(&cuda_dev("sm_90")).len(),
            CUDA_F16_VARIANTS.len() + 1
        );
        assert_eq!(variant_symbols(&hip_dev()), [PROBE_ROPE_SYMBOL]);
        assert_eq!(
            variant_symbols(&cuda_dev("sm_90a")).len(),
            CUDA_F16_VARIANTS.len() + 2 * hopper::VARIANTS.len() + 1
        );
        for v in CUDA_F16_VARIANTS {
            assert_eq!(variant_shared_bytes(&v.symbol()), Some(v.shared_bytes()));
        }
        for v in hopper::VARIANTS {
            for op in ["gemm_f16", "linear_f16"] {
                assert_eq!(variant_shared_bytes(&v.symbol(op)), Some(v.shared_bytes()));
            }
        }
        assert_eq!(variant_shared_bytes("greta_gemm_f16"), None);
        let rope = Op::RmsGemvRopeKvF16 {
            heads: 4,
            head_dim: 32,
            pos0: 7,
            max_seq: 9,
            theta: 1e4,
            eps: 1e-5,
        };
        let (p, ran) = plan(&rope, &hip_dev(), &Tuning::of(&[(Knob::Probe, 1)])).unwrap();
        assert_eq!(
            (p.symbol.as_str(), ran),
            (PROBE_ROPE_SYMBOL, Tuning::of(&[(Knob::Probe, 1)]))
        );
        assert_eq!(p.aux, launch::plan(&rope, &hip_dev()).aux, "the same table");
        let (p, _) = plan(&rope, &hip_dev(), &Tuning::of(&[(Knob::Probe, 0)])).unwrap();
        assert_eq!(p.symbol, "greta_rms_gemv_rope_kv_f16");
        assert!(check(&rope, &hip_dev(), &Tuning::of(&[(Knob::Probe, 2)])).is_err());
        // The probe is never a candidate.
        assert_eq!(candidates(&rope, &hip_dev()), vec![Tuning::default()]);
    }
}
