//! The probe's front door: [`Probe::new`]`(root).scope(..).run()`.
//!
//! Callers say *what machine* (a [`Root`]: live or a captured tree), *how
//! much of it* ([`Scope`]) and hand in what only they know (where greta's
//! envs live, how to run the HIP check in a child of greta) as plain typed
//! input; the probe decides which collectors run, in which order, and how
//! an external check is recorded into a snapshot and replayed from one. So
//! no caller assembles collectors by hand, and a new collector changes one
//! place.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::capture::{self, CaptureError, Captured};
use crate::collect::{self, CheckRun};
use crate::facts::{Facts, Signal};
use crate::from::FromRun;
use crate::live;
use crate::report::{self, CheckLine, CheckStatus, Report};
use crate::root::{CmdStatus, Root};
use crate::rules::{self, Finding, Severity};
use greta_vocab::VkFamily;

/// How much of the machine one run reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every check of [`CHECKS`] (doctor, `greta lock select`).
    #[default]
    Full,
    /// What choosing an install profile depends on, a few milliseconds of
    /// file reads on a live machine: PCI (GPUs, kernel driver), KFD (gfx
    /// targets), device nodes and ROCm, plus the kinds of the Vulkan drivers
    /// whose ICD manifests the loader would find (read from the manifests,
    /// without loading the drivers). No scan of Python interpreters, and no
    /// Vulkan enumeration (loading every driver, 10-100 ms), except that a
    /// GPU visible only through Vulkan (WSL2, no PCI sysfs) must still be
    /// seen: when the profile is not `forced`, nothing was found on
    /// PCI/KFD/ROCm and a GPU device node exists, Vulkan is enumerated too.
    /// A captured sysroot is replayed whole ([`Scope::Full`]): no live cost,
    /// and a capture may hold only the Vulkan side.
    Profile { forced: bool },
    /// GPUs (PCI, KFD), device nodes and ROCm (with
    /// `HSA_OVERRIDE_GFX_VERSION`): what the framework gates judge with.
    Compute,
    /// GPUs (PCI, KFD) and, unless a gfx94x GPU is there (no Vulkan compute
    /// on MI300), the Vulkan loader, ICDs and devices: what `greta smoke`
    /// chooses its backend from.
    Devices,
}

/// Where greta keeps its envs, given the machine's environment (a lookup
/// of one variable). The installer owns that rule (it creates the envs);
/// the probe only applies it to the machine it reads, live or captured,
/// to find the frameworks installed there.
pub type EnvsAt = fn(&dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf>;

/// One run of the HIP device listing (`greta __gpu devices --backend hip`),
/// which only the `greta` binary can start (this crate never loads HIP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HipRun {
    /// It was not asked; why (e.g. greta cannot find its own executable).
    NotAsked(String),
    /// It ran and exited with `code`.
    Exited {
        code: i32,
        /// `greta.gpu-devices/v1` JSON.
        stdout: String,
        stderr: String,
    },
    /// It could not be started, was killed, or gave no answer in time.
    Failed(String),
}

/// A HIP check as the caller runs it: how it ended and how long it took.
type HipCheckFn = Box<dyn FnOnce() -> (HipRun, Duration) + Send>;

/// The front door. See the module docs.
pub struct Probe<'r> {
    root: &'r Root,
    scope: Scope,
    envs_at: Option<EnvsAt>,
    hip: Option<HipCheckFn>,
}

/// What one run found: the facts and one line per check that ran.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub facts: Facts,
    pub checks: Vec<CheckRun>,
    /// `live` or `sysroot` (the report's `mode`).
    pub mode: &'static str,
    /// Inputs that exist but could not be used (a capture file that is a
    /// FIFO, a directory, unreadable or malformed): what they hold is
    /// unknown, and the report says so in a note naming each.
    pub unreadable: Vec<crate::root::Unreadable>,
}

