//! The HIP backend (AMD ROCm), behind cargo feature `hip`.
//!
//! Why a second backend: on MI300X-class GPUs (gfx94x) Vulkan is known to
//! fail, and ROCm is what those machines run. This module runs the same
//! [`Op`]s with the same buffer contracts as the Vulkan backend, through
//! HIP: kernels from `kernels/hip/*.hip` are compiled on the machine by its
//! own `hipcc` for its gfx target ([`compile`]), cached on disk, loaded with
//! `hipModuleLoadData` and launched with `hipModuleLaunchKernel`; events time
//! each dispatch, and every wait polls with a deadline ([`stream`]).
//!
//! Linking libamdhip64 is why this is a feature: the default `greta` binary
//! must start on machines without ROCm.

#[cfg(feature = "hip-blas")]
pub mod blas;
pub mod compile;
pub mod device;
pub mod error;
mod launch;
pub mod memory;
pub mod module;
pub mod stream;

pub use compile::{CachedObject, CompileError, Hipcc, KernelCache, KernelSources};
pub use device::HipDeviceInfo;
pub use error::HipError;

use crate::{
    Backend, BackendKind, DeviceInfo, DeviceSelect, DeviceType, HostBuf, MemoryHeap, Op, RunOpts,
    RunStats,
};
use crate::{RuntimeError, TimingSource, Tuning};
use memory::DeviceBuffer;
use module::Module;
use std::time::{Duration, Instant};
use stream::{KernelArg, Stream};

impl From<HipError> for RuntimeError {
    fn from(e: HipError) -> RuntimeError {
        match e {
            HipError::NoDevice { .. } => RuntimeError::NoDevice(e.to_string()),
            HipError::Timeout { what, limit } => RuntimeError::Timeout {
                what,
                timeout: limit,
                waited: limit,
            },
            HipError::Call { code, .. }
                if code == hip_sys::hiprt::hipError_t::hipErrorOutOfMemory as i32 =>
            {
                RuntimeError::OutOfMemory(e.to_string())
            }
            HipError::Call { call, .. } => {
                let text = e.to_string();
                let detail = text
                    .strip_prefix(&format!("{call} failed: "))
                    .unwrap_or(&text);
                RuntimeError::api(call, detail)
            }
            HipError::Compile(c) => {
                RuntimeError::Unsupported(format!("building the HIP kernels: {c}"))
            }
            HipError::Device(m) => RuntimeError::Unsupported(m),
            HipError::Invalid(m) => RuntimeError::BadInput(m),
        }
    }
}

/// Every HIP device, numbered as HIP numbers them.
pub fn list_devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    let n = device::device_count()?;
    (0..n)
        .map(|i| Ok(device_info(&device::query(i)?)))
        .collect()
}

/// Opens a HIP device as a boxed [`Backend`], building the kernels (or
/// taking them from the cache) for its gfx target.
pub fn open(select: &DeviceSelect) -> Result<Box<dyn Backend>, RuntimeError> {
    Ok(Box::new(HipBackend::open(select)?))
}

fn device_info(h: &HipDeviceInfo) -> DeviceInfo {
    DeviceInfo {
        backend: BackendKind::Hip,
        index: h.ordinal as usize,
        name: h.name.clone(),
        vendor_id: if h.pci_vendor_id != 0 {
            h.pci_vendor_id
        } else {
            0x1002
        },
        device_id: h.pci_device_id,
        device_type: if h.integrated {
            DeviceType::IntegratedGpu
        } else {
            DeviceType::DiscreteGpu
        },
        driver_id: "AMD_HIP".into(),
        driver_name: "HIP (ROCm)".into(),
        driver_info: h.gcn_arch_name.clone(),
        driver_version: h.driver_version as u32,
        driver_version_text: device::version_string(h.driver_version),
        api_version: device::version_string(h.runtime_version),
        uuid: h.uuid.clone(),
        // Every GPU HIP runs on (gfx9 and later) has f16 arithmetic and storage.
        fp16: true,
        int8: true,
        subgroup_size: h.warp_size,
        min_subgroup_size: h.warp_size,
        max_subgroup_size: h.warp_size,
        coop_matrix: Vec::new(),
        memory_heaps: vec![MemoryHeap {
            size: h.total_memory_bytes,
            device_local: !h.integrated,
        }],
        timestamps: true,
        // hipEventElapsedTime resolves about 1 µs.
        timestamp_period_ns: 1000.0,
        max_storage_buffer_range: h.total_memory_bytes,
        max_allocation_size: h.total_memory_bytes,
        max_workgroup_count: h.max_grid,
        max_workgroup_invocations: h.max_threads_per_block,
        max_shared_memory: h.max_shared_memory_per_block as u32,
        also_exposed_by: Vec::new(),
        notes: vec![format!(
            "compute units: {}, target {}",
            h.compute_units, h.gcn_arch_name
        )],
    }
}

