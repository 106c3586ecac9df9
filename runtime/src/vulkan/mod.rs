//! The Vulkan backend: ash (libvulkan loaded at run time) + gpu-allocator.
//!
//! Modules: `instance` (loader, instance, validation messenger),
//! `owned` (who destroys each Vulkan object, and when),
//! `select` (enumeration, de-duplication, choice), `memory` (buffers),
//! [`cache`] (pipeline cache file), `pipelines`, `plan` (op -> kernel),
//! `run` (recording, submission with timeout, timestamps).
//!
//! Tuning knobs ([`crate::tuning::Knob`] in a [`crate::tuning::Tuning`], all optional; a knob
//! the kernel family does not take is an error):
//! - rope, kv_update, noop: `wg` (workgroup size, power of two);
//! - fill, copy, vec_add: `wg` (default 256), `unroll` (vec4s per invocation
//!   per loop iteration, 1..=16, default 4), `groups` (most workgroups per
//!   dispatch, default 65535; the kernels loop grid-stride over the rest);
//! - rmsnorm, layernorm, softmax: `wg`, `vec4` (0/1; default 1 when cols % 4 == 0),
//!   `reg` (0/1: the row held in registers, one read of x; default 1 when
//!   vec4 and the row fits 16 vec4s per invocation);
//! - gemm_f32, gemm_f16: `bm`, `bn`, `bk`, `tm`, `tn` (block and per-invocation
//!   tiles; defaults 64/64/16/4/4, or 128/128/8/8/8 when m and n >= 1024);
//!   gemm_f16 also `coopmat` (0 tiled, 1 `VK_KHR_cooperative_matrix`, 2
//!   `VK_NV_cooperative_matrix2`; default 2 where the NV extension has the
//!   features, else 1 where an f16 x f16 -> f32 shape exists); with
//!   `coopmat=2` the keys are `bm`, `bn`, `bk`, `wg`, `uk` (k slices per
//!   unrolled trip; default 128/256/32/256/4);
//! - attn_prefill_f16: `coopmat` (0 the f32-FMA kernel, 1 the
//!   cooperative-matrix one, the default where the device can run it;
//!   `plan/attn.rs`);
//! - every op: `wave`, the subgroup size the pipeline requires, on a
//!   device that can require one (`plan::plan`; the kernels that count
//!   subgroups get 32 by default where the device offers a range).
//!
//! [`crate::backend::Backend::tuning_candidates`] lists a sweep for each op;
//! [`crate::tuning_cache`] stores the winner per device and shape class.
//!
//! Limits handled: buffers of element-wise ops larger than
//! `maxStorageBufferRange` are split into several dispatches per repeat;
//! workgroup counts stay <= 65535 (grid-stride loops cover the rest); on
//! lavapipe, shapes whose loops would exceed its 65535-iteration guard are
//! refused by `supports` instead of returning truncated results.

pub(crate) mod cache;
mod ceiling;
mod compile;
use greta_vkenum::coop2;
mod graph;
mod host_copy;
mod instance;
mod memory;
pub mod mesa_cache;
mod owned;
mod pipelines;
/// Public for the fuzz harnesses (fuzz/src/bin/gemm_plan.rs); not part of the runtime's front door.
#[doc(hidden)]
pub mod plan;
mod record;
mod run;
mod select;
mod submit;
mod validation;
mod warmup;

use crate::backend::Backend;
use crate::error::RuntimeError;
use crate::graph::{GraphJob, GraphStats};
use crate::info::{DeviceInfo, DeviceSelect};
use crate::job::{Job, RunStats};
use crate::tuning::Tuning;
use ash::vk;
use greta_kernels::Op;

use greta_vocab::VkDriver;
use owned::{Allocator, LogicalDevice, Owned};
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::Arc;

/// Writes a pipeline-cache file as greta does (the cache tests craft
/// damaged ones beside it); not part of the runtime's front door.
#[doc(hidden)]
pub use cache::store as store_pipeline_cache;
pub use cache::CacheStatus;
pub use compile::{Compiled, Executable};
pub use instance::Instance;
pub use validation::MessageLog;

/// llvmpipe's guard against infinite loops: a loop nest ends after this many iterations.
const LLVMPIPE_LOOP_LIMIT: u64 = 65535;

/// Every Vulkan device greta can use, de-duplicated (one GPU behind two
/// drivers is listed once, RADV preferred; the entry says so in `notes`).
pub fn list_devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    let inst = Instance::new(validation::requested_by_env())?;
    let list = select::dedupe(select::enumerate(&inst)?);
    Ok(list.into_iter().map(|p| p.info).collect())
}

