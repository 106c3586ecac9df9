//! Copies between pinned host memory and the device, both ways, timed on
//! the device: what the PCIe link (or a CPU device's memcpy) carries.
//!
//! The runtime moves and times the bytes; the caller writes them and
//! judges what came back ([`HostCopyData`]), as for every other job: the
//! data is written straight into the pinned memory the copies read, and
//! read from the pinned memory the copies wrote, so no unpinned staging
//! copy stands between the link and the check.

use crate::TimingSource;
use std::time::Duration;

/// What the copies carry and how their result is judged, one round at a
/// time.
pub trait HostCopyData {
    /// Before round `round`: write the bytes to send into `up` (the pinned
    /// source of the host-to-device copy) and poison `down` (the pinned
    /// destination of the copy back), so a copy that did not happen shows.
    fn fill(&mut self, round: u32, up: &mut [u8], down: &mut [u8]);
    /// After round `round`: `sent` went to the device, `back` came from it.
    fn check(&mut self, round: u32, sent: &[u8], back: &[u8]);
}

/// One host-copy run: `rounds` times, `bytes` from pinned host memory to
/// the device and the same bytes back into other pinned host memory.
pub struct HostCopyJob<'a> {
    pub bytes: usize,
    /// At least 1.
    pub rounds: u32,
    /// Limit for each round's two copies.
    pub timeout: Duration,
    pub data: &'a mut dyn HostCopyData,
}

/// What a host-copy run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCopyStats {
    /// Device time of each round's host-to-device copy, ns.
    pub up_ns: Vec<u64>,
    /// ... and of its device-to-host copy.
    pub down_ns: Vec<u64>,
    pub timing: TimingSource,
    /// How the host memory was pinned and the copies made:
    /// `cuMemHostAlloc + cuMemcpyHtoDAsync/DtoHAsync`,
    /// `vkCmdCopyBuffer, host memory HOST_VISIBLE|HOST_COHERENT|HOST_CACHED`.
    pub how: String,
}

/// The checks every backend makes before a host-copy run touches the device.
pub(crate) fn preflight(job: &HostCopyJob) -> Result<(), crate::RuntimeError> {
    if job.rounds == 0 {
        return Err(crate::RuntimeError::BadInput(
            "a host copy needs at least 1 round".into(),
        ));
    }
    if job.bytes == 0 {
        return Err(crate::RuntimeError::BadInput(
            "a host copy of 0 bytes measures nothing".into(),
        ));
    }
    if job.timeout.is_zero() {
        return Err(crate::RuntimeError::BadInput(
            "timeout must be more than 0".into(),
        ));
    }
    Ok(())
}
