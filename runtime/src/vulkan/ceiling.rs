//! The Vulkan in-run copy ceiling: the best device-to-device copy of the
//! run, over the size the HIP/CUDA ceiling copies with the driver's
//! device-to-device copy ([`crate::ceiling::copy_bytes`]), so that a Vulkan
//! gate's ratio to its copy ceiling (the decode layer's "fraction of the
//! copy rate") is measured as the CUDA one is.
//!
//! Two copies are timed, each by the device's timestamps after a warm-up,
//! each checked, and the faster is the ceiling (its source names it and
//! says what the other reached):
//! - the driver's `vkCmdCopyBuffer` between two device-local buffers. Some
//!   drivers run it on a copy engine far below the memory's rate: NVIDIA's
//!   moved 847 GB/s on an H200 whose memory copies at about 4100 GB/s, so a
//!   ceiling of that copy alone read the decode layer at 3.6 times "the
//!   copy rate";
//! - greta's own `copy` op (the shader the copy gates run, planned as they
//!   are) over the same bytes, run as a gate runs it: a pilot run sizes the
//!   warm-up (about a second before large copies), then the timed repeats;
//!   its output is compared word for word with its input.
//!
//! A copy that is wrong is not counted (and the source says why); a
//! timeout loses the device, as a run's does.
//!
//! The driver's copy: two submissions, a pilot copy sizing the warm-up,
//! then the warm-up and the timed copies. The source is filled with a
//! pattern, the destination with another, and both ends of the destination
//! are read back after the timed copies.

use super::memory::{self, Buffer};
use super::record::Recorder;
use super::submit::{submit_and_wait, Submission, Ticks};
use super::Device;
use crate::backend::Backend;
use crate::ceiling::{Ceiling, CeilingError, CeilingUnit};
use crate::error::RuntimeError;
use crate::job::{Job, RunOpts};
use ash::vk;
use gpu_allocator::MemoryLocation;
use greta_kernels::{HostBuf, Op};
use std::time::{Duration, Instant};

/// What the driver's copy is named in reports.
pub const SOURCE: &str = "vkCmdCopyBuffer";
/// Timed copies of each measurement (the rate is their median).
const TIMED: u32 = 20;
/// Bytes read back from each end of the destination.
const SAMPLE: u64 = 4096;
/// The words the source and destination are filled with.
const PATTERN: u32 = 0x5a3c_96e1;
const STALE: u32 = 0x0bad_f00d;

/// The device's own copy ceiling for `op`, `None` where `op` has none
/// ([`crate::ceiling::copy_bytes`]): the faster of the driver's copy and
/// greta's copy shader.
pub(super) fn copy_ceiling(
    dev: &mut Device,
    op: &Op,
    timeout: Duration,
) -> Option<Result<Ceiling, CeilingError>> {
    let bytes = crate::ceiling::copy_bytes(op)?.next_multiple_of(4);
    let shader = Op::Copy {
        n: (bytes / 4) as usize,
    };
    Some(best_copy(dev, op, &shader, timeout))
}

/// One copy's rate in GB/s (read + write) and what it is called.
struct Rate {
    gbps: f64,
    what: String,
}

/// The faster of the driver's copy and `shader` (the `copy` op, or in
/// tests a broken one), both over `shader`'s bytes, within `timeout`
/// together.
fn best_copy(
    dev: &mut Device,
    op: &Op,
    shader: &Op,
    timeout: Duration,
) -> Result<Ceiling, CeilingError> {
    let bytes = 4 * shader.outputs().first().map_or(0, |s| s.len) as u64;
    let deadline = Instant::now() + timeout;
    let driver = measure(dev, op, bytes, deadline);
    if let (Err(e), Some(_)) = (&driver, &dev.lost) {
        return Err(e.clone());
    }
    let own = shader_copy(dev, shader, bytes, deadline);
    if let (Err(e), Some(_)) = (&own, &dev.lost) {
        return Err(e.clone());
    }
    let ceiling = |r: &Rate, note: String| Ceiling {
        rate: r.gbps,
        unit: CeilingUnit::GBps,
        source: format!("{} of {bytes} bytes ({note})", r.what),
        library: dev.info.driver_name.clone(),
        version: dev.info.driver_info.clone(),
        found_by: "the device's own Vulkan driver".into(),
    };
    let faster = |r: &Rate| format!("the faster: {} reached {:.1} GB/s", r.what, r.gbps);
    match (driver, own) {
        (Ok(d), Ok(s)) if s.gbps > d.gbps => Ok(ceiling(&s, faster(&d))),
        (Ok(d), Ok(s)) => Ok(ceiling(&d, faster(&s))),
        (Ok(d), Err(e)) => Ok(ceiling(&d, format!("greta's copy shader not counted: {e}"))),
        (Err(e), Ok(s)) => Ok(ceiling(&s, format!("{SOURCE} not counted: {e}"))),
        (Err(e), Err(_)) => Err(e),
    }
}

