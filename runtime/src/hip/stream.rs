//! One stream per device, events for kernel time, and waits with deadlines.
//!
//! `hipStreamSynchronize`/`hipEventSynchronize` block forever on a hung GPU;
//! greta instead polls `hipEventQuery` until a deadline, so a hang becomes a
//! [`HipError::Timeout`] and greta returns.

use super::error::{check, HipError};
use super::module::Function;
use hip_sys::hiprt::{self, hipError_t, hipEvent_t, hipStream_t};
use std::time::{Duration, Instant};

pub struct Stream {
    raw: hipStream_t,
}

impl Stream {
    pub fn new() -> Result<Stream, HipError> {
        let mut raw: hipStream_t = std::ptr::null_mut();
        // SAFETY: out-parameter call; the current device was set by the caller.
        check("hipStreamCreate", unsafe {
            hiprt::hipStreamCreate(&mut raw)
        })?;
        Ok(Stream { raw })
    }

    pub fn raw(&self) -> hipStream_t {
        self.raw
    }

    /// Records a fresh event at the current end of the stream.
    pub fn record(&self) -> Result<Event, HipError> {
        let ev = Event::new()?;
        // SAFETY: both handles are live.
        check("hipEventRecord", unsafe {
            hiprt::hipEventRecord(ev.raw, self.raw)
        })?;
        Ok(ev)
    }

    /// Waits until everything submitted so far has finished, or `limit` passes.
    pub fn finish(&self, what: &str, limit: Duration) -> Result<(), HipError> {
        self.record()?.wait(what, limit)
    }

    /// Launches `f` with its arguments (see [`KernelArg`]) on this stream.
    pub fn launch(
        &self,
        f: Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &[KernelArg],
    ) -> Result<(), HipError> {
        // Each argument lives in its own 8-byte slot; HIP reads
        // `sizeof(param)` bytes from each pointer, little-endian.
        let mut slots: Vec<u64> = args.iter().map(KernelArg::bits).collect();
        let mut ptrs: Vec<*mut libc::c_void> = slots
            .iter_mut()
            .map(|s| s as *mut u64 as *mut libc::c_void)
            .collect();
        if grid.contains(&0) || block.contains(&0) {
            return Err(HipError::Invalid(format!(
                "empty launch grid {grid:?} block {block:?}"
            )));
        }
        // SAFETY: `ptrs` points into `slots`, both alive across the call
        // (HIP copies the arguments before returning).
        check("hipModuleLaunchKernel", unsafe {
            hiprt::hipModuleLaunchKernel(
                f.raw(),
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_bytes,
                self.raw,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the handle came from hipStreamCreate and is destroyed once.
        unsafe {
            hiprt::hipStreamDestroy(self.raw);
        }
    }
}

/// A kernel argument by value: device pointers and 32-bit scalars are all
/// the kernels take.
#[derive(Debug, Clone, Copy)]
pub enum KernelArg {
    Ptr(*mut libc::c_void),
    U32(u32),
    I32(i32),
    F32(f32),
}

impl KernelArg {
    fn bits(&self) -> u64 {
        match *self {
            KernelArg::Ptr(p) => p as usize as u64,
            KernelArg::U32(v) => v as u64,
            KernelArg::I32(v) => v as u32 as u64,
            KernelArg::F32(v) => v.to_bits() as u64,
        }
    }
}

pub struct Event {
    raw: hipEvent_t,
}

impl Event {
    fn new() -> Result<Event, HipError> {
        let mut raw: hipEvent_t = std::ptr::null_mut();
        // SAFETY: out-parameter call.
        check("hipEventCreate", unsafe { hiprt::hipEventCreate(&mut raw) })?;
        Ok(Event { raw })
    }

    /// Polls the event until it completes or `limit` passes: a short spin for
    /// microsecond kernels, then sleeps growing to 1 ms so a long wait costs
    /// no CPU.
    pub fn wait(&self, what: &str, limit: Duration) -> Result<(), HipError> {
        let start = Instant::now();
        let mut nap = Duration::from_micros(1);
        loop {
            // SAFETY: live event handle.
            let e = unsafe { hiprt::hipEventQuery(self.raw) };
            match e {
                hipError_t::hipSuccess => return Ok(()),
                hipError_t::hipErrorNotReady => {}
                other => return check("hipEventQuery", other),
            }
            if start.elapsed() >= limit {
                return Err(HipError::Timeout {
                    what: what.to_string(),
                    limit,
                });
            }
            if start.elapsed() > Duration::from_micros(200) {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(1));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// GPU time between two completed events.
    pub fn elapsed_since(&self, start: &Event) -> Result<Duration, HipError> {
        let mut ms: f32 = 0.0;
        // SAFETY: both events were recorded and have completed.
        check("hipEventElapsedTime", unsafe {
            hiprt::hipEventElapsedTime(&mut ms, start.raw, self.raw)
        })?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by hipEventCreate, destroyed once.
        unsafe {
            hiprt::hipEventDestroy(self.raw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_laid_out_little_endian_in_their_slots() {
        assert_eq!(KernelArg::U32(7).bits(), 7);
        assert_eq!(KernelArg::I32(-1).bits(), 0xffff_ffff);
        assert_eq!(KernelArg::F32(1.5).bits(), 1.5f32.to_bits() as u64);
        let p = 0x1234_5678_9abc_usize as *mut libc::c_void;
        assert_eq!(KernelArg::Ptr(p).bits(), 0x1234_5678_9abc);
    }
}