impl<'r> Probe<'r> {
    /// A probe of `root` (`Root::live()` or `Root::sysroot(dir)`), full
    /// scope. Borrowed, so a caller can still look at what a recording
    /// root saw.
    pub fn new(root: &'r Root) -> Probe<'r> {
        Probe {
            root,
            scope: Scope::Full,
            envs_at: None,
            hip: None,
        }
    }

    /// How much to read (default [`Scope::Full`]): install and smoke
    /// need a few milliseconds of it, doctor all of it.
    pub fn scope(mut self, scope: Scope) -> Probe<'r> {
        self.scope = scope;
        self
    }

    /// Where greta's envs live (without it, no greta env is looked into).
    pub fn envs_at(mut self, at: EnvsAt) -> Probe<'r> {
        self.envs_at = Some(at);
        self
    }

    /// Adds the `hip-runtime` check ([`Scope::Full`] only): `run` is called
    /// on a live machine; a snapshot replays what a capture recorded.
    pub fn hip_check(
        mut self,
        run: impl FnOnce() -> (HipRun, Duration) + Send + 'static,
    ) -> Probe<'r> {
        self.hip = Some(Box::new(run));
        self
    }

    /// Reads the machine.
    pub fn run(self) -> Outcome {
        let mode = if self.root.is_live() {
            "live"
        } else {
            "sysroot"
        };
        let full = self.scope == Scope::Full;
        let (root, scope, envs_at) = (self.root, self.scope, self.envs_at);
        let replay_hip = full && self.hip.is_some() && !root.is_live();
        // The live HIP check is a child process that needs nothing the
        // other checks find: it runs beside them, and its line and facts
        // are applied last, as before.
        let (mut facts, mut checks, hip) = std::thread::scope(|s| {
            let live_hip = match self.hip {
                Some(run) if full && root.is_live() => Some(s.spawn(run)),
                _ => None,
            };
            let (facts, checks) = collect_scope(root, scope, envs_at);
            let hip = match live_hip {
                Some(h) => Some(match h.join() {
                    Ok(r) => HipCheck::from_run(r),
                    Err(_) => HipCheck::from_run((
                        HipRun::Failed("the HIP check's thread panicked".into()),
                        Duration::ZERO,
                    )),
                }),
                None if replay_hip => {
                    crate::root::reading_for(Some("hip-runtime"), || HipCheck::replay(root))
                }
                None => None,
            };
            (facts, checks, hip)
        });
        if let Some(hip) = hip {
            checks.push(hip.apply(&mut facts));
        }
        Outcome {
            facts,
            checks,
            mode,
            unreadable: self.root.unreadable(),
        }
    }

    /// Reads this live machine ([`Scope::Full`]) and writes a replayable
    /// snapshot of everything read into `dir` (which must not exist, or be
    /// empty), the HIP check's answer included; `Root::sysroot(dir)`
    /// replays it.
    pub fn capture(self, dir: impl AsRef<Path>) -> Result<(Outcome, Captured), CaptureError> {
        if !self.root.is_live() {
            return Err(CaptureError::NotLive);
        }
        let envs_at = self.envs_at;
        let mut c = capture::capture_with(dir.as_ref(), |root| {
            collect_scope(root, Scope::Full, envs_at)
        })?;
        if let Some(run) = self.hip {
            let hip = HipCheck::from_run(run());
            hip.record(&c.dir).map_err(|source| CaptureError::Io {
                path: c.dir.clone(),
                source,
            })?;
            c.files += 2;
            c.checks.push(hip.apply(&mut c.facts));
        }
        let outcome = Outcome {
            facts: c.facts.clone(),
            checks: c.checks.clone(),
            mode: "live",
            unreadable: Vec::new(),
        };
        Ok((outcome, c))
    }
}

impl Outcome {
    /// The doctor report: every finding the facts raise, each check's
    /// glyph from the worst finding it owns.
    pub fn into_report(self, notes: Vec<String>) -> Report {
        self.into_report_for(notes, &[])
    }

