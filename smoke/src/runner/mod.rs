//! Running gates on one device through the backend-agnostic
//! [`greta_runtime::Backend`]: repeats with fresh inputs, verification,
//! the f16 preconditions, floors, and the "device lost" rule (after a
//! timeout nothing more is submitted to that device).

use crate::deny::DenyList;
use crate::floors::{self, Baseline, ClassFile};
use crate::gates::{Gate, Precision, Profile};
use crate::inject::{Faults, HANG_DISPATCHES, HANG_OP};
use crate::inputs::{gate_seed, prepare};
use crate::results::{DeviceInfo, DeviceRun, GateResult, GateStatus, Metrics, Report};
use crate::spec::{DeviceKey, DeviceSpec, SpecFile, SpecMatch};
use crate::verify::verify;
use greta_runtime::{Backend, RunOpts, RuntimeError, TimingSource};
use std::time::{Duration, Instant};

/// Everything a device run needs besides the backend.
pub struct DeviceContext<'a> {
    pub profile: Profile,
    pub gates: &'a [Gate],
    /// `--repeat`, else the profile's.
    pub repeat: Option<u32>,
    pub timeout: Duration,
    pub seed: u64,
    pub floor_fraction: f64,
    pub baseline: Option<&'a Baseline>,
    pub classes: &'a ClassFile,
    /// Published peaks: fractions of spec, and spec floors where the
    /// profile has perf floors and neither a baseline nor a class gives one.
    pub specs: &'a SpecFile,
    pub deny: &'a DenyList,
    /// TEST-ONLY injected faults (empty in a real run).
    pub faults: &'a Faults,
}

/// Told about each gate as it starts and ends (the progress bar).
pub trait Progress {
    fn gate_started(&self, _device: usize, _gate: &str) {}
    fn gate_done(&self, _device: usize, _result: &GateResult) {}
}

/// A [`Progress`] that says nothing (the unit tests' runs).
#[cfg(test)]
pub struct Quiet;
#[cfg(test)]
impl Progress for Quiet {}

/// The results schema's view of a runtime device.
pub fn device_info(d: &greta_runtime::DeviceInfo) -> DeviceInfo {
    DeviceInfo {
        name: d.name.clone(),
        vendor_id: d.vendor_id,
        device_id: d.device_id,
        device_type: d.device_type,
        driver_name: d.driver_name.clone(),
        driver_info: d.driver_info.clone(),
        driver_version: d.driver_version_text.clone(),
        api_version: d.api_version.clone(),
        uuid: d.uuid,
        fp16: d.fp16,
    }
}

fn backend_name(d: &greta_runtime::DeviceInfo) -> String {
    d.backend.as_str().to_string()
}

/// Run every gate of `ctx` on `backend`, in order.
pub fn run_device(
    backend: &mut dyn Backend,
    open_s: f64,
    ctx: &DeviceContext<'_>,
    progress: &dyn Progress,
) -> DeviceRun {
    let rt_info = backend.info().clone();
    let device = device_info(&rt_info);
    let backend_label = backend_name(&rt_info);
    let class = if ctx.profile.uses_class_floors() {
        ctx.classes.class_for(&device, &backend_label)
    } else {
        None
    };
    let spec_match = ctx.specs.lookup(&DeviceKey::of(&device));
    let spec = match &spec_match {
        SpecMatch::Found { spec, .. } => Some(*spec),
        _ => None,
    };
    let mut results: Vec<GateResult> = Vec::with_capacity(ctx.gates.len());
    let mut lost: Option<String> = None;
    let mut lost_in: Option<String> = None;
    let mut ceiling_notes: Vec<String> = Vec::new();
    // Messages raised while the device was opened count too: they are
    // recorded and fail the device run (see `Report::summarize`).
    let mut validation_messages = backend.validation_messages();
    let mut validation_seen = validation_messages.len();
    for gate in ctx.gates {
        progress.gate_started(rt_info.index, &gate.id);
        let skip = |reason: String| skipped(gate, ctx.seed, reason);
        let result = if let Some(gate_lost) = lost_in.as_ref() {
            skip(format!("device lost earlier in this run (in gate {gate_lost}); nothing more is submitted to it"))
        } else if let Err(why) = backend.supports(&gate.op) {
            skip(format!("not supported by this device/backend: {why}"))
        } else if let Some(why) =
            f16_precondition(gate, &device, &backend_label, ctx.deny, &results)
        {
            skip(why)
        } else {
            let first = !results.iter().any(|r| r.metrics.is_some());
            let mut r = match &gate.stress {
                Some(cfg) if !ctx.faults.hangs(rt_info.index, &gate.id, first) => {
                    run_stress(backend, gate, cfg, ctx)
                }
                _ => run_gate(backend, gate, ctx, first),
            };
            if ctx.profile == Profile::Perf && r.lost.is_none() {
                measure_ceiling(backend, &mut r, gate, ctx);
            }
            for n in r.notes.drain(..) {
                if !ceiling_notes.contains(&n) {
                    ceiling_notes.push(n);
                }
            }
            if let Some(reason) = r.lost.take() {
                lost = Some(reason);
                lost_in = Some(gate.id.clone());
            }
            // Validation-layer messages raised while this gate ran fail it.
            let msgs = backend.validation_messages();
            if msgs.len() > validation_seen {
                let new = &msgs[validation_seen..];
                validation_seen = msgs.len();
                validation_messages.extend_from_slice(new);
                if r.result.status == GateStatus::Pass {
                    r.result.status = GateStatus::Fail;
                    r.result.reason = Some(format!(
                        "{} validation-layer message(s): {}",
                        new.len(),
                        new[0]
                    ));
                }
            }
            rate_against_spec(&mut r.result, gate, spec);
            if r.result.status == GateStatus::Pass {
                apply_floor(&mut r.result, gate, &device, ctx, class, spec);
            }
            r.result
        };
        progress.gate_done(rt_info.index, &result);
        results.push(result);
    }
    let mut notes = rt_info.notes.clone();
    notes.extend(ceiling_notes);
    notes.extend(
        rt_info
            .also_exposed_by
            .iter()
            .map(|d| format!("this GPU is also exposed by {d} (not used)")),
    );
    if let Some(b) = ctx.baseline {
        if !b.matches_device(&device) {
            notes.push(format!(
                "baseline {} has no device matching this one (by UUID, name, or as its only device): no baseline floors",
                b.path.display()
            ));
        }
    }
    if let Some(c) = class {
        notes.push(format!(
            "perf floors from device class {} ({})",
            c.id, c.measured
        ));
    }
    notes.extend(crate::spec::note(
        &spec_match,
        &device,
        &ctx.specs.path,
        ctx.profile.uses_class_floors(),
    ));
    let mut run = DeviceRun {
        index: rt_info.index,
        backend: backend_label,
        device,
        status: crate::results::RunStatus::Undecided,
        lost,
        open_s,
        gates: results,
        validation_messages,
        notes,
    };
    run.status = Report::summarize(std::slice::from_ref(&run));
    run
}

