//! Executing a [`Plan`]: upload, timed dispatches, readback, all in one
//! command buffer, submitted once and waited on with a timeout.

use super::memory::{self, Buffer};
use super::owned::{CommandBuffer, DescriptorSets, Owned};
use super::plan::Plan;
use super::Device;
use crate::{HostBuf, Job, Op, RunOpts, RunStats, RuntimeError, TimingSource};
use ash::vk;
use gpu_allocator::MemoryLocation;
use greta_vocab::EnvVars;
use std::time::Instant;

/// Untimed passes before the timed repeats (GPUs only): at least this
/// many, and enough for about [`WARMUP_NS`] of GPU time once a run of the
/// same shape class has been timed on this device.
const WARMUP_PASSES: u32 = 2;
/// GPU time of warm-up before the timed repeats of small ops (launch-bound
/// or cache-resident; quick profiles stay quick).
const WARMUP_NS: u64 = 30_000_000;
/// GPU time of warm-up before the timed repeats of large ops (a pass moves
/// at least [`LARGE_BYTES`] or does at least [`LARGE_FLOPS`]). An idle GPU clocks down
/// (H200: 345 MHz SM clock at rest) and the driver clocks it up only after
/// sustained work: timed straight after the seconds a gate spends checking
/// results on the CPU, fill 1 GiB ran at 1255 GB/s after 30 ms of warm-up
/// and at 4359 GB/s after 1 s (H200, driver 580.159.04, 2026-11-22; copy
/// 1691 -> 4085, rmsnorm 4096x8192 1492 -> 3826 GB/s, gemm_f16 4096
/// 13 -> 65 TFLOP/s).
const WARMUP_NS_LARGE: u64 = 1_000_000_000;
const LARGE_BYTES: u64 = 64 << 20;
const LARGE_FLOPS: u64 = 8_000_000_000;
/// Most warm-up passes (bounds the command buffer of very short kernels).
const WARMUP_MAX_PASSES: u64 = 20_000;

/// Longest warm-up `GRETA_VK_WARMUP_MS` can ask for; larger values are
/// this (a warm-up also stops at [`WARMUP_MAX_PASSES`]).
const WARMUP_MAX: std::time::Duration = std::time::Duration::from_secs(60);

/// `GRETA_VK_WARMUP_MS` in nanoseconds (unset: `None`), clamped to
/// [`WARMUP_MAX`]; garbage is an error naming the variable, as for every
/// numeric setting (`greta_vocab::number`).
pub(super) fn warmup_from_env() -> Result<Option<u64>, RuntimeError> {
    greta_vocab::number::env_duration(
        EnvVars::GRETA_VK_WARMUP_MS,
        greta_vocab::number::Unit::Millis,
        WARMUP_MAX,
    )
    .map(|d| d.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
    .map_err(RuntimeError::BadInput)
}

/// Per-run objects, each destroying itself on drop (see [`super::owned`]).
/// Dropped after a completed submission (or one never made); leaked with
/// `mem::forget` after a timeout or a lost device, since the queue may
/// still use them.
#[derive(Default)]
struct Resources {
    device_bufs: Vec<Buffer>,
    staging: Vec<Buffer>,
    descriptors: Option<DescriptorSets>,
    sub: Submission,
}

impl Resources {
    /// After a completed run: the buffers go back to the device's pool for
    /// the next run, the rest is dropped (destroyed).
    fn recycle(mut self, dev: &mut Device) {
        for b in self.device_bufs.drain(..).chain(self.staging.drain(..)) {
            dev.inner.buffers.put(b);
        }
    }
}

/// The compiled pipeline's handles a run records with; the pipeline itself
/// stays in the device's cache for the device's lifetime.
#[derive(Clone, Copy)]
pub(super) struct PipelineHandles {
    pub(super) raw: vk::Pipeline,
    pub(super) layout: vk::PipelineLayout,
    pub(super) set_layout: vk::DescriptorSetLayout,
}

pub fn execute(dev: &mut Device, plan: &Plan, job: Job) -> Result<RunStats, RuntimeError> {
    let op = job.op;
    let mut res = Resources::default();
    let io = job.inputs.len() + job.outputs.len();
    match record_and_submit(dev, plan, job, &mut res) {
        Ok(stats) => {
            if dev.keep_scratch {
                // The scratch follows the inputs and outputs (`Plan::aux`):
                // kept allocated, so the next run's is other memory.
                let n = op
                    .scratch()
                    .len()
                    .min(res.device_bufs.len().saturating_sub(io));
                dev.inner.kept.extend(res.device_bufs.drain(io..io + n));
                // Their staging goes back to the pool: the next slice's
                // upload reuses it (pinning GiBs anew costs seconds).
                for b in res.staging.drain(io..io + n).collect::<Vec<_>>() {
                    dev.inner.buffers.put(b);
                }
            }
            res.recycle(dev);
            dev.last_ns.insert(time_key(op, plan), stats.median_ns());
            Ok(stats)
        }
        Err(e) if e.is_fatal_for_device() => {
            // The queue may still use them: never destroyed (see `Device`'s Drop).
            std::mem::forget(res);
            Err(e)
        }
        // Dropping `res` destroys what the run made: nothing uses it any more.
        Err(e) => Err(e),
    }
}

pub(super) fn api(call: &str) -> impl Fn(vk::Result) -> RuntimeError + '_ {
    move |e| match e {
        vk::Result::ERROR_DEVICE_LOST => {
            RuntimeError::DeviceLost(format!("{call}: VK_ERROR_DEVICE_LOST"))
        }
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
            RuntimeError::OutOfMemory(format!("{call}: {e}"))
        }
        _ => RuntimeError::api(call, e),
    }
}

