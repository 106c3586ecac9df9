//! The small driver API that HIP and CUDA both offer, as one trait.
//!
//! Everything above it (buffers, copies, streams and events, deadline
//! polling, lost-device handling, the module cache, launch, timing) is
//! written once in [`super::backend`]; an implementation only forwards each
//! call to its library (libamdhip64, or the CUDA driver API) and turns the
//! library's status code into a [`GpuError`] naming the call.

use super::arch::Arch;
use super::compiler::{CompileError, Compiler};
use crate::locate::{Candidate, Loaded};
use serde::{Deserialize, Serialize};
use std::ffi::{c_void, CStr};
use std::time::Duration;

/// Which vendor API a driver speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    Hip,
    Cuda,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Hip => "hip",
            Api::Cuda => "cuda",
        }
    }
    /// How people name it in messages.
    pub fn label(self) -> &'static str {
        match self {
            Api::Hip => "HIP",
            Api::Cuda => "CUDA",
        }
    }
}

/// A device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevPtr(pub u64);

/// Opaque handles of the driver's objects (pointers the library gave out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamH(pub usize);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventH(pub usize);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleH(pub usize);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuncH(pub usize);
/// An instantiated graph of captured work (`CUgraphExec`, `hipGraphExec_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphH(pub usize);

/// A launch's geometry: blocks in the grid, threads in a block, and bytes of
/// dynamic shared memory (none of the bundled kernels use any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

impl Dims {
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> Dims {
        Dims {
            grid,
            block,
            shared_bytes: 0,
        }
    }

    /// Whether any dimension is zero: such a launch runs nothing.
    pub fn is_empty(&self) -> bool {
        self.grid.contains(&0) || self.block.contains(&0)
    }
}

/// What greta records about one GPU, whichever API found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuDevice {
    pub api: Api,
    pub ordinal: usize,
    pub name: String,
    /// What kernels are compiled for: `gfx90a` (HIP) or `sm_90` (CUDA).
    pub arch: Arch,
    /// Where `arch` came from (KFD node, gcnArchName, compute capability).
    pub arch_source: String,
    pub compute_units: u32,
    pub total_memory_bytes: u64,
    pub warp_size: u32,
    pub max_shared_memory_per_block: u32,
    pub max_threads_per_block: u32,
    pub max_grid: [u32; 3],
    pub integrated: bool,
    /// `0000:c1:00.0`, when known.
    pub pci_bus_id: String,
    pub pci_vendor_id: u32,
    pub pci_device_id: u32,
    /// None when the API reports none (HIP).
    pub uuid: Option<greta_vocab::DeviceUuid>,
    /// Runtime/driver versions as the library reports them, readable.
    pub runtime_version: String,
    pub driver_version: String,
    pub driver_version_raw: u32,
    /// The target the loaded kernels were compiled for, once they are
    /// (`sm_90a` on an H100 or H200 whose NVRTC built it; `None` before).
    #[serde(default)]
    pub kernels_for: Option<Arch>,
    /// Whether the loaded code holds the Hopper GEMMs (built for `sm_90a`,
    /// and each of their kernels found in the module): what the launch
    /// plans of gemm_f16 and linear_f16 key on, not `arch`.
    #[serde(default)]
    pub hopper_kernels: bool,
}

impl GpuDevice {
    /// Whether gemm_f16 and linear_f16 may launch the Hopper kernels here.
    pub fn has_hopper_kernels(&self) -> bool {
        self.api == Api::Cuda && self.hopper_kernels
    }
}

/// A 2-D f16 tensor in device memory as a tensor map describes it to the
/// copy engine (TMA): `cols` contiguous halves a row, `rows` rows, moved
/// in boxes of `box_cols` x `box_rows` that land in shared memory with the
/// 128-byte swizzle (so `box_cols` is 64: 128 bytes). Elements outside the
/// tensor land as zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileMapSpec {
    pub cols: u64,
    pub rows: u64,
    pub box_cols: u32,
    pub box_rows: u32,
}

/// An encoded tensor map (CUDA's `CUtensorMap`: 128 opaque bytes, 64-byte
/// aligned), passed to a kernel by value.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMap(pub [u64; 16]);

