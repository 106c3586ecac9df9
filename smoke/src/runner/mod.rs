//! Running gates on one device through the backend-agnostic
//! [`greta_runtime::Backend`]: repeats with fresh inputs, verification,
//! the f16 preconditions, floors, and the "device lost" rule (after a
//! timeout nothing more is submitted to that device).

use crate::deny::DenyList;
use crate::floors::{self, Baseline, ClassFile};
use crate::gates::{Gate, Precision, Profile};
use crate::inject::{Faults, HANG_DISPATCHES, HANG_OP};
use crate::inputs::{gate_seed, prepare, prepare_in};
use crate::results::{DeviceInfo, DeviceRun, GateResult, GateStatus, Metrics, Report};
use crate::spec::{DeviceKey, DeviceSpec, SpecFile, SpecMatch};
use crate::verify::verify_shared;
use greta_runtime::{Backend, RunOpts, RuntimeError, TimingSource};
use host_copy_gate::run_host_copy;
use std::time::{Duration, Instant};
use stress_gate::run_stress;

mod host_copy_gate;
mod overlap;
mod stress_gate;

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
    /// The references the run's devices share (two or more devices).
    pub shared: Option<&'a crate::shared_refs::SharedRefs>,
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
        pci_bus_id: d.pci_bus_id.clone(),
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
    // Error counters before the gates, for the comparison after them.
    let node_watch =
        crate::telemetry::NodeWatch::start(&rt_info, &ctx.faults.telemetry(rt_info.index));
    let mut validation_seen = validation_messages.len();
    // The device's PCIe links, for the host-copy gate's floor.
    let links = node_watch
        .as_ref()
        .map(crate::telemetry::NodeWatch::links)
        .unwrap_or_default();
    // What the gates will run, built ahead on every host core (Vulkan's
    // pipelines) rather than one by one as each gate first needs it.
    let ahead: Vec<greta_runtime::Op> = ctx
        .gates
        .iter()
        .filter(|g| !g.host_link && full_size_on_cpu(g, &device, spec, &ctx.specs.path).is_none())
        .filter(|g| backend.supports(&g.op).is_ok())
        .map(|g| g.op.clone())
        .collect();
    let began = std::time::Instant::now();
    let built = backend.prepare(&ahead);
    tracing::debug!(
        "built {built} objects ahead for {} gates in {:.3} s",
        ahead.len(),
        began.elapsed().as_secs_f64()
    );
    for gate in ctx.gates {
        progress.gate_started(rt_info.index, &gate.id);
        let skip = |reason: String| skipped(gate, ctx.seed, reason);
        let result = if let Some(gate_lost) = lost_in.as_ref() {
            skip(format!("device lost earlier in this run (in gate {gate_lost}); nothing more is submitted to it"))
        } else if let Some(why) = full_size_on_cpu(gate, &device, spec, &ctx.specs.path) {
            skip(why)
        } else if let Err(why) = backend.supports(&gate.op) {
            skip(format!("not supported by this device/backend: {why}"))
        } else if let Some(why) =
            f16_precondition(gate, &device, &backend_label, ctx.deny, &results)
        {
            skip(why)
        } else {
            let first = !results.iter().any(|r| r.metrics.is_some());
            // The memory test is watched as the stress gate is (which
            // watches itself): what held the clocks while every word was
            // written and read back.
            let watch = matches!(gate.op, greta_runtime::Op::Memtest { .. })
                .then(|| crate::telemetry::watch(&rt_info, &ctx.faults.telemetry(rt_info.index)))
                .flatten();
            let mut r = match (&gate.stress, gate.whole_memory) {
                _ if ctx.faults.vanishes(rt_info.index, &gate.id, first) => vanish(gate, ctx),
                _ if gate.host_link => run_host_copy(backend, gate, ctx, &links),
                (Some(cfg), _) if !ctx.faults.hangs(rt_info.index, &gate.id, first) => {
                    run_stress(backend, gate, cfg, ctx)
                }
                (_, Some(fraction)) => run_sweep(backend, gate, fraction, ctx, first),
                _ => run_gate(backend, gate, ctx, first),
            };
            if let Some(w) = watch {
                let rate = r
                    .result
                    .metrics
                    .as_ref()
                    .and_then(|m| m.rate)
                    .map_or_else(|| "no rate".to_string(), |v| format!("{v:.1} GB/s"));
                let (telemetry, notes) = w.finish(&gate.id, &rate);
                watched(&mut r.result, telemetry);
                r.notes.extend(notes);
            }
            if ctx.profile == Profile::Perf && r.lost.is_none() && !gate.host_link {
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
            // The host-copy gate is held to its link, not to the device's
            // memory figures.
            if !gate.host_link {
                rate_against_spec(&mut r.result, gate, spec);
                if r.result.status == GateStatus::Pass {
                    apply_floor(&mut r.result, gate, &device, ctx, class, spec);
                }
            }
            // A failing gate that was watched (stress verdict or floor) says
            // what held the clocks, or that nothing did.
            crate::telemetry::attribute(&mut r.result);
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
    let checks = node_watch.map_or_else(Vec::new, |w| {
        let loaded: Vec<_> = results
            .iter()
            .flat_map(|r| r.in_run.telemetry.iter().cloned())
            .collect();
        w.finish(&loaded)
    });
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
        checks,
    };
    run.status = Report::summarize(std::slice::from_ref(&run));
    run
}

/// Why a full-size gate must not run here, if it must not: on a CPU
/// device (lavapipe) it takes minutes and measures nothing a floor holds,
/// unless a specs file gives that device an achievable rate for it.
fn full_size_on_cpu(
    gate: &Gate,
    device: &DeviceInfo,
    spec: Option<&DeviceSpec>,
    specs_path: &str,
) -> Option<String> {
    if !gate.is_full_size() || device.device_type != greta_vocab::DeviceType::Cpu {
        return None;
    }
    match gate.achievable {
        Some(kind) if spec.is_some_and(|s| s.achievable_for(kind, &gate.op).is_some()) => None,
        Some(kind) => Some(format!(
            "full-size gate on a CPU device: {specs_path} has no achievable {} rate for it, so it would measure nothing a floor holds (and take long)",
            kind.as_str()
        )),
        None => Some("full-size gate on a CPU device: sized for a GPU, it would take minutes here".into()),
    }
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

/// A gate that did not run, and why.
pub(crate) fn skipped(gate: &Gate, base_seed: u64, reason: String) -> GateResult {
    gate_result(
        gate,
        GateStatus::Skip,
        Some(reason),
        gate_seed(base_seed, &gate.id),
    )
}

/// The gate's outcome with its identity filled in and nothing measured.
fn gate_result(gate: &Gate, status: GateStatus, reason: Option<String>, seed: u64) -> GateResult {
    GateResult::new(
        gate.id.clone(),
        gate.op.name().to_string(),
        gate.shape(),
        status,
        reason,
        gate.tolerance(),
        seed,
    )
}

struct GateRun {
    result: GateResult,
    /// Lines for the device's notes (which library each ceiling came from).
    notes: Vec<String>,
    /// Set when the device must not be used again.
    lost: Option<String>,
    /// The run failed to allocate its buffers (a whole-memory sweep's end).
    out_of_memory: bool,
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
        // TEST-ONLY `--inject prologue`: the decode layer's wrong prologue.
        tuning: ctx.faults.tuning(device, gate),
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
    let mut ran_tuning: Option<greta_runtime::Tuning> = None;
    let mut step_ns: Vec<u64> = Vec::new();
    let mut wall_clock_timing = false;
    let mut out_of_memory = false;
    // One repeat's host state: its inputs (and prior content) and the
    // buffers the device wrote, refilled by a later repeat (`prepare_in`).
    struct Rep {
        prep: crate::inputs::Prepared,
        outs: Vec<greta_runtime::HostBuf>,
        seed: u64,
    }
    // The reference and the next inputs beside the device's run (`overlap`).
    let overlap = repeats > 1 && overlap::fits(&gate.op);
    let failed = overlap::repeats(
        repeats,
        overlap,
        |r, spare: Option<Rep>| {
            let rseed = seed.wrapping_add(r as u64);
            let (spare_in, spare_out) =
                spare.map_or_else(Default::default, |s| (s.prep.inputs, s.outs));
            let mut prep = prepare_in(&gate.op, gate.fixed_value, rseed, spare_in, spare_out);
            let outs = prep.take_outputs();
            Rep {
                prep,
                outs,
                seed: rseed,
            }
        },
        |_, rep: &Rep| verify_shared(&rep.prep, &rep.outs, tol, rep.seed, ctx.shared),
        |r, rep: &mut Rep| -> Result<(), RuntimeError> {
            total += 1;
            let mut stats = backend.run(greta_runtime::Job::new(
                &rep.prep.op,
                &rep.prep.inputs,
                &mut rep.outs,
                &opts,
            ))?;
            ctx.faults.slow(device, &mut stats);
            ctx.faults.corrupt(device, &gate.id, r, &mut rep.outs);
            device_ns.extend_from_slice(&stats.device_ns);
            wall_us.push(stats.wall.as_secs_f64() * 1e6);
            wall_clock_timing |= stats.timing == TimingSource::WallClock;
            kernel.get_or_insert(stats.kernel.clone());
            ran_tuning.get_or_insert(stats.tuning.clone());
            if !stats.step_ns.is_empty() {
                step_ns = stats.step_ns.clone();
            }
            Ok(())
        },
        |r, c| {
            worst_rel = merge_max(worst_rel, c.rel_err);
            worst_abs = merge_max(worst_abs, c.max_abs_err);
            if c.pass {
                clean += 1;
            } else {
                first_failure.get_or_insert_with(|| {
                    format!(
                        "repeat {}/{repeats} (seed {}): {}",
                        r + 1,
                        seed.wrapping_add(r as u64),
                        c.reason.unwrap_or_else(|| "check failed".into())
                    )
                });
            }
        },
    );
    if let Some((r, e)) = failed {
        out_of_memory = matches!(e, RuntimeError::OutOfMemory(_));
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
    // The graph that ran: fused or not as the run's tuning says.
    let fusion = match ran_tuning
        .as_ref()
        .and_then(|t| t.get(greta_runtime::Knob::Fuse))
    {
        Some(0) => greta_kernels::block::graph::Fusion::Separate,
        _ => greta_kernels::block::graph::Fusion::Fused,
    };
    let block = match gate.op.composite_as(fusion) {
        Some(Ok(c)) => {
            let ops: Vec<greta_kernels::Op> = c.graph.steps.iter().map(|s| s.op.clone()).collect();
            Some(crate::results::BlockSummary::new(
                kernel.as_deref().unwrap_or(""),
                &step_ns,
                &ops,
                c.tokens,
                median_ns,
            ))
        }
        _ => None,
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
            metrics: Some(metrics),
            wall_s: started.elapsed().as_secs_f64(),
            kernel,
            in_run: crate::results::InRun {
                block,
                ..Default::default()
            },
            ..gate_result(
                gate,
                if pass {
                    GateStatus::Pass
                } else {
                    GateStatus::Fail
                },
                reason,
                seed,
            )
        },
        lost,
        notes: Vec::new(),
        out_of_memory,
    }
}

/// A whole-memory memtest: the gate's slice run once after another, each
/// kept allocated while the next runs (`Backend::keep_scratch`), so each
/// slice is memory no earlier one had, until `fraction` of the device's
/// memory is covered or an allocation fails (memory in use elsewhere);
/// then everything kept is freed. A memory error, a failed first slice or
/// a lost device fails the gate; the coverage goes to the device's notes.
fn run_sweep(
    backend: &mut dyn Backend,
    gate: &Gate,
    fraction: f64,
    ctx: &DeviceContext<'_>,
    first_gate_run: bool,
) -> GateRun {
    let started = Instant::now();
    let slice = gate
        .op
        .scratch()
        .first()
        .map_or(0, |s| (s.len * s.dtype.size()) as u64)
        .max(1);
    let device = backend
        .info()
        .memory_heaps
        .iter()
        .filter(|h| h.device_local)
        .map(|h| h.size)
        .max()
        .unwrap_or(0);
    let planned = ((device as f64 * fraction) / slice as f64).floor().max(1.0) as u64;
    let fail = |reason: String| GateRun {
        result: GateResult {
            status: GateStatus::Fail,
            wall_s: started.elapsed().as_secs_f64(),
            ..skipped(gate, ctx.seed, reason)
        },
        lost: None,
        notes: Vec::new(),
        out_of_memory: false,
    };
    if let Err(e) = backend.keep_scratch(true) {
        return fail(format!("cannot keep the tested slices allocated: {e}"));
    }
    let mut runs: Vec<GateRun> = Vec::new();
    let mut ended = None;
    for k in 0..planned {
        // One clean pass per slice, a fresh seed for each.
        let one = DeviceContext {
            repeat: Some(1),
            seed: ctx.seed.wrapping_add(k),
            ..*ctx
        };
        let r = run_gate(backend, gate, &one, first_gate_run && k == 0);
        if r.out_of_memory && k > 0 {
            ended = Some(format!("slice {} could not be allocated", k + 1));
            break;
        }
        let stop = r.lost.is_some() || r.result.status != GateStatus::Pass;
        runs.push(r);
        if stop {
            break;
        }
    }
    let _ = backend.keep_scratch(false);
    let kept = backend.release_kept();
    let tested = runs
        .iter()
        .filter(|r| r.result.status == GateStatus::Pass)
        .count() as u64;
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let note = format!(
        "{}: {:.1} GiB tested in {tested} slice(s) of {:.1} GiB ({:.2} of {:.1} GiB device memory; {planned} planned{}), each kept allocated while the next ran; {:.1} GiB freed after",
        gate.id,
        gib(tested * slice),
        gib(slice),
        if device > 0 { (tested * slice) as f64 / device as f64 } else { 0.0 },
        gib(device),
        ended.map(|e| format!("; {e}")).unwrap_or_default(),
        gib(kept)
    );
    let n = runs.len();
    let Some(mut last) = runs.pop() else {
        return fail("no slice ran".into());
    };
    let mut rates: Vec<f64> = runs
        .iter()
        .chain(std::iter::once(&last))
        .filter_map(|r| r.result.metrics.as_ref().and_then(|m| m.rate))
        .collect();
    rates.sort_by(f64::total_cmp);
    let (clean, total) = runs
        .iter()
        .chain(std::iter::once(&last))
        .fold((0, 0), |(c, t), r| {
            r.result
                .metrics
                .as_ref()
                .map_or((c, t), |m| (c + m.repeats_clean, t + m.repeats_total))
        });
    if let Some(m) = last.result.metrics.as_mut() {
        m.rate = rates.get(rates.len() / 2).copied();
        m.repeats_clean = clean;
        m.repeats_total = total;
    }
    if let Some(why) = last.result.reason.take() {
        last.result.reason = Some(format!("slice {n}/{planned}: {why}"));
    }
    last.result.wall_s = started.elapsed().as_secs_f64();
    last.notes.push(note);
    last
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

/// A watched gate's telemetry into its result; heat that held the clocks
/// fails a gate that passed ([`crate::telemetry::throttle_check`]).
pub(super) fn watched(result: &mut GateResult, telemetry: Vec<crate::telemetry::Summary>) {
    if result.status == GateStatus::Pass {
        if let Err(why) = crate::telemetry::throttle_check(&telemetry) {
            result.status = GateStatus::Fail;
            result.reason = Some(why);
        }
    }
    result.in_run.telemetry = telemetry;
}

/// An injected vanish (TEST-ONLY): the device fell off the bus as the gate
/// began; the gate fails as any call on a lost device does, and nothing
/// more is submitted to it.
fn vanish(gate: &Gate, ctx: &DeviceContext<'_>) -> GateRun {
    let e = RuntimeError::DeviceLost("the GPU is gone from the bus (injected vanish)".into());
    let msg = describe(&e);
    GateRun {
        result: GateResult {
            status: GateStatus::Fail,
            ..skipped(gate, ctx.seed, msg.clone())
        },
        lost: Some(format!("{}: {msg}", gate.id)),
        notes: Vec::new(),
        out_of_memory: false,
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
        out_of_memory: false,
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
/// `perf`) the device class's, else (a full-size gate, in any profile) the
/// fraction of its model's achievable rate, else (in `perf`) the class
/// fraction of the device's published peak for the gate's rate class.
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
            let kind = gate.achievable?;
            let vendor_ran = result
                .in_run
                .stress
                .as_ref()
                .is_some_and(|s| s.library.is_some());
            spec?.achievable_floor(kind, &gate.op, vendor_ran)
        })
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
pub(crate) mod tests;
