//! The stress gate: the backend's sustained loop for the configured time,
//! each interval's sampled tiles checked, with the GPU's telemetry beside.

use super::{describe, skipped, DeviceContext, GateRun};
use crate::gates::Gate;
use crate::inputs::gate_seed;
use crate::results::{GateResult, GateStatus, Metrics};
use greta_runtime::{Backend, TimingSource};
use std::time::{Duration, Instant};

/// A stress gate: the backend's stress loop (or greta's `gemm_f16` through
/// `run`) for the configured time; every interval's sampled tiles checked;
/// the rate is the sustained TFLOP/s, the spread in `stress`.
pub(super) fn run_stress(
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
        out_of_memory: false,
    };
    let Some(mut req) = crate::stress::request(gate, cfg, seed, ctx.timeout) else {
        return fail(format!("{}: not a stress op", gate.op), None);
    };
    // `--repeat N`: exactly N intervals (each one a repeat with fresh inputs).
    req.intervals = ctx.repeat.map(|n| n.max(1));
    let device = backend.info().index;
    // The GPU's own telemetry while the loop runs: what held its clocks.
    let watch = crate::telemetry::watch(backend.info(), &ctx.faults.telemetry(device));
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
            step_ns: Vec::new(),
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
    let (telemetry, notes) = watch.map_or_else(Default::default, |w| {
        let rate = summary
            .tflops_sustained
            .map_or_else(|| "no rate".to_string(), |t| format!("{t:.1} TFLOP/s"));
        w.finish(&gate.id, &rate)
    });
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
    super::watched(&mut result, telemetry);
    GateRun {
        result,
        lost: None,
        notes,
        out_of_memory: false,
    }
}
