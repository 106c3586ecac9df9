//! `greta smoke --profile frameworks [--env NAME | --python PATH]`: the
//! framework gates (`greta-frameworks`) on any env or interpreter, reported
//! as a `greta.smoke/v1` run and shown as every profile's run is
//! ([`super::present`]: table, `--json`, `--oneline`, `--prom`, `--html`,
//! the result files unless `--no-save`).

use super::{fleet::Fleet, Args};
use crate::envs::{EnvRoot, Receipt};
use crate::exit::Exit;
use greta_frameworks::{self as frameworks, judge::GpuWant, judge::Vendor, report, session};
use greta_smoke::Outcome;
use greta_vocab::Backend;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Which interpreter, and what it promises.
struct Target {
    python: PathBuf,
    label: String,
    receipt: Option<Receipt>,
    env_root: Option<PathBuf>,
}

fn greta_env(root: &EnvRoot, name: &str) -> Result<Target, String> {
    if let Err(e) = crate::envs::validate_name(name) {
        return Err(format!("--env {name}: {e:#}"));
    }
    let path = root.env_path(name);
    match Receipt::load(&path) {
        Ok(r) => Ok(Target {
            python: path.join("bin").join("python"),
            label: format!("env {name} (profile {})", r.profile),
            receipt: Some(r),
            env_root: Some(path),
        }),
        Err(e) => Err(format!(
            "--env {name}: no greta env at {} ({e:#}); `greta env list` shows the envs",
            path.display()
        )),
    }
}

/// What is checked when neither `--env` nor `--python` is given.
#[derive(Debug, PartialEq, Eq)]
enum DefaultTarget {
    /// The env the user is in (`VIRTUAL_ENV`).
    Active(PathBuf),
    /// No env is active and greta made exactly one: that one.
    OnlyEnv(String),
    /// No env is active and greta made several: the user must choose.
    Choose(Vec<String>),
    /// No env is active and greta made none: `python3` on PATH.
    Python3,
}

/// The default, from `VIRTUAL_ENV` and the names of the greta envs.
fn default_target_of(virtual_env: Option<PathBuf>, envs: Vec<String>) -> DefaultTarget {
    if let Some(v) = virtual_env.filter(|v| !v.as_os_str().is_empty()) {
        return DefaultTarget::Active(v);
    }
    match <[String; 1]>::try_from(envs) {
        Ok([only]) => DefaultTarget::OnlyEnv(only),
        Err(envs) if envs.is_empty() => DefaultTarget::Python3,
        Err(envs) => DefaultTarget::Choose(envs),
    }
}

