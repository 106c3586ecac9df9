//! The run-time compilers as the shared layer sees them: one [`Compiler`]
//! trait that each driver returns for a device (hiprtc and hipcc for HIP,
//! NVRTC for CUDA), what a compiler is and how it was chosen
//! ([`CompilerChoice`], the kernel cache key and what a compile child is
//! handed), and how a compile fails ([`CompileError`]).

use super::arch::Arch;
use crate::locate::Loaded;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long one compile may take before greta gives up on it.
pub const COMPILE_LIMIT: Duration = Duration::from_secs(600);

/// Which compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompilerKind {
    Hiprtc,
    Nvrtc,
    Hipcc,
}

impl CompilerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CompilerKind::Hiprtc => "hiprtc",
            CompilerKind::Nvrtc => "NVRTC",
            CompilerKind::Hipcc => "hipcc",
        }
    }
}

/// A run-time compiler, set for one target: what a driver hands the shared
/// layer to build greta's kernels with. The kernel cache and the compile
/// child talk to this and to no vendor's compiler by name.
pub trait Compiler: Send + Sync {
    /// Which compiler, found where, at which version, with which options:
    /// the kernel cache key, and all a compile child is handed.
    fn choice(&self) -> &CompilerChoice;
    /// Compiles `unit` in this process: the code (an AMD code object, a
    /// CUBIN) and the compiler's log of the successful compile (warnings,
    /// remarks; empty where the compiler gives none).
    fn compile(&self, unit: &str) -> Result<(Vec<u8>, String), CompileError>;
}

/// The compiler a backend uses for a device, and how to call it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompilerChoice {
    pub kind: CompilerKind,
    /// The compiler library (or hipcc executable) and why it was chosen.
    pub library: Loaded,
    /// Its version as it reports it: part of the cache key.
    pub version: String,
    /// The target, e.g. `gfx90a` or `sm_90`: part of the cache key (as
    /// its text, so typed targets found the entries text ones wrote).
    pub target: Arch,
    /// Options passed to the compiler (the target included): part of the key.
    pub options: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// No compiler: every place looked.
    #[error("{0}")]
    Unavailable(String),
    #[error("{compiler} cannot compile for {target}: {detail}")]
    UnsupportedTarget {
        target: String,
        compiler: String,
        detail: String,
    },
    #[error("{compiler} could not compile greta's kernels for {target}:\n{log}")]
    Failed {
        target: String,
        compiler: String,
        log: String,
    },
    /// The compiler took its (child) process down.
    #[error(
        "{compiler} crashed while compiling greta's kernels for {target} ({how}){stderr}; it ran in a child process, \
         so greta itself is fine. A run-time compiler that crashes on one target most often does not know it (ROCm 5.2's \
         hiprtc aborts this way on gfx942): use a ROCm release that supports {target}"
    )]
    Crashed {
        target: String,
        compiler: String,
        how: String,
        stderr: String,
    },
    #[error("{compiler} ran longer than {} s compiling for {target}; killed", COMPILE_LIMIT.as_secs())]
    TimedOut { target: String, compiler: String },
    /// The helper child could not be run or answered nonsense.
    #[error("compiling in a child process: {0}")]
    Child(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CompileError {
    let what = what.into();
    move |source| CompileError::Io { what, source }
}

/// `hiprtc 9.0 (/usr/lib/x86_64-linux-gnu/libamdhip64.so.5)`.
pub fn compiler_label(choice: &CompilerChoice) -> String {
    format!(
        "{} {} ({})",
        choice.kind.as_str(),
        choice.version,
        choice.library.path.display()
    )
}
