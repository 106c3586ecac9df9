//! GRETA's device runtime: runs the ops of `greta-kernels` on a device,
//! checks nothing itself (that is `greta-smoke`'s job) but moves the data,
//! times each dispatch and never hangs: every wait has a timeout.
//!
//! The entry points are backend-agnostic: [`Backend`] is what the smoke
//! gates drive, [`list_devices`] / [`open`] pick a device. Vulkan (ash +
//! gpu-allocator, libvulkan loaded at run time) is the built-in backend;
//! HIP plugs in behind the cargo feature `hip` as a second [`BackendKind`].

mod backend;
mod error;
#[cfg(feature = "hip")]
pub mod hip;
mod info;
pub mod tuning_cache;
pub mod vulkan;

pub use backend::{Backend, RunOpts, RunStats, TimingSource, Tuning};
pub use error::RuntimeError;
pub use greta_kernels as kernels;
pub use greta_kernels::{DType, HostBuf, Op};
pub use info::{BackendKind, CoopMatShape, DeviceInfo, DeviceSelect, DeviceType, MemoryHeap};

/// Devices of `kind`, as greta numbers them (duplicates of one GPU behind
/// two drivers listed once; see [`DeviceInfo::also_exposed_by`]).
pub fn list_devices(kind: BackendKind) -> Result<Vec<DeviceInfo>, RuntimeError> {
    match kind {
        BackendKind::Vulkan => vulkan::list_devices(),
        #[cfg(feature = "hip")]
        BackendKind::Hip => hip::list_devices(),
        #[cfg(not(feature = "hip"))]
        BackendKind::Hip => Err(RuntimeError::Unsupported(
            "the HIP backend is not built into this greta (cargo feature `hip`)".into(),
        )),
    }
}

/// Opens a device of `kind` chosen by `select` as a boxed [`Backend`].
pub fn open(kind: BackendKind, select: &DeviceSelect) -> Result<Box<dyn Backend>, RuntimeError> {
    match kind {
        BackendKind::Vulkan => Ok(Box::new(vulkan::Device::open(select)?)),
        #[cfg(feature = "hip")]
        BackendKind::Hip => hip::open(select),
        #[cfg(not(feature = "hip"))]
        BackendKind::Hip => Err(RuntimeError::Unsupported(
            "the HIP backend is not built into this greta (cargo feature `hip`)".into(),
        )),
    }
}
