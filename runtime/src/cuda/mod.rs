//! The CUDA twin of the HIP backend: the same [`crate::gpu`] code over the
//! CUDA driver API (cudarc's bindings, libcuda loaded at run time) and
//! NVRTC (opened by path through the shared [`crate::gpu::rtc`]), with the
//! same kernel sources. It runs every gate on NVIDIA GPUs, and it is how the
//! HIP backend's code is proven on a real GPU where no AMD GPU is at hand.

pub(crate) mod nvrtc;

use crate::gpu::arch::Arch;
use crate::gpu::calls::{self, launch_kernel};
use crate::gpu::compiler::Compiler;
use crate::gpu::driver::{
    Api, DevPtr, Dims, Driver, EventH, EventState, FuncH, GpuDevice, GpuError, GraphH, ModuleH,
    StreamH, TensorMap, TileMapSpec,
};
use crate::gpu::GpuBackend;
use crate::locate::{self, Candidate, Loaded, Rule, SearchEnv, State, VendorLibrary};
use cudarc::driver::sys::{self as cu, CUdevice_attribute as A, CUresult};
use greta_vocab::EnvVars;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The CUDA backend over the shared GPU layer.
pub type CudaBackend = GpuBackend<Cuda>;

/// Opens `path` with RTLD_GLOBAL and keeps it loaded for the life of the
/// process, so that cudarc's later dlopen by soname finds this very file.
/// Only a regular file is opened (a FIFO would block dlopen for ever), and
/// only a library that defines `cuInit` is kept: anything else would leave
/// cudarc to load some other libcuda (or none) and blame that.
pub(crate) fn preload(path: &Path) -> Result<(), String> {
    locate::loadable(path)?;
    // SAFETY: loading a vendor library runs its initialisers; that is what
    // using it means.
    let lib = unsafe {
        libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_GLOBAL)
    }
    .map_err(|e| e.to_string())?;
    // SAFETY: looking a symbol's address up calls nothing.
    if unsafe { lib.get::<*const c_void>(b"cuInit\0") }.is_err() {
        return Err("it does not define cuInit: not a CUDA driver library (libcuda.so.1)".into());
    }
    std::mem::forget(lib);
    Ok(())
}

struct Inner {
    loaded: Loaded,
    /// Primary contexts retained, by ordinal.
    contexts: Mutex<HashMap<usize, usize>>,
}

/// The opened CUDA driver.
#[derive(Clone)]
pub struct Cuda {
    inner: Arc<Inner>,
}

impl Cuda {
    /// Opens libcuda where the library search finds it: `$GRETA_CUDA_LIB`
    /// (a file, and then only it), else the files the loader's places hold
    /// for the names the CUDA bindings ask for, in their order. The file
    /// taken is kept loaded, so the bindings' own `dlopen` by name gets
    /// this very library (a file already loaded is not loaded again).
    pub fn open() -> Result<Cuda, GpuError> {
        let found = locate::find_library(VendorLibrary::Cuda, &SearchEnv::live())
            .map_err(GpuError::LibraryMissing)?;
        let mut looked = Vec::new();
        let mut why = None;
        for c in &found {
            let tried = match &c.state {
                // Names no place holds: the bindings ask the loader below.
                State::ByName => continue,
                State::Found => preload(&c.path),
                other => Err(other.to_string()),
            };
            match tried {
                Ok(()) => {
                    why = Some(c.why());
                    break;
                }
                Err(e) if matches!(c.rule, Rule::Override { .. }) => {
                    return Err(GpuError::LibraryMissing(format!(
                        "{}={} cannot be used: {e}",
                        EnvVars::GRETA_CUDA_LIB,
                        c.path.display()
                    )))
                }
                Err(e) => looked.push(format!("{} ({}): {e}", c.path.display(), c.rule)),
            }
        }
        let why = why.unwrap_or_else(|| "the dynamic loader's search path".to_string());
        // SAFETY: only tries to dlopen the candidate names.
        if !unsafe { cu::is_culib_present() } {
            let passed_over = if looked.is_empty() {
                String::new()
            } else {
                format!(" (passed over: {})", looked.join("; "))
            };
            return Err(GpuError::LibraryMissing(format!(
                "no CUDA driver library (libcuda) found; the loader was asked for {}{passed_over}. Install the NVIDIA \
                 driver (it ships libcuda.so.1), or point {} at libcuda.so.1",
                cudarc::get_lib_name_candidates("cuda").join(", "),
                EnvVars::GRETA_CUDA_LIB
            )));
        }
        // SAFETY: the library is present (checked above); looking up a
        // symbol's address calls nothing.
        let cu_init = unsafe { cu::culib().get::<*const c_void>(b"cuInit\0") }
            .ok()
            .map(|s| *s);
        let path = cu_init
            .and_then(locate::loaded_from)
            .unwrap_or_else(|| PathBuf::from("libcuda.so.1"));
        // SAFETY: plain call.
        let r = unsafe { cu::cuInit(0) };
        let cuda = Cuda {
            inner: Arc::new(Inner {
                loaded: Loaded {
                    what: "libcuda".into(),
                    path,
                    why,
                },
                contexts: Mutex::new(HashMap::new()),
            }),
        };
        if r == CUresult::CUDA_ERROR_NO_DEVICE {
            return Err(GpuError::NoDevice {
                api: "CUDA",
                detail: format!(
                    "cuInit returned CUDA_ERROR_NO_DEVICE (driver {})",
                    cuda.inner.loaded
                ),
                why: cuda.why_no_device(),
            });
        }
        cuda.check("cuInit", r)?;
        Ok(cuda)
    }

