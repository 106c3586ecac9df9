//! How each [`Op`] maps onto a shader: specialization constants (tile and
//! workgroup sizes), push constants (shapes), workgroup counts, and the
//! buffer ranges each dispatch binds. Element-wise ops whose buffers exceed
//! the device's `maxStorageBufferRange` are split into several dispatches
//! over aligned sub-ranges; workgroup counts stay <= 65535 per dimension
//! (the Vulkan minimum) and the kernels loop grid-stride over the rest.

use crate::error::RuntimeError;
use crate::tuning::{Knob, Tuning};
/// Re-exported so callers of the planner (the fuzz target) can match on a
/// plan's shader without a dependency on greta-kernels of their own.
pub use greta_kernels::spirv::Shader;
use greta_kernels::{
    attn_decode_chunk, attn_decode_chunks_per_group, attn_decode_splits, ATTN_DECODE_MAX_CHUNKS,
};
use greta_kernels::{HostBuf, Op};

pub use candidates::candidates;
pub use loop_trips::max_loop_trips;

mod attn;
#[cfg(test)]
mod attn_decode_tests;
mod candidates;
mod f16_block;
mod gemm;
mod loop_trips;
#[cfg(test)]
pub(crate) mod test_limits;
#[cfg(test)]
mod waves_tests;

/// Workgroups per dimension every Vulkan device supports.
pub const MAX_GROUPS: u32 = 65535;

/// Dispatches per repeat of the noop op (timed together, reported per dispatch).
pub const NOOP_BATCH: usize = 64;

/// Streaming ops (fill, copy, vec_add): default workgroup size and vec4s
/// per invocation per loop iteration.
const STREAM_WG: u32 = 256;
const STREAM_UNROLL: u32 = 4;

/// Most vec4s per invocation the register-resident norm kernels hold.
const NORM_MAX_NPT: u32 = 16;

/// What the planner needs to know about the device.
#[derive(Clone)]
pub struct Limits {
    pub max_range: u64,
    pub offset_align: u64,
    pub max_invocations: u32,
    pub max_shared: u32,
    pub subgroup_arith: bool,
    pub coop_f16: Option<(u32, u32, u32)>,
    pub f16_storage: bool,
    /// VK_NV_cooperative_matrix2 enabled (workgroup scope, flexible
    /// dimensions, tensor addressing): `gemm_f16_cm2` can run.
    pub coop2: bool,
    /// Where `coop2`: its reductions, conversions between uses and
    /// per-element operations are enabled as well
    /// (`attn_prefill_f16_cm2`).
    pub coop2_ops: bool,
    /// Where `coop2`: the workgroup sizes (and tile granularities) the
    /// driver runs f16 x f16 -> f32 workgroup-scope matrices at; a
    /// cooperative-matrix-2 kernel takes one of them or does not run.
    pub coop2_workgroups: Vec<greta_vkenum::coop2::Flex>,
    /// A 16x16x16 f16 x f16 -> f32 subgroup shape exists (`gemm_f16_cmreg`).
    pub coop16: bool,
    /// A 16x16x16 f16 x f16 -> f16 subgroup shape exists as well: f16
    /// accumulator tiles, which `linear_f16_cm` converts its f32
    /// accumulators to and stores straight to global memory.
    pub coop16_f16: bool,
    /// The subgroup size every compute dispatch gets, when the device has
    /// only one (min == max); the kernels that count subgroups
    /// ([`counts_subgroups`]) are planned with it. [`plan`] sets it, for
    /// the plan it makes, to the size it requires on a device with a range.
    pub subgroup_size: Option<u32>,
    /// The subgroup sizes a compute pipeline can require, where the device
    /// lets it (Vulkan 1.3 / VK_EXT_subgroup_size_control): RADV offers 32
    /// and 64 and, asked nothing, may pick either, so a kernel that counts
    /// subgroups must name its size.
    pub waves: Option<Waves>,
    /// Compute units, where the driver tells (NVIDIA, RADV): the
    /// planners that spread work over the units size their grids by it.
    pub compute_units: Option<u32>,
}

