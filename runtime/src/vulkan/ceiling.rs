//! The Vulkan in-run copy ceiling: `vkCmdCopyBuffer` between two
//! device-local buffers of the size the HIP/CUDA ceiling copies with the
//! driver's device-to-device copy ([`crate::ceiling::copy_bytes`]), timed by
//! the device's timestamps, so that a Vulkan gate's ratio to its copy
//! ceiling (the decode layer's "fraction of the copy rate") is measured as
//! the CUDA one is.
//!
//! Two submissions: a pilot copy sizes the warm-up (about a second before
//! large copies, as before a gate's timed repeats), then the warm-up and the
//! timed copies. The copy must be right to count: the source is filled
//! with a pattern, the destination with another, and both ends of the
//! destination are read back after the timed copies.

use super::memory::{self, Buffer};
use super::record::Recorder;
use super::submit::{submit_and_wait, Submission, Ticks};
use super::Device;
use crate::ceiling::{Ceiling, CeilingError, CeilingUnit};
use crate::error::RuntimeError;
use crate::job::RunOpts;
use ash::vk;
use gpu_allocator::MemoryLocation;
use greta_kernels::Op;
use std::time::{Duration, Instant};

/// What the Vulkan ceiling's copies are named in reports.
pub const SOURCE: &str = "vkCmdCopyBuffer";
/// Timed copies of the measurement (the rate is their median).
const TIMED: u32 = 20;
/// Bytes read back from each end of the destination.
const SAMPLE: u64 = 4096;
/// The words the source and destination are filled with.
const PATTERN: u32 = 0x5a3c_96e1;
const STALE: u32 = 0x0bad_f00d;

/// The device's own copy ceiling for `op`, `None` where `op` has none
/// ([`crate::ceiling::copy_bytes`]).
pub(super) fn copy_ceiling(
    dev: &mut Device,
    op: &Op,
    timeout: Duration,
) -> Option<Result<Ceiling, CeilingError>> {
    let bytes = crate::ceiling::copy_bytes(op)?.next_multiple_of(4);
    Some(measure(dev, op, bytes, timeout))
}

/// The buffers one measurement owns: dropped (destroyed) after a completed
/// submission, leaked after a timeout (the queue may still use them).
#[derive(Default)]
struct Held {
    bufs: Vec<Buffer>,
    subs: Vec<Submission>,
}

fn measure(
    dev: &mut Device,
    op: &Op,
    bytes: u64,
    timeout: Duration,
) -> Result<Ceiling, CeilingError> {
    if let Some(why) = &dev.lost {
        return Err(CeilingError::Device(format!("device lost: {why}")));
    }
    if !(dev.info.timestamps && dev.timestamp_bits > 0) {
        return Err(CeilingError::Unusable {
            library: dev.info.driver_name.clone(),
            why: "the device has no compute timestamps to time a copy with".into(),
        });
    }
    if bytes > dev.info.max_allocation_size {
        return Err(CeilingError::Unusable {
            library: dev.info.driver_name.clone(),
            why: format!(
                "a copy of {bytes} bytes is over maxMemoryAllocationSize {}",
                dev.info.max_allocation_size
            ),
        });
    }
    let mut held = Held::default();
    let deadline = Instant::now() + timeout;
    let res = copies(dev, bytes, deadline, &mut held);
    match res {
        Ok(ns) => Ok(Ceiling {
            rate: 2.0 * bytes as f64 / ns,
            unit: CeilingUnit::GBps,
            source: format!("{SOURCE} of {bytes} bytes"),
            library: dev.info.driver_name.clone(),
            version: dev.info.driver_info.clone(),
            found_by: "the device's own Vulkan driver".into(),
        }),
        Err(e) => {
            let fatal = e.is_fatal_for_device();
            if fatal {
                // The queue may still use them: never destroyed.
                std::mem::forget(held);
                dev.lost = Some(e.to_string());
            }
            Err(match e {
                RuntimeError::Timeout { .. } => CeilingError::Timeout(e.to_string()),
                RuntimeError::BadInput(why) => CeilingError::Wrong {
                    source_call: SOURCE.into(),
                    library: dev.info.driver_name.clone(),
                    why,
                },
                e => CeilingError::Device(format!("{op}: {e}")),
            })
        }
    }
}