/// Enqueues one repeat of an op on the stream, given the device buffers in
/// binding order.
pub(crate) type Dispatch<'a> = dyn FnMut(&Stream, &[DeviceBuffer]) -> Result<(), HipError> + 'a;

/// One open HIP device with greta's kernels loaded.
pub struct HipBackend {
    info: DeviceInfo,
    hip: HipDeviceInfo,
    object: CachedObject,
    // Field order is drop order: the module and stream go before nothing else
    // needs them. After a timeout they are leaked instead (see Drop).
    module: Option<Module>,
    stream: Option<Stream>,
    lost: Option<String>,
}

impl HipBackend {
    /// Opens the device `select` names, with kernels from the default cache
    /// (`$XDG_CACHE_HOME/greta/hip-kernels`) built by the located `hipcc`.
    pub fn open(select: &DeviceSelect) -> Result<HipBackend, HipError> {
        Self::open_with(select, &KernelCache::new(KernelCache::default_dir()), None)
    }

    /// As [`HipBackend::open`] with an explicit cache and compiler.
    pub fn open_with(
        select: &DeviceSelect,
        cache: &KernelCache,
        hipcc: Option<Hipcc>,
    ) -> Result<HipBackend, HipError> {
        let n = device::device_count()?;
        let devices: Vec<HipDeviceInfo> = (0..n).map(device::query).collect::<Result<_, _>>()?;
        let hip = match select {
            DeviceSelect::Auto => devices.into_iter().next(),
            DeviceSelect::Index(i) => devices.into_iter().nth(*i),
            DeviceSelect::Cpu => {
                return Err(HipError::NoDevice {
                    detail: "HIP has no CPU devices".into(),
                    why: "use the Vulkan backend (lavapipe) for a CPU device".into(),
                })
            }
            DeviceSelect::Name(s) => {
                let s = s.to_lowercase();
                devices.into_iter().find(|d| {
                    d.name.to_lowercase().contains(&s)
                        || d.gcn_arch_name.to_lowercase().contains(&s)
                })
            }
        }
        .ok_or_else(|| HipError::NoDevice {
            detail: format!("no HIP device matches {select:?}"),
            why: format!("{n} HIP device(s) exist; `greta-hip-worker devices` lists them"),
        })?;
        set_device(hip.ordinal)?;
        let hipcc = match hipcc {
            Some(h) => h,
            None => Hipcc::locate()?,
        };
        let object = cache.get_or_build(&hipcc, &KernelSources::bundled(), &hip.gfx)?;
        let image = std::fs::read(&object.path).map_err(|e| {
            HipError::Device(format!(
                "reading code object {}: {e}",
                object.path.display()
            ))
        })?;
        let module = Module::load(&image)?;
        let stream = Stream::new()?;
        Ok(HipBackend {
            info: device_info(&hip),
            hip,
            object,
            module: Some(module),
            stream: Some(stream),
            lost: None,
        })
    }

    pub fn hip_info(&self) -> &HipDeviceInfo {
        &self.hip
    }

    /// The code object the kernels were loaded from (and whether this open built it).
    pub fn code_object(&self) -> &CachedObject {
        &self.object
    }

    fn check_buffers(op: &Op, inputs: &[HostBuf], outputs: &[HostBuf]) -> Result<(), RuntimeError> {
        op.validate()
            .map_err(|e| RuntimeError::BadInput(e.to_string()))?;
        crate::backend::check_buffers(op, inputs, outputs)
    }

    fn run_inner(
        &mut self,
        op: &Op,
        inputs: &[HostBuf],
        outputs: &mut [HostBuf],
        opts: &RunOpts,
    ) -> Result<RunStats, HipError> {
        let plan = launch::plan(op, &self.hip);
        let Some(module) = self.module.as_mut() else {
            return Err(HipError::Device("device is lost".into()));
        };
        let function = module.function(&plan.symbol)?;
        let kernel = plan.symbol.trim_start_matches("greta_").to_string();
        self.execute(op, inputs, outputs, opts, kernel, &mut |stream, bufs| {
            let mut args: Vec<KernelArg> = bufs.iter().map(|b| KernelArg::Ptr(b.ptr())).collect();
            args.extend_from_slice(&plan.scalars);
            stream.launch(function, plan.grid, plan.block, 0, &args)
        })
    }