    /// Runs `call` with an out-parameter for a new object and returns the
    /// object as the address the [`Driver`] handles carry.
    fn created<T>(
        &self,
        call: &'static str,
        f: impl FnOnce(&mut *mut T) -> CUresult,
    ) -> Result<usize, GpuError> {
        calls::created(|r| self.check(call, r), f)
    }

    fn check(&self, call: &'static str, r: CUresult) -> Result<(), GpuError> {
        if r == CUresult::CUDA_SUCCESS {
            return Ok(());
        }
        let text = |f: unsafe fn(CUresult, *mut *const c_char) -> CUresult, fb: &str| {
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: cuGetErrorName/String take any code and a valid out-parameter.
            if unsafe { f(r, &mut p) } == CUresult::CUDA_SUCCESS && !p.is_null() {
                // SAFETY: the driver hands out static NUL-terminated strings.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            } else {
                fb.to_string()
            }
        };
        let code = r as i32;
        Err(GpuError::Call {
            call,
            code,
            name: text(cu::cuGetErrorName, "CUDA_ERROR_UNKNOWN"),
            text: text(cu::cuGetErrorString, "unknown error"),
            hint: match code {
                100 => " (no NVIDIA GPU visible: check nvidia-smi and CUDA_VISIBLE_DEVICES)",
                35 => " (the NVIDIA driver is older than this code needs)",
                209 | 218 | 200 => {
                    " (the cubin was built for another GPU: delete greta's kernel cache)"
                }
                700 | 719 => " (the kernel faulted on the GPU; the context is unusable)",
                _ => "",
            }
            .into(),
            oom: code == 2,
        })
    }

    fn attr(&self, a: A, ordinal: usize) -> Result<i32, GpuError> {
        let mut v: c_int = 0;
        // SAFETY: out-parameter call; ordinal is a valid CUdevice (CUDA's
        // device handles are the ordinals).
        self.check("cuDeviceGetAttribute", unsafe {
            cu::cuDeviceGetAttribute(&mut v, a, ordinal as c_int)
        })?;
        Ok(v)
    }
}

/// Driver functions under their original names, which every driver since
/// CUDA 10 exports (CUDA 13's headers renamed them to `_v2`, which drivers
/// before 12.8 lack), looked up in the libcuda cudarc opened.
struct OldSymbols {
    elapsed: unsafe extern "C" fn(*mut f32, cu::CUevent, cu::CUevent) -> CUresult,
    uuid: unsafe extern "C" fn(*mut cu::CUuuid, c_int) -> CUresult,
}

fn old_symbols() -> Option<&'static OldSymbols> {
    static SYMS: std::sync::OnceLock<Option<OldSymbols>> = std::sync::OnceLock::new();
    SYMS.get_or_init(|| {
        // SAFETY: only called after Cuda::open found the library; the
        // signatures are cuda.h's.
        unsafe {
            let lib = cu::culib();
            Some(OldSymbols {
                elapsed: *lib.get(b"cuEventElapsedTime\0").ok()?,
                uuid: *lib.get(b"cuDeviceGetUuid\0").ok()?,
            })
        }
    })
    .as_ref()
}

/// `cuTensorMapEncodeTiled` (CUDA 12.0 and later drivers), looked up in
/// the libcuda cudarc opened; `None` where the driver lacks it.
type EncodeTiled = unsafe extern "C" fn(
    *mut c_void,
    cu::CUtensorMapDataType,
    u32,
    *mut c_void,
    *const u64,
    *const u64,
    *const u32,
    *const u32,
    cu::CUtensorMapInterleave,
    cu::CUtensorMapSwizzle,
    cu::CUtensorMapL2promotion,
    cu::CUtensorMapFloatOOBfill,
) -> CUresult;

