//! Replaying a [`Graph`] on Vulkan: every step's dispatches recorded into
//! one command buffer (a barrier between steps), the whole sequence
//! recorded once per replay, submitted once and waited on with a timeout.
//! Timestamps at each step boundary of a few replays give each step's
//! time; the timed replays after them carry timestamps at their ends only
//! (`crate::graph::STEP_PASSES`).

use super::memory::{self, Buffer};
use super::owned::DescriptorSets;
use super::plan::Plan;
use super::record::{record_pass, SHADER_RW};
use super::run::{pipeline, write_descriptor_sets, PipelineHandles};
use super::submit::{api, submit_and_wait, Submission, Ticks};
use super::Device;
use crate::error::RuntimeError;
use crate::graph::{median, GraphJob, GraphStats, Replay, STEP_PASSES};
use crate::job::TimingSource;
use ash::vk;
use gpu_allocator::MemoryLocation;

/// Untimed replays before the timed ones on GPUs, when no earlier run of
/// the same graph on this device says how long one takes.
const WARMUP_REPLAYS: u64 = 2;
/// Most warm-up replays (bounds the command buffer).
const WARMUP_MAX_REPLAYS: u64 = 2_000;

/// What one graph run creates; dropped after a completed submission (or one
/// never made), leaked after a timeout or a lost device, as in `run.rs`.
#[derive(Default)]
struct Resources {
    slots: Vec<Buffer>,
    staging: Vec<Buffer>,
    /// Per step: its plan's extra buffers (device-local, then staging).
    aux: Vec<Vec<(Buffer, Buffer)>>,
    descriptors: Vec<DescriptorSets>,
    sub: Submission,
}

pub fn execute(
    dev: &mut Device,
    plans: &[Plan],
    job: GraphJob,
) -> Result<GraphStats, RuntimeError> {
    let key = job.key();
    let mut res = Resources::default();
    match record_and_submit(dev, plans, job, &mut res) {
        Ok(stats) => {
            drop(res);
            dev.last_ns.insert(key, stats.median_ns());
            Ok(stats)
        }
        Err(e) if e.is_fatal_for_device() => {
            // The queue may still use them: never destroyed.
            std::mem::forget(res);
            Err(e)
        }
        Err(e) => Err(e),
    }
}

fn device_local(
    dev: &Device,
    name: &str,
    bytes: &[u8],
    read_back: bool,
) -> Result<(Buffer, Buffer), RuntimeError> {
    let size = (bytes.len() as u64).next_multiple_of(16).max(16);
    let alloc = &dev.inner.allocator;
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_DST
        | vk::BufferUsageFlags::TRANSFER_SRC;
    let buf = memory::create(alloc, name, size, usage, MemoryLocation::GpuOnly)?;
    let loc = if read_back {
        MemoryLocation::GpuToCpu
    } else {
        MemoryLocation::CpuToGpu
    };
    let staging_usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
    let mut s = memory::create(alloc, &format!("{name} staging"), size, staging_usage, loc)?;
    crate::bulk::copy(&mut s.mapped()?[..bytes.len()], bytes);
    Ok((buf, s))
}

