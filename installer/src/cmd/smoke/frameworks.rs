//! `greta smoke --profile frameworks [--env NAME | --python PATH]`: the
//! framework gates (envs/frameworks) on any env or interpreter, reported
//! as a `greta.smoke/v1` run.

use super::Args;
use crate::envs::frameworks::{self, judge::Expect, report, session, Request};
use crate::envs::{EnvRoot, Receipt};
use crate::exit::Exit;
use greta_vocab::Backend;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Which interpreter, and what it promises.
struct Target {
    python: PathBuf,
    label: String,
    receipt: Option<Receipt>,
    env_root: Option<PathBuf>,
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Result<Exit> {
    eprintln!("greta smoke: bad arguments: {msg}");
    Ok(Exit::Undecided)
}

fn greta_env(name: &str) -> anyhow::Result<Result<Target, String>> {
    if let Err(e) = crate::envs::validate_name(name) {
        return Ok(Err(format!("--env {name}: {e:#}")));
    }
    let path = EnvRoot::default_root()?.env_path(name);
    match Receipt::load(&path) {
        Ok(r) => Ok(Ok(Target {
            python: path.join("bin").join("python"),
            label: format!("env {name} (profile {})", r.profile),
            receipt: Some(r),
            env_root: Some(path),
        })),
        Err(e) => Ok(Err(format!(
            "--env {name}: no greta env at {} ({e:#}); `greta env list` shows the envs",
            path.display()
        ))),
    }
}

/// The env the user is in, else `python3` on PATH.
fn default_target() -> Result<Target, String> {
    if let Some(v) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        let root = PathBuf::from(v);
        let receipt = Receipt::load(&root).ok();
        return Ok(Target {
            python: root.join("bin").join("python"),
            label: format!("the active env {}", root.display()),
            env_root: receipt.as_ref().map(|_| root.clone()),
            receipt,
        });
    }
    let p = which::which("python3").map_err(|e| {
        format!("no --env or --python given, no VIRTUAL_ENV, and no python3 on PATH ({e})")
    })?;
    Ok(Target {
        label: format!("python {}", p.display()),
        python: p,
        receipt: None,
        env_root: None,
    })
}

pub fn run(args: &Args) -> anyhow::Result<Exit> {
    let target = match target_of(args)? {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    if !args.gates.is_empty() {
        return usage(
            "--gate selects kernel gates; the frameworks profile runs every framework gate",
        );
    }
    let python = match interpreter(&target.python) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    let started = Instant::now();
    let started_at = greta_smoke::results::now_rfc3339();
    let facts = session::machine_facts();
    let expect = expectation(&target, &facts);
    let request = request(args, &target, &expect);
    let (seed, timeout, repeats) = (request.seed, request.timeout, request.repeats);
    eprintln!(
        "greta smoke: frameworks: {} ({}); a GPU is {}",
        python.display(),
        expect.label,
        match &expect.gpu {
            Some(g) if !g.names.is_empty() => format!("expected: {}", g.names.join(", ")),
            Some(_) => "expected (the env's profile needs one)".into(),
            None => "not expected (torch and jax run on the CPU; triton is skipped)".into(),
        }
    );
    let p = match frameworks::prestart(&python, request) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("greta smoke: could not run: {e:#}");
            return Ok(Exit::Undecided);
        }
    };
    let checked = session::finish(p, &expect, || facts.clone());
    let Some(run) = &checked.run else {
        say_undecided(&checked, &python);
        return Ok(Exit::Undecided);
    };
    let meta = report::RunMeta {
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        seed,
        timeout_s: timeout.as_secs_f64(),
        repeats,
    };
    let rep = report::to_report(run, &checked.judged, &meta);
    let table = greta_smoke::table::render(&rep);
    if args.json {
        eprint!("{table}");
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", rep.to_json())?;
        out.flush()?;
    } else {
        print!("{table}");
    }
    match args
        .out
        .clone()
        .or_else(greta_smoke::results::default_out_dir)
    {
        Some(dir) => match greta_smoke::results::write_report(&rep, &dir) {
            Ok(w) => eprintln!("results: {} (csv: {})", w.json.display(), w.csv.display()),
            Err(e) => {
                eprintln!("greta smoke: could not write results: {e:#}");
                return Ok(Exit::Undecided);
            }
        },
        None => eprintln!("greta smoke: no HOME or XDG_DATA_HOME: results not written (use --out)"),
    }
    Ok(match rep.status.exit_code() {
        0 => Exit::Pass,
        1 => Exit::Fail,
        _ => Exit::Undecided,
    })
}

