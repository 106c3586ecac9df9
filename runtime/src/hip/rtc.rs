//! hiprtc: HIP's run-time compiler, through the shared [`crate::gpu::rtc`].

use crate::gpu::compiler::{CompileError, Compiler, CompilerChoice};

/// hiprtc, set for one target.
pub(crate) struct Hiprtc(pub(crate) CompilerChoice);

impl Compiler for Hiprtc {
    fn choice(&self) -> &CompilerChoice {
        &self.0
    }

    /// An AMD code object for the choice's target, with the compiler's log
    /// (warnings, remarks).
    fn compile(&self, unit: &str) -> Result<(Vec<u8>, String), CompileError> {
        crate::gpu::rtc::compile_logged(&crate::gpu::rtc::HIPRTC, &self.0, unit)
    }
}