/// Median nanoseconds of one copy of `bytes`, checked.
fn copies(
    dev: &mut Device,
    bytes: u64,
    deadline: Instant,
    held: &mut Held,
) -> Result<f64, RuntimeError> {
    let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
    let make = |dev: &Device, name: &str, size: u64, at: MemoryLocation| {
        memory::create(&dev.inner.allocator, name, size, usage, at)
    };
    let sample = SAMPLE.min(bytes);
    held.bufs
        .push(make(dev, "ceiling source", bytes, MemoryLocation::GpuOnly)?);
    held.bufs.push(make(
        dev,
        "ceiling destination",
        bytes,
        MemoryLocation::GpuOnly,
    )?);
    held.bufs.push(make(
        dev,
        "ceiling readback",
        2 * sample,
        MemoryLocation::GpuToCpu,
    )?);
    // The pilot: one timed copy sizes the warm-up.
    let pilot = submit(dev, held, 0, 1, deadline)?;
    let per = pilot.first().copied().unwrap_or(0.0).max(1.0);
    let warm = if dev.info.is_cpu() {
        0
    } else {
        let target = super::warmup::warmup_target_ns(dev, 2 * bytes, 0) as f64;
        (target / per).ceil().clamp(1.0, 20_000.0) as u32
    };
    let mut ns = submit(dev, held, warm, TIMED, deadline)?;
    // Both ends of the destination hold the source's pattern.
    let back = held.bufs[2].mapped()?;
    let bad = back[..(2 * sample) as usize]
        .chunks_exact(4)
        .position(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) != PATTERN);
    if let Some(i) = bad {
        return Err(RuntimeError::BadInput(format!(
            "word {i} of the {sample}-byte samples at the ends of the destination does not hold the copied pattern"
        )));
    }
    ns.sort_by(f64::total_cmp);
    Ok(ns[ns.len() / 2])
}

/// One submission: both buffers filled, `warm` untimed copies, `timed`
/// copies each between two timestamps, then both ends of the destination
/// read back. The nanoseconds of each timed copy.
fn submit(
    dev: &mut Device,
    held: &mut Held,
    warm: u32,
    timed: u32,
    deadline: Instant,
) -> Result<Vec<f64>, RuntimeError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(RuntimeError::Timeout {
            what: format!("{SOURCE} ceiling on {}", dev.info.name),
            timeout: Duration::ZERO,
            waited: Duration::ZERO,
        });
    }
    let device = dev.inner.device.clone();
    let mut sub = Submission::default();
    let (fence, rec, pool) = sub.begin(dev, &device.raw, Some(2 * timed))?;
    let pool = pool.expect("a pool was asked for");
    let [src, dst, back] = [&held.bufs[0], &held.bufs[1], &held.bufs[2]];
    let (bytes, sample) = (src.size, back.size / 2);
    rec.fill(src, PATTERN);
    rec.fill(dst, STALE);
    let transfer = |rec: &Recorder<'_>| {
        rec.barrier(
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_WRITE,
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE,
        )
    };
    for i in 0..warm + timed {
        transfer(&rec);
        let t = i.checked_sub(warm);
        if let Some(t) = t {
            rec.timestamp(pool, 2 * t);
        }
        rec.copy_at(src, 0, dst, 0, bytes);
        if let Some(t) = t {
            rec.timestamp(pool, 2 * t + 1);
        }
    }
    transfer(&rec);
    rec.copy_at(dst, 0, back, 0, sample);
    rec.copy_at(dst, bytes - sample, back, sample, sample);
    rec.end_for_host()?;
    let cmd = rec.cmd;
    held.subs.push(sub);
    let opts = RunOpts {
        repeats: warm + timed,
        timeout: left,
        tuning: None,
    };
    let wall = submit_and_wait(dev, cmd, fence, &SOURCE, &opts)?;
    dev.worked(wall);
    let t = Ticks::read(dev, pool, 2 * timed)?;
    Ok(t.ts.chunks(2).map(|c| t.ns(c[0], c[1])).collect())
}
