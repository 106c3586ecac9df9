//! Why a device listing (`greta __gpu devices`) found nothing: written by
//! the listing child, read by the doctor's HIP check (and from snapshots).
use serde::{Deserialize, Serialize};

/// The kind of a failed device listing, as the `error_kind` of
/// `greta.gpu-devices/v1`. Decisions follow this, never the message's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DevicesError {
    /// The library loaded and found no usable device.
    NoDevice,
    /// The API library (libamdhip64, libcuda) could not be loaded.
    LoaderMissing,
    /// Anything else (a failing driver call, ...).
    Other,
}