/// Prepares, records, submits and waits for one run; what it creates goes
/// into `res`, which the caller destroys or leaks.
fn record_and_submit(
    dev: &mut Device,
    plan: &Plan,
    job: Job,
    res: &mut Resources,
) -> Result<RunStats, RuntimeError> {
    let (op, inputs, outputs, opts) = (job.op, job.inputs, job.outputs, job.opts);
    let n_in = inputs.len();
    let n_out = outputs.len();
    let host: Vec<&HostBuf> = inputs
        .iter()
        .chain(outputs.iter())
        .chain(plan.aux.iter())
        .collect();
    let nbind = host.len() as u32;
    let use_ts = dev.info.timestamps && dev.timestamp_bits > 0;
    let repeats = opts.repeats;

    // Pipeline first: a shader/tuning problem is reported before any allocation.
    let pipe = pipeline(dev, plan.shader, &plan.spec, nbind, plan.wave)?;
    // Later passes: their pipelines, over the same bindings.
    let later = plan
        .then
        .iter()
        .map(|p| pipeline(dev, p.shader, &p.spec, nbind, plan.wave))
        .collect::<Result<Vec<_>, _>>()?;
    upload_buffers(dev, &host, n_in, n_out, res)?;
    let device = dev.inner.device.clone();
    let n_sets = plan.all_dispatches().count();
    let layouts = vec![pipe.set_layout; n_sets];
    let sets = DescriptorSets::new(&device, &layouts, n_sets as u32 * nbind)
        .map_err(|(call, e)| api(call)(e))?;
    let raw: Vec<vk::Buffer> = res.device_bufs.iter().map(|b| b.raw).collect();
    write_descriptor_sets(&device.raw, plan, nbind, &sets.sets, &raw);
    let sets = &*res.descriptors.insert(sets);
    let (fence, rec, query_pool) =
        res.sub
            .begin(dev, &device.raw, use_ts.then_some(2 * repeats))?;
    let warmup = warmup_passes(dev, op, plan);
    for (dbuf, sbuf) in res.device_bufs.iter().zip(&res.staging) {
        rec.copy(sbuf, dbuf, dbuf.size);
    }
    rec.barrier(
        vk::PipelineStageFlags::TRANSFER,
        vk::AccessFlags::TRANSFER_WRITE,
        vk::PipelineStageFlags::COMPUTE_SHADER,
        SHADER_RW,
    );
    let total = warmup + repeats;
    for it in 0..total {
        // Warm-up passes first, untimed; then the timed repeats.
        let timed = query_pool.filter(|_| it >= warmup);
        let r = it.saturating_sub(warmup);
        record_pass(&rec, plan, pipe, &later, &sets.sets, timed.map(|q| (q, r)));
        if it + 1 < total {
            // Each repeat sees the previous one complete: timings do not overlap.
            rec.barrier(
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_WRITE,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                SHADER_RW,
            );
        }
    }
    rec.barrier(
        vk::PipelineStageFlags::COMPUTE_SHADER,
        vk::AccessFlags::SHADER_WRITE,
        vk::PipelineStageFlags::TRANSFER,
        vk::AccessFlags::TRANSFER_READ,
    );
    for b in n_in..n_in + n_out {
        rec.copy(
            &res.device_bufs[b],
            &res.staging[b],
            res.device_bufs[b].size,
        );
    }
    rec.end_for_host()?;

    let wall = submit_and_wait(dev, rec.cmd, fence, op, opts)?;
    for (k, out) in outputs.iter_mut().enumerate() {
        let len = out.byte_len();
        let src = res.staging[n_in + k].mapped()?;
        out.as_bytes_mut().copy_from_slice(&src[..len]);
    }
    let (device_ns, timing) = match query_pool {
        Some(q) => (
            timestamps(dev, q, plan, repeats)?,
            TimingSource::DeviceTimestamps,
        ),
        None => {
            let mut runs = total as u128;
            if plan.per_dispatch {
                runs *= plan.dispatches.len().max(1) as u128;
            }
            let per = (wall.as_nanos() / runs) as u64;
            (vec![per; repeats as usize], TimingSource::WallClock)
        }
    };
    Ok(RunStats {
        device_ns,
        timing,
        wall,
        kernel: plan.shader.name().to_string(),
        tuning: plan.tuning.clone(),
        dispatches_per_repeat: n_sets as u32,
        step_ns: Vec::new(),
    })
}

