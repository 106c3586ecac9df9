//! The backend written once over [`Driver`]: HIP and CUDA differ only below it.
//!
//! Opening a device compiles (or takes from the cache) greta's kernels for
//! its target and loads them; each run uploads the buffers, enqueues one
//! launch per repeat between two events, polls the last event until the
//! run's deadline (`hipEventSynchronize`/`cuEventSynchronize` would block
//! forever on a hung GPU), reads the outputs back and reports per-repeat
//! kernel times from the events. A timeout marks the device lost: nothing
//! more is submitted, and its objects are leaked rather than destroyed
//! (destroying them would wait on the hung work). The device records are
//! [`super::devices`]'s, one run's buffers, events and waits
//! [`super::execute`]'s.

use super::compile::{KernelCache, KernelSources};
use super::devices::device_info;
use super::driver::{Api, DevPtr, Dims, Driver, FuncH, GpuDevice, GpuError, ModuleH, StreamH};
use super::execute::{execute, launch_on, Launches};
use super::launch::{self, KernelArg};
use super::vendor::measure::{self, StressGemm};
use super::vendor::VendorBlas;
use crate::backend::Backend;
use crate::ceiling::{Ceiling, CeilingError};
use crate::error::RuntimeError;
use crate::graph::{GraphJob, GraphStats};
use crate::info::{DeviceInfo, DeviceSelect};
use crate::job::{Job, RunStats};
use crate::stress::{StressReport, StressRequest};
use crate::tuning::Tuning;
use greta_kernels::Op;
use std::collections::HashMap;
use std::ffi::CString;
use std::time::Duration;

impl From<GpuError> for RuntimeError {
    fn from(e: GpuError) -> RuntimeError {
        match e {
            GpuError::LibraryMissing(m) => RuntimeError::LoaderMissing(m),
            GpuError::NoDevice { .. } => RuntimeError::NoDevice(e.to_string()),
            GpuError::Timeout { what, limit } => RuntimeError::Timeout {
                what,
                timeout: limit,
                waited: limit,
            },
            GpuError::Call { oom: true, .. } => RuntimeError::OutOfMemory(e.to_string()),
            GpuError::Call { call, .. } => {
                let text = e.to_string();
                let detail = text
                    .strip_prefix(&format!("{call} failed: "))
                    .unwrap_or(&text)
                    .to_string();
                RuntimeError::api(call, detail)
            }
            GpuError::Compile(c) => {
                RuntimeError::Unsupported(format!("building the GPU kernels: {c}"))
            }
            GpuError::Device(m) => RuntimeError::Unsupported(m),
            GpuError::Invalid(m) => RuntimeError::BadInput(m),
        }
    }
}

/// One open GPU with greta's kernels loaded, over any [`Driver`].
pub struct GpuBackend<D: Driver> {
    driver: D,
    info: DeviceInfo,
    dev: GpuDevice,
    module: Option<ModuleH>,
    functions: HashMap<String, FuncH>,
    stream: Option<StreamH>,
    lost: Option<String>,
    /// The vendor BLAS, opened on the first ceiling or stress run.
    vendor: Option<Result<VendorBlas, CeilingError>>,
    /// The device's tuning cache (`greta smoke --tune`), read at open;
    /// `None` when off (`GRETA_TUNING_CACHE=off`) or empty.
    tuned: Option<crate::tuning_cache::TuningCache>,
    /// Kernels whose dynamic shared-memory limit was raised for a launch.
    shared_raised: HashMap<String, u32>,
    /// Set by [`Backend::keep_scratch`]: a run's scratch goes to `kept`.
    keep_scratch: bool,
    /// Scratch kept allocated (a memtest's tested slices), with its bytes.
    kept: Vec<(super::driver::DevPtr, usize)>,
    /// The work the GPU has just done: what warm-up a run still owes.
    warmth: crate::warmth::Warmth,
}

impl<D: Driver + 'static> GpuBackend<D> {
    /// Opens the device `select` names as a boxed [`Backend`], its kernels
    /// from the default kernel cache (compiled for the device where missing):
    /// what `--backend hip` and `--backend cuda` open.
    pub fn open_boxed(driver: D, select: &DeviceSelect) -> Result<Box<dyn Backend>, RuntimeError> {
        let cache = KernelCache::new(KernelCache::default_dir().map_err(RuntimeError::BadInput)?);
        let backend = Self::open_with(driver, select, &cache, &KernelSources::bundled())?;
        Ok(Box::new(backend))
    }
}

