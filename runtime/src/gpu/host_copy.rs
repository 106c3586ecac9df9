//! The host-copy run over any [`Driver`]: two pinned host buffers and one
//! device buffer; per round the caller's bytes into the first, an event, the
//! host-to-device copy, an event, the copy back into the second, an event,
//! a deadline-bounded wait, the caller's check. After a timeout the GPU may
//! still be copying into the pinned memory, so nothing is freed then.

use super::driver::{Api, DevPtr, Driver, GpuDevice, GpuError, StreamH};
use super::execute::{wait_event, Events};
use crate::host_copy::{HostCopyJob, HostCopyStats};
use crate::TimingSource;
use std::time::Instant;

/// Pinned host buffers, freed on drop unless leaked.
struct Pinned<'a, D: Driver> {
    driver: &'a D,
    ptrs: Vec<(*mut u8, usize)>,
}

impl<D: Driver> Pinned<'_, D> {
    fn alloc(&mut self, bytes: usize) -> Result<*mut u8, GpuError> {
        let p = self.driver.host_alloc(bytes)?;
        if p.is_null() {
            return Err(GpuError::Device(format!(
                "pinned host allocation of {bytes} bytes returned no memory"
            )));
        }
        self.ptrs.push((p, bytes));
        Ok(p)
    }
}

impl<D: Driver> Drop for Pinned<'_, D> {
    fn drop(&mut self) {
        for (p, _) in self.ptrs.drain(..) {
            // SAFETY: from host_alloc above, freed once; every copy using it
            // was waited for (after a timeout the list is emptied unfreed).
            unsafe { self.driver.host_free(p) };
        }
    }
}

/// Runs `job` on `dev` over `stream`.
pub(super) fn run<D: Driver>(
    driver: &D,
    stream: StreamH,
    dev: &GpuDevice,
    job: HostCopyJob<'_>,
) -> Result<HostCopyStats, GpuError> {
    let n = job.bytes;
    driver.activate(dev.ordinal)?;
    let mut pinned = Pinned {
        driver,
        ptrs: Vec::new(),
    };
    let mut bufs = super::execute::Buffers {
        driver,
        ptrs: Vec::new(),
    };
    let mut events = Events {
        driver,
        list: Vec::new(),
    };
    let r = rounds(
        driver,
        stream,
        dev,
        job,
        &mut pinned,
        &mut bufs,
        &mut events,
    );
    if matches!(r, Err(GpuError::Timeout { .. })) {
        // The GPU may still read or write them.
        pinned.ptrs.clear();
        bufs.ptrs.clear();
        events.list.clear();
    }
    let (up, down) = match driver.api() {
        Api::Cuda => ("cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync"),
        Api::Hip => ("hipMemcpyHtoDAsync", "hipMemcpyDtoHAsync"),
    };
    let alloc = match driver.api() {
        Api::Cuda => "cuMemHostAlloc",
        Api::Hip => "hipHostMalloc",
    };
    r.map(|(up_ns, down_ns)| HostCopyStats {
        up_ns,
        down_ns,
        timing: TimingSource::DeviceTimestamps,
        how: format!("{alloc} host memory, {up} / {down} of {n} bytes"),
    })
}

type Times = (Vec<u64>, Vec<u64>);

fn rounds<'a, D: Driver>(
    driver: &'a D,
    stream: StreamH,
    dev: &GpuDevice,
    job: HostCopyJob<'_>,
    pinned: &mut Pinned<'a, D>,
    bufs: &mut super::execute::Buffers<'a, D>,
    events: &mut Events<'a, D>,
) -> Result<Times, GpuError> {
    let n = job.bytes;
    let up = pinned.alloc(n)?;
    let down = pinned.alloc(n)?;
    let d: DevPtr = driver.malloc(n)?;
    bufs.ptrs.push(d);
    let what = format!("{n}-byte copies to and from {}", dev.name);
    let (mut up_ns, mut down_ns) = (Vec::new(), Vec::new());
    let ns = |ms: f32| (f64::from(ms.max(0.0)) * 1e6).round() as u64;
    for round in 0..job.rounds {
        {
            // SAFETY: two live pinned allocations of `n` bytes, apart; no
            // copy uses them (the last round's were waited for).
            let (u, w) = unsafe {
                (
                    std::slice::from_raw_parts_mut(up, n),
                    std::slice::from_raw_parts_mut(down, n),
                )
            };
            job.data.fill(round, u, w);
        }
        let deadline = Instant::now() + job.timeout;
        let e0 = events.record(stream)?;
        // SAFETY: `up` holds `n` bytes until the wait below.
        unsafe { driver.htod_async(d, up, n, stream) }?;
        let e1 = events.record(stream)?;
        // SAFETY: `down` has room for `n` bytes until the wait below.
        unsafe { driver.dtoh_async(down, d, n, stream) }?;
        let e2 = events.record(stream)?;
        wait_event(
            driver,
            e2,
            &what,
            deadline.saturating_duration_since(Instant::now()),
        )?;
        up_ns.push(ns(driver.event_elapsed_ms(e0, e1)?));
        down_ns.push(ns(driver.event_elapsed_ms(e1, e2)?));
        // SAFETY: as above; both copies are complete.
        let (u, w) = unsafe {
            (
                std::slice::from_raw_parts(up as *const u8, n),
                std::slice::from_raw_parts(down as *const u8, n),
            )
        };
        job.data.check(round, u, w);
    }
    Ok((up_ns, down_ns))
}