/// The range of subgroup sizes a pipeline can require (`min..=max`, powers
/// of two) and whether it can require full subgroups too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waves {
    pub min: u32,
    pub max: u32,
    /// `computeFullSubgroups`.
    pub full: bool,
    /// `maxComputeWorkgroupSubgroups` (0 where unknown).
    pub max_subgroups: u32,
}

impl Waves {
    /// More than one size to choose from.
    fn choice(self) -> bool {
        self.min < self.max
    }

    /// Every size in the range.
    fn sizes(self) -> impl Iterator<Item = u32> {
        (0..32)
            .map(|i| 1u32 << i)
            .filter(move |s| (self.min..=self.max).contains(s))
    }
}

/// The subgroup size kernels that count subgroups get by default on a
/// device with a choice: 32, as on NVIDIA, and the size RADV compiles the
/// cooperative-matrix kernels to without spills (at 64 their accumulators
/// spill on RDNA3, docs/radeon.md).
const DEFAULT_WAVE: u32 = 32;

/// What a pipeline requires of its subgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Wave {
    /// `requiredSubgroupSize`.
    pub size: u32,
    /// Every subgroup full (`REQUIRE_FULL_SUBGROUPS`): the kernel numbers
    /// its subgroups' rows and lanes from the size.
    pub full: bool,
}

/// The kernels whose code is specialised to a subgroup size (a spec
/// constant they divide their workgroup by): wrong results if the driver
/// runs another, so on a device with a choice their size is required.
pub fn counts_subgroups(s: Shader) -> bool {
    matches!(
        s,
        Shader::GemmF16Cmreg
            | Shader::LinearF16Cm
            | Shader::LinearF16CmCs
            | Shader::LinearF16CmBt
            | Shader::LinearF16CmBtCs
            | Shader::AttnPrefillF16Cm
            | Shader::AttnPrefillF16Cm2
    )
}

/// One dispatch: push constants, workgroup counts, and per binding the
/// `(offset, range)` in bytes (`None` = whole buffer).
pub struct Dispatch {
    pub push: Vec<u32>,
    pub groups: [u32; 3],
    pub ranges: Vec<Option<(u64, u64)>>,
}

pub struct Plan {
    /// The kernel, as a [`Shader`]: a plan can only name a shader that was
    /// built in; its text form ([`Shader::name`]) is what `RunStats.kernel`
    /// and the tuning cache carry.
    pub shader: Shader,
    /// Report the time of one dispatch (a repeat's time over its
    /// dispatches) instead of the repeat's; with a barrier between the
    /// dispatches of a repeat (noop: the cost of a dependent dispatch).
    pub per_dispatch: bool,
    /// Value of specialization constant `i`.
    pub spec: Vec<u32>,
    pub tuning: Tuning,
    /// Extra buffers bound after the op's outputs: the op's scratch first
    /// ([`Op::scratch`], uploaded as zeros), then read-only tables (e.g.
    /// rope's cos/sin table).
    pub aux: Vec<HostBuf>,
    pub dispatches: Vec<Dispatch>,
    /// Later passes, each another shader over the same bindings, run
    /// after a barrier behind the previous pass (the combine step of a
    /// split reduction: attn_decode_f16). Empty for one-pass ops.
    pub then: Vec<Pass>,
    /// The subgroup size every pass requires (`None`: the driver's choice).
    pub wave: Option<Wave>,
}

/// A pass after a plan's first: its own shader, specialization constants
/// and dispatches; bindings, push-constant layout and timing are the plan's.
pub struct Pass {
    pub shader: Shader,
    pub spec: Vec<u32>,
    pub dispatches: Vec<Dispatch>,
}

impl Plan {
    /// Dispatches of every pass, in recording order.
    pub fn all_dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.dispatches
            .iter()
            .chain(self.then.iter().flat_map(|p| p.dispatches.iter()))
    }
}

/// The op's scratch buffers as the zeros uploaded into them.
fn scratch_bufs(op: &Op) -> Vec<HostBuf> {
    op.scratch()
        .iter()
        .map(|s| HostBuf::zeros(s.dtype, s.len))
        .collect()
}

fn bad(msg: String) -> RuntimeError {
    RuntimeError::BadInput(msg)
}

