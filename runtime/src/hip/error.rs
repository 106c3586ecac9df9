//! HIP failures as values a user can act on.
//!
//! A raw `hipError_t` number tells a user nothing; every error here names the
//! call that failed, HIP's own name and text for the code, and — for the
//! codes people actually hit (no device, no binary for this GPU, bad device)
//! — what usually causes it.

use super::compile::CompileError;
use hip_sys::hiprt::hipError_t;
use std::ffi::CStr;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum HipError {
    /// The HIP runtime loaded but found no usable GPU; `why` says what the
    /// machine looks like (KFD node, device files, visibility variables).
    #[error("no HIP device found: {detail}; {why}")]
    NoDevice { detail: String, why: String },
    /// A HIP API call failed.
    #[error("{call} failed: {name} ({code}): {text}{hint}")]
    Call {
        call: &'static str,
        code: i32,
        name: String,
        text: String,
        hint: String,
    },
    /// Work submitted to the GPU did not finish before the deadline.
    #[error("{what} did not finish within {:.3} s (the GPU may be hung or the kernel far too slow)", limit.as_secs_f64())]
    Timeout { what: String, limit: Duration },
    /// The device reported something greta cannot work with.
    #[error("{0}")]
    Device(String),
    /// Building the kernels' code object failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A buffer or argument does not match what the kernel needs.
    #[error("{0}")]
    Invalid(String),
}

impl HipError {
    /// True when the failure means "this machine has no HIP GPU", which
    /// callers report as undecided (exit 2) rather than a failed check.
    pub fn is_no_device(&self) -> bool {
        matches!(self, HipError::NoDevice { .. })
            || matches!(self, HipError::Call { code, .. } if *code == hipError_t::hipErrorNoDevice as i32)
    }
}

/// HIP's own name for an error code (e.g. `hipErrorNoBinaryForGpu`).
pub fn error_name(e: hipError_t) -> String {
    // SAFETY: hipGetErrorName returns a pointer to a static NUL-terminated string.
    unsafe { cstr_or(hip_sys::hiprt::hipGetErrorName(e), "hipErrorUnknown") }
}

/// HIP's own description of an error code.
pub fn error_text(e: hipError_t) -> String {
    // SAFETY: as above, a static string owned by the runtime.
    unsafe { cstr_or(hip_sys::hiprt::hipGetErrorString(e), "unknown error") }
}

unsafe fn cstr_or(p: *const libc::c_char, fallback: &str) -> String {
    if p.is_null() {
        fallback.to_string()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// What usually causes the codes users hit, appended to the message.
pub fn hint(e: hipError_t) -> &'static str {
    use hipError_t::*;
    match e {
        hipErrorNoDevice => " (no GPU visible to HIP: check /dev/kfd, the render/video groups and HIP_VISIBLE_DEVICES)",
        hipErrorInvalidDevice => " (the device index does not exist or HSA could not initialise it)",
        hipErrorNoBinaryForGpu => {
            " (the code object has no kernels for this GPU's gfx target: rebuild them for it, and check HSA_OVERRIDE_GFX_VERSION)"
        }
        hipErrorInvalidImage | hipErrorInvalidKernelFile | hipErrorSharedObjectInitFailed => {
            " (the code object is corrupt or built for another target: delete greta's HIP kernel cache to rebuild it)"
        }
        hipErrorOutOfMemory => " (the GPU is out of memory)",
        hipErrorNotFound => " (the kernel is missing from the code object)",
        hipErrorLaunchFailure | hipErrorIllegalAddress => {
            " (the kernel faulted on the GPU; the device may need a reset before further use)"
        }
        hipErrorInsufficientDriver => " (the amdgpu kernel driver is older than this ROCm needs)",
        _ => "",
    }
}

/// Turns a `hipError_t` into `Ok(())` or a [`HipError::Call`] naming `call`.
pub fn check(call: &'static str, e: hipError_t) -> Result<(), HipError> {
    if e == hipError_t::hipSuccess {
        return Ok(());
    }
    Err(HipError::Call {
        call,
        code: e as i32,
        name: error_name(e),
        text: error_text(e),
        hint: hint(e).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hints_come_from_the_runtime() {
        let err = check("hipModuleLoadData", hipError_t::hipErrorNoBinaryForGpu).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("hipModuleLoadData failed: hipErrorNoBinaryForGpu (209)"),
            "{msg}"
        );
        assert!(msg.contains("gfx target"), "{msg}");
        assert!(check("hipFree", hipError_t::hipSuccess).is_ok());
        let nodev = check("hipGetDeviceCount", hipError_t::hipErrorNoDevice).unwrap_err();
        assert!(nodev.is_no_device());
        assert!(!err.is_no_device());
    }
}
