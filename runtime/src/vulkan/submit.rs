//! Submitting recorded work and reading its time back: the objects one
//! submission owns, the wait with a timeout, the timestamp ticks, and how a
//! failed Vulkan call becomes a [`RuntimeError`] (device lost and out of
//! memory kept apart, as callers act on them).

use super::owned::{CommandBuffer, Owned};
use super::record::Recorder;
use super::Device;
use crate::error::RuntimeError;
use crate::job::RunOpts;
use ash::vk;
use std::time::Instant;

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
