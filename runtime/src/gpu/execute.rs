//! One run of an op on a HIP or CUDA device: the buffers and events it
//! owns (leaked, not freed, after a timeout), the deadline-bounded wait,
//! the warm-up and the timed repeats.

use super::driver::{
    DevPtr, Dims, Driver, EventH, EventState, FuncH, GpuDevice, GpuError, StreamH,
};
use super::launch::{ArgSlot, KernelArg};
use super::staging::{self, Staging};
use crate::job::{Job, RunStats, TimingSource};
use crate::tuning::Tuning;
use crate::warmth::Warmth;
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// Enqueues one repeat of an op on the stream, given the device buffers in
/// binding order (inputs, then outputs).
pub type Dispatch<'a> = dyn FnMut(StreamH, &[DevPtr]) -> Result<(), GpuError> + 'a;

/// Launches `f` with `args`, each in a slot of its own.
pub fn launch_on<D: Driver>(
    driver: &D,
    f: FuncH,
    dims: Dims,
    stream: StreamH,
    args: &[KernelArg],
) -> Result<(), GpuError> {
    if dims.is_empty() {
        return Err(GpuError::Invalid(format!(
            "empty launch grid {:?} block {:?}",
            dims.grid, dims.block
        )));
    }
    let mut slots: Vec<ArgSlot> = args.iter().map(KernelArg::slot).collect();
    let mut ptrs: Vec<*mut c_void> = slots
        .iter_mut()
        .map(|s| s as *mut ArgSlot as *mut c_void)
        .collect();
    // SAFETY: `ptrs` points into `slots`, both alive across the call (the
    // driver copies the arguments before returning).
    unsafe { driver.launch(f, dims, stream, ptrs.as_mut_ptr()) }
}

/// Device allocations freed on drop, unless leaked after a timeout.
pub(super) struct Buffers<'a, D: Driver> {
    pub(super) driver: &'a D,
    pub(super) ptrs: Vec<DevPtr>,
}

impl<D: Driver> Drop for Buffers<'_, D> {
    fn drop(&mut self) {
        for p in self.ptrs.drain(..) {
            // SAFETY: allocated by malloc below, freed once.
            unsafe { self.driver.free(p) };
        }
    }
}

/// Events destroyed on drop, unless leaked after a timeout.
pub(super) struct Events<'a, D: Driver> {
    pub(super) driver: &'a D,
    pub(super) list: Vec<EventH>,
}

impl<D: Driver> Events<'_, D> {
    pub(super) fn record(&mut self, stream: StreamH) -> Result<EventH, GpuError> {
        let e = self.driver.event_create()?;
        self.list.push(e);
        self.driver.event_record(e, stream)?;
        Ok(e)
    }
}

impl<D: Driver> Drop for Events<'_, D> {
    fn drop(&mut self) {
        for e in self.list.drain(..) {
            // SAFETY: created above, destroyed once.
            unsafe { self.driver.event_destroy(e) };
        }
    }
}

