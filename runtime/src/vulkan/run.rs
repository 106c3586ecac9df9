//! Executing a [`Plan`]: upload, timed dispatches, readback, all in one
//! command buffer, submitted once and waited on with a timeout.

use super::memory::{self, Buffer};
use super::plan::Plan;
use super::Device;
use crate::{HostBuf, Op, RunOpts, RunStats, RuntimeError, TimingSource};
use ash::vk;
use gpu_allocator::MemoryLocation;
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

/// Per-run objects. Destroyed after a completed submission; leaked (never
/// touched again) after a timeout, since the queue may still use them.
#[derive(Default)]
struct Resources {
    device_bufs: Vec<Buffer>,
    staging: Vec<Buffer>,
    desc_pool: vk::DescriptorPool,
    query_pool: vk::QueryPool,
    fence: vk::Fence,
    cmd: vk::CommandBuffer,
}

impl Resources {
    fn destroy(self, dev: &mut Device) {
        let inner = &mut *dev.inner;
        let d = &inner.device;
        // SAFETY: the submission using these objects has completed (or never happened).
        unsafe {
            if self.cmd != vk::CommandBuffer::null() {
                d.free_command_buffers(inner.command_pool, &[self.cmd]);
            }
            if self.fence != vk::Fence::null() {
                d.destroy_fence(self.fence, None);
            }
            if self.query_pool != vk::QueryPool::null() {
                d.destroy_query_pool(self.query_pool, None);
            }
            if self.desc_pool != vk::DescriptorPool::null() {
                d.destroy_descriptor_pool(self.desc_pool, None);
            }
        }
        for b in self.device_bufs.into_iter().chain(self.staging) {
            memory::destroy(d, &mut inner.allocator, b);
        }
    }

    /// After a completed run: the buffers go back to the device's pool for
    /// the next run, the rest is destroyed.
    fn recycle(mut self, dev: &mut Device) {
        let bufs: Vec<Buffer> = self
            .device_bufs
            .drain(..)
            .chain(self.staging.drain(..))
            .collect();
        for b in bufs {
            dev.inner.buffers.put(b);
        }
        self.destroy(dev);
    }
}

pub fn execute(
    dev: &mut Device,
    op: &Op,
    plan: &Plan,
    inputs: &[HostBuf],
    outputs: &mut [HostBuf],
    opts: &RunOpts,
) -> Result<RunStats, RuntimeError> {
    let mut res = Resources::default();
    match record_and_submit(dev, op, plan, inputs, outputs, opts, &mut res) {
        Ok(stats) => {
            res.recycle(dev);
            dev.last_ns
                .insert(crate::tuning_cache::shape_class(op), stats.median_ns());
            Ok(stats)
        }
        Err(e) if e.is_fatal_for_device() => {
            std::mem::forget(res);
            Err(e)
        }
        Err(e) => {
            res.destroy(dev);
            Err(e)
        }
    }
}

fn api(call: &str) -> impl Fn(vk::Result) -> RuntimeError + '_ {
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

