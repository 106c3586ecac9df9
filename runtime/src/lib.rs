//! GRETA's device runtime: runs the ops of `greta-kernels` on a device,
//! checks nothing itself (that is `greta-smoke`'s job) but moves the data,
//! times each dispatch and never hangs: every wait has a timeout.
//!
//! This file is the crate's whole door. The entry points are
//! backend-agnostic: [`Backend`] is what the smoke gates drive,
//! [`list_devices`] / [`open`] pick a device, a [`Graph`] is replayed on
//! it, [`TuningCache`] keeps the fastest correct tuning per device, and
//! [`find_library`] says where a vendor library would be loaded from
//! without loading it.
//! Vulkan (ash + gpu-allocator, libvulkan loaded at run time), HIP
//! (libamdhip64 and hiprtc loaded at run time) and its CUDA twin (the CUDA
//! driver API and NVRTC loaded at run time) are always built in and all
//! private: nothing of ROCm or CUDA is needed to build or start greta, and
//! no caller outside reaches a driver. HIP and CUDA share everything above
//! the FFI (the private `gpu` module). Telemetry (what a GPU says about
//! itself while it works) is private too: its readers and types are named
//! below.

mod backend;
mod build_kernels;
mod bulk;
mod ceiling;
mod compilers;
mod cuda;
mod error;
mod gpu;
mod graph;
mod hip;
mod host_copy;
mod info;
mod job;
mod library;
mod locate;
mod stress;
mod telemetry;
mod tuning;
mod tuning_cache;
mod vulkan;
mod warmth;

pub use backend::Backend;
pub use ceiling::{Ceiling, CeilingError, CeilingUnit};
pub use error::RuntimeError;
pub use graph::{Graph, GraphJob, GraphStats, Replay, Slot, Step};
pub use greta_kernels as kernels;
pub use greta_kernels::{DType, HostBuf, Op};
pub use host_copy::{HostCopyData, HostCopyJob, HostCopyStats};
pub use info::{BackendKind, CoopMatShape, DeviceInfo, DeviceSelect, DeviceType, MemoryHeap};
pub use job::{Job, RunOpts, RunStats, TimingSource};
pub use tuning::{Knob, Tuning, UnknownKnob};

/// The matrix-unit stress gate's request and report, and the inputs both
/// sides derive from a seed (the checker recomputes sampled tiles).
pub use stress::{
    input_f16, sample_tiles, Operand, StressEngine, StressInterval, StressReport, StressRequest,
    Tile, TileSample,
};

/// The tuning store: per device, the fastest correct tuning of each op
/// shape (`greta.tuning/v1`).
pub use tuning_cache::{shape_class, KeySpace, TunedEntry, TuningCache};

/// Which vendor runtime a backend would load (asked in the device child).
pub use library::{runtime_library, RuntimeLibrary};

/// Where libamdhip64, libcuda, libnvrtc and libvulkan would be loaded from,
/// found without loading anything (safe in greta's own process): every
/// place in the backend's order with the rule that put it there and what
/// is there now; and a library a backend did open, with why that one.
pub use locate::{
    find_library, Candidate as LibraryCandidate, Loaded, Rule as SearchRule, SearchEnv,
    State as CandidateState, VendorLibrary, Via as LoaderVia,
};

/// The compile child's side (`greta __gpu compile`).
pub use compilers::serve_compile;

/// `greta __gpu build-kernels`: the bundled kernels built for HIP's gfx
/// targets with hiprtc or for CUDA's `sm_XX` with NVRTC (which [`Api`]).
pub use build_kernels::{
    build as build_kernels, resources::KernelResources, BuildRequest, BuiltTarget, KernelsAnswer,
};
pub use gpu::driver::Api;

/// CUDA's gemm_f16 tensor-core variants and Hopper kernels (each kernel's
/// symbol and dynamic shared memory), those a compile for an `sm_XX` must
/// contain, and the PTX NVRTC makes of the bundled kernels: what the
/// every-architecture compile test checks each CUBIN against.
pub use cuda::bundled_ptx as cuda_ptx;
pub use gpu::tune::{cuda_variant_symbols, variant_shared_bytes, F16Variant, CUDA_F16_VARIANTS};

/// The Vulkan device where a caller needs more than [`Backend`]: its
/// caches, validation messages and compile-only pipelines with the
/// driver's statistics (`greta smoke --compile-only`, `greta tune`), and
/// Mesa's shader cache decided before the loader opens.
pub use vulkan::mesa_cache::prepare as prepare_mesa_cache;
pub use vulkan::{
    store_pipeline_cache, CacheDir, CacheStatus, Compiled, Device as VulkanDevice, Executable,
    MessageLog, OpenOptions as VulkanOptions, OpenStep,
};

/// A workgroup size the driver runs cooperative-matrix-2 f16 matrices at
/// ([`VulkanLimits::coop2_workgroups`]).
pub use greta_vkenum::coop2::Flex as Coop2Workgroup;
/// The Vulkan op planner, pure (an op, a tuning and device limits in, the
/// dispatch out): what the planner's fuzz target drives.
pub use vulkan::plan::{plan as plan_vulkan, Limits as VulkanLimits, Shader, Waves};

/// What a GPU says about itself while it works: readings sampled during a
/// gate (power, temperature, clocks and what holds them down), error
/// counters read around a run, the PCIe link now and at most, and how many
/// GPUs the node's own records show. NVIDIA through NVML (opened at run
/// time), AMD from amdgpu's sysfs under a root (a captured tree replays).
pub use telemetry::amd::{
    cards as amd_cards, cards_of as amd_cards_of, Card as AmdCard, SysfsSource as AmdSysfsSource,
};
pub use telemetry::nvml::{Nvml, NvmlSource};
pub use telemetry::{
    bus_gpu_count, kfd_gpu_count, Counter, Limits as ClockLimits, Link, LinkState, Reading,
    Sampler, Source as TelemetrySource, Timed,
};

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