    /// [`Outcome::into_report`], with the lock profiles a fix may name.
    pub fn into_report_for(
        self,
        mut notes: Vec<String>,
        profiles: &[rules::ProfileTargets],
    ) -> Report {
        let findings = rules::diagnose_for(&self.facts, profiles);
        notes.extend(crate::hip_order::note(&self.facts));
        notes.extend(crate::from::cut_note(
            &self.facts,
            "a captured command output",
        ));
        let mut checks = check_lines(&self.checks, &findings);
        let mut said = std::collections::HashSet::new();
        let mut unsaid = 0usize;
        for u in &self.unreadable {
            // One note per path and reason, however many checks met it,
            // and a bounded number of them.
            if !said.insert((&u.file, &u.why)) {
                // Said already.
            } else if said.len() <= MAX_UNREADABLE_NOTES {
                notes.push(format!(
                    "{u}; what it holds is unknown, so doctor concludes nothing from it"
                ));
            } else {
                unsaid += 1;
            }
            // The check that reads it cannot pass on what it could not read.
            let id = u.check.unwrap_or_else(|| check_reading(&u.file));
            for c in checks.iter_mut().filter(|c| c.id == id) {
                if c.status == CheckStatus::Pass {
                    c.status = CheckStatus::Warn;
                }
            }
        }
        if unsaid > 0 {
            notes.push(format!(
                "{unsaid} more paths could not be read (not listed)"
            ));
        }
        let report = Report::new(self.mode, checks, self.facts, findings, notes);
        if self.unreadable.is_empty() {
            report
        } else {
            report.undecided()
        }
    }
}

impl FromRun {
    /// The doctor report of pasted tool output: one check line per file.
    pub fn into_report(self) -> Report {
        self.into_report_for(&[])
    }

    /// [`FromRun::into_report`], with the lock profiles a fix may name.
    pub fn into_report_for(self, profiles: &[rules::ProfileTargets]) -> Report {
        let findings = rules::diagnose_for(&self.facts, profiles);
        let per_file = &self.per_file;
        let raised_by = |i: usize| -> Vec<String> {
            per_file
                .get(i)
                .and_then(Option::as_ref)
                .map(|f| {
                    rules::diagnose_for(f, profiles)
                        .into_iter()
                        .map(|x| x.id)
                        .collect()
                })
                .unwrap_or_default()
        };
        let (checks, mut notes) = report::file_checks(&self.files, &findings, &raised_by);
        notes.extend(crate::hip_order::note(&self.facts));
        Report::new("from", checks, self.facts, findings, notes)
    }
}

/// Notes naming unreadable sysroot paths, at most (a tree spoiled in
/// thousands of places is said in one more line).
const MAX_UNREADABLE_NOTES: usize = 32;

/// The check that reads a capture file (`.greta/...`), for paths met
/// outside any check.
fn check_reading(file: &str) -> &'static str {
    match file {
        ".greta/id" | ".greta/dev-nodes" => "device-nodes",
        f if f.starts_with(".greta/cmd/rocminfo") || f.starts_with(".greta/cmd/hipconfig") => {
            "rocm"
        }
        f if f.starts_with(".greta/cmd/vulkaninfo")
            || f.starts_with(".greta/cmd/greta-vulkan-devices") =>
        {
            "vulkan-devices"
        }
        f if f.starts_with(".greta/cmd/greta-icd-load") => "vulkan-icds",
        f if f.starts_with(".greta/cmd/python") => "python",
        _ => "",
    }
}

/// Runs the collectors `scope` names on `root`.
fn collect_scope(root: &Root, scope: Scope, envs_at: Option<EnvsAt>) -> (Facts, Vec<CheckRun>) {
    let env_dirs = env_dirs(root, envs_at);
    match scope {
        Scope::Full => collect::collect(root, &env_dirs),
        Scope::Profile { .. } if !root.is_live() => collect::collect(root, &env_dirs),
        Scope::Profile { forced } => (profile_facts(root, forced), Vec::new()),
        Scope::Compute => (compute_facts(root), Vec::new()),
        Scope::Devices => (device_facts(root), Vec::new()),
    }
}

