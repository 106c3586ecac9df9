//! `greta doctor`: finds the GPU stack and explains every problem with a fix.
//!
//! Three inputs, one engine: the live machine (default), a captured tree
//! (`--sysroot DIR`, written by `--capture DIR`), or pasted tool output
//! (`--from FILE...`). All produce the same facts, judged by the same rules
//! (probe/rules.toml). Exit 0: no `fail` finding; 1: at least one; 2: doctor
//! itself could not run (bad flags, unreadable sysroot, missing --from file).

use crate::exit::Exit;
use anyhow::Context;
use greta_probe::{HipRun, Probe, Root};
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
    /// Change the machine (or the --sysroot tree) to clear the findings whose
    /// fix is safe and reversible: shows each change, asks once, writes an
    /// undo record, then runs doctor again (see docs/doctor.md).
    #[arg(long, conflicts_with_all = ["from", "capture", "check"])]
    fix: bool,
    /// With --fix: apply without asking.
    #[arg(long, requires = "fix")]
    yes: bool,
    /// With --fix: show the changes, change nothing.
    #[arg(long, requires = "fix", conflicts_with = "yes")]
    dry_run: bool,
    /// With --fix: put back every file the last fix changed.
    #[arg(long, requires = "fix", conflicts_with_all = ["yes", "dry_run"])]
    undo: bool,
}

/// The installable ROCm profiles of the lock set and the targets their
/// wheels carry, in the matrix's order: what a doctor fix names when a
/// paste shows the installed build and the GPU's target. No lock set
/// readable: none (the fix then says plain `greta install`).
fn profile_targets() -> Vec<greta_probe::ProfileTargets> {
    let Ok(m) = greta_lockset::Matrix::load(&greta_lockset::LockDir::resolve(None)) else {
        return Vec::new();
    };
    m.profiles
        .iter()
        .filter(|p| p.is_locked() && !p.gfx.is_empty())
        .map(|p| greta_probe::ProfileTargets {
            name: p.name.clone(),
            gfx: p.gfx.clone(),
        })
        .collect()
}

/// `verbose` (`-v`): each check's detail under its line, every evidence line.
pub fn run(args: Args, verbose: u8) -> anyhow::Result<Exit> {
    if args.list_checks {
        list_checks(args.json);
        return Ok(Exit::Pass);
    }
    // A check or finding id is known before anything is probed (with
    // --from the files' checks are known only after reading them).
    if let (Some(id), true) = (&args.check, args.from.is_empty()) {
        if !known_check(id) {
            anyhow::bail!("{}", unknown_check(id));
        }
    }
    // Each input gives a report: the machine (live, captured or replayed)
    // through the probe's front door, or the `--from` files.
    let profiles = profile_targets();
    if args.fix {
        return fix(&args, &profiles);
    }
    let mut report = if !args.from.is_empty() {
        greta_probe::from_files(&args.from)
            .context("--from")?
            .into_report_for(&profiles)
    } else if let Some(dir) = &args.capture {
        let (outcome, c) = probe(&Root::live()).capture(dir).context("--capture")?;
        let note = format!(
            "snapshot of {} files written to {} (replay: greta doctor --sysroot {})",
            c.files,
            c.dir.display(),
            c.dir.display()
        );
        outcome.into_report_for(vec![note], &profiles)
    } else if let Some(dir) = &args.sysroot {
        let root = Root::sysroot(dir).with_context(|| format!("--sysroot {}", dir.display()))?;
        probe(&root).run().into_report_for(Vec::new(), &profiles)
    } else {
        probe(&Root::live())
            .run()
            .into_report_for(Vec::new(), &profiles)
    };
    if let Some(id) = &args.check {
        if !report.restrict(id) {
            anyhow::bail!("{}", unknown_check(id));
        }
    }
    if args.json {
        crate::outln!("{}", report.to_json());
    } else {
        crate::out::text(format_args!(
            "{}",
            report.render_within(
                greta_probe::use_color(std::io::stdout().is_terminal()),
                verbose > 0,
                greta_vocab::width::stdout_width()
            )
        ));
    }
    Ok(match report.summary.exit_code {
        0 => Exit::Pass,
        1 => Exit::Fail,
        _ => Exit::Undecided,
    })
}

/// `--fix`: the remedies for this machine's (or the sysroot's) findings.
fn fix(args: &Args, profiles: &[greta_probe::ProfileTargets]) -> anyhow::Result<Exit> {
    let dir = args.sysroot.clone().unwrap_or_else(|| PathBuf::from("/"));
    let out = if args.undo {
        crate::fix::run_undo(&dir)?
    } else {
        let open = || -> anyhow::Result<Root> {
            Ok(match &args.sysroot {
                Some(d) => {
                    Root::sysroot(d).with_context(|| format!("--sysroot {}", d.display()))?
                }
                None => Root::live(),
            })
        };
        let root = open()?;
        let report = probe(&root).run().into_report_for(Vec::new(), profiles);
        let again = || -> anyhow::Result<greta_probe::Report> {
            let root = open()?;
            Ok(probe(&root).run().into_report_for(Vec::new(), profiles))
        };
        let consent = match (args.yes, args.dry_run) {
            (true, _) => crate::fix::Consent::Given,
            (_, true) => crate::fix::Consent::DryRun,
            _ => crate::fix::Consent::Ask,
        };
        crate::fix::run(&dir, &root, &report, consent, &again)?
    };
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        crate::out::text(format_args!("{}", out.render()));
    }
    Ok(if out.failed() { Exit::Fail } else { Exit::Pass })
}