impl std::fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TensorMap({:#x}..)", self.0[0])
    }
}

/// Every way a call into a GPU driver can fail, with what and where.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The library (libamdhip64, libcuda) is nowhere to be found.
    #[error("{0}")]
    LibraryMissing(String),
    /// The library loaded but found no usable GPU; `why` says what the
    /// machine looks like.
    #[error("no {api} device found: {detail}; {why}")]
    NoDevice {
        api: &'static str,
        detail: String,
        why: String,
    },
    /// A driver call failed: which call, the library's name and text for the
    /// code, and what usually causes it.
    #[error("{call} failed: {name} ({code}): {text}{hint}")]
    Call {
        call: &'static str,
        code: i32,
        name: String,
        text: String,
        hint: String,
        /// The code means "out of memory".
        oom: bool,
    },
    /// Work submitted to the GPU did not finish before the deadline.
    #[error("{what} did not finish within {:.3} s (the GPU may be hung or the kernel far too slow)", limit.as_secs_f64())]
    Timeout { what: String, limit: Duration },
    /// The device reported something greta cannot work with.
    #[error("{0}")]
    Device(String),
    /// Building the kernels failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A buffer or argument does not match what the kernel needs.
    #[error("{0}")]
    Invalid(String),
}

impl GpuError {
    /// True when the failure means "this machine has no such GPU / library",
    /// which callers report as undecided (exit 2).
    pub fn is_no_device(&self) -> bool {
        matches!(
            self,
            GpuError::NoDevice { .. } | GpuError::LibraryMissing(_)
        )
    }
}

/// Whether an event has completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventState {
    Done,
    Pending,
}

