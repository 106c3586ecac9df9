//! `greta install`: pick the profile for this machine, fetch and verify its
//! wheels, build the env beside the old one, check it, swap it in.

use crate::envs::installer::Choice;
use crate::exit::Exit;
use crate::fetch::FetchOptions;
use crate::install::{Begun, Detail, InstallInput, InstallOutput, PlanInput};
use anyhow::Result;
use greta_vocab::{Visible, VisibleLines};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Profile from lock/matrix.toml (default: chosen from the probe, explained).
    #[arg(long)]
    pub profile: Option<String>,
    /// Python to build the env with (default: newest supported on PATH).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Env name (default: the profile name); lives in $XDG_DATA_HOME/greta/envs/NAME.
    #[arg(long)]
    pub name: Option<String>,
    /// Use only the wheel cache; fail listing what is missing.
    #[arg(long)]
    pub offline: bool,
    /// Install from a directory made by `greta bundle` (offline, hash-checked).
    #[arg(long, value_name = "DIR", conflicts_with = "index_url")]
    pub bundle: Option<PathBuf>,
    /// Show the plan (profile, reasons, wheels) and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Machine-readable result on stdout.
    #[arg(long)]
    pub json: bool,
    /// Skip the device work after the install: the framework gates (the frameworks are still
    /// imported and their builds checked) and `greta smoke --profile ultrasafe`.
    #[arg(long)]
    pub no_smoke: bool,
    /// What the post-install check asks of torch/triton/jax: `gates` (compute on the
    /// device against a float64 reference) or `imports` (import them and check their
    /// builds only: for an env built where its GPU is not reachable now).
    #[arg(long, value_enum, default_value = "gates", value_name = "KIND")]
    pub framework_check: FrameworkCheck,
    /// Simple-API index (PEP 691/503) to fetch the locked files from instead
    /// of their lockfile URLs (mirrors, tests); hashes still come from the lock.
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Lock directory (matrix.toml + pylock files) [default: $GRETA_LOCK_DIR, else the set built into greta].
    #[arg(long, value_name = "DIR")]
    pub lock_dir: Option<PathBuf>,
    /// Which tool installs the wheels into the venv.
    #[arg(long, value_enum, default_value = "auto")]
    pub installer: Choice,
    /// Replay a captured machine for the profile choice (see `greta doctor --capture`).
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    /// Rebuild the env even when it is already up to date (same lockfile,
    /// wheels, interpreter and profile, verified in place).
    #[arg(long, alias = "force")]
    pub reinstall: bool,
    /// Install a ROCm profile and run its device gates on a machine where no AMD GPU is seen,
    /// without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Seconds allowed for importing torch/triton/jax in the new env (at
    /// most a week).
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub import_timeout: u64,
    /// Seconds allowed for each run of the installer (`uv venv`, `uv pip
    /// install`, `pip install`, `python -m venv`; at most a week): one that
    /// never exits is killed and the install fails, the previous env kept.
    #[arg(long, default_value_t = crate::envs::installer::DEFAULT_LIMIT_S, value_name = "SECS")]
    pub installer_timeout: u64,
}

impl Args {
    /// Whether the install runs device gates after it builds: not with
    /// `--framework-check imports` or `--no-smoke`, which say the env is
    /// for another machine.
    fn device_gates(&self) -> bool {
        !self.no_smoke && self.framework_check == FrameworkCheck::Gates
    }
}

