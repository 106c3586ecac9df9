//! The interface every backend implements and the smoke gates drive.

use crate::ceiling::{Ceiling, CeilingError};
use crate::error::RuntimeError;
use crate::graph::{GraphJob, GraphStats};
use crate::host_copy::{HostCopyJob, HostCopyStats};
use crate::info::DeviceInfo;
use crate::job::{Job, RunOpts, RunStats};
use crate::stress::{StressReport, StressRequest};
use crate::tuning::{Knob, Tuning};
use crate::tuning_cache::{KeySpace, TuningCache};
use greta_kernels::block::graph::Fusion;
use greta_kernels::{HostBuf, Op};
use std::time::Duration;

/// A device that can run [`Op`]s.
pub trait Backend {
    fn info(&self) -> &DeviceInfo;

    /// Whether the device can run `op` (features, limits); `Err` says why not.
    fn supports(&self, op: &Op) -> Result<(), String>;

    /// Runs the job's op: uploads its inputs and outputs as given,
    /// dispatches it `opts.repeats` times, waits with `opts.timeout`, and
    /// reads the outputs back into `job.outputs`. After a
    /// [`RuntimeError::Timeout`] the device is lost and every later call
    /// fails fast.
    fn run(&mut self, job: Job<'_>) -> Result<RunStats, RuntimeError>;

    /// Replays the job's graph of ops `opts.repeats` times (recorded once:
    /// one Vulkan command buffer, a HIP/CUDA graph), after uploading every
    /// slot as given, and reads the `read_back` slots back. The same
    /// checks and timeout rules as [`Backend::run`].
    fn run_graph(&mut self, job: GraphJob<'_>) -> Result<GraphStats, RuntimeError> {
        let _ = job;
        Err(RuntimeError::Unsupported(
            "this backend does not replay graphs of ops".into(),
        ))
    }

    /// Why the device is unusable, if it is (after a timeout or device loss).
    fn lost(&self) -> Option<&str>;

    /// Builds ahead, on the host's cores at once, what running `ops` with
    /// their default or cached tunings will need (Vulkan: their pipelines),
    /// so that the runs do not build it one by one; returns how many
    /// objects it built. Best effort: whatever fails here is built again by
    /// the run that needs it, which reports the error. Backends that build
    /// their kernels in one module have nothing to do.
    fn prepare(&mut self, ops: &[Op]) -> usize {
        let _ = ops;
        0
    }

    /// Tunings worth trying for `op` on this device, the default first.
    fn tuning_candidates(&self, op: &Op) -> Vec<Tuning> {
        let _ = op;
        vec![Tuning::default()]
    }

    /// The vendor's rate for `op`'s work on this device, measured now (the
    /// in-run ceiling of a perf report): `None` where this backend has no
    /// such reference for the op (noop, test-only ops; on Vulkan, which has
    /// only its own copy, every TFLOP/s op);
    /// `Some(Err)` says why it could not be measured (no vendor library:
    /// what was looked for). A timeout here loses the device as a run's does.
    fn ceiling(&mut self, op: &Op, timeout: Duration) -> Option<Result<Ceiling, CeilingError>> {
        let _ = (op, timeout);
        None
    }

    /// Runs the matrix-unit stress loop of `req` on the device (the vendor's
    /// GEMM, else greta's own `gemm_f16`): `None` where the backend has no
    /// such loop (the smoke runner then drives greta's `gemm_f16` through
    /// [`Backend::run`]).
    fn stress(&mut self, req: &StressRequest) -> Option<Result<StressReport, RuntimeError>> {
        let _ = req;
        None
    }

    /// Copies `job.bytes` from pinned host memory to the device and back
    /// into other pinned host memory, `job.rounds` times, each copy timed
    /// on the device: the host-to-device link both ways. `None` where the
    /// backend has no pinned host memory. A timeout loses the device as a
    /// run's does.
    fn host_copy(&mut self, job: HostCopyJob<'_>) -> Option<Result<HostCopyStats, RuntimeError>> {
        let _ = job;
        None
    }

    /// While `on`, the scratch of each run (a memtest's slice) stays
    /// allocated after the run, out of reuse, until [`Backend::release_kept`]:
    /// each run's scratch is then memory no earlier run of the series had,
    /// and the series covers that much of the device at once. `Err` where
    /// the backend cannot keep memory.
    fn keep_scratch(&mut self, on: bool) -> Result<(), RuntimeError> {
        let _ = on;
        Err(RuntimeError::Unsupported(
            "this backend cannot keep a run's scratch allocated".into(),
        ))
    }

    /// Frees what [`Backend::keep_scratch`] kept; the bytes freed.
    fn release_kept(&mut self) -> u64 {
        0
    }

    /// Validation-layer messages recorded so far (Vulkan with validation on);
    /// tests assert this is empty.
    fn validation_messages(&self) -> Vec<String> {
        Vec::new()
    }
}

/// What every backend checks before it touches the device, in one order, so
/// that a bad request reads the same whichever backend gets it: a lost
/// device, repeats and timeout (a zero timeout would time out at once and
/// lose the device), the op's own shape rules, the buffer contract, and
/// whether this device can run the op.
pub(crate) fn preflight(dev: &dyn Backend, job: &Job) -> Result<(), RuntimeError> {
    let (op, inputs, outputs, opts) = (job.op, job.inputs, &*job.outputs, job.opts);
    device_and_opts(dev, opts)?;
    op.validate()
        .map_err(|e| RuntimeError::BadInput(e.to_string()))?;
    check_buffers(op, inputs, outputs)?;
    dev.supports(op).map_err(RuntimeError::Unsupported)
}

/// The checks every submission starts with, one op or a graph: a lost
/// device, repeats and timeout (a zero timeout would time out at once and
/// lose the device).
pub(crate) fn device_and_opts(dev: &dyn Backend, opts: &RunOpts) -> Result<(), RuntimeError> {
    if let Some(why) = dev.lost() {
        return Err(RuntimeError::DeviceLost(why.to_string()));
    }
    if opts.repeats == 0 {
        return Err(RuntimeError::BadInput("repeats must be at least 1".into()));
    }
    if opts.timeout.is_zero() {
        return Err(RuntimeError::BadInput("timeout must be more than 0".into()));
    }
    Ok(())
}

/// Checks that the caller's buffers match `op`'s buffer contract (count,
/// element type, length).
fn check_buffers(op: &Op, inputs: &[HostBuf], outputs: &[HostBuf]) -> Result<(), RuntimeError> {
    for (kind, specs, bufs) in [
        ("input", op.inputs(), inputs),
        ("output", op.outputs(), outputs),
    ] {
        if specs.len() != bufs.len() {
            return Err(RuntimeError::BadInput(format!(
                "{op}: expected {} {kind} buffers, got {}",
                specs.len(),
                bufs.len()
            )));
        }
        for (s, b) in specs.iter().zip(bufs) {
            if s.dtype != b.dtype() || s.len != b.len() {
                return Err(RuntimeError::BadInput(format!(
                    "{op}: {kind} {} must be {} x {}, got {} x {}",
                    s.name,
                    s.len,
                    s.dtype,
                    b.len(),
                    b.dtype()
                )));
            }
        }
    }
    Ok(())
}

/// The checks every backend makes before a graph touches the device, in one
/// order (as [`preflight`] for one op).
pub(crate) fn graph_preflight(dev: &dyn Backend, job: &GraphJob) -> Result<(), RuntimeError> {
    device_and_opts(dev, job.opts)?;
    let g = job.graph;
    g.validate().map_err(RuntimeError::BadInput)?;
    if job.buffers.len() != g.slots.len() {
        return Err(RuntimeError::BadInput(format!(
            "the graph has {} slots, {} buffers were given",
            g.slots.len(),
            job.buffers.len()
        )));
    }
    for (s, b) in g.slots.iter().zip(job.buffers.iter()) {
        if s.dtype != b.dtype() || s.len != b.len() {
            return Err(RuntimeError::BadInput(format!(
                "slot {} must be {} x {}, its buffer is {} x {}",
                s.name,
                s.len,
                s.dtype,
                b.len(),
                b.dtype()
            )));
        }
    }
    if !job.tunings.is_empty() && job.tunings.len() != g.steps.len() {
        return Err(RuntimeError::BadInput(format!(
            "the graph has {} steps, {} step tunings were given",
            g.steps.len(),
            job.tunings.len()
        )));
    }
    if let Some(&r) = job.read_back.iter().find(|&&r| r >= g.slots.len()) {
        return Err(RuntimeError::BadInput(format!(
            "read-back slot {r} does not exist"
        )));
    }
    for st in &g.steps {
        dev.supports(&st.op).map_err(RuntimeError::Unsupported)?;
    }
    Ok(())
}

/// Whether a device can run a composite op: every step of its graph.
pub(crate) fn composite_supported(dev: &dyn Backend, op: &Op) -> Option<Result<(), String>> {
    let c = op.composite()?;
    Some(c.and_then(|c| {
        c.graph.steps.iter().try_for_each(|st| {
            dev.supports(&st.op)
                .map_err(|e| format!("step {}: {e}", st.op))
        })
    }))
}

/// The tunings of a composite op (what `--tune` times for it): for
/// `block_decode` the fused graph (`fuse=1`, the default) and the unfused
/// one (`fuse=0`); one default for the others.
pub(crate) fn composite_candidates(op: &Op) -> Vec<Tuning> {
    match op {
        Op::BlockDecode { .. } => vec![
            Tuning::of(&[(Knob::Fuse, 1)]),
            Tuning::of(&[(Knob::Fuse, 0)]),
        ],
        _ => vec![Tuning::default()],
    }
}

/// The graph a composite op's tuning asks for and that tuning as it runs
/// (defaults filled in): `block_decode` takes `fuse` (0 or 1, default 1)
/// and the diagnostic `probe` (1: the fused graph with a QKV step whose
/// norm prologue is wrong on purpose, what `--inject prologue` runs; never
/// a candidate, never cached); the other composite ops take none.
pub(crate) fn composite_plan(op: &Op, t: Option<&Tuning>) -> Result<(Fusion, Tuning), String> {
    let empty = Tuning::default();
    let t = t.unwrap_or(&empty);
    let fusable = matches!(op, Op::BlockDecode { .. });
    if let Some(k) =
        t.0.keys()
            .find(|&&k| !(fusable && matches!(k, Knob::Fuse | Knob::Probe)))
    {
        return Err(format!(
            "tuning key {k} does not apply to {op} (allowed: {})",
            if fusable { "fuse, probe" } else { "none" }
        ));
    }
    if !fusable {
        return Ok((Fusion::default(), Tuning::default()));
    }
    let fusion = match t.get(Knob::Fuse) {
        None | Some(1) => Fusion::Fused,
        Some(0) => Fusion::Separate,
        Some(v) => return Err(format!("fuse={v}: must be 0 or 1")),
    };
    let probe = match t.get(Knob::Probe) {
        None | Some(0) => false,
        Some(1) => true,
        Some(v) => return Err(format!("probe={v}: must be 0 or 1")),
    };
    if probe && fusion != Fusion::Fused {
        return Err(
            "probe=1 (a wrong fused prologue) needs the fused graph: fuse=0 has no prologue".into(),
        );
    }
    let fuse = u32::from(fusion == Fusion::Fused);
    let mut ran = Tuning::of(&[(Knob::Fuse, fuse)]);
    if probe {
        ran = ran.with(Knob::Probe, 1);
    }
    Ok((fusion, ran))
}

/// Each step's tuning in a composite op's graph as its tuning `t` asks:
/// with `probe=1`, the fused QKV step (`rms_gemv_rope_kv_f16`) runs its
/// diagnostic variant, whose norm prologue leaves one lane out; every
/// other step (and every step otherwise) its default plan.
fn step_tunings(graph: &crate::graph::Graph, t: &Tuning) -> Vec<Option<Tuning>> {
    let probe = t.get(Knob::Probe) == Some(1);
    graph
        .steps
        .iter()
        .map(|st| {
            (probe && matches!(st.op, Op::RmsGemvRopeKvF16 { .. }))
                .then(|| Tuning::of(&[(Knob::Probe, 1)]))
        })
        .collect()
}

/// The tuning a composite op runs with when the caller asks for none: its
/// entry in the device's tuning cache (`--tune`'s winner), if one plans.
pub(crate) fn cached_composite_tuning(
    cache: Option<&TuningCache>,
    space: KeySpace,
    op: &Op,
) -> Option<Tuning> {
    let e = cache?.get_vetted(
        space,
        op,
        &|t| composite_plan(op, Some(t)).ok().map(|(_, t)| t),
        &|| composite_candidates(op),
    )?;
    composite_plan(op, Some(&e.tuning)).ok().map(|(_, t)| t)
}

/// Runs a composite op's job through [`Backend::run_graph`]: the graph its
/// tuning asks for (the job's, else `cached`, else the default), its inputs
/// placed in their slots, every other slot poisoned, its outputs read back
/// from theirs. The stats name the graph's kernels in order and the tuning
/// it ran with.
pub(crate) fn run_composite(
    dev: &mut dyn Backend,
    job: Job<'_>,
    cached: Option<Tuning>,
) -> Result<RunStats, RuntimeError> {
    let asked = job.opts.tuning.as_ref().or(cached.as_ref());
    let (fusion, tuning) = composite_plan(job.op, asked).map_err(RuntimeError::BadInput)?;
    let c = match job.op.composite_as(fusion) {
        Some(c) => c.map_err(RuntimeError::BadInput)?,
        None => {
            return Err(RuntimeError::BadInput(format!(
                "{} is not a composite op",
                job.op
            )))
        }
    };
    let n_in = job.inputs.len();
    let mut slots = c.slot_buffers(job.inputs).map_err(RuntimeError::BadInput)?;
    let read_back = c.output_slots(n_in);
    let tunings = step_tunings(&c.graph, &tuning);
    let stats = dev.run_graph(GraphJob {
        graph: &c.graph,
        buffers: &mut slots,
        read_back: &read_back,
        opts: job.opts,
        tunings: &tunings,
    })?;
    c.take_outputs(n_in, &slots, job.outputs)
        .map_err(RuntimeError::BadInput)?;
    Ok(RunStats {
        device_ns: stats.device_ns,
        timing: stats.timing,
        wall: stats.wall,
        kernel: format!("graph:{}", stats.kernels.join("+")),
        tuning,
        dispatches_per_repeat: c.graph.steps.len() as u32,
        step_ns: stats.step_ns,
    })
}