/// Where the pipeline cache lives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CacheDir {
    /// `$XDG_CACHE_HOME/greta/vk-pipelines` (see [`cache::default_dir`]).
    #[default]
    Default,
    Dir(PathBuf),
    Off,
}

/// How to open a device. `Default` = auto selection, validation from
/// `GRETA_VK_VALIDATION`, default cache directory.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    pub select: DeviceSelect,
    /// `Some(true)` forces validation on, `Some(false)` off, `None` = env var.
    pub validation: Option<bool>,
    pub cache: CacheDir,
    /// Lower the usable `maxStorageBufferRange` (tests use it to exercise
    /// the split-dispatch path on small buffers).
    pub max_storage_range: Option<u64>,
    /// `Some(false)` ignores device timestamps and times by wall clock (the
    /// fallback for devices without them; tests use it to exercise that path).
    pub timestamps: Option<bool>,
    /// Where the tuning cache ([`crate::tuning_cache`]) is read from:
    /// `Default` = [`crate::tuning_cache::default_dir`] (`GRETA_TUNING_CACHE`
    /// = a directory, or `off`). Runs without an explicit tuning use the
    /// cached one for their shape class.
    pub tuning_cache: CacheDir,
    /// Compile-only ([`Device::compile_only`]): open with
    /// VK_KHR_pipeline_executable_properties, so that pipelines can be
    /// created with their statistics and code captured. A device without
    /// it is refused.
    pub statistics: bool,
    /// TEST-ONLY: `open_with` fails at this step as if the driver had
    /// refused it, with everything before it already created, so tests can
    /// check that a failed open destroys what it made, children first.
    #[doc(hidden)]
    pub fail_at: Option<OpenStep>,
    /// TEST-ONLY: the log the validation messenger records into, readable
    /// after the device (and its instance) are gone, e.g. after a failed open.
    #[doc(hidden)]
    pub messages: Option<validation::MessageLog>,
}

/// `Err` when a test asked [`Device::open_with`] to fail at `step`.
fn injected(opts: &OpenOptions, step: OpenStep) -> Result<(), vk::Result> {
    if opts.fail_at == Some(step) {
        Err(vk::Result::ERROR_INITIALIZATION_FAILED)
    } else {
        Ok(())
    }
}

/// The steps of [`Device::open_with`] after `vkCreateDevice` that a test can
/// make fail ([`OpenOptions::fail_at`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenStep {
    CommandPool,
    Allocator,
    PipelineCache,
}

/// The Vulkan objects of an open device. Each destroys itself on drop and
/// holds an `Arc` of what it was made from (see [`owned`]), so any order
/// is safe; this one destroys the per-device objects first, then the
/// allocator, the device and the instance (whose last `Arc`s are here).
struct Inner {
    pipelines: pipelines::Pipelines,
    /// Buffers of the last run, reused by the next one of the same sizes.
    buffers: memory::Pool,
    /// Scratch kept allocated by [`Backend::keep_scratch`] (a memtest's
    /// tested slices), out of reuse until released.
    kept: Vec<memory::Buffer>,
    pipeline_cache: Owned<vk::PipelineCache>,
    command_pool: Arc<Owned<vk::CommandPool>>,
    allocator: Arc<Allocator>,
    queue: vk::Queue,
    device: Arc<LogicalDevice>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Runs before any field is dropped: nothing the queue may still
        // read is destroyed under it.
        self.device.wait_idle();
    }
}

/// An open Vulkan device with one compute queue.
pub struct Device {
    info: DeviceInfo,
    phys: vk::PhysicalDevice,
    queue_family: u32,
    timestamp_bits: u32,
    limits: plan::Limits,
    cache_id: cache::Identity,
    cache_path: Option<PathBuf>,
    cache_status: CacheStatus,
    /// `ManuallyDrop` because a lost device leaks it (see `Drop`): a queue
    /// that timed out may still be using any of its objects.
    inner: ManuallyDrop<Inner>,
    lost: Option<String>,
    /// Set by [`Backend::keep_scratch`]: a run's scratch goes to
    /// `inner.kept`, not back to the pool.
    keep_scratch: bool,
    tuned: Option<crate::tuning_cache::TuningCache>,
    /// Median time per repeat of the last run of each plan (shape class,
    /// kernel, tuning; `warmup::time_key`) or graph: sizes the warm-up of the
    /// next run of the same plan.
    last_ns: std::collections::HashMap<String, u64>,
    /// `GRETA_VK_WARMUP_MS` in nanoseconds, when set (`warmup::warmup_from_env`).
    warmup_ns: Option<u64>,
    /// The work the GPU has just done: what warm-up a run still owes
    /// (`crate::warmth`; recorded by [`Device::worked`]).
    warmth: crate::warmth::Warmth,
    /// Opened for compile-only ([`OpenOptions::statistics`]).
    statistics: bool,
}

