//! hiprtc: HIP's run-time compiler, through the shared [`crate::gpu::rtc`].

use crate::gpu::compile::CompileError;
use crate::gpu::driver::CompilerChoice;

/// Compiles `unit` into an AMD code object for `choice.target`; with the
/// compiler's log (warnings, remarks).
pub fn compile(choice: &CompilerChoice, unit: &str) -> Result<(Vec<u8>, String), CompileError> {
    crate::gpu::rtc::compile_logged(&crate::gpu::rtc::HIPRTC, choice, unit)
}
