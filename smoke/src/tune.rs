//! `greta smoke --tune`: for each gate of a profile, time every tuning the
//! backend proposes ([`Backend::tuning_candidates`]), check each one's
//! output against the f64 reference (a fast but wrong variant never wins),
//! and store the fastest correct one in the device's tuning cache
//! ([`greta_runtime::TuningCache`]: one file per device UUID and driver
//! version under `$XDG_CACHE_HOME/greta/tuning`, keyed by shape class).
//! Later runs on that device and driver use it; a driver update starts an
//! empty cache.
//!
//! The HIP/CUDA backends tune the same way, in the device child (`greta
//! __gpu serve`, [`crate::gpu_child`]) as their smoke runs do: their
//! candidates are launch-time knobs and compiled kernel variants
//! (the runtime's `gpu::tune`), their entries are keyed apart from
//! Vulkan's ([`KeySpace::Gpu`]), and a later `greta smoke --backend
//! hip|cuda` on that device runs the stored winner.
//!
//! One set of fresh random inputs per gate is shared by its candidates (each
//! gets freshly poisoned outputs); a candidate's check runs on a second
//! thread while the next candidate runs on the device. An uncounted pilot
//! run of each candidate lets the backend size the warm-up (GPU clocks)
//! of its timed run.

use crate::check::CheckOutcome;
use crate::gates::{Catalog, Gate};
use crate::gpu_child::TuneRequest;
use crate::inputs::{gate_seed, prepare, Prepared};
use crate::session::BackendChoice;
use crate::session::SmokeError;
use crate::verify::verify;
use greta_kernels::{HostBuf, Op};
use greta_runtime::{shape_class, KeySpace, TunedEntry, TuningCache};
use greta_runtime::{Backend, BackendKind, DeviceSelect, RunOpts, Tuning};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "greta.tune/v1";

/// What to tune: the [`TuneRequest`] (all that crosses to the device
/// child, its defaults in [`TuneRequest::new`]) and its settings checked
/// once ([`TuneRequest::options`]).
#[derive(Debug, Clone)]
pub struct TuneOptions {
    pub request: TuneRequest,
    /// The request's one device.
    pub device: DeviceSelect,
    /// The request's submission timeout per candidate.
    pub timeout: Duration,
    /// Validation layers on (`None`: `GRETA_VK_VALIDATION`).
    pub validation: Option<bool>,
}

/// One candidate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The tuning asked for (empty: the backend's default).
    pub asked: Tuning,
    /// The tuning that ran, defaults filled in (what the cache stores).
    pub ran: Option<Tuning>,
    pub kernel: Option<String>,
    pub median_ns: Option<u64>,
    pub correct: bool,
    pub rel_err: Option<f64>,
    /// Why it is not eligible (error or failed check).
    pub reason: Option<String>,
}

/// One gate's sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateTune {
    pub gate: String,
    pub shape_class: String,
    pub candidates: Vec<Candidate>,
    /// Index of the fastest correct candidate.
    pub best: Option<usize>,
    /// Default's median over the best's (>= 1 when the best is faster).
    pub speedup: Option<f64>,
    /// Why the gate was not tuned at all.
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneReport {
    pub schema: String,
    pub device: String,
    pub uuid: Option<greta_vocab::DeviceUuid>,
    pub driver: String,
    pub profile: String,
    pub seed: u64,
    pub cache: Option<PathBuf>,
    pub gates: Vec<GateTune>,
    pub wall_s: f64,
}

/// Tune every gate of `opts.request.profile` on one device: Vulkan here, HIP or
/// CUDA in the device child.
pub fn tune(opts: &TuneOptions) -> Result<TuneReport, SmokeError> {
    match opts.request.backend {
        BackendChoice::Hip | BackendChoice::Cuda => crate::gpu_child::run_tune(opts),
        BackendChoice::Auto | BackendChoice::Vulkan => tune_vulkan(opts),
    }
}

fn plan_gates(opts: &TuneOptions) -> Result<Vec<Gate>, SmokeError> {
    Catalog::builtin()
        .plan(opts.request.profile, &opts.request.gates, false)
        .map_err(SmokeError::Usage)
}