/// The cooperative-matrix paths a device was opened with.
#[derive(Clone, Copy)]
struct Coop {
    /// VK_KHR_cooperative_matrix with an f16 x f16 -> f32 shape.
    khr: bool,
    /// VK_NV_cooperative_matrix2 (for `gemm_f16_cm2`).
    nv2: bool,
    /// Its matrix operations enabled too (for `attn_prefill_f16_cm2`).
    nv2_ops: bool,
}

/// `vkCreateDevice` on `p`'s compute queue family, with the features and
/// extensions greta's kernels use wherever the device has them.
fn create_logical(
    instance: Arc<Instance>,
    p: &select::Physical,
    info: &DeviceInfo,
    statistics: bool,
) -> Result<(Arc<LogicalDevice>, Coop), RuntimeError> {
    let prio = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(p.queue_family)
        .queue_priorities(&prio)];
    let mut exts = Vec::new();
    let mut f11 =
        vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(p.storage16);
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
        .shader_float16(p.shader_f16)
        .vulkan_memory_model(p.vulkan_memory_model)
        .vulkan_memory_model_device_scope(p.vulkan_memory_model);
    let mut coop =
        vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(true);
    let mut dinfo = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .push_next(&mut f11)
        .push_next(&mut f12);
    // Subgroup-size control: the planner requires a size per pipeline
    // wherever the device offers a range (plan::Limits::waves).
    let mut sizes = vk::PhysicalDeviceSubgroupSizeControlFeatures::default()
        .subgroup_size_control(true)
        .compute_full_subgroups(p.waves.is_some_and(|w| w.full));
    if p.waves.is_some() {
        if p.waves_by_ext {
            exts.push(ash::ext::subgroup_size_control::NAME.as_ptr());
        }
        dinfo = dinfo.push_next(&mut sizes);
    }
    let mut exec_info = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
        .pipeline_executable_info(true);
    if statistics {
        exts.push(ash::khr::pipeline_executable_properties::NAME.as_ptr());
        dinfo = dinfo.push_next(&mut exec_info);
    }
    let khr = p.has_coop_ext && p.shader_f16 && info.coop_f16_f32().is_some();
    if khr {
        exts.push(ash::khr::cooperative_matrix::NAME.as_ptr());
        dinfo = dinfo.push_next(&mut coop);
    }
    let nv2 = khr && p.has_coop2 && p.storage16 && p.vulkan_memory_model;
    let nv2_ops = nv2 && p.has_coop2_ops;
    let mut coop2_features = coop2::Features::needed(nv2_ops);
    if nv2 {
        exts.push(coop2::NAME.as_ptr());
        dinfo = dinfo.push_next(&mut coop2_features);
    }
    dinfo = dinfo.enabled_extension_names(&exts);
    let device = LogicalDevice::new(instance, p.raw, &dinfo)
        .map_err(|e| RuntimeError::api(&format!("vkCreateDevice({})", info.name), e))?;
    Ok((device, Coop { khr, nv2, nv2_ops }))
}

/// Where this device's pipeline cache file is (None: caching is off), the
/// data it holds that passed the checks, and what became of it.
fn stored_pipeline_cache(
    opts: &OpenOptions,
    info: &DeviceInfo,
    id: &cache::Identity,
) -> (Option<PathBuf>, Option<Vec<u8>>, CacheStatus) {
    let dir = match &opts.cache {
        CacheDir::Default => cache::default_dir(),
        CacheDir::Dir(d) => Some(d.clone()),
        CacheDir::Off => None,
    };
    let Some(path) = dir.map(|d| {
        d.join(cache::file_name(
            &info.uuid.map(|u| u.hex()).unwrap_or_default(),
            info.vendor_id,
            info.device_id,
            info.driver_version,
        ))
    }) else {
        return (None, None, CacheStatus::Disabled);
    };
    let (data, status) = match cache::load(&path, id) {
        Ok(Some(d)) => {
            let bytes = d.len();
            let status = CacheStatus::Loaded {
                path: path.clone(),
                bytes,
            };
            (Some(d), status)
        }
        Ok(None) => (None, CacheStatus::Missing { path: path.clone() }),
        Err(reason) => {
            tracing::warn!("ignoring pipeline cache {}: {reason}", path.display());
            let status = CacheStatus::Ignored {
                path: path.clone(),
                reason,
            };
            (None, status)
        }
    };
    (Some(path), data, status)
}

