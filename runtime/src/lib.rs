//! GRETA's device runtime: runs the ops of `greta-kernels` on a device,
//! checks nothing itself (that is `greta-smoke`'s job) but moves the data,
//! times each dispatch and never hangs: every wait has a timeout.
//!
//! The entry points are backend-agnostic: [`Backend`] is what the smoke
//! gates drive, [`list_devices`] / [`open`] pick a device. Vulkan (ash +
//! gpu-allocator, libvulkan loaded at run time), HIP (libamdhip64 and
//! hiprtc loaded at run time) and its CUDA twin (the CUDA driver API and
//! NVRTC loaded at run time) are always built in: nothing of ROCm or CUDA is
//! needed to build or start greta. HIP and CUDA share everything above the
//! FFI ([`gpu`]).

mod backend;
pub mod build_kernels;
pub mod ceiling;
pub mod cuda;
mod error;
pub mod gpu;
mod graph;
pub mod hip;
mod host_copy;
mod info;
mod job;
mod library;
pub mod stress;
pub mod telemetry;
mod tuning;
pub mod tuning_cache;
pub mod vulkan;

pub use backend::Backend;
pub use ceiling::{Ceiling, CeilingError, CeilingUnit};
pub use error::RuntimeError;
pub use graph::{Graph, GraphJob, GraphStats, Replay, Slot, Step};
pub use greta_kernels as kernels;
pub use greta_kernels::{DType, HostBuf, Op};
pub use host_copy::{HostCopyData, HostCopyJob, HostCopyStats};
pub use info::{BackendKind, CoopMatShape, DeviceInfo, DeviceSelect, DeviceType, MemoryHeap};
pub use job::{Job, RunOpts, RunStats, TimingSource};
pub use library::{runtime_library, RuntimeLibrary};
pub use tuning::{Knob, Tuning, UnknownKnob};

/// Devices of `kind`, as greta numbers them (duplicates of one GPU behind
/// two drivers listed once; see [`DeviceInfo::also_exposed_by`]).
pub fn list_devices(kind: BackendKind) -> Result<Vec<DeviceInfo>, RuntimeError> {
    match kind {
        BackendKind::Vulkan => vulkan::list_devices(),
        BackendKind::Hip => Ok(gpu::devices::list(&hip::Hip::open()?)?),
        BackendKind::Cuda => Ok(gpu::devices::list(&cuda::Cuda::open()?)?),
    }
}

/// Opens a device of `kind` chosen by `select` as a boxed [`Backend`].
pub fn open(kind: BackendKind, select: &DeviceSelect) -> Result<Box<dyn Backend>, RuntimeError> {
    match kind {
        BackendKind::Vulkan => Ok(Box::new(vulkan::Device::open(select)?)),
        // Their kernels compiled (or taken from the cache) for the device's target.
        BackendKind::Hip => hip::HipBackend::open_boxed(hip::Hip::open()?, select),
        BackendKind::Cuda => cuda::CudaBackend::open_boxed(cuda::Cuda::open()?, select),
    }
}
