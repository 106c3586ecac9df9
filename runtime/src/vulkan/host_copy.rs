//! The host-copy run on Vulkan: two host-visible buffers of cached host
//! memory (gpu-allocator's `GpuToCpu`: HOST_VISIBLE|HOST_COHERENT, and
//! HOST_CACHED where the device has it; Vulkan's pinned memory, which the
//! device's copy engines read and write directly) and one device-local
//! buffer. Per round: the caller's bytes into the first, a submission
//! copying them to the device (`vkCmdCopyBuffer` between two timestamps), a
//! second copying them back into the other, each waited on with the
//! timeout, then the caller's check.

use super::memory::{self, Buffer};
use super::submit::{submit_and_wait, Submission, Ticks};
use super::Device;
use crate::host_copy::{HostCopyJob, HostCopyStats};
use crate::{RunOpts, RuntimeError, TimingSource};
use ash::vk;
use gpu_allocator::MemoryLocation;

const USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::TRANSFER_SRC.as_raw() | vk::BufferUsageFlags::TRANSFER_DST.as_raw(),
);

/// The run's buffers and submissions: back to the device's pool (buffers)
/// or dropped after a completed round, leaked after a lost one.
#[derive(Default)]
struct Resources {
    bufs: Vec<Buffer>,
    subs: Vec<Submission>,
}

pub fn execute(dev: &mut Device, job: HostCopyJob<'_>) -> Result<HostCopyStats, RuntimeError> {
    let mut res = Resources::default();
    match rounds(dev, job, &mut res) {
        Ok(stats) => {
            drop(std::mem::take(&mut res.subs));
            for b in res.bufs.drain(..) {
                dev.inner.buffers.put(b);
            }
            Ok(stats)
        }
        Err(e) if e.is_fatal_for_device() => {
            // The queue may still use them.
            std::mem::forget(res);
            Err(e)
        }
        Err(e) => Err(e),
    }
}

fn buffer(
    dev: &mut Device,
    name: &str,
    size: u64,
    loc: MemoryLocation,
) -> Result<Buffer, RuntimeError> {
    let inner = &mut *dev.inner;
    match inner.buffers.take(size, USAGE, loc) {
        Some(b) => Ok(b),
        None => memory::create(&inner.allocator, name, size, USAGE, loc),
    }
}

fn rounds(
    dev: &mut Device,
    job: HostCopyJob<'_>,
    res: &mut Resources,
) -> Result<HostCopyStats, RuntimeError> {
    let n = job.bytes;
    let size = n as u64;
    if size > dev.info.max_allocation_size {
        return Err(RuntimeError::Unsupported(format!(
            "a host copy of {n} bytes is over maxMemoryAllocationSize {}",
            dev.info.max_allocation_size
        )));
    }
    let size16 = size.next_multiple_of(16);
    // Whatever the pool keeps of other sizes goes first.
    dev.inner.buffers.trim_to(&[
        (size16, USAGE, MemoryLocation::GpuToCpu),
        (size16, USAGE, MemoryLocation::GpuToCpu),
        (size16, USAGE, MemoryLocation::GpuOnly),
    ]);
    res.bufs.push(buffer(
        dev,
        "host copy up",
        size16,
        MemoryLocation::GpuToCpu,
    )?);
    res.bufs.push(buffer(
        dev,
        "host copy down",
        size16,
        MemoryLocation::GpuToCpu,
    )?);
    res.bufs.push(buffer(
        dev,
        "host copy device",
        size16,
        MemoryLocation::GpuOnly,
    )?);
    let host_flags = res.bufs[0].memory_properties();
    let use_ts = dev.info.timestamps && dev.timestamp_bits > 0;
    let opts = RunOpts {
        repeats: 1,
        timeout: job.timeout,
        tuning: None,
    };
    let device = dev.inner.device.clone();
    let (mut up_ns, mut down_ns) = (Vec::new(), Vec::new());
    for round in 0..job.rounds {
        {
            let [up, down, _] = &mut res.bufs[..] else {
                unreachable!("three buffers pushed above")
            };
            job.data
                .fill(round, &mut up.mapped()?[..n], &mut down.mapped()?[..n]);
        }
        for (from, to, times) in [(0, 2, &mut up_ns), (2, 1, &mut down_ns)] {
            let mut sub = Submission::default();
            let (fence, rec, pool) = sub.begin(dev, &device.raw, use_ts.then_some(2))?;
            if let Some(q) = pool {
                rec.timestamp(q, 0);
            }
            rec.copy(&res.bufs[from], &res.bufs[to], size);
            if let Some(q) = pool {
                rec.timestamp(q, 1);
            }
            rec.end_for_host()?;
            let cmd = rec.cmd;
            res.subs.push(sub);
            let what = format!("a {n}-byte copy (host copy round {round})");
            let wall = submit_and_wait(dev, cmd, fence, &what, &opts)?;
            times.push(match pool {
                Some(q) => {
                    let t = Ticks::read(dev, q, 2)?;
                    t.ns(t.ts[0], t.ts[1]).round() as u64
                }
                None => u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
            });
        }
        let [up, down, _] = &mut res.bufs[..] else {
            unreachable!("three buffers pushed above")
        };
        let (sent, back) = (up.mapped()?, down.mapped()?);
        job.data.check(round, &sent[..n], &back[..n]);
        // This round's submissions are complete: their objects go now.
        res.subs.clear();
    }
    Ok(HostCopyStats {
        up_ns,
        down_ns,
        timing: if use_ts {
            TimingSource::DeviceTimestamps
        } else {
            TimingSource::WallClock
        },
        how: format!(
            "vkCmdCopyBuffer of {n} bytes to and from host memory {}",
            host_flags.map_or_else(|| "(properties unknown)".to_string(), |f| format!("{f:?}"))
        ),
    })
}
