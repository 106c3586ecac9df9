//! The HIP backend (AMD ROCm): libamdhip64 opened at run time.
//!
//! Why HIP beside Vulkan: on MI300X-class GPUs (gfx94x) Vulkan is known to
//! fail, and ROCm is what those machines run. Nothing of ROCm is needed to
//! build or start greta: the runtime library is found at run time by the
//! one library search ([`crate::locate`]: `GRETA_HIP_LIB`, the greta env's
//! own ROCm wheels, `ROCM_PATH`/`HIP_PATH`, `/opt/rocm*`, the loader's
//! places), the kernels
//! are compiled on the node by hiprtc for the device's gfx target
//! (`rtc`; hipcc only where hiprtc is missing), and everything above the
//! FFI is the shared [`crate::gpu`] layer that the CUDA twin also uses.

mod device;
mod ffi;
pub(crate) mod hipcc;
pub(crate) mod rtc;

use crate::gpu::arch::Arch;
use crate::gpu::calls::{self, launch_kernel};
use crate::gpu::compiler::{CompileError, Compiler, CompilerChoice, CompilerKind};
use crate::gpu::driver::{
    Api, DevPtr, Dims, Driver, EventH, EventState, FuncH, GpuDevice, GpuError, GraphH, ModuleH,
    StreamH,
};
use crate::gpu::GpuBackend;
use crate::locate::{self, Candidate, Loaded, SearchEnv, VendorLibrary};
use greta_vocab::EnvVars;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::sync::Arc;

/// The HIP backend over the shared GPU layer.
pub type HipBackend = GpuBackend<Hip>;

struct Inner {
    // Field order: the table's pointers die with the library.
    t: ffi::Table,
    /// Stream capture and graphs, where the runtime has them.
    graphs: Result<ffi::GraphTable, String>,
    /// Pinned host memory, where the runtime has it.
    host: Result<ffi::HostTable, String>,
    lib: libloading::Library,
    loaded: Loaded,
    runtime_version: i32,
}

/// An opened HIP runtime.
#[derive(Clone)]
pub struct Hip {
    inner: Arc<Inner>,
}

impl Hip {
    /// Opens the first libamdhip64 the library search finds on the live
    /// machine; no library (or a refused `GRETA_HIP_LIB`):
    /// [`GpuError::LibraryMissing`] naming every place.
    pub fn open() -> Result<Hip, GpuError> {
        let found = locate::find_library(VendorLibrary::Hip, &SearchEnv::live())
            .map_err(GpuError::LibraryMissing)?;
        Self::open_from(&found)
    }

    pub fn open_from(candidates: &[Candidate]) -> Result<Hip, GpuError> {
        let (lib, mut loaded) = locate::open_first("libamdhip64", candidates).map_err(|looked| {
            GpuError::LibraryMissing(format!(
                "no HIP runtime (libamdhip64) found; looked in: {}. Install a ROCm profile with `greta install` \
                 (its torch wheels carry libamdhip64 and hiprtc), install ROCm, or point {} at libamdhip64.so",
                looked.join("; "),
                EnvVars::GRETA_HIP_LIB
            ))
        })?;
        // SAFETY: a HIP runtime; the table's signatures are ROCm's.
        let t = unsafe { ffi::Table::load(&lib) }.map_err(|e| {
            GpuError::LibraryMissing(format!(
                "{} is not a usable HIP runtime (missing {e})",
                loaded.path.display()
            ))
        })?;
        if let Some(p) = locate::loaded_from(t.hipInit as *const c_void) {
            if p != loaded.path {
                loaded.why = format!("{}, as {}", loaded.why, loaded.path.display());
                loaded.path = p;
            }
        }
        let mut v = 0;
        // SAFETY: out-parameter call.
        unsafe { (t.hipRuntimeGetVersion)(&mut v) };
        // SAFETY: as for `Table`.
        let graphs = unsafe { ffi::GraphTable::load(&lib) };
        // SAFETY: as for `Table`.
        let host = unsafe { ffi::HostTable::load(&lib) };
        Ok(Hip {
            inner: Arc::new(Inner {
                t,
                graphs,
                host,
                lib,
                loaded,
                runtime_version: v,
            }),
        })
    }