fn groups_for(items: u64, wg: u64) -> u32 {
    items.div_ceil(wg).clamp(1, MAX_GROUPS as u64) as u32
}

/// The knobs a shader family takes: a knob of another family is an error,
/// not silently ignored.
fn check_keys(t: &Tuning, allowed: &[Knob]) -> Result<(), RuntimeError> {
    match t.0.keys().find(|k| !allowed.contains(k)) {
        Some(k) => {
            let names: Vec<&str> = allowed.iter().map(|a| a.name()).collect();
            Err(bad(format!(
                "tuning key {k} does not apply here (allowed: {})",
                names.join(", ")
            )))
        }
        None => Ok(()),
    }
}

/// A 0/1 knob whose default is `fits`: 1 where it does not fit, or any
/// other value, is the error `why(value)`.
fn switch(
    t: &Tuning,
    knob: Knob,
    fits: bool,
    why: impl FnOnce(u32) -> String,
) -> Result<bool, RuntimeError> {
    match t.get(knob) {
        None => Ok(fits),
        Some(1) if fits => Ok(true),
        Some(0) => Ok(false),
        Some(v) => Err(bad(why(v))),
    }
}

fn wg_of(t: &Tuning, default: u32, lim: &Limits) -> Result<u32, RuntimeError> {
    let wg = t.get(Knob::Wg).unwrap_or(default);
    let most = lim.max_invocations.min(MAX_WG);
    if wg == 0 || wg > most || !wg.is_power_of_two() {
        return Err(bad(format!("wg={wg}: must be a power of two <= {most}")));
    }
    Ok(wg)
}

/// The largest workgroup greta's element-wise and row kernels are planned
/// for, whatever the device reports: every GPU greta targets reports 1024
/// (AMD, NVIDIA, lavapipe), and the products the planner forms from `wg`
/// (`wg * unroll`, `4 * NORM_MAX_NPT * wg`) stay far inside u32 with it.
/// A device limit read from a driver is not a bound on arithmetic (the
/// gemm_plan fuzz target found `wg * unroll` overflowing with a limit of 2^31).
const MAX_WG: u32 = 1024;

/// Element-wise u32/f32 ops over `n` elements with `nbuf` buffers of 4-byte
/// elements, split into chunks that fit the range limit.
fn elementwise(n: usize, nbuf: usize, wg: u32, lim: &Limits, extra_push: &[u32]) -> Vec<Dispatch> {
    let align = lim.offset_align.max(16);
    // Largest chunk in bytes that is a multiple of the offset alignment (and of 16).
    let chunk_bytes = (lim.max_range / align * align).max(align);
    let chunk = (chunk_bytes / 4) as usize;
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < n {
        let count = chunk.min(n - start);
        let whole = start == 0 && count == n;
        let range = if whole {
            None
        } else {
            Some((start as u64 * 4, (count as u64 * 4).next_multiple_of(16)))
        };
        let mut push = vec![count as u32];
        push.extend_from_slice(extra_push);
        out.push(Dispatch {
            push,
            groups: [groups_for((count as u64).div_ceil(4), wg as u64), 1, 1],
            ranges: vec![range; nbuf],
        });
        start += count;
    }
    out
}

/// Host-side cos/sin table for rope, `[tokens][head_dim/2]` pairs, computed
/// in f64 and rounded once ([`greta_kernels::rope_table`], the one table every
/// backend's RoPE kernels read).
fn rope_table(tokens: usize, head_dim: usize, pos0: u32, theta: f32) -> HostBuf {
    HostBuf::F32(greta_kernels::rope_table(tokens, head_dim, pos0, theta))
}

