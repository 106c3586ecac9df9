//! What a run of the gate script means: each gate passes, fails or is
//! skipped (with the reason), and every failure becomes a finding with a
//! stable id (docs/doctor.md) and a fix. Pure functions of the run and of
//! what was expected, so they are unit-tested without a Python.
//!
//! Failures whose text carries a known error signature (the doctor's
//! `probe/signals.toml`: `hipErrorNoBinaryForGpu`, `Memory access fault`,
//! `/dev/kfd` permission, ...) are also run through the doctor's rules, so
//! they get the doctor's finding ids and fixes (`rocm.gfx-unsupported`, ...).

use super::{DeviceKind, GateRecord, ModuleRun, ModuleStatus, Run};
// A gate's outcome is smoke's own: framework gates are written as greta.smoke/v1.
use greta_smoke::results::GateStatus;
use greta_vocab::{Backend, Finding, Fix, Severity};
use std::path::PathBuf;
use std::time::Duration;

/// Relative error by norm allowed for a gate (`‖out − ref‖₂ / ‖ref‖₂`):
/// fp32 math 1e-5 as the kernel gates; f16/bf16 inputs 1e-2 (the
/// reference is computed from the rounded inputs, so only accumulation and
/// output rounding count).
pub fn tolerance(gate_id: &str) -> f64 {
    if gate_id.ends_with("_f16") || gate_id.ends_with("_bf16") || gate_id.ends_with(".sdpa") {
        1e-2
    } else {
        1e-5
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    Amd,
    Nvidia,
}

/// The GPU the gates must run on.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuWant {
    pub vendor: Vendor,
    /// Names and PCI addresses the probe found (for the messages).
    pub names: Vec<String>,
}

/// What the env promises and the machine needs.
#[derive(Debug, Clone)]
pub struct Expect {
    /// "profile rocm6.4", "env cpu", "python /usr/bin/python3".
    pub label: String,
    /// The backend the env was built for (`rocm`, `cuda`, `cpu`); None for
    /// an interpreter greta did not build.
    pub backend: Option<Backend>,
    /// ROCm/CUDA major.minor the profile promises.
    pub version: Option<String>,
    /// Some: a GPU is there and the gates must run on it.
    pub gpu: Option<GpuWant>,
    /// Modules must be imported from here (a greta env); None: anywhere.
    pub env_root: Option<PathBuf>,
    /// A module that is not installed fails (install: its wheel was installed)
    /// instead of being skipped.
    pub require_all: bool,
}

impl Expect {
    /// Whether triton's gates can run: they compile for a GPU only.
    pub fn triton_runs(&self) -> bool {
        self.gpu.is_some()
    }

    /// Why triton is skipped, when it is.
    pub fn triton_skip_reason(&self) -> String {
        match self.backend {
            Some(Backend::Cpu) => "the cpu profile has no GPU, and triton compiles kernels for a GPU only".into(),
            _ => "no GPU on this machine (the probe found no AMD or NVIDIA GPU), and triton compiles kernels for a GPU only".into(),
        }
    }
}

/// One gate as judged (also the pseudo-gates `M.import` and `M.device`).
#[derive(Debug, Clone)]
pub struct Judged {
    pub id: String,
    pub verdict: GateStatus,
    pub reason: Option<String>,
    /// The tolerance it was held to (compute gates).
    pub tolerance: Option<f64>,
    pub record: Option<GateRecord>,
}

/// One module as judged.
#[derive(Debug, Clone)]
pub struct ModuleJudged {
    pub module: String,
    pub gates: Vec<Judged>,
    /// Set when the module's run ended early (timeout, crash).
    pub lost: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Judgement {
    pub modules: Vec<ModuleJudged>,
    pub findings: Vec<Finding>,
    /// Error texts and tracebacks of every failure, for the signal scan.
    pub failure_texts: Vec<(String, String)>,
}

impl Judgement {
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Fail)
            || self
                .modules
                .iter()
                .flat_map(|m| &m.gates)
                .any(|g| g.verdict == GateStatus::Fail)
    }
}

