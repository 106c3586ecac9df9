//! `greta doctor`: finds the GPU stack and explains every problem with a fix.
//!
//! Three inputs, one engine: the live machine (default), a captured tree
//! (`--sysroot DIR`, written by `--capture DIR`), or pasted tool output
//! (`--from FILE...`). All produce the same facts, judged by the same rules
//! (probe/rules.toml). Exit 0: no `fail` finding; 1: at least one; 2: doctor
//! itself could not run (bad flags, unreadable sysroot, missing --from file).

use crate::cmd::gpu::DevicesError;
use crate::exit::Exit;
use anyhow::Context;
use greta_probe::collect::{self, CheckRun};
use greta_probe::facts::{Facts, Signal};
use greta_probe::report::{self, CheckLine, CheckStatus, Report};
use greta_probe::rules::{self, Finding, Severity};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Read the machine from a captured tree instead of `/` (see --capture).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["from", "capture"])]
    sysroot: Option<PathBuf>,
    /// Write a replayable snapshot of this machine to DIR (for bug reports;
    /// only the environment variables doctor uses are recorded).
    #[arg(long, value_name = "DIR", conflicts_with = "from")]
    capture: Option<PathBuf>,
    /// Explain captured tool output (rocminfo, vulkaninfo, amd-smi, rocm-smi,
    /// clinfo, dmesg, collect_env, ICD JSON, KFD properties, logs...),
    /// recognised by content; `-` reads standard input.
    #[arg(long, value_name = "FILE", num_args = 1.., action = clap::ArgAction::Append)]
    from: Vec<PathBuf>,
    /// Machine-readable report (schema greta.doctor/v1, see docs/doctor.md).
    #[arg(long)]
    json: bool,
    /// List every check and finding id, then exit.
    #[arg(long)]
    list_checks: bool,
    /// Only this check (e.g. `rocm`) or finding id (e.g. `kfd.permission`).
    #[arg(long, value_name = "ID")]
    check: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    if args.list_checks {
        list_checks(args.json);
        return Ok(Exit::Pass);
    }
    // Each input gives facts plus either collector runs or per-file reports.
    let mut notes = Vec::new();
    let (mode, facts, runs, files) = if !args.from.is_empty() {
        let run = greta_probe::from::from_files(&args.from).context("--from")?;
        ("from", run.facts, Vec::new(), Some(run.files))
    } else if let Some(dir) = &args.capture {
        let mut c = greta_probe::capture::capture(dir).context("--capture")?;
        let hip = hip_live();
        hip.record(&c.dir)
            .with_context(|| format!("--capture: writing {}", c.dir.display()))?;
        c.checks.push(hip.apply(&mut c.facts));
        notes.push(format!(
            "snapshot of {} files written to {} (replay: greta doctor --sysroot {})",
            c.files + 2,
            c.dir.display(),
            c.dir.display()
        ));
        ("live", c.facts, c.checks, None)
    } else if let Some(dir) = &args.sysroot {
        let root = greta_probe::root::Root::sysroot(dir)
            .with_context(|| format!("--sysroot {}", dir.display()))?;
        let (mut facts, mut runs) = collect::collect(&root);
        if let Some(hip) = hip_replay(&root) {
            runs.push(hip.apply(&mut facts));
        }
        ("sysroot", facts, runs, None)
    } else {
        let (mut facts, mut runs) = collect::collect(&greta_probe::root::Root::live());
        runs.push(hip_live().apply(&mut facts));
        ("live", facts, runs, None)
    };
    let findings = rules::diagnose(&facts);
    let checks = match &files {
        Some(files) => {
            let (checks, file_notes) = report::file_checks(files, &findings);
            notes.extend(file_notes);
            checks
        }
        None => check_lines(&runs, &findings),
    };
    let mut report = Report::new(mode, checks, facts, findings, notes);
    if let Some(id) = &args.check {
        let prefixes: Vec<(&str, &[&str])> =
            collect::CHECKS.iter().map(|(i, _, p)| (*i, *p)).collect();
        if !report.restrict(id, &prefixes) {
            anyhow::bail!(
                "--check {id}: no such check or finding id (see greta doctor --list-checks)"
            );
        }
    }
    if args.json {
        crate::outln!("{}", report.to_json());
    } else {
        crate::out::text(format_args!(
            "{}",
            report.render(report::use_color(std::io::stdout().is_terminal()))
        ));
    }
    Ok(if report.summary.fail > 0 {
        Exit::Fail
    } else {
        Exit::Pass
    })
}