impl<D: Driver> GpuBackend<D> {
    /// Opens the device `select` names, with kernels from `cache`.
    pub fn open_with(
        driver: D,
        select: &DeviceSelect,
        cache: &KernelCache,
        sources: &KernelSources,
    ) -> Result<GpuBackend<D>, GpuError> {
        let api = driver.api();
        let n = driver.device_count()?;
        let devices: Vec<GpuDevice> = (0..n).map(|i| driver.device(i)).collect::<Result<_, _>>()?;
        let mut dev = match select {
            DeviceSelect::Auto => devices.into_iter().next(),
            DeviceSelect::Index(i) => devices.into_iter().nth(*i),
            DeviceSelect::Cpu => {
                return Err(GpuError::NoDevice {
                    api: api.label(),
                    detail: format!("{} has no CPU devices", api.label()),
                    why: "use the Vulkan backend (lavapipe) for a CPU device".into(),
                })
            }
            DeviceSelect::Name(s) => {
                let s = s.to_lowercase();
                devices.into_iter().find(|d| {
                    d.name.to_lowercase().contains(&s)
                        || d.arch.to_string().to_lowercase().contains(&s)
                })
            }
        }
        .ok_or_else(|| GpuError::NoDevice {
            api: api.label(),
            detail: format!("no {} device matches {select:?}", api.label()),
            why: format!("{n} {} device(s) exist", api.label()),
        })?;
        driver.activate(dev.ordinal)?;
        let (compiler, object) =
            super::compile::first_that_builds(driver.compilers_for(&dev)?, |c| {
                cache.get_or_build(c, sources, api)
            })?;
        let image = read_capped(&object.path)?;
        let module = driver.module_load(&image)?;
        // What the plans key on where targets differ: the sm_90a build's
        // Hopper GEMMs, used only when every one of them is in the module
        // (an NVRTC that defined no __CUDA_ARCH_FEAT_SM90_ALL would build
        // sm_90a code without them).
        let target = compiler.choice().target.clone();
        dev.hopper_kernels = api == Api::Cuda
            && target.to_string() == "sm_90a"
            && super::hopper::all_symbols().iter().all(|s| {
                CString::new(s.as_str()).is_ok_and(|c| driver.module_function(module, &c).is_ok())
            });
        if api == Api::Cuda && target.to_string() == "sm_90a" && !dev.hopper_kernels {
            tracing::warn!(
                "the sm_90a build lacks the Hopper GEMM kernels; gemm_f16 and linear_f16 run their mma.sync kernels"
            );
        }
        dev.kernels_for = Some(target);
        let stream = match driver.stream_create() {
            Ok(s) => s,
            Err(e) => {
                // SAFETY: just loaded, nothing runs from it.
                unsafe { driver.module_unload(module) };
                return Err(e);
            }
        };
        let info = device_info(&driver, &dev, Some(compiler.choice()), Some(&object));
        let tuned = if crate::tuning_cache::disabled_by_env() {
            None
        } else {
            Some(crate::tuning_cache::TuningCache::open(&info, None)).filter(|c| !c.is_empty())
        };
        Ok(GpuBackend {
            driver,
            info,
            dev,
            module: Some(module),
            functions: HashMap::new(),
            stream: Some(stream),
            lost: None,
            vendor: None,
            tuned,
            shared_raised: HashMap::new(),
            keep_scratch: false,
            kept: Vec::new(),
            warmth: Default::default(),
        })
    }

    fn function(&mut self, name: &str) -> Result<FuncH, GpuError> {
        if let Some(&f) = self.functions.get(name) {
            return Ok(f);
        }
        let module = self
            .module
            .ok_or_else(|| GpuError::Device("device is lost".into()))?;
        let c = CString::new(name)
            .map_err(|_| GpuError::Invalid(format!("kernel name {name:?} contains NUL")))?;
        let f = self.driver.module_function(module, &c).map_err(|e| {
            GpuError::Invalid(format!(
                "kernel `{name}` is not in the loaded code object: {e}"
            ))
        })?;
        self.functions.insert(name.to_string(), f);
        Ok(f)
    }