/// Collects findings by id, evidence merged.
#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, id: &str, title: &str, message: String, evidence: String, fix: Fix) {
        if let Some(f) = self.0.iter_mut().find(|f| f.id == id) {
            if !f.evidence.contains(&evidence) {
                f.evidence.push(evidence);
            }
            return;
        }
        self.0.push(Finding {
            id: id.into(),
            severity: Severity::Fail,
            title: title.into(),
            message,
            evidence: vec![evidence],
            fix,
        });
    }
}

fn fix(text: &str, commands: &[&str]) -> Fix {
    Fix {
        text: text.into(),
        commands: commands.iter().map(|c| c.to_string()).collect(),
    }
}

/// Variables that hide GPUs from frameworks, as the interpreter saw them.
fn hiding_vars(run: &Run) -> Vec<String> {
    [
        "CUDA_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
    ]
    .iter()
    .filter_map(|k| {
        let v = run.env.get(*k)?;
        let hides = v.trim().is_empty() || v.trim() == "-1" || v.trim() == "none";
        hides.then(|| format!("{k}={v:?} hides every GPU from the frameworks"))
    })
    .collect()
}

/// The torch build as words, and whether it can use `want`'s GPU.
fn torch_build(m: &ModuleRun) -> (String, Option<Vendor>) {
    match (&m.info.hip, &m.info.cuda) {
        (Some(h), _) => (format!("ROCm/HIP {h}"), Some(Vendor::Amd)),
        (None, Some(c)) => (format!("CUDA {c}"), Some(Vendor::Nvidia)),
        (None, None) => ("CPU only".into(), None),
    }
}

fn vendor_word(v: Vendor) -> &'static str {
    match v {
        Vendor::Amd => "AMD (ROCm)",
        Vendor::Nvidia => "NVIDIA (CUDA)",
    }
}

/// "6.4.43484-123" matches "6.4"; "6.40" does not.
pub fn version_prefix(have: &str, want: &str) -> bool {
    have == want
        || have
            .strip_prefix(want)
            .is_some_and(|rest| rest.starts_with(['.', '-', '+']))
}

/// What a module that stopped early said, or (time-out) the limit it hit
/// and the step it was in.
fn stopped_text(m: &ModuleRun, gated: bool, limit: Duration) -> String {
    if m.status == ModuleStatus::Timeout {
        format!(
            "{} of {} did not finish within {limit:?} and was killed (it was in {})",
            if gated { "the gates" } else { "import check" },
            m.module,
            m.phase.as_deref().unwrap_or("start-up")
        )
    } else {
        m.error.clone().unwrap_or_else(|| "no error text".into())
    }
}

/// Judges a run. `gated` are the modules whose gates were asked for;
/// `limit` the time each had.
pub fn judge(run: &Run, expect: &Expect, gated: &[String], limit: Duration) -> Judgement {
    let mut j = Judge::new(run, expect, limit);
    let modules = run
        .frameworks
        .iter()
        .map(|m| j.module(m, gated.contains(&m.module)))
        .collect();
    Judgement {
        modules,
        findings: j.findings.0,
        failure_texts: j.texts,
    }
}

/// A run being judged: what every module is held to, and what has been
/// found so far (findings merged by id, the failure texts for the signal
/// scan). Each step of a module's judging is one method.
struct Judge<'a> {
    run: &'a Run,
    expect: &'a Expect,
    limit: Duration,
    /// Variables that hide the GPUs, as the interpreter saw them.
    hide: Vec<String>,
    /// The GPU the gates must run on, in words (empty without one).
    gpu_words: String,
    findings: Findings,
    texts: Vec<(String, String)>,
}

