//! Large copies between pageable host memory and the device through two
//! pinned bounce buffers, filled and drained on every core.
//!
//! From pageable memory the driver copies through a bounce buffer of its
//! own, on one thread: a GiB took 0.3 s each way on an H200 host
//! (2026-11-29), and a full-size gate moves three a repeat (its input, its
//! poisoned output, the output read back). Here each piece is copied into
//! pinned memory on every core while the other piece crosses the link.

use super::driver::{DevPtr, Driver, EventH, GpuError, StreamH};
use super::execute::{wait_event, Events};
use std::time::Instant;

/// Buffers from this size go through the bounce buffers; smaller ones are
/// copied directly (two pinned allocations cost more than they save).
pub(super) const FROM: usize = 64 << 20;
/// Each bounce buffer.
const PIECE: usize = 32 << 20;

/// Two pinned bounce buffers and what last used each.
pub(super) struct Staging<'d, D: Driver> {
    driver: &'d D,
    bufs: [*mut u8; 2],
    /// The event after the last copy that used each buffer, if pending.
    busy: [Option<EventH>; 2],
    deadline: Instant,
}

impl<'d, D: Driver> Staging<'d, D> {
    /// Bounce buffers for a run that must end by `deadline`.
    pub(super) fn new(driver: &'d D, deadline: Instant) -> Result<Self, GpuError> {
        let a = driver.host_alloc(PIECE)?;
        let b = driver.host_alloc(PIECE).inspect_err(|_| {
            // SAFETY: allocated just above, never used.
            unsafe { driver.host_free(a) }
        })?;
        Ok(Self {
            driver,
            bufs: [a, b],
            busy: [None, None],
            deadline,
        })
    }

    /// Queues the copy of `src` to `dst` on `stream`. On return every byte
    /// is in pinned memory; the last pieces may still be crossing, so the
    /// caller waits on the stream before it reads `dst`.
    pub(super) fn upload(
        &mut self,
        events: &mut Events<'_, D>,
        stream: StreamH,
        dst: DevPtr,
        src: &[u8],
    ) -> Result<(), GpuError> {
        for (i, piece) in src.chunks(PIECE).enumerate() {
            let k = i % 2;
            self.wait_free(k)?;
            // SAFETY: `bufs[k]` holds PIECE bytes and no copy uses it (waited above).
            let buf = unsafe { std::slice::from_raw_parts_mut(self.bufs[k], piece.len()) };
            crate::bulk::copy(buf, piece);
            // SAFETY: `bufs[k]` stays untouched until `busy[k]` has passed.
            unsafe {
                self.driver
                    .htod_async(at(dst, i), self.bufs[k], piece.len(), stream)?
            };
            self.busy[k] = Some(events.record(stream)?);
        }
        Ok(())
    }

    /// Copies `src` into `dst` after what `stream` already holds, two pieces
    /// in flight while the one before them is moved out.
    pub(super) fn download(
        &mut self,
        events: &mut Events<'_, D>,
        stream: StreamH,
        dst: &mut [u8],
        src: DevPtr,
    ) -> Result<(), GpuError> {
        let total = dst.len();
        let n = total.div_ceil(PIECE);
        let len = |i: usize| PIECE.min(total - i * PIECE);
        for i in 0..n.min(2) {
            self.fetch(events, stream, src, i, len(i))?;
        }
        for (i, piece) in dst.chunks_mut(PIECE).enumerate() {
            let k = i % 2;
            self.wait_free(k)?;
            // SAFETY: piece i's copy into `bufs[k]` has passed (waited above).
            let buf = unsafe { std::slice::from_raw_parts(self.bufs[k], piece.len()) };
            crate::bulk::copy(piece, buf);
            if i + 2 < n {
                self.fetch(events, stream, src, i + 2, len(i + 2))?;
            }
        }
        Ok(())
    }

    /// Queues piece `i` of `src` (`n` bytes) into its bounce buffer.
    fn fetch(
        &mut self,
        events: &mut Events<'_, D>,
        stream: StreamH,
        src: DevPtr,
        i: usize,
        n: usize,
    ) -> Result<(), GpuError> {
        let k = i % 2;
        self.wait_free(k)?;
        // SAFETY: `bufs[k]` holds PIECE >= n bytes and no copy uses it.
        unsafe {
            self.driver
                .dtoh_async(self.bufs[k], at(src, i), n, stream)?
        };
        self.busy[k] = Some(events.record(stream)?);
        Ok(())
    }

    /// Waits until no queued copy uses bounce buffer `k`.
    fn wait_free(&mut self, k: usize) -> Result<(), GpuError> {
        if let Some(e) = self.busy[k].take() {
            let left = self.deadline.saturating_duration_since(Instant::now());
            wait_event(self.driver, e, "a copy through pinned memory", left)?;
        }
        Ok(())
    }
}

/// Queues the copy of `src` to `dst`: through `staging`'s bounce buffers
/// when there are some and `src` is [`FROM`] bytes or more, else directly.
///
/// # Safety
/// `src` stays borrowed until the stream has passed the copy (the
/// caller's wait on the stream).
pub(super) unsafe fn upload<D: Driver>(
    driver: &D,
    staging: Option<&mut Staging<'_, D>>,
    events: &mut Events<'_, D>,
    stream: StreamH,
    dst: DevPtr,
    src: &[u8],
) -> Result<(), GpuError> {
    match staging {
        Some(st) if src.len() >= FROM => st.upload(events, stream, dst, src),
        // SAFETY: the caller keeps `src` until the stream has passed it.
        _ => unsafe { driver.htod_async(dst, src.as_ptr(), src.len(), stream) },
    }
}

/// Queues the copy of `src` into `dst`, as [`upload`] chooses its way.
///
/// # Safety
/// `dst` stays borrowed until the stream has passed the copy.
pub(super) unsafe fn download<D: Driver>(
    driver: &D,
    staging: Option<&mut Staging<'_, D>>,
    events: &mut Events<'_, D>,
    stream: StreamH,
    dst: &mut [u8],
    src: DevPtr,
) -> Result<(), GpuError> {
    match staging {
        Some(st) if dst.len() >= FROM => st.download(events, stream, dst, src),
        // SAFETY: the caller keeps `dst` until the stream has passed it.
        _ => unsafe { driver.dtoh_async(dst.as_mut_ptr(), src, dst.len(), stream) },
    }
}

/// Where piece `i` of a device buffer starts.
fn at(p: DevPtr, i: usize) -> DevPtr {
    DevPtr(p.0 + (i * PIECE) as u64)
}

impl<D: Driver> Drop for Staging<'_, D> {
    /// Frees the buffers once no copy uses them. After a timeout the caller
    /// forgets the staging instead: the GPU may still copy into it.
    fn drop(&mut self) {
        for k in 0..2 {
            if self.wait_free(k).is_err() {
                return;
            }
        }
        for b in self.bufs {
            // SAFETY: from host_alloc, no copy uses it (waited above), freed once.
            unsafe { self.driver.host_free(b) };
        }
    }
}