/// Why a device that compiles cannot run anything, if it is one: RADV's
/// null device (`RADV_FORCE_FAMILY`, Mesa 25 and older), named "Null
/// hardware", has no GPU behind it, and Mesa 25.0's crashes in its first
/// wait or submission (a call through a null pointer).
fn cannot_execute(info: &DeviceInfo) -> Option<String> {
    (info.driver_id == VkDriver::Radv && info.name.starts_with("Null hardware")).then(|| {
        format!(
            "{} is RADV without a GPU (RADV_FORCE_FAMILY is set): it compiles but cannot run \
             anything; unset RADV_FORCE_FAMILY to use a real GPU, or see what RADV compiles \
             with `greta smoke --compile-only`",
            info.name
        )
    })
}

/// What the planner may use on this device.
fn limits(opts: &OpenOptions, info: &DeviceInfo, p: &select::Physical, coop: Coop) -> plan::Limits {
    plan::Limits {
        max_range: opts
            .max_storage_range
            .map_or(info.max_storage_buffer_range, |r| {
                r.min(info.max_storage_buffer_range)
            }),
        offset_align: p.min_storage_offset_align,
        max_invocations: info.max_workgroup_invocations,
        max_shared: info.max_shared_memory,
        subgroup_arith: p.subgroup_arith,
        coop_f16: if coop.khr {
            info.coop_f16_f32().map(|s| (s.m, s.n, s.k))
        } else {
            None
        },
        f16_storage: p.storage16 && p.shader_f16,
        coop2: coop.nv2,
        coop2_ops: coop.nv2_ops,
        coop2_workgroups: if coop.nv2 {
            p.coop2_workgroups.clone()
        } else {
            Vec::new()
        },
        coop16: coop.khr
            && info
                .coop_f16_f32_shapes()
                .any(|s| (s.m, s.n, s.k) == (16, 16, 16)),
        coop16_f16: coop.khr
            && info
                .coop_f16_f16_shapes()
                .any(|s| (s.m, s.n, s.k) == (16, 16, 16)),
        subgroup_size: (info.min_subgroup_size == info.max_subgroup_size
            && info.subgroup_size == info.max_subgroup_size)
            .then_some(info.subgroup_size),
        waves: p.waves,
        compute_units: p.compute_units,
    }
}

impl Device {
    /// Opens the device `select` names, validation per `GRETA_VK_VALIDATION`.
    pub fn open(select: &DeviceSelect) -> Result<Self, RuntimeError> {
        Self::open_with(&OpenOptions {
            select: select.clone(),
            ..OpenOptions::default()
        })
    }