/// What one submission records into and waits on: a timestamp pool (when
/// the device times), a fence and a command buffer, each destroying itself
/// when dropped. Empty until [`Submission::begin`]; a run's `Resources`
/// hold it last, so it goes (or is leaked) with them, after their buffers.
#[derive(Default)]
pub(super) struct Submission {
    query_pool: Option<Owned<vk::QueryPool>>,
    fence: Option<Owned<vk::Fence>>,
    cmd: Option<CommandBuffer>,
}

impl Submission {
    /// Creates the objects (a pool of `queries` timestamps where given; a
    /// failure halfway drops what was made), begins recording into the
    /// command buffer and resets the pool: the fence to wait on, the
    /// recorder over `device` and the pool.
    pub(super) fn begin<'a>(
        &mut self,
        dev: &Device,
        device: &'a ash::Device,
        queries: Option<u32>,
    ) -> Result<(vk::Fence, Recorder<'a>, Option<vk::QueryPool>), RuntimeError> {
        let owner = &dev.inner.device;
        let pool = match queries {
            Some(n) => {
                let info = vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(n);
                Some(
                    Owned::create(owner, |d| {
                        // SAFETY: a live device (`d` is the owner's); the create info outlives the call.
                        unsafe { d.create_query_pool(&info, None) }
                    })
                    .map_err(api("vkCreateQueryPool"))?,
                )
            }
            None => None,
        };
        let fence = Owned::create(owner, |d| {
            // SAFETY: as above.
            unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }
        })
        .map_err(api("vkCreateFence"))?;
        let cmd = CommandBuffer::allocate(&dev.inner.command_pool)
            .map_err(api("vkAllocateCommandBuffers"))?;
        self.query_pool = pool;
        let fence = self.fence.insert(fence).raw();
        let cmd = self.cmd.insert(cmd).raw();
        let rec = Recorder { d: device, cmd };
        rec.begin()?;
        let query_pool = self.query_pool.as_ref().map(Owned::raw);
        if let (Some(q), Some(n)) = (query_pool, queries) {
            rec.reset_queries(q, n);
        }
        Ok((fence, rec, query_pool))
    }
}

pub(super) const SHADER_RW: vk::AccessFlags = vk::AccessFlags::from_raw(
    vk::AccessFlags::SHADER_READ.as_raw() | vk::AccessFlags::SHADER_WRITE.as_raw(),
);