/// The calls greta makes, one to one with `hip*` / `cu*` functions. Every
/// method that hands over raw memory is `unsafe`: the caller keeps the
/// memory alive and sized as the call needs.
pub trait Driver {
    fn api(&self) -> Api;
    /// The runtime library this driver opened and why.
    fn library(&self) -> &Loaded;
    fn device_count(&self) -> Result<usize, GpuError>;
    fn device(&self, ordinal: usize) -> Result<GpuDevice, GpuError>;
    /// Makes `ordinal` current for this thread (hipSetDevice; CUDA's
    /// primary context).
    fn activate(&self, ordinal: usize) -> Result<(), GpuError>;
    fn malloc(&self, bytes: usize) -> Result<DevPtr, GpuError>;
    /// # Safety
    /// `p` came from [`Driver::malloc`] and is freed once.
    unsafe fn free(&self, p: DevPtr);
    /// Page-locked host memory of `bytes` (`cuMemHostAlloc`,
    /// `hipHostMalloc`): what the device's DMA engines copy from and to at
    /// the link's rate, where pageable memory goes through a bounce buffer.
    fn host_alloc(&self, bytes: usize) -> Result<*mut u8, GpuError>;
    /// # Safety
    /// `p` came from [`Driver::host_alloc`], no copy uses it any more, and
    /// it is freed once.
    unsafe fn host_free(&self, p: *mut u8);
    /// # Safety
    /// `src` holds `n` bytes until the stream has passed this copy.
    unsafe fn htod_async(
        &self,
        dst: DevPtr,
        src: *const u8,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError>;
    /// # Safety
    /// `dst` holds room for `n` bytes until the stream has passed this copy.
    unsafe fn dtoh_async(
        &self,
        dst: *mut u8,
        src: DevPtr,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError>;
    /// Device-to-device copy, the runtime's own (the copy ceiling).
    ///
    /// # Safety
    /// `dst` and `src` are live allocations of at least `n` bytes.
    unsafe fn dtod_async(
        &self,
        dst: DevPtr,
        src: DevPtr,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError>;
    /// Sets `n` bytes at `dst` to `value` on the device, in stream order
    /// (zeroing a scratch buffer of GiBs without uploading GiBs of zeros).
    ///
    /// # Safety
    /// `dst` is a live allocation of at least `n` bytes.
    unsafe fn memset_async(
        &self,
        dst: DevPtr,
        value: u8,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError>;
    fn stream_create(&self) -> Result<StreamH, GpuError>;
    /// # Safety
    /// A live stream with no work pending, destroyed once.
    unsafe fn stream_destroy(&self, s: StreamH);
    fn event_create(&self) -> Result<EventH, GpuError>;
    /// # Safety
    /// A live event, destroyed once.
    unsafe fn event_destroy(&self, e: EventH);
    fn event_record(&self, e: EventH, s: StreamH) -> Result<(), GpuError>;
    fn event_query(&self, e: EventH) -> Result<EventState, GpuError>;
    /// Milliseconds between two completed events.
    fn event_elapsed_ms(&self, start: EventH, end: EventH) -> Result<f32, GpuError>;
    fn module_load(&self, image: &[u8]) -> Result<ModuleH, GpuError>;
    /// # Safety
    /// A loaded module none of whose kernels still run, unloaded once.
    unsafe fn module_unload(&self, m: ModuleH);
    fn module_function(&self, m: ModuleH, name: &CStr) -> Result<FuncH, GpuError>;
    /// Lets `f` launch with `bytes` of dynamic shared memory: above 48 KiB
    /// NVIDIA GPUs need the kernel's opt-in first
    /// (`cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`).
    /// A driver without the call accepts what needs no opt-in.
    fn set_max_dynamic_shared(&self, f: FuncH, bytes: u32) -> Result<(), GpuError> {
        let _ = f;
        if bytes <= 48 << 10 {
            Ok(())
        } else {
            Err(GpuError::Invalid(format!(
                "{bytes} bytes of dynamic shared memory: the {} driver here cannot raise a kernel's limit above 48 KiB",
                self.api().label()
            )))
        }
    }
    /// The tensor map of the f16 tensor at `base` that `spec` describes
    /// (`cuTensorMapEncodeTiled`): what a kernel's bulk tensor copies read
    /// through. Host-side only, no GPU work. A driver without them refuses.
    fn tensor_map(&self, base: DevPtr, spec: &TileMapSpec) -> Result<TensorMap, GpuError> {
        let _ = (base, spec);
        Err(GpuError::Invalid(format!(
            "the {} driver here encodes no tensor maps (they are CUDA's, for compute capability 9.0)",
            self.api().label()
        )))
    }
    /// # Safety
    /// `params` points at one pointer per kernel parameter, each to a value
    /// of that parameter's size, alive across the call.
    unsafe fn launch(
        &self,
        f: FuncH,
        dims: Dims,
        s: StreamH,
        params: *mut *mut c_void,
    ) -> Result<(), GpuError>;
    /// Starts capturing the work enqueued on `s` (this thread's only) into a
    /// graph instead of running it; `Err` where the runtime has no graphs.
    fn capture_begin(&self, s: StreamH) -> Result<(), GpuError>;
    /// Ends the capture begun on `s` and instantiates what it recorded.
    fn capture_end(&self, s: StreamH) -> Result<GraphH, GpuError>;
    /// Enqueues one replay of `g` on `s`.
    fn graph_launch(&self, g: GraphH, s: StreamH) -> Result<(), GpuError>;
    /// # Safety
    /// An instantiated graph none of whose replays still runs, destroyed once.
    unsafe fn graph_destroy(&self, g: GraphH);
    /// The run-time compiler for this device, set with the options that
    /// target it: the shared layer builds the kernels through it and knows
    /// no vendor's compiler by name.
    fn compiler_for(&self, dev: &GpuDevice) -> Result<Box<dyn Compiler>, GpuError>;
    /// The compilers to try for this device, best first: each after the
    /// first is the fallback should the one before fail to build
    /// (`super::compile::first_that_builds`). Never empty.
    fn compilers_for(&self, dev: &GpuDevice) -> Result<Vec<Box<dyn Compiler>>, GpuError> {
        Ok(vec![self.compiler_for(dev)?])
    }
    /// Where to look for the vendor BLAS (rocBLAS, cuBLAS): the active
    /// greta env first, then the system's ROCm/CUDA, then the loader's names.
    fn blas_candidates(&self) -> Vec<Candidate>;
    /// Explains an empty device list from what the machine shows.
    fn why_no_device(&self) -> String;
}