    /// Above the default 48 KiB a kernel must be allowed its dynamic shared
    /// memory first (once per kernel and size).
    fn raise_shared(&mut self, symbol: &str, f: FuncH, bytes: u32) -> Result<(), GpuError> {
        if bytes > 0 && self.shared_raised.get(symbol) != Some(&bytes) {
            self.driver.set_max_dynamic_shared(f, bytes)?;
            self.shared_raised.insert(symbol.to_string(), bytes);
        }
        Ok(())
    }

    fn run_inner(&mut self, job: Job) -> Result<RunStats, GpuError> {
        // Asked for: exactly that (empty: the built-in launch); else the
        // cached winner of `greta smoke --tune`, if it still plans here.
        let (plan, ran) = super::tune::launch_for(
            job.opts.tuning.as_ref(),
            self.tuned.as_ref(),
            job.op,
            &self.dev,
        )
        .map_err(GpuError::Invalid)?;
        let function = self.function(&plan.symbol)?;
        self.raise_shared(&plan.symbol, function, plan.dims.shared_bytes)?;
        let hold_fn = if plan.hold_cycles > 0 {
            Some(self.function(launch::HOLD_SYMBOL)?)
        } else {
            None
        };
        let later = plan
            .then
            .iter()
            .map(|(symbol, dims)| Ok((self.function(symbol)?, *dims)))
            .collect::<Result<Vec<_>, GpuError>>()?;
        let kernel = plan.symbol.trim_start_matches("greta_").to_string();
        let driver = &self.driver;
        let scalars = plan.scalars.clone();
        let maps = plan.maps.clone();
        let batch = plan.batch.max(1);
        let mut dispatch = |stream: StreamH, bufs: &[DevPtr]| {
            let args = launch::arguments(driver, bufs, &maps, &scalars)?;
            for _ in 0..batch {
                launch_on(driver, function, plan.dims, stream, &args)?;
                // Later passes, in stream order behind the first.
                for &(f, dims) in &later {
                    launch_on(driver, f, dims, stream, &args)?;
                }
            }
            Ok(())
        };
        let hold_args = [KernelArg::U32(plan.hold_cycles)];
        let mut hold = |stream: StreamH| match hold_fn {
            Some(f) => launch_on(
                driver,
                f,
                Dims::new([1, 1, 1], [1, 1, 1]),
                stream,
                &hold_args,
            ),
            None => Ok(()),
        };
        execute(
            &self.driver,
            self.stream,
            &self.dev,
            &mut self.warmth,
            job,
            Launches {
                kernel,
                batch,
                kept: self.keep_scratch.then_some(&mut self.kept),
                aux: &plan.aux,
            },
            &mut hold,
            &mut dispatch,
        )
        .map(|stats| RunStats {
            tuning: ran,
            ..stats
        })
    }

    /// The vendor BLAS, opened on first use (from the active greta env,
    /// then the system's CUDA/ROCm), its handle on this backend's stream.
    fn vendor(&mut self) -> &Result<VendorBlas, CeilingError> {
        let (api, stream, ordinal) = (self.dev.api, self.stream, self.dev.ordinal);
        let driver = &self.driver;
        self.vendor.get_or_insert_with(|| {
            let Some(stream) = stream else {
                return Err(CeilingError::Device("device is lost".into()));
            };
            driver
                .activate(ordinal)
                .map_err(|e| CeilingError::Device(e.to_string()))?;
            super::vendor::open(api, &driver.blas_candidates(), stream)
        })
    }

    fn ceiling_inner(
        &mut self,
        op: &Op,
        timeout: Duration,
    ) -> Option<Result<Ceiling, CeilingError>> {
        if let Some(why) = &self.lost {
            return Some(Err(CeilingError::Device(format!("device lost: {why}"))));
        }
        let stream = self.stream?;
        let (kind, shape) = match measure::reference_for(op)? {
            measure::Reference::Copy => {
                return Some(measure::copy_ceiling(
                    &self.driver,
                    stream,
                    &self.dev,
                    &mut self.warmth,
                    op,
                    timeout,
                ))
            }
            measure::Reference::Gemm(kind, shape) => (kind, shape),
        };
        self.vendor();
        let blas = match self.vendor.as_ref()? {
            Ok(b) => b,
            Err(e) => return Some(Err(e.clone())),
        };
        Some(measure::gemm_ceiling(
            &self.driver,
            stream,
            &self.dev,
            &mut self.warmth,
            blas,
            kind,
            shape,
            timeout,
        ))
    }

