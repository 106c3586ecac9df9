//! hiprtc: HIP's run-time compiler, through the shared [`crate::gpu::rtc`].

use crate::gpu::compile::CompileError;
use crate::gpu::driver::CompilerChoice;

/// Compiles `unit` into an AMD code object for `choice.target`.
pub fn compile(choice: &CompilerChoice, unit: &str) -> Result<Vec<u8>, CompileError> {
    crate::gpu::rtc::compile(&crate::gpu::rtc::HIPRTC, choice, unit)
}
