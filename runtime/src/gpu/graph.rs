//! Replaying a [`crate::graph::Graph`] on HIP or CUDA: the steps' launches are
//! captured once from the stream into a device graph, then launched once
//! per replay. A pass timed launch by launch first gives each step's time
//! (and sizes the warm-up). A runtime without stream capture replays the
//! launches one by one and says so ([`Replay::Launches`]).

use super::driver::{Dims, Driver, FuncH, GpuDevice, GpuError, GraphH, StreamH};
use super::execute::{launch_on, wait_event, Buffers, Events};
use super::launch::{self, KernelArg, MapArg};
use crate::graph::{median, GraphJob, GraphStats, Replay, STEP_PASSES};
use crate::job::TimingSource;
use std::time::{Duration, Instant};

/// One step's launch, resolved against the loaded module.
pub(super) struct StepLaunch {
    pub kernel: String,
    pub function: FuncH,
    pub dims: Dims,
    pub scalars: Vec<KernelArg>,
    /// Tensor maps passed after the buffers ([`launch::arguments`]).
    pub maps: Vec<MapArg>,
    /// Later launches with the same arguments (a split reduction's combine).
    pub then: Vec<(FuncH, Dims)>,
    /// Bytes of each scratch buffer the op's passes share (after its outputs).
    pub scratch: Vec<usize>,
    /// Host-made tables bound after the scratch, uploaded once.
    pub aux: Vec<greta_kernels::HostBuf>,
}

const WARMUP_MAX_REPLAYS: u64 = 2_000;

/// An instantiated graph, destroyed on drop unless leaked after a timeout.
struct Owned<'a, D: Driver> {
    driver: &'a D,
    graph: Option<GraphH>,
}

impl<D: Driver> Drop for Owned<'_, D> {
    fn drop(&mut self) {
        if let Some(g) = self.graph.take() {
            // SAFETY: instantiated by capture_end, destroyed once; every
            // replay was waited for (a timeout leaks this instead).
            unsafe { self.driver.graph_destroy(g) };
        }
    }
}