/// The worst finding a check owns decides its glyph.
fn status_of(id: &str, findings: &[Finding]) -> CheckStatus {
    let prefixes = collect::CHECKS
        .iter()
        .find(|c| c.0 == id)
        .map(|c| c.2)
        .unwrap_or(&[]);
    let worst = findings
        .iter()
        .filter(|f| prefixes.iter().any(|p| f.id.starts_with(p)))
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

/// How long `greta __gpu devices --backend hip` may take (HIP initialisation of
/// eight MI300X takes seconds; a hung runtime must not hang doctor).
const HIP_CHECK_LIMIT: Duration = Duration::from_secs(30);

/// Capture name of the HIP check's worker output (`.greta/cmd/<name>.txt`
/// and `.status` in a snapshot), so `--sysroot` replays it.
const HIP_CMD: &str = "greta-hip-worker-devices";

/// One HIP check: how the worker run ended, live or replayed.
struct HipCheck {
    duration: Duration,
    /// `.status` line: `exit N`, `not-found` (no worker), `error ...` (it
    /// could not be run or gave no answer in time).
    status: String,
    /// The worker's stdout (`greta.hip-devices/v1`), or the error.
    text: String,
    /// Its stderr (live only; not needed to judge).
    stderr: String,
}

/// One finished run of the HIP device listing (live or replayed).
struct DevicesOutput {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The live HIP check: what HIP itself says, asked in a child of greta
/// (`greta __gpu devices --backend hip`: libamdhip64 loaded there, so a
/// hung or crashing runtime cannot take doctor down).
fn hip_live() -> HipCheck {
    let started = Instant::now();
    let (status, text, stderr) = match greta_smoke::runtime::gpu::child::helper() {
        None => (
            "not-found".to_string(),
            "greta cannot find its own executable".to_string(),
            String::new(),
        ),
        Some(h) => {
            let mut cmd = h.command("devices");
            cmd.args(["--backend", "hip"]);
            match greta_smoke::runtime::gpu::child::run(
                cmd,
                "the HIP device listing",
                b"",
                HIP_CHECK_LIMIT,
            ) {
                Ok(o) => (
                    match o.status.code() {
                        Some(c) => format!("exit {c}"),
                        None => format!("error {}", o.how()),
                    },
                    String::from_utf8_lossy(&o.stdout).into_owned(),
                    o.stderr,
                ),
                Err(e) => (format!("error {e}"), String::new(), String::new()),
            }
        }
    };
    HipCheck {
        duration: started.elapsed(),
        status,
        text,
        stderr,
    }
}

/// The HIP check of a snapshot, when it has one (older ones do not).
fn hip_replay(root: &greta_probe::root::Root) -> Option<HipCheck> {
    use greta_probe::root::CmdStatus;
    let out = root.run(HIP_CMD, "greta-hip-worker", &["devices"]);
    let status = match &out.status {
        CmdStatus::NotFound if out.text.is_empty() => return None,
        CmdStatus::NotFound => "not-found".to_string(),
        CmdStatus::Exited(c) => format!("exit {c}"),
        CmdStatus::TimedOut => "error no answer in time".to_string(),
        CmdStatus::Error(e) => format!("error {e}"),
    };
    Some(HipCheck {
        duration: Duration::ZERO,
        status,
        text: out.text,
        stderr: String::new(),
    })
}

impl HipCheck {
    /// Writes it into a snapshot, beside what the probe captured.
    fn record(&self, snapshot: &std::path::Path) -> std::io::Result<()> {
        let dir = snapshot.join(".greta/cmd");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format!("{HIP_CMD}.txt")), &self.text)?;
        std::fs::write(
            dir.join(format!("{HIP_CMD}.status")),
            format!("{}\n", self.status.replace('\n', " ")),
        )
    }

    /// Its check line; "no HIP device found" becomes the `hip-no-device`
    /// signal, which the rules turn into `rocm.runtime-no-device` only where
    /// an AMD GPU is known.
    fn apply(self, facts: &mut Facts) -> CheckRun {
        let summary = if self.status == "not-found" {
            format!("HIP not asked: {}", self.text)
        } else if let Some(code) = self.status.strip_prefix("exit ") {
            let out = DevicesOutput {
                code: code.trim().parse().unwrap_or(2),
                stdout: self.text,
                stderr: self.stderr,
            };
            let (summary, signal) = judge_devices(out);
            facts.signals.extend(signal);
            summary
        } else {
            let e = self.status.strip_prefix("error ").unwrap_or(&self.status);
            format!("HIP device listing: {e}")
        };
        CheckRun {
            id: "hip-runtime".into(),
            title: "HIP runtime".into(),
            duration: self.duration,
            summary,
        }
    }
}