/// A pass's pipeline, from the device's cache or created through it.
pub(super) fn pipeline(
    dev: &mut Device,
    shader: super::plan::Shader,
    spec: &[u32],
    nbind: u32,
    wave: Option<super::plan::Wave>,
) -> Result<PipelineHandles, RuntimeError> {
    let inner = &mut *dev.inner;
    let p = inner.pipelines.get(
        &inner.device,
        &inner.pipeline_cache,
        shader,
        spec,
        nbind,
        wave,
    )?;
    Ok(PipelineHandles {
        raw: p.raw.raw(),
        layout: p.layout.raw(),
        set_layout: p.set_layout.raw(),
    })
}

/// Device-local storage + a staging twin for upload (and readback of
/// outputs) per binding, reusing the last run's buffers where sizes match;
/// the staging buffers are filled with the host data.
fn upload_buffers(
    dev: &mut Device,
    host: &[&HostBuf],
    n_in: usize,
    n_out: usize,
    res: &mut Resources,
) -> Result<(), RuntimeError> {
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_DST
        | vk::BufferUsageFlags::TRANSFER_SRC;
    let staging_usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
    let kinds: Vec<(u64, MemoryLocation)> = host
        .iter()
        .enumerate()
        .map(|(b, h)| {
            let size = (h.byte_len() as u64).next_multiple_of(16).max(16);
            let is_out = b >= n_in && b < n_in + n_out;
            let loc = if is_out {
                MemoryLocation::GpuToCpu
            } else {
                MemoryLocation::CpuToGpu
            };
            (size, loc)
        })
        .collect();
    // Reuse the last run's buffers where sizes match; free the others first.
    let wanted: Vec<_> = kinds
        .iter()
        .flat_map(|&(size, loc)| {
            [
                (size, usage, MemoryLocation::GpuOnly),
                (size, staging_usage, loc),
            ]
        })
        .collect();
    let inner = &mut *dev.inner;
    inner.buffers.trim_to(&wanted);
    for (b, h) in host.iter().enumerate() {
        let (size, loc) = kinds[b];
        let dbuf = match inner.buffers.take(size, usage, MemoryLocation::GpuOnly) {
            Some(x) => x,
            None => memory::create(
                &inner.allocator,
                &format!("binding {b}"),
                size,
                usage,
                MemoryLocation::GpuOnly,
            )?,
        };
        res.device_bufs.push(dbuf);
        let mut s = match inner.buffers.take(size, staging_usage, loc) {
            Some(x) => x,
            None => memory::create(
                &inner.allocator,
                &format!("staging {b}"),
                size,
                staging_usage,
                loc,
            )?,
        };
        s.mapped()?[..h.byte_len()].copy_from_slice(h.as_bytes());
        res.staging.push(s);
    }
    Ok(())
}

