//! In-run ceilings: the vendor's own rate for the same work as a gate,
//! measured on the same device in the same run, so that a perf report
//! carries the number it should be read against.
//!
//! A ceiling is only ever a reference: greta's own kernels stay the
//! gates' subject, and a missing vendor library fails nothing (the gate
//! says what was looked for).

use greta_kernels::Op;
use serde::{Deserialize, Serialize};

/// Bytes the copy ceiling of `op` copies: half the op's footprint (a copy
/// reads and writes each byte, as the copy gate counts), for a memory-bound
/// op (GB/s) that moves data; `None` for the others (a TFLOP/s op, noop,
/// the test-only ops). The one rule both the HIP/CUDA ceiling (the driver's
/// device-to-device copy) and the Vulkan one (`vkCmdCopyBuffer`) follow, so
/// a decode ratio means the same on each.
pub(crate) fn copy_bytes(op: &Op) -> Option<u64> {
    if matches!(op, Op::Noop) || op.is_test_only() {
        return None;
    }
    (op.rate_unit() == greta_kernels::RateUnit::GBps && op.bytes_moved() > 0)
        .then(|| (op.bytes_moved() / 2).max(4))
}

/// What a ceiling's rate counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CeilingUnit {
    /// Bytes read plus bytes written per second (as the copy gate counts them).
    #[serde(rename = "GB/s")]
    GBps,
    #[serde(rename = "TFLOP/s")]
    TFlops,
}

impl CeilingUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            CeilingUnit::GBps => "GB/s",
            CeilingUnit::TFlops => "TFLOP/s",
        }
    }
}

/// The vendor's rate for one gate's work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// Median over the timed repeats.
    pub rate: f64,
    pub unit: CeilingUnit,
    /// The call that did the work: `cublasGemmEx`, `cublasSgemm`,
    /// `rocblas_gemm_ex`, `memcpy d2d` (cuMemcpyDtoDAsync / hipMemcpyDtoDAsync).
    pub source: String,
    /// The library file it came from (the driver's for a copy).
    pub library: String,
    /// The library's version as it reports it.
    pub version: String,
    /// Which rule of the library search took that file (e.g. `the env's
    /// NVIDIA wheels in /opt/torch/.venv`, `$CUDA_HOME`).
    pub found_by: String,
}

/// Why a gate has no ceiling.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CeilingError {
    /// No vendor library was found: what was wanted and every place looked.
    #[error("no {what} found for an in-run ceiling; looked in: {}", looked.join("; "))]
    NotFound { what: String, looked: Vec<String> },
    /// A library was found but cannot be used (a symbol missing, a call failed).
    #[error("{library}: {why}")]
    Unusable { library: String, why: String },
    /// The vendor's result did not match the CPU reference: its rate is
    /// not reported as a ceiling.
    #[error("{source_call} from {library} gave a wrong result: {why}")]
    Wrong {
        source_call: String,
        library: String,
        why: String,
    },
    /// The device failed while the ceiling was measured.
    #[error("{0}")]
    Device(String),
    /// The measurement did not finish in time: the device is lost.
    #[error("{0}")]
    Timeout(String),
}