/// The env the user is in, else greta's only env, else `python3` on PATH;
/// with several greta envs and none active, a bad argument naming them.
fn default_target() -> anyhow::Result<Result<Target, String>> {
    let virtual_env = std::env::var_os("VIRTUAL_ENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let root = EnvRoot::default_root()?;
    let envs = if virtual_env.is_some() {
        vec![]
    } else {
        root.list()?.into_iter().map(|(name, _, _)| name).collect()
    };
    Ok(match default_target_of(virtual_env, envs) {
        DefaultTarget::Active(root) => {
            let receipt = Receipt::load(&root).ok();
            Ok(Target {
                python: root.join("bin").join("python"),
                label: format!("the active env {}", root.display()),
                env_root: receipt.as_ref().map(|_| root.clone()),
                receipt,
            })
        }
        DefaultTarget::OnlyEnv(name) => {
            crate::errln!("greta smoke: frameworks: no env is active; checking greta's only env, {name} (--env NAME or --python PATH to choose)");
            greta_env(&root, &name)
        }
        DefaultTarget::Choose(names) => Err(format!(
            "no env is active and there are {} greta envs ({}): choose one with --env NAME, or an interpreter with --python PATH",
            names.len(),
            names.join(", ")
        )),
        DefaultTarget::Python3 => match which::which("python3") {
            Ok(p) => {
                crate::errln!("greta smoke: frameworks: no env is active and greta has made none; checking {} (`greta install` makes an env; --python PATH picks another interpreter)", p.display());
                Ok(Target {
                    label: format!("python {}", p.display()),
                    python: p,
                    receipt: None,
                    env_root: None,
                })
            }
            Err(e) => Err(format!(
                "no --env or --python given, no env active, no greta env, and no python3 on PATH ({e}); `greta install` makes an env"
            )),
        },
    })
}

pub fn run(args: &Args, fleet: &Fleet) -> anyhow::Result<Exit> {
    if let Some(refused) = super::refused::refused(args, super::refused::Mode::Frameworks) {
        return Ok(usage(fleet, refused));
    }
    if let Err(e) = super::check_outputs(args, fleet) {
        return Ok(e);
    }
    let target = match target_of(args)? {
        Ok(t) => t,
        Err(e) => return Ok(usage(fleet, e)),
    };
    let python = match interpreter(&target.python) {
        Ok(p) => p,
        Err(e) => return Ok(usage(fleet, e)),
    };
    let started = Instant::now();
    let started_at = greta_smoke::results::now_rfc3339();
    let request = request(args, &target, python.clone());
    crate::errln!(
        "greta smoke: frameworks: {} ({}); a GPU is {}",
        python.display(),
        request.expect.label,
        match &request.expect.gpu {
            Some(g) if !g.names.is_empty() => format!("expected: {}", g.names.join(", ")),
            Some(_) => "expected (the env's profile needs one)".into(),
            None => "not expected (torch and jax run on the CPU; triton is skipped)".into(),
        }
    );
    let checked = match frameworks::run(&request) {
        Ok(c) => c,
        Err(e) => {
            let why = format!("could not run: {e:#}");
            crate::errln!("greta smoke: {why}");
            return Ok(fleet.undecided(&why));
        }
    };
    let Some(run) = &checked.run else {
        say_undecided(&checked, &python);
        return Ok(fleet.undecided("could not run the framework gates"));
    };
    let meta = report::RunMeta {
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        seed: request.seed,
        timeout_s: request.timeout.as_secs_f64(),
        repeats: request.repeats,
    };
    let rep = report::to_report(run, &checked.judged, &meta);
    let (written, write_error) = if args.no_save {
        (None, None)
    } else {
        match args
            .out
            .clone()
            .or_else(greta_smoke::results::default_out_dir)
        {
            Some(dir) => match greta_smoke::results::write_report(&rep, &dir) {
                Ok(w) => (Some(w), None),
                Err(e) => (None, Some(format!("{e:#}"))),
            },
            None => {
                crate::errln!(
                    "greta smoke: no HOME or XDG_DATA_HOME: results not written (use --out)"
                );
                (None, None)
            }
        }
    };
    let outcome = Outcome {
        report: rep,
        written,
        write_error,
    };
    let code = outcome.exit_code();
    super::present(args, fleet, &outcome, code)
}

/// A bad argument: said once, exit 2 (the UNKNOWN line with `--oneline`,
/// an undecided textfile with `--prom`).
fn usage(fleet: &Fleet, msg: impl std::fmt::Display) -> Exit {
    let why = format!("bad arguments: {msg}");
    // --oneline prints UNKNOWN on stdout, --prom alone says it on stderr
    // itself: the reason is printed once.
    if fleet.oneline || fleet.prom.is_none() {
        crate::errln!("greta smoke: {why}");
    }
    fleet.undecided(&why)
}

/// The interpreter `--env`, `--python` or the defaults name; the inner
/// error is a bad argument.
fn target_of(args: &Args) -> anyhow::Result<Result<Target, String>> {
    Ok(match (&args.env, &args.python) {
        (Some(_), Some(_)) => Err("give --env or --python, not both".into()),
        (Some(name), None) => greta_env(&EnvRoot::default_root()?, name),
        (None, Some(p)) => Ok(Target {
            label: format!("python {}", p.display()),
            python: p.clone(),
            receipt: None,
            env_root: None,
        }),
        (None, None) => default_target()?,
    })
}

/// The interpreter's file: a bare name is looked up on PATH.
fn interpreter(python: &Path) -> Result<PathBuf, String> {
    let path = if python.is_absolute() || python.components().count() > 1 {
        python.to_path_buf()
    } else {
        which::which(python).map_err(|e| format!("{}: {e}", python.display()))?
    };
    if !path.is_file() {
        return Err(format!(
            "{} is not an interpreter (no such file)",
            path.display()
        ));
    }
    Ok(path)
}

/// The gates' run: every framework imported, the ones the expectation
/// gates checked, with the seed, limits and env variables of this
/// invocation. What the frameworks must show: the env's profile (backend,
/// ROCm version) where there is one, and a GPU where the machine or the
/// profile has one.
fn request(args: &Args, target: &Target, python: PathBuf) -> frameworks::Request {
    let facts = session::machine_facts();
    let backend = target.receipt.as_ref().map(|r| r.backend);
    let gpu = match backend {
        // The cpu profile runs on the CPU, whatever the machine has.
        Some(Backend::Cpu) => None,
        Some(b) => session::gpu_want(&facts).or(Some(GpuWant {
            vendor: if b == Backend::Rocm {
                Vendor::Amd
            } else {
                Vendor::Nvidia
            },
            names: vec![],
        })),
        None => session::gpu_want(&facts),
    };
    let mut r = frameworks::Request::new(python);
    r.expect.label = target.label.clone();
    r.expect.version = target
        .receipt
        .as_ref()
        .and_then(|r| r.backend_major_minor());
    r.expect.backend = backend;
    r.expect.gpu = gpu;
    r.expect.env_root = target.env_root.clone();
    // A given seed is cut to the 53 bits the clock's has.
    if let Some(seed) = args.seed {
        r.seed = seed & ((1 << 53) - 1);
    }
    if let Some(t) = args.timeout {
        r.timeout = std::time::Duration::from_secs_f64(t);
    }
    if let Some(n) = args.repeat {
        r.repeats = n;
    }
    r.isolated = target.env_root.is_some();
    if let Some(receipt) = &target.receipt {
        r.env = receipt.env_vars.clone();
    }
    r
}

/// No result at all: nothing was decided about the frameworks; say why.
fn say_undecided(checked: &frameworks::Checked, python: &Path) {
    use greta_vocab::{Visible, VisibleLines};
    // Evidence and the stderr tail quote what the env's Python printed.
    for f in &checked.judged.findings {
        crate::errln!(
            "✗ {} [{}] {}",
            f.severity,
            Visible(&f.id),
            Visible(&f.title)
        );
        for e in &f.evidence {
            crate::errln!("    {}", VisibleLines(e));
        }
    }
    let tail = frameworks::tail(&checked.stderr, 2000);
    if !tail.is_empty() {
        crate::errln!(
            "stderr of {}:\n{}",
            Visible(&python.display().to_string()),
            VisibleLines(tail)
        );
    }
    crate::errln!("greta smoke: could not run the framework gates");
}

#[cfg(test)]
mod tests {
    use super::{default_target_of, DefaultTarget};
    use std::path::PathBuf;

    #[test]
    fn with_no_env_active_the_only_greta_env_is_checked_or_the_envs_are_named() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            default_target_of(Some(PathBuf::from("/v")), names(&["a", "b"])),
            DefaultTarget::Active(PathBuf::from("/v"))
        );
        assert_eq!(
            default_target_of(None, names(&["cpu"])),
            DefaultTarget::OnlyEnv("cpu".into())
        );
        assert_eq!(
            default_target_of(Some(PathBuf::new()), names(&["a", "b"])),
            DefaultTarget::Choose(names(&["a", "b"]))
        );
        assert_eq!(default_target_of(None, vec![]), DefaultTarget::Python3);
    }
}
