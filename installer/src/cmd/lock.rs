//! `greta lock list | show | check | update`: inspect, verify and refresh
//! the pinned profiles in `lock/`.

use crate::exit::Exit;
use anyhow::{Context, Result};
use greta_lockset::{self as lock, check, Interpreter, LockStatus, Lockfile, Matrix};
use greta_vocab::url_secrets::redact;
use greta_vocab::Visible;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Directory holding matrix.toml and the pylock files [default: $GRETA_LOCK_DIR, else the set built into greta].
    #[arg(long, global = true, value_name = "DIR")]
    lock_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// One line per profile: backend, status, Python versions, lockfile.
    List {
        #[arg(long)]
        json: bool,
    },
    /// The exact wheel set of a profile for a Python version, and why each matched.
    Show {
        profile: String,
        /// "3.12" (CPython on this machine's platform); default: every supported version.
        #[arg(long, conflicts_with = "interpreter")]
        python: Option<String>,
        /// A real interpreter to resolve for (its tags are read by running it once).
        #[arg(long)]
        interpreter: Option<PathBuf>,
        /// A GPU target whose device wheels to show (profiles with per-GPU
        /// device wheels; repeatable) [default: every target of the profile].
        #[arg(long, value_name = "GFX")]
        device: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Verify every profile: hashes, https, no overlapping entries, lockfile agrees with matrix.
    Check {
        #[arg(long)]
        json: bool,
    },
    /// Which profile `greta install` would choose here, and why (one line per fact).
    Select {
        /// Probe facts as JSON: a `greta doctor --json` report or its `facts` object.
        #[arg(long, conflicts_with = "sysroot")]
        facts: Option<PathBuf>,
        /// Probe a captured machine instead of this one.
        #[arg(long)]
        sysroot: Option<PathBuf>,
        /// Check this profile instead of choosing one.
        #[arg(long)]
        profile: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Re-resolve a profile with uv against its index and rewrite its lockfile.
    Update(UpdateArgs),
}

#[derive(clap::Args, Debug, Clone)]
struct UpdateArgs {
    /// Profile to re-resolve (see `greta lock list`).
    profile: String,
    /// uv binary [default: `uv` on PATH].
    #[arg(long, env = greta_vocab::EnvVars::GRETA_UV)]
    uv: Option<PathBuf>,
    /// Take wheels recorded in this pins file (TOML [[pin]] with profile,
    /// name, version, filename, url, sha256) for packages whose index is
    /// unreachable; uv resolves the rest.
    #[arg(long)]
    seed_pins: Option<PathBuf>,
    /// Only consider distributions uploaded before this date (RFC 3339), for
    /// reproducible re-runs.
    #[arg(long)]
    exclude_newer: Option<String>,
    /// Print the new lockfile instead of writing it.
    #[arg(long)]
    dry_run: bool,
    /// Limit for each uv run, seconds (at most a week).
    #[arg(long, default_value_t = 900)]
    timeout: u64,
}

pub fn run(args: Args, verbose: u8) -> Result<Exit> {
    let dir = lock::LockDir::resolve(args.lock_dir.as_deref());
    match args.command {
        Command::List { json } => list(&Matrix::load(&dir)?, json, verbose),
        Command::Show {
            profile,
            python,
            interpreter,
            device,
            json,
        } => show(
            &Matrix::load(&dir)?,
            &profile,
            python,
            interpreter,
            &device,
            json,
        ),
        Command::Check { json } => run_check(&Matrix::load(&dir)?, json),
        Command::Select {
            facts,
            sysroot,
            profile,
            json,
        } => select(&Matrix::load(&dir)?, facts, sysroot, profile, json),
        Command::Update(a) => update(&dir, a),
    }
}

fn update(dir: &lock::LockDir, a: UpdateArgs) -> Result<Exit> {
    if dir.on_disk().is_none() {
        anyhow::bail!(
            "greta lock update rewrites a lockfile: pass --lock-dir DIR (a checkout's lock/) or set {}; the lock set built into greta cannot be changed",
            lock::LOCK_DIR_ENV_VAR
        );
    }
    let m = Matrix::load(dir)?;
    let p = m.profile(&a.profile)?;
    let uv = match &a.uv {
        Some(u) => u.clone(),
        None => which::which("uv")
            .context("uv not found on PATH (install it: `pip install uv`), or pass --uv PATH")?,
    };
    let options = lock::UpdateOptions {
        seed_pins: a.seed_pins,
        exclude_newer: a.exclude_newer,
        timeout: a.timeout,
    };
    let text = lock::update(p, &uv, &options)?;
    if a.dry_run {
        crate::out::text(format_args!("{text}"));
        return Ok(Exit::Pass);
    }
    lock::write_atomic(&p.lockfile, &text)?;
    let lock = Lockfile::load(&p.lockfile)?;
    crate::errln!(
        "wrote {} ({} packages, {} wheels, sha256 {})",
        Visible(&p.lockfile.display().to_string()),
        lock.packages.len(),
        lock.wheel_count(),
        lock.sha256
    );
    if !p.is_locked() {
        crate::errln!("note: matrix.toml still marks {} as not locked; set status = \"locked\" after reviewing the file", Visible(&p.name));
    }
    Ok(Exit::Pass)
}

fn load_facts(facts: Option<PathBuf>, sysroot: Option<PathBuf>) -> Result<greta_probe::Facts> {
    if let Some(path) = facts {
        let text = crate::read::text_capped(&path, crate::read::MAX_DATA_FILE)?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            let at = greta_vocab::Place::new(path.display(), e.line(), e.column());
            anyhow::anyhow!("{at}: not JSON: {e}")
        })?;
        let obj = v.get("facts").cloned().unwrap_or(v);
        // Facts from other sources (or older greta) may omit fields: the probe fills them with defaults.
        return greta_probe::Facts::from_json_lenient(obj)
            .map_err(|e| anyhow::anyhow!("{}: not probe facts: {e}", path.display()));
    }
    let root = match sysroot {
        Some(d) => greta_probe::Root::sysroot(&d)
            .map_err(|e| anyhow::anyhow!("sysroot {}: {e}", d.display()))?,
        None => greta_probe::Root::live(),
    };
    Ok(greta_probe::Probe::new(&root)
        .envs_at(crate::envs::EnvRoot::dir_in)
        .run()
        .facts)
}