/// Polls `e` until it completes or `limit` passes: a short spin for
/// microsecond kernels, then sleeps growing to 1 ms.
pub fn wait_event<D: Driver>(
    driver: &D,
    e: EventH,
    what: &str,
    limit: Duration,
) -> Result<(), GpuError> {
    let start = Instant::now();
    let mut nap = Duration::from_micros(1);
    loop {
        if driver.event_query(e)? == EventState::Done {
            return Ok(());
        }
        let waited = start.elapsed();
        if waited >= limit {
            return Err(GpuError::Timeout {
                what: what.to_string(),
                limit,
            });
        }
        if waited > Duration::from_micros(200) {
            std::thread::sleep(nap.min(limit - waited));
            nap = (nap * 2).min(Duration::from_millis(1));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// What one repeat enqueues: the kernel's name (for the stats) and how many
/// launches `dispatch` makes (a repeat's time is reported per launch).
pub(super) struct Launches<'k> {
    pub(super) kernel: String,
    pub(super) batch: u32,
    /// Where the run's scratch goes after a success instead of being
    /// freed (`Backend::keep_scratch`); `None`: freed with the rest.
    pub(super) kept: Option<&'k mut Vec<(DevPtr, usize)>>,
    /// Host-made tables the kernels read after the scratch ([`super::launch::Plan::aux`]).
    pub(super) aux: &'k [greta_kernels::HostBuf],
}

/// Bounce buffers for a run that moves a buffer of [`staging::FROM`] bytes
/// or more; none where the driver cannot pin them (the copies then go
/// directly, as smaller ones do).
pub(super) fn stage_for<'d, 'h, D: Driver>(
    driver: &'d D,
    deadline: Instant,
    mut bufs: impl Iterator<Item = &'h greta_kernels::HostBuf>,
) -> Option<Staging<'d, D>> {
    if !bufs.any(|h| h.byte_len() >= staging::FROM) {
        return None;
    }
    Staging::new(driver, deadline)
        .inspect_err(|e| tracing::debug!("no pinned bounce buffers ({e}): copying directly"))
        .ok()
}

/// Most untimed passes before the timed repeats (the warm-up's GPU time
/// is `crate::warmth`'s rule, as on Vulkan).
const WARMUP_MAX_PASSES: u64 = 2_000;

/// Uploads inputs and outputs, warms the GPU up (untimed passes, what
/// `warmth` says is still owed), enqueues `dispatch` once per repeat
/// between two events, waits for the last with the run's deadline, then
/// reads the outputs back.
// The device's handles and the run's parts, each its own argument.
#[allow(clippy::too_many_arguments)]
pub(super) fn execute<D: Driver>(
    driver: &D,
    stream: Option<StreamH>,
    dev: &GpuDevice,
    warmth: &mut Warmth,
    job: Job,
    launches: Launches<'_>,
    hold: &mut dyn FnMut(StreamH) -> Result<(), GpuError>,
    dispatch: &mut Dispatch<'_>,
) -> Result<RunStats, GpuError> {
    let Launches {
        kernel,
        batch,
        kept,
        aux,
    } = launches;
    let (op, inputs, outputs, opts) = (job.op, job.inputs, job.outputs, job.opts);
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let stream = stream.ok_or_else(|| GpuError::Device("device is lost".into()))?;
    driver.activate(dev.ordinal)?;
    let mut bufs = Buffers {
        driver,
        ptrs: Vec::with_capacity(inputs.len() + outputs.len()),
    };
    for b in inputs.iter().chain(outputs.iter()) {
        // A zero-byte allocation may come back null; keep one byte so every
        // buffer is a real pointer.
        bufs.ptrs.push(driver.malloc(b.byte_len().max(1))?);
    }
    // The op's scratch, after its outputs: device memory its passes share,
    // zeroed before the first launch (as Vulkan's), never read back.
    let mut scratch_bytes = Vec::new();
    for s in op.scratch() {
        let bytes = s
            .len
            .checked_mul(s.dtype.size())
            .ok_or_else(|| GpuError::Invalid(format!("{op}: scratch {} overflows", s.name)))?;
        bufs.ptrs.push(driver.malloc(bytes.max(1))?);
        scratch_bytes.push(bytes.max(1));
    }
    for a in aux {
        bufs.ptrs.push(driver.malloc(a.byte_len().max(1))?);
    }
    let mut events = Events {
        driver,
        list: Vec::new(),
    };
    // Declared after `events`, so dropped before them: its drop waits on
    // its last copies' events.
    let mut staging = stage_for(driver, deadline, inputs.iter().chain(outputs.iter()));
    let result = (|| {
        for (d, h) in bufs.ptrs.iter().zip(inputs.iter().chain(outputs.iter())) {
            let bytes = h.as_bytes();
            // SAFETY: `bytes` stays borrowed until the stream has passed
            // the copy (the wait below).
            unsafe { staging::upload(driver, staging.as_mut(), &mut events, stream, *d, bytes)? };
        }
        // Zeroed on the device: a memory test's GiB of scratch uploaded as
        // zeros from pageable memory took 0.3 s a run (H200, 2026-11-29).
        let io = inputs.len() + outputs.len();
        for (d, &n) in bufs.ptrs[io..].iter().zip(&scratch_bytes) {
            // SAFETY: `d` was allocated above with `n` bytes.
            unsafe { driver.memset_async(*d, 0, n, stream)? };
        }
        for (d, a) in bufs.ptrs[io + scratch_bytes.len()..].iter().zip(aux) {
            let bytes = a.as_bytes();
            // SAFETY: `aux` is borrowed for the whole call.
            unsafe { driver.htod_async(*d, bytes.as_ptr(), bytes.len(), stream)? };
        }
        let uploaded = events.record(stream)?;
        wait_event(driver, uploaded, "upload to the GPU", left())?;
        let began = Instant::now();
        warmth.next(&op.to_string());
        let target = warmth.owed(crate::warmth::op_target_ns(op));
        let mut warm_ns = 0u64;
        let mut warm_passes = 0u64;
        if target > 0 {
            let a = events.record(stream)?;
            dispatch(stream, &bufs.ptrs)?;
            let b = events.record(stream)?;
            wait_event(driver, b, &format!("{op} warm-up on {}", dev.name), left())?;
            let ns = (f64::from(driver.event_elapsed_ms(a, b)?.max(0.0)) * 1e6) as u64;
            let passes = target.div_ceil(ns.max(1)).min(WARMUP_MAX_PASSES);
            for _ in 1..passes {
                dispatch(stream, &bufs.ptrs)?;
            }
            warm_ns = ns.saturating_mul(passes.max(1));
            warm_passes = passes.max(1);
        }
        // A batched op's repeat is `batch` launches: the launches asked
        // for (`opts.repeats`, as a Vulkan submission's dispatches) in as
        // few repeats, each behind its hold. 256 noop repeats of 64
        // launches each were 0.18 s of hold kernels a run (H200).
        let timed = if batch > 1 {
            opts.repeats.div_ceil(batch).max(1)
        } else {
            opts.repeats
        };
        let mut pairs = Vec::with_capacity(timed as usize);
        for _ in 0..timed {
            // Untimed: lets the host queue the whole repeat before the GPU
            // reaches it (noop); a no-op for every other op.
            hold(stream)?;
            let before = events.record(stream)?;
            dispatch(stream, &bufs.ptrs)?;
            pairs.push((before, events.record(stream)?));
        }
        let what = format!("{op} x{timed} on {}", dev.name);
        if let Some(&(_, last)) = pairs.last() {
            wait_event(driver, last, &what, left())?;
        }
        let ended = Instant::now();
        let device_ns = pairs
            .iter()
            .map(|&(a, b)| {
                driver
                    .event_elapsed_ms(a, b)
                    .map(|ms| (f64::from(ms.max(0.0)) * 1e6 / f64::from(batch)) as u64)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let timed_ns = device_ns
            .iter()
            .sum::<u64>()
            .saturating_mul(u64::from(batch));
        let busy = Duration::from_nanos(warm_ns.saturating_add(timed_ns));
        warmth.worked(began, ended, busy);
        for (d, h) in bufs.ptrs[inputs.len()..].iter().zip(outputs.iter_mut()) {
            let out = h.as_bytes_mut();
            // SAFETY: `out` stays borrowed until the wait below has passed
            // the copy.
            unsafe { staging::download(driver, staging.as_mut(), &mut events, stream, out, *d)? };
        }
        let read = events.record(stream)?;
        wait_event(driver, read, "download from the GPU", left())?;
        // Where a run's wall time went (`RUST_LOG=greta_runtime=debug`):
        // what a profile's wall is made of, beside the device's time.
        tracing::debug!(
            "{op}: upload {:.1} ms, warm-up {warm_passes} passes ({:.1} ms of device time, \
             {:.1} ms owed), {timed} timed {:.1} ms of wall, read back {:.1} ms",
            began.saturating_duration_since(start).as_secs_f64() * 1e3,
            warm_ns as f64 / 1e6,
            target as f64 / 1e6,
            ended.saturating_duration_since(began).as_secs_f64() * 1e3,
            ended.elapsed().as_secs_f64() * 1e3,
        );
        Ok(device_ns)
    })();
    if let (Ok(_), Some(kept)) = (&result, kept) {
        // Kept allocated (`Backend::keep_scratch`): freed by the backend.
        let io = inputs.len() + outputs.len();
        let n = scratch_bytes.len();
        kept.extend(bufs.ptrs.drain(io..io + n).zip(scratch_bytes));
    }
    match result {
        Ok(device_ns) => Ok(RunStats {
            device_ns,
            timing: TimingSource::DeviceTimestamps,
            wall: start.elapsed(),
            kernel,
            tuning: Tuning::default(),
            dispatches_per_repeat: batch,
            step_ns: Vec::new(),
        }),
        Err(e) => {
            if matches!(e, GpuError::Timeout { .. }) {
                // The GPU still owns these: freeing them would block on a
                // hung device.
                std::mem::forget(staging);
                std::mem::forget(bufs);
                std::mem::forget(events);
            }
            Err(e)
        }
    }
}
