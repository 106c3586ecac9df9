//! Measuring in-run ceilings and running the stress loop over any
//! [`Driver`]: device buffers, events around batches of vendor calls, the
//! same warm-up rule as the gates, deadlines on every wait.

use super::layout::{self, Buffer};
use super::{GemmKind, VendorBlas};
use crate::ceiling::{Ceiling, CeilingError, CeilingUnit};
use crate::gpu::driver::{Api, DevPtr, Driver, EventH, GpuDevice, GpuError, StreamH};
use crate::gpu::execute::{wait_event, Dispatch};
use crate::stress::{
    input_f16, sample_tiles, Operand, StressEngine, StressInterval, StressReport, StressRequest,
    TileSample,
};
use crate::warmth::Warmth;
use greta_kernels::Op;
use std::time::{Duration, Instant};

/// Timed repeats of a ceiling, and calls per repeat (as a perf gate's 5 x 5).
const REPEATS: u32 = 5;
const CALLS_PER_REPEAT: u32 = 5;
/// Output entries of a vendor GEMM compared with the CPU (4 tiles of 4 x 4).
const CHECK_TILES: u32 = 4;
const CHECK_SIDE: u32 = 4;

/// Device allocations freed on drop, unless `leak` was called (after a
/// timeout the GPU may still own them).
struct Alloc<'a, D: Driver> {
    driver: &'a D,
    ptrs: Vec<DevPtr>,
    events: Vec<EventH>,
}

impl<'a, D: Driver> Alloc<'a, D> {
    fn new(driver: &'a D) -> Self {
        Alloc {
            driver,
            ptrs: Vec::new(),
            events: Vec::new(),
        }
    }
    fn malloc(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        let p = self.driver.malloc(bytes.max(1))?;
        self.ptrs.push(p);
        Ok(p)
    }
    fn record(&mut self, s: StreamH) -> Result<EventH, GpuError> {
        let e = self.driver.event_create()?;
        self.events.push(e);
        self.driver.event_record(e, s)?;
        Ok(e)
    }
    fn leak(mut self) {
        self.ptrs.clear();
        self.events.clear();
    }
}

impl<D: Driver> Drop for Alloc<'_, D> {
    fn drop(&mut self) {
        for e in self.events.drain(..) {
            // SAFETY: created above, destroyed once.
            unsafe { self.driver.event_destroy(e) };
        }
        for p in self.ptrs.drain(..) {
            // SAFETY: allocated above, freed once.
            unsafe { self.driver.free(p) };
        }
    }
}

/// Runs `f` with an [`Alloc`], leaking it when the device timed out.
fn with_alloc<'a, D: Driver, T>(
    driver: &'a D,
    f: impl FnOnce(&mut Alloc<'a, D>) -> Result<T, GpuError>,
) -> Result<T, GpuError> {
    let mut a = Alloc::new(driver);
    let r = f(&mut a);
    if matches!(r, Err(GpuError::Timeout { .. })) {
        a.leak();
    }
    r
}

/// Untimed passes first (the gates' warm-up rule: what `warmth` says is
/// still owed of `warm_ns`), then `REPEATS` timed batches of
/// `CALLS_PER_REPEAT` calls: the median time of one call, ns.
fn time_calls<'a, D: Driver>(
    a: &mut Alloc<'a, D>,
    stream: StreamH,
    what: &str,
    (warmth, warm_ns): (&mut Warmth, u64),
    deadline: Instant,
    call: &mut dyn FnMut() -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    let driver = a.driver;
    let left = || deadline.saturating_duration_since(Instant::now());
    let began = Instant::now();
    let warm_ns = warmth.owed(warm_ns);
    let e0 = a.record(stream)?;
    call()?;
    let e1 = a.record(stream)?;
    wait_event(driver, e1, what, left())?;
    let one = (f64::from(driver.event_elapsed_ms(e0, e1)?.max(0.0)) * 1e6) as u64;
    let passes = warm_ns.div_ceil(one.max(1)).min(2_000);
    for _ in 1..passes {
        call()?;
    }
    let warm_busy = one.saturating_mul(passes.max(1));
    let mut pairs = Vec::new();
    for _ in 0..REPEATS {
        let b = a.record(stream)?;
        for _ in 0..CALLS_PER_REPEAT {
            call()?;
        }
        pairs.push((b, a.record(stream)?));
    }
    if let Some(&(_, last)) = pairs.last() {
        wait_event(driver, last, what, left())?;
    }
    let ended = Instant::now();
    let mut timed_ns = 0u64;
    for &(x, y) in &pairs {
        let ms = driver.event_elapsed_ms(x, y)?.max(0.0);
        timed_ns = timed_ns.saturating_add((f64::from(ms) * 1e6) as u64);
    }
    let busy = Duration::from_nanos(warm_busy.saturating_add(timed_ns));
    warmth.worked(began, ended, busy);
    let mut ns = pairs
        .iter()
        .map(|&(x, y)| {
            driver
                .event_elapsed_ms(x, y)
                .map(|ms| f64::from(ms.max(0.0)) * 1e6 / f64::from(CALLS_PER_REPEAT))
        })
        .collect::<Result<Vec<_>, _>>()?;
    ns.sort_by(f64::total_cmp);
    Ok(ns[ns.len() / 2])
}