/// The plan for `op` with `tuning` on a device with limits `lim`: the
/// kernel's own planner, then the subgroup size. `wave` (any op) requires
/// a size (where the device can require one); without it, a kernel that counts subgroups gets
/// [`DEFAULT_WAVE`] (or the nearest size the device has) wherever the
/// device offers a choice, and every other kernel the driver's choice.
pub fn plan(op: &Op, tuning: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    let asked = tuning.get(Knob::Wave);
    let mut t = tuning.clone();
    t.0.remove(&Knob::Wave);
    let choice = lim.waves.filter(|w| w.choice());
    let size = match (asked, choice) {
        (Some(w), Some(r)) if w.is_power_of_two() && (r.min..=r.max).contains(&w) => Some(w),
        (Some(w), _) if lim.subgroup_size == Some(w) => Some(w),
        (Some(w), Some(r)) => {
            return Err(bad(format!(
                "wave={w}: the device's subgroup sizes are {}..={} (powers of two)",
                r.min, r.max
            )))
        }
        (Some(w), None) => {
            return Err(bad(format!(
                "wave={w}: the device runs subgroups of {} only",
                lim.subgroup_size
                    .map_or("one size, not known,".to_string(), |s| s.to_string())
            )))
        }
        (None, Some(r)) => Some(DEFAULT_WAVE.clamp(r.min, r.max)),
        (None, None) => lim.subgroup_size,
    };
    let sized = Limits {
        subgroup_size: size,
        ..lim.clone()
    };
    let mut p = plan_kernel(op, &t, &sized)?;
    let counts = counts_subgroups(p.shader);
    // Required where asked (and the device can require one, even its only
    // size), or where the kernel counts subgroups and the driver could
    // otherwise pick another size.
    if let (Some(size), Some(r)) = (size, lim.waves) {
        if asked.is_some() || (counts && r.choice()) {
            p.wave = Some(Wave {
                size,
                full: counts && r.full,
            });
            p.tuning = p.tuning.with(Knob::Wave, size);
        }
    }
    Ok(p)
}

/// The kernel's own planner (no `wave` key; `lim.subgroup_size` is the
/// size the plan will run with, if known).
fn plan_kernel(op: &Op, t: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    op.validate().map_err(|e| bad(e.to_string()))?;
    match *op {
        // No kernel of their own: `Backend::run` runs their graph.
        Op::BlockDecode { .. } | Op::BlockPrefill { .. } => Err(bad(format!(
            "{op} is a composite op: it runs as a graph of other ops, not one kernel"
        ))),
        Op::Noop => noop(t, lim),
        Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. } => stream(op, t, lim),
        Op::TestBrokenCopy { n } => {
            grid_stride(Shader::BrokenCopy, vec![n as u32], n as u64, 2, t, lim)
        }
        Op::TestSlow { iters } => test_slow(iters, t),
        Op::GemvF16 { rows, cols } => f16_block::gemv(op, rows, cols, t, lim),
        Op::GemvAddF16 { .. } | Op::RmsGemvSwigluF16 { .. } | Op::RmsGemvRopeKvF16 { .. } => {
            f16_block::fused_gemv(op, t, lim)
        }
        Op::LinearF16 { tokens, rows, cols } => {
            f16_block::need_f16(op, lim)?;
            gemm::linear::plan(op, tokens, rows, cols, t, lim)
        }
        Op::RmsNormF16 { rows, cols, eps } | Op::AddRmsNormF16 { rows, cols, eps } => {
            f16_block::row_norm(op, rows, cols, eps, t, lim)
        }
        Op::SwigluF16 { rows, cols } => f16_block::swiglu(op, rows, cols, t, lim),
        Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k } => gemm::plan(op, m, n, k, t, lim),
        Op::RmsNorm { rows, cols, .. }
        | Op::LayerNorm { rows, cols, .. }
        | Op::Softmax { rows, cols } => row_norm(op, rows, cols, t, lim),
        Op::Rope {
            tokens,
            heads,
            head_dim,
            pos0,
            theta,
        } => {
            let pairs = (tokens * heads * head_dim / 2) as u64;
            let push = vec![tokens as u32, heads as u32, head_dim as u32];
            let mut p = grid_stride(Shader::Rope, push, pairs, 3, t, lim)?;
            p.aux.push(rope_table(tokens, head_dim, pos0, theta));
            Ok(p)
        }
        Op::KvUpdate {
            layers,
            max_seq,
            heads,
            head_dim,
            pos,
            n_new,
        } => {
            let total = (layers * n_new * heads * head_dim) as u64;
            let push = vec![
                layers as u32,
                max_seq as u32,
                (heads * head_dim) as u32,
                pos as u32,
                n_new as u32,
            ];
            grid_stride(Shader::KvUpdate, push, total, 4, t, lim)
        }
        Op::RopeKvF16 {
            tokens,
            heads,
            head_dim,
            pos0,
            theta,
            ..
        } => {
            let items = (tokens * heads * head_dim / 4) as u64;
            let push = vec![tokens as u32, heads as u32, head_dim as u32, pos0];
            let mut p = grid_stride(Shader::RopeKvF16, push, items, 5, t, lim)?;
            p.aux.push(rope_table(tokens, head_dim, pos0, theta));
            Ok(p)
        }
        Op::AttnDecodeF16 {
            heads,
            head_dim,
            len,
            max_seq,
        } => attn_decode(op, heads, head_dim, len, max_seq, t, lim),
        Op::AttnPrefillF16 { .. } => attn::prefill(op, t, lim),
        Op::Memtest {
            words,
            patterns,
            seed,
            flip_word,
            flip_mask,
        } => memtest(op, words, patterns, [seed, flip_word, flip_mask], t, lim),
    }
}

