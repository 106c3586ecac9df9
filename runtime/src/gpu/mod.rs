//! What the HIP backend and its CUDA twin share: everything above the FFI.
//!
//! [`driver::Driver`] is the small driver API both vendors offer (device
//! facts, memory, async copies, streams, events, modules, launch);
//! [`backend::GpuBackend`] implements greta's [`crate::backend::Backend`]
//! once over it; [`compile`] builds the kernels on the node with the
//! vendor's run-time compiler, which each driver hands over as a
//! [`compiler::Compiler`] ([`rtc`] is hiprtc's and NVRTC's shared code),
//! caches them, and compiles in a bounded child process of the same
//! executable ([`greta_vocab::child::Helper`]); [`tune`] holds the kernels'
//! tuning knobs and candidates, [`hopper`] the plans of the sm_90a GEMMs.
//! The vendor libraries themselves are found and opened by
//! [`crate::locate`].

pub(crate) mod arch;
pub(crate) mod backend;
pub(crate) mod calls;
pub(crate) mod compile;
pub(crate) mod compiler;
pub(crate) mod devices;
pub(crate) mod driver;
pub(crate) mod execute;
mod graph;
pub(crate) mod hopper;
mod host_copy;
mod launch;
pub(crate) mod rtc;
mod staging;
pub mod tune;
pub(crate) mod vendor;

pub use backend::GpuBackend;
pub use compiler::{Compiler, CompilerChoice, CompilerKind};
pub use driver::Driver;
