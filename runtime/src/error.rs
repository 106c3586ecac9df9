//! Every way a device operation can fail, with what and where.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The API library itself (libvulkan.so.1, libamdhip64) could not be loaded.
    #[error("{0}")]
    LoaderMissing(String),
    /// No usable device (no driver, no device, or the selection matched nothing).
    #[error("{0}")]
    NoDevice(String),
    /// A submission did not complete in time. The device is then considered
    /// lost: every later call on it returns [`RuntimeError::DeviceLost`].
    #[error(
        "{what} did not complete within {timeout:?} (waited {waited:?}); the GPU may be hung or the kernel far too slow. \
         The device is considered lost for the rest of this run"
    )]
    Timeout {
        what: String,
        timeout: Duration,
        waited: Duration,
    },
    /// The device was lost earlier (timeout, driver reset); it is not used again.
    #[error("device lost: {0}")]
    DeviceLost(String),
    /// The device cannot run this op (missing feature, limit, shader).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The caller's op or buffers do not match the op's contract.
    #[error("bad input: {0}")]
    BadInput(String),
    #[error("out of device memory: {0}")]
    OutOfMemory(String),
    /// An API call failed: which call, and the driver's result code.
    #[error("{call} failed: {detail}")]
    Api { call: String, detail: String },
}

impl RuntimeError {
    pub(crate) fn api(call: &str, detail: impl std::fmt::Display) -> Self {
        RuntimeError::Api {
            call: call.to_string(),
            detail: detail.to_string(),
        }
    }

    /// True when the device must not be used again.
    pub fn is_fatal_for_device(&self) -> bool {
        matches!(
            self,
            RuntimeError::Timeout { .. } | RuntimeError::DeviceLost(_)
        )
    }
}