#[allow(clippy::too_many_arguments)]
fn record_and_submit(
    dev: &mut Device,
    op: &Op,
    plan: &Plan,
    inputs: &[HostBuf],
    outputs: &mut [HostBuf],
    opts: &RunOpts,
    res: &mut Resources,
) -> Result<RunStats, RuntimeError> {
    let n_in = inputs.len();
    let n_out = outputs.len();
    let host: Vec<&HostBuf> = inputs
        .iter()
        .chain(outputs.iter())
        .chain(plan.aux.iter())
        .collect();
    let nbind = host.len() as u32;
    let use_ts = dev.info.timestamps && dev.timestamp_bits > 0;

    let inner = &mut *dev.inner;
    let d = inner.device.clone();
    // Pipeline first: a shader/tuning problem is reported before any allocation.
    let (pipe_raw, pipe_layout, set_layout) = {
        let p = inner
            .pipelines
            .get(&d, inner.pipeline_cache, plan.shader, &plan.spec, nbind)?;
        (p.raw, p.layout, p.set_layout)
    };

    // Buffers: device-local storage + a staging twin for upload (and readback of outputs).
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
    inner.buffers.trim_to(&d, &mut inner.allocator, &wanted);
    for (b, h) in host.iter().enumerate() {
        let (size, loc) = kinds[b];
        let dbuf = match inner.buffers.take(size, usage, MemoryLocation::GpuOnly) {
            Some(x) => x,
            None => memory::create(
                &d,
                &mut inner.allocator,
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
                &d,
                &mut inner.allocator,
                &format!("staging {b}"),
                size,
                staging_usage,
                loc,
            )?,
        };
        s.mapped()?[..h.byte_len()].copy_from_slice(h.as_bytes());
        res.staging.push(s);
    }

    // SAFETY (rest of the function): every handle is created from `d` and
    // lives in `res` until the submission completed; create infos outlive their calls.
    unsafe {
        let nsets = plan.dispatches.len() as u32;
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: (nsets * nbind).max(1),
        }];
        res.desc_pool = d
            .create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default()
                    .max_sets(nsets)
                    .pool_sizes(&sizes),
                None,
            )
            .map_err(api("vkCreateDescriptorPool"))?;
        let layouts = vec![set_layout; nsets as usize];
        let sets = if nbind > 0 {
            d.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(res.desc_pool)
                    .set_layouts(&layouts),
            )
            .map_err(api("vkAllocateDescriptorSets"))?
        } else {
            vec![]
        };
        for (di, disp) in plan.dispatches.iter().enumerate().filter(|_| nbind > 0) {
            let infos: Vec<[vk::DescriptorBufferInfo; 1]> = (0..nbind as usize)
                .map(|b| {
                    let (offset, range) = disp
                        .ranges
                        .get(b)
                        .copied()
                        .flatten()
                        .unwrap_or((0, vk::WHOLE_SIZE));
                    [vk::DescriptorBufferInfo {
                        buffer: res.device_bufs[b].raw,
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
                        .dst_set(sets[di])
                        .dst_binding(b as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
        }

        let repeats = opts.repeats;
        if use_ts {
            res.query_pool = d
                .create_query_pool(
                    &vk::QueryPoolCreateInfo::default()
                        .query_type(vk::QueryType::TIMESTAMP)
                        .query_count(2 * repeats),
                    None,
                )
                .map_err(api("vkCreateQueryPool"))?;
        }
        res.fence = d
            .create_fence(&vk::FenceCreateInfo::default(), None)
            .map_err(api("vkCreateFence"))?;
        res.cmd = d
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(inner.command_pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
            .map_err(api("vkAllocateCommandBuffers"))?[0];
        let cmd = res.cmd;
        d.begin_command_buffer(
            cmd,
            &vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
        )
        .map_err(api("vkBeginCommandBuffer"))?;
        if use_ts {
            d.cmd_reset_query_pool(cmd, res.query_pool, 0, 2 * repeats);
        }
        for (dbuf, sbuf) in res.device_bufs.iter().zip(&res.staging) {
            d.cmd_copy_buffer(
                cmd,
                sbuf.raw,
                dbuf.raw,
                &[vk::BufferCopy {
                    src_offset: 0,
                    dst_offset: 0,
                    size: dbuf.size,
                }],
            );
        }
        let barrier = |src_stage, src, dst_stage, dst| {
            let mb = [vk::MemoryBarrier::default()
                .src_access_mask(src)
                .dst_access_mask(dst)];
            d.cmd_pipeline_barrier(
                cmd,
                src_stage,
                dst_stage,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            );
        };
        let shader_rw = vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE;
        barrier(
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_WRITE,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            shader_rw,
        );
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipe_raw);
        // Untimed warm-up passes on GPUs: an idle GPU runs the first
        // milliseconds at idle clocks (H200: 345 MHz SM clock at rest).
        let warmup = if dev.info.is_cpu() {
            0
        } else {
            // Per repeat, the last time measured for this shape class (any tuning).
            let per = dev
                .last_ns
                .get(&crate::tuning_cache::shape_class(op))
                .copied()
                .filter(|&ns| ns > 0)
                .map(|ns| {
                    if plan.per_dispatch {
                        ns * plan.dispatches.len().max(1) as u64
                    } else {
                        ns
                    }
                });
            // GRETA_VK_WARMUP_MS overrides the warm-up time (measurements).
            let target = std::env::var("GRETA_VK_WARMUP_MS")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(
                    if op.bytes_moved() >= LARGE_BYTES || op.flops() >= LARGE_FLOPS {
                        WARMUP_NS_LARGE
                    } else {
                        WARMUP_NS
                    },
                    |ms| ms * 1_000_000,
                );
            per.map_or(WARMUP_PASSES as u64, |ns| {
                target
                    .div_ceil(ns)
                    .clamp(WARMUP_PASSES as u64, WARMUP_MAX_PASSES)
            }) as u32
        };
        let total = warmup + repeats;
        for it in 0..total {
            let timed = it >= warmup;
            let r = it.saturating_sub(warmup);
            if use_ts && timed {
                // BOTTOM_OF_PIPE, not TOP_OF_PIPE: a top-of-pipe timestamp is
                // written as soon as the command is reached, while the
                // previous repeat may still run (the barrier between repeats
                // holds back compute work, not timestamps), and then counts
                // part of that repeat too. Seen on the H200 (2026-11-21):
                // fill 1 GiB measured 870 us per repeat against 246 us for
                // the first. Bottom-of-pipe waits for all earlier work.
                d.cmd_write_timestamp(
                    cmd,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    res.query_pool,
                    2 * r,
                );
            }
            for (di, disp) in plan.dispatches.iter().enumerate() {
                if plan.per_dispatch && di > 0 {
                    // A dependent chain: each dispatch waits for the previous one.
                    barrier(
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        vk::AccessFlags::SHADER_WRITE,
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        shader_rw,
                    );
                }
                if nbind > 0 {
                    d.cmd_bind_descriptor_sets(
                        cmd,
                        vk::PipelineBindPoint::COMPUTE,
                        pipe_layout,
                        0,
                        &[sets[di]],
                        &[],
                    );
                }
                if !disp.push.is_empty() {
                    let bytes: Vec<u8> = disp.push.iter().flat_map(|w| w.to_le_bytes()).collect();
                    d.cmd_push_constants(
                        cmd,
                        pipe_layout,
                        vk::ShaderStageFlags::COMPUTE,
                        0,
                        &bytes,
                    );
                }
                d.cmd_dispatch(cmd, disp.groups[0], disp.groups[1], disp.groups[2]);
            }
            if use_ts && timed {
                d.cmd_write_timestamp(
                    cmd,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    res.query_pool,
                    2 * r + 1,
                );
            }
            if it + 1 < total {
                // Each repeat sees the previous one complete: timings do not overlap.
                barrier(
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::AccessFlags::SHADER_WRITE,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    shader_rw,
                );
            }
        }
        barrier(
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::AccessFlags::SHADER_WRITE,
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_READ,
        );
        for b in n_in..n_in + n_out {
            let size = res.device_bufs[b].size;
            d.cmd_copy_buffer(
                cmd,
                res.device_bufs[b].raw,
                res.staging[b].raw,
                &[vk::BufferCopy {
                    src_offset: 0,
                    dst_offset: 0,
                    size,
                }],
            );
        }
        barrier(
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_WRITE,
            vk::PipelineStageFlags::HOST,
            vk::AccessFlags::HOST_READ,
        );
        d.end_command_buffer(cmd)
            .map_err(api("vkEndCommandBuffer"))?;

        let cmds = [cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        let start = Instant::now();
        d.queue_submit(inner.queue, &submit, res.fence)
            .map_err(api("vkQueueSubmit"))?;
        let timeout_ns = u64::try_from(opts.timeout.as_nanos()).unwrap_or(u64::MAX);
        match d.wait_for_fences(&[res.fence], true, timeout_ns) {
            Ok(()) => {}
            Err(vk::Result::TIMEOUT) => {
                return Err(RuntimeError::Timeout {
                    what: format!("{op} x{repeats} on {}", dev.info.name),
                    timeout: opts.timeout,
                    waited: start.elapsed(),
                })
            }
            Err(e) => return Err(api("vkWaitForFences")(e)),
        }
        let wall = start.elapsed();

        for (k, out) in outputs.iter_mut().enumerate() {
            let len = out.byte_len();
            let src = res.staging[n_in + k].mapped()?;
            out.as_bytes_mut().copy_from_slice(&src[..len]);
        }

        let (device_ns, timing) = if use_ts {
            let mut ts = vec![0u64; 2 * repeats as usize];
            d.get_query_pool_results(
                res.query_pool,
                0,
                &mut ts,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
            .map_err(api("vkGetQueryPoolResults"))?;
            let mask = if dev.timestamp_bits >= 64 {
                u64::MAX
            } else {
                (1u64 << dev.timestamp_bits) - 1
            };
            let period = dev.info.timestamp_period_ns;
            let per = if plan.per_dispatch {
                plan.dispatches.len().max(1) as f64
            } else {
                1.0
            };
            let ns = ts
                .chunks(2)
                .map(|c| ((c[1] & mask).wrapping_sub(c[0] & mask) & mask) as f64 * period / per)
                .map(|v| v.round() as u64)
                .collect();
            (ns, TimingSource::DeviceTimestamps)
        } else {
            let mut runs = total as u128;
            if plan.per_dispatch {
                runs *= plan.dispatches.len().max(1) as u128;
            }
            let per = (wall.as_nanos() / runs) as u64;
            (vec![per; repeats as usize], TimingSource::WallClock)
        };
        Ok(RunStats {
            device_ns,
            timing,
            wall,
            kernel: plan.shader.to_string(),
            tuning: plan.tuning.clone(),
            dispatches_per_repeat: plan.dispatches.len() as u32,
        })
    }
}