fn select(
    m: &Matrix,
    facts: Option<PathBuf>,
    sysroot: Option<PathBuf>,
    profile: Option<String>,
    json: bool,
) -> Result<Exit> {
    let host = crate::install::host::of(&load_facts(facts, sysroot)?);
    match m.select_with(&host, profile.as_deref()) {
        Ok(sel) => {
            if json {
                crate::out::print_json(&SelectOutput {
                    ok: true,
                    refusal: None,
                    schema: SELECT_SCHEMA,
                    selection: Some(sorted(&sel)?),
                })?;
            } else {
                outln!("profile: {}", Visible(&sel.profile));
                for r in &sel.reasons {
                    outln!("  because: {}", Visible(r));
                }
                for (k, v) in &sel.env_vars {
                    outln!("  sets: {}={}", Visible(k), Visible(v));
                }
                for w in &sel.warnings {
                    outln!("  warning: {}", Visible(w));
                }
            }
            Ok(Exit::Pass)
        }
        Err(lock::Error::Refused(r)) => {
            if json {
                crate::out::print_json(&SelectOutput {
                    ok: false,
                    refusal: Some(RefusalOutput {
                        fix: &r.fix,
                        message: &r.message,
                    }),
                    schema: SELECT_SCHEMA,
                    selection: None,
                })?;
            } else {
                outln!("refused: {}", Visible(&r.message));
                outln!("  fix: {}", Visible(&r.fix));
            }
            Ok(Exit::Fail)
        }
        Err(e) => Err(e.into()),
    }
}