pub fn run(args: Args, verbose: u8) -> Result<Exit> {
    crate::interrupt::on_install_interrupt();
    let Some(Source {
        lock_dir,
        profile,
        offline,
    }) = source(&args)?
    else {
        return Ok(Exit::Fail);
    };
    let early_contents = early_contents(&args, profile.as_deref());
    let plan = crate::install::plan(&PlanInput {
        lock_dir: &lock_dir,
        profile: profile.as_deref(),
        python: args.python.as_deref(),
        python_version: None,
        sysroot: args.sysroot.as_deref(),
        probe: true,
    })?;
    let name = args.name.clone().unwrap_or_else(|| plan.profile.clone());
    let no_gpu = gpu_missing(&plan);
    if args.dry_run {
        if args.json {
            InstallOutput::Planned {
                env_name: &name,
                plan: &plan,
            }
            .print()?;
        } else {
            dry_run(&args, &name, &plan, no_gpu.as_deref())?;
        }
        return Ok(Exit::Pass);
    }
    if !args.json {
        // The per-wheel marker/tag reasoning only on request (-v): by
        // default a few lines say which profile and why, then progress.
        let detail = if verbose > 0 {
            Detail::Wheels
        } else {
            Detail::Summary
        };
        // The plan on stdout, the progress and logs on stderr.
        print_plan(&plan, detail);
    }
    let mut fetch = FetchOptions::from_env()?;
    fetch.offline = offline;
    fetch.progress = !args.json;
    let input = InstallInput {
        name: name.clone(),
        fetch,
        index_url: args.index_url.clone(),
        bundle: args.bundle.clone(),
        installer: args.installer,
        smoke: !args.no_smoke,
        gates: args.device_gates(),
        import_timeout: greta_vocab::number::secs(args.import_timeout.max(1)),
        installer_timeout: greta_vocab::number::secs(args.installer_timeout.max(1)),
        reinstall: args.reinstall,
        early_contents,
        verbose: !args.json,
    };
    let to_build = match crate::install::begin(&plan, input) {
        Ok(Begun::UpToDate(report)) => return say_report(&args, &name, &plan, &report),
        Ok(Begun::Build(b)) => b,
        Err(e) => return say_failed(&args, &name, &plan, &e),
    };
    // Asked only now that an env is to be built: one that is up to date
    // needs no answer (and dropping `to_build` lets go of the env's lock).
    if let Some(exit) = ask_without_gpu(&args, no_gpu.as_deref())? {
        return Ok(exit);
    }
    match to_build.finish() {
        Ok(report) => say_report(&args, &name, &plan, &report),
        Err(e) => say_failed(&args, &name, &plan, &e),
    }
}

/// The plan's text on stdout, wrapped to the terminal there with a hanging
/// indent (whole to a pipe or a file).
fn print_plan(plan: &crate::install::Plan, detail: Detail) {
    crate::out::wrapped(format_args!("{}", crate::install::explain(plan, detail)));
}

/// A ROCm profile's env about to be built where no AMD GPU is seen (`why`),
/// its device gates on: the question, unless `--yes` answered it. `Some`:
/// the install stops with that exit (nothing fetched or changed).
fn ask_without_gpu(args: &Args, why: Option<&str>) -> Result<Option<Exit>> {
    let Some(why) = why.filter(|_| args.device_gates() && !args.yes) else {
        return Ok(None);
    };
    match crate::ask::yes_no(&format!(
        "greta install: {why}. Install it and run them anyway?"
    ))? {
        Some(true) => Ok(None),
        Some(false) => {
            crate::errln!("greta install: nothing was changed");
            Ok(Some(Exit::Undecided))
        }
        None => {
            let error = format!("{why}; standard input is not a terminal to ask: give --yes to install it and run them anyway");
            if args.json {
                InstallOutput::Refused {
                    error: error.clone(),
                }
                .print()?;
            }
            crate::errln!("greta install: {error}");
            Ok(Some(Exit::Undecided))
        }
    }
}

/// A ROCm profile on a machine where the probe sees no AMD GPU: what its
/// device gates cannot do there (`None`: nothing to say).
fn gpu_missing(plan: &crate::install::Plan) -> Option<String> {
    use crate::envs::ProbeSummary;
    let probed = matches!(plan.probe, ProbeSummary::Probed(_));
    let amd = plan.probe.gpu_names(greta_probe::Vendor::Amd);
    (plan.backend == greta_vocab::Backend::Rocm && probed && amd.is_empty()).then(|| {
        format!(
            "profile {} is for AMD GPUs and this machine has none that the probe sees: its device gates (the frameworks on the GPU, the HIP smoke gate) cannot pass here; for an env meant for another machine, --framework-check imports or --no-smoke",
            Visible(&plan.profile)
        )
    })
}