    fn t(&self) -> &ffi::Table {
        &self.inner.t
    }

    fn graphs(&self) -> Result<&ffi::GraphTable, GpuError> {
        self.inner.graphs.as_ref().map_err(|e| {
            GpuError::Device(format!(
                "{} has no stream capture (missing {e})",
                self.inner.loaded.path.display()
            ))
        })
    }

    fn host(&self) -> Result<&ffi::HostTable, GpuError> {
        self.inner.host.as_ref().map_err(|e| {
            GpuError::Device(format!(
                "{} has no pinned host memory (missing {e})",
                self.inner.loaded.path.display()
            ))
        })
    }

    /// Runs `call` with an out-parameter for a new object and returns the
    /// object as the address the [`Driver`] handles carry.
    fn created(
        &self,
        call: &'static str,
        f: impl FnOnce(&mut ffi::Ptr) -> ffi::HipError,
    ) -> Result<usize, GpuError> {
        calls::created(|code| self.check(call, code), f)
    }

    fn check(&self, call: &'static str, code: ffi::HipError) -> Result<(), GpuError> {
        if code == ffi::SUCCESS {
            return Ok(());
        }
        let text = |p: *const c_char, fallback: &str| {
            if p.is_null() {
                fallback.to_string()
            } else {
                // SAFETY: HIP returns static NUL-terminated strings.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        // SAFETY: takes any code; returns a static string or NULL.
        let name = text(
            unsafe { (self.t().hipGetErrorName)(code) },
            "hipErrorUnknown",
        );
        // SAFETY: as above.
        let desc = text(
            unsafe { (self.t().hipGetErrorString)(code) },
            "unknown error",
        );
        Err(GpuError::Call {
            call,
            code,
            name,
            text: desc,
            hint: ffi::hint(code).to_string(),
            oom: code == ffi::ERROR_OUT_OF_MEMORY,
        })
    }

    fn attr(&self, a: i32, ordinal: usize) -> Result<i32, GpuError> {
        let mut v: c_int = 0;
        // SAFETY: out-parameter call on an ordinal below the device count.
        self.check("hipDeviceGetAttribute", unsafe {
            (self.t().hipDeviceGetAttribute)(&mut v, a, ordinal as c_int)
        })?;
        Ok(v)
    }

    /// `gcnArchName` from `hipGetDeviceProperties`, read defensively: the
    /// struct's layout differs between ROCm releases, so the runtime writes
    /// into a buffer larger than any of them and greta takes the first
    /// NUL-terminated `gfx…` string in it.
    fn arch_from_props(&self, ordinal: usize) -> Option<String> {
        let mut buf = vec![0u8; 16384];
        // SAFETY: the runtime writes at most sizeof(its hipDeviceProp_t) bytes.
        let r = unsafe { (self.t().hipGetDeviceProperties)(buf.as_mut_ptr(), ordinal as c_int) };
        if r != ffi::SUCCESS {
            return None;
        }
        find_gfx(&buf)
    }

    /// The hiprtc library for this runtime: `libhiprtc.so*` beside it
    /// (ROCm 6/7), the runtime itself (ROCm 5), then the loader's names.
    pub fn hiprtc(&self) -> Result<Loaded, Vec<String>> {
        let here = self.inner.loaded.path.parent().map(Path::to_path_buf);
        let mut looked = Vec::new();
        if let Some(dir) = &here {
            for f in locate::lib_files(dir, "libhiprtc.so") {
                if let Err(why) = locate::loadable(&f) {
                    looked.push(format!("{}: {why}", f.display()));
                    continue;
                }
                // SAFETY: opening a library to look a symbol up.
                match unsafe { libloading::Library::new(&f) } {
                    Ok(l) if crate::gpu::rtc::has_compiler(&l, &crate::gpu::rtc::HIPRTC) => {
                        return Ok(Loaded {
                            what: "hiprtc".into(),
                            path: f,
                            why: "beside libamdhip64 (ROCm 6 and later)".into(),
                        })
                    }
                    Ok(_) => looked.push(format!("{}: no hiprtcCompileProgram", f.display())),
                    Err(e) => looked.push(format!("{}: {e}", f.display())),
                }
            }
            if looked.is_empty() {
                looked.push(format!("{}/libhiprtc.so*: not there", dir.display()));
            }
        }
        if crate::gpu::rtc::has_compiler(&self.inner.lib, &crate::gpu::rtc::HIPRTC) {
            return Ok(Loaded {
                what: "hiprtc".into(),
                path: self.inner.loaded.path.clone(),
                why: "inside libamdhip64 (ROCm 5)".into(),
            });
        }
        looked.push(format!(
            "{}: no hiprtc symbols",
            self.inner.loaded.path.display()
        ));
        for n in ["libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so"] {
            // SAFETY: as above.
            match unsafe { libloading::Library::new(n) } {
                Ok(l) if crate::gpu::rtc::has_compiler(&l, &crate::gpu::rtc::HIPRTC) => {
                    return Ok(Loaded {
                        what: "hiprtc".into(),
                        path: n.into(),
                        why: "the dynamic loader's search path".into(),
                    })
                }
                Ok(_) => looked.push(format!("{n}: no hiprtcCompileProgram")),
                Err(_) => looked.push(format!("{n}: not found by the loader")),
            }
        }
        Err(looked)
    }
}

/// The first NUL-terminated ASCII string starting `gfx` and a digit.
fn find_gfx(buf: &[u8]) -> Option<String> {
    let mut i = 0;
    while i + 4 < buf.len() {
        let starts =
            (i == 0 || buf[i - 1] == 0) && &buf[i..i + 3] == b"gfx" && buf[i + 3].is_ascii_digit();
        if starts {
            let end = buf[i..].iter().position(|&b| b == 0)? + i;
            let s = &buf[i..end];
            if s.len() < 64 && s.iter().all(|b| b.is_ascii_graphic()) {
                return Some(String::from_utf8_lossy(s).into_owned());
            }
        }
        i += 1;
    }
    None
}

impl Driver for Hip {
    fn api(&self) -> Api {
        Api::Hip
    }

    fn library(&self) -> &Loaded {
        &self.inner.loaded
    }

    fn device_count(&self) -> Result<usize, GpuError> {
        // SAFETY: plain calls with out-parameters.
        let init = unsafe { (self.t().hipInit)(0) };
        let mut n: c_int = 0;
        let e = if init == ffi::SUCCESS {
            // SAFETY: as above.
            unsafe { (self.t().hipGetDeviceCount)(&mut n) }
        } else {
            init
        };
        // Without a usable GPU, ROCm answers hipErrorNoDevice, or (ROCm 5.2
        // with no KFD at all) hipErrorInvalidDevice from hipInit.
        let no_device = e == ffi::ERROR_NO_DEVICE || e == ffi::ERROR_INVALID_DEVICE;
        if no_device || (e == ffi::SUCCESS && n <= 0) {
            let detail = if e == ffi::SUCCESS {
                "hipGetDeviceCount returned 0 devices".to_string()
            } else {
                let name = match self.check("hip", e) {
                    Err(GpuError::Call { name, .. }) => name,
                    _ => String::new(),
                };
                format!(
                    "{} returned {name} ({e})",
                    if init == ffi::SUCCESS {
                        "hipGetDeviceCount"
                    } else {
                        "hipInit"
                    }
                )
            };
            return Err(GpuError::NoDevice {
                api: "HIP",
                detail: format!("{detail} (runtime {})", self.inner.loaded),
                why: self.why_no_device(),
            });
        }
        self.check(
            if init == ffi::SUCCESS {
                "hipGetDeviceCount"
            } else {
                "hipInit"
            },
            e,
        )?;
        Ok(n as usize)
    }

    fn device(&self, ordinal: usize) -> Result<GpuDevice, GpuError> {
        let o = ordinal as c_int;
        let name = calls::out_text::<256, _>(|p, len| {
            // SAFETY: the runtime writes at most `len` bytes, NUL included.
            let r = unsafe { (self.t().hipDeviceGetName)(p, len, o) };
            self.check("hipDeviceGetName", r)
        })?
        .trim()
        .to_string();
        let pci_bus_id = calls::out_text::<64, _>(|p, len| {
            // SAFETY: as above.
            match unsafe { (self.t().hipDeviceGetPCIBusId)(p, len, o) } {
                ffi::SUCCESS => Ok(()),
                _ => Err(()),
            }
        })
        .map(|b| b.to_lowercase())
        .unwrap_or_default();
        let (arch, arch_source) = match device::gfx_from_kfd(Path::new("/"), &pci_bus_id) {
            Some(g) => (Arch::Gfx(g), format!("the KFD topology node at {pci_bus_id}")),
            None => match self.arch_from_props(ordinal) {
                Some(a) => (
                    Arch::parse(device::processor_of(&a)),
                    format!("gcnArchName {a}"),
                ),
                None => {
                    return Err(GpuError::Device(format!(
                        "device {ordinal} ({name}): no gfx target from KFD (bus {pci_bus_id:?}) or gcnArchName"
                    )))
                }
            },
        };
        let mut total: usize = 0;
        // SAFETY: out-parameter call.
        self.check("hipDeviceTotalMem", unsafe {
            (self.t().hipDeviceTotalMem)(&mut total, o)
        })?;
        let warp = self.attr(ffi::attr::WARP_SIZE, ordinal)?;
        if warp != 32 && warp != 64 {
            return Err(GpuError::Device(format!(
                "device {ordinal} ({name}) reports a warp size of {warp}: this libamdhip64 numbers its attributes \
                 differently from ROCm 5-7 ({})",
                self.inner.loaded.path.display()
            )));
        }
        let mut dv = 0;
        // SAFETY: out-parameter call.
        unsafe { (self.t().hipDriverGetVersion)(&mut dv) };
        let grid = |i| {
            self.attr(ffi::attr::MAX_GRID_DIM_X + i, ordinal)
                .map(|v| v as u32)
        };
        Ok(GpuDevice {
            api: Api::Hip,
            ordinal,
            name,
            arch,
            arch_source,
            compute_units: self.attr(ffi::attr::MULTIPROCESSOR_COUNT, ordinal)? as u32,
            total_memory_bytes: total as u64,
            warp_size: warp as u32,
            max_shared_memory_per_block: self
                .attr(ffi::attr::MAX_SHARED_MEMORY_PER_BLOCK, ordinal)?
                as u32,
            max_threads_per_block: self.attr(ffi::attr::MAX_THREADS_PER_BLOCK, ordinal)? as u32,
            max_grid: [grid(0)?, grid(1)?, grid(2)?],
            integrated: self.attr(ffi::attr::INTEGRATED, ordinal).unwrap_or(0) != 0,
            pci_vendor_id: calls::pci_id(&pci_bus_id, "vendor"),
            pci_device_id: calls::pci_id(&pci_bus_id, "device"),
            pci_bus_id,
            uuid: None,
            runtime_version: device::version_string(self.inner.runtime_version),
            driver_version: device::version_string(dv),
            driver_version_raw: dv as u32,
            kernels_for: None,
            hopper_kernels: false,
        })
    }

    fn activate(&self, ordinal: usize) -> Result<(), GpuError> {
        // SAFETY: plain call with an ordinal below the device count.
        self.check("hipSetDevice", unsafe {
            (self.t().hipSetDevice)(ordinal as c_int)
        })
    }

    fn malloc(&self, bytes: usize) -> Result<DevPtr, GpuError> {
        let mut p: ffi::Ptr = std::ptr::null_mut();
        // SAFETY: out-parameter call.
        self.check("hipMalloc", unsafe { (self.t().hipMalloc)(&mut p, bytes) })?;
        Ok(DevPtr(p as u64))
    }

    unsafe fn free(&self, p: DevPtr) {
        // SAFETY: the caller passes a pointer from `malloc`, freed once.
        unsafe { (self.t().hipFree)(p.0 as ffi::Ptr) };
    }

    fn host_alloc(&self, bytes: usize) -> Result<*mut u8, GpuError> {
        let h = self.host()?;
        let mut p: ffi::Ptr = std::ptr::null_mut();
        // SAFETY: out-parameter call.
        self.check("hipHostMalloc", unsafe {
            (h.hipHostMalloc)(&mut p, bytes, ffi::HOST_MALLOC_DEFAULT)
        })?;
        Ok(p as *mut u8)
    }

    unsafe fn host_free(&self, p: *mut u8) {
        if let Ok(h) = self.host() {
            // SAFETY: the caller passes a pointer from `host_alloc`, idle, freed once.
            unsafe { (h.hipHostFree)(p as ffi::Ptr) };
        }
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
            (self.t().hipMemcpyHtoDAsync)(dst.0 as ffi::Ptr, src as ffi::Ptr, n, s.0 as ffi::Ptr)
        };
        self.check("hipMemcpyHtoDAsync", r)
    }

    unsafe fn dtoh_async(
        &self,
        dst: *mut u8,
        src: DevPtr,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller keeps room for `n` bytes at `dst` until the stream passes the copy.
        let r = unsafe {
            (self.t().hipMemcpyDtoHAsync)(dst as ffi::Ptr, src.0 as ffi::Ptr, n, s.0 as ffi::Ptr)
        };
        self.check("hipMemcpyDtoHAsync", r)
    }

    unsafe fn dtod_async(
        &self,
        dst: DevPtr,
        src: DevPtr,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller passes live allocations of at least `n` bytes.
        let r = unsafe {
            (self.t().hipMemcpyDtoDAsync)(dst.0 as ffi::Ptr, src.0 as ffi::Ptr, n, s.0 as ffi::Ptr)
        };
        self.check("hipMemcpyDtoDAsync", r)
    }

    unsafe fn memset_async(
        &self,
        dst: DevPtr,
        value: u8,
        n: usize,
        s: StreamH,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller passes a live allocation of at least `n` bytes.
        let r = unsafe {
            (self.t().hipMemsetAsync)(dst.0 as ffi::Ptr, c_int::from(value), n, s.0 as ffi::Ptr)
        };
        self.check("hipMemsetAsync", r)
    }

    fn stream_create(&self) -> Result<StreamH, GpuError> {
        // SAFETY: out-parameter call.
        self.created("hipStreamCreate", |s| unsafe {
            (self.t().hipStreamCreate)(s)
        })
        .map(StreamH)
    }

    unsafe fn stream_destroy(&self, s: StreamH) {
        // SAFETY: the caller passes a live stream with no work pending, destroyed once.
        unsafe { (self.t().hipStreamDestroy)(s.0 as ffi::Ptr) };
    }

    fn event_create(&self) -> Result<EventH, GpuError> {
        // SAFETY: out-parameter call.
        self.created("hipEventCreate", |e| unsafe {
            (self.t().hipEventCreate)(e)
        })
        .map(EventH)
    }

    unsafe fn event_destroy(&self, e: EventH) {
        // SAFETY: the caller passes a live event, destroyed once.
        unsafe { (self.t().hipEventDestroy)(e.0 as ffi::Ptr) };
    }

    fn event_record(&self, e: EventH, s: StreamH) -> Result<(), GpuError> {
        // SAFETY: live handles.
        self.check("hipEventRecord", unsafe {
            (self.t().hipEventRecord)(e.0 as ffi::Ptr, s.0 as ffi::Ptr)
        })
    }

    fn event_query(&self, e: EventH) -> Result<EventState, GpuError> {
        // SAFETY: live handle.
        match unsafe { (self.t().hipEventQuery)(e.0 as ffi::Ptr) } {
            ffi::SUCCESS => Ok(EventState::Done),
            ffi::ERROR_NOT_READY => Ok(EventState::Pending),
            other => self.check("hipEventQuery", other).map(|_| EventState::Done),
        }
    }

    fn event_elapsed_ms(&self, start: EventH, end: EventH) -> Result<f32, GpuError> {
        let mut ms = 0f32;
        // SAFETY: both events recorded and complete.
        self.check("hipEventElapsedTime", unsafe {
            (self.t().hipEventElapsedTime)(&mut ms, start.0 as ffi::Ptr, end.0 as ffi::Ptr)
        })?;
        Ok(ms)
    }

    fn module_load(&self, image: &[u8]) -> Result<ModuleH, GpuError> {
        if image.is_empty() {
            return Err(GpuError::Invalid("empty HIP code object".into()));
        }
        // SAFETY: the runtime copies what it needs from `image` before returning.
        self.created("hipModuleLoadData", |m| unsafe {
            (self.t().hipModuleLoadData)(m, image.as_ptr() as *const c_void)
        })
        .map(ModuleH)
    }

    unsafe fn module_unload(&self, m: ModuleH) {
        // SAFETY: the caller passes a loaded module, unloaded once.
        unsafe { (self.t().hipModuleUnload)(m.0 as ffi::Ptr) };
    }

    fn module_function(&self, m: ModuleH, name: &CStr) -> Result<FuncH, GpuError> {
        // SAFETY: live module, NUL-terminated name.
        self.created("hipModuleGetFunction", |f| unsafe {
            (self.t().hipModuleGetFunction)(f, m.0 as ffi::Ptr, name.as_ptr())
        })
        .map(FuncH)
    }

    fn capture_begin(&self, s: StreamH) -> Result<(), GpuError> {
        let g = self.graphs()?;
        // SAFETY: a live stream of this runtime.
        let r = unsafe { (g.hipStreamBeginCapture)(s.0 as ffi::Ptr, ffi::CAPTURE_THREAD_LOCAL) };
        self.check("hipStreamBeginCapture", r)
    }

    fn capture_end(&self, s: StreamH) -> Result<GraphH, GpuError> {
        let g = self.graphs()?;
        let mut graph: ffi::Ptr = std::ptr::null_mut();
        // SAFETY: a stream this thread is capturing; out-parameter.
        let r = unsafe { (g.hipStreamEndCapture)(s.0 as ffi::Ptr, &mut graph) };
        self.check("hipStreamEndCapture", r)?;
        let mut exec: ffi::Ptr = std::ptr::null_mut();
        // SAFETY: the graph just captured; no error-log buffer.
        let r = unsafe {
            (g.hipGraphInstantiate)(
                &mut exec,
                graph,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        // The template is not needed once instantiated (or if that failed).
        // SAFETY: created by the capture above, destroyed once.
        unsafe { (g.hipGraphDestroy)(graph) };
        self.check("hipGraphInstantiate", r)?;
        Ok(GraphH(exec as usize))
    }

    fn graph_launch(&self, e: GraphH, s: StreamH) -> Result<(), GpuError> {
        let g = self.graphs()?;
        // SAFETY: an instantiated graph and a live stream of this runtime.
        let r = unsafe { (g.hipGraphLaunch)(e.0 as ffi::Ptr, s.0 as ffi::Ptr) };
        self.check("hipGraphLaunch", r)
    }

    unsafe fn graph_destroy(&self, e: GraphH) {
        if let Ok(g) = self.graphs() {
            // SAFETY: the caller's contract (instantiated, idle, once).
            unsafe { (g.hipGraphExecDestroy)(e.0 as ffi::Ptr) };
        }
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
                self.t().hipModuleLaunchKernel,
                f.0 as ffi::Ptr,
                dims,
                s.0 as ffi::Ptr,
                params
            )
        };
        self.check("hipModuleLaunchKernel", r)
    }

    fn compiler_for(&self, dev: &GpuDevice) -> Result<Box<dyn Compiler>, GpuError> {
        compiler_for_target(self, dev.arch.clone()).map_err(GpuError::Compile)
    }

    fn blas_candidates(&self) -> Vec<Candidate> {
        blas_candidates(&SearchEnv::live())
    }

    fn why_no_device(&self) -> String {
        device::diagnose_no_device(Path::new("/"), &device::env_snapshot())
    }
}

/// Where to look for rocBLAS: ROCm torch's `torch/lib` in the env, then
/// the system's ROCm, then the loader's names.
pub(crate) fn blas_candidates(env: &SearchEnv) -> Vec<Candidate> {
    locate::rocm_candidates(
        env,
        "librocblas.so",
        &[
            "librocblas.so.5",
            "librocblas.so.4",
            "librocblas.so.0",
            "librocblas.so",
        ],
    )
}

/// hiprtc for `target` (`gfx90a`), or hipcc where hiprtc is missing.
/// `target` is an [`Arch`] or text (`greta __gpu build-kernels --target`
/// passes its flag as given): text that is not a gfx name still reaches the
/// compiler unchanged, which reports it as it always has.
pub fn compiler_for_target(
    hip: &Hip,
    target: impl Into<Arch>,
) -> Result<Box<dyn Compiler>, CompileError> {
    let target: Arch = target.into();
    let runtime = device::version_string(hip.inner.runtime_version);
    match hip.hiprtc() {
        Ok(library) => {
            // SAFETY: opening the library hiprtc() just validated.
            let version = unsafe { libloading::Library::new(&library.path) }
                .ok()
                .and_then(|l| crate::gpu::rtc::version(&l, &crate::gpu::rtc::HIPRTC))
                .unwrap_or_else(|| "?".into());
            Ok(Box::new(rtc::Hiprtc(CompilerChoice {
                kind: CompilerKind::Hiprtc,
                library,
                version: format!("{version} (HIP runtime {runtime})"),
                options: vec![format!("--offload-arch={target}"), "-O3".into()],
                target,
            })))
        }
        Err(looked) => match hipcc::choice(target) {
            Ok(choice) => Ok(Box::new(hipcc::Hipcc(choice))),
            Err(e) => Err(CompileError::Unavailable(format!(
                "no hiprtc ({}), and no hipcc to fall back on: {e}",
                looked.join("; ")
            ))),
        },
    }
}

#[cfg(test)]
mod device_tests;
#[cfg(test)]
mod kernel_tests;
#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceiling::CeilingError;
    use crate::gpu::vendor;