/// `memtest`: the clear of the error record, then each selected pattern's
/// write, check-and-invert and check, each a pass of the same shader behind
/// a barrier (a check must read what an earlier pass wrote, through
/// memory). A pass grid-strides over the slice in chunks of at most
/// `maxStorageBufferRange` (one dispatch each, bound at the chunk's offset;
/// `base`, the chunk's first word, keeps the patterns' word indices those
/// of the whole slice).
fn memtest(
    op: &Op,
    words: usize,
    patterns: u32,
    [seed, flip_word, flip_mask]: [u32; 3],
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg])?;
    let wg = wg_of(t, 256, lim)?;
    let align = lim.offset_align.max(16);
    let chunk = ((lim.max_range / align * align).max(align) / 4) as usize;
    let push = |n: usize, pattern: u32, phase: u32, base: usize| {
        vec![
            n as u32,
            seed,
            flip_word,
            flip_mask,
            pattern,
            phase,
            base as u32,
        ]
    };
    let pass = |pattern: u32, phase: u32| -> Vec<Dispatch> {
        (0..words)
            .step_by(chunk)
            .map(|base| {
                let n = chunk.min(words - base);
                let range = (n < words).then_some((base as u64 * 4, n as u64 * 4));
                Dispatch {
                    push: push(n, pattern, phase, base),
                    groups: [groups_for(n as u64, wg as u64), 1, 1],
                    ranges: vec![None, range],
                }
            })
            .collect()
    };
    let then = (0..greta_kernels::MEMTEST_PATTERNS.len() as u32)
        .filter(|p| patterns >> p & 1 == 1)
        .flat_map(|p| (1..=3).map(move |phase| (p, phase)))
        .map(|(p, phase)| Pass {
            shader: Shader::Memtest,
            spec: vec![wg],
            dispatches: pass(p, phase),
        })
        .collect();
    // The clear touches only the record; the slice is bound as the first
    // chunk (a binding over maxStorageBufferRange is invalid even unused).
    let first = chunk.min(words);
    let clear = Dispatch {
        push: push(0, 0, 0, 0),
        groups: [1, 1, 1],
        ranges: vec![None, (first < words).then_some((0, first as u64 * 4))],
    };
    Ok(Plan {
        then,
        aux: scratch_bufs(op),
        ..simple(Shader::Memtest, wg, vec![clear])
    })
}

/// Workgroups the attn_decode_f16 planner aims for on a device whose
/// driver does not say how many compute units it has (core Vulkan does
/// not; NVIDIA's and RADV's extensions do, and then the HIP/CUDA rule
/// applies, [`greta_kernels::ATTN_DECODE_GROUPS_PER_CU`] a unit): about 4
/// of 128 invocations per compute unit of a 256-unit GPU. The chunks each
/// workgroup walks are the fewest that still give this many
/// ([`greta_kernels::attn_decode_chunks_per_group`]); `chunks` overrides.
pub const ATTN_DECODE_GROUPS: usize = 1024;

/// The workgroups attn_decode_f16's planner aims for on this device.
fn attn_decode_groups(lim: &Limits) -> usize {
    lim.compute_units.map_or(ATTN_DECODE_GROUPS, |n| {
        (n as usize).saturating_mul(greta_kernels::ATTN_DECODE_GROUPS_PER_CU)
    })
}