/// Points binding `b` of each dispatch's set at device buffer `b` (the
/// dispatch's sub-range of it where the plan splits a buffer).
pub(super) fn write_descriptor_sets(
    d: &ash::Device,
    plan: &Plan,
    nbind: u32,
    sets: &[vk::DescriptorSet],
    bufs: &[vk::Buffer],
) {
    for (disp, &set) in plan.all_dispatches().zip(sets) {
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = (0..nbind as usize)
            .map(|b| {
                let (offset, range) = disp
                    .ranges
                    .get(b)
                    .copied()
                    .flatten()
                    .unwrap_or((0, vk::WHOLE_SIZE));
                [vk::DescriptorBufferInfo {
                    buffer: bufs[b],
                    offset,
                    range,
                }]
            })
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .enumerate()
            .map(|(b, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: the set, its layout's bindings and the buffers are live
        // objects of this device; the set is not in use by any submission
        // (just allocated); `writes` and `infos` outlive the call.
        unsafe { d.update_descriptor_sets(&writes, &[]) };
    }
}

/// Untimed warm-up passes on GPUs: an idle GPU runs the first
/// milliseconds at idle clocks (H200: 345 MHz SM clock at rest).
fn warmup_passes(dev: &Device, op: &Op, plan: &Plan) -> u32 {
    if dev.info.is_cpu() {
        return 0;
    }
    // Per repeat, the last time measured for this plan.
    let per = dev
        .last_ns
        .get(&time_key(op, plan))
        .copied()
        .filter(|&ns| ns > 0)
        .map(|ns| {
            if plan.per_dispatch {
                ns * plan.dispatches.len().max(1) as u64
            } else {
                ns
            }
        });
    // GRETA_VK_WARMUP_MS overrides the warm-up time (measurements); read
    // and checked once, at open (`warmup_from_env`).
    let target = dev.warmup_ns.unwrap_or(
        if op.bytes_moved() >= LARGE_BYTES || op.flops() >= LARGE_FLOPS {
            WARMUP_NS_LARGE
        } else {
            WARMUP_NS
        },
    );
    per.map_or(WARMUP_PASSES as u64, |ns| {
        target
            .div_ceil(ns)
            .clamp(WARMUP_PASSES as u64, WARMUP_MAX_PASSES)
    }) as u32
}

/// Which earlier run's time sizes a run's warm-up: one of the same shape
/// class, kernel and tuning. A shape class alone is not enough: in a tune
/// sweep a candidate 10x slower than the one timed before it (the scalar
/// prefill attention after the cooperative-matrix one, H200, session 13)
/// got a warm-up sized from the fast one's time, about 11.5 s of GPU work
/// in one submission against its 10 s limit, and the device was lost.
fn time_key(op: &Op, plan: &Plan) -> String {
    format!(
        "{}|{}|{}",
        crate::tuning_cache::shape_class(op),
        plan.shader.name(),
        plan.tuning
    )
}

/// One repeat of the plan: its dispatches, then those of each later pass
/// behind a barrier (descriptor sets in [`Plan::all_dispatches`] order);
/// `timed` = the query pool and repeat index whose two timestamps bracket it.
pub(super) fn record_pass(
    rec: &Recorder<'_>,
    plan: &Plan,
    pipe: PipelineHandles,
    later: &[PipelineHandles],
    sets: &[vk::DescriptorSet],
    timed: Option<(vk::QueryPool, u32)>,
) {
    let layout = pipe.layout;
    rec.bind_pipeline(pipe.raw);
    // BOTTOM_OF_PIPE, not TOP_OF_PIPE: a top-of-pipe timestamp is written
    // as soon as the command is reached, while the previous repeat may
    // still run (the barrier between repeats holds back compute work, not
    // timestamps), and then counts part of that repeat too. Seen on the
    // H200 (2026-11-21): fill 1 GiB measured 870 us per repeat against
    // 246 us for the first. Bottom-of-pipe waits for all earlier work.
    if let Some((q, r)) = timed {
        rec.timestamp(q, 2 * r);
    }
    for (di, disp) in plan.dispatches.iter().enumerate() {
        if plan.per_dispatch && di > 0 {
            // A dependent chain: each dispatch waits for the previous one.
            rec.barrier(
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_WRITE,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                SHADER_RW,
            );
        }
        if let Some(&set) = sets.get(di) {
            rec.bind_set(layout, set);
        }
        if !disp.push.is_empty() {
            let bytes: Vec<u8> = disp.push.iter().flat_map(|w| w.to_le_bytes()).collect();
            rec.push_constants(layout, &bytes);
        }
        rec.dispatch(disp.groups);
    }
    let mut set_at = plan.dispatches.len();
    for (pass, p) in plan.then.iter().zip(later) {
        // The previous pass's results are what this one reads.
        rec.barrier(
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::AccessFlags::SHADER_WRITE,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            SHADER_RW,
        );
        rec.bind_pipeline(p.raw);
        for disp in &pass.dispatches {
            if let Some(&set) = sets.get(set_at) {
                rec.bind_set(p.layout, set);
            }
            set_at += 1;
            if !disp.push.is_empty() {
                let bytes: Vec<u8> = disp.push.iter().flat_map(|w| w.to_le_bytes()).collect();
                rec.push_constants(p.layout, &bytes);
            }
            rec.dispatch(disp.groups);
        }
    }
    if let Some((q, r)) = timed {
        rec.timestamp(q, 2 * r + 1);
    }
}

/// Records into one command buffer. Every method's SAFETY rests on the
/// same facts: `cmd` was allocated from `d`'s pool and is recording
/// (between [`Recorder::begin`] and [`Recorder::end`]) on this thread only,
/// and each handle passed in is a live object of `d` that the run's
/// `Resources` (or the device's pipeline cache) keep alive until the
/// submission has completed or been abandoned.
pub(super) struct Recorder<'a> {
    pub(super) d: &'a ash::Device,
    pub(super) cmd: vk::CommandBuffer,
}

impl Recorder<'_> {
    pub(super) fn begin(&self) -> Result<(), RuntimeError> {
        let info = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: a freshly allocated command buffer (initial state).
        unsafe { self.d.begin_command_buffer(self.cmd, &info) }.map_err(api("vkBeginCommandBuffer"))
    }

    pub(super) fn end(&self) -> Result<(), RuntimeError> {
        // SAFETY: recording (see the type); no query is active.
        unsafe { self.d.end_command_buffer(self.cmd) }.map_err(api("vkEndCommandBuffer"))
    }

    /// Makes the copies back to the staging buffers visible to the host,
    /// then ends recording: how every submission greta waits on finishes.
    pub(super) fn end_for_host(&self) -> Result<(), RuntimeError> {
        self.barrier(
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_WRITE,
            vk::PipelineStageFlags::HOST,
            vk::AccessFlags::HOST_READ,
        );
        self.end()
    }

    pub(super) fn reset_queries(&self, pool: vk::QueryPool, count: u32) {
        // SAFETY: recording (see the type); `count` is the pool's size.
        unsafe { self.d.cmd_reset_query_pool(self.cmd, pool, 0, count) }
    }

    pub(super) fn timestamp(&self, pool: vk::QueryPool, query: u32) {
        // SAFETY: recording (see the type); `query` < the pool's size, reset
        // at the start of this buffer and written once.
        unsafe {
            self.d.cmd_write_timestamp(
                self.cmd,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                pool,
                query,
            )
        }
    }

    /// Copies the first `size` bytes of `src` into `dst`.
    pub(super) fn copy(&self, src: &Buffer, dst: &Buffer, size: u64) {
        let region = [vk::BufferCopy {
            src_offset: 0,
            dst_offset: 0,
            size,
        }];
        // SAFETY: recording (see the type); both buffers hold `size` bytes
        // (twins of one size) with TRANSFER_SRC/DST usage.
        unsafe { self.d.cmd_copy_buffer(self.cmd, src.raw, dst.raw, &region) }
    }

    /// A global memory barrier: `src` accesses of `src_stage` before it are
    /// visible to `dst` accesses of `dst_stage` after it.
    pub(super) fn barrier(
        &self,
        src_stage: vk::PipelineStageFlags,
        src: vk::AccessFlags,
        dst_stage: vk::PipelineStageFlags,
        dst: vk::AccessFlags,
    ) {
        let mb = [vk::MemoryBarrier::default()
            .src_access_mask(src)
            .dst_access_mask(dst)];
        // SAFETY: recording (see the type); the access masks belong to the stages.
        unsafe {
            self.d.cmd_pipeline_barrier(
                self.cmd,
                src_stage,
                dst_stage,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            )
        }
    }

    pub(super) fn bind_pipeline(&self, pipeline: vk::Pipeline) {
        // SAFETY: recording (see the type); a compute pipeline.
        unsafe {
            self.d
                .cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, pipeline)
        }
    }

    pub(super) fn bind_set(&self, layout: vk::PipelineLayout, set: vk::DescriptorSet) {
        // SAFETY: recording (see the type); the set was allocated with the
        // layout's set layout and written before recording.
        unsafe {
            self.d.cmd_bind_descriptor_sets(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                layout,
                0,
                &[set],
                &[],
            )
        }
    }

    pub(super) fn push_constants(&self, layout: vk::PipelineLayout, bytes: &[u8]) {
        // SAFETY: recording (see the type); the layout reserves PUSH_BYTES
        // for compute and plans push at most that many.
        unsafe {
            self.d
                .cmd_push_constants(self.cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, bytes)
        }
    }

    pub(super) fn dispatch(&self, groups: [u32; 3]) {
        // SAFETY: recording (see the type) with a compute pipeline bound;
        // plans keep each group count within the device's limits.
        unsafe {
            self.d
                .cmd_dispatch(self.cmd, groups[0], groups[1], groups[2])
        }
    }
}