/// `--dry-run` as text: the plan on stdout (logs stay on stderr), and
/// what an install would do with the env that is there.
fn dry_run(
    args: &Args,
    name: &str,
    plan: &crate::install::Plan,
    no_gpu: Option<&str>,
) -> Result<()> {
    use crate::install::Existing;
    let existing = if args.reinstall {
        Existing::Stale("--reinstall".into())
    } else {
        crate::install::existing(plan, name, args.installer)?
    };
    let detail = match existing {
        Existing::UpToDate(_) => Detail::Choice,
        _ => Detail::Wheels,
    };
    print_plan(plan, detail);
    // Said where the install would ask: an env that is up to date is not
    // built again, and without the device gates there is nothing to ask.
    let up_to_date = matches!(existing, Existing::UpToDate(_));
    if let (Some(why), true, false) = (no_gpu, args.device_gates(), up_to_date) {
        let asks = if args.yes {
            "--yes: the install will not ask"
        } else {
            "the install asks first; --yes answers"
        };
        crate::wrapln!("! {why} ({asks})");
    }
    if args.offline && args.bundle.is_none() && !up_to_date {
        say_offline(plan)?;
    }
    match existing {
        Existing::UpToDate(v) => {
            let env = crate::envs::EnvRoot::default_root()?.env_path(name);
            crate::wrapln!(
                "dry run: env {name} is up to date ({} wheels, {} files verified): nothing to fetch or build (--reinstall rebuilds it)\n  activate with: . {}/greta-activate",
                v.receipt.wheels.len(),
                v.files,
                env.display()
            );
        }
        Existing::Stale(why) => crate::wrapln!(
            "dry run: nothing fetched or written (env {name} would be rebuilt: {})",
            Visible(&why)
        ),
        Existing::Absent => {
            crate::wrapln!("dry run: nothing fetched or written (env would be {name})")
        }
    }
    Ok(())
}

/// `--dry-run --offline`: whether the install could run from the cache
/// alone, read only (a wheel's file there is verified when the install
/// reads it, not now): every wheel not there is named.
fn say_offline(plan: &crate::install::Plan) -> Result<()> {
    let cache = crate::fetch::Cache::new(crate::fetch::Cache::default_root()?);
    let missing: Vec<_> = plan
        .wheels
        .iter()
        .map(crate::install::plan::artifact)
        .filter(|a| !cache.wheel_path(a).is_file())
        .collect();
    if missing.is_empty() {
        crate::wrapln!(
            "--offline: every wheel is in the cache ({}); each is verified when the install reads it",
            cache.root().display()
        );
        return Ok(());
    }
    crate::wrapln!(
        "--offline: {} of {} wheels are not in the cache ({}): the install would stop before building anything",
        missing.len(),
        plan.wheels.len(),
        cache.root().display()
    );
    for a in &missing {
        crate::wrapln!("  {}", Visible(&a.filename));
    }
    Ok(())
}

/// Where the install's lock comes from: a bundle (offline, its profile
/// unless one is named) or the lock dir.
struct Source {
    lock_dir: greta_lockset::LockDir,
    profile: Option<String>,
    offline: bool,
}

/// The install's [`Source`]; `None` when a bundle is for another
/// architecture (said on stderr, and as JSON with `--json`).
fn source(args: &Args) -> Result<Option<Source>> {
    let Some(dir) = &args.bundle else {
        return Ok(Some(Source {
            lock_dir: greta_lockset::LockDir::resolve(args.lock_dir.as_deref()),
            profile: args.profile.clone(),
            offline: args.offline,
        }));
    };
    let m = crate::install::BundleManifest::load(dir)?;
    if let Err(e) = m.check_arch(dir) {
        if args.json {
            InstallOutput::Refused {
                error: format!("{e:#}"),
            }
            .print()?;
        }
        crate::errln!("greta install: {}", VisibleLines(&format!("{e:#}")));
        return Ok(None);
    }
    Ok(Some(Source {
        lock_dir: greta_lockset::LockDir::of_bundle(dir),
        profile: Some(args.profile.clone().unwrap_or(m.profile)),
        offline: true,
    }))
}