/// `attn_decode_f16`: one dispatch, a workgroup per head and split (each
/// walking `chunks` chunks of the sequence), the last workgroup of each
/// head combining its partials in the op's scratch (uploaded as zeros:
/// the per-head counters start at 0).
fn attn_decode(
    op: &Op,
    heads: usize,
    head_dim: usize,
    len: usize,
    max_seq: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Chunks])?;
    let per_group = match t.get(Knob::Chunks) {
        None => attn_decode_chunks_per_group(heads, head_dim, len, attn_decode_groups(lim)),
        // More than the head has walks them all: the same dispatch.
        Some(v) if (1..=ATTN_DECODE_MAX_CHUNKS).contains(&(v as usize)) => {
            (v as usize).min(len.div_ceil(attn_decode_chunk(head_dim)).max(1))
        }
        Some(v) => {
            return Err(bad(format!(
                "chunks={v}: the chunks each workgroup walks must be 1..={ATTN_DECODE_MAX_CHUNKS}"
            )))
        }
    };
    let splits = attn_decode_splits(head_dim, len, per_group);
    if splits > MAX_GROUPS as usize || heads > MAX_GROUPS as usize {
        return Err(bad(format!(
            "{op}: {splits} splits x {heads} heads exceed {MAX_GROUPS} workgroups per dimension"
        )));
    }
    let push = vec![
        heads as u32,
        head_dim as u32,
        len as u32,
        max_seq as u32,
        per_group as u32,
    ];
    let split = Dispatch {
        push,
        groups: [heads as u32, splits as u32, 1],
        ranges: whole(5),
    };
    Ok(Plan {
        shader: Shader::AttnDecodeF16,
        per_dispatch: false,
        spec: vec![],
        tuning: Tuning::default().with(Knob::Chunks, per_group as u32),
        aux: scratch_bufs(op),
        dispatches: vec![split],
        then: vec![],
        wave: None,
    })
}

/// One shader, one spec constant (its workgroup size), tuned by `wg` alone
/// until the caller adds more.
fn simple(shader: Shader, wg: u32, dispatches: Vec<Dispatch>) -> Plan {
    Plan {
        shader,
        per_dispatch: false,
        spec: vec![wg],
        tuning: Tuning::default().with(Knob::Wg, wg),
        aux: vec![],
        dispatches,
        then: vec![],
        wave: None,
    }
}

/// One dispatch of `shader` grid-striding over `items` work items, push
/// constants `push`, `nbuf` buffers bound whole, tuned by `wg` alone.
fn grid_stride(
    shader: Shader,
    push: Vec<u32>,
    items: u64,
    nbuf: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg])?;
    let wg = wg_of(t, 256, lim)?;
    let d = Dispatch {
        push,
        groups: [groups_for(items, wg as u64), 1, 1],
        ranges: whole(nbuf),
    };
    Ok(simple(shader, wg, vec![d]))
}

/// Every one of `n` buffers bound whole.
fn whole(n: usize) -> Vec<Option<(u64, u64)>> {
    vec![None; n]
}

/// `noop`: a batch of dependent dispatches per repeat, timed together: the
/// per-dispatch cost without one timestamp pair per dispatch.
fn noop(t: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg])?;
    let wg = wg_of(t, 64, lim)?;
    let batch = (0..NOOP_BATCH)
        .map(|_| Dispatch {
            push: vec![],
            groups: [1, 1, 1],
            ranges: vec![],
        })
        .collect();
    let mut p = simple(Shader::Noop, wg, batch);
    p.per_dispatch = true;
    Ok(p)
}