impl<'a> Judge<'a> {
    fn new(run: &'a Run, expect: &'a Expect, limit: Duration) -> Self {
        let gpu_words = expect
            .gpu
            .as_ref()
            .map(|g| {
                if g.names.is_empty() {
                    vendor_word(g.vendor).to_string()
                } else {
                    g.names.join(", ")
                }
            })
            .unwrap_or_default();
        Judge {
            run,
            expect,
            limit,
            hide: hiding_vars(run),
            gpu_words,
            findings: Findings::default(),
            texts: Vec::new(),
        }
    }

    /// One module: its import, where it came from, the device it ran on,
    /// its gates, and how it ended.
    fn module(&mut self, m: &ModuleRun, is_gated: bool) -> ModuleJudged {
        let mut out = ModuleJudged {
            module: m.module.clone(),
            gates: Vec::new(),
            lost: None,
        };
        if !self.imported(m, is_gated, &mut out) {
            return out;
        }
        let mismatch = self.provenance(m);
        if !is_gated && m.status == ModuleStatus::Ok {
            let reason = if m.module == "triton" && !self.expect.triton_runs() {
                self.expect.triton_skip_reason()
            } else {
                "only imported (--no-smoke)".into()
            };
            let id = format!("{}.device", m.module);
            mark(&mut out.gates, id, GateStatus::Skip, Some(reason));
            return out;
        }
        let (fell_back, device_label) = self.device(m, mismatch, &mut out.gates);
        for g in &m.gates {
            let judged = self.gate(g, fell_back, &device_label);
            out.gates.push(judged);
        }
        // A module that stopped outside any gate (timeout, crash, an error
        // before its gates, e.g. triton without a GPU).
        if m.status != ModuleStatus::Ok {
            self.stopped(m, is_gated, mismatch, &mut out);
        }
        out
    }

    /// Step 1: did it import? False when the module's judging ends here
    /// (not installed, an import error, a hang or crash while importing).
    fn imported(&mut self, m: &ModuleRun, is_gated: bool, out: &mut ModuleJudged) -> bool {
        let name = m.module.as_str();
        let id = format!("{name}.import");
        let (run, expect) = (self.run, self.expect);
        match m.status {
            ModuleStatus::Missing if !expect.require_all => {
                let why = format!("{name} is not installed for {}", run.python.executable);
                mark(&mut out.gates, id, GateStatus::Skip, Some(why));
                false
            }
            ModuleStatus::Missing | ModuleStatus::Error if m.import_s.is_none() => {
                let err = m.error.clone().unwrap_or_else(|| "unknown error".into());
                mark(&mut out.gates, id, GateStatus::Fail, Some(err.clone()));
                self.texts.push((
                    format!("{name} import"),
                    format!("{err}\n{}", m.traceback.clone().unwrap_or_default()),
                ));
                self.findings.add(
                    "framework.import-failed",
                    "A framework does not import",
                    format!("{name} does not import with {} ({})", run.python.executable, expect.label),
                    err,
                    fix(
                        "The error above is Python's; for a greta env the previous env was left untouched. Rerun `greta install -v`, and report the error with `greta doctor --capture DIR`.",
                        &["greta install -v", "greta doctor --capture greta-capture"],
                    ),
                );
                false
            }
            ModuleStatus::Timeout | ModuleStatus::Crashed
                if matches!(m.phase.as_deref(), None | Some("start" | "import")) =>
            {
                let err = stopped_text(m, is_gated, self.limit);
                mark(&mut out.gates, id, GateStatus::Fail, Some(err.clone()));
                self.texts.push((format!("{name} import"), err.clone()));
                out.lost = Some(err.clone());
                self.findings.add(
                    "framework.gate-failed",
                    "A framework gate did not complete",
                    format!("{name} did not complete its import with {} ({})", run.python.executable, expect.label),
                    err,
                    fix(
                        "A hang or crash in a framework's import is usually its GPU runtime: run `greta doctor`, then the gates again with more time (`--timeout`).",
                        &["greta doctor", "greta smoke --profile frameworks --timeout 600"],
                    ),
                );
                false
            }
            _ => {
                mark(&mut out.gates, id, GateStatus::Pass, None);
                true
            }
        }
    }

