//! The interface every backend implements and the smoke gates drive.

use crate::ceiling::{Ceiling, CeilingError};
use crate::graph::{GraphJob, GraphStats};
use crate::stress::{StressReport, StressRequest};
use crate::{DeviceInfo, HostBuf, Op, RuntimeError, Tuning};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How one `run` is executed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOpts {
    /// Dispatches recorded back to back in one command buffer (a barrier
    /// between them), each timed. At least 1.
    pub repeats: u32,
    /// Limit for the whole submission (upload, every repeat, readback).
    pub timeout: Duration,
    /// Overrides of the kernel's default tuning.
    pub tuning: Option<Tuning>,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            repeats: 1,
            timeout: Duration::from_secs(10),
            tuning: None,
        }
    }
}

/// Where the per-dispatch times come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimingSource {
    /// Device timestamps around each dispatch.
    DeviceTimestamps,
    /// No usable timestamps: the submission's wall time divided evenly.
    WallClock,
}

/// Measurements of one `run`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    /// Kernel time of each repeat, in nanoseconds (all chunks of a split
    /// dispatch included); for ops timed per dispatch (noop: a batch of
    /// dependent dispatches per repeat) the batch time over its dispatches.
    pub device_ns: Vec<u64>,
    pub timing: TimingSource,
    /// Wall time of the submission and wait (upload and readback included).
    pub wall: Duration,
    /// The kernel variant that ran, e.g. `gemm_f16_coopmat` or `gemm_f32`.
    pub kernel: String,
    /// The tuning the kernel ran with (defaults filled in).
    pub tuning: Tuning,
    /// Dispatches per repeat (more than 1 when a buffer exceeds the device's range limit).
    pub dispatches_per_repeat: u32,
    /// For a composite op (a graph of ops), the median time of each step in
    /// nanoseconds, in graph order (`kernel` names them); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_ns: Vec<u64>,
}

impl RunStats {
    /// Median device time per repeat.
    pub fn median_ns(&self) -> u64 {
        let mut v = self.device_ns.clone();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    }
    pub fn min_ns(&self) -> u64 {
        self.device_ns.iter().copied().min().unwrap_or(0)
    }
}

/// One request to a backend: the op, its inputs, the outputs to fill and
/// how to run it. The four travel together through every layer of a
/// backend (checks, planning, recording, readback).
pub struct Job<'a> {
    pub op: &'a Op,
    pub inputs: &'a [HostBuf],
    /// Uploaded as given and read back after the run: callers poison them
    /// (e.g. with [`HostBuf::poisoned`]) so unwritten elements fail checks;
    /// read-write outputs carry their prior content.
    pub outputs: &'a mut [HostBuf],
    pub opts: &'a RunOpts,
}

impl<'a> Job<'a> {
    pub fn new(
        op: &'a Op,
        inputs: &'a [HostBuf],
        outputs: &'a mut [HostBuf],
        opts: &'a RunOpts,
    ) -> Self {
        Job {
            op,
            inputs,
            outputs,
            opts,
        }
    }
}

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

    /// Tunings worth trying for `op` on this device, the default first.
    fn tuning_candidates(&self, op: &Op) -> Vec<Tuning> {
        let _ = op;
        vec![Tuning::default()]
    }

    /// The vendor's rate for `op`'s work on this device, measured now (the
    /// in-run ceiling of a perf report): `None` where this backend has no
    /// such reference for the op (noop, test-only ops, the Vulkan backend);
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