/// Submits `cmd` signalling `fence` and waits for it up to the run's
/// timeout; returns the wall time from submission to completion.
pub(super) fn submit_and_wait(
    dev: &Device,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    what: &dyn std::fmt::Display,
    opts: &RunOpts,
) -> Result<std::time::Duration, RuntimeError> {
    let d = &dev.inner.device.raw;
    let cmds = [cmd];
    let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
    let start = Instant::now();
    dev.inner.device.mark_submitted();
    // SAFETY: `cmd` is fully recorded (executable state) and `fence`
    // unsignalled, both of this device; the queue is used by this thread
    // only (`Device` is borrowed for the run).
    unsafe { d.queue_submit(dev.inner.queue, &submit, fence) }.map_err(api("vkQueueSubmit"))?;
    let timeout_ns = u64::try_from(opts.timeout.as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: a live fence of this device.
    match unsafe { d.wait_for_fences(&[fence], true, timeout_ns) } {
        Ok(()) => Ok(start.elapsed()),
        Err(vk::Result::TIMEOUT) => Err(RuntimeError::Timeout {
            what: format!("{what} x{} on {}", opts.repeats, dev.info.name),
            timeout: opts.timeout,
            waited: start.elapsed(),
        }),
        Err(e) => Err(api("vkWaitForFences")(e)),
    }
}

/// A query pool's timestamps as ticks masked to the device's valid bits,
/// with the period that turns a difference of them into nanoseconds: what
/// a single run and a graph replay both read back.
pub(super) struct Ticks {
    pub(super) ts: Vec<u64>,
    mask: u64,
    period: f64,
}

impl Ticks {
    /// The first `count` timestamps of `pool`.
    pub(super) fn read(
        dev: &Device,
        pool: vk::QueryPool,
        count: u32,
    ) -> Result<Ticks, RuntimeError> {
        let mut ts = vec![0u64; count as usize];
        // SAFETY: a live pool of this device with `count` queries, all
        // written by the completed submission; 64-bit results fit `u64`s.
        unsafe {
            dev.inner.device.raw.get_query_pool_results(
                pool,
                0,
                &mut ts,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(api("vkGetQueryPoolResults"))?;
        let mask = if dev.timestamp_bits >= 64 {
            u64::MAX
        } else {
            (1u64 << dev.timestamp_bits) - 1
        };
        for t in &mut ts {
            *t &= mask;
        }
        Ok(Ticks {
            ts,
            mask,
            period: dev.info.timestamp_period_ns,
        })
    }

    /// Nanoseconds from tick `from` to tick `to` (a counter wrap between
    /// them reads as the right difference).
    pub(super) fn ns(&self, from: u64, to: u64) -> f64 {
        (to.wrapping_sub(from) & self.mask) as f64 * self.period
    }
}

/// Nanoseconds per repeat from the pool's timestamp pairs (per dispatch
/// where the plan times each dispatch of a chain).
fn timestamps(
    dev: &Device,
    pool: vk::QueryPool,
    plan: &Plan,
    repeats: u32,
) -> Result<Vec<u64>, RuntimeError> {
    let t = Ticks::read(dev, pool, 2 * repeats)?;
    let per = if plan.per_dispatch {
        plan.dispatches.len().max(1) as f64
    } else {
        1.0
    };
    Ok(t.ts
        .chunks(2)
        .map(|c| t.ns(c[0], c[1]) / per)
        .map(|v| v.round() as u64)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::time_key;
    use crate::vulkan::plan::{plan, test_limits};
    use crate::{Knob, Op, Tuning};

    /// A warm-up is sized from the same plan's last time: the scalar
    /// attention kernel does not inherit the matrix kernel's (10x shorter)
    /// time, nor a tile size another's.
    #[test]
    fn a_warm_up_is_sized_from_the_same_plans_time_only() {
        let lim = test_limits::nvidia();
        let attn = Op::AttnPrefillF16 {
            tokens: 2048,
            heads: 32,
            head_dim: 128,
            pos0: 0,
            max_seq: 2048,
        };
        let key = |op: &Op, t: Tuning| time_key(op, &plan(op, &t, &lim).unwrap());
        let matrix = key(&attn, Tuning::default());
        assert_eq!(matrix, key(&attn, Tuning::default()));
        assert_ne!(matrix, key(&attn, Tuning::default().with(Knob::Coopmat, 0)));
        let norm = Op::RmsNorm {
            rows: 512,
            cols: 4096,
            eps: 1e-5,
        };
        assert_ne!(
            key(&norm, Tuning::default().with(Knob::Wg, 64)),
            key(&norm, Tuning::default().with(Knob::Wg, 256))
        );
    }
}