/// The installer's env directory on this machine, as the path the probe reads.
fn env_dirs(root: &Root, envs_at: Option<EnvsAt>) -> Vec<String> {
    let Some(at) = envs_at else {
        return Vec::new();
    };
    let lookup = |k: &str| root.env_nonempty(k).map(OsString::from);
    at(&lookup)
        .and_then(|p| p.to_str().map(|s| s.trim_end_matches('/').to_string()))
        .filter(|s| !s.is_empty())
        .into_iter()
        .collect()
}

fn compute_facts(root: &Root) -> Facts {
    let mut f = Facts {
        sources: vec![root.source_label()],
        ..Default::default()
    };
    live::pci::collect(root, &mut f);
    live::kfd::collect(root, &mut f);
    live::nodes::collect(root, &mut f);
    live::rocm::collect(root, &mut f, collect::default_parsers().rocminfo);
    f
}

fn profile_facts(root: &Root, forced: bool) -> Facts {
    let mut f = compute_facts(root);
    f.vulkan.drivers = vulkan_driver_kinds(root);
    let found_gpu = !f.gpus.is_empty() || !f.rocm.agent_gfx.is_empty();
    // A GPU a Vulkan driver can reach on Linux has a device node (DRM
    // render node; /dev/nvidia* for NVIDIA's driver; /dev/dxg under
    // WSL2); without one only software devices (lavapipe) could be
    // enumerated, and those choose nothing.
    let gpu_node = f
        .device_nodes
        .iter()
        .any(|n| n.exists && n.path.starts_with("/dev/dri/renderD"))
        || ["/dev/dxg", "/dev/nvidiactl", "/dev/nvidia0"]
            .iter()
            .any(|p| root.exists(p));
    if !forced && !found_gpu && gpu_node {
        // The enumeration needs to know the loader is there (what the
        // doctor's ICD check finds first; its loading of each driver
        // library is not needed for that).
        let dirs = live::icd::lib_dirs(root);
        f.vulkan.loader = live::icd::find_lib(root, &dirs, "libvulkan.so.1");
        live::vkdev::collect(root, &mut f, collect::default_parsers().vulkaninfo);
    }
    f
}