    /// Step 2: imported from the env, and (torch) the build the env
    /// promises and the machine needs? True on a mismatch, which then
    /// explains a CPU fallback better than a finding of its own.
    fn provenance(&mut self, m: &ModuleRun) -> bool {
        let name = m.module.as_str();
        let expect = self.expect;
        let mut mismatch = false;
        if let (Some(root), Some(file)) = (&expect.env_root, &m.file) {
            if !std::path::Path::new(file).starts_with(root) {
                mismatch = true;
                self.findings.add(
                    "framework.mismatch",
                    "Framework built for another backend, or not the env's own",
                    format!("{name} is imported from outside the env {}", root.display()),
                    format!("{name} came from {file}"),
                    fix(
                        "Unset PYTHONPATH/PYTHONHOME and retry.",
                        &["unset PYTHONPATH PYTHONHOME"],
                    ),
                );
            }
        }
        if name != "torch" {
            return mismatch;
        }
        let (built, can) = torch_build(m);
        let promised = match (expect.backend, &expect.version) {
            (Some(Backend::Rocm), v) => m
                .info
                .hip
                .as_deref()
                .is_some_and(|h| v.as_deref().is_none_or(|v| version_prefix(h, v))),
            (Some(Backend::Cuda), v) => m
                .info
                .cuda
                .as_deref()
                .is_some_and(|c| v.as_deref().is_none_or(|v| version_prefix(c, v))),
            // PyPI's default torch is the CUDA build and runs on the
            // CPU; a ROCm build means the lock pinned the wrong index.
            (Some(Backend::Cpu), _) => m.info.hip.is_none(),
            (None, _) => true,
        };
        let machine_ok = match &expect.gpu {
            Some(g) => can == Some(g.vendor),
            None => true,
        };
        if promised && machine_ok {
            return mismatch;
        }
        let want = match (&expect.gpu, expect.backend, &expect.version) {
            (Some(g), _, _) if !machine_ok => {
                format!("a {} build for {}", vendor_word(g.vendor), self.gpu_words)
            }
            (_, Some(Backend::Cpu), _) => "a CPU-only or CUDA build (not ROCm)".into(),
            (_, Some(b), Some(v)) => format!("a {b} {v} build"),
            (_, Some(b), None) => format!("a {b} build"),
            _ => "a build for this machine".into(),
        };
        self.findings.add(
            "framework.mismatch",
            "Framework built for another backend, or not the env's own",
            format!("torch is built for {built}; {} needs {want}", expect.label),
            format!(
                "torch {} reports version.hip={:?} version.cuda={:?}",
                m.version.as_deref().unwrap_or("?"),
                m.info.hip,
                m.info.cuda
            ),
            fix(
                "Install the profile that matches this machine (greta picks it from the probe); for a greta env whose lock pins the wrong build, fix the lock (`greta lock check`).",
                &["greta install", "greta lock check"],
            ),
        );
        true
    }

    /// Step 3: where did it run? Marks `NAME.device`; returns whether it
    /// fell back to the CPU on a machine with a GPU, and the device in words.
    fn device(&mut self, m: &ModuleRun, mismatch: bool, gates: &mut Vec<Judged>) -> (bool, String) {
        let name = m.module.as_str();
        let seen = m.info.device.as_ref();
        let on_cpu = seen.is_some_and(|d| d.kind == DeviceKind::Cpu);
        let device_label = seen
            .map(|d| match d.kind {
                DeviceKind::Gpu => format!("GPU {}", d.name),
                DeviceKind::Cpu => "the CPU".to_string(),
            })
            .unwrap_or_else(|| "an unknown device".into());
        let fell_back = self.expect.gpu.is_some() && on_cpu;
        let id = format!("{name}.device");
        if fell_back {
            let why = seen
                .and_then(|d| d.reason.clone())
                .unwrap_or_else(|| "no GPU device was visible to it".into());
            let r = format!(
                "ran on the CPU although this machine has a GPU ({}): {why}",
                self.gpu_words
            );
            mark(gates, id, GateStatus::Fail, Some(r));
            self.texts.push((format!("{name} device"), why.clone()));
            if !mismatch {
                self.cpu_fallback(format!("{name}: {why}"));
            }
        } else if seen.is_some() {
            let r = format!("ran on {device_label}");
            mark(gates, id, GateStatus::Pass, Some(r));
        }
        (fell_back, device_label)
    }