/// Why an f16 gate must not run here, if it must not.
fn f16_precondition(
    gate: &Gate,
    device: &DeviceInfo,
    backend: &str,
    deny: &DenyList,
    so_far: &[GateResult],
) -> Option<String> {
    if gate.precision() != Precision::Fp16 {
        return None;
    }
    if !device.fp16 {
        return Some("device lacks f16 arithmetic + 16-bit storage (shaderFloat16, storageBuffer16BitAccess)".into());
    }
    if let Some(e) = deny.denies(device, backend) {
        return Some(format!(
            "f16 denied on this device/driver by deny list entry {}: {}",
            e.id, e.reason
        ));
    }
    let failed: Vec<&str> = so_far
        .iter()
        .filter(|r| {
            let f16 = greta_runtime::Op::facts_named(&r.op)
                .is_some_and(|f| f.precision == Precision::Fp16);
            r.status == GateStatus::Fail && !f16
        })
        .map(|r| r.id.as_str())
        .collect();
    if !failed.is_empty() {
        return Some(format!(
            "f16 gates run only after the f32 gates pass; failed: {}",
            failed.join(", ")
        ));
    }
    None
}

fn skipped(gate: &Gate, base_seed: u64, reason: String) -> GateResult {
    GateResult {
        id: gate.id.clone(),
        op: gate.op.name().to_string(),
        shape: gate.shape(),
        status: GateStatus::Skip,
        reason: Some(reason),
        tolerance: gate.tolerance(),
        seed: gate_seed(base_seed, &gate.id),
        metrics: None,
        floor: None,
        wall_s: 0.0,
        kernel: None,
        peer: None,
        spec: None,
        spec_fraction: None,
        in_run: Default::default(),
    }
}

struct GateRun {
    result: GateResult,
    /// Lines for the device's notes (which library each ceiling came from).
    notes: Vec<String>,
    /// Set when the device must not be used again.
    lost: Option<String>,
}

fn run_gate(
    backend: &mut dyn Backend,
    gate: &Gate,
    ctx: &DeviceContext<'_>,
    first_gate_run: bool,
) -> GateRun {
    let started = Instant::now();
    let device = backend.info().index;
    if ctx.faults.hangs(device, &gate.id, first_gate_run) {
        return run_hang(backend, gate, ctx, started);
    }
    let seed = gate_seed(ctx.seed, &gate.id);
    let repeats = ctx.repeat.unwrap_or_else(|| ctx.profile.repeats()).max(1);
    let opts = RunOpts {
        repeats: gate.dispatches_for(ctx.profile),
        timeout: ctx.timeout,
        tuning: None,
    };
    let tol = gate.tolerance();
    let mut device_ns: Vec<u64> = Vec::new();
    let mut wall_us: Vec<f64> = Vec::new();
    let mut clean = 0u32;
    let mut total = 0u32;
    let mut worst_rel: Option<f64> = Some(0.0);
    let mut worst_abs: Option<f64> = Some(0.0);
    let mut first_failure: Option<String> = None;
    let mut errored = false;
    let mut lost = None;
    let mut kernel = None;
    let mut wall_clock_timing = false;
    for r in 0..repeats {
        let rseed = seed.wrapping_add(r as u64);
        let mut prep = prepare(&gate.op, gate.fixed_value, rseed);
        let mut outs = prep.take_outputs();
        total += 1;
        match backend.run(greta_runtime::Job::new(
            &prep.op,
            &prep.inputs,
            &mut outs,
            &opts,
        )) {
            Err(e) => {
                let fatal = e.is_fatal_for_device();
                let msg = describe(&e);
                first_failure.get_or_insert_with(|| format!("repeat {}/{repeats}: {msg}", r + 1));
                if fatal {
                    lost = Some(format!("{}: {msg}", gate.id));
                }
                // An error (not a wrong result) ends the gate: retrying a
                // missing feature or an exhausted heap tells nothing new.
                errored = true;
                worst_rel = None;
                worst_abs = None;
                break;
            }
            Ok(mut stats) => {
                ctx.faults.slow(device, &mut stats);
                ctx.faults.corrupt(device, &gate.id, r, &mut outs);
                device_ns.extend_from_slice(&stats.device_ns);
                wall_us.push(stats.wall.as_secs_f64() * 1e6);
                wall_clock_timing |= stats.timing == TimingSource::WallClock;
                kernel.get_or_insert(stats.kernel.clone());
                let c = verify(&prep, &outs, tol, rseed);
                worst_rel = merge_max(worst_rel, c.rel_err);
                worst_abs = merge_max(worst_abs, c.max_abs_err);
                if c.pass {
                    clean += 1;
                } else {
                    first_failure.get_or_insert_with(|| {
                        format!(
                            "repeat {}/{repeats} (seed {rseed}): {}",
                            r + 1,
                            c.reason.unwrap_or_else(|| "check failed".into())
                        )
                    });
                }
            }
        }
    }
    let median_ns = median(&device_ns);
    let metrics = Metrics {
        rate: median_ns.and_then(|ns| gate.rate(ns)),
        unit: gate.unit(),
        rel_err: worst_rel,
        max_abs_err: worst_abs,
        repeats_clean: clean,
        repeats_total: total,
        time_median_us: median_ns.map(|ns| ns / 1e3),
        time_min_us: device_ns.iter().min().map(|&ns| ns as f64 / 1e3),
        wall_median_us: median(&wall_us.iter().map(|&u| u as u64).collect::<Vec<_>>()),
        bytes: gate.op.bytes_moved(),
        flops: gate.op.flops(),
        timing: Some(
            if wall_clock_timing {
                "wall_clock"
            } else {
                "device_timestamps"
            }
            .to_string(),
        )
        .filter(|_| !device_ns.is_empty()),
        first_call_us: None,
    };
    let pass = first_failure.is_none() && clean == repeats;
    let reason = if pass {
        None
    } else {
        Some(match first_failure {
            Some(f) if errored => f,
            Some(f) if clean < total => {
                format!("{clean}/{total} clean repeats; first failure: {f}")
            }
            Some(f) => f,
            None => format!("{clean}/{repeats} clean repeats"),
        })
    };
    GateRun {
        result: GateResult {
            id: gate.id.clone(),
            op: gate.op.name().to_string(),
            shape: gate.shape(),
            status: if pass {
                GateStatus::Pass
            } else {
                GateStatus::Fail
            },
            reason,
            tolerance: tol,
            seed,
            metrics: Some(metrics),
            floor: None,
            wall_s: started.elapsed().as_secs_f64(),
            kernel,
            peer: None,
            spec: None,
            spec_fraction: None,
            in_run: Default::default(),
        },
        lost,
        notes: Vec::new(),
    }
}