/// The kinds of the Vulkan drivers whose ICD manifests the loader would
/// find, read from the manifests alone: the doctor also loads each driver
/// library, which costs tens of milliseconds and decides no profile.
fn vulkan_driver_kinds(root: &Root) -> Vec<VkFamily> {
    use live::icd;
    let mut kinds = Vec::new();
    for (manifest, _) in icd::search_manifests(root) {
        let lib = root
            .read(&manifest)
            .ok()
            .and_then(|t| icd::parse_manifest(&t).ok())
            .map(|(lib, _)| lib)
            .unwrap_or_default();
        let k = icd::classify(&manifest, &lib);
        if k != VkFamily::Other && !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds
}

fn device_facts(root: &Root) -> Facts {
    let mut f = Facts::default();
    live::pci::collect(root, &mut f);
    live::kfd::collect(root, &mut f);
    let gfx94x = f.gpus.iter().any(|g| {
        g.vendor == crate::facts::Vendor::Amd
            && g.gfx.as_deref().is_some_and(|x| x.starts_with("gfx94"))
    });
    if !gfx94x {
        live::icd::collect(root, &mut f);
        live::vkdev::collect(root, &mut f, None);
    }
    f
}

/// The worst finding a check owns decides its glyph.
fn status_of(id: &str, findings: &[Finding]) -> CheckStatus {
    let worst = findings
        .iter()
        .filter(|f| crate::rules::check_of(&f.id) == Some(id))
        .map(|f| f.severity)
        .max();
    match worst {
        Some(Severity::Fail) => CheckStatus::Fail,
        Some(Severity::Warn) => CheckStatus::Warn,
        _ => CheckStatus::Pass,
    }
}

fn check_lines(runs: &[CheckRun], findings: &[Finding]) -> Vec<CheckLine> {
    runs.iter()
        .map(|r| CheckLine {
            id: r.id.clone(),
            title: r.title.clone(),
            status: status_of(&r.id, findings),
            duration_ms: (r.duration.as_secs_f64() * 10_000.0).round() / 10.0,
            summary: r.summary.clone(),
        })
        .collect()
}

/// Capture name of the HIP check's worker output (`.greta/cmd/<name>.txt`
/// and `.status` in a snapshot), so `--sysroot` replays it.
const HIP_CMD: &str = "greta-hip-worker-devices";

/// One HIP check: how the worker run ended, live or replayed.
struct HipCheck {
    duration: Duration,
    run: HipRun,
}

/// One finished run of the HIP device listing (live or replayed).
struct DevicesOutput {
    code: i32,
    stdout: String,
    stderr: String,
}

impl HipCheck {
    fn from_run((run, duration): (HipRun, Duration)) -> HipCheck {
        HipCheck { duration, run }
    }

    /// The HIP check of a snapshot, when it has one (older ones do not).
    fn replay(root: &Root) -> Option<HipCheck> {
        let out = root.run(HIP_CMD, "greta-hip-worker", &["devices"]);
        let run = match out.status {
            CmdStatus::NotFound if out.text.is_empty() => return None,
            CmdStatus::NotFound => HipRun::NotAsked(out.text),
            CmdStatus::Exited(code) => HipRun::Exited {
                code,
                stdout: out.text,
                // Not kept: not needed to judge.
                stderr: String::new(),
            },
            CmdStatus::TimedOut => HipRun::Failed("no answer in time".into()),
            CmdStatus::Error(e) | CmdStatus::Unknown(e) => HipRun::Failed(e),
        };
        Some(HipCheck {
            duration: Duration::ZERO,
            run,
        })
    }

    /// Writes it into a snapshot, beside what the probe captured: the
    /// worker's stdout (or why it was not asked) as `.txt`, and a `.status`
    /// line `exit N`, `not-found` (not asked) or `error ...` (it could not
    /// be run or gave no answer in time), as every captured command has.
    fn record(&self, snapshot: &Path) -> std::io::Result<()> {
        let (status, text) = match &self.run {
            HipRun::NotAsked(why) => ("not-found".to_string(), why.as_str()),
            HipRun::Exited { code, stdout, .. } => (format!("exit {code}"), stdout.as_str()),
            HipRun::Failed(why) => (format!("error {why}"), ""),
        };
        let dir = snapshot.join(".greta/cmd");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format!("{HIP_CMD}.txt")), text)?;
        std::fs::write(
            dir.join(format!("{HIP_CMD}.status")),
            format!("{}\n", status.replace('\n', " ")),
        )
    }

    /// Its check line; "no HIP device found" becomes the `hip-no-device`
    /// signal, which the rules turn into `rocm.runtime-no-device` only where
    /// an AMD GPU is known.
    fn apply(self, facts: &mut Facts) -> CheckRun {
        let summary = match self.run {
            HipRun::NotAsked(why) => format!("HIP not asked: {why}"),
            HipRun::Exited {
                code,
                stdout,
                stderr,
            } => {
                let (summary, signal) = judge_devices(DevicesOutput {
                    code,
                    stdout,
                    stderr,
                });
                facts.signals.extend(signal);
                summary
            }
            HipRun::Failed(why) => format!("HIP device listing: {why}"),
        };
        CheckRun {
            id: "hip-runtime".into(),
            title: "HIP runtime".into(),
            duration: self.duration,
            summary,
        }
    }
}