/// Which vendor work stands as `op`'s ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reference {
    /// The driver's device-to-device copy over the op's footprint.
    Copy,
    /// The vendor BLAS's GEMM of the same kind and (m, n, k).
    Gemm(GemmKind, (usize, usize, usize)),
}

/// The ceiling for `op`: a GEMM's is the vendor's GEMM of the same element
/// types and shape, every other GB/s op has the copy's; noop (dispatch
/// cost), the test-only ops and other TFLOP/s ops have none.
pub(crate) fn reference_for(op: &Op) -> Option<Reference> {
    match *op {
        Op::Noop => None,
        _ if op.is_test_only() => None,
        Op::GemmF16 { m, n, k } => Some(Reference::Gemm(GemmKind::F16Acc32, (m, n, k))),
        // Y = X W^T: the vendor's f16 GEMM of the same m, n, k (its layout
        // and f32 output aside, the same multiply-adds on the matrix units).
        Op::LinearF16 { tokens, rows, cols } => {
            Some(Reference::Gemm(GemmKind::F16Acc32, (tokens, rows, cols)))
        }
        Op::GemmF32 { m, n, k } => Some(Reference::Gemm(GemmKind::F32, (m, n, k))),
        // A copy bounds what moves data; a TFLOP/s op that is no GEMM
        // (attention) has no vendor call of the same work here.
        _ if crate::ceiling::copy_bytes(op).is_some() => Some(Reference::Copy),
        _ => None,
    }
}

/// The gates' warm-up rule (`gpu/backend.rs`): about 1 s before large work.
fn warm_ns(bytes: u64, flops: u64) -> u64 {
    if bytes >= 64 << 20 || flops >= 8_000_000_000 {
        1_000_000_000
    } else {
        30_000_000
    }
}

/// The copy ceiling for `op`: the driver's device-to-device copy over the
/// op's footprint, counted as the copy gate counts (read + write).
pub(crate) fn copy_ceiling<D: Driver>(
    driver: &D,
    stream: StreamH,
    dev: &GpuDevice,
    warmth: &mut Warmth,
    op: &Op,
    timeout: Duration,
) -> Result<Ceiling, CeilingError> {
    let bytes = crate::ceiling::copy_bytes(op)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| CeilingError::Device(format!("{op}: no copy footprint that fits")))?;
    let call_name = match driver.api() {
        Api::Cuda => "cuMemcpyDtoDAsync",
        Api::Hip => "hipMemcpyDtoDAsync",
    };
    let deadline = Instant::now() + timeout;
    let ns = with_alloc(driver, |a| {
        driver.activate(dev.ordinal)?;
        let src = a.malloc(bytes)?;
        let dst = a.malloc(bytes)?;
        let what = format!("{call_name} of {bytes} bytes on {}", dev.name);
        time_calls(
            a,
            stream,
            &what,
            (warmth, warm_ns(2 * bytes as u64, 0)),
            deadline,
            &mut || {
                // SAFETY: both allocations are `bytes` long and live in `a`.
                unsafe { driver.dtod_async(dst, src, bytes, stream) }
            },
        )
    })
    .map_err(device_error)?;
    Ok(Ceiling {
        rate: 2.0 * bytes as f64 / ns,
        unit: CeilingUnit::GBps,
        source: format!("memcpy d2d ({call_name})"),
        library: driver.library().path.display().to_string(),
        version: dev.runtime_version.clone(),
        found_by: driver.library().why.clone(),
    })
}