fn tune_vulkan(opts: &TuneOptions) -> Result<TuneReport, SmokeError> {
    let started = Instant::now();
    let gates = plan_gates(opts)?;
    // The sweep itself runs without any cached tuning: each candidate is
    // asked for explicitly, and the default candidate is the built-in one.
    let backend: Box<dyn Backend> = Box::new(
        greta_runtime::VulkanDevice::open_with(&greta_runtime::VulkanOptions {
            select: opts.device.clone(),
            validation: opts.validation,
            tuning_cache: greta_runtime::CacheDir::Off,
            ..Default::default()
        })
        .map_err(|e| SmokeError::NoDevice(format!("no usable device: {e}")))?,
    );
    sweep(backend, &gates, opts, KeySpace::Vulkan, started).map(|(r, _)| r)
}

/// The sweep on a HIP or CUDA device, in this process (the device child
/// calls it). Every candidate is asked for explicitly (an empty tuning is
/// the built-in launch), so the cache the backend read at open plays no
/// part in it. Also says whether the device was lost (a hung GPU: the
/// child then leaves without the driver's teardown).
pub fn tune_gpu_here(opts: &TuneOptions) -> Result<(TuneReport, bool), SmokeError> {
    let started = Instant::now();
    let kind = match opts.request.backend {
        BackendChoice::Hip => BackendKind::Hip,
        BackendChoice::Cuda => BackendKind::Cuda,
        other => {
            return Err(SmokeError::Usage(format!(
                "the GPU child tunes --backend hip or cuda only, not {}",
                other.as_str()
            )))
        }
    };
    let gates = plan_gates(opts)?;
    let backend = greta_runtime::open(kind, &opts.device)
        .map_err(|e| SmokeError::NoDevice(format!("no usable device: {e}")))?;
    sweep(backend, &gates, opts, KeySpace::Gpu, started)
}

fn sweep(
    mut backend: Box<dyn Backend>,
    gates: &[Gate],
    opts: &TuneOptions,
    space: KeySpace,
    started: Instant,
) -> Result<(TuneReport, bool), SmokeError> {
    let mut cache = TuningCache::open(backend.info(), opts.request.cache_dir.as_deref());
    // Before anything is timed: a sweep of minutes must not end unable to
    // save for want of its directory.
    if !opts.request.dry_run {
        cache
            .ensure_dir()
            .map_err(|e| SmokeError::Usage(format!("tuning cache not writable: {e}")))?;
    }
    let mut out = Vec::new();
    for gate in gates {
        let g = tune_gate(backend.as_mut(), gate, opts);
        if let (Some(b), false) = (g.best, opts.request.dry_run) {
            let c = &g.candidates[b];
            cache.put_in(
                space,
                &gate.op,
                TunedEntry {
                    tuning: c.ran.clone().unwrap_or_default(),
                    kernel: c.kernel.clone().unwrap_or_default(),
                    median_ns: c.median_ns.unwrap_or(0),
                    measured_op: gate.op.to_string(),
                },
            );
        }
        out.push(g);
        if backend.lost().is_some() {
            break;
        }
        // Validation messages fail the sweep: a variant the layers complain
        // about is not a variant to keep.
        let msgs = backend.validation_messages();
        if !msgs.is_empty() {
            return Err(SmokeError::NoDevice(format!(
                "validation messages while tuning {}: {}",
                gate.id,
                msgs.join("; ")
            )));
        }
    }
    let path = if opts.request.dry_run {
        None
    } else {
        cache
            .save()
            .map_err(|e| SmokeError::Usage(format!("tuning cache not written: {e}")))?
    };
    let info = backend.info();
    let report = TuneReport {
        schema: SCHEMA.into(),
        device: info.name.clone(),
        uuid: info.uuid,
        driver: format!("{} {}", info.driver_name, info.driver_info),
        profile: opts.request.profile.as_str().to_string(),
        seed: opts.request.seed,
        cache: path,
        gates: out,
        wall_s: started.elapsed().as_secs_f64(),
    };
    Ok((report, backend.lost().is_some()))
}

fn skipped(gate: &Gate, why: String) -> GateTune {
    GateTune {
        gate: gate.id.clone(),
        shape_class: shape_class(&gate.op),
        candidates: vec![],
        best: None,
        speedup: None,
        skipped: Some(why),
    }
}