const SELECT_SCHEMA: &str = "greta.lock-select/v1";

/// `lock select --json` (schema greta.lock-select/v1): fields in the order
/// the output has always had (alphabetical), absent ones left out.
#[derive(serde::Serialize)]
struct SelectOutput<'a> {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<RefusalOutput<'a>>,
    schema: &'static str,
    /// The selection's fields in sorted order, as the output has always
    /// had them (see [`sorted`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    selection: Option<serde_json::Value>,
}

/// A value with every object's keys in sorted order: the order these
/// outputs have had since they were first written, which scripts and the
/// schema pins compare byte for byte.
fn sorted<T: serde::Serialize>(v: &T) -> Result<serde_json::Value> {
    Ok(serde_json::to_value(v)?)
}

#[derive(serde::Serialize)]
struct RefusalOutput<'a> {
    fix: &'a str,
    message: &'a str,
}

/// `lock list --json` (schema greta.lock-list/v1), fields alphabetical as
/// the output has always had them.
#[derive(serde::Serialize)]
struct ListOutput<'a> {
    lock_set: LockSetOutput<'a>,
    matrix: &'a std::path::Path,
    /// Sorted keys, see [`sorted`].
    profiles: serde_json::Value,
    schema: &'static str,
}

/// Which lock set is in effect and why.
#[derive(serde::Serialize)]
struct LockSetOutput<'a> {
    dir: Option<&'a std::path::Path>,
    origin: &'a str,
    why: String,
}

/// The profile this machine would get, for `lock list` to mark (the same
/// selection `greta lock select` explains); none when it refuses.
fn this_machines_profile(m: &Matrix) -> Option<String> {
    let host = crate::install::host::of(&load_facts(None, None).ok()?);
    m.select_with(&host, None).ok().map(|s| s.profile)
}

