//! A fixed sequence of ops over shared device buffers, recorded once and
//! replayed: what a transformer layer is to the device (issue 23). The
//! Vulkan backend records every step into one command buffer; HIP and CUDA
//! capture the launches into a device graph. Either way the host issues one
//! submission per replay, not one launch per kernel.

use crate::{DType, HostBuf, Op, RunOpts, RuntimeError, TimingSource};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One device buffer of a graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slot {
    /// What it holds (errors and reports name it).
    pub name: String,
    pub dtype: DType,
    pub len: usize,
}

/// One op of a graph: `bind[i]` is the slot bound to the op's buffer `i`
/// (its inputs, then its outputs, in the op's binding order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub op: Op,
    pub bind: Vec<usize>,
}

/// The buffers and the ops, in the order they run (each step sees every
/// earlier step's writes).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Graph {
    pub slots: Vec<Slot>,
    pub steps: Vec<Step>,
}

impl Graph {
    /// Adds a slot and returns its index.
    pub fn slot(&mut self, name: &str, dtype: DType, len: usize) -> usize {
        self.slots.push(Slot {
            name: name.to_string(),
            dtype,
            len,
        });
        self.slots.len() - 1
    }

    /// Appends a step.
    pub fn step(&mut self, op: Op, bind: &[usize]) {
        self.steps.push(Step {
            op,
            bind: bind.to_vec(),
        });
    }

    /// Checks every step against its op's buffer contract: shape rules, one
    /// slot per buffer, each slot of the buffer's type and length, and no
    /// slot bound twice in one step (a kernel that reads what it writes
    /// elsewhere races; a read-write output is one binding).
    pub fn validate(&self) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("a graph needs at least one step".into());
        }
        for (i, st) in self.steps.iter().enumerate() {
            let at = |m: String| format!("step {i} ({}): {m}", st.op);
            st.op.validate().map_err(|e| at(e.to_string()))?;
            let specs: Vec<_> = st.op.inputs().into_iter().chain(st.op.outputs()).collect();
            if specs.len() != st.bind.len() {
                return Err(at(format!(
                    "binds {} slots, the op has {} buffers",
                    st.bind.len(),
                    specs.len()
                )));
            }
            for (k, (spec, &s)) in specs.iter().zip(&st.bind).enumerate() {
                let slot = self.slots.get(s).ok_or_else(|| {
                    at(format!(
                        "buffer {} names slot {s}, which does not exist",
                        spec.name
                    ))
                })?;
                if slot.dtype != spec.dtype || slot.len != spec.len {
                    return Err(at(format!(
                        "buffer {} must be {} x {}, slot {} is {} x {}",
                        spec.name, spec.len, spec.dtype, slot.name, slot.len, slot.dtype
                    )));
                }
                if st.bind[..k].contains(&s) {
                    return Err(at(format!("slot {} is bound twice", slot.name)));
                }
            }
        }
        Ok(())
    }

    /// Bytes of every slot (what the device must hold).
    pub fn bytes(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| (s.len as u64).saturating_mul(s.dtype.size() as u64))
            .fold(0, u64::saturating_add)
    }
}

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
    if let Some(why) = dev.lost() {
        return Err(RuntimeError::DeviceLost(why.to_string()));
    }
    if job.opts.repeats == 0 {
        return Err(RuntimeError::BadInput("repeats must be at least 1".into()));
    }
    if job.opts.timeout.is_zero() {
        return Err(RuntimeError::BadInput("timeout must be more than 0".into()));
    }
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

#[cfg(test)]
mod tests;
