//! One submission's data: the op and its buffers ([`Job`]), how to run
//! it ([`RunOpts`]) and what it measured ([`RunStats`]). Below both the
//! [`crate::backend::Backend`] trait and the graph types, which speak of them.

use crate::tuning::Tuning;
use greta_kernels::{HostBuf, Op};
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