fn list(m: &Matrix, json: bool, verbose: u8) -> Result<Exit> {
    if json {
        crate::out::print_json(&ListOutput {
            lock_set: LockSetOutput {
                dir: m.dir.on_disk(),
                origin: m.dir.origin_name(),
                why: m.dir.why(),
            },
            matrix: &m.path,
            profiles: sorted(&m.profiles)?,
            schema: "greta.lock-list/v1",
        })?;
        return Ok(Exit::Pass);
    }
    outln!("lock set: {}", Visible(&m.dir.why()));
    if verbose > 0 {
        // What exactly is in effect: each file with its digest, so two
        // machines can compare their sets.
        let mut names = vec![lock::MATRIX_FILE.to_string()];
        names.extend(m.profiles.iter().map(|p| p.lockfile_name.clone()));
        names.push(crate::envs::uv_bootstrap::TOOLS_FILE.to_string());
        for n in names {
            match m.dir.read(&n)? {
                Some(t) => outln!(
                    "  {:<36} {:>8} bytes  sha256 {}",
                    Visible(&m.dir.shown(&n).display().to_string()),
                    t.len(),
                    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(t.as_bytes()))
                ),
                None => outln!(
                    "  {:<36} (absent)",
                    Visible(&m.dir.shown(&n).display().to_string())
                ),
            }
        }
    }
    // Columns as wide as their widest cell; `*` marks this machine's profile.
    let mine = this_machines_profile(m);
    let head = ["profile", "backend", "status", "python", "lockfile"];
    let rows: Vec<[String; 5]> = m
        .profiles
        .iter()
        .map(|p| {
            let status = match &p.status {
                LockStatus::Locked => "locked",
                LockStatus::NotLocked { .. } => "NOT LOCKED",
            };
            [
                Visible(&p.name).to_string(),
                p.backend.as_str().to_string(),
                status.to_string(),
                Visible(&p.python.join(",")).to_string(),
                Visible(&p.lockfile_name).to_string(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..5)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let cells = |r: &[String]| -> String {
        r.iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}  ", " ".repeat(w - c.chars().count())))
            .collect()
    };
    let indent = "  ";
    outln!("{indent}{}summary", cells(&head.map(String::from)));
    for (p, row) in m.profiles.iter().zip(&rows) {
        let mark = if mine.as_deref() == Some(p.name.as_str()) {
            "* "
        } else {
            indent
        };
        outln!("{mark}{}{}", cells(row), Visible(&p.summary));
        if p.device_extra.is_some() {
            // Which GPUs it serves is the point of such a profile.
            outln!(
                "{indent}  device wheels per target: {}",
                Visible(&p.gfx.join(" "))
            );
        }
    }
    match &mine {
        Some(_) => outln!("* this machine's profile (greta lock select says why)"),
        None => outln!("no profile fits this machine as it is (greta lock select says why)"),
    }
    Ok(Exit::Pass)
}

fn show(
    m: &Matrix,
    name: &str,
    python: Option<String>,
    interpreter: Option<PathBuf>,
    devices: &[String],
    json: bool,
) -> Result<Exit> {
    let p = m.profile(name)?;
    // Device extras: the named targets' (a target the profile does not carry
    // is refused by `resolve`, naming those it does), else every target's.
    let extras: Vec<String> = if devices.is_empty() {
        p.device_extras()
    } else {
        devices
            .iter()
            .map(|g| {
                p.device_extra_for(g)
                    .unwrap_or_else(|| format!("device-{}", g.to_ascii_lowercase()))
            })
            .collect()
    };
    let interps: Vec<Interpreter> = match (python, interpreter) {
        (_, Some(path)) => vec![Interpreter::inspect(&path)?],
        (Some(v), None) => vec![Interpreter::synthetic(
            &v,
            lock::host_glibc().or(Some(check::CHECK_GLIBC)),
        )?],
        (None, None) => p
            .python
            .iter()
            .filter(|v| p.supports_python(v))
            .map(|v| Interpreter::synthetic(v, lock::host_glibc().or(Some(check::CHECK_GLIBC))))
            .collect::<lock::Result<_>>()?,
    };
    if let LockStatus::NotLocked { reason } = &p.status {
        if json {
            let v = serde_json::json!({ "schema": "greta.lock-show/v1", "profile": p, "locked": false, "reason": reason });
            outln!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            print_profile(p);
            outln!("NOT LOCKED: {}", Visible(reason));
            outln!(
                "fix: run `greta lock update {}` where {} is reachable",
                Visible(&p.name),
                Visible(&shown_indexes(p))
            );
        }
        return Ok(Exit::Fail);
    }
    // From the lock set, which may be the one built into greta.
    let lockfile = p.load_lockfile()?;
    let mut sets = Vec::new();
    let mut failed = false;
    for i in &interps {
        match lock::resolve(p, &lockfile, i, &extras) {
            Ok(pins) => sets.push((i.clone(), Ok(pins))),
            Err(e) => {
                failed = true;
                sets.push((i.clone(), Err(format!("{e:#}"))));
            }
        }
    }
    if json {
        let v = serde_json::json!({
            "schema": "greta.lock-show/v1",
            "profile": p,
            "lockfile": { "path": lockfile.path, "sha256": lockfile.sha256 },
            "sets": sets.iter().map(|(i, r)| match r {
                Ok(pins) => serde_json::json!({
                    "interpreter": i, "wheels": pins,
                    "total_size": pins.iter().map(|w| w.wheel.size).sum::<Option<u64>>(),
                }),
                Err(e) => serde_json::json!({ "interpreter": i, "error": e }),
            }).collect::<Vec<_>>(),
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_profile(p);
        outln!(
            "lockfile: {} (sha256 {})",
            Visible(&lockfile.path.display().to_string()),
            lockfile.sha256
        );
        for (i, r) in &sets {
            outln!();
            outln!("{}:", Visible(&i.describe()));
            match r {
                Err(e) => outln!("  cannot resolve: {}", Visible(e)),
                Ok(pins) => {
                    for w in pins {
                        let size = w
                            .wheel
                            .size
                            .map(greta_vocab::size::bytes)
                            .unwrap_or_else(|| "size ?".into());
                        outln!(
                            "  {} {}  {}  [{}]",
                            Visible(&w.wheel.name),
                            Visible(&w.wheel.version.to_string()),
                            Visible(&w.wheel.filename),
                            size
                        );
                        outln!("      sha256 {}  line {}", w.wheel.sha256, w.line);
                        outln!("      why: {}", Visible(&w.why));
                    }
                    let known: u64 = pins.iter().filter_map(|w| w.wheel.size).sum();
                    let unknown = pins.iter().filter(|w| w.wheel.size.is_none()).count();
                    let extra = if unknown > 0 {
                        format!(" + {unknown} wheel(s) of unrecorded size")
                    } else {
                        String::new()
                    };
                    outln!(
                        "  {} wheels, {}{extra}",
                        pins.len(),
                        greta_vocab::size::bytes(known)
                    );
                }
            }
        }
    }
    Ok(if failed { Exit::Fail } else { Exit::Pass })
}

/// The profile's index URLs as printed: credentials hidden.
fn shown_indexes(p: &lock::Profile) -> String {
    let shown: Vec<_> = p.indexes.iter().map(|i| redact(i)).collect();
    shown.join(", ")
}

fn print_profile(p: &lock::Profile) {
    outln!(
        "profile {} ({}): {}",
        Visible(&p.name),
        p.backend.as_str(),
        Visible(&p.summary)
    );
    if let Some(v) = &p.backend_version {
        outln!(
            "  built against {} {}; serves host {}",
            p.backend.as_str(),
            Visible(&v.to_string()),
            Visible(&p.serves.to_string())
        );
    }
    if let Some(d) = &p.driver {
        outln!("  kernel driver {}", Visible(&d.to_string()));
    }
    if !p.gfx.is_empty() {
        outln!("  gfx targets: {}", Visible(&p.gfx.join(" ")));
    }
    outln!(
        "  python: {}; indexes: {}",
        Visible(&p.python.join(", ")),
        Visible(&shown_indexes(p))
    );
    for (py, why) in &p.incomplete {
        outln!(
            "  python {} not locked: {}",
            Visible(&py.to_string()),
            Visible(&why.to_string())
        );
    }
    outln!("  requirements: {}", Visible(&p.requirements.join("; ")));
    for n in &p.notes {
        outln!("  note: {}", Visible(n));
    }
}

fn run_check(m: &Matrix, json: bool) -> Result<Exit> {
    let reports = check::check_matrix(m);
    let n_problems: usize = reports.iter().map(|r| r.problems.len()).sum();
    if json {
        let v = serde_json::json!({ "schema": "greta.lock-check/v1", "ok": n_problems == 0, "profiles": reports });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for r in &reports {
            let glyph = if !r.problems.is_empty() {
                "✗"
            } else if r.status == "locked" {
                "✓"
            } else {
                "-"
            };
            let sets: Vec<String> = r
                .wheel_sets
                .iter()
                .map(|(py, n, size)| {
                    format!(
                        "py{py}: {n} wheels {}",
                        size.map(greta_vocab::size::bytes)
                            .unwrap_or_else(|| "(some sizes unrecorded)".into())
                    )
                })
                .collect();
            outln!(
                "{glyph} {:<9} {:<40} {}",
                Visible(&r.profile),
                Visible(&r.status),
                Visible(&sets.join(", "))
            );
            for pr in &r.problems {
                outln!(
                    "    {}: {}",
                    Visible(&pr.at.to_string()),
                    Visible(&pr.message)
                );
            }
        }
        outln!(
            "{} profiles, {} problem(s){}",
            reports.len(),
            n_problems,
            if n_problems == 0 {
                ""
            } else {
                ": lock check failed"
            }
        );
    }
    Ok(if n_problems == 0 {
        Exit::Pass
    } else {
        Exit::Fail
    })
}
