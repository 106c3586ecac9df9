//! Executing a [`Plan`]: upload, timed dispatches, readback, all in one
//! command buffer, submitted once and waited on with a timeout. Recording
//! is [`super::record`], submission and timestamps [`super::submit`], the
//! untimed passes before the timed ones [`super::warmup`].

use super::memory::{self, Buffer};
use super::owned::DescriptorSets;
use super::plan::Plan;
use super::record::{record_pass, SHADER_RW};
use super::submit::{api, submit_and_wait, Submission, Ticks};
use super::warmup::{time_key, warmup_passes};
use super::Device;
use crate::error::RuntimeError;
use crate::job::{Job, RunStats, TimingSource};
use ash::vk;
use gpu_allocator::MemoryLocation;
use greta_kernels::HostBuf;

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
    // The op's scratch (the first of the plan's extra buffers) is zeroed on
    // the device: a memory test's GiB of zeros through a staging buffer
    // was most of its run.
    let io = n_in + n_out;
    let zeroed = io..io + op.scratch().len().min(plan.aux.len());
    upload_buffers(dev, &host, n_in, n_out, &zeroed, res)?;
    let device = dev.inner.device.clone();
    let n_sets = plan.all_dispatches().count();
    let layouts = vec![pipe.set_layout; n_sets];
    let sets = DescriptorSets::new(&device, &layouts, n_sets as u32 * nbind)
        .map_err(|(call, e)| api(call)(e))?;
    let raw: Vec<vk::Buffer> = res.device_bufs.iter().map(|b| b.raw).collect();
    write_descriptor_sets(&device.raw, plan, nbind, &sets.sets, &raw);
    let sets = &*res.descriptors.insert(sets);
    dev.warmth.next(&time_key(op, plan));
    let (fence, rec, query_pool) =
        res.sub
            .begin(dev, &device.raw, use_ts.then_some(2 * repeats))?;
    let warmup = warmup_passes(dev, op, plan);
    for (b, (dbuf, sbuf)) in res.device_bufs.iter().zip(&res.staging).enumerate() {
        if zeroed.contains(&b) {
            rec.fill(dbuf, 0);
        } else {
            rec.copy(sbuf, dbuf, dbuf.size);
        }
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
    dev.worked(wall);
    for (k, out) in outputs.iter_mut().enumerate() {
        let len = out.byte_len();
        let src = res.staging[n_in + k].mapped()?;
        crate::bulk::copy(out.as_bytes_mut(), &src[..len]);
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
    zeroed: &std::ops::Range<usize>,
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
        // A zeroed buffer is filled on the device: its staging is never read.
        if !zeroed.contains(&b) {
            crate::bulk::copy(&mut s.mapped()?[..h.byte_len()], h.as_bytes());
        }
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