    pub fn open_with(opts: &OpenOptions) -> Result<Self, RuntimeError> {
        // Settings first: a bad one is refused before any device work.
        let warmup_ns = warmup::warmup_from_env()?;
        let validation = opts.validation.unwrap_or_else(validation::requested_by_env);
        let instance = Arc::new(Instance::with_log(
            validation,
            opts.messages.clone().unwrap_or_default(),
        )?);
        let list = select::dedupe(select::enumerate(&instance)?);
        let idx = select::choose(&list, &opts.select)?;
        let p = list.into_iter().nth(idx).unwrap();
        let mut info = p.info.clone();
        if let Some(note) = mesa_cache::prepare() {
            info.notes.push(note);
        }
        if opts.timestamps == Some(false) {
            info.timestamps = false;
        }
        if info.is_cpu() && opts.select == DeviceSelect::Auto {
            info.notes.push(
                "no GPU found: using the CPU Vulkan device (results are not GPU results)".into(),
            );
        }

        // From here every object is owned (see [`owned`]): an error return
        // drops what was made so far, the device before its instance.
        if let Some(why) = cannot_execute(&info).filter(|_| !opts.statistics) {
            return Err(RuntimeError::Unsupported(why));
        }
        if opts.statistics && !p.executable_info {
            return Err(RuntimeError::Unsupported(format!(
                "{} ({}) lacks VK_KHR_pipeline_executable_properties: its pipelines' \
                 statistics cannot be read",
                info.name, info.driver_id
            )));
        }
        let (device, coop) = create_logical(instance, &p, &info, opts.statistics)?;
        let queue = device.queue(p.queue_family, 0);
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(p.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        let command_pool = Owned::create(&device, |d| {
            injected(opts, OpenStep::CommandPool)?;
            // SAFETY: a live device (`d` is the owner's); the queue family
            // exists; the create info outlives the call.
            unsafe { d.create_command_pool(&pool_info, None) }
        })
        .map_err(|e| RuntimeError::api("vkCreateCommandPool", e))?;
        let allocator = injected(opts, OpenStep::Allocator)
            .map_err(|e| RuntimeError::api("gpu-allocator init", e))
            .and_then(|()| {
                Allocator::new(&device, p.raw)
                    .map_err(|e| RuntimeError::api("gpu-allocator init", e))
            })?;

        // Pipeline cache: load, check, hand to the driver.
        let cache_id = cache::Identity {
            vendor: info.vendor_id,
            device: info.device_id,
            cache_uuid: p.pipeline_cache_uuid,
        };
        let (cache_path, initial, cache_status) = stored_pipeline_cache(opts, &info, &cache_id);
        let mut cinfo = vk::PipelineCacheCreateInfo::default();
        if let Some(d) = &initial {
            cinfo = cinfo.initial_data(d);
        }
        let pipeline_cache = Owned::create(&device, |d| {
            injected(opts, OpenStep::PipelineCache)?;
            // SAFETY: a live device (`d` is the owner's); the initial data
            // passed our header and checksum checks and outlives the call.
            unsafe { d.create_pipeline_cache(&cinfo, None) }.or_else(|e| {
                tracing::warn!(
                    "vkCreatePipelineCache with stored data failed ({e}); starting empty"
                );
                let empty = vk::PipelineCacheCreateInfo::default();
                // SAFETY: as above, without initial data.
                unsafe { d.create_pipeline_cache(&empty, None) }
            })
        })
        .map_err(|e| RuntimeError::api("vkCreatePipelineCache", e))?;

        let limits = limits(opts, &info, &p, coop);
        if limits.coop2 {
            tracing::debug!(
                "{}: cooperative matrix 2, f16 workgroup-scope matrices at {:?}",
                info.name,
                limits.coop2_workgroups
            );
        }
        Ok(Device {
            phys: p.raw,
            queue_family: p.queue_family,
            timestamp_bits: p.timestamp_valid_bits,
            limits,
            cache_id,
            cache_path,
            cache_status,
            inner: ManuallyDrop::new(Inner {
                pipelines: Default::default(),
                buffers: memory::Pool::default(),
                kept: Vec::new(),
                pipeline_cache,
                command_pool: Arc::new(command_pool),
                allocator,
                queue,
                device,
            }),
            tuned: match &opts.tuning_cache {
                CacheDir::Off => None,
                _ if crate::tuning_cache::disabled_by_env() => None,
                CacheDir::Default => Some(crate::tuning_cache::TuningCache::open(&info, None)),
                CacheDir::Dir(d) => Some(crate::tuning_cache::TuningCache::open(&info, Some(d))),
            }
            .filter(|c| !c.is_empty()),
            info,
            lost: None,
            keep_scratch: false,
            last_ns: Default::default(),
            warmup_ns,
            warmth: Default::default(),
            statistics: opts.statistics,
        })
    }

    /// A submission that kept the device busy for `wall` ended just now
    /// (`crate::warmth`): one command buffer, its work back to back on
    /// the device, so its wall time is the device's busy time.
    fn worked(&mut self, wall: std::time::Duration) {
        let now = std::time::Instant::now();
        self.warmth
            .worked(now.checked_sub(wall).unwrap_or(now), now, wall);
    }

    /// How many pipelines this device holds (made ahead or by runs).
    pub fn pipeline_count(&self) -> usize {
        self.inner.pipelines.len()
    }

    /// What happened to the on-disk pipeline cache at open.
    pub fn cache_status(&self) -> &CacheStatus {
        &self.cache_status
    }

    /// Writes the pipeline cache file now (also done after runs that
    /// created pipelines and on drop). Returns the path written.
    pub fn save_pipeline_cache(&mut self) -> Result<Option<PathBuf>, RuntimeError> {
        let Some(path) = self.cache_path.clone() else {
            return Ok(None);
        };
        if self.lost.is_some() {
            return Ok(None);
        }
        // SAFETY: a live cache of this live device (not lost, checked
        // above), used by this thread only (`&mut self`).
        let data = unsafe {
            self.inner
                .device
                .raw
                .get_pipeline_cache_data(self.inner.pipeline_cache.raw())
        }
        .map_err(|e| RuntimeError::api("vkGetPipelineCacheData", e))?;
        if cache::load(&path, &self.cache_id).ok().flatten().as_deref() == Some(&data[..]) {
            return Ok(Some(path));
        }
        cache::store(&path, &data).map_err(|e| {
            RuntimeError::api(&format!("write pipeline cache {}", path.display()), e)
        })?;
        self.inner.pipelines.created = 0;
        Ok(Some(path))
    }

    /// TEST-ONLY: makes one deliberately invalid call (a buffer with no
    /// usage flags, harmless to drivers) so tests can prove the validation
    /// messenger records messages.
    #[doc(hidden)]
    pub fn provoke_validation_error(&self) {
        let info = vk::BufferCreateInfo::default()
            .size(16)
            .usage(vk::BufferUsageFlags::empty());
        let d = &self.inner.device.raw;
        // SAFETY: invalid usage on purpose; every driver accepts or rejects
        // it without side effects.
        if let Ok(b) = unsafe { d.create_buffer(&info, None) } {
            // SAFETY: just created from this device, never used.
            unsafe { d.destroy_buffer(b, None) };
        }
    }

    /// The physical device's queue family used for compute.
    pub fn queue_family(&self) -> u32 {
        self.queue_family
    }
}

impl Device {
    /// The plan for `op`: the tuning given, else this device's cached one
    /// (when it still plans), else the default; refused on lavapipe where
    /// its loops exceed what llvmpipe runs.
    fn plan_for(&self, op: &Op, tuning: Option<&Tuning>) -> Result<plan::Plan, RuntimeError> {
        let plan = match tuning {
            Some(t) => plan::plan(op, t, &self.limits)?,
            None => match self.tuned.as_ref().and_then(|c| {
                c.get_vetted(
                    crate::tuning_cache::KeySpace::Vulkan,
                    op,
                    &|t| plan::plan(op, t, &self.limits).ok().map(|p| p.tuning),
                    &|| plan::candidates(op, &self.limits),
                )
            }) {
                // A cached tuning that no longer plans (another greta's
                // keys, a changed limit) is skipped, never an error.
                Some(e) => plan::plan(op, &e.tuning, &self.limits).or_else(|err| {
                    tracing::warn!("cached tuning {} for {op} not usable: {err}", e.tuning);
                    plan::plan(op, &Tuning::default(), &self.limits)
                })?,
                None => plan::plan(op, &Tuning::default(), &self.limits)?,
            },
        };
        if self.info.driver_id == VkDriver::Lavapipe {
            let trips = plan::max_loop_trips(op, &plan);
            if trips > LLVMPIPE_LOOP_LIMIT {
                return Err(RuntimeError::Unsupported(format!(
                    "{op} with {} needs {trips} loop iterations per invocation; lavapipe stops loops after {LLVMPIPE_LOOP_LIMIT}",
                    plan.tuning
                )));
            }
        }
        Ok(plan)
    }