/// What the doctor reads of a device listing (`greta.gpu-devices/v1`, which
/// the listing child writes with the runtime's whole device record;
/// snapshots taken with the old worker hold `greta.hip-devices/v1`, the
/// same fields). Every field is optional: an old or damaged listing is
/// read as far as it goes.
#[derive(Debug, Default, serde::Deserialize)]
struct Listing {
    #[serde(default)]
    devices: Vec<ListedDevice>,
    #[serde(default)]
    error: Option<String>,
    /// What kind of failure `error` is. Captures recorded before the
    /// listing said so have only the words, read as they always were.
    #[serde(default)]
    error_kind: Option<greta_vocab::DevicesError>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct ListedDevice {
    #[serde(default)]
    name: Option<String>,
    /// The gfx target for HIP.
    #[serde(default)]
    driver_info: Option<String>,
}

/// Reads one HIP device listing.
fn judge_devices(out: DevicesOutput) -> (String, Option<Signal>) {
    let v: Listing = serde_json::from_str(out.stdout.trim()).unwrap_or_default();
    let error = v.error;
    let no_device = match v.error_kind {
        Some(k) => k == greta_vocab::DevicesError::NoDevice,
        None => error
            .as_deref()
            .is_some_and(|e| e.starts_with("no HIP device found")),
    };
    let devices: Vec<String> = v
        .devices
        .iter()
        .map(|x| {
            let name = x.name.as_deref().unwrap_or("?");
            match x.driver_info.as_deref() {
                Some(arch) if !arch.is_empty() => format!("{name} ({arch})"),
                _ => name.to_string(),
            }
        })
        .collect();
    match (out.code, error) {
        (0, None) if !devices.is_empty() => (
            format!("{} HIP device(s): {}", devices.len(), devices.join(", ")),
            None,
        ),
        (_, Some(e)) if no_device => {
            let signal = Signal {
                id: "hip-no-device".into(),
                source: "greta __gpu devices --backend hip".into(),
                line: None,
                text: e.clone(),
            };
            (e, Some(signal))
        }
        (code, error) => {
            let why = error
                .or_else(|| {
                    out.stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(str::to_string)
                })
                .unwrap_or_else(|| "no output".into());
            (format!("HIP device listing exited {code}: {why}"), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, stdout: &str, stderr: &str) -> DevicesOutput {
        DevicesOutput {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn device_lists_become_summaries_and_no_device_a_signal() {
        let ok = r#"{"schema":"greta.hip-devices/v1","devices":[{"name":"AMD Instinct MI300X","driver_info":"gfx942:sramecc+:xnack-"}],"hipcc":{},"error":null}"#;
        let (s, sig) = judge_devices(out(0, ok, ""));
        assert_eq!(
            s,
            "1 HIP device(s): AMD Instinct MI300X (gfx942:sramecc+:xnack-)"
        );
        assert!(sig.is_none());

        let reason = "no HIP device found: hipGetDeviceCount returned hipErrorNoDevice (100); the amdgpu kernel driver's compute interface (KFD) is absent";
        let none = serde_json::json!({"schema":"greta.hip-devices/v1","devices":[],"hipcc":{},"error":reason}).to_string();
        let (s, sig) = judge_devices(out(2, &none, "greta-hip-worker: x"));
        assert_eq!(s, reason);
        let sig = sig.expect("signal");
        assert_eq!(
            (sig.id.as_str(), sig.text.as_str()),
            ("hip-no-device", reason)
        );

        // With an AMD GPU known, the signal is the contract finding.
        let facts = Facts {
            gpus: vec![crate::facts::Gpu {
                vendor: crate::facts::Vendor::Amd,
                name: "AMD Instinct MI300X VF".into(),
                gfx: Some("gfx942".into()),
                ..Default::default()
            }],
            signals: vec![sig],
            ..Facts::default()
        };
        let findings = rules::diagnose(&facts);
        assert!(
            findings.iter().any(|f| f.id == "rocm.runtime-no-device"),
            "{findings:?}"
        );
        let runs = [CheckRun {
            id: "hip-runtime".into(),
            title: "HIP runtime".into(),
            duration: Duration::ZERO,
            summary: String::new(),
        }];
        assert_eq!(check_lines(&runs, &findings)[0].status, CheckStatus::Fail);

        // A listing that cannot start is reported, not a finding.
        let (s, sig) = judge_devices(out(
            127,
            "",
            "error while loading shared libraries: libamdhip64.so.5: cannot open shared object file\n",
        ));
        assert!(
            s.contains("HIP device listing exited 127") && s.contains("libamdhip64.so.5"),
            "{s}"
        );
        assert!(sig.is_none());
    }

    #[test]
    fn a_recorded_check_replays_to_the_same_line_and_signal() {
        let reason = "no HIP device found: hipGetDeviceCount returned hipErrorNoDevice (100)";
        let none = serde_json::json!({"schema":"greta.hip-devices/v1","devices":[],"error":reason})
            .to_string();
        let cases = [
            (
                HipRun::Exited {
                    code: 2,
                    stdout: none.clone(),
                    stderr: String::new(),
                },
                reason.to_string(),
                true,
            ),
            (
                HipRun::NotAsked("greta cannot find its own executable".into()),
                "HIP not asked: greta cannot find its own executable".to_string(),
                false,
            ),
            (
                HipRun::Failed("running /w: no answer within 30 s; killed".into()),
                "HIP device listing: running /w: no answer within 30 s; killed".to_string(),
                false,
            ),
        ];
        for (run, summary, signal) in cases {
            let snap = tempfile::tempdir().unwrap();
            let live = HipCheck::from_run((run.clone(), Duration::ZERO));
            live.record(snap.path()).unwrap();
            let root = Root::sysroot(snap.path()).unwrap();
            let replayed = HipCheck::replay(&root).expect("recorded");
            // The snapshot keeps the run as every captured command is kept:
            // the status line, and the output (or why it was not asked).
            let status =
                std::fs::read_to_string(snap.path().join(format!(".greta/cmd/{HIP_CMD}.status")))
                    .unwrap();
            match &run {
                HipRun::Exited { code, stdout, .. } => {
                    assert_eq!(status, format!("exit {code}\n"));
                    let back = HipRun::Exited {
                        code: *code,
                        stdout: stdout.clone(),
                        stderr: String::new(),
                    };
                    assert_eq!(replayed.run, back);
                }
                HipRun::NotAsked(_) => {
                    assert_eq!(status, "not-found\n");
                    assert_eq!(replayed.run, run);
                }
                HipRun::Failed(why) => {
                    assert_eq!(status, format!("error {why}\n"));
                    assert_eq!(replayed.run, run);
                }
            }
            let (mut a, mut b) = (Facts::default(), Facts::default());
            let (la, lb) = (live.apply(&mut a), replayed.apply(&mut b));
            assert_eq!(la.summary, summary);
            assert_eq!((&la.id, &la.summary), (&lb.id, &lb.summary));
            assert_eq!(a, b);
            assert_eq!(a.signals.len(), usize::from(signal), "{run:?}");
        }
        // A snapshot without it (older captures) has no HIP line.
        let empty = tempfile::tempdir().unwrap();
        let root = Root::sysroot(empty.path()).unwrap();
        assert!(HipCheck::replay(&root).is_none());
    }

    /// The signal follows the listing's typed `error_kind`, not
    /// the words of its message.
    #[test]
    fn the_error_kind_decides_the_no_device_signal() {
        let answer = |kind: &str, error: &str| {
            serde_json::json!({"schema": "greta.gpu-devices/v1", "backend": "hip", "devices": [],
                               "error": error, "no_device": true, "error_kind": kind})
            .to_string()
        };
        let out = |stdout: String| DevicesOutput {
            code: 2,
            stdout,
            stderr: String::new(),
        };
        let (s, sig) = judge_devices(out(answer("no_device", "HIP: nothing here")));
        assert_eq!(s, "HIP: nothing here");
        assert_eq!(sig.expect("signal").id, "hip-no-device");
        // The library could not be loaded: not a machine without a device,
        // whatever the message says.
        let (s, sig) = judge_devices(out(answer(
            "loader_missing",
            "no HIP device found: libamdhip64.so not found",
        )));
        assert!(s.starts_with("HIP device listing exited 2: "), "{s}");
        assert!(sig.is_none());
    }
}