pub(super) fn execute<D: Driver>(
    driver: &D,
    stream: Option<StreamH>,
    dev: &GpuDevice,
    warmth: &mut crate::warmth::Warmth,
    steps: &[StepLaunch],
    job: GraphJob,
) -> Result<GraphStats, GpuError> {
    let start = Instant::now();
    let deadline = start + job.opts.timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let stream = stream.ok_or_else(|| GpuError::Device("device is lost".into()))?;
    driver.activate(dev.ordinal)?;
    let mut bufs = Buffers {
        driver,
        ptrs: Vec::with_capacity(job.buffers.len()),
    };
    for b in job.buffers.iter() {
        bufs.ptrs.push(driver.malloc(b.byte_len().max(1))?);
    }
    // Each step's scratch, after the slots: device memory only its passes use.
    let mut scratch_at = Vec::with_capacity(steps.len());
    for l in steps {
        scratch_at.push(bufs.ptrs.len());
        for &bytes in &l.scratch {
            bufs.ptrs.push(driver.malloc(bytes.max(1))?);
        }
        for a in &l.aux {
            bufs.ptrs.push(driver.malloc(a.byte_len().max(1))?);
        }
    }
    let mut events = Events {
        driver,
        list: Vec::new(),
    };
    let mut owned = Owned {
        driver,
        graph: None,
    };
    // After `events`: dropped before them (see `execute::stage_for`).
    let mut staging = super::execute::stage_for(driver, deadline, job.buffers.iter());
    let what = format!("a graph of {} steps on {}", steps.len(), dev.name);
    let args: Vec<Vec<KernelArg>> = job
        .graph
        .steps
        .iter()
        .zip(steps)
        .zip(&scratch_at)
        .map(|((st, l), &at)| {
            let ptrs: Vec<_> = st
                .bind
                .iter()
                .map(|&s| bufs.ptrs[s])
                .chain(
                    bufs.ptrs[at..at + l.scratch.len() + l.aux.len()]
                        .iter()
                        .copied(),
                )
                .collect();
            launch::arguments(driver, &ptrs, &l.maps, &l.scalars)
        })
        .collect::<Result<_, _>>()?;
    let step = |s: StreamH, l: &StepLaunch, a: &[KernelArg]| -> Result<(), GpuError> {
        launch_on(driver, l.function, l.dims, s, a)?;
        for &(f, dims) in &l.then {
            launch_on(driver, f, dims, s, a)?;
        }
        Ok(())
    };
    let enqueue = |s: StreamH| -> Result<(), GpuError> {
        for (l, a) in steps.iter().zip(&args) {
            step(s, l, a)?;
        }
        Ok(())
    };
    let result = (|| {
        for (d, h) in bufs.ptrs.iter().zip(job.buffers.iter()) {
            let bytes = h.as_bytes();
            // SAFETY: `bytes` stays borrowed until the wait below.
            unsafe {
                super::staging::upload(driver, staging.as_mut(), &mut events, stream, *d, bytes)?
            };
        }
        // Every step's scratch starts zeroed (as on Vulkan): attn_decode_f16
        // counts its blocks there.
        for (l, &at) in steps.iter().zip(&scratch_at) {
            for (d, &n) in bufs.ptrs[at..at + l.scratch.len()].iter().zip(&l.scratch) {
                // SAFETY: `d` was allocated above with `n.max(1)` bytes.
                unsafe { driver.memset_async(*d, 0, n.max(1), stream)? };
            }
            let tables = at + l.scratch.len();
            for (d, a) in bufs.ptrs[tables..tables + l.aux.len()].iter().zip(&l.aux) {
                let bytes = a.as_bytes();
                // SAFETY: `steps` (and so `a`) outlive the wait below.
                unsafe { driver.htod_async(*d, bytes.as_ptr(), bytes.len(), stream)? };
            }
        }
        let up = events.record(stream)?;
        wait_event(driver, up, "upload to the GPU", left())?;
        let began = Instant::now();

        let ns = |a, b| -> Result<u64, GpuError> {
            Ok((f64::from(driver.event_elapsed_ms(a, b)?.max(0.0)) * 1e6) as u64)
        };
        // Capture once; a runtime without capture launches one by one.
        let replay = match driver.capture_begin(stream) {
            Ok(()) => {
                let captured = enqueue(stream);
                // End the capture whatever happened, so the stream is usable.
                let graph = driver.capture_end(stream);
                captured?;
                owned.graph = Some(graph?);
                Replay::DeviceGraph
            }
            Err(e) => {
                tracing::warn!("no device graph ({e}): replaying launch by launch");
                Replay::Launches
            }
        };
        let replay_once = |s: StreamH| match owned.graph {
            Some(g) => driver.graph_launch(g, s),
            None => enqueue(s),
        };
        // One replay timed sizes the warm-up; then every step and replay
        // is timed at working clocks (an idle GPU starts at a fraction of
        // them: H200, 345 MHz).
        let a = events.record(stream)?;
        replay_once(stream)?;
        let b = events.record(stream)?;
        wait_event(driver, b, &what, left())?;
        let pass_ns = ns(a, b)?;
        // What the warm-up still owes after the device's recent work: none
        // straight after a warm-up of its own.
        warmth.next(&job.key());
        let owed = warmth.owed(crate::warmth::GRAPH_NS);
        let warm = if owed == 0 {
            0
        } else {
            owed.div_ceil(pass_ns.max(1)).clamp(1, WARMUP_MAX_REPLAYS)
        };
        for _ in 0..warm {
            replay_once(stream)?;
        }
        // Step by step, timed: each step's time (its launches on their own,
        // between events: the replay is shorter than their sum by the gaps
        // the device graph removes).
        let mut marks = Vec::with_capacity(STEP_PASSES as usize);
        for _ in 0..STEP_PASSES {
            let mut row = vec![events.record(stream)?];
            for (l, a) in steps.iter().zip(&args) {
                step(stream, l, a)?;
                row.push(events.record(stream)?);
            }
            marks.push(row);
        }
        // The timed replays go into the stream straight behind the step
        // passes, which sit behind the warm-up: the device is still busy
        // when each replay's first event is recorded, so no replay's time
        // holds the host's launch of it. Waiting for the step passes here
        // first left the stream idle, and the default profile's one timed
        // replay a repeat held that launch: block_decode.small at 27.7 us
        // for a best of 17.6 (H200, 2026-11-29).
        let mut pairs = Vec::with_capacity(job.opts.repeats as usize);
        for _ in 0..job.opts.repeats {
            let a = events.record(stream)?;
            replay_once(stream)?;
            pairs.push((a, events.record(stream)?));
        }
        if let Some(&(_, last)) = pairs.last() {
            wait_event(driver, last, &what, left())?;
        }
        let mut step_ns = Vec::with_capacity(steps.len());
        for i in 0..steps.len() {
            let v = marks
                .iter()
                .map(|r| ns(r[i], r[i + 1]))
                .collect::<Result<Vec<_>, _>>()?;
            step_ns.push(median(&v));
        }
        let device_ns = pairs
            .iter()
            .map(|&(a, b)| ns(a, b))
            .collect::<Result<Vec<_>, _>>()?;
        // The device's own time at work: the replays (the warm-up's at the
        // first one's pace), the step passes and the timed replays.
        let steps_ns: u64 = marks
            .iter()
            .map(|r| ns(r[0], r[r.len() - 1]))
            .sum::<Result<u64, _>>()?;
        let busy = pass_ns
            .saturating_mul(1 + warm)
            .saturating_add(steps_ns)
            .saturating_add(device_ns.iter().sum());
        warmth.worked(began, Instant::now(), Duration::from_nanos(busy));
        for &s in job.read_back {
            let out = job.buffers[s].as_bytes_mut();
            let src = bufs.ptrs[s];
            // SAFETY: `out` stays borrowed until the wait below.
            unsafe {
                super::staging::download(driver, staging.as_mut(), &mut events, stream, out, src)?
            };
        }
        let read = events.record(stream)?;
        wait_event(driver, read, "download from the GPU", left())?;
        Ok((device_ns, step_ns, replay))
    })();
    match result {
        Ok((device_ns, step_ns, replay)) => Ok(GraphStats {
            device_ns,
            step_ns,
            kernels: steps.iter().map(|l| l.kernel.clone()).collect(),
            timing: TimingSource::DeviceTimestamps,
            replay,
            wall: start.elapsed(),
        }),
        Err(e) => {
            if matches!(e, GpuError::Timeout { .. }) {
                // The GPU still owns these (see `execute::execute`).
                std::mem::forget(staging);
                std::mem::forget(bufs);
                std::mem::forget(events);
                std::mem::forget(owned);
            }
            Err(e)
        }
    }
}