    fn stress_inner(&mut self, req: &StressRequest) -> Result<StressReport, GpuError> {
        if let Some(why) = &self.lost {
            return Err(GpuError::Device(format!("device lost: {why}")));
        }
        let stream = self
            .stream
            .ok_or_else(|| GpuError::Device("device is lost".into()))?;
        let op = Op::GemmF16 {
            m: req.m as usize,
            n: req.n as usize,
            k: req.k as usize,
        };
        let plan = launch::plan(&op, &self.dev);
        let own = match self.vendor() {
            Ok(_) => None,
            Err(e) => Some(format!("greta's own gemm_f16 ran: {e}")),
        };
        let function = match own {
            Some(_) => {
                let f = self.function(&plan.symbol)?;
                self.raise_shared(&plan.symbol, f, plan.dims.shared_bytes)?;
                Some(f)
            }
            None => None,
        };
        let driver = &self.driver;
        let mut own_launch = |s: StreamH, bufs: &[DevPtr]| -> Result<(), GpuError> {
            let Some(f) = function else {
                return Err(GpuError::Invalid("no gemm_f16 kernel".into()));
            };
            let args = launch::arguments(driver, bufs, &plan.maps, &plan.scalars)?;
            launch_on(driver, f, plan.dims, s, &args)
        };
        let gemm = match (own, self.vendor.as_ref()) {
            (None, Some(Ok(b))) => StressGemm::Vendor(b),
            (note, _) => StressGemm::Own {
                note: note.unwrap_or_default(),
                launch: &mut own_launch,
            },
        };
        measure::stress(driver, stream, &self.dev, &mut self.warmth, gemm, req)
    }

    /// Checks what every run checks before touching the device: a tuning
    /// asked for must be one of the op's on this device
    /// ([`super::tune::check`]).
    fn preflight(&self, job: &Job) -> Result<(), RuntimeError> {
        if let Some(t) = job.opts.tuning.as_ref() {
            super::tune::check(job.op, &self.dev, t).map_err(RuntimeError::BadInput)?;
        }
        crate::backend::preflight(self, job)
    }

    /// Maps a failure to the runtime's error, marking the device lost on a timeout.
    fn fail(&mut self, e: GpuError) -> RuntimeError {
        if matches!(e, GpuError::Timeout { .. }) {
            self.lost = Some(e.to_string());
        }
        e.into()
    }
}

fn read_capped(path: &std::path::Path) -> Result<Vec<u8>, GpuError> {
    use std::io::Read;
    let f = std::fs::File::open(path)
        .map_err(|e| GpuError::Device(format!("reading code object {}: {e}", path.display())))?;
    let mut v = Vec::new();
    f.take(512 << 20)
        .read_to_end(&mut v)
        .map_err(|e| GpuError::Device(format!("reading code object {}: {e}", path.display())))?;
    Ok(v)
}

impl<D: Driver> Backend for GpuBackend<D> {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn supports(&self, op: &Op) -> Result<(), String> {
        op.validate().map_err(|e| e.to_string())?;
        if let Some(r) = crate::backend::composite_supported(self, op) {
            return r;
        }
        let bytes: u64 = op
            .inputs()
            .iter()
            .chain(op.outputs().iter())
            .map(|s| (s.len as u64).saturating_mul(s.dtype.size() as u64))
            .fold(0u64, u64::saturating_add);
        if bytes > self.dev.total_memory_bytes {
            return Err(format!(
                "{op} needs {bytes} bytes of buffers; {} has {} bytes",
                self.dev.name, self.dev.total_memory_bytes
            ));
        }
        Ok(())
    }

    fn run(&mut self, job: Job<'_>) -> Result<RunStats, RuntimeError> {
        self.preflight(&job)?;
        if job.op.is_composite() {
            let cached = crate::backend::cached_composite_tuning(
                self.tuned.as_ref(),
                crate::tuning_cache::KeySpace::Gpu,
                job.op,
            );
            return crate::backend::run_composite(self, job, cached);
        }
        self.run_inner(job).map_err(|e| self.fail(e))
    }