    #[test]
    fn gcn_arch_names_are_found_in_an_unknown_layout() {
        let mut buf = vec![0u8; 1024];
        buf[..12].copy_from_slice(b"AMD Instinct");
        buf[396..396 + 22].copy_from_slice(b"gfx90a:sramecc+:xnack-");
        assert_eq!(find_gfx(&buf).as_deref(), Some("gfx90a:sramecc+:xnack-"));
        assert_eq!(find_gfx(&[0u8; 64]), None);
        // "gfx" inside another string is not a target.
        let mut b2 = vec![0u8; 64];
        b2[..9].copy_from_slice(b"xxgfx90a\0");
        assert_eq!(find_gfx(&b2), None);
    }

    #[test]
    fn a_fifo_or_missing_lib_is_listed_and_nothing_blocks() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("lib/python3.12/site-packages/torch/lib");
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("librocblas.so");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: plain mkfifo on a path in our temp dir.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let env = SearchEnv {
            env_roots: vec![t.path().to_path_buf()],
            ..SearchEnv::live()
        };
        let cands = blas_candidates(&env);
        assert_eq!(cands[0].path, fifo, "{cands:?}");
        let e = vendor::open(Api::Hip, &cands[..1], StreamH(0))
            .err()
            .unwrap();
        let CeilingError::NotFound { looked, .. } = e else {
            panic!()
        };
        assert!(
            looked[0].contains("is a FIFO, not a library file"),
            "{looked:?}"
        );
        // An env without the library: its folder is still named as looked at.
        std::fs::remove_file(&fifo).unwrap();
        let cands = blas_candidates(&env);
        let e = vendor::open(Api::Hip, &cands[..1], StreamH(0))
            .err()
            .unwrap();
        let CeilingError::NotFound { looked, .. } = e else {
            panic!()
        };
        assert!(
            looked[0].starts_with(&fifo.display().to_string()),
            "{looked:?}"
        );
        assert!(looked[0].ends_with("not there"), "{looked:?}");
    }
}