fn encode_tiled() -> Option<EncodeTiled> {
    static F: std::sync::OnceLock<Option<EncodeTiled>> = std::sync::OnceLock::new();
    *F.get_or_init(|| {
        // SAFETY: only called after Cuda::open found the library; the
        // signature is cuda.h's.
        unsafe { cu::culib().get::<EncodeTiled>(b"cuTensorMapEncodeTiled\0") }
            .ok()
            .map(|f| *f)
    })
}

/// Why `spec` at `base` is no tensor map the Hopper kernels can use: the
/// copy engine's limits (cuda.h, cuTensorMapEncodeTiled) for a 2-D f16
/// tensor in 128-byte swizzled boxes.
pub(crate) fn tensor_map_refusal(base: DevPtr, spec: &TileMapSpec) -> Option<String> {
    let Some(row_bytes) = spec.cols.checked_mul(2) else {
        return Some(format!("rows of {} halves overflow", spec.cols));
    };
    if !base.0.is_multiple_of(16) {
        Some(format!(
            "the tensor at {:#x} is not 16-byte aligned",
            base.0
        ))
    } else if spec.cols == 0
        || spec.rows == 0
        || spec.cols > u32::MAX as u64
        || spec.rows > u32::MAX as u64
    {
        Some(format!(
            "a {} x {} tensor: each dimension is 1 to 2^32 - 1",
            spec.rows, spec.cols
        ))
    } else if !row_bytes.is_multiple_of(16) || row_bytes >= 1 << 40 {
        Some(format!(
            "rows of {} halves: a row stride is a multiple of 16 bytes under 2^40",
            spec.cols
        ))
    } else if spec.box_cols * 2 != 128 || !(1..=256).contains(&spec.box_rows) {
        Some(format!(
            "a box of {} x {} halves: 64 halves (the 128-byte swizzle) by 1 to 256 rows",
            spec.box_rows, spec.box_cols
        ))
    } else {
        None
    }
}

fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

impl Driver for Cuda {
    fn api(&self) -> Api {
        Api::Cuda
    }

    fn library(&self) -> &Loaded {
        &self.inner.loaded
    }

    fn device_count(&self) -> Result<usize, GpuError> {
        let mut n: c_int = 0;
        // SAFETY: out-parameter call.
        let r = unsafe { cu::cuDeviceGetCount(&mut n) };
        if r == CUresult::CUDA_ERROR_NO_DEVICE || (r == CUresult::CUDA_SUCCESS && n <= 0) {
            return Err(GpuError::NoDevice {
                api: "CUDA",
                detail: format!("cuDeviceGetCount found none (driver {})", self.inner.loaded),
                why: self.why_no_device(),
            });
        }
        self.check("cuDeviceGetCount", r)?;
        Ok(n as usize)
    }