/// The interpreter `--env`, `--python` or the defaults name; the inner
/// error is a bad argument.
fn target_of(args: &Args) -> anyhow::Result<Result<Target, String>> {
    Ok(match (&args.env, &args.python) {
        (Some(_), Some(_)) => Err("give --env or --python, not both".into()),
        (Some(name), None) => greta_env(name)?,
        (None, Some(p)) => Ok(Target {
            label: format!("python {}", p.display()),
            python: p.clone(),
            receipt: None,
            env_root: None,
        }),
        (None, None) => default_target(),
    })
}

/// The interpreter's file: a bare name is looked up on PATH.
fn interpreter(python: &std::path::Path) -> Result<PathBuf, String> {
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

/// What the frameworks must show: the env's profile (backend, ROCm version)
/// where there is one, and a GPU where the machine or the profile has one.
fn expectation(target: &Target, facts: &greta_probe::Facts) -> Expect {
    let backend = target.receipt.as_ref().map(|r| r.backend);
    let gpu = match backend {
        // The cpu profile runs on the CPU, whatever the machine has.
        Some(Backend::Cpu) => None,
        Some(b) => session::gpu_want(facts).or(Some(frameworks::judge::GpuWant {
            vendor: if b == Backend::Rocm {
                frameworks::judge::Vendor::Amd
            } else {
                frameworks::judge::Vendor::Nvidia
            },
            names: vec![],
        })),
        None => session::gpu_want(facts),
    };
    Expect {
        label: target.label.clone(),
        version: target
            .receipt
            .as_ref()
            .and_then(|r| r.backend_major_minor()),
        backend,
        gpu,
        env_root: target.env_root.clone(),
        require_all: false,
    }
}

/// The gates' run: every framework imported, the ones `expect` gates
/// checked, with the seed, limits and env variables of this invocation.
fn request(args: &Args, target: &Target, expect: &Expect) -> Request {
    let modules: Vec<String> = frameworks::MODULES.iter().map(|m| m.to_string()).collect();
    let gated: Vec<String> = modules
        .iter()
        .filter(|m| *m != "triton" || expect.triton_runs())
        .cloned()
        .collect();
    // A given seed is cut to the 53 bits the clock's has.
    let seed = args.seed.unwrap_or_else(frameworks::clock_seed) & ((1 << 53) - 1);
    let env: BTreeMap<String, String> = target
        .receipt
        .as_ref()
        .map(|r| r.env_vars.clone())
        .unwrap_or_default();
    Request {
        modules,
        gated,
        seed,
        timeout: args
            .timeout
            .map(Duration::from_secs_f64)
            .unwrap_or(session::DEFAULT_TIMEOUT),
        repeats: args.repeat.unwrap_or(3),
        isolated: target.env_root.is_some(),
        env,
    }
}

/// No result at all: nothing was decided about the frameworks; say why.
fn say_undecided(checked: &session::Checked, python: &std::path::Path) {
    use greta_vocab::{Visible, VisibleLines};
    // Evidence and the stderr tail quote what the env's Python printed.
    for f in &checked.judged.findings {
        eprintln!(
            "✗ {} [{}] {}",
            f.severity,
            Visible(&f.id),
            Visible(&f.title)
        );
        for e in &f.evidence {
            eprintln!("    {}", VisibleLines(e));
        }
    }
    let tail = frameworks::tail(&checked.stderr, 2000);
    if !tail.is_empty() {
        eprintln!(
            "stderr of {}:\n{}",
            Visible(&python.display().to_string()),
            VisibleLines(tail)
        );
    }
    eprintln!("greta smoke: could not run the framework gates");
}