/// `fill`, `copy`, `vec_add`: grid-stride streams of `unroll` elements per
/// invocation over at most `groups` workgroups.
fn stream(op: &Op, t: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg, Knob::Unroll, Knob::Groups])?;
    let wg = wg_of(t, STREAM_WG, lim)?;
    let unroll = t.get(Knob::Unroll).unwrap_or(STREAM_UNROLL);
    if !(1..=16).contains(&unroll) {
        return Err(bad(format!("unroll={unroll}: must be 1..=16")));
    }
    let max_groups = t.get(Knob::Groups).unwrap_or(MAX_GROUPS);
    if max_groups == 0 || max_groups > MAX_GROUPS {
        return Err(bad(format!(
            "groups={max_groups}: must be 1..={MAX_GROUPS}"
        )));
    }
    let (shader, nbuf, extra) = match *op {
        Op::Fill { value, .. } => (Shader::Fill, 1, vec![value]),
        Op::Copy { .. } => (Shader::Copy, 2, vec![]),
        _ => (Shader::VecAdd, 3, vec![]),
    };
    let n = op.outputs()[0].len;
    let mut ds = elementwise(n, nbuf, wg * unroll, lim, &extra);
    for d in &mut ds {
        d.groups[0] = d.groups[0].min(max_groups);
    }
    let mut p = simple(shader, wg, ds);
    p.spec.push(unroll);
    p.tuning = p.tuning.with(Knob::Unroll, unroll);
    if t.get(Knob::Groups).is_some() {
        p.tuning = p.tuning.with(Knob::Groups, max_groups);
    }
    Ok(p)
}

/// `test_slow`: every workgroup runs the same chain and writes the same
/// value: on a GPU they run side by side (time ~ one chain), on a CPU
/// implementation they queue up (time ~ groups x chain), so the kernel is
/// slow everywhere.
fn test_slow(iters: u32, t: &Tuning) -> Result<Plan, RuntimeError> {
    check_keys(t, &[])?;
    Ok(Plan {
        shader: Shader::Slow,
        per_dispatch: false,
        spec: vec![],
        tuning: Tuning::default(),
        aux: vec![],
        then: vec![],
        dispatches: vec![Dispatch {
            push: vec![iters],
            groups: [groups_for(iters as u64, 1 << 16), 1, 1],
            ranges: whole(1),
        }],
        wave: None,
    })
}

/// `rmsnorm`, `layernorm`, `softmax`: a workgroup per row; vec4 loads
/// whenever rows stay 16-byte aligned (the default), the row in registers
/// (one read of x) when it fits NORM_MAX_NPT vec4s per invocation (the
/// default then).
fn row_norm(
    op: &Op,
    rows: usize,
    cols: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg, Knob::Vec4, Knob::Reg])?;
    let wg = wg_of(t, 256, lim)?;
    let vec4 = switch(t, Knob::Vec4, cols.is_multiple_of(4), |v| {
        format!("vec4={v}: needs cols % 4 == 0 and a value of 0 or 1")
    })?;
    let (shader, nbuf, push) = match *op {
        Op::RmsNorm { eps, .. } => (
            [Shader::Rmsnorm, Shader::RmsnormVec4, Shader::RmsnormReg],
            3,
            vec![rows as u32, cols as u32, eps.to_bits()],
        ),
        Op::LayerNorm { eps, .. } => (
            [
                Shader::Layernorm,
                Shader::LayernormVec4,
                Shader::LayernormReg,
            ],
            4,
            vec![rows as u32, cols as u32, eps.to_bits()],
        ),
        _ => (
            [Shader::Softmax, Shader::SoftmaxVec4, Shader::SoftmaxReg],
            2,
            vec![rows as u32, cols as u32],
        ),
    };
    let d = Dispatch {
        push,
        groups: [(rows as u32).min(MAX_GROUPS), 1, 1],
        ranges: whole(nbuf),
    };
    let npt = (cols as u32).div_ceil(4).div_ceil(wg);
    let reg_fits = vec4 && npt <= NORM_MAX_NPT;
    let reg = switch(t, Knob::Reg, reg_fits, |v| {
        format!(
            "reg={v}: needs vec4 and cols <= {} for wg={wg}, and a value of 0 or 1",
            4 * NORM_MAX_NPT * wg
        )
    })?;
    let name = if reg {
        shader[2]
    } else {
        shader[vec4 as usize]
    };
    let mut p = simple(name, wg, vec![d]);
    if reg {
        p.spec.push(npt);
    }
    p.tuning = p
        .tuning
        .with(Knob::Vec4, vec4 as u32)
        .with(Knob::Reg, reg as u32);
    Ok(p)
}