    fn device(&self, ordinal: usize) -> Result<GpuDevice, GpuError> {
        let o = ordinal as c_int;
        let name = calls::out_text::<256, _>(|p, len| {
            // SAFETY: the driver writes at most `len` bytes, NUL included.
            let r = unsafe { cu::cuDeviceGetName(p, len, o) };
            self.check("cuDeviceGetName", r)
        })?
        .trim()
        .to_string();
        let pci_bus_id = calls::out_text::<64, _>(|p, len| {
            // SAFETY: as above.
            match unsafe { cu::cuDeviceGetPCIBusId(p, len, o) } {
                CUresult::CUDA_SUCCESS => Ok(()),
                _ => Err(()),
            }
        })
        .map(|b| b.to_lowercase())
        .unwrap_or_default();
        let mut total: usize = 0;
        // SAFETY: out-parameter call.
        self.check("cuDeviceTotalMem", unsafe {
            cu::cuDeviceTotalMem_v2(&mut total, o)
        })?;
        // SAFETY: zeroed POD out-parameter.
        let mut u: cu::CUuuid = unsafe { std::mem::zeroed() };
        // SAFETY: out-parameter call.
        let uuid = if unsafe { old_symbols().map(|f| (f.uuid)(&mut u, o)) }
            == Some(CUresult::CUDA_SUCCESS)
        {
            Some(greta_vocab::DeviceUuid(u.bytes.map(|b| b as u8)))
        } else {
            None
        };
        let (major, minor) = (
            self.attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ordinal)?,
            self.attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ordinal)?,
        );
        let mut dv = 0;
        // SAFETY: out-parameter call.
        unsafe { cu::cuDriverGetVersion(&mut dv) };
        Ok(GpuDevice {
            api: Api::Cuda,
            ordinal,
            name,
            arch: Arch::Other(format!("sm_{major}{minor}")),
            arch_source: format!("compute capability {major}.{minor}"),
            compute_units: self.attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ordinal)? as u32,
            total_memory_bytes: total as u64,
            warp_size: self.attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE, ordinal)? as u32,
            max_shared_memory_per_block: self
                .attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, ordinal)?
                as u32,
            max_threads_per_block: self
                .attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ordinal)?
                as u32,
            max_grid: [
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, ordinal)? as u32,
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, ordinal)? as u32,
                self.attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, ordinal)? as u32,
            ],
            integrated: self
                .attr(A::CU_DEVICE_ATTRIBUTE_INTEGRATED, ordinal)
                .unwrap_or(0)
                != 0,
            pci_vendor_id: calls::pci_id(&pci_bus_id, "vendor"),
            pci_device_id: calls::pci_id(&pci_bus_id, "device"),
            pci_bus_id,
            uuid,
            runtime_version: format!("CUDA {}", version_text(dv)),
            driver_version: version_text(dv),
            driver_version_raw: dv as u32,
            kernels_for: None,
            hopper_kernels: false,
        })
    }

    fn activate(&self, ordinal: usize) -> Result<(), GpuError> {
        let mut map = self
            .inner
            .contexts
            .lock()
            .map_err(|_| GpuError::Device("context table poisoned".into()))?;
        let ctx = match map.get(&ordinal) {
            Some(&c) => c,
            None => {
                let mut c: cu::CUcontext = std::ptr::null_mut();
                // SAFETY: out-parameter call on a valid device.
                self.check("cuDevicePrimaryCtxRetain", unsafe {
                    cu::cuDevicePrimaryCtxRetain(&mut c, ordinal as c_int)
                })?;
                map.insert(ordinal, c as usize);
                c as usize
            }
        };
        // SAFETY: a retained primary context.
        self.check("cuCtxSetCurrent", unsafe {
            cu::cuCtxSetCurrent(ctx as cu::CUcontext)
        })
    }

    fn malloc(&self, bytes: usize) -> Result<DevPtr, GpuError> {
        let mut p: cu::CUdeviceptr = 0;
        // SAFETY: out-parameter call in the current context.
        self.check("cuMemAlloc", unsafe { cu::cuMemAlloc_v2(&mut p, bytes) })?;
        Ok(DevPtr(p))
    }

    unsafe fn free(&self, p: DevPtr) {
        // SAFETY: the caller passes a pointer from `malloc`, freed once.
        unsafe { cu::cuMemFree_v2(p.0) };
    }

    fn host_alloc(&self, bytes: usize) -> Result<*mut u8, GpuError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-parameter call in the current context; 0 = default
        // flags (page-locked, this context only).
        self.check("cuMemHostAlloc", unsafe {
            cu::cuMemHostAlloc(&mut p, bytes, 0)
        })?;
        Ok(p as *mut u8)
    }

    unsafe fn host_free(&self, p: *mut u8) {
        // SAFETY: the caller passes a pointer from `host_alloc`, idle, freed once.
        unsafe { cu::cuMemFreeHost(p as *mut c_void) };
    }

    unsafe fn htod_async(
        &self,
        dst: DevPtr,
        src: *const u8,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller keeps `n` bytes at `src` alive until the stream passes the copy.
        let r = unsafe {
            cu::cuMemcpyHtoDAsync_v2(dst.0, src as *const c_void, n, s.0 as cu::CUstream)
        };
        self.check("cuMemcpyHtoDAsync", r)
    }

    unsafe fn dtoh_async(
        &self,
        dst: *mut u8,
        src: DevPtr,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller keeps room for `n` bytes at `dst` until the stream passes the copy.
        let r =
            unsafe { cu::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src.0, n, s.0 as cu::CUstream) };
        self.check("cuMemcpyDtoHAsync", r)
    }

    unsafe fn dtod_async(
        &self,
        dst: DevPtr,
        src: DevPtr,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller passes live allocations of at least `n` bytes.
        let r = unsafe { cu::cuMemcpyDtoDAsync_v2(dst.0, src.0, n, s.0 as cu::CUstream) };
        self.check("cuMemcpyDtoDAsync", r)
    }

    unsafe fn memset_async(
        &self,
        dst: DevPtr,
        value: u8,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller passes a live allocation of at least `n` bytes.
        let r = unsafe { cu::cuMemsetD8Async(dst.0, value, n, s.0 as cu::CUstream) };
        self.check("cuMemsetD8Async", r)
    }

    fn stream_create(&self) -> Result<StreamH, GpuError> {
        // SAFETY: out-parameter call; 1 = CU_STREAM_NON_BLOCKING.
        self.created("cuStreamCreate", |s| unsafe { cu::cuStreamCreate(s, 1) })
            .map(StreamH)
    }

    unsafe fn stream_destroy(&self, s: StreamH) {
        // SAFETY: the caller passes a live stream with no work pending, destroyed once.
        unsafe { cu::cuStreamDestroy_v2(s.0 as cu::CUstream) };
    }

    fn event_create(&self) -> Result<EventH, GpuError> {
        // SAFETY: out-parameter call; 0 = default flags (timing on).
        self.created("cuEventCreate", |e| unsafe { cu::cuEventCreate(e, 0) })
            .map(EventH)
    }

    unsafe fn event_destroy(&self, e: EventH) {
        // SAFETY: the caller passes a live event, destroyed once.
        unsafe { cu::cuEventDestroy_v2(e.0 as cu::CUevent) };
    }

    fn event_record(&self, e: EventH, s: StreamH) -> Result<(), GpuError> {
        // SAFETY: live handles.
        self.check("cuEventRecord", unsafe {
            cu::cuEventRecord(e.0 as cu::CUevent, s.0 as cu::CUstream)
        })
    }

    fn event_query(&self, e: EventH) -> Result<EventState, GpuError> {
        // SAFETY: live handle.
        match unsafe { cu::cuEventQuery(e.0 as cu::CUevent) } {
            CUresult::CUDA_SUCCESS => Ok(EventState::Done),
            CUresult::CUDA_ERROR_NOT_READY => Ok(EventState::Pending),
            other => self.check("cuEventQuery", other).map(|_| EventState::Done),
        }
    }

    fn event_elapsed_ms(&self, start: EventH, end: EventH) -> Result<f32, GpuError> {
        let mut ms = 0f32;
        let f = old_symbols()
            .ok_or_else(|| GpuError::Device("this libcuda lacks cuEventElapsedTime".into()))?;
        // SAFETY: both events recorded and complete; `ms` is a valid out-parameter.
        self.check("cuEventElapsedTime", unsafe {
            (f.elapsed)(&mut ms, start.0 as cu::CUevent, end.0 as cu::CUevent)
        })?;
        Ok(ms)
    }

    fn module_load(&self, image: &[u8]) -> Result<ModuleH, GpuError> {
        if image.is_empty() {
            return Err(GpuError::Invalid("empty cubin".into()));
        }
        // SAFETY: the driver copies the image before returning.
        self.created("cuModuleLoadData", |m| unsafe {
            cu::cuModuleLoadData(m, image.as_ptr() as *const c_void)
        })
        .map(ModuleH)
    }

    unsafe fn module_unload(&self, m: ModuleH) {
        // SAFETY: the caller passes a loaded module, unloaded once.
        unsafe { cu::cuModuleUnload(m.0 as cu::CUmodule) };
    }

    fn module_function(&self, m: ModuleH, name: &CStr) -> Result<FuncH, GpuError> {
        // SAFETY: live module, NUL-terminated name.
        self.created("cuModuleGetFunction", |f| unsafe {
            cu::cuModuleGetFunction(f, m.0 as cu::CUmodule, name.as_ptr())
        })
        .map(FuncH)
    }

    fn capture_begin(&self, s: StreamH) -> Result<(), GpuError> {
        // SAFETY: a live stream of the current context.
        let r = unsafe {
            cu::cuStreamBeginCapture_v2(
                s.0 as cu::CUstream,
                cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        };
        self.check("cuStreamBeginCapture", r)
    }

    fn capture_end(&self, s: StreamH) -> Result<GraphH, GpuError> {
        let mut graph: cu::CUgraph = std::ptr::null_mut();
        // SAFETY: a stream this thread is capturing; out-parameter.
        self.check("cuStreamEndCapture", unsafe {
            cu::cuStreamEndCapture(s.0 as cu::CUstream, &mut graph)
        })?;
        let mut exec: cu::CUgraphExec = std::ptr::null_mut();
        // SAFETY: the graph just captured.
        let r = unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        // The template is not needed once instantiated (or if that failed).
        // SAFETY: created by the capture above, destroyed once.
        unsafe { cu::cuGraphDestroy(graph) };
        self.check("cuGraphInstantiateWithFlags", r)?;
        Ok(GraphH(exec as usize))
    }

    fn graph_launch(&self, g: GraphH, s: StreamH) -> Result<(), GpuError> {
        // SAFETY: an instantiated graph and a live stream.
        self.check("cuGraphLaunch", unsafe {
            cu::cuGraphLaunch(g.0 as cu::CUgraphExec, s.0 as cu::CUstream)
        })
    }

    unsafe fn graph_destroy(&self, g: GraphH) {
        // SAFETY: the caller's contract (instantiated, idle, once).
        unsafe { cu::cuGraphExecDestroy(g.0 as cu::CUgraphExec) };
    }

    fn set_max_dynamic_shared(&self, f: FuncH, bytes: u32) -> Result<(), GpuError> {
        let value = c_int::try_from(bytes)
            .map_err(|_| GpuError::Invalid(format!("{bytes} bytes of shared memory")))?;
        // SAFETY: a function of a loaded module; a plain integer attribute.
        let r = unsafe {
            cu::cuFuncSetAttribute(
                f.0 as cu::CUfunction,
                cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
        };
        self.check("cuFuncSetAttribute", r)
    }

    fn tensor_map(&self, base: DevPtr, spec: &TileMapSpec) -> Result<TensorMap, GpuError> {
        if let Some(why) = tensor_map_refusal(base, spec) {
            return Err(GpuError::Invalid(format!("no tensor map: {why}")));
        }
        let encode = encode_tiled().ok_or_else(|| {
            GpuError::Device(
                "this libcuda lacks cuTensorMapEncodeTiled (a driver for CUDA 12.0 or later has it)".into(),
            )
        })?;
        let mut map = TensorMap([0; 16]);
        let dims = [spec.cols, spec.rows];
        let strides = [spec.cols * 2];
        let boxes = [spec.box_cols, spec.box_rows];
        let steps = [1u32, 1];
        // SAFETY: `map` is 128 bytes, 64-byte aligned (a CUtensorMap); the
        // arrays hold rank (2) entries, the strides rank - 1; the driver
        // only encodes, reading no device memory.
        let r = unsafe {
            encode(
                &mut map as *mut TensorMap as *mut c_void,
                cu::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                2,
                base.0 as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                steps.as_ptr(),
                cu::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                cu::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                cu::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                cu::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        self.check("cuTensorMapEncodeTiled", r)?;
        Ok(map)
    }

    unsafe fn launch(
        &self,
        f: FuncH,
        dims: Dims,
        s: StreamH,
        params: *mut *mut c_void,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller passes a function of a loaded module and
        // `params` matching its signature, alive until the launch returns.
        let r = unsafe {
            launch_kernel!(
                cu::cuLaunchKernel,
                f.0 as cu::CUfunction,
                dims,
                s.0 as cu::CUstream,
                params
            )
        };
        self.check("cuLaunchKernel", r)
    }

    fn compiler_for(&self, dev: &GpuDevice) -> Result<Box<dyn Compiler>, GpuError> {
        let mut compilers = self.compilers_for(dev)?;
        Ok(compilers.remove(0))
    }

    /// NVRTC for each of [`device_targets`]: `sm_90a`, then `sm_90`, on a
    /// 9.0 device; for the one `$GRETA_CUDA_ARCH` names where it is set.
    fn compilers_for(&self, dev: &GpuDevice) -> Result<Vec<Box<dyn Compiler>>, GpuError> {
        let asked = greta_vocab::Setting::resolve(
            None,
            EnvVars::GRETA_CUDA_ARCH,
            |v| Ok::<_, String>(Some(v.to_string())),
            || None,
        )
        .map_err(GpuError::Invalid)?
        .value;
        let targets = chosen_targets(&dev.arch, asked.as_deref()).map_err(GpuError::Invalid)?;
        let library = nvrtc::locate_live().map_err(GpuError::Compile)?;
        Ok(targets
            .into_iter()
            .map(|t| -> Box<dyn Compiler> {
                Box::new(nvrtc::Nvrtc(nvrtc::choice_for_target(library.clone(), t)))
            })
            .collect())
    }

    /// CUDA torch's `nvidia/cublas/lib` or `nvidia/cu13/lib` in the env,
    /// then the system's CUDA.
    fn blas_candidates(&self) -> Vec<Candidate> {
        blas_candidates(&SearchEnv::live())
    }

    fn why_no_device(&self) -> String {
        let mut why = Vec::new();
        if !Path::new("/dev/nvidiactl").exists() {
            why.push("/dev/nvidiactl does not exist (no NVIDIA kernel driver loaded, or a container without the GPU)".to_string());
        }
        for k in ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"] {
            if let Ok(v) = std::env::var(k) {
                why.push(format!("{k}={v} is set and may hide devices"));
            }
        }
        if why.is_empty() {
            "the driver lists no GPU; run nvidia-smi to see what it says".into()
        } else {
            why.join("; ")
        }
    }
}

/// The architectures to compile for on a device of `arch`, best first: on
/// compute capability 9.0 (H100, H200) `sm_90a`, whose cubin may use the
/// instructions only that architecture has (wgmma, setmaxnreg), then
/// `sm_90` should this NVRTC not build it; elsewhere the device's own.
pub fn device_targets(arch: &Arch) -> Vec<Arch> {
    if arch.to_string() == "sm_90" {
        vec![Arch::parse("sm_90a"), arch.clone()]
    } else {
        vec![arch.clone()]
    }
}

/// [`device_targets`], or only `asked` (`$GRETA_CUDA_ARCH`) when it is one
/// of them: `sm_90` on an H100 or H200 builds without the sm_90a kernels
/// (the Hopper GEMMs off). Anything else is refused, saying what may be
/// asked: code for another architecture would not load on this device.
pub fn chosen_targets(arch: &Arch, asked: Option<&str>) -> Result<Vec<Arch>, String> {
    let all = device_targets(arch);
    let Some(asked) = asked else {
        return Ok(all);
    };
    match all.iter().find(|a| a.to_string() == asked) {
        Some(a) => Ok(vec![a.clone()]),
        None => Err(format!(
            "{}={asked:?} is no target for this {arch} device (it may be: {})",
            EnvVars::GRETA_CUDA_ARCH,
            all.iter()
                .map(Arch::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The PTX NVRTC (the library at `nvrtc`) makes of greta's bundled
/// kernels for `target` (`sm_90a`), in this process: what the compile
/// tests read a target's instructions from (wgmma in sm_90a's, none in
/// sm_90's). No GPU and no driver needed.
pub fn bundled_ptx(nvrtc: &Path, target: &str) -> Result<String, String> {
    let library = Loaded {
        what: "NVRTC".into(),
        path: nvrtc.to_path_buf(),
        why: "asked for".into(),
    };
    let choice = nvrtc::choice_for_target(library, Arch::parse(target));
    let unit = crate::gpu::compile::KernelSources::bundled().translation_unit(Api::Cuda);
    let _builtins = nvrtc::builtins_beside(&choice);
    let (ptx, _) = crate::gpu::rtc::compile_logged(&crate::gpu::rtc::NVRTC_PTX, &choice, &unit)
        .map_err(|e| e.to_string())?;
    String::from_utf8(ptx)
        .map(|t| t.trim_end_matches('\0').to_string())
        .map_err(|e| format!("NVRTC's PTX for {target} is not UTF-8: {e}"))
}

/// Where to look for cuBLAS: CUDA torch's `nvidia/cublas/lib` or
/// `nvidia/cu13/lib` in the env, then the system's CUDA, then the loader's
/// places.
pub(crate) fn blas_candidates(env: &SearchEnv) -> Vec<Candidate> {
    locate::nvidia_candidates(
        env,
        &["nvidia/cublas/lib", "nvidia/cu13/lib"],
        "libcublas.so",
        &[
            "libcublas.so.13",
            "libcublas.so.12",
            "libcublas.so.11",
            "libcublas.so",
        ],
    )
}

#[cfg(test)]
mod kernel_tests;
#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceiling::CeilingError;
    use crate::gpu::driver::StreamH;
    use crate::gpu::vendor;

    fn fake_env(rel: &str, file: &str, content: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("lib/python3.11/site-packages").join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(file);
        std::fs::write(&f, content).unwrap();
        (t, f)
    }

    #[test]
    fn the_env_comes_first_and_a_non_library_is_named_with_why() {
        let (t, f) = fake_env(
            "nvidia/cublas/lib",
            "libcublas.so.12",
            "not a shared library, only text that a download left behind\n"
                .repeat(8)
                .as_bytes(),
        );
        let c = blas_candidates(&SearchEnv {
            env_roots: vec![t.path().to_path_buf()],
            ..SearchEnv::under_root("/")
        });
        assert_eq!(c[0].path, f, "{c:?}");
        assert!(c[0].why().contains("env's NVIDIA wheels"), "{:?}", c[0]);
        // Only the fake env and names that cannot exist: what this machine
        // has installed plays no part.
        let mut only = vec![c[0].clone()];
        only.push(Candidate::by_name("libgreta-no-cublas.so.12"));
        let e = vendor::open(Api::Cuda, &only, StreamH(0)).err().unwrap();
        let CeilingError::NotFound { what, looked } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(what, "cuBLAS (libcublas)");
        assert_eq!(looked.len(), 2, "{looked:?}");
        assert!(
            looked[0].starts_with(&f.display().to_string()),
            "{looked:?}"
        );
        assert!(
            looked[0].contains("env's NVIDIA wheels") && looked[0].contains("ELF"),
            "{looked:?}"
        );
        assert!(
            looked[1].starts_with("libgreta-no-cublas.so.12"),
            "{looked:?}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with("no cuBLAS (libcublas) found for an in-run ceiling; looked in: "),
            "{text}"
        );
    }

    /// Compute capability 9.0 compiles for sm_90a first, then sm_90; every
    /// other device for its own architecture only (sm_100 included: the
    /// `a` code of a later architecture is not chosen here).
    #[test]
    fn a_9_0_device_compiles_for_sm_90a_then_sm_90() {
        let targets = |a: &str| -> Vec<String> {
            device_targets(&Arch::parse(a))
                .iter()
                .map(Arch::to_string)
                .collect()
        };
        assert_eq!(targets("sm_90"), ["sm_90a", "sm_90"]);
        for a in [
            "sm_75", "sm_80", "sm_86", "sm_89", "sm_100", "sm_120", "sm_90a", "sm_9",
        ] {
            assert_eq!(targets(a), [a], "{a}");
        }
    }

    /// The copy engine's limits on a tensor map, said before the driver is
    /// asked: the Hopper kernels' own maps pass, each broken one names why.
    #[test]
    fn a_tensor_map_the_copy_engine_cannot_take_is_refused_with_why() {
        let ok = TileMapSpec {
            cols: 4096,
            rows: 2048,
            box_cols: 64,
            box_rows: 128,
        };
        assert_eq!(tensor_map_refusal(DevPtr(0x7f00_0000_0000), &ok), None);
        for (base, spec, words) in [
            (0x7f00_0000_0008, ok, "not 16-byte aligned"),
            (
                0x1000,
                TileMapSpec { cols: 0, ..ok },
                "each dimension is 1 to 2^32 - 1",
            ),
            (
                0x1000,
                TileMapSpec {
                    rows: 1 << 32,
                    ..ok
                },
                "each dimension",
            ),
            (
                0x1000,
                TileMapSpec { cols: 4100, ..ok },
                "a multiple of 16 bytes",
            ),
            (
                0x1000,
                TileMapSpec {
                    cols: u64::MAX,
                    ..ok
                },
                "overflow",
            ),
            (
                0x1000,
                TileMapSpec { box_cols: 32, ..ok },
                "64 halves (the 128-byte swizzle)",
            ),
            (
                0x1000,
                TileMapSpec {
                    box_rows: 257,
                    ..ok
                },
                "by 1 to 256 rows",
            ),
        ] {
            let why = tensor_map_refusal(DevPtr(base), &spec).unwrap_or_default();
            assert!(why.contains(words), "{spec:?}: {why:?}");
        }
    }

    /// `$GRETA_CUDA_ARCH` picks one of the device's targets (sm_90 turns the
    /// sm_90a kernels off on an H200) and nothing else.
    #[test]
    fn an_asked_architecture_is_one_of_the_devices_targets() {
        let chosen = |a: &str, asked: Option<&str>| {
            chosen_targets(&Arch::parse(a), asked)
                .map(|v| v.iter().map(Arch::to_string).collect::<Vec<_>>())
        };
        assert_eq!(chosen("sm_90", None).unwrap(), ["sm_90a", "sm_90"]);
        assert_eq!(chosen("sm_90", Some("sm_90")).unwrap(), ["sm_90"]);
        assert_eq!(chosen("sm_90", Some("sm_90a")).unwrap(), ["sm_90a"]);
        assert_eq!(chosen("sm_80", Some("sm_80")).unwrap(), ["sm_80"]);
        for (a, asked) in [("sm_90", "sm_80"), ("sm_80", "sm_90a"), ("sm_90", "sm_90 ")] {
            let e = chosen(a, Some(asked)).unwrap_err();
            assert!(
                e.starts_with(&format!(
                    "GRETA_CUDA_ARCH={asked:?} is no target for this {a} device"
                )),
                "{e}"
            );
        }
        assert!(chosen("sm_90", Some("sm_100"))
            .unwrap_err()
            .ends_with("(it may be: sm_90a, sm_90)"));
    }
}
