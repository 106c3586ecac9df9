//! One gate session from start to judgement, shared by `greta install`
//! (its post-install check) and `greta smoke --profile frameworks`.

use super::judge::{self, GpuWant, Judgement, Vendor};
use super::{Request, Run, Started};
use greta_probe::Facts;
use greta_vocab::{Finding, Fix, Severity};
use std::time::Duration;

/// A finished session: the run (or why there is none), what the
/// interpreter printed on stderr, and the judgement with every finding.
pub struct Checked {
    /// What was asked (its seed, limits and expectation are reported).
    pub request: Request,
    pub run: Option<Run>,
    pub stderr: String,
    pub judged: Judgement,
}

/// The probe's view of this machine that the gates need: GPUs (PCI, KFD),
/// device nodes and ROCm (with `HSA_OVERRIDE_GFX_VERSION`). No Vulkan, no
/// Python: those decide nothing here.
pub fn machine_facts() -> Facts {
    greta_probe::Probe::new(&greta_probe::Root::live())
        .scope(greta_probe::Scope::Compute)
        .run()
        .facts
}

/// The GPU the gates must use: an AMD GPU (ROCm), else an NVIDIA one.
pub fn gpu_want(f: &Facts) -> Option<GpuWant> {
    use greta_probe::Vendor as V;
    for (v, want) in [(V::Amd, Vendor::Amd), (V::Nvidia, Vendor::Nvidia)] {
        let names: Vec<String> = f
            .gpus
            .iter()
            .filter(|g| g.vendor == v)
            .map(|g| g.label(|| "unnamed GPU".into()))
            .collect();
        if !names.is_empty() {
            return Some(GpuWant {
                vendor: want,
                names,
            });
        }
    }
    // A container may hide PCI sysfs; NVIDIA's driver still lists its GPUs.
    let names = nvidia_proc_gpus(std::path::Path::new("/proc/driver/nvidia/gpus"));
    (!names.is_empty()).then_some(GpuWant {
        vendor: Vendor::Nvidia,
        names,
    })
}

/// `Model:` of each `/proc/driver/nvidia/gpus/*/information` (each read
/// capped at 64 KiB).
fn nvidia_proc_gpus(dir: &std::path::Path) -> Vec<String> {
    use std::io::Read;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut out = Vec::new();
    for e in rd.flatten().take(64) {
        let mut text = String::new();
        let read = std::fs::File::open(e.path().join("information"))
            .and_then(|f| f.take(64 << 10).read_to_string(&mut text));
        if read.is_err() {
            continue;
        }
        let model = text
            .lines()
            .find_map(|l| l.strip_prefix("Model:"))
            .map(|m| m.trim().to_string())
            .unwrap_or_else(|| "NVIDIA GPU".into());
        out.push(model);
    }
    out
}

/// Lets the started interpreter run, judges what it reports, and, when
/// something failed, adds the doctor's findings that the failure texts
/// raise on this machine (probed only then; for a greta env, with the
/// framework packages it holds, so that a torch on TheRock's ROCm without
/// this GPU's device wheel gets its own finding).
pub(crate) fn finish(started: Started) -> Checked {
    let (request, run, stderr) = started.wait();
    let expect = &request.expect;
    let gated = request.gated();
    let (run, mut judged) = match run {
        Ok(r) => {
            let j = judge::judge(&r, expect, &gated, request.timeout);
            (Some(r), j)
        }
        Err(e) => {
            let msg = format!("{e:#}");
            let j = Judgement {
                modules: vec![],
                findings: vec![Finding {
                    id: "framework.gate-failed".into(),
                    severity: Severity::Fail,
                    title: "A framework gate did not complete".into(),
                    message: format!(
                        "The gate runner gave no result ({}).",
                        expect.label
                    ),
                    evidence: vec![msg.clone()],
                    fix: Fix {
                        text: "A hang or crash at start-up is usually the interpreter or a framework's GPU runtime: `greta doctor` explains the GPU stack.".into(),
                        commands: vec!["greta doctor".into()],
                    },
                }],
                failure_texts: vec![("gate runner".into(), msg)],
            };
            (None, j)
        }
    };
    if run.is_none() || judged.failed() {
        let mut texts = judged.failure_texts.clone();
        texts.push(("stderr".into(), stderr.clone()));
        let mut facts = machine_facts();
        if let Some(root) = &expect.env_root {
            facts.python.frameworks.extend(greta_probe::env_frameworks(
                &greta_probe::Root::live(),
                &root.display().to_string(),
            ));
        }
        let extra = judge::doctor_findings(&facts, &texts);
        for f in extra {
            if !judged.findings.iter().any(|x| x.id == f.id) {
                judged.findings.push(f);
            }
        }
    }
    Checked {
        request,
        run,
        stderr,
        judged,
    }
}

/// The limit each module gets by default (import, first GPU call, compiles).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