/// The vendor's rate for the gate's work, measured now on the same device
/// (`--profile perf`), and the gate's ratio to it. A missing vendor
/// library is recorded, never a failure; a timeout loses the device.
fn measure_ceiling(
    backend: &mut dyn Backend,
    run: &mut GateRun,
    gate: &Gate,
    ctx: &DeviceContext<'_>,
) {
    let Some(rate) = run.result.metrics.as_ref().and_then(|m| m.rate) else {
        return;
    };
    match backend.ceiling(&gate.op, ctx.timeout) {
        None => {}
        Some(Ok(c)) => {
            let unit = match c.unit {
                greta_runtime::CeilingUnit::GBps => crate::results::RateUnit::GBps,
                greta_runtime::CeilingUnit::TFlops => crate::results::RateUnit::TFlops,
            };
            if unit == gate.unit() && c.rate.is_finite() && c.rate > 0.0 {
                run.result.in_run.ratio = Some(rate / c.rate);
            }
            let found = format!(
                "in-run ceiling {} from {} ({}), version {}",
                c.source, c.library, c.found_by, c.version
            );
            if !run.notes.contains(&found) {
                run.notes.push(found);
            }
            run.result.in_run.ceiling = Some(crate::results::CeilingRef {
                rate: c.rate,
                unit,
                source: c.source,
                library: c.library,
                version: c.version,
            });
        }
        Some(Err(e)) => {
            if let greta_runtime::CeilingError::Timeout(why) = &e {
                run.lost = Some(format!("{} (in-run ceiling): {why}", gate.id));
            }
            run.result.in_run.ceiling_unavailable = Some(e.to_string());
        }
    }
}

/// A stress gate: the backend's stress loop (or greta's `gemm_f16` through
/// `run`) for the configured time; every interval's sampled tiles checked;
/// the rate is the sustained TFLOP/s, the spread in `stress`.
fn run_stress(
    backend: &mut dyn Backend,
    gate: &Gate,
    cfg: &crate::gates::StressConfig,
    ctx: &DeviceContext<'_>,
) -> GateRun {
    let started = Instant::now();
    let seed = gate_seed(ctx.seed, &gate.id);
    let fail = |reason: String, lost: Option<String>| GateRun {
        result: GateResult {
            status: GateStatus::Fail,
            wall_s: started.elapsed().as_secs_f64(),
            ..skipped(gate, ctx.seed, reason)
        },
        lost,
        notes: Vec::new(),
    };
    let Some(mut req) = crate::stress::request(gate, cfg, seed, ctx.timeout) else {
        return fail(format!("{}: not a stress op", gate.op), None);
    };
    // `--repeat N`: exactly N intervals (each one a repeat with fresh inputs).
    req.intervals = ctx.repeat.map(|n| n.max(1));
    let device = backend.info().index;
    let report = match crate::stress::run(backend, &req) {
        Ok(r) => r,
        Err(e) => {
            let msg = describe(&e);
            let lost = e
                .is_fatal_for_device()
                .then(|| format!("{}: {msg}", gate.id));
            return fail(msg, lost);
        }
    };
    let tol = match gate.tolerance() {
        crate::check::Tolerance::RelNorm(t) => t,
        crate::check::Tolerance::Exact => 0.0,
    };
    let mut report = report;
    // TEST-ONLY faults, as on any gate: a slow device's times, a flipped
    // bit in the first interval's first sampled tile.
    for (r, iv) in report.intervals.iter_mut().enumerate() {
        let mut times = greta_runtime::RunStats {
            device_ns: vec![iv.device_ns],
            timing: TimingSource::DeviceTimestamps,
            wall: Duration::ZERO,
            kernel: String::new(),
            tuning: Default::default(),
            dispatches_per_repeat: 1,
        };
        ctx.faults.slow(device, &mut times);
        iv.device_ns = times.device_ns[0];
        if let Some(t) = iv.tiles.first_mut() {
            let mut buf = [greta_kernels::HostBuf::F32(std::mem::take(&mut t.values))];
            ctx.faults.corrupt(device, &gate.id, r as u32, &mut buf);
            if let [greta_kernels::HostBuf::F32(v)] = buf {
                t.values = v;
            }
        }
    }
    let (summary, verdict) = crate::stress::summarize(&req, &report, tol);
    let median_ns = {
        let mut v: Vec<u64> = report
            .intervals
            .iter()
            .filter(|iv| iv.gemms > 0)
            .map(|iv| iv.device_ns / u64::from(iv.gemms))
            .collect();
        v.sort_unstable();
        v.get(v.len() / 2).map(|&ns| ns as f64)
    };
    let metrics = Metrics {
        rate: summary.tflops_sustained,
        unit: gate.unit(),
        rel_err: None,
        max_abs_err: None,
        repeats_clean: summary.intervals_clean,
        repeats_total: summary.intervals,
        time_median_us: median_ns.map(|ns| ns / 1e3),
        time_min_us: None,
        wall_median_us: None,
        bytes: gate.op.bytes_moved(),
        flops: gate.op.flops(),
        timing: Some("device_timestamps".into()),
        first_call_us: None,
    };
    let mut result = GateResult {
        status: if verdict.is_ok() {
            GateStatus::Pass
        } else {
            GateStatus::Fail
        },
        reason: verdict.err(),
        metrics: Some(metrics),
        wall_s: started.elapsed().as_secs_f64(),
        kernel: Some(summary.engine.clone()),
        ..skipped(gate, ctx.seed, String::new())
    };
    result.in_run.stress = Some(summary);
    GateRun {
        result,
        lost: None,
        notes: Vec::new(),
    }
}