    /// The pipelines that running each op (with the storage buffers it
    /// binds: `Some(n)` for a graph step, else the op's own) needs with its
    /// default or cached tuning; an op that does not plan needs none here.
    fn pipeline_keys(&self, ops: &[(Op, Option<usize>)]) -> Vec<pipelines::Key> {
        let mut keys = Vec::new();
        for (op, bound) in ops {
            let Ok(plan) = self.plan_for(op, None) else {
                continue;
            };
            let io = bound.unwrap_or(op.inputs().len() + op.outputs().len());
            let nbind = (io + plan.aux.len()) as u32;
            let passes = std::iter::once((plan.shader, &plan.spec))
                .chain(plan.then.iter().map(|p| (p.shader, &p.spec)));
            for (shader, spec) in passes {
                keys.push((shader, spec.clone(), nbind, plan.wave));
            }
        }
        keys
    }

    /// After a run or a graph: a fatal error loses the device; a success
    /// that compiled pipelines saves the pipeline cache.
    fn after_run<T>(&mut self, res: Result<T, RuntimeError>) -> Result<T, RuntimeError> {
        if let Err(e) = &res {
            if e.is_fatal_for_device() {
                self.lost = Some(e.to_string());
            }
        }
        if res.is_ok() && self.inner.pipelines.created > 0 {
            if let Err(e) = self.save_pipeline_cache() {
                tracing::warn!("pipeline cache not saved: {e}");
            }
        }
        res
    }
}

impl Backend for Device {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn supports(&self, op: &Op) -> Result<(), String> {
        if let Some(r) = crate::backend::composite_supported(self, op) {
            return r;
        }
        // Every shader a plan names is built in: `plan::Shader` has no other.
        let plan = plan::plan(op, &Tuning::default(), &self.limits).map_err(|e| e.to_string())?;
        if op.needs().subgroup_arith && !self.limits.subgroup_arith {
            return Err("device lacks subgroup arithmetic in compute shaders".into());
        }
        // llvmpipe (lavapipe) silently stops any loop after 65535 iterations
        // (counted per outermost loop): refuse shapes that would hit it.
        if self.info.driver_id == VkDriver::Lavapipe {
            let trips = plan::max_loop_trips(op, &plan);
            if trips > LLVMPIPE_LOOP_LIMIT {
                return Err(format!(
                    "{op} needs {trips} loop iterations per invocation; lavapipe stops loops after {LLVMPIPE_LOOP_LIMIT}"
                ));
            }
        }
        let specs: Vec<_> = op.inputs().into_iter().chain(op.outputs()).collect();
        for s in &specs {
            let bytes = (s.len * s.dtype.size()) as u64;
            if bytes > self.info.max_allocation_size {
                return Err(format!(
                    "buffer {} is {bytes} bytes, over maxMemoryAllocationSize {}",
                    s.name, self.info.max_allocation_size
                ));
            }
        }
        for d in &plan.dispatches {
            for (s, r) in specs.iter().zip(&d.ranges) {
                let bytes = ((s.len * s.dtype.size()) as u64).next_multiple_of(16);
                if r.is_none() && bytes > self.limits.max_range {
                    return Err(format!(
                        "buffer {} is {bytes} bytes, over maxStorageBufferRange {}",
                        s.name, self.limits.max_range
                    ));
                }
            }
        }
        Ok(())
    }

