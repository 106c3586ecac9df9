//! What the HIP backend and its CUDA twin share: everything above the FFI.
//!
//! [`driver::Driver`] is the small driver API both vendors offer (device
//! facts, memory, async copies, streams, events, modules, launch);
//! [`backend::GpuBackend`] implements greta's [`crate::Backend`] once over
//! it; [`compile`] builds the kernels on the node with the vendor's run-time
//! compiler ([`rtc`]) and caches them; [`child`] runs compiles and device
//! work in a bounded child process of the same executable; [`search`] finds
//! vendor libraries and says which one was taken and why; [`tune`] holds the
//! kernels' tuning knobs and candidates.

pub(crate) mod backend;
pub(crate) mod calls;
pub mod child;
pub(crate) mod compile;
pub(crate) mod devices;
pub(crate) mod driver;
pub(crate) mod execute;
mod graph;
mod host_copy;
mod launch;
pub(crate) mod rtc;
pub(crate) mod search;
pub mod tune;
pub(crate) mod vendor;

pub use backend::GpuBackend;
pub use compile::{
    compile_with_log, serve_compile, CachedObject, CompilerKind, KernelCache, KernelSources,
};
pub use driver::{Api, Arch, CompilerChoice, Driver, GpuDevice, GpuError, Loaded};
pub use search::Candidate;