/// An injected hang (TEST-ONLY): [`HANG_OP`] runs in place of the gate,
/// with the gate's timeout, through the same backend call; the timeout must
/// catch it, and the device is then lost as after any real hang.
fn run_hang(
    backend: &mut dyn Backend,
    gate: &Gate,
    ctx: &DeviceContext<'_>,
    started: Instant,
) -> GateRun {
    let seed = gate_seed(ctx.seed, &gate.id);
    let mut prep = prepare(&HANG_OP, false, seed);
    let mut outs = prep.take_outputs();
    let opts = RunOpts {
        repeats: HANG_DISPATCHES,
        timeout: ctx.timeout,
        tuning: None,
    };
    let (reason, lost) = match backend.run(greta_runtime::Job::new(&prep.op, &prep.inputs, &mut outs, &opts)) {
        Ok(stats) => (
            format!(
                "injected hang: the never-ending kernel completed in {:?}, within --timeout; the timeout did not catch it",
                stats.wall
            ),
            None,
        ),
        Err(e) => {
            let msg = format!("injected hang: repeat 1: {}", describe(&e));
            let lost = e.is_fatal_for_device().then(|| format!("{}: {msg}", gate.id));
            (msg, lost)
        }
    };
    GateRun {
        result: GateResult {
            metrics: None,
            wall_s: started.elapsed().as_secs_f64(),
            status: GateStatus::Fail,
            ..skipped(gate, ctx.seed, reason)
        },
        lost,
        notes: Vec::new(),
    }
}

fn describe(e: &RuntimeError) -> String {
    match e {
        RuntimeError::Timeout { .. } => format!("timeout: {e}"),
        _ => e.to_string(),
    }
}

/// The larger of two errors; NaN (undefined) wins so it is never hidden.
fn merge_max(acc: Option<f64>, x: f64) -> Option<f64> {
    match acc {
        None => None,
        Some(_) if x.is_nan() => None,
        Some(a) => Some(a.max(x)),
    }
}

fn median(v: &[u64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2] as f64
    } else {
        (s[n / 2 - 1] as f64 + s[n / 2] as f64) / 2.0
    })
}

/// The device's published peak for the gate, and the rate as a fraction
/// of it (for every gate with a rate in GB/s or TFLOP/s, in every profile).
fn rate_against_spec(result: &mut GateResult, gate: &Gate, spec: Option<&DeviceSpec>) {
    let Some(m) = result.metrics.as_ref() else {
        return;
    };
    let Some(s) = spec.and_then(|s| s.figure_for(&gate.op, m.unit)) else {
        return;
    };
    result.spec_fraction = m.rate.filter(|r| r.is_finite()).map(|r| r / s.figure);
    result.spec = Some(s);
}

