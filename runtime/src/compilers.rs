//! Every driver's run-time compilers, by kind: a compile child is handed
//! only a [`CompilerChoice`] (text crosses the process boundary, not an
//! object), and this is where it becomes the compiler that builds.

use crate::gpu::{Compiler, CompilerChoice, CompilerKind};
use std::io::{Read, Write};

/// The compiler `choice` names, set as it says.
pub(crate) fn of(choice: CompilerChoice) -> Box<dyn Compiler> {
    match choice.kind {
        CompilerKind::Hiprtc => Box::new(crate::hip::rtc::Hiprtc(choice)),
        CompilerKind::Hipcc => Box::new(crate::hip::hipcc::Hipcc(choice)),
        CompilerKind::Nvrtc => Box::new(crate::cuda::nvrtc::Nvrtc(choice)),
    }
}

/// The compile child's side (`greta __gpu compile`): reads a compile
/// request from `input`, compiles in this process, writes the answer to
/// `output`; 0 on success.
pub fn serve_compile(input: impl Read, output: &mut dyn Write) -> u8 {
    crate::gpu::compile::serve_compile(input, output, &of)
}