    /// Step 4: one computation against its float64 reference.
    fn gate(&mut self, g: &GateRecord, fell_back: bool, device_label: &str) -> Judged {
        let tol = tolerance(&g.id);
        let ran_cpu = g.device.as_deref().is_some_and(|d| d.starts_with("cpu"));
        let (verdict, reason) = if let Some(e) = &g.error {
            self.texts.push((
                g.id.clone(),
                format!("{e}\n{}", g.traceback.clone().unwrap_or_default()),
            ));
            if g.finite {
                self.findings.add(
                    "framework.gate-failed",
                    "A framework gate did not complete",
                    format!("{} raised an error on {} ({}).", g.id, device_label, self.expect.label),
                    format!("{}: {e}", g.id),
                    fix(
                        "The error is the framework's; `greta doctor` explains GPU-stack causes (a finding below names a known one).",
                        &["greta doctor"],
                    ),
                );
            } else {
                self.wrong_result(&g.id, device_label, format!("{}: {e}", g.id));
            }
            (GateStatus::Fail, Some(e.clone()))
        } else {
            match g.rel_err {
                Some(r) if r <= tol && fell_back && ran_cpu => (
                    GateStatus::Fail,
                    Some("correct, but computed on the CPU, not the GPU".into()),
                ),
                Some(r) if r <= tol => (GateStatus::Pass, None),
                Some(r) => {
                    let msg = format!(
                        "rel_err {r:.3e} > {tol:e} (max abs err {:.3e}) against the float64 reference, {} repeat(s) on {}",
                        g.max_abs_err.unwrap_or(f64::NAN),
                        g.repeats,
                        g.device.as_deref().unwrap_or("?")
                    );
                    self.wrong_result(&g.id, device_label, format!("{}: {msg}", g.id));
                    (GateStatus::Fail, Some(msg))
                }
                None => (GateStatus::Fail, Some("no repeat completed".into())),
            }
        };
        Judged {
            id: g.id.clone(),
            verdict,
            reason,
            tolerance: Some(tol),
            record: Some(g.clone()),
        }
    }

    /// Step 5: a module that stopped outside any gate: the step it was in
    /// fails (triton without a GPU is a CPU fallback, said once).
    fn stopped(&mut self, m: &ModuleRun, is_gated: bool, mismatch: bool, out: &mut ModuleJudged) {
        let name = m.module.as_str();
        let err = stopped_text(m, is_gated, self.limit);
        let in_phase = m.phase.clone().unwrap_or_default();
        self.texts.push((
            format!("{name} run"),
            format!("{err}\n{}", m.traceback.clone().unwrap_or_default()),
        ));
        if matches!(m.status, ModuleStatus::Timeout | ModuleStatus::Crashed) {
            out.lost = Some(err.clone());
        }
        let triton_no_gpu = name == "triton"
            && self.expect.gpu.is_some()
            && m.info
                .device
                .as_ref()
                .is_some_and(|d| d.kind == DeviceKind::Cpu);
        if triton_no_gpu {
            // Already said by its device gate (the same reason).
            let said = out
                .gates
                .iter()
                .any(|g| g.id == "triton.device" && g.verdict == GateStatus::Fail);
            if !said {
                let id = "triton.device".to_string();
                mark(&mut out.gates, id, GateStatus::Fail, Some(err.clone()));
                if !mismatch {
                    self.cpu_fallback(format!("triton: {err}"));
                }
            }
            return;
        }
        let id = if in_phase.is_empty() || in_phase == "inspect" || in_phase == "device" {
            format!("{name}.device")
        } else {
            in_phase
        };
        out.gates.retain(|g| g.id != id);
        mark(&mut out.gates, id, GateStatus::Fail, Some(err.clone()));
        self.findings.add(
            "framework.gate-failed",
            "A framework gate did not complete",
            format!("{name} stopped early with {} ({}).", self.run.python.executable, self.expect.label),
            format!("{name}: {err}"),
            fix(
                "A hang or crash in a framework is usually its GPU runtime or a kernel built for another target: `greta doctor` explains the GPU stack (a finding below names a known cause).",
                &["greta doctor"],
            ),
        );
    }