    fn run_graph(&mut self, job: GraphJob<'_>) -> Result<GraphStats, RuntimeError> {
        crate::backend::graph_preflight(self, &job)?;
        let mut steps = Vec::with_capacity(job.graph.steps.len());
        for (i, st) in job.graph.steps.iter().enumerate() {
            // What a run of the step's op gets: the tuning asked for, else
            // the tuning cache's winner for its class, else the built-in
            // launch (as Vulkan's graph plans its steps).
            let plan =
                super::tune::launch_for(job.tuning(i), self.tuned.as_ref(), &st.op, &self.dev)
                    .map_err(RuntimeError::BadInput)?
                    .0;
            if plan.batch > 1 || plan.hold_cycles > 0 {
                return Err(RuntimeError::Unsupported(format!(
                    "{} is timed per dispatch; it has no place in a graph",
                    st.op
                )));
            }
            let function = self.function(&plan.symbol).map_err(|e| self.fail(e))?;
            self.raise_shared(&plan.symbol, function, plan.dims.shared_bytes)
                .map_err(|e| self.fail(e))?;
            let mut then = Vec::with_capacity(plan.then.len());
            for (symbol, dims) in &plan.then {
                then.push((self.function(symbol).map_err(|e| self.fail(e))?, *dims));
            }
            let mut scratch = Vec::new();
            for s in st.op.scratch() {
                scratch.push(s.len.checked_mul(s.dtype.size()).ok_or_else(|| {
                    RuntimeError::BadInput(format!("{}: scratch {} overflows", st.op, s.name))
                })?);
            }
            steps.push(super::graph::StepLaunch {
                kernel: plan.symbol.trim_start_matches("greta_").to_string(),
                function,
                dims: plan.dims,
                scalars: plan.scalars,
                maps: plan.maps,
                then,
                scratch,
                aux: plan.aux,
            });
        }
        super::graph::execute(
            &self.driver,
            self.stream,
            &self.dev,
            &mut self.warmth,
            &steps,
            job,
        )
        .map_err(|e| self.fail(e))
    }

    fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    fn keep_scratch(&mut self, on: bool) -> Result<(), RuntimeError> {
        self.keep_scratch = on;
        Ok(())
    }

    fn release_kept(&mut self) -> u64 {
        let mut freed = 0u64;
        for (p, bytes) in self.kept.drain(..) {
            // SAFETY: allocated by a completed run (its last event waited
            // for), kept once, freed once.
            unsafe { self.driver.free(p) };
            freed += bytes as u64;
        }
        freed
    }

    fn tuning_candidates(&self, op: &Op) -> Vec<Tuning> {
        if op.is_composite() {
            return crate::backend::composite_candidates(op);
        }
        super::tune::candidates(op, &self.dev)
    }

    fn ceiling(&mut self, op: &Op, timeout: Duration) -> Option<Result<Ceiling, CeilingError>> {
        let r = self.ceiling_inner(op, timeout);
        if let Some(Err(CeilingError::Timeout(why))) = &r {
            self.lost = Some(why.clone());
        }
        r
    }

    fn stress(&mut self, req: &StressRequest) -> Option<Result<StressReport, RuntimeError>> {
        Some(self.stress_inner(req).map_err(|e| self.fail(e)))
    }

    fn host_copy(
        &mut self,
        job: crate::HostCopyJob<'_>,
    ) -> Option<Result<crate::HostCopyStats, RuntimeError>> {
        if let Err(e) = crate::host_copy::preflight(&job) {
            return Some(Err(e));
        }
        if let Some(why) = &self.lost {
            return Some(Err(RuntimeError::DeviceLost(why.clone())));
        }
        let Some(stream) = self.stream else {
            return Some(Err(RuntimeError::DeviceLost("device is lost".into())));
        };
        let r = super::host_copy::run(&self.driver, stream, &self.dev, job);
        Some(r.map_err(|e| self.fail(e)))
    }
}

impl<D: Driver> Drop for GpuBackend<D> {
    fn drop(&mut self) {
        if self.lost.is_some() {
            // Destroying a stream or module with work still queued on a hung
            // GPU blocks; leave them so greta can report and exit.
            std::mem::forget(self.vendor.take());
            return;
        }
        self.release_kept();
        // The vendor's handle goes before the stream it is bound to.
        self.vendor = None;
        if let Some(s) = self.stream.take() {
            // SAFETY: created in open_with, destroyed once (taken out of the
            // Option), no work pending (every run waited for its last event).
            unsafe { self.driver.stream_destroy(s) };
        }
        if let Some(m) = self.module.take() {
            // SAFETY: loaded in open_with, unloaded once; none of its
            // kernels runs (as above).
            unsafe { self.driver.module_unload(m) };
        }
    }
}
