//! `greta doctor`: finds the GPU stack and explains every problem with a fix.
//!
//! Three inputs, one engine: the live machine (default), a captured tree
//! (`--sysroot DIR`, written by `--capture DIR`), or pasted tool output
//! (`--from FILE...`). All produce the same facts, judged by the same rules
//! (probe/rules.toml). Exit 0: no `fail` finding; 1: at least one; 2: doctor
//! itself could not run (bad flags, unreadable sysroot, missing --from file).

use crate::exit::Exit;
use anyhow::Context;
use greta_probe::collect::{self, CheckRun};
use greta_probe::report::{self, CheckLine, CheckStatus, Report};
use greta_probe::rules::{self, Finding, Severity};
use std::io::IsTerminal;
use std::path::PathBuf;

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
        let c = greta_probe::capture::capture(dir).context("--capture")?;
        notes.push(format!(
            "snapshot of {} files written to {} (replay: greta doctor --sysroot {})",
            c.files,
            c.dir.display(),
            c.dir.display()
        ));
        ("live", c.facts, c.checks, None)
    } else if let Some(dir) = &args.sysroot {
        let root = greta_probe::root::Root::sysroot(dir)
            .with_context(|| format!("--sysroot {}", dir.display()))?;
        let (facts, runs) = collect::collect(&root);
        ("sysroot", facts, runs, None)
    } else {
        let (facts, runs) = collect::collect(&greta_probe::root::Root::live());
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
        println!("{}", report.to_json());
    } else {
        print!(
            "{}",
            report.render(report::use_color(std::io::stdout().is_terminal()))
        );
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

fn list_checks(json: bool) {
    let cat = rules::catalogue();
    if json {
        let v = serde_json::json!({
            "schema": "greta.doctor.checks/v1",
            "checks": collect::CHECKS.iter().map(|(id, title, owns)| serde_json::json!({"id": id, "title": title, "findings": owns})).collect::<Vec<_>>(),
            "findings": cat.iter().map(|r| serde_json::json!({"id": r.id, "severity": r.severity, "title": r.title, "meaning": r.meaning})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    println!("Checks (live and --sysroot; with --from each file is one check):");
    for (id, title, _) in collect::CHECKS {
        println!("  {id:<16} {title}");
    }
    println!("\nFindings:");
    for r in cat {
        println!("  {:<30} {:<5} {}", r.id, r.severity.as_str(), r.meaning);
    }
}