/// The env's files are checked while the plan is made (the no-op case then
/// costs the slower of the two, not their sum); the result is used only if
/// the receipt is unchanged under the env's lock (envs::current).
fn early_contents(
    args: &Args,
    profile: Option<&str>,
) -> Option<std::thread::JoinHandle<crate::envs::current::Contents>> {
    let name = args.name.as_deref().or(profile)?;
    if args.reinstall || args.dry_run || crate::envs::validate_name(name).is_err() {
        return None;
    }
    let env = crate::envs::EnvRoot::default_root().ok()?.env_path(name);
    env.join(crate::envs::receipt::FILE)
        .is_file()
        .then(|| std::thread::spawn(move || crate::envs::current::check_contents(&env)))
}

/// An install that stopped with an error: what and whether running again
/// can help. Nothing in the env was changed.
fn say_failed(
    args: &Args,
    name: &str,
    plan: &crate::install::Plan,
    e: &anyhow::Error,
) -> Result<Exit> {
    if args.json {
        InstallOutput::Stopped {
            env_name: name,
            plan,
            error: format!("{e:#}"),
        }
        .print()?;
    }
    crate::errln!("greta install: {}", VisibleLines(&format!("{e:#}")));
    // A download that cannot succeed as things stand (404, wrong hash), a
    // full disk, a read-only cache, a missing HOME or an installer stopped
    // by its time limit is not fixed by running again (crate::rerun): the
    // line says what would help.
    match crate::rerun::blocker(e) {
        None => crate::errln!("greta install: nothing was changed in the env; verified downloads stay cached, rerun to continue"),
        Some(help) => crate::errln!("greta install: nothing was changed in the env; verified downloads stay cached; {help}, then rerun"),
    }
    // A path greta refused to write through is bad input: exit 2.
    if e.chain().any(crate::rerun::refused_path) {
        return Ok(Exit::Undecided);
    }
    Ok(Exit::Fail)
}

/// The install's report: JSON with `--json`, else its findings and the
/// verdict on stderr.
fn say_report(
    args: &Args,
    name: &str,
    plan: &crate::install::Plan,
    report: &crate::install::InstallReport,
) -> Result<Exit> {
    if args.json {
        InstallOutput::Reported {
            env_name: name,
            plan,
            report,
        }
        .print()?;
    } else if report.up_to_date {
        crate::errln!(
            "✓ env {name} is up to date ({} wheels, {} files verified); nothing to do (--reinstall rebuilds it)\n  activate with: . {}/greta-activate",
            report.wheels.len(),
            report.verified.as_ref().map_or(0, |v| v.files),
            report.env.display(),
        );
    } else {
        // Evidence quotes what the env's Python and its tools printed:
        // each of its lines is shown, never acted on by the terminal.
        for f in &report.findings {
            crate::errln!(
                "✗ {} [{}] {}\n    {}",
                f.severity,
                Visible(&f.id),
                Visible(&f.title),
                Visible(&f.message)
            );
            for e in &f.evidence {
                crate::errln!("    {}", VisibleLines(&e.replace('\n', "\n    ")));
            }
            crate::errln!("    fix: {}", Visible(&f.fix.text));
            for c in &f.fix.commands {
                crate::errln!("      $ {}", Visible(c));
            }
        }
        if report.smoke.status != crate::install::SmokeStatus::Skipped || !args.no_smoke {
            crate::errln!(
                "smoke: {} ({})",
                report.smoke.status,
                Visible(&report.smoke.note)
            );
        }
        if report.installed {
            crate::errln!(
                "✓ env {name} ready ({} wheels, {})\n  activate with: . {}/greta-activate",
                report.wheels.len(),
                report.installer,
                report.env.display()
            );
        } else {
            crate::errln!("✗ install failed its checks; the previous env (if any) is untouched");
        }
    }
    Ok(if report.installed || report.up_to_date {
        Exit::Pass
    } else {
        Exit::Fail
    })
}

/// `--framework-check`: how far the post-install check goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FrameworkCheck {
    /// torch, triton and jax compute on the device (the default).
    Gates,
    /// Import only, with the build checks (`torch.version.hip`/`cuda`).
    Imports,
}