fn record_and_submit(
    dev: &mut Device,
    plans: &[Plan],
    job: GraphJob,
    res: &mut Resources,
) -> Result<GraphStats, RuntimeError> {
    let (graph, opts) = (job.graph, job.opts);
    let nsteps = graph.steps.len();
    // Pipelines first: a shader problem is reported before any allocation.
    // Per step: its first pass's pipeline, its later passes' (a split
    // reduction's combine), and how many buffers it binds.
    let mut pipes: Vec<(PipelineHandles, Vec<PipelineHandles>, u32)> = Vec::with_capacity(nsteps);
    for (st, plan) in graph.steps.iter().zip(plans) {
        let nbind = (st.bind.len() + plan.aux.len()) as u32;
        let first = pipeline(dev, plan.shader, &plan.spec, nbind, plan.wave)?;
        let later = plan
            .then
            .iter()
            .map(|p| pipeline(dev, p.shader, &p.spec, nbind, plan.wave))
            .collect::<Result<Vec<_>, _>>()?;
        pipes.push((first, later, nbind));
    }
    for (slot, host) in graph.slots.iter().zip(job.buffers.iter()) {
        let (b, s) = device_local(dev, &slot.name, host.as_bytes(), true)?;
        res.slots.push(b);
        res.staging.push(s);
    }
    for (i, plan) in plans.iter().enumerate() {
        let mut v = Vec::new();
        for (k, a) in plan.aux.iter().enumerate() {
            v.push(device_local(
                dev,
                &format!("step {i} aux {k}"),
                a.as_bytes(),
                false,
            )?);
        }
        res.aux.push(v);
    }
    let device = dev.inner.device.clone();
    for (i, ((st, plan), (pipe, _, nbind))) in graph.steps.iter().zip(plans).zip(&pipes).enumerate()
    {
        let n_sets = plan.all_dispatches().count();
        let layouts = vec![pipe.set_layout; n_sets];
        let sets = DescriptorSets::new(&device, &layouts, n_sets as u32 * nbind)
            .map_err(|(call, e)| api(call)(e))?;
        let raw: Vec<vk::Buffer> = st
            .bind
            .iter()
            .map(|&s| res.slots[s].raw)
            .chain(res.aux[i].iter().map(|(b, _)| b.raw))
            .collect();
        write_descriptor_sets(&device.raw, plan, *nbind, &sets.sets, &raw);
        res.descriptors.push(sets);
    }
    let repeats = opts.repeats;
    let per = nsteps as u32 + 1;
    let use_ts = dev.info.timestamps && dev.timestamp_bits > 0;
    // Queries: STEP_PASSES rows of a timestamp at every step boundary,
    // then a pair (start, end) per timed replay.
    let queries = STEP_PASSES * per + 2 * repeats;
    let (fence, rec, query_pool) = res.sub.begin(dev, &device.raw, use_ts.then_some(queries))?;
    dev.warmth.next(&job.key());
    let warmup = warmup_replays(dev, &job);
    for (b, s) in res.slots.iter().zip(&res.staging) {
        rec.copy(s, b, b.size);
    }
    for (b, s) in res.aux.iter().flatten() {
        rec.copy(s, b, b.size);
    }
    let compute = vk::PipelineStageFlags::COMPUTE_SHADER;
    rec.barrier(
        vk::PipelineStageFlags::TRANSFER,
        vk::AccessFlags::TRANSFER_WRITE,
        compute,
        SHADER_RW,
    );
    // One replay: each step (a timestamp before it where `marks` gives the
    // query of the first), a barrier after each (the next step, or the next
    // replay, reads what it wrote).
    let replay = |marks: Option<(vk::QueryPool, u32)>| {
        for (i, (plan, (pipe, later, _))) in plans.iter().zip(&pipes).enumerate() {
            if let Some((q, first)) = marks {
                rec.timestamp(q, first + i as u32);
            }
            record_pass(&rec, plan, *pipe, later, &res.descriptors[i].sets, None);
            rec.barrier(compute, vk::AccessFlags::SHADER_WRITE, compute, SHADER_RW);
        }
    };
    // Without timestamps (a device without them) the warm-up and the
    // step passes are replays like the rest: the wall clock covers all.
    let untimed = warmup + if query_pool.is_some() { 0 } else { STEP_PASSES };
    for _ in 0..untimed {
        replay(None);
    }
    if let Some(q) = query_pool {
        for p in 0..STEP_PASSES {
            replay(Some((q, p * per)));
            rec.timestamp(q, p * per + nsteps as u32);
        }
    }
    for r in 0..repeats {
        let pair = query_pool.map(|q| (q, STEP_PASSES * per + 2 * r));
        if let Some((q, at)) = pair {
            rec.timestamp(q, at);
        }
        replay(None);
        if let Some((q, at)) = pair {
            rec.timestamp(q, at + 1);
        }
    }
    rec.barrier(
        compute,
        vk::AccessFlags::SHADER_WRITE,
        vk::PipelineStageFlags::TRANSFER,
        vk::AccessFlags::TRANSFER_READ,
    );
    for &s in job.read_back {
        rec.copy(&res.slots[s], &res.staging[s], res.slots[s].size);
    }
    rec.end_for_host()?;

    let what = format!("a graph of {nsteps} steps");
    let wall = submit_and_wait(dev, rec.cmd, fence, &what, opts)?;
    dev.worked(wall);
    for &s in job.read_back {
        let out = &mut job.buffers[s];
        let len = out.byte_len();
        let src = res.staging[s].mapped()?;
        crate::bulk::copy(out.as_bytes_mut(), &src[..len]);
    }
    let (device_ns, step_ns, timing) = match query_pool {
        Some(q) => {
            let ts = timestamps(dev, q, queries)?;
            let (rows, pairs) = ts.split_at((STEP_PASSES * per) as usize);
            let rows: Vec<&[u64]> = rows.chunks(per as usize).collect();
            let step_ns = (0..nsteps)
                .map(|i| {
                    median(
                        &rows
                            .iter()
                            .map(|r| r[i + 1].saturating_sub(r[i]))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
            let device_ns = pairs.chunks(2).map(|p| p[1].saturating_sub(p[0])).collect();
            (device_ns, step_ns, TimingSource::DeviceTimestamps)
        }
        None => {
            let replays = warmup + STEP_PASSES + repeats;
            let per_replay = (wall.as_nanos() / u128::from(replays)) as u64;
            (
                vec![per_replay; repeats as usize],
                Vec::new(),
                TimingSource::WallClock,
            )
        }
    };
    Ok(GraphStats {
        device_ns,
        step_ns,
        kernels: plans.iter().map(|p| p.shader.name().to_string()).collect(),
        timing,
        replay: Replay::CommandBuffer,
        wall,
    })
}

/// Untimed replays first on GPUs (none on a CPU device): about
/// `crate::warmth::GRAPH_NS` of them once this graph's replay time is known here.
fn warmup_replays(dev: &Device, job: &GraphJob) -> u32 {
    if dev.info.is_cpu() {
        return 0;
    }
    let target = dev
        .warmup_ns
        .unwrap_or_else(|| dev.warmth.owed(crate::warmth::GRAPH_NS));
    dev.last_ns
        .get(&job.key())
        .copied()
        .filter(|&ns| ns > 0)
        .map_or(WARMUP_REPLAYS, |ns| {
            target
                .div_ceil(ns)
                .clamp(WARMUP_REPLAYS, WARMUP_MAX_REPLAYS)
        }) as u32
}

/// Every timestamp of the pool in nanoseconds from the first.
fn timestamps(dev: &Device, pool: vk::QueryPool, count: u32) -> Result<Vec<u64>, RuntimeError> {
    let t = Ticks::read(dev, pool, count)?;
    let first = t.ts.first().copied().unwrap_or(0);
    Ok(t.ts
        .iter()
        .map(|&x| t.ns(first, x).round() as u64)
        .collect())
}