    fn run(&mut self, job: Job<'_>) -> Result<RunStats, RuntimeError> {
        crate::backend::preflight(self, &job)?;
        if job.op.is_composite() {
            let cached = crate::backend::cached_composite_tuning(
                self.tuned.as_ref(),
                crate::tuning_cache::KeySpace::Vulkan,
                job.op,
            );
            return crate::backend::run_composite(self, job, cached);
        }
        let plan = self.plan_for(job.op, job.opts.tuning.as_ref())?;
        let res = run::execute(self, &plan, job);
        self.after_run(res)
    }

    fn run_graph(&mut self, job: GraphJob<'_>) -> Result<GraphStats, RuntimeError> {
        crate::backend::graph_preflight(self, &job)?;
        let plans = job
            .graph
            .steps
            .iter()
            .enumerate()
            .map(|(i, st)| self.plan_for(&st.op, job.tuning(i)))
            .collect::<Result<Vec<_>, _>>()?;
        let res = graph::execute(self, &plans, job);
        self.after_run(res)
    }

    fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    fn prepare(&mut self, ops: &[Op]) -> usize {
        if self.lost.is_some() {
            return 0;
        }
        // A composite's steps are what runs, in the graph its cached tuning
        // picks (as `run_composite` does), each binding its own slots.
        let mut runs: Vec<(Op, Option<usize>)> = Vec::new();
        for op in ops {
            let cached = crate::backend::cached_composite_tuning(
                self.tuned.as_ref(),
                crate::tuning_cache::KeySpace::Vulkan,
                op,
            );
            let fusion = crate::backend::composite_plan(op, cached.as_ref())
                .map(|(f, _)| f)
                .unwrap_or_default();
            match op.composite_as(fusion) {
                Some(Ok(c)) => runs.extend(
                    c.graph
                        .steps
                        .iter()
                        .map(|st| (st.op.clone(), Some(st.bind.len()))),
                ),
                Some(Err(_)) => {}
                None => runs.push((op.clone(), None)),
            }
        }
        let keys = self.pipeline_keys(&runs);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let inner = &mut *self.inner;
        let made =
            inner
                .pipelines
                .create_missing(&inner.device, &inner.pipeline_cache, keys, threads);
        if made > 0 {
            if let Err(e) = self.save_pipeline_cache() {
                tracing::warn!("pipeline cache not saved: {e}");
            }
        }
        made
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
        let res = host_copy::execute(self, job);
        Some(self.after_run(res))
    }

    fn tuning_candidates(&self, op: &Op) -> Vec<Tuning> {
        if op.is_composite() {
            return crate::backend::composite_candidates(op);
        }
        plan::candidates(op, &self.limits)
    }

    /// The device's own copy rate for a memory-bound op's footprint (the
    /// faster of `vkCmdCopyBuffer` and greta's copy shader, [`ceiling`]):
    /// what its ratio is read against, as the driver's memcpy is on HIP and
    /// CUDA.
    fn ceiling(
        &mut self,
        op: &Op,
        timeout: std::time::Duration,
    ) -> Option<Result<crate::ceiling::Ceiling, crate::ceiling::CeilingError>> {
        ceiling::copy_ceiling(self, op, timeout)
    }