fn device_error(e: GpuError) -> CeilingError {
    match e {
        GpuError::Timeout { .. } => CeilingError::Timeout(e.to_string()),
        e => CeilingError::Device(e.to_string()),
    }
}

/// Host inputs of a GEMM from `seed` ([`input_f16`]), as the bytes of `kind`'s
/// element type: (A, B).
/// Each element is its own hash of the index, so the bytes are made on
/// every core (a stress interval's 256 MiB, an 8192^3 SGEMM's 512 MiB).
fn gemm_inputs(kind: GemmKind, m: usize, n: usize, k: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
    use rayon::prelude::*;
    let make = |which: Operand, len: usize| -> Vec<u8> {
        let es = match kind {
            GemmKind::F16Acc32 => 2,
            GemmKind::F32 => 4,
        };
        let mut v = vec![0u8; len * es];
        v.par_chunks_mut(es * 4096)
            .enumerate()
            .for_each(|(c, part)| {
                for (j, e) in part.chunks_exact_mut(es).enumerate() {
                    let x = input_f16(seed, which, (c * 4096 + j) as u64);
                    match kind {
                        GemmKind::F16Acc32 => e.copy_from_slice(&x.to_bits().to_le_bytes()),
                        GemmKind::F32 => e.copy_from_slice(&x.to_f32().to_le_bytes()),
                    }
                }
            });
        v
    };
    (make(Operand::A, m * k), make(Operand::B, k * n))
}

/// Sizes of the GEMM's buffers in bytes, overflow checked.
fn gemm_bytes(kind: GemmKind, m: usize, n: usize, k: usize) -> Option<[usize; 3]> {
    let es = match kind {
        GemmKind::F16Acc32 => 2,
        GemmKind::F32 => 4,
    };
    Some([
        m.checked_mul(k)?.checked_mul(es)?,
        k.checked_mul(n)?.checked_mul(es)?,
        m.checked_mul(n)?.checked_mul(4)?,
    ])
}

/// Reads the tiles of the row-major `m x n` f32 matrix at `c`.
fn read_tiles<'a, D: Driver>(
    a: &mut Alloc<'a, D>,
    stream: StreamH,
    c: DevPtr,
    n: u32,
    tiles: &[crate::stress::Tile],
    what: &str,
    limit: Duration,
) -> Result<Vec<TileSample>, GpuError> {
    let mut out: Vec<TileSample> = tiles
        .iter()
        .map(|t| TileSample {
            tile: *t,
            values: vec![0f32; (t.rows * t.cols) as usize],
        })
        .collect();
    for s in &mut out {
        let t = s.tile;
        for r in 0..t.rows {
            let off = ((t.row + r) as u64 * n as u64 + t.col as u64) * 4;
            let row = &mut s.values[(r * t.cols) as usize..((r + 1) * t.cols) as usize];
            // SAFETY: the row segment lies inside the m x n allocation
            // (tiles are clipped to the matrix); `row` outlives the wait below.
            unsafe {
                a.driver.dtoh_async(
                    row.as_mut_ptr() as *mut u8,
                    DevPtr(c.0 + off),
                    row.len() * 4,
                    stream,
                )?
            };
        }
    }
    let e = a.record(stream)?;
    wait_event(a.driver, e, what, limit)?;
    Ok(out)
}