/// Hold a passing gate to its floor: the baseline's rate for it, else (in
/// `perf`) the device class's, else (in `perf`) the class fraction of the
/// device's published peak for the gate's rate class.
fn apply_floor(
    result: &mut GateResult,
    gate: &Gate,
    device: &DeviceInfo,
    ctx: &DeviceContext<'_>,
    class: Option<&crate::floors::DeviceClass>,
    spec: Option<&DeviceSpec>,
) {
    let reference = ctx
        .baseline
        .and_then(|b| b.reference(device, &gate.id))
        .filter(|r| r.unit == gate.unit())
        .or_else(|| class.and_then(|c| c.reference(&gate.id, gate.unit())))
        .map(|r| (r, ctx.floor_fraction))
        .or_else(|| {
            spec.filter(|_| ctx.profile.uses_class_floors())
                .and_then(|s| s.floor_reference(&gate.op, gate.unit()))
        });
    let Some((reference, fraction)) = reference else {
        return;
    };
    let rate = result.metrics.as_ref().and_then(|m| m.rate);
    let floor = floors::apply(rate, &reference, fraction);
    if !floor.passed {
        result.status = GateStatus::Fail;
        let unit = floor.unit.as_str();
        let shown = rate
            .map(|r| format!("{r:.4}"))
            .unwrap_or_else(|| "unmeasured".into());
        result.reason = Some(if floor.unit.higher_is_better() {
            format!(
                "rate {shown} {unit} under the floor {:.4} {unit} ({} x {:.4} from {})",
                floor.limit, floor.fraction, floor.reference, floor.source
            )
        } else {
            format!(
                "{shown} {unit} over the ceiling {:.4} {unit} ({:.4} / {} from {})",
                floor.limit, floor.reference, floor.fraction, floor.source
            )
        });
    }
    result.floor = Some(floor);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::check::POISON_U32;
    use greta_runtime::{HostBuf, Job, Op, RunStats};

    /// A CPU "device" that computes the reference in f32, with faults to
    /// inject: it lets the runner's logic be tested without any GPU.
    struct FakeDevice {
        info: greta_runtime::DeviceInfo,
        /// Skip writing this element of every u32 output.
        skip_element: Option<usize>,
        /// Time out on this op name.
        timeout_on: Option<&'static str>,
        lost: Option<String>,
        ns_per_dispatch: u64,
        calls: usize,
        /// Validation messages so far; `complain_on` adds one per run of that op.
        messages: Vec<String>,
        complain_on: Option<&'static str>,
        /// What `ceiling` answers for the ops that have one (all but noop):
        /// the rate is per unit (GB/s for data movement, TFLOP/s for GEMMs).
        ceiling: Option<Result<f64, greta_runtime::CeilingError>>,
        /// Adds 100 to the last element of every gemm_f16 output.
        corrupt_gemm_f16: bool,
    }

    pub(crate) fn fake_info(fp16: bool) -> greta_runtime::DeviceInfo {
        serde_json::from_value(serde_json::json!({
            "backend": "vulkan", "index": 0, "name": "Fake GPU", "vendor_id": 4098,
            "device_id": 5567, "device_type": "integrated_gpu", "driver_id": "MESA_RADV",
            "driver_name": "radv", "driver_info": "Mesa 24.2", "driver_version": 1,
            "driver_version_text": "24.2.0", "api_version": "1.3.289",
            "uuid": "00112233445566778899aabbccddeeff", "fp16": fp16, "int8": true,
            "subgroup_size": 64, "min_subgroup_size": 32, "max_subgroup_size": 64,
            "coop_matrix": [], "memory_heaps": [], "timestamps": true,
            "timestamp_period_ns": 1.0, "max_storage_buffer_range": 4294967295u64,
            "max_allocation_size": 4294967295u64, "max_workgroup_count": [65535, 65535, 65535],
            "max_workgroup_invocations": 1024, "max_shared_memory": 65536,
            "also_exposed_by": [], "notes": []
        }))
        .expect("fake DeviceInfo matches the runtime's schema")
    }

    impl FakeDevice {
        fn new(fp16: bool) -> Self {
            FakeDevice {
                info: fake_info(fp16),
                skip_element: None,
                timeout_on: None,
                lost: None,
                ns_per_dispatch: 1_000,
                calls: 0,
                messages: vec![],
                complain_on: None,
                ceiling: None,
                corrupt_gemm_f16: false,
            }
        }
    }

    impl Backend for FakeDevice {
        fn info(&self) -> &greta_runtime::DeviceInfo {
            &self.info
        }
        fn supports(&self, op: &Op) -> Result<(), String> {
            match op {
                Op::Rope { .. } => Err("no rope kernel on the fake device".into()),
                _ => Ok(()),
            }
        }
        fn run(&mut self, job: Job<'_>) -> Result<RunStats, RuntimeError> {
            let (op, inputs, outputs, opts) = (job.op, job.inputs, job.outputs, job.opts);
            self.calls += 1;
            if self.complain_on == Some(op.name()) {
                self.messages
                    .push(format!("VUID-fake: {} misused a buffer", op.name()));
            }
            if let Some(l) = &self.lost {
                return Err(RuntimeError::DeviceLost(l.clone()));
            }
            if self.timeout_on == Some(op.name()) {
                self.lost = Some("timed out".into());
                return Err(RuntimeError::Timeout {
                    what: format!("{op}"),
                    timeout: opts.timeout,
                    waited: opts.timeout,
                });
            }
            let want = greta_kernels::reference(op, inputs, outputs)
                .map_err(|e| RuntimeError::BadInput(e.to_string()))?;
            for (o, w) in outputs.iter_mut().zip(want) {
                match o {
                    HostBuf::F32(v) => v.iter_mut().zip(&w).for_each(|(x, y)| *x = *y as f32),
                    HostBuf::U32(v) => {
                        v.iter_mut().zip(&w).for_each(|(x, y)| *x = *y as u32);
                        if let Some(i) = self.skip_element {
                            v[i] = POISON_U32;
                        }
                    }
                    HostBuf::F16(_) => unreachable!(),
                }
            }
            if self.corrupt_gemm_f16 && matches!(op, Op::GemmF16 { .. }) {
                if let Some(HostBuf::F32(v)) = outputs.first_mut() {
                    if let Some(x) = v.last_mut() {
                        *x += 100.0;
                    }
                }
            }
            Ok(RunStats {
                device_ns: vec![self.ns_per_dispatch; opts.repeats as usize],
                timing: TimingSource::DeviceTimestamps,
                wall: Duration::from_micros(50),
                kernel: op.name().to_string(),
                tuning: Default::default(),
                dispatches_per_repeat: 1,
            })
        }
        fn lost(&self) -> Option<&str> {
            self.lost.as_deref()
        }
        fn validation_messages(&self) -> Vec<String> {
            self.messages.clone()
        }
        fn ceiling(
            &mut self,
            op: &Op,
            _timeout: Duration,
        ) -> Option<Result<greta_runtime::Ceiling, greta_runtime::CeilingError>> {
            if matches!(op, Op::Noop) {
                return None;
            }
            let gemm = matches!(op, Op::GemmF16 { .. } | Op::GemmF32 { .. });
            Some(self.ceiling.clone()?.map(|rate| {
                greta_runtime::Ceiling {
                    rate,
                    unit: if gemm {
                        greta_runtime::CeilingUnit::TFlops
                    } else {
                        greta_runtime::CeilingUnit::GBps
                    },
                    source: if gemm {
                        "fakeGemm"
                    } else {
                        "memcpy d2d (fake)"
                    }
                    .into(),
                    library: "/fake/libfake.so".into(),
                    version: "1.0".into(),
                    found_by: "the fake's rule".into(),
                }
            }))
        }
    }

    fn tiny_gates() -> Vec<Gate> {
        crate::gates::test_gates(&[
            r#"{ op = "copy", n = 64 }"#,
            r#"{ op = "gemm_f32", m = 8, n = 8, k = 8 }"#,
            r#"{ op = "softmax", rows = 2, cols = 16 }"#,
            r#"{ op = "rope", tokens = 2, heads = 1, head_dim = 4, pos0 = 0, theta = 10000.0 }"#,
            r#"{ op = "gemm_f16", m = 8, n = 8, k = 8 }"#,
        ])
    }

    struct Fixture {
        gates: Vec<Gate>,
        classes: ClassFile,
        specs: SpecFile,
        deny: DenyList,
        faults: Faults,
        profile: Profile,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                gates: tiny_gates(),
                classes: ClassFile::default(),
                specs: SpecFile::builtin(),
                deny: DenyList::default(),
                faults: Faults::default(),
                profile: Profile::Default,
            }
        }
        fn ctx<'a>(&'a self, baseline: Option<&'a Baseline>) -> DeviceContext<'a> {
            DeviceContext {
                profile: self.profile,
                gates: &self.gates,
                repeat: Some(3),
                timeout: Duration::from_secs(1),
                seed: 1,
                floor_fraction: 0.75,
                baseline,
                classes: &self.classes,
                specs: &self.specs,
                deny: &self.deny,
                faults: &self.faults,
            }
        }
    }

    fn status(run: &DeviceRun) -> Vec<(&str, GateStatus)> {
        run.gates
            .iter()
            .map(|g| (g.id.as_str(), g.status))
            .collect()
    }

    #[test]
    fn a_healthy_device_passes_and_reports_rates() {
        let f = Fixture::new();
        let mut dev = FakeDevice::new(true);
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert_eq!(
            status(&run),
            [
                ("copy.t", GateStatus::Pass),
                ("gemm_f32.t", GateStatus::Pass),
                ("softmax.t", GateStatus::Pass),
                ("rope.t", GateStatus::Skip),
                ("gemm_f16.t", GateStatus::Pass),
            ]
        );
        assert_eq!(run.status, crate::results::RunStatus::Pass);
        let m = run.gates[0].metrics.as_ref().unwrap();
        assert_eq!((m.repeats_clean, m.repeats_total), (3, 3));
        // copy of 64 u32 moves 512 bytes; 1000 ns per dispatch -> 0.512 GB/s.
        assert_eq!(m.rate, Some(0.512));
        assert_eq!(m.time_median_us, Some(1.0));
        assert!(run.gates[3]
            .reason
            .as_ref()
            .unwrap()
            .contains("no rope kernel"));
    }

    #[test]
    fn perf_gates_carry_the_in_run_ceiling_and_their_ratio_to_it() {
        let mut f = Fixture::new();
        let mut dev = FakeDevice::new(true);
        dev.ceiling = Some(Ok(1.024));
        // Not in perf: no ceiling is measured at all.
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert!(run.gates.iter().all(|g| g.in_run == Default::default()));
        f.profile = Profile::Perf;
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        let copy = &run.gates[0];
        assert_eq!(copy.status, GateStatus::Pass);
        let c = copy.in_run.ceiling.as_ref().unwrap();
        assert_eq!((c.rate, c.unit), (1.024, crate::results::RateUnit::GBps));
        assert_eq!(c.source, "memcpy d2d (fake)");
        // Which file each ceiling came from and why, once per device.
        let said: Vec<&String> = run
            .notes
            .iter()
            .filter(|n| n.starts_with("in-run ceiling"))
            .collect();
        assert_eq!(
            said,
            [
                "in-run ceiling memcpy d2d (fake) from /fake/libfake.so (the fake's rule), version 1.0",
                "in-run ceiling fakeGemm from /fake/libfake.so (the fake's rule), version 1.0"
            ]
        );
        // copy.t runs at 0.512 GB/s (see above): half the ceiling.
        assert_eq!(copy.in_run.ratio, Some(0.5));
        let gemm = &run.gates[1];
        let m = gemm.metrics.as_ref().unwrap().rate.unwrap();
        assert_eq!(
            gemm.in_run.ceiling.as_ref().unwrap().unit,
            crate::results::RateUnit::TFlops
        );
        assert_eq!(gemm.in_run.ratio, Some(m / 1.024));
        // A skipped gate measured nothing, so it gets no ceiling either.
        assert_eq!(run.gates[3].status, GateStatus::Skip);
        assert_eq!(run.gates[3].in_run, Default::default());
    }

    #[test]
    fn a_missing_vendor_library_is_said_and_fails_nothing() {
        let mut f = Fixture::new();
        f.profile = Profile::Perf;
        let mut dev = FakeDevice::new(true);
        dev.ceiling = Some(Err(greta_runtime::CeilingError::NotFound {
            what: "cuBLAS (libcublas)".into(),
            looked: vec!["/env/nvidia/cublas/lib/libcublas.so (the env): not there".into()],
        }));
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert_eq!(run.status, crate::results::RunStatus::Pass);
        let g = &run.gates[1];
        assert_eq!(g.status, GateStatus::Pass);
        assert!(g.in_run.ceiling.is_none() && g.in_run.ratio.is_none());
        let why = g.in_run.ceiling_unavailable.as_deref().unwrap();
        assert!(
            why.contains("no cuBLAS") && why.contains("/env/nvidia/cublas/lib/libcublas.so"),
            "{why}"
        );
        // A timeout while measuring loses the device like any other.
        dev.ceiling = Some(Err(greta_runtime::CeilingError::Timeout(
            "memcpy hung".into(),
        )));
        let run = run_device(
            &mut FakeDevice {
                ceiling: dev.ceiling.clone(),
                ..FakeDevice::new(true)
            },
            0.1,
            &f.ctx(None),
            &Quiet,
        );
        assert!(run.lost.as_deref().unwrap().contains("memcpy hung"));
        assert!(run.gates[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("device lost earlier"));
    }

    fn stress_gates() -> Vec<Gate> {
        let text = "[[gate]]\nid = \"stress.t\"\nabout = \"\"\nop = { op = \"gemm_f16\", m = 40, n = 24, k = 16 }\nprofiles = [\"health\"]\nstress = { seconds = 0.02, interval_s = 0.01, tiles = 3, tile = 8 }\n";
        crate::gates::Catalog::parse("t.toml", text)
            .unwrap()
            .plan(Profile::Health, &[], false)
            .unwrap()
    }

    #[test]
    fn the_stress_gate_runs_for_its_time_and_checks_sampled_tiles() {
        let mut f = Fixture::new();
        f.gates = stress_gates();
        f.profile = Profile::Health;
        let mut dev = FakeDevice::new(true);
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        let g = &run.gates[0];
        assert_eq!(g.status, GateStatus::Pass, "{:?}", g.reason);
        let s = g.in_run.stress.as_ref().unwrap();
        // The fake has no stress loop: greta's gemm_f16 ran through `run`, and it says so.
        assert_eq!(s.engine, "greta gemm_f16");
        assert!(
            s.note.as_deref().unwrap().contains("no vendor BLAS"),
            "{s:?}"
        );
        assert!(
            s.intervals >= 1 && s.tiles_checked == 3 * s.intervals,
            "{s:?}"
        );
        // 2*40*24*16 flops per 1000 ns dispatch.
        let want = 2.0 * 40.0 * 24.0 * 16.0 / 1000.0 / 1e3;
        assert!((s.tflops_sustained.unwrap() - want).abs() < 1e-12, "{s:?}");
        assert_eq!(g.metrics.as_ref().unwrap().rate, s.tflops_sustained);
        assert_eq!(s.tflops_min, s.tflops_max);
        // A device whose GEMM is wrong in one tile fails the gate, naming it.
        dev.corrupt_gemm_f16 = true;
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        let g = &run.gates[0];
        assert_eq!(g.status, GateStatus::Fail);
        let why = g.reason.as_deref().unwrap();
        assert!(
            why.contains("tile 8x8 at (32, 16)") && why.contains("relative error"),
            "{why}"
        );
    }

    #[test]
    fn an_unwritten_element_fails_the_gate_and_blocks_f16() {
        let f = Fixture::new();
        let mut dev = FakeDevice::new(true);
        dev.skip_element = Some(5);
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert_eq!(run.gates[0].status, GateStatus::Fail);
        let why = run.gates[0].reason.clone().unwrap();
        assert!(
            why.contains("0/3 clean repeats") && why.contains("never written"),
            "{why}"
        );
        assert_eq!(run.gates[4].status, GateStatus::Skip);
        assert!(run.gates[4].reason.as_ref().unwrap().contains("copy.t"));
        assert_eq!(run.status, crate::results::RunStatus::Fail);
    }

    #[test]
    fn f16_needs_the_features_and_no_deny_entry() {
        let mut f = Fixture::new();
        let run = run_device(&mut FakeDevice::new(false), 0.1, &f.ctx(None), &Quiet);
        assert_eq!(run.gates[4].status, GateStatus::Skip);
        assert!(run.gates[4]
            .reason
            .as_ref()
            .unwrap()
            .contains("shaderFloat16"));
        f.deny = DenyList::parse(
            "d.toml",
            "[[deny]]\nid = \"fake\"\nreason = \"known bad\"\nmatch = { driver_name = \"radv\" }\n",
        )
        .unwrap();
        let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
        assert_eq!(run.gates[4].status, GateStatus::Skip);
        assert!(run.gates[4]
            .reason
            .as_ref()
            .unwrap()
            .contains("fake: known bad"));
        assert_eq!(run.status, crate::results::RunStatus::Pass);
    }

    #[test]
    fn a_timeout_fails_the_gate_and_skips_the_rest_without_touching_the_device() {
        let f = Fixture::new();
        let mut dev = FakeDevice::new(true);
        dev.timeout_on = Some("gemm_f32");
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert_eq!(run.gates[0].status, GateStatus::Pass);
        assert_eq!(run.gates[1].status, GateStatus::Fail);
        assert!(run.gates[1].reason.as_ref().unwrap().contains("timeout"));
        assert!(run.gates[2..].iter().all(|g| g.status == GateStatus::Skip));
        assert!(run.gates[2]
            .reason
            .as_ref()
            .unwrap()
            .contains("device lost"));
        assert!(run.lost.as_ref().unwrap().contains("gemm_f32.t"));
        // 3 copy repeats + the one gemm submission that timed out; nothing after.
        assert_eq!(dev.calls, 4);
    }

    #[test]
    fn validation_messages_fail_the_gate_they_came_from_and_the_run() {
        let f = Fixture::new();
        let mut dev = FakeDevice::new(true);
        dev.complain_on = Some("softmax");
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert_eq!(run.gates[1].status, GateStatus::Pass);
        assert_eq!(run.gates[2].status, GateStatus::Fail);
        let why = run.gates[2].reason.as_deref().unwrap();
        assert!(
            why.contains("3 validation-layer message(s): VUID-fake"),
            "{why}"
        );
        assert_eq!(run.validation_messages.len(), 3);
        assert_eq!(run.status, crate::results::RunStatus::Fail);

        // Raised while opening the device: no gate to blame, the run fails.
        let mut dev = FakeDevice::new(true);
        dev.messages.push("VUID-open".into());
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert!(run.gates.iter().all(|g| g.status != GateStatus::Fail));
        assert_eq!(run.validation_messages, ["VUID-open"]);
        assert_eq!(run.status, crate::results::RunStatus::Fail);
    }

    #[test]
    fn baseline_floors_pass_and_fail() {
        let f = Fixture::new();
        let mut dev = FakeDevice::new(true);
        let first = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        let mut report = crate::results::tests::sample_report();
        report.devices = vec![first];
        let base = Baseline::parse(std::path::Path::new("b.json"), &report.to_json()).unwrap();

        // Same speed: every measured gate passes its floor.
        let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(Some(&base)), &Quiet);
        assert_eq!(run.status, crate::results::RunStatus::Pass);
        let floor = run.gates[0].floor.as_ref().unwrap();
        assert!(floor.passed && floor.source.contains("b.json"));
        assert_eq!(floor.limit, 0.512 * 0.75);

        // Twice as slow: under 0.75 of the baseline.
        let mut slow = FakeDevice::new(true);
        slow.ns_per_dispatch = 2_000;
        let run = run_device(&mut slow, 0.1, &f.ctx(Some(&base)), &Quiet);
        assert_eq!(run.gates[0].status, GateStatus::Fail);
        let why = run.gates[0].reason.as_ref().unwrap();
        assert!(why.contains("under the floor"), "{why}");
        assert_eq!(run.status, crate::results::RunStatus::Fail);
    }

    /// A specs file whose one row claims the fake device by name: 0.5 GB/s,
    /// 0.002 TFLOP/s f32, 0.004 f16 (the fake's copy runs 0.512 GB/s, its
    /// softmax 0.256, its GEMMs 0.001024 TFLOP/s at 1000 ns a dispatch).
    fn fake_specs() -> SpecFile {
        SpecFile::parse(
            "fake-specs.toml",
            r#"
schema_version = 1
[[device]]
model = "Fake GPU 1"
vendor = "test"
arch = "none"
match = ["fake gpu"]
mem_bw_gbs = 0.5
fp16_dense_tflops = 0.004
bf16_dense_tflops = 0.004
fp32_tflops = 0.002
confidence = "test"
source = ["https://example.invalid/fake"]
figures_from = "test"
notes = "test"
"#,
        )
        .unwrap()
    }

    fn spec_floor_source(g: &GateResult) -> Option<&str> {
        g.floor
            .as_ref()
            .map(|f| f.source.as_str())
            .filter(|s| s.starts_with("spec "))
    }

    /// A device greta knows, in `perf`, with no baseline and no class:
    /// every gate of the four rate classes is held to its spec floor, a 4x
    /// slower device fails them, rope (no rate class) gets none.
    #[test]
    fn spec_floors_apply_where_no_baseline_or_class_does() {
        let mut f = Fixture::new();
        f.specs = fake_specs();
        f.profile = Profile::Perf;
        let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
        assert_eq!(
            run.status,
            crate::results::RunStatus::Pass,
            "{:?}",
            run.gates
        );
        let copy = &run.gates[0];
        let floor = copy.floor.as_ref().unwrap();
        assert_eq!(
            (floor.reference, floor.fraction, floor.limit),
            (0.5, 0.5, 0.25)
        );
        assert!(floor
            .source
            .contains("Fake GPU 1 mem_bw_gbs (streaming class"));
        assert_eq!(copy.spec_fraction, Some(0.512 / 0.5));
        let spec = copy.spec.as_ref().unwrap();
        assert_eq!((spec.figure, spec.model.as_str()), (0.5, "Fake GPU 1"));
        assert_eq!(run.gates[2].floor.as_ref().unwrap().fraction, 0.45);
        assert_eq!(run.gates[4].floor.as_ref().unwrap().limit, 0.004 * 0.15);
        assert!(run.gates[3].floor.is_none());
        assert!(
            run.notes.iter().any(|n| n.contains(
                "spec figures: Fake GPU 1 (fake-specs.toml), matched by name \"fake gpu\""
            )),
            "{:?}",
            run.notes
        );

        let mut slow = FakeDevice::new(true);
        slow.ns_per_dispatch = 4_000;
        let run = run_device(&mut slow, 0.1, &f.ctx(None), &Quiet);
        for i in [0, 1, 2] {
            let g = &run.gates[i];
            assert_eq!(g.status, GateStatus::Fail, "{}", g.id);
            let why = g.reason.as_deref().unwrap();
            assert!(
                why.contains("under the floor") && why.contains("from spec Fake GPU 1"),
                "{why}"
            );
        }
        // The f16 gate runs only after clean f32 gates.
        assert_eq!(run.gates[4].status, GateStatus::Skip);
        assert_eq!(run.status, crate::results::RunStatus::Fail);
    }

    /// A baseline or a class floor wins over the spec; outside `perf` the
    /// spec only reports fractions; an unknown device says it has none.
    #[test]
    fn spec_floors_yield_to_baselines_and_classes_and_stay_out_of_other_profiles() {
        let mut f = Fixture::new();
        f.specs = fake_specs();
        // default: fractions of spec, no floors at all.
        let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
        assert!(run.gates.iter().all(|g| g.floor.is_none()));
        assert_eq!(run.gates[1].spec_fraction, Some(0.001024 / 0.002));
        assert!(run
            .notes
            .iter()
            .any(|n| n.contains("fraction of spec") && !n.contains("spec floors")));

        f.profile = Profile::Perf;
        f.classes = ClassFile::parse(
            "c.toml",
            "[[class]]\nid = \"fakes\"\nmeasured = \"test\"\nmatch = { driver_name = \"radv\" }\nrates = { \"copy.t\" = 0.6 }\n",
        )
        .unwrap();
        let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(None), &Quiet);
        assert!(run.gates[0]
            .floor
            .as_ref()
            .unwrap()
            .source
            .contains("class fakes"));
        assert!(spec_floor_source(&run.gates[1]).is_some());

        let mut report = crate::results::tests::sample_report();
        report.devices = vec![run];
        let base = Baseline::parse(std::path::Path::new("b.json"), &report.to_json()).unwrap();
        let run = run_device(&mut FakeDevice::new(true), 0.1, &f.ctx(Some(&base)), &Quiet);
        for g in run.gates.iter().filter(|g| g.metrics.is_some()) {
            assert!(
                g.floor.as_ref().unwrap().source.contains("b.json"),
                "{}",
                g.id
            );
        }

        // Unknown to the built-in specs: no fractions, no spec floor, a note.
        f.specs = SpecFile::builtin();
        f.classes = ClassFile::default();
        let mut dev = FakeDevice::new(true);
        dev.info.name = "Unlisted GPU".into();
        dev.info.device_id = 0x1234;
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert!(run
            .gates
            .iter()
            .all(|g| g.floor.is_none() && g.spec.is_none() && g.spec_fraction.is_none()));
        assert!(
            run.notes
                .iter()
                .any(|n| n.contains("no spec figures for this device")
                    && n.contains("PCI 1002:1234")
                    && n.contains("no spec floors")),
            "{:?}",
            run.notes
        );
        // ... said only where spec floors could apply.
        f.profile = Profile::Default;
        let mut dev = FakeDevice::new(true);
        dev.info.name = "Unlisted GPU".into();
        dev.info.device_id = 0x1234;
        let run = run_device(&mut dev, 0.1, &f.ctx(None), &Quiet);
        assert!(
            run.notes.iter().all(|n| !n.contains("spec")),
            "{:?}",
            run.notes
        );
    }
}