/// The probe as doctor runs it: every check, greta's envs where the
/// installer puts them, and the HIP check only this binary can run.
fn probe(root: &Root) -> Probe<'_> {
    Probe::new(root)
        .envs_at(crate::envs::EnvRoot::dir_in)
        .hip_check(hip_live)
}

/// How long `greta __gpu devices --backend hip` may take (HIP initialisation of
/// eight MI300X takes seconds; a hung runtime must not hang doctor).
const HIP_CHECK_LIMIT: Duration = Duration::from_secs(30);

/// The live HIP check: what HIP itself says, asked in a child of greta
/// (`greta __gpu devices --backend hip`: libamdhip64 loaded there, so a
/// hung or crashing runtime cannot take doctor down). The probe judges
/// the answer, records it in a capture and replays it from one.
fn hip_live() -> (HipRun, Duration) {
    use greta_smoke::gpu_child::{ask, AskError, DevicesRequest, GpuBackend, Request};
    let started = Instant::now();
    let req = Request::Devices(DevicesRequest {
        backend: GpuBackend::Hip,
    });
    let run = match ask(&req, "the HIP device listing", HIP_CHECK_LIMIT) {
        Err(AskError::NoHelper) => HipRun::NotAsked(AskError::NoHelper.to_string()),
        Err(e) => HipRun::Failed(e.to_string()),
        Ok(o) => match o.status.code() {
            Some(code) => HipRun::Exited {
                code,
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: o.stderr,
            },
            None => HipRun::Failed(o.how()),
        },
    };
    (run, started.elapsed())
}

/// Every check id and finding id `--check` takes on the live machine or a sysroot.
fn check_ids() -> impl Iterator<Item = &'static str> {
    let checks = greta_probe::CHECKS.iter().map(|(id, _, _)| *id);
    let findings = greta_probe::catalogue().into_iter().map(|r| r.id.as_str());
    checks.chain(findings)
}

fn known_check(id: &str) -> bool {
    check_ids().any(|k| k == id)
}

/// The refusal of an unknown `--check`, with the nearest ids.
fn unknown_check(id: &str) -> String {
    format!(
        "--check {id}: no such check or finding id{} (every id: greta doctor --list-checks)",
        greta_vocab::suggest::did_you_mean(id, check_ids(), 3)
    )
}

/// `greta doctor --list-checks --json` (`greta.doctor.checks/v1`). Every
/// object's fields stand in the order they have always been printed in
/// (alphabetical: the listing was a JSON map before it was a type).
#[derive(serde::Serialize)]
struct CheckList<'a> {
    checks: Vec<ListedCheck<'a>>,
    findings: Vec<ListedFinding<'a>>,
    schema: &'static str,
}

/// One check: the finding-id prefixes it owns.
#[derive(serde::Serialize)]
struct ListedCheck<'a> {
    findings: &'a [&'a str],
    id: &'a str,
    title: &'a str,
}

#[derive(serde::Serialize)]
struct ListedFinding<'a> {
    id: &'a str,
    meaning: &'a str,
    severity: greta_probe::Severity,
    title: &'a str,
}

fn check_list<'a>(cat: &[&'a greta_probe::Rule]) -> CheckList<'a> {
    CheckList {
        checks: greta_probe::CHECKS
            .iter()
            .map(|&(id, title, findings)| ListedCheck {
                findings,
                id,
                title,
            })
            .collect(),
        findings: cat
            .iter()
            .map(|r| ListedFinding {
                id: &r.id,
                meaning: &r.meaning,
                severity: r.severity,
                title: &r.title,
            })
            .collect(),
        schema: "greta.doctor.checks/v1",
    }
}

fn list_checks(json: bool) {
    let cat = greta_probe::catalogue();
    if json {
        let text = serde_json::to_string_pretty(&check_list(&cat)).unwrap_or_default();
        crate::outln!("{text}");
        return;
    }
    crate::outln!("Checks (live and --sysroot; with --from each file is one check):");
    for (id, title, _) in greta_probe::CHECKS {
        crate::outln!("  {id:<16} {title}");
    }
    crate::outln!("\nFindings:");
    for r in cat {
        crate::outln!("  {:<30} {:<5} {}", r.id, r.severity.as_str(), r.meaning);
    }
}