/// The vendor's GEMM ceiling for `op`, its output checked on sampled
/// entries against an f64 CPU product (a wrong library or a wrong argument
/// mapping never reports a rate).
// The device's handles and the measurement's parts, each its own argument.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_ceiling<D: Driver>(
    driver: &D,
    stream: StreamH,
    dev: &GpuDevice,
    warmth: &mut Warmth,
    blas: &VendorBlas,
    kind: GemmKind,
    (m, n, k): (usize, usize, usize),
    timeout: Duration,
) -> Result<Ceiling, CeilingError> {
    let call = layout::row_major(m, n, k).map_err(CeilingError::Device)?;
    let sizes = gemm_bytes(kind, m, n, k)
        .ok_or_else(|| CeilingError::Device(format!("{m}x{n}x{k}: buffer size overflows")))?;
    let source = blas.blas.source(kind).to_string();
    let library = blas.loaded.path.display().to_string();
    let seed = 0x022c_1e11;
    let deadline = Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let flops = 2 * m as u64 * n as u64 * k as u64;
    let (ns, samples) = with_alloc(driver, |a| {
        driver.activate(dev.ordinal)?;
        let pa = a.malloc(sizes[0])?;
        let pb = a.malloc(sizes[1])?;
        let pc = a.malloc(sizes[2])?;
        let (ha, hb) = gemm_inputs(kind, m, n, k, seed);
        // SAFETY: sizes match; the host vectors outlive the wait below.
        unsafe {
            driver.htod_async(pa, ha.as_ptr(), ha.len(), stream)?;
            driver.htod_async(pb, hb.as_ptr(), hb.len(), stream)?;
        }
        let up = a.record(stream)?;
        wait_event(driver, up, "upload of the GEMM ceiling's inputs", left())?;
        let pick = |b: Buffer| if b == Buffer::A { pa } else { pb };
        let (first, second) = (pick(call.first), pick(call.second));
        let what = format!("{source} {m}x{n}x{k} on {}", dev.name);
        let ns = time_calls(
            a,
            stream,
            &what,
            (warmth, warm_ns(0, flops)),
            deadline,
            &mut || {
                // SAFETY: the allocations have the sizes `call` implies.
                unsafe { blas.blas.gemm(kind, &call, first, second, pc) }.map_err(GpuError::Device)
            },
        )?;
        let tiles = sample_tiles(m as u32, n as u32, CHECK_SIDE, CHECK_TILES, seed);
        let samples = read_tiles(a, stream, pc, n as u32, &tiles, &what, left())?;
        Ok((ns, samples))
    })
    .map_err(|e| match e {
        GpuError::Device(why) if why.starts_with(&source) => CeilingError::Unusable {
            library: library.clone(),
            why,
        },
        e => device_error(e),
    })?;
    if let Some(why) = check_samples(&samples, n, k, seed) {
        return Err(CeilingError::Wrong {
            source_call: source,
            library,
            why,
        });
    }
    Ok(Ceiling {
        rate: flops as f64 / ns / 1e3,
        unit: CeilingUnit::TFlops,
        source,
        library,
        version: blas.blas.version().to_string(),
        found_by: blas.loaded.why.clone(),
    })
}

/// The first sampled entry that differs from the f64 product by more than
/// f32 accumulation can explain (1e-3 of the sum of |a b| terms).
fn check_samples(samples: &[TileSample], n: usize, k: usize, seed: u64) -> Option<String> {
    for s in samples {
        let t = s.tile;
        for r in 0..t.rows {
            for c in 0..t.cols {
                let (i, j) = ((t.row + r) as u64, (t.col + c) as u64);
                let got = f64::from(s.values[(r * t.cols + c) as usize]);
                let (want, mag) = dot(seed, i, j, n as u64, k as u64);
                let close = (got - want).abs() <= 1e-3 * mag + 1e-6;
                if !close {
                    return Some(format!("C[{i}][{j}] = {got}, the CPU gives {want}"));
                }
            }
        }
    }
    None
}

/// Row `i` of A (`m x k`) times column `j` of B (`k x n`) for the inputs of
/// `seed`, in f64, and the sum of the terms' magnitudes.
fn dot(seed: u64, i: u64, j: u64, n: u64, k: u64) -> (f64, f64) {
    let (mut sum, mut mag) = (0f64, 0f64);
    for p in 0..k {
        let x = f64::from(input_f16(seed, Operand::A, i * k + p).to_f32());
        let y = f64::from(input_f16(seed, Operand::B, p * n + j).to_f32());
        sum += x * y;
        mag += (x * y).abs();
    }
    (sum, mag)
}

/// Untimed warm-up before the stress intervals, device time.
const WARM_NS: u64 = 1_000_000_000;

/// GEMMs of `per_ns` each that fill `target`: at least 1, at most 10^6.
/// An unknown time (NaN, infinite) gives 1.
fn gemms_for(target: Duration, per_ns: f64) -> u32 {
    if !per_ns.is_finite() {
        return 1;
    }
    (target.as_nanos() as f64 / per_ns.max(1.0)).clamp(1.0, 1e6) as u32
}