    fn validation_messages(&self) -> Vec<String> {
        self.inner.device.instance().messages()
    }

    fn keep_scratch(&mut self, on: bool) -> Result<(), RuntimeError> {
        self.keep_scratch = on;
        Ok(())
    }

    fn release_kept(&mut self) -> u64 {
        self.inner.kept.drain(..).map(|b| b.size).sum()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.lost.is_some() {
            // A queue that timed out may still be executing: destroying
            // anything it uses is undefined behaviour. Leak it all (`inner`
            // is never dropped, nor the instance it holds); the process exit
            // reclaims it.
            return;
        }
        if let Err(e) = self.save_pipeline_cache() {
            tracing::warn!("pipeline cache not saved: {e}");
        }
        // SAFETY: `inner` is dropped once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        let _ = self.phys;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radvs_null_device_is_refused_for_runs_and_nothing_else() {
        let info = |name: &str, driver: VkDriver| DeviceInfo {
            name: name.into(),
            driver_id: driver,
            ..DeviceInfo::placeholder()
        };
        // As Mesa 25.0 names it with RADV_FORCE_FAMILY=gfx1151.
        let why = cannot_execute(&info("Null hardware (RADV GFX1151)", VkDriver::Radv)).unwrap();
        assert!(
            why.contains("RADV_FORCE_FAMILY") && why.contains("--compile-only"),
            "{why}"
        );
        for (name, driver) in [
            // Mesa 26 over its amdgpu drm-shim: submissions are accepted.
            ("AMD Radeon RX 7900 XTX (RADV NAVI31)", VkDriver::Radv),
            ("Null hardware", VkDriver::Lavapipe),
            ("llvmpipe (LLVM 15.0.6, 256 bits)", VkDriver::Lavapipe),
        ] {
            assert_eq!(cannot_execute(&info(name, driver)), None, "{name}");
        }
    }

    /// attn_decode_f16's last workgroup per head sets the head's counter
    /// back to 0: after three launches in one run, the scratch that run
    /// kept holds its partials and zero counters (a kernel that left them
    /// counted would combine nothing on the next launch).
    #[test]
    fn attn_decode_leaves_its_counters_at_zero_for_the_next_launch() {
        let mut dev = Device::open_with(&OpenOptions {
            select: crate::info::DeviceSelect::Cpu,
            validation: Some(true),
            cache: CacheDir::Off,
            tuning_cache: CacheDir::Off,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("opening lavapipe failed: {e}"));
        let (heads, head_dim, len) = (3, 32, 1000);
        let op = Op::AttnDecodeF16 {
            heads,
            head_dim,
            len,
            max_seq: len,
        };
        let halves = |n: usize, k: usize| {
            greta_kernels::HostBuf::F16(
                (0..n)
                    .map(|i| half::f16::from_f32(((i * k) % 17) as f32 / 17.0 - 0.5))
                    .collect(),
            )
        };
        let d = heads * head_dim;
        let inputs = [halves(d, 3), halves(len * d, 5), halves(len * d, 7)];
        let mut out = [greta_kernels::HostBuf::poisoned(
            greta_kernels::DType::F16,
            d,
        )];
        dev.keep_scratch(true).unwrap();
        let opts = crate::job::RunOpts {
            repeats: 3,
            tuning: Some(Tuning::default().with(crate::tuning::Knob::Chunks, 1)),
            ..Default::default()
        };
        dev.run(Job::new(&op, &inputs, &mut out, &opts))
            .unwrap_or_else(|e| panic!("{e}"));
        let chunks = len.div_ceil(greta_kernels::attn_decode_chunk(head_dim));
        assert!(chunks >= 3, "several workgroups per head");
        let kept = dev
            .inner
            .kept
            .last_mut()
            .expect("the run's scratch was kept");
        let words: Vec<u32> = kept.mapped().expect("lavapipe maps its memory")
            [..4 * (heads * chunks * (head_dim + 2) + heads)]
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let (partials, counters) = words.split_at(heads * chunks * (head_dim + 2));
        assert_eq!(
            counters,
            vec![0; heads],
            "the counters after three launches"
        );
        assert!(
            partials.iter().any(|&w| w != 0),
            "the partials were written"
        );
        assert!(dev.release_kept() > 0);
        assert_eq!(dev.validation_messages(), Vec::<String>::new());
    }
}