/// Reads one HIP device listing (`greta.gpu-devices/v1`; snapshots taken
/// with the old worker hold `greta.hip-devices/v1`, read the same way).
fn judge_devices(out: DevicesOutput) -> (String, Option<Signal>) {
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap_or_default();
    let error = v.get("error").and_then(|e| e.as_str()).map(str::to_string);
    // The worker says what kind of failure it was; captures recorded before
    // it did (greta.hip-devices/v1, early greta.gpu-devices/v1) have only
    // the words, which are read as they always were.
    let kind = v
        .get("error_kind")
        .and_then(|k| serde_json::from_value::<DevicesError>(k.clone()).ok());
    let no_device = match kind {
        Some(k) => k == DevicesError::NoDevice,
        None => error
            .as_deref()
            .is_some_and(|e| e.starts_with("no HIP device found")),
    };
    let devices: Vec<String> = v
        .get("devices")
        .and_then(|d| d.as_array())
        .map(|d| {
            d.iter()
                .map(|x| {
                    let name = x.get("name").and_then(|n| n.as_str()).unwrap_or("?");
                    match x.get("driver_info").and_then(|n| n.as_str()) {
                        Some(arch) if !arch.is_empty() => format!("{name} ({arch})"),
                        _ => name.to_string(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
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

fn list_checks(json: bool) {
    let cat = rules::catalogue();
    if json {
        let v = serde_json::json!({
            "schema": "greta.doctor.checks/v1",
            "checks": collect::CHECKS.iter().map(|(id, title, owns)| serde_json::json!({"id": id, "title": title, "findings": owns})).collect::<Vec<_>>(),
            "findings": cat.iter().map(|r| serde_json::json!({"id": r.id, "severity": r.severity, "title": r.title, "meaning": r.meaning})).collect::<Vec<_>>(),
        });
        crate::outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    crate::outln!("Checks (live and --sysroot; with --from each file is one check):");
    for (id, title, _) in collect::CHECKS {
        crate::outln!("  {id:<16} {title}");
    }
    crate::outln!("\nFindings:");
    for r in cat {
        crate::outln!("  {:<30} {:<5} {}", r.id, r.severity.as_str(), r.meaning);
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
            gpus: vec![greta_probe::facts::Gpu {
                vendor: greta_probe::facts::Vendor::Amd,
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

    /// Issue 16: the signal follows the worker's typed `error_kind`, not
    /// the words of its message.
    #[test]
    fn the_error_kind_decides_the_no_device_signal() {
        let answer = |kind: &str, error: &str| {
            serde_json::json!({"schema": "greta.gpu-devices/v1", "backend": "hip", "devices": [],
                               "error": error, "no_device": true, "error_kind": kind})
            .to_string()
        };
        let (s, sig) = judge_devices(out(2, &answer("no_device", "HIP: nothing here"), ""));
        assert_eq!(s, "HIP: nothing here");
        assert_eq!(sig.expect("signal").id, "hip-no-device");
        // The library could not be loaded: not a machine without a device,
        // whatever the message says.
        let (s, sig) = judge_devices(out(
            2,
            &answer(
                "loader_missing",
                "no HIP device found: libamdhip64.so not found",
            ),
            "",
        ));
        assert!(s.starts_with("HIP device listing exited 2: "), "{s}");
        assert!(sig.is_none());
    }

    #[test]
    fn a_recorded_check_replays_to_the_same_line_and_signal() {
        let reason = "no HIP device found: hipGetDeviceCount returned hipErrorNoDevice (100)";
        let none = serde_json::json!({"schema":"greta.hip-devices/v1","devices":[],"error":reason})
            .to_string();
        let cases = [
            ("exit 2", none.as_str(), reason.to_string(), true),
            (
                "not-found",
                "greta cannot find its own executable",
                "HIP not asked: greta cannot find its own executable".to_string(),
                false,
            ),
            (
                "error running /w: no answer within 30 s; killed",
                "",
                "HIP device listing: running /w: no answer within 30 s; killed".to_string(),
                false,
            ),
        ];
        for (status, text, summary, signal) in cases {
            let snap = tempfile::tempdir().unwrap();
            let live = HipCheck {
                duration: Duration::ZERO,
                status: status.into(),
                text: text.into(),
                stderr: String::new(),
            };
            live.record(snap.path()).unwrap();
            let root = greta_probe::root::Root::sysroot(snap.path()).unwrap();
            let replayed = hip_replay(&root).expect("recorded");
            let (mut a, mut b) = (Facts::default(), Facts::default());
            let (la, lb) = (live.apply(&mut a), replayed.apply(&mut b));
            assert_eq!(la.summary, summary);
            assert_eq!((&la.id, &la.summary), (&lb.id, &lb.summary));
            assert_eq!(a, b);
            assert_eq!(a.signals.len(), usize::from(signal), "{status}");
        }
        // A snapshot without it (older captures) has no HIP line.
        let empty = tempfile::tempdir().unwrap();
        let root = greta_probe::root::Root::sysroot(empty.path()).unwrap();
        assert!(hip_replay(&root).is_none());
    }
}