/// What runs the stress GEMMs: the vendor's, or greta's own `gemm_f16`
/// (launched by the backend's closure over its loaded kernel).
pub(crate) enum StressGemm<'b> {
    Vendor(&'b VendorBlas),
    Own {
        note: String,
        launch: &'b mut Dispatch<'b>,
    },
}

/// The stress loop: f16 GEMMs back to back for `req.duration` after a
/// warm-up, fresh inputs every interval (made on the CPU while the GPU
/// works on the previous ones), each interval timed by events and its
/// sampled output tiles read back for the checker.
pub(crate) fn stress<D: Driver>(
    driver: &D,
    stream: StreamH,
    dev: &GpuDevice,
    warmth: &mut Warmth,
    mut gemm: StressGemm<'_>,
    req: &StressRequest,
) -> Result<StressReport, GpuError> {
    let (m, n, k) = (req.m as usize, req.n as usize, req.k as usize);
    let call = layout::row_major(m, n, k).map_err(GpuError::Invalid)?;
    let sizes = gemm_bytes(GemmKind::F16Acc32, m, n, k)
        .ok_or_else(|| GpuError::Invalid(format!("{m}x{n}x{k}: buffer size overflows")))?;
    let engine = match &gemm {
        StressGemm::Vendor(b) => StressEngine {
            source: b.blas.source(GemmKind::F16Acc32).to_string(),
            library: Some(b.loaded.path.display().to_string()),
            version: Some(b.blas.version().to_string()),
            note: None,
        },
        StressGemm::Own { note, .. } => StressEngine {
            source: "greta gemm_f16".into(),
            library: None,
            version: None,
            note: Some(note.clone()),
        },
    };
    let what = format!("stress {} {m}x{n}x{k} on {}", engine.source, dev.name);
    let limit = req.timeout;
    with_alloc(driver, |a| {
        driver.activate(dev.ordinal)?;
        let pa = a.malloc(sizes[0])?;
        let pb = a.malloc(sizes[1])?;
        let pc = a.malloc(sizes[2])?;
        let pick = |b: Buffer| if b == Buffer::A { pa } else { pb };
        let (first, second) = (pick(call.first), pick(call.second));
        let mut one = |s: StreamH| -> Result<(), GpuError> {
            match &mut gemm {
                StressGemm::Vendor(b) => {
                    // SAFETY: the allocations have the sizes `call` implies.
                    unsafe { b.blas.gemm(GemmKind::F16Acc32, &call, first, second, pc) }
                        .map_err(GpuError::Device)
                }
                StressGemm::Own { launch, .. } => launch(s, &[pa, pb, pc]),
            }
        };
        let upload = |a: &mut Alloc<'_, D>, ha: &[u8], hb: &[u8]| -> Result<(), GpuError> {
            // SAFETY: sizes match; the host slices outlive the wait below.
            unsafe {
                driver.htod_async(pa, ha.as_ptr(), ha.len(), stream)?;
                driver.htod_async(pb, hb.as_ptr(), hb.len(), stream)?;
            }
            let e = a.record(stream)?;
            wait_event(driver, e, "upload of the stress inputs", limit)
        };
        let (mut ha, mut hb) = gemm_inputs(GemmKind::F16Acc32, m, n, k, req.seed);
        upload(a, &ha, &hb)?;
        // Warm up for about 1 s of device time (not counted; less what the
        // GPU's work just before left it warm), in batches re-timed as
        // they go, two at least: the first GEMM carries the library's
        // one-time costs (kernel loading, heuristics) and would size the
        // intervals far too small.
        let began = Instant::now();
        let owed = warmth.owed(WARM_NS);
        let mut per_ns = f64::INFINITY;
        let mut batch = 1u32;
        let mut warm_ns = 0u64;
        let mut batches = 0;
        while warm_ns < owed || batches < 2 {
            batches += 1;
            let b0 = a.record(stream)?;
            for _ in 0..batch {
                one(stream)?;
            }
            let b1 = a.record(stream)?;
            wait_event(driver, b1, &what, limit)?;
            let ns = (f64::from(driver.event_elapsed_ms(b0, b1)?.max(0.0)) * 1e6) as u64;
            warm_ns = warm_ns.saturating_add(ns.max(1));
            per_ns = ns.max(1) as f64 / f64::from(batch);
            batch = gemms_for(Duration::from_millis(100), per_ns);
        }
        let mut per_interval = gemms_for(req.interval, per_ns);
        let mut busy_ns = warm_ns;
        let start = Instant::now();
        let mut intervals = Vec::new();
        let mut seed = req.seed;
        loop {
            let before = a.record(stream)?;
            for _ in 0..per_interval {
                one(stream)?;
            }
            let after = a.record(stream)?;
            let more = req.more_after(intervals.len() + 1, start.elapsed() + req.interval);
            // The next inputs are made while the GPU works on these.
            let next = more.then(|| gemm_inputs(GemmKind::F16Acc32, m, n, k, seed + 1));
            wait_event(driver, after, &what, limit)?;
            let ns = (f64::from(driver.event_elapsed_ms(before, after)?.max(0.0)) * 1e6) as u64;
            let tiles = sample_tiles(req.m, req.n, req.tile, req.tiles_per_interval, seed);
            let tiles = read_tiles(a, stream, pc, req.n, &tiles, &what, limit)?;
            busy_ns = busy_ns.saturating_add(ns);
            intervals.push(StressInterval {
                seed,
                gemms: per_interval,
                device_ns: ns,
                tiles,
            });
            per_interval = gemms_for(req.interval, ns.max(1) as f64 / f64::from(per_interval));
            // Keep the event list short over a long run.
            for e in a.events.drain(..) {
                // SAFETY: every event recorded so far has completed (waited above).
                unsafe { driver.event_destroy(e) };
            }
            let Some((na, nb)) = next else { break };
            (ha, hb) = (na, nb);
            seed += 1;
            upload(a, &ha, &hb)?;
        }
        warmth.worked(began, Instant::now(), Duration::from_nanos(busy_ns));
        Ok(StressReport { engine, intervals })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stress::Tile;

    #[test]
    fn every_op_but_noop_and_the_test_ops_has_its_reference() {
        for op in Op::catalogue() {
            let r = reference_for(&op);
            match op {
                Op::Noop => assert_eq!(r, None),
                _ if op.is_test_only() => assert_eq!(r, None, "{op}"),
                Op::GemmF16 { m, n, k } => {
                    assert_eq!(r, Some(Reference::Gemm(GemmKind::F16Acc32, (m, n, k))))
                }
                Op::GemmF32 { m, n, k } => {
                    assert_eq!(r, Some(Reference::Gemm(GemmKind::F32, (m, n, k))))
                }
                Op::LinearF16 { tokens, rows, cols } => assert_eq!(
                    r,
                    Some(Reference::Gemm(GemmKind::F16Acc32, (tokens, rows, cols)))
                ),
                // A copy's GB/s is no ceiling for a TFLOP/s gate (attention).
                _ if op.rate_unit() == greta_kernels::RateUnit::TFlops => {
                    assert_eq!(r, None, "{op}")
                }
                _ => assert_eq!(r, Some(Reference::Copy), "{op}"),
            }
        }
    }

    #[test]
    fn intervals_are_sized_from_the_measured_gemm_time() {
        let s = Duration::from_secs(1);
        assert_eq!(gemms_for(s, 1.5e6), 666);
        assert_eq!(gemms_for(s, 2e9), 1);
        assert_eq!(gemms_for(s, 0.0), 1_000_000);
        assert_eq!(gemms_for(s, f64::INFINITY), 1);
        assert_eq!(gemms_for(s, f64::NAN), 1);
    }

    #[test]
    fn the_vendor_check_catches_a_wrong_entry() {
        let (m, n, k) = (8usize, 12usize, 5usize);
        let seed = 3;
        let tiles = [Tile {
            row: 4,
            col: 8,
            rows: 4,
            cols: 4,
        }];
        let right: Vec<f32> = (0..16)
            .map(|x| dot(seed, 4 + x / 4, 8 + x % 4, n as u64, k as u64).0 as f32)
            .collect();
        let mut s = vec![TileSample {
            tile: tiles[0],
            values: right,
        }];
        assert_eq!(check_samples(&s, n, k, seed), None);
        // The transposed product (the mapping's classic mistake) is caught.
        s[0].values[5] += 0.01;
        let why = check_samples(&s, n, k, seed).unwrap();
        assert!(why.starts_with("C[5][9] = "), "{why}");
        let _ = m;
    }
}