/// greta's `shader` op over `bytes` (a copy of as many u32 words), run as
/// a gate runs it: a pilot run (which sizes the warm-up of the next run of
/// the same plan on this device), then [`TIMED`] timed repeats after that
/// warm-up, the output compared word for word with the input.
fn shader_copy(
    dev: &mut Device,
    shader: &Op,
    bytes: u64,
    deadline: Instant,
) -> Result<Rate, CeilingError> {
    let words = (bytes / 4) as usize;
    let input = HostBuf::U32((0..words as u32).map(word).collect());
    let mut last = None;
    for repeats in [1, TIMED] {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(CeilingError::Timeout(format!(
                "greta's copy shader ceiling on {}: no time left",
                dev.info.name
            )));
        }
        let mut out = vec![HostBuf::poisoned(greta_kernels::DType::U32, words)];
        let opts = RunOpts {
            repeats,
            timeout: left,
            tuning: None,
        };
        let stats = dev
            .run(Job::new(
                shader,
                std::slice::from_ref(&input),
                &mut out,
                &opts,
            ))
            .map_err(|e| match e {
                RuntimeError::Timeout { .. } => CeilingError::Timeout(e.to_string()),
                e => CeilingError::Unusable {
                    library: dev.info.driver_name.clone(),
                    why: format!("greta's copy shader ({shader}): {e}"),
                },
            })?;
        let (HostBuf::U32(a), HostBuf::U32(b)) = (&input, &out[0]) else {
            unreachable!("a copy's buffers are u32")
        };
        if let Some(i) = a.iter().zip(b).position(|(x, y)| x != y) {
            return Err(CeilingError::Wrong {
                source_call: format!("greta's copy shader ({})", stats.kernel),
                library: dev.info.driver_name.clone(),
                why: format!(
                    "word {i} of {words} reads {:#010x}, the input's is {:#010x}",
                    b[i], a[i]
                ),
            });
        }
        last = Some(stats);
    }
    let stats = last.expect("two runs were made");
    let ns = stats.median_ns().max(1) as f64;
    Ok(Rate {
        gbps: 2.0 * bytes as f64 / ns,
        what: format!("greta's copy shader ({})", stats.kernel),
    })
}

/// Word `i` of the shader copy's input: every word differs from its
/// neighbours, so a copy from a wrong index shows.
fn word(i: u32) -> u32 {
    i.wrapping_mul(0x9e37_79b9) ^ 0x5a3c_96e1
}

/// The buffers one measurement owns: dropped (destroyed) after a completed
/// submission, leaked after a timeout (the queue may still use them).
#[derive(Default)]
struct Held {
    bufs: Vec<Buffer>,
    subs: Vec<Submission>,
}

/// The driver's copy of `bytes` between two device-local buffers.
fn measure(dev: &mut Device, op: &Op, bytes: u64, deadline: Instant) -> Result<Rate, CeilingError> {
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
    let res = copies(dev, bytes, deadline, &mut held);
    match res {
        Ok(ns) => Ok(Rate {
            gbps: 2.0 * bytes as f64 / ns,
            what: SOURCE.into(),
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

#[cfg(test)]
mod tests {
    use super::super::{CacheDir, OpenOptions};
    use super::*;
    use crate::info::DeviceSelect;

    fn lavapipe() -> Device {
        Device::open_with(&OpenOptions {
            select: DeviceSelect::Cpu,
            validation: Some(true),
            cache: CacheDir::Off,
            tuning_cache: CacheDir::Off,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("opening lavapipe failed: {e}"))
    }

    /// The rate a ceiling's source says the other copy reached.
    fn other_rate(source: &str) -> f64 {
        let at = source.find(" reached ").expect("the other copy's rate") + 9;
        source[at..]
            .split(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no rate in {source:?}"))
    }

    /// Both copies are timed over the same bytes and the faster one is the
    /// ceiling, named, with the other's rate beside it; a copy shader that
    /// copies one word from the wrong place is not counted (the source says
    /// which word), and the driver's copy stands alone.
    #[test]
    fn the_faster_of_the_drivers_copy_and_the_copy_shader_is_the_ceiling() {
        let mut dev = lavapipe();
        let op = Op::BlockDecode {
            hidden: 128,
            heads: 4,
            head_dim: 32,
            ffn: 344,
            len: 301,
        };
        let bytes = crate::ceiling::copy_bytes(&op).unwrap().next_multiple_of(4);
        let c = copy_ceiling(&mut dev, &op, Duration::from_secs(60))
            .expect("a memory-bound op has a copy ceiling")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.unit, CeilingUnit::GBps);
        assert!(c.rate.is_finite() && c.rate > 0.0, "{c:?}");
        let shader = "greta's copy shader (copy";
        let (named, other) = if c.source.starts_with(SOURCE) {
            (SOURCE, shader)
        } else {
            (shader, SOURCE)
        };
        assert!(
            c.source.starts_with(named)
                && c.source
                    .contains(&format!(" of {bytes} bytes (the faster: {other}")),
            "{}",
            c.source
        );
        assert!(other_rate(&c.source) <= c.rate + 0.05, "{}", c.source);

        let n = (bytes / 4) as usize;
        let broken = Op::TestBrokenCopy { n };
        let c = best_copy(&mut dev, &op, &broken, Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            c.source.starts_with(&format!(
                "{SOURCE} of {bytes} bytes (greta's copy shader not counted: "
            )) && c.source.contains(&format!("word {} of {n}", n / 2)),
            "{}",
            c.source
        );
        assert!(c.rate > 0.0 && dev.lost.is_none());
        assert_eq!(dev.validation_messages(), Vec::<String>::new());
    }
}