fn tune_gate(backend: &mut dyn Backend, gate: &Gate, opts: &TuneOptions) -> GateTune {
    if matches!(gate.op, Op::Noop) {
        return skipped(gate, "nothing to tune (per-dispatch overhead)".into());
    }
    if let Err(why) = backend.supports(&gate.op) {
        return skipped(gate, why);
    }
    let tunings = backend.tuning_candidates(&gate.op);
    if tunings.len() < 2 {
        return skipped(gate, "the backend proposes no alternatives".into());
    }
    let seed = gate_seed(opts.request.seed, &gate.id);
    let prep = prepare(&gate.op, gate.fixed_value, seed);
    let run_opts = |t: &Tuning| RunOpts {
        repeats: gate.dispatches_for(opts.request.profile).clamp(3, 20),
        timeout: opts.timeout,
        tuning: Some(t.clone()),
    };
    let tol = gate.tolerance();
    let mut cands: Vec<Candidate> = Vec::new();
    std::thread::scope(|s| {
        let mut pending: Option<(usize, std::thread::ScopedJoinHandle<'_, CheckOutcome>)> = None;
        let settle = |cands: &mut Vec<Candidate>, i: usize, c: CheckOutcome| {
            let cand = &mut cands[i];
            cand.correct = c.pass;
            cand.rel_err = Some(c.rel_err);
            if !c.pass {
                cand.reason = Some(c.reason.unwrap_or_else(|| "check failed".into()));
            }
        };
        for t in &tunings {
            let mut outs: Vec<HostBuf> = prep.outputs.clone();
            // A pilot run of this candidate, not counted: the backend
            // learns how long its kernel runs and sizes the warm-up of the
            // timed run to clock the GPU up. A backend sizes the warm-up of
            // a kernel it has not timed yet small (a candidate ten times
            // slower than the last could otherwise overrun the timeout),
            // so without it every candidate but the first was timed after
            // a few passes: on an H200 (2026-11-30, Vulkan, linear_f16
            // 2048x12288x4096) 20 of 22 were timed at 3.4-5.4 times
            // their warm time, the clock not yet up after the idle the check of
            // the one before left. Its error is the candidate's; its
            // outputs are its own, so the timed run's are checked from
            // fresh poison.
            let pilot = RunOpts {
                repeats: 1,
                ..run_opts(t)
            };
            let mut pilot_outs = prep.outputs.clone();
            let res = backend
                .run(greta_runtime::Job::new(
                    &prep.op,
                    &prep.inputs,
                    &mut pilot_outs,
                    &pilot,
                ))
                .and_then(|_| {
                    backend.run(greta_runtime::Job::new(
                        &prep.op,
                        &prep.inputs,
                        &mut outs,
                        &run_opts(t),
                    ))
                });
            let idx = cands.len();
            match res {
                Ok(stats) => {
                    cands.push(Candidate {
                        asked: t.clone(),
                        ran: Some(stats.tuning.clone()),
                        kernel: Some(stats.kernel.clone()),
                        median_ns: Some(stats.median_ns()),
                        correct: false,
                        rel_err: None,
                        reason: None,
                    });
                    if let Some((i, h)) = pending.take() {
                        settle(&mut cands, i, join(h));
                    }
                    let p: &Prepared = &prep;
                    pending = Some((idx, s.spawn(move || verify(p, &outs, tol, seed))));
                }
                Err(e) => {
                    let fatal = e.is_fatal_for_device();
                    cands.push(Candidate {
                        asked: t.clone(),
                        ran: None,
                        kernel: None,
                        median_ns: None,
                        correct: false,
                        rel_err: None,
                        reason: Some(e.to_string()),
                    });
                    if fatal {
                        break;
                    }
                }
            }
        }
        if let Some((i, h)) = pending.take() {
            settle(&mut cands, i, join(h));
        }
    });
    let best = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| c.correct)
        .min_by_key(|(_, c)| c.median_ns.unwrap_or(u64::MAX))
        .map(|(i, _)| i);
    let speedup = match (best, cands.first()) {
        (Some(b), Some(d)) if d.correct => match (d.median_ns, cands[b].median_ns) {
            (Some(dn), Some(bn)) if bn > 0 => Some(dn as f64 / bn as f64),
            _ => None,
        },
        _ => None,
    };
    GateTune {
        gate: gate.id.clone(),
        shape_class: shape_class(&gate.op),
        candidates: cands,
        best,
        speedup,
        skipped: None,
    }
}

