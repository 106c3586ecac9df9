//! A fixed sequence of ops over shared device buffers, recorded once and
//! replayed: what a transformer layer is to the device. The
//! Vulkan backend records every step into one command buffer; HIP and CUDA
//! capture the launches into a device graph. Either way the host issues one
//! submission per replay, not one launch per kernel.

pub use greta_kernels::graph::{Composite, Graph, Slot, Step};

use crate::{Backend, HostBuf, Job, Op, RunOpts, RunStats, RuntimeError, TimingSource, Tuning};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One request to replay a graph.
pub struct GraphJob<'a> {
    pub graph: &'a Graph,
    /// One buffer per slot, uploaded as given (callers poison the slots the
    /// graph writes); the slots in `read_back` are read back into them.
    pub buffers: &'a mut [HostBuf],
    pub read_back: &'a [usize],
    /// Replays timed (`repeats`) and the limit for the whole submission.
    pub opts: &'a RunOpts,
}

/// How the replays reached the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replay {
    /// Every step recorded once into a Vulkan command buffer.
    CommandBuffer,
    /// The launches captured once into a HIP or CUDA graph, launched per replay.
    DeviceGraph,
    /// Launched kernel by kernel (a runtime without graphs).
    Launches,
}

/// Measurements of one graph run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphStats {
    /// Device time of each timed replay, in nanoseconds.
    pub device_ns: Vec<u64>,
    /// Median device time of each step, in nanoseconds, from a pass timed
    /// step by step (their sum exceeds a replay's time by the gaps a graph
    /// avoids).
    pub step_ns: Vec<u64>,
    /// The kernel each step ran.
    pub kernels: Vec<String>,
    pub timing: TimingSource,
    pub replay: Replay,
    pub wall: Duration,
}

impl GraphStats {
    /// Median device time per replay.
    pub fn median_ns(&self) -> u64 {
        median(&self.device_ns)
    }
}

pub(crate) fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// The checks every backend makes before a graph touches the device, in one
/// order (as [`crate::backend::preflight`] for one op).
pub(crate) fn preflight(dev: &dyn crate::Backend, job: &GraphJob) -> Result<(), RuntimeError> {
    crate::backend::device_and_opts(dev, job.opts)?;
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

/// Runs a composite op's job through [`Backend::run_graph`]: its inputs
/// placed in their slots, every other slot poisoned, its outputs read back
/// from theirs. The stats name the graph's kernels in order.
pub(crate) fn run_composite(
    dev: &mut dyn Backend,
    job: Job<'_>,
    c: Composite,
) -> Result<RunStats, RuntimeError> {
    let n_in = job.inputs.len();
    let mut slots = c.slot_buffers(job.inputs).map_err(RuntimeError::BadInput)?;
    let read_back = c.output_slots(n_in);
    let stats = dev.run_graph(GraphJob {
        graph: &c.graph,
        buffers: &mut slots,
        read_back: &read_back,
        opts: job.opts,
    })?;
    c.take_outputs(n_in, &slots, job.outputs)
        .map_err(RuntimeError::BadInput)?;
    Ok(RunStats {
        device_ns: stats.device_ns,
        timing: stats.timing,
        wall: stats.wall,
        kernel: format!("graph:{}", stats.kernels.join("+")),
        tuning: Tuning::default(),
        dispatches_per_repeat: c.graph.steps.len() as u32,
        step_ns: stats.step_ns,
    })
}

#[cfg(test)]
mod tests;