    /// `framework.cpu-fallback`, its evidence naming any variable that hides
    /// the GPUs.
    fn cpu_fallback(&mut self, mut evidence: String) {
        if !self.hide.is_empty() {
            evidence.push_str(&format!(" ({})", self.hide.join("; ")));
        }
        let fix_it = if self.hide.is_empty() {
            fix(
                "Check that this user can reach the GPU and that the framework was built for it: `greta doctor` explains the GPU stack; `greta install` puts a matching build in place.",
                &["greta doctor", "greta install"],
            )
        } else {
            fix(
                "Unset the variable that hides the GPUs (or list the GPU in it), then run the gates again.",
                &["unset CUDA_VISIBLE_DEVICES HIP_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES", "greta smoke --profile frameworks"],
            )
        };
        self.findings.add(
            "framework.cpu-fallback",
            "A framework ran on the CPU on a machine with a GPU",
            format!(
                "The frameworks ran on the CPU, not on {} ({}).",
                self.gpu_words, self.expect.label
            ),
            evidence,
            fix_it,
        );
    }

    /// `framework.wrong-result` for gate `id` on `device_label`.
    fn wrong_result(&mut self, id: &str, device_label: &str, evidence: String) {
        self.findings.add(
            "framework.wrong-result",
            "A framework computed a wrong result",
            format!(
                "{id} gave a result outside its tolerance on {device_label} ({}).",
                self.expect.label
            ),
            evidence,
            wrong_fix(),
        );
    }
}

fn mark(gates: &mut Vec<Judged>, id: String, verdict: GateStatus, reason: Option<String>) {
    gates.push(Judged {
        id,
        verdict,
        reason,
        tolerance: None,
        record: None,
    })
}

fn wrong_fix() -> Fix {
    fix(
        "A wrong result with no error is the worst failure: do not use this env for work. Common causes are kernels run for another target (HSA_OVERRIDE_GFX_VERSION), a driver or runtime bug, or unstable clocks; `greta doctor` checks the first two.",
        &["greta doctor", "greta smoke --profile frameworks --seed 1"],
    )
}

/// Findings of the doctor's rules that the failure texts raise on this
/// machine (e.g. `rocm.gfx-unsupported` from `hipErrorNoBinaryForGpu`), and
/// `rocm.hsa-override` when an override is set (a likely cause of faults and
/// wrong results), and `framework.device-wheel-missing` when the env's torch
/// on TheRock's ROCm lacks this GPU's device wheel (hipErrorInvalidImage).
/// `facts` is the probe's view of the machine, with the env's frameworks.
pub fn doctor_findings(facts: &greta_probe::Facts, texts: &[(String, String)]) -> Vec<Finding> {
    use greta_probe::diagnose;
    let before: Vec<String> = diagnose(facts).into_iter().map(|f| f.id).collect();
    let mut f = facts.clone();
    for (source, text) in texts {
        f.signals.extend(
            greta_probe::scan_signals(text, source)
                .into_iter()
                .filter(|s| !greta_probe::is_noise_signal(&s.id)),
        );
    }
    diagnose(&f)
        .into_iter()
        // The override and a missing device wheel are about this env on this
        // machine: a likely cause whether or not the texts name one.
        .filter(|d| {
            !before.contains(&d.id)
                || d.id == "rocm.hsa-override"
                || d.id == "framework.device-wheel-missing"
        })
        .collect()
}

#[cfg(test)]
mod tests;