fn join(h: std::thread::ScopedJoinHandle<'_, CheckOutcome>) -> CheckOutcome {
    h.join()
        .unwrap_or_else(|_| CheckOutcome::failed("the check panicked".into()))
}

/// Human table: per gate, every candidate with its time and verdict, the
/// winner marked.
pub fn render(r: &TuneReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tuning {} ({}, {}), profile {}, seed {}",
        r.device,
        r.driver,
        r.uuid
            .map_or_else(|| "no uuid".to_string(), |u| u.to_string()),
        r.profile,
        r.seed
    );
    for g in &r.gates {
        let _ = writeln!(s, "{} [{}]", g.gate, g.shape_class);
        if let Some(why) = &g.skipped {
            let _ = writeln!(s, "    skipped: {why}");
            continue;
        }
        for (i, c) in g.candidates.iter().enumerate() {
            let mark = if Some(i) == g.best { "*" } else { " " };
            let t = c
                .median_ns
                .map_or("-".into(), |n| format!("{:.1} us", n as f64 / 1e3));
            let verdict = if c.correct {
                format!("ok (rel_err {:.1e})", c.rel_err.unwrap_or(0.0))
            } else {
                format!("REJECTED: {}", c.reason.as_deref().unwrap_or("?"))
            };
            let ran = c
                .ran
                .as_ref()
                .map_or_else(|| c.asked.to_string(), |t| t.to_string());
            let _ = writeln!(
                s,
                "  {mark} {:<22} {:<44} {:>12}  {verdict}",
                c.kernel.as_deref().unwrap_or("-"),
                ran,
                t
            );
        }
        if let Some(x) = g.speedup {
            let _ = writeln!(s, "    best vs default: {x:.2}x");
        }
    }
    match &r.cache {
        Some(p) => {
            let _ = writeln!(s, "tuning cache: {}", p.display());
        }
        None => {
            let _ = writeln!(s, "tuning cache: not written");
        }
    }
    let _ = writeln!(s, "wall {:.1} s", r.wall_s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::Profile;
    use crate::session::DeviceChoice;
    use greta_runtime::{Job, Knob, RunStats, RuntimeError};

    /// A device timed as a GPU is: a kernel it has not just run (its
    /// backend has no time of it to size a warm-up from) is timed at idle
    /// clocks, five times slower. Candidates by `wg`: 64 runs in 10 µs,
    /// 128 in 12 µs, 256 in 8 µs.
    struct ColdUnlessJustRun {
        info: greta_runtime::DeviceInfo,
        last: Option<Tuning>,
        runs: usize,
    }

    impl Backend for ColdUnlessJustRun {
        fn info(&self) -> &greta_runtime::DeviceInfo {
            &self.info
        }
        fn supports(&self, _: &Op) -> Result<(), String> {
            Ok(())
        }
        fn tuning_candidates(&self, _: &Op) -> Vec<Tuning> {
            [64, 128, 256]
                .map(|wg| Tuning::of(&[(Knob::Wg, wg)]))
                .to_vec()
        }
        fn run(&mut self, job: Job<'_>) -> Result<RunStats, RuntimeError> {
            self.runs += 1;
            let t = job.opts.tuning.clone().unwrap_or_default();
            let warm_ns = match t.get(Knob::Wg) {
                Some(64) => 10_000,
                Some(128) => 12_000,
                _ => 8_000,
            };
            let ns = if self.last.as_ref() == Some(&t) {
                warm_ns
            } else {
                5 * warm_ns
            };
            self.last = Some(t.clone());
            crate::runner::tests::write_reference(job.op, job.inputs, job.outputs)?;
            let mut stats = crate::runner::tests::fake_stats(
                job.op,
                ns,
                job.opts.repeats,
                Duration::from_micros(50),
            );
            stats.tuning = t;
            Ok(stats)
        }
        fn lost(&self) -> Option<&str> {
            None
        }
    }

    /// Each candidate is timed warm: the fastest wins even though a cold
    /// first run of it is slower than the others' warm ones.
    #[test]
    fn every_candidate_is_timed_after_its_own_pilot() {
        let mut dev = ColdUnlessJustRun {
            info: crate::runner::tests::fake_info(false),
            last: None,
            runs: 0,
        };
        let opts = TuneRequest {
            gates: vec!["copy.16m".into()],
            ..TuneRequest::new(Profile::Default)
        }
        .options()
        .unwrap();
        let gate = plan_gates(&opts).unwrap().remove(0);
        let g = tune_gate(&mut dev, &gate, &opts);
        assert_eq!(dev.runs, 6, "a pilot and a timed run per candidate");
        let medians: Vec<Option<u64>> = g.candidates.iter().map(|c| c.median_ns).collect();
        assert_eq!(medians, [Some(10_000), Some(12_000), Some(8_000)]);
        assert!(g.candidates.iter().all(|c| c.correct), "{g:?}");
        assert_eq!(g.best, Some(2));
        assert_eq!(g.speedup, Some(1.25));
    }

    /// On lavapipe with validation on: every candidate of a few gates runs,
    /// is checked, and the winner lands in the cache; a later device open
    /// runs the cached tuning.
    #[test]
    fn tune_on_lavapipe_writes_a_cache_later_runs_use() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = TuneRequest {
            gates: vec![
                "copy.16m".into(),
                "softmax.256x1024".into(),
                "gemm_f32.256".into(),
            ],
            device: DeviceChoice::One(DeviceSelect::Cpu),
            timeout_s: 60.0,
            seed: 7,
            cache_dir: Some(dir.path().to_path_buf()),
            backend: BackendChoice::Vulkan,
            ..TuneRequest::new(Profile::Default)
        }
        .options()
        .unwrap();
        opts.validation = Some(true);
        let r = match tune(&opts) {
            Ok(r) => r,
            Err(SmokeError::NoDevice(e)) => {
                eprintln!("no lavapipe here, skipping: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        eprintln!("{}", render(&r));
        assert_eq!(r.gates.len(), 3);
        for g in &r.gates {
            assert!(g.skipped.is_none(), "{}: {:?}", g.gate, g.skipped);
            assert!(g.candidates.len() >= 2, "{}", g.gate);
            // Every candidate that ran on lavapipe computes the right function.
            for c in &g.candidates {
                if c.median_ns.is_some() {
                    assert!(c.correct, "{} {}: {:?}", g.gate, c.asked, c.reason);
                }
            }
            let b = g.best.expect("a correct candidate");
            assert!(g.candidates[b].correct);
        }
        let path = r.cache.clone().expect("cache written");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("greta.tuning/v1") && text.contains("softmax:"),
            "{text}"
        );

        // A later device open reads that cache: a run without a tuning
        // runs the stored winner.
        let g = r
            .gates
            .iter()
            .find(|g| g.gate == "softmax.256x1024")
            .unwrap();
        let want = g.candidates[g.best.unwrap()].ran.clone().unwrap();
        let mut dev = greta_runtime::VulkanDevice::open_with(&greta_runtime::VulkanOptions {
            select: DeviceSelect::Cpu,
            validation: Some(true),
            cache: greta_runtime::CacheDir::Off,
            tuning_cache: greta_runtime::CacheDir::Dir(dir.path().to_path_buf()),
            ..Default::default()
        })
        .unwrap();
        let gate = Catalog::builtin()
            .plan(Profile::Default, &["softmax.256x1024".into()], false)
            .unwrap()
            .remove(0);
        let mut prep = prepare(&gate.op, false, 9);
        let mut outs = prep.take_outputs();
        let stats = dev
            .run(greta_runtime::Job::new(
                &prep.op,
                &prep.inputs,
                &mut outs,
                &RunOpts::default(),
            ))
            .unwrap();
        assert_eq!(stats.tuning, want);
        assert!(verify(&prep, &outs, gate.tolerance(), 9).pass);
        assert!(
            dev.validation_messages().is_empty(),
            "{:?}",
            dev.validation_messages()
        );
    }
}