    /// Uploads inputs and outputs, enqueues `dispatch` once per repeat
    /// between two events, waits for the last with the run's deadline, then
    /// reads the outputs back. `dispatch` gets the device buffers in binding
    /// order (inputs, then outputs).
    pub(crate) fn execute(
        &mut self,
        op: &Op,
        inputs: &[HostBuf],
        outputs: &mut [HostBuf],
        opts: &RunOpts,
        kernel: String,
        dispatch: &mut Dispatch<'_>,
    ) -> Result<RunStats, HipError> {
        let start = Instant::now();
        let deadline = start + opts.timeout;
        let left = || deadline.saturating_duration_since(Instant::now());
        set_device(self.hip.ordinal)?;
        let Some(stream) = self.stream.as_ref() else {
            return Err(HipError::Device("device is lost".into()));
        };
        let bufs: Vec<DeviceBuffer> = inputs
            .iter()
            .chain(outputs.iter())
            .map(|b| DeviceBuffer::new(b.byte_len()))
            .collect::<Result<_, _>>()?;
        let result = (|| {
            for (d, h) in bufs.iter().zip(inputs.iter().chain(outputs.iter())) {
                d.upload(stream, h.as_bytes(), left())?;
            }
            let mut events = Vec::with_capacity(opts.repeats as usize);
            for _ in 0..opts.repeats {
                let before = stream.record()?;
                dispatch(stream, &bufs)?;
                events.push((before, stream.record()?));
            }
            let what = format!("{op} x{} on {}", opts.repeats, self.hip.name);
            match events.last() {
                Some((_, last)) => last.wait(&what, left())?,
                None => stream.finish(&what, left())?,
            }
            let device_ns = events
                .iter()
                .map(|(a, b)| b.elapsed_since(a).map(|d| d.as_nanos() as u64))
                .collect::<Result<Vec<_>, _>>()?;
            for (d, h) in bufs[inputs.len()..].iter().zip(outputs.iter_mut()) {
                d.download(stream, h.as_bytes_mut(), left())?;
            }
            Ok(device_ns)
        })();
        match result {
            Ok(device_ns) => Ok(RunStats {
                device_ns,
                timing: TimingSource::DeviceTimestamps,
                wall: start.elapsed(),
                kernel,
                tuning: Tuning::default(),
                dispatches_per_repeat: 1,
            }),
            Err(e) => {
                if matches!(e, HipError::Timeout { .. }) {
                    // The GPU still owns these allocations: freeing them
                    // would block in hipFree on a hung device.
                    std::mem::forget(bufs);
                }
                Err(e)
            }
        }
    }

    /// Checks what every run checks before touching the device.
    pub(crate) fn preflight(
        &self,
        op: &Op,
        inputs: &[HostBuf],
        outputs: &[HostBuf],
        opts: &RunOpts,
    ) -> Result<(), RuntimeError> {
        if let Some(why) = &self.lost {
            return Err(RuntimeError::DeviceLost(why.clone()));
        }
        if opts.repeats == 0 {
            return Err(RuntimeError::BadInput("repeats must be at least 1".into()));
        }
        if opts.tuning.as_ref().is_some_and(|t| !t.0.is_empty()) {
            return Err(RuntimeError::BadInput(format!(
                "the HIP kernels take no tuning parameters (got {})",
                opts.tuning
                    .as_ref()
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            )));
        }
        Self::check_buffers(op, inputs, outputs)?;
        self.supports(op).map_err(RuntimeError::Unsupported)
    }

    /// Maps a failure to the runtime's error, marking the device lost on a timeout.
    pub(crate) fn fail(&mut self, e: HipError) -> RuntimeError {
        if matches!(e, HipError::Timeout { .. }) {
            self.lost = Some(e.to_string());
        }
        e.into()
    }
}

fn set_device(ordinal: i32) -> Result<(), HipError> {
    // SAFETY: plain call with an ordinal below hipGetDeviceCount.
    error::check("hipSetDevice", unsafe {
        hip_sys::hiprt::hipSetDevice(ordinal)
    })
}

impl Backend for HipBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn supports(&self, op: &Op) -> Result<(), String> {
        op.validate().map_err(|e| e.to_string())?;
        let bytes: u64 = op
            .inputs()
            .iter()
            .chain(op.outputs().iter())
            .map(|s| (s.len * s.dtype.size()) as u64)
            .sum();
        if bytes > self.hip.total_memory_bytes {
            return Err(format!(
                "{op} needs {bytes} bytes of buffers; {} has {} bytes",
                self.hip.name, self.hip.total_memory_bytes
            ));
        }
        Ok(())
    }

    fn run(
        &mut self,
        op: &Op,
        inputs: &[HostBuf],
        outputs: &mut [HostBuf],
        opts: &RunOpts,
    ) -> Result<RunStats, RuntimeError> {
        self.preflight(op, inputs, outputs, opts)?;
        self.run_inner(op, inputs, outputs, opts)
            .map_err(|e| self.fail(e))
    }

    fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }
}

impl Drop for HipBackend {
    fn drop(&mut self) {
        if self.lost.is_some() {
            // Destroying a stream or module with work still queued on a hung
            // GPU blocks; leak them so greta can report and exit.
            std::mem::forget(self.stream.take());
            std::mem::forget(self.module.take());
        }
    }
}

/// The default per-run limit used by callers that have none (as RunOpts).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
