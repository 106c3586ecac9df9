//! A fixed sequence of ops over shared device buffers, recorded once and
//! replayed: what a transformer layer is to the device. The
//! Vulkan backend records every step into one command buffer; HIP and CUDA
//! capture the launches into a device graph. Either way the host issues one
//! submission per replay, not one launch per kernel.

pub use greta_kernels::graph::{Graph, Slot, Step};

use crate::job::{RunOpts, TimingSource};
use crate::tuning::Tuning;
use greta_kernels::HostBuf;
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
    /// The tuning each step runs with, as a run's [`RunOpts::tuning`]:
    /// exactly that where given (a diagnostic variant too: the decode
    /// layer's `--inject prologue`); empty, or `None` for a step, what a
    /// run of its op without one gets (the tuning cache's entry for its
    /// class, else the built-in plan).
    pub tunings: &'a [Option<Tuning>],
}

impl GraphJob<'_> {
    /// What step `i` asks for (`None`: its default plan).
    pub fn tuning(&self, i: usize) -> Option<&Tuning> {
        self.tunings.get(i).and_then(Option::as_ref)
    }
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

impl GraphJob<'_> {
    /// What the graph is, as the warm-up's memory names it: its ops in order.
    pub(crate) fn key(&self) -> String {
        let ops: Vec<String> = self.graph.steps.iter().map(|s| s.op.to_string()).collect();
        format!("graph:{}", ops.join(";"))
    }
}

impl GraphStats {
    /// Median device time per replay.
    pub fn median_ns(&self) -> u64 {
        median(&self.device_ns)
    }
}

/// Passes timed step by step, for each step's median time. The replays
/// that give the layer's time are timed apart from them, with nothing
/// between their steps: a timestamp or event between two steps costs
/// the device time of its own (on Vulkan a bottom-of-pipe timestamp
/// waits for all earlier work), which the layer's time must not hold.
pub(crate) const STEP_PASSES: u32 = 5;

pub(crate) fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests;
