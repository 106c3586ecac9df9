//! The steps of `greta install` (and the shared front half of `greta bundle`):
//!
//! 1. plan: matrix → profile (explained), interpreter, lockfile → wheel set.
//!    Everything that can be wrong with the inputs fails here, before a
//!    single file is written.
//! 2. fetch: every wheel verified into the cache (or from a bundle).
//! 3. build: venv in a staging dir, wheels installed from the verified local
//!    files only, receipt and activation script written.
//! 4. check: import torch/triton/jax in the staged env; smoke gate.
//! 5. swap: rename into place; the previous env survives every failure.
//!
//! `GRETA_TEST_PAUSE_AT=<step>` stops the process at a step boundary (the
//! kill tests use it to SIGKILL an install at known points).

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::envs::{self, build::Staging, check, installer, EnvRoot, Receipt};
use crate::fetch::{self, Artifact, Cache, FetchOptions, Fetched};
use crate::lock::{self, Interpreter, LockDir, Matrix, Profile, Selection, WheelPin};

/// Manifest of a bundle directory.
pub const BUNDLE_MANIFEST: &str = "greta-bundle.json";
pub const BUNDLE_SCHEMA: &str = "greta.bundle/v1";

/// What was decided before anything is written.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub profile: String,
    pub backend: String,
    pub backend_version: Option<String>,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub env_vars: BTreeMap<String, String>,
    pub python: PythonPlan,
    pub lockfile: PathBuf,
    /// The lock set the profile came from, and why it is in effect.
    pub lock_dir: LockDir,
    pub lock_sha256: String,
    pub wheels: Vec<WheelPin>,
    /// Probe summary (what the profile was chosen from).
    pub probe: serde_json::Value,
    /// The interpreter query's answer, stored in the query cache once the
    /// install starts writing (planning writes nothing).
    #[serde(skip)]
    pub queried_interpreter: Option<Interpreter>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PythonPlan {
    pub path: Option<PathBuf>,
    pub version: String,
    pub why: String,
}

pub struct PlanInput<'a> {
    pub lock_dir: &'a LockDir,
    pub profile: Option<&'a str>,
    /// A real interpreter to inspect.
    pub python: Option<&'a Path>,
    /// "X.Y" for a synthetic interpreter (bundles for another node).
    pub python_version: Option<&'a str>,
    pub sysroot: Option<&'a Path>,
    /// Probe this machine (install); a bundle is for another node, so its
    /// facts would be the wrong ones.
    pub probe: bool,
}

/// Step 1: every input read and validated, nothing written.
///
/// The probe runs on its own thread while the interpreter is asked (when
/// the profile or the interpreter path is already known) and the lockfile of
/// a `--profile` is read: a warm `greta install` spends its plan time on
/// whichever is slowest, not on their sum.
pub fn plan(input: &PlanInput) -> Result<Plan> {
    let matrix = Matrix::load(input.lock_dir)?;
    let cache_dir = Cache::default_root().ok();
    let forced = input.profile.and_then(|n| matrix.profile(n).ok());
    std::thread::scope(|s| {
        let probe = input
            .probe
            .then(|| s.spawn(|| probe_facts(input.sysroot, input.profile.is_some())));
        // The interpreter does not depend on the facts when its path is
        // given or the profile is forced: ask it while the probe runs.
        let early = match (input.python, forced) {
            (Some(_), _) | (None, Some(_)) if input.probe => {
                let cache = cache_dir.as_deref();
                Some(s.spawn(move || match forced {
                    Some(p) => interpreter(p, input.python, input.python_version, cache),
                    None => interpreter_at(input.python.expect("path given"), cache),
                }))
            }
            _ => None,
        };
        let forced_lock = forced.map(|p| (p.name.clone(), p.load_lockfile()));
        let (facts, probe) = match probe {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("the probe panicked"))??,
            None => (
                Default::default(),
                serde_json::json!({"sources": ["not probed: bundle for another node"]}),
            ),
        };
        let sel: Selection = matrix.select_with(&facts, input.profile)?;
        let profile = matrix.profile(&sel.profile)?.clone();
        profile.ensure_locked()?;
        let (interp, why, queried) = match early {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("interpreter check panicked"))??,
            None => interpreter(
                &profile,
                input.python,
                input.python_version,
                cache_dir.as_deref(),
            )?,
        };
        let lockfile = match forced_lock {
            Some((name, l)) if name == profile.name => l?,
            _ => profile.load_lockfile()?,
        };
        let wheels = lock::resolve(&profile, &lockfile, &interp)?;
        if wheels.is_empty() {
            bail!(
                "{}: no package applies to {}",
                lockfile.path.display(),
                interp.describe()
            );
        }
        for w in &wheels {
            artifact(w).validate()?;
        }
        Ok(Plan {
            profile: profile.name.clone(),
            backend: profile.backend.as_str().to_string(),
            backend_version: profile.backend_version.clone(),
            reasons: sel.reasons,
            warnings: sel.warnings,
            env_vars: sel.env_vars.into_iter().collect(),
            python: PythonPlan {
                path: interp.path.clone(),
                version: interp.version.clone(),
                why,
            },
            lockfile: lockfile.path.clone(),
            lock_dir: input.lock_dir.clone(),
            lock_sha256: lockfile.sha256.clone(),
            wheels,
            probe,
            queried_interpreter: queried,
        })
    })
}

pub fn artifact(w: &WheelPin) -> Artifact {
    Artifact {
        name: w.name.clone(),
        version: w.version.clone(),
        filename: w.filename.clone(),
        url: w.url.clone(),
        sha256: w.sha256.clone(),
        size: w.size,
    }
}

/// Facts for profile choice, from the live machine or a captured sysroot
/// (the doctor's engine, read-only; what it reads is the probe's
/// [`greta_probe::Scope::Profile`]), plus the summary kept in the receipt.
fn probe_facts(
    sysroot: Option<&Path>,
    profile_forced: bool,
) -> Result<(greta_probe::Facts, serde_json::Value)> {
    let root = match sysroot {
        Some(d) => {
            greta_probe::Root::sysroot(d).with_context(|| format!("--sysroot {}", d.display()))?
        }
        None => greta_probe::Root::live(),
    };
    let facts = greta_probe::Probe::new(&root)
        .scope(greta_probe::Scope::Profile {
            forced: profile_forced,
        })
        .envs_at(crate::envs::EnvRoot::dir_in)
        .run()
        .facts;
    let summary = probe_summary(&facts);
    Ok((facts, summary))
}

/// The facts a support engineer needs to judge an env: GPUs, driver, ROCm.
pub fn probe_summary(f: &greta_probe::Facts) -> serde_json::Value {
    let gpus: Vec<_> = f
        .gpus
        .iter()
        .map(|g| {
            serde_json::json!({
                "vendor": g.vendor, "name": g.name, "gfx": g.gfx, "vf": g.vf,
                "pci_id": match (g.vendor_id, g.device_id) { (Some(v), Some(d)) => Some(format!("{v:04x}:{d:04x}")), _ => None },
            })
        })
        .collect();
    serde_json::json!({
        "sources": f.sources,
        "kernel": f.kernel_version,
        "kernel_driver_version": f.kernel_driver_version,
        "gpus": gpus,
        "rocm_version": f.rocm.version,
        "hsa_override_gfx_version": f.rocm.hsa_override_gfx_version,
        "vulkan_drivers": f.vulkan.drivers,
    })
}

/// `--python PATH`, else the newest interpreter on PATH the profile supports.
fn interpreter(
    profile: &Profile,
    path: Option<&Path>,
    version: Option<&str>,
    cache: Option<&Path>,
) -> Result<Found> {
    if let Some(v) = version {
        let i = Interpreter::synthetic(v, lock::host_glibc())?;
        if !profile.supports_python(&i.xy()) {
            bail!(lock::Refusal {
                message: format!(
                    "profile `{}` does not support Python {}",
                    profile.name,
                    i.xy()
                ),
                fix: format!("use one of Python {}", profile.python.join(", ")),
            });
        }
        return Ok((i, format!("--python {v} (no interpreter run)"), None));
    }
    if let Some(p) = path {
        return interpreter_at(p, cache);
    }
    let mut tried = Vec::new();
    for xy in profile
        .python
        .iter()
        .rev()
        .filter(|v| profile.supports_python(v))
    {
        let exe = format!("python{xy}");
        if let Ok(p) = which::which(&exe) {
            match Interpreter::inspect_cached(&p, cache) {
                Ok((i, hit)) if i.xy() == *xy => {
                    return Ok((
                        behind_shim(i.clone()),
                        format!(
                            "newest Python on PATH that {} supports ({exe})",
                            profile.name
                        ),
                        (!hit).then_some(i),
                    ));
                }
                Ok((i, _)) => tried.push(format!("{} is {}", p.display(), i.version)),
                Err(e) => tried.push(format!("{}: {e:#}", p.display())),
            }
        }
    }
    if let Ok(p) = which::which("python3") {
        if let Ok((i, hit)) = Interpreter::inspect_cached(&p, cache) {
            if profile.supports_python(&i.xy()) {
                return Ok((
                    behind_shim(i.clone()),
                    "python3 on PATH".to_string(),
                    (!hit).then_some(i),
                ));
            }
            tried.push(format!("{} is {}", p.display(), i.version));
        }
    }
    Err(lock::Refusal {
        message: format!(
            "python.missing: no Python that profile `{}` supports ({}) was found on PATH{}",
            profile.name,
            profile.python.join(", "),
            if tried.is_empty() { String::new() } else { format!(" (tried: {})", tried.join("; ")) }
        ),
        fix: format!("install one (e.g. apt-get install python3 python3-venv) or pass --python PATH to a Python {}", profile.python.join("/")),
    }
    .into())
}

/// An interpreter to build with, why it was chosen, and, when the query
/// cache did not have it, the answer as asked (before a shim was looked
/// behind), to be stored there.
type Found = (Interpreter, String, Option<Interpreter>);

/// `--python PATH`: that interpreter (behind a pyenv-style shim).
fn interpreter_at(p: &Path, cache: Option<&Path>) -> Result<Found> {
    let (i, hit) = Interpreter::inspect_cached(p, cache)?;
    Ok((
        behind_shim(i.clone()),
        format!("--python {}", p.display()),
        (!hit).then_some(i),
    ))
}

/// pyenv/asdf put shell scripts named `python3.X` on PATH that cost a
/// shell and a lookup on every start; the env is built from (and records)
/// the interpreter behind them.
fn behind_shim(mut i: Interpreter) -> Interpreter {
    let Some(p) = i.path.clone() else { return i };
    let mut head = [0u8; 2];
    let is_script = crate::read::open_regular(&p)
        .ok()
        .is_some_and(|mut f| std::io::Read::read_exact(&mut f, &mut head).is_ok())
        && &head == b"#!";
    if !is_script {
        return i;
    }
    let mut cmd = std::process::Command::new(&p);
    cmd.args(["-I", "-S", "-c", "import sys; print(sys.executable)"]);
    if let Ok(o) = installer::run(cmd, Some(Duration::from_secs(20))) {
        let real = PathBuf::from(o.stdout.trim());
        if o.status.success() && real.is_absolute() && real.is_file() {
            i.path = Some(real);
        }
    }
    i
}

/// The plan, one line per decision, for people.
pub fn explain(plan: &Plan) -> String {
    let mut s = format!("profile {} ({}):\n", plan.profile, plan.backend);
    for r in &plan.reasons {
        s.push_str(&format!("  - {r}\n"));
    }
    for w in &plan.warnings {
        s.push_str(&format!("  ! {w}\n"));
    }
    for (k, v) in &plan.env_vars {
        s.push_str(&format!("  env: {k}={v} (set by greta-activate)\n"));
    }
    s.push_str(&format!(
        "python {}: {}\n",
        plan.python.version, plan.python.why
    ));
    s.push_str(&format!("lock set: {}\n", plan.lock_dir.why()));
    s.push_str(&format!(
        "lockfile {} (sha256 {})\n",
        plan.lockfile.display(),
        &plan.lock_sha256[..16]
    ));
    if plan.backend == "rocm" {
        let gfx = probe_gfx(&plan.probe);
        s.push_str(&format!(
            "HIP step: no build; greta loads libamdhip64 + hiprtc at run time (the env's own ROCm wheels first), the smoke gate runs with --backend hip{}\n",
            if gfx.is_empty() {
                String::new()
            } else {
                format!(" (kernels compiled by hiprtc for {})", gfx.join(", "))
            }
        ));
    }
    let total: u64 = plan.wheels.iter().filter_map(|w| w.size).sum();
    s.push_str(&format!(
        "{} wheels, {} in all:\n",
        plan.wheels.len(),
        human(total)
    ));
    for w in &plan.wheels {
        let size = w
            .size
            .map(|b| format!(", {}", human(b)))
            .unwrap_or_default();
        s.push_str(&format!(
            "  {} {}  {}{size}\n      {}\n",
            w.name, w.version, w.filename, w.why
        ));
    }
    s
}

pub fn human(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}

/// Stops here when `GRETA_TEST_PAUSE_AT` names this step (test hook).
pub fn pause_at(step: &str) {
    if std::env::var("GRETA_TEST_PAUSE_AT").is_ok_and(|s| s == step) {
        eprintln!("greta: paused at {step} (GRETA_TEST_PAUSE_AT)");
        for _ in 0..3600 {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// Everything `greta install` needs beyond the plan.
pub struct InstallInput {
    pub name: String,
    pub fetch: FetchOptions,
    pub index_url: Option<String>,
    pub bundle: Option<PathBuf>,
    pub installer: installer::Choice,
    pub smoke: bool,
    /// Run the framework gates (else the import check only).
    pub gates: bool,
    pub import_timeout: Duration,
    /// Rebuild even when the env is up to date.
    pub reinstall: bool,
    /// The env's files, checked beside the planning (see
    /// `envs::current::Contents`).
    pub early_contents: Option<std::thread::JoinHandle<envs::current::Contents>>,
    /// Print progress lines to stderr.
    pub verbose: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct WheelReport {
    pub name: String,
    pub version: String,
    pub filename: String,
    pub sha256: String,
    pub source: fetch::Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_corrupt: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SmokeReport {
    /// "pass", "fail", "undecided", "skipped".
    pub status: String,
    pub note: String,
}

#[derive(Debug, Serialize)]
pub struct InstallReport {
    pub env: PathBuf,
    pub installer: String,
    pub wheels: Vec<WheelReport>,
    pub recovery: envs::Recovery,
    pub checks: serde_json::Value,
    pub findings: Vec<check::Finding>,
    pub smoke: SmokeReport,
    /// How the venv was made ("uv venv", "uv venv (restored from its
    /// template)", "python -m venv"); empty when none was made.
    pub venv: String,
    /// True when the env was swapped into place.
    pub installed: bool,
    /// The env was already exactly this install (verified, see
    /// `envs::current`): nothing was fetched, built or swapped.
    pub up_to_date: bool,
    /// Why an existing env was rebuilt (None: there was none, or `--reinstall`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuilt_because: Option<String>,
    /// What the up-to-date check verified (present when `up_to_date`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<serde_json::Value>,
    pub timings_ms: BTreeMap<String, u128>,
}

fn say(verbose: bool, msg: impl AsRef<str>) {
    if verbose {
        eprintln!("greta: {}", msg.as_ref());
    }
}

/// Steps 2-5. `Ok` with `installed == false` means a check failed (the
/// previous env is untouched); `Err` means a step could not be done.
pub fn install(plan: &Plan, input: InstallInput) -> Result<InstallReport> {
    let mut input = input;
    let early = input.early_contents.take().and_then(|h| h.join().ok());
    let input = &input;
    envs::validate_name(&input.name)?;
    let root = EnvRoot::default_root()?;
    let cache = Cache::new(Cache::default_root()?);
    let mut timings = BTreeMap::new();
    let t0 = Instant::now();

    let guard = root.lock(&input.name)?;
    let recovery = root.recover(&input.name, &guard)?;
    if let Some(i) = &plan.queried_interpreter {
        if let Some(p) = &i.path {
            i.remember(p, cache.root());
        }
    }
    timings.insert("prepare".into(), t0.elapsed().as_millis());
    for p in &recovery.removed_staging {
        say(
            input.verbose,
            format!(
                "removed the unfinished env {} left by a killed install",
                p.display()
            ),
        );
    }
    if recovery.restored_backup {
        say(
            input.verbose,
            format!(
                "restored the previous env {} (a swap was interrupted)",
                root.env_path(&input.name).display()
            ),
        );
    }

    // Already built from exactly this plan? Then there is nothing to do.
    let env_path = root.env_path(&input.name);
    let mut rebuilt_because = None;
    let mut damaged_in_place = None;
    if !input.reinstall && env_path.exists() {
        let t = Instant::now();
        match up_to_date(plan, input, &env_path, early) {
            Ok(v) => {
                timings.insert("verify".into(), t.elapsed().as_millis());
                timings.insert("total".into(), t0.elapsed().as_millis());
                drop(guard);
                let wheels = plan
                    .wheels
                    .iter()
                    .map(|w| WheelReport {
                        name: w.name.clone(),
                        version: w.version.clone(),
                        filename: w.filename.clone(),
                        sha256: w.sha256.clone(),
                        source: fetch::Source::Installed,
                        replaced_corrupt: None,
                    })
                    .collect();
                return Ok(InstallReport {
                    env: env_path,
                    installer: v.receipt.installer.clone(),
                    wheels,
                    recovery,
                    checks: v.receipt.checks.clone(),
                    findings: vec![],
                    smoke: SmokeReport {
                        status: "skipped".into(),
                        note: "the env is up to date; nothing was rebuilt (`greta smoke` runs the gate)"
                            .into(),
                    },
                    venv: String::new(),
                    installed: false,
                    up_to_date: true,
                    rebuilt_because: None,
                    verified: Some(serde_json::json!({
                        "receipt_created": v.receipt.created,
                        "distributions": v.distributions,
                        "files": v.files,
                    })),
                    timings_ms: timings,
                });
            }
            Err(stale) => {
                say(
                    input.verbose,
                    format!("rebuilding the env: {}", stale.reason),
                );
                rebuilt_because = Some(stale.reason);
                damaged_in_place = stale.changed_in_place;
            }
        }
        timings.insert("verify".into(), t.elapsed().as_millis());
    }

    // Step 2: wheels.
    let mut items: Vec<Artifact> = plan.wheels.iter().map(artifact).collect();
    let mut fopts = input.fetch.clone();
    if let Some(dir) = &input.bundle {
        import_bundle(dir, &cache, &items)?;
        fopts.offline = true;
    } else if let Some(idx) = &input.index_url {
        if !fopts.offline {
            let client = fetch::http::client(&fopts)?;
            fetch::index::relocate(&client, idx, &mut items, &fopts)?;
        }
    }
    let fetched = fetch::fetch_all(&cache, &items, &fopts)?;
    timings.insert("fetch".into(), t0.elapsed().as_millis());
    let from_net = fetched
        .iter()
        .filter(|f| f.source == fetch::Source::Network)
        .count();
    say(
        input.verbose,
        format!(
            "{} wheels verified ({from_net} downloaded, {} from the cache)",
            fetched.len(),
            fetched.len() - from_net
        ),
    );
    pause_at("fetched");

    // Step 3: build in staging.
    let t = Instant::now();
    let python = plan
        .python
        .path
        .clone()
        .context("install needs a real interpreter")?;
    let lock_dir = &plan.lock_dir;
    let bootstrap = || -> Result<PathBuf> {
        if let Some(dir) = &input.bundle {
            let m = BundleManifest::load(dir)?;
            if let Some(b) = &m.uv {
                say(
                    input.verbose,
                    format!(
                        "uv is not on PATH: using the uv {} the bundle carries",
                        b.version
                    ),
                );
            }
            return envs::uv_bootstrap::from_bundle(dir, m.uv.as_ref(), &cache, &input.fetch);
        }
        let pin = envs::uv_bootstrap::load(lock_dir)?.with_context(|| {
            format!(
                "no uv pinned ({} has no {})",
                lock_dir,
                envs::uv_bootstrap::TOOLS_FILE
            )
        })?;
        say(
            input.verbose,
            format!("uv is not on PATH: using the pinned uv {}", pin.version),
        );
        envs::uv_bootstrap::ensure(&pin, &cache, &input.fetch)
    };
    let (tool, tool_how) = installer::Tool::choose(input.installer, Some(&python), &bootstrap)?;
    if let Some(how) = &tool_how {
        say(input.verbose, format!("installer: {how}"));
    }
    let staging = Staging::create(&root, &input.name)?;
    let venv_how = staging.make_venv(&python, &tool, Some(cache.root()))?;
    timings.insert("venv".into(), t.elapsed().as_millis());
    pause_at("venv");
    let t = Instant::now();
    // "uv 0.9.1" for the receipt, asked while the install runs.
    let describe = {
        let (tool, vp) = (tool.clone(), staging.path.join("bin").join("python"));
        let cache_root = cache.root().to_path_buf();
        std::thread::spawn(move || tool.describe_cached(&vp, Some(&cache_root)))
    };
    // The import-check interpreters start now and wait: their start-up
    // overlaps the install (they import nothing before it is done).
    let names: Vec<String> = plan.wheels.iter().map(|w| w.name.clone()).collect();
    let modules = check::modules_for(&names);
    let prestarted = check::prestart(&staging.path, &modules, &plan.env_vars, input.gates);
    let files: Vec<PathBuf> = fetched.iter().map(|f| f.path.clone()).collect();
    // A file of the old env changed in place: uv linked it from its cache,
    // so that cached copy is damaged too. Drop uv's entries for that
    // distribution so it unpacks the verified wheel again; if uv cannot,
    // install this once without uv's cache.
    let mut fresh = false;
    if let (Some(dist), installer::Tool::Uv(_)) = (&damaged_in_place, &tool) {
        match tool.clean_cache(dist) {
            Ok(()) => say(
                input.verbose,
                format!("uv's cache entries for {dist} were dropped (its installed files had been changed in place, and uv links them from its cache)"),
            ),
            Err(e) => {
                say(input.verbose, format!("{e:#}; installing without uv's cache"));
                fresh = true;
            }
        }
    }
    // Every file was hashed moments ago (cache hit or download): no second
    // pass, unless the installer fails: a cached file its stamp vouched for
    // may be damaged all the same (bit rot, a tool that restores times), and
    // then every rerun failed inside uv until GRETA_VERIFY_CACHE=1. Re-hash
    // the plan's files and drop any that is wrong, so the rerun fetches it.
    if let Err(e) = tool.install(&staging.path, &files, fresh) {
        let bad: Vec<String> = fetched
            .iter()
            .filter_map(|f| cache.reverify(&f.artifact).ok().flatten())
            .collect();
        if bad.is_empty() {
            return Err(e);
        }
        return Err(e.context(format!(
            "{} cached file(s) failed re-verification and were removed (rerun to fetch them again): {}",
            bad.len(),
            bad.join("; ")
        )));
    }
    timings.insert("install".into(), t.elapsed().as_millis());
    let mut installer_name = describe.join().unwrap_or_else(|_| "unknown".into());
    if let (installer::Tool::Uv(_), Some(how)) = (&tool, &tool_how) {
        installer_name = format!("{installer_name} ({how})");
    }
    say(
        input.verbose,
        format!("installed {} wheels with {installer_name}", files.len()),
    );
    pause_at("installed");

    // Step 4: checks, in the staged env.
    let t = Instant::now();
    let expect = check::Expect {
        profile: plan.profile.clone(),
        backend: plan.backend.clone(),
        version: plan.backend_version.as_deref().map(major_minor),
        probe: plan.probe.clone(),
    };
    let report = prestarted.run(&expect, input.import_timeout)?;
    timings.insert("import_check".into(), t.elapsed().as_millis());
    let wheels_report: Vec<WheelReport> = fetched.iter().map(wheel_report).collect();
    // A check failed before the swap: the previous env stays, nothing installed.
    let stopped = |findings: Vec<check::Finding>, smoke: SmokeReport, timings_ms| InstallReport {
        env: root.env_path(&input.name),
        installer: installer_name.clone(),
        wheels: wheels_report.clone(),
        recovery: recovery.clone(),
        checks: report.modules.clone(),
        findings,
        smoke,
        venv: venv_how.to_string(),
        installed: false,
        up_to_date: false,
        rebuilt_because: rebuilt_because.clone(),
        verified: None,
        timings_ms,
    };
    if !report.findings.is_empty() {
        let skipped = SmokeReport {
            status: "skipped".into(),
            note: "the post-install check (imports, framework gates) failed".into(),
        };
        return Ok(stopped(report.findings.clone(), skipped, timings));
    }
    // The HIP worker (rocm profiles): into the staged env, kernels built for
    // this GPU; a failure is a finding and the previous env stays.
    let hip = if plan.backend == "rocm" {
        let t = Instant::now();
        let r = hip_step(plan, &staging, input.verbose);
        timings.insert("hip".into(), t.elapsed().as_millis());
        match r {
            Ok(h) => Some(h),
            Err(finding) => {
                let skipped = SmokeReport {
                    status: "skipped".into(),
                    note: "the HIP step failed".into(),
                };
                return Ok(stopped(vec![*finding], skipped, timings));
            }
        }
    } else {
        None
    };
    let smoke = if input.smoke {
        run_smoke(hip.as_ref().map(|_| staging.path.as_path()))
    } else {
        SmokeReport {
            status: "skipped".into(),
            note: "--no-smoke".into(),
        }
    };
    if smoke.status == "fail" {
        let finding = check::Finding {
            id: "smoke.ultrasafe-failed".into(),
            severity: "fail".into(),
            title: "the ultrasafe smoke gate failed on this machine".into(),
            evidence: smoke.note.clone(),
            fix: "run `greta doctor`; to install the env anyway, rerun with --no-smoke".into(),
        };
        return Ok(stopped(vec![finding], smoke, timings));
    }
    pause_at("checked");

    // Receipt and activation, with the final paths.
    let receipt = Receipt {
        schema: envs::receipt::SCHEMA.into(),
        name: input.name.clone(),
        profile: plan.profile.clone(),
        backend: plan.backend.clone(),
        python: envs::receipt::PythonInfo {
            path: staging
                .target
                .join("bin")
                .join("python")
                .display()
                .to_string(),
            version: plan.python.version.clone(),
            base: Some(python.display().to_string()),
        },
        lockfile: envs::receipt::LockRef {
            path: plan.lockfile.display().to_string(),
            sha256: plan.lock_sha256.clone(),
        },
        wheels: fetched
            .iter()
            .map(|f| envs::receipt::WheelRef {
                name: f.artifact.name.clone(),
                version: f.artifact.version.clone(),
                filename: f.artifact.filename.clone(),
                sha256: f.artifact.sha256.clone(),
            })
            .collect(),
        installer: installer_name.clone(),
        env_vars: plan.env_vars.clone(),
        probe: plan.probe.clone(),
        checks: at_final_path(&report.modules, &staging.path, &staging.target),
        greta_version: env!("CARGO_PKG_VERSION").into(),
        created: envs::receipt::now_rfc3339(),
        hip: hip.map(|h| h.record),
    };
    let t = Instant::now();
    staging.relocate(&xy_of(&plan.python.version))?;
    envs::activate::write(
        &staging.path,
        &staging.target,
        &plan.profile,
        &plan.env_vars,
    )?;
    receipt.write(&staging.path)?;
    timings.insert("receipt".into(), t.elapsed().as_millis());

    // Step 5: swap.
    let t = Instant::now();
    let env = staging.promote(&root, &input.name, &pause_at)?;
    timings.insert("swap".into(), t.elapsed().as_millis());
    timings.insert("total".into(), t0.elapsed().as_millis());
    drop(guard);
    Ok(InstallReport {
        env,
        installer: installer_name,
        wheels: wheels_report,
        recovery,
        checks: report.modules,
        findings: vec![],
        smoke,
        venv: venv_how.to_string(),
        installed: true,
        up_to_date: false,
        rebuilt_because,
        verified: None,
        timings_ms: timings,
    })
}

/// Whether the env at `env` is what this plan would build (see
/// `envs::current`); `Err` says what differs.
fn up_to_date(
    plan: &Plan,
    input: &InstallInput,
    env: &Path,
    early: Option<envs::current::Contents>,
) -> std::result::Result<envs::current::Verified, envs::current::Stale> {
    let python = plan
        .python
        .path
        .as_deref()
        .ok_or_else(|| envs::current::Stale {
            reason: "no real interpreter in the plan".into(),
            changed_in_place: None,
        })?;
    let want = envs::current::Wanted {
        name: &input.name,
        profile: &plan.profile,
        lock_sha256: &plan.lock_sha256,
        wheels: plan
            .wheels
            .iter()
            .map(|w| {
                (
                    w.name.as_str(),
                    w.version.as_str(),
                    w.filename.as_str(),
                    w.sha256.as_str(),
                )
            })
            .collect(),
        env_vars: &plan.env_vars,
        python,
        python_version: &plan.python.version,
        installer: match input.installer {
            installer::Choice::Auto => None,
            installer::Choice::Uv => Some("uv"),
            installer::Choice::Pip => Some("pip"),
        },
    };
    envs::current::verify(env, &want, early)
}

fn wheel_report(f: &Fetched) -> WheelReport {
    WheelReport {
        name: f.artifact.name.clone(),
        version: f.artifact.version.clone(),
        filename: f.artifact.filename.clone(),
        sha256: f.artifact.sha256.clone(),
        source: f.source,
        replaced_corrupt: f.replaced_corrupt.clone(),
    }
}

/// The import check ran in the staging dir; the receipt names the final one.
fn at_final_path(v: &serde_json::Value, staging: &Path, target: &Path) -> serde_json::Value {
    let text = v.to_string();
    let from = serde_json::to_string(&staging.display().to_string()).unwrap_or_default();
    let to = serde_json::to_string(&target.display().to_string()).unwrap_or_default();
    // Both are JSON string literals; strip the quotes to replace inside strings.
    let (from, to) = (&from[1..from.len() - 1], &to[1..to.len() - 1]);
    serde_json::from_str(&text.replace(from, to)).unwrap_or_else(|_| v.clone())
}

/// "3.11.7" → "3.11".
fn xy_of(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// "6.4.1" → "6.4": torch reports the ROCm/CUDA minor it was built with.
fn major_minor(v: &str) -> String {
    v.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// What the HIP step found for the staged env.
struct HipDone {
    record: envs::receipt::HipRef,
}

/// AMD gfx targets the probe saw ("gfx942"), for `build-kernels --gfx`.
pub fn probe_gfx(probe: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = probe["gpus"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| g["vendor"] == "amd")
        .filter_map(|g| g["gfx"].as_str().map(String::from))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Step 4b for rocm profiles: no build. Finds the HIP runtime greta will
/// load for this env (the staged env's own ROCm wheels first, then the
/// host's) and its compiler, records both; the smoke gate then runs
/// `--backend hip` on them. No HIP runtime anywhere: a finding, and the
/// previous env stays.
fn hip_step(
    plan: &Plan,
    staging: &Staging,
    verbose: bool,
) -> std::result::Result<HipDone, Box<check::Finding>> {
    use greta_smoke::runtime::gpu::Driver;
    use greta_smoke::runtime::hip::{search_candidates, Hip, SearchEnv};
    let mut env = SearchEnv::live();
    env.env_roots.insert(0, staging.path.clone());
    let hip = Hip::open_from(&search_candidates(&env)).map_err(|e| {
        Box::new(check::Finding {
            id: "hip.runtime-missing".into(),
            severity: "fail".into(),
            title: "no HIP runtime (libamdhip64) for this rocm profile".into(),
            evidence: e.to_string(),
            fix: "the profile's torch wheels should carry libamdhip64 in torch/lib: check the lockfile; or install ROCm \
                  (or set GRETA_HIP_LIB) and rerun `greta install`; `--profile cpu` installs without HIP"
                .into(),
        })
    })?;
    let lib = hip.library().clone();
    let compiler = match hip.hiprtc() {
        Ok(l) => Some(l.to_string()),
        Err(_) => greta_smoke::runtime::hip::hipcc::choice("gfx")
            .ok()
            .map(|c| c.library.to_string()),
    };
    say(
        verbose,
        format!(
            "HIP runtime {lib}; compiler {}",
            compiler.as_deref().unwrap_or("none found")
        ),
    );
    Ok(HipDone {
        record: envs::receipt::HipRef {
            library: lib.path.display().to_string(),
            library_why: lib.why,
            compiler,
            gfx: probe_gfx(&plan.probe),
        },
    })
}

/// `greta smoke --profile ultrasafe --json` as a child with a time bound;
/// with `hip` (the staged env), `--backend hip` on that env's HIP runtime.
fn run_smoke(hip: Option<&Path>) -> SmokeReport {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return SmokeReport {
                status: "undecided".into(),
                note: format!("cannot find greta itself: {e}"),
            }
        }
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["smoke", "--profile", "ultrasafe", "--json"]);
    if let Some(env) = hip {
        cmd.args(["--backend", "hip"]).env("GRETA_ENV", env);
    }
    match installer::run(cmd, Some(Duration::from_secs(300))) {
        Err(e) => SmokeReport {
            status: "undecided".into(),
            note: format!("{e:#}"),
        },
        Ok(o) => {
            let all = format!("{}{}", o.stdout, o.stderr);
            // The summary line ("smoke ultrasafe: PASS: 2 passed, ...") or the last words.
            let note = o
                .stderr
                .lines()
                .find(|l| l.starts_with("smoke "))
                .or_else(|| all.lines().rev().find(|l| !l.trim().is_empty()))
                .unwrap_or("")
                .trim()
                .to_string();
            match o.status.code() {
                Some(0) => SmokeReport {
                    status: "pass".into(),
                    note,
                },
                Some(1) => SmokeReport {
                    status: "fail".into(),
                    note,
                },
                Some(2)
                    if all.contains("not yet implemented")
                        || all.contains("unexpected argument") =>
                {
                    SmokeReport {
                        status: "skipped".into(),
                        note: "greta smoke is not available in this build".into(),
                    }
                }
                _ => SmokeReport {
                    status: "undecided".into(),
                    note,
                },
            }
        }
    }
}

/// Manifest written by `greta bundle`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct BundleManifest {
    pub schema: String,
    /// Wall time of the fetch step of the run that made the bundle.
    #[serde(default)]
    pub fetch_ms: u128,
    pub profile: String,
    pub python: String,
    pub lockfile: String,
    pub lock_sha256: String,
    pub wheels: Vec<Artifact>,
    /// `std::env::consts::ARCH` of the machine that made the bundle: its
    /// wheels and its uv are for that architecture. Absent in bundles made
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// The pinned uv wheel under `tools/` (with `tools.toml` beside the
    /// lockfile). Absent in bundles made before bundles carried uv, or
    /// from a lock dir without `tools.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uv: Option<envs::uv_bootstrap::BundledUv>,
    pub greta_version: String,
    pub created: String,
}

/// Copies a verified cache file into a bundle. A copy, never a hard link:
/// a link changes the cached file's ctime, which made uv treat every cached
/// wheel as new and unpack the whole profile again into its own cache
/// (~5.7 GB per bundle + rebuild for the cpu profile). `std::fs::copy` uses
/// `copy_file_range`, which shares extents where the filesystem can.
fn copy_out_of_cache(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Removes `.NAME.partial-PID` directories beside a bundle's output whose
/// process is gone (a killed `greta bundle` left them for ever). A live
/// PID's directory is another bundle run's and stays.
fn remove_dead_partials(parent: &Path, name: &str) {
    let prefix = format!(".{name}.partial-");
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    for e in rd.flatten() {
        let file_name = e.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
            .filter(|p| *p > 0)
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            match envs::remove_tree(&e.path()) {
                Ok(()) => tracing::info!("removed {} (its bundle run is gone)", e.path().display()),
                Err(err) => tracing::warn!("cannot remove {}: {err:#}", e.path().display()),
            }
        }
    }
}

impl BundleManifest {
    pub fn load(dir: &Path) -> Result<BundleManifest> {
        let p = dir.join(BUNDLE_MANIFEST);
        if !p.exists() {
            anyhow::bail!(
                "{} is not a greta bundle (no {BUNDLE_MANIFEST})",
                dir.display()
            );
        }
        let text = crate::read::text_capped(&p, crate::read::MAX_DATA_FILE)?;
        let m: BundleManifest =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
        if m.schema != BUNDLE_SCHEMA {
            bail!(
                "{}: schema {:?}, this greta reads {BUNDLE_SCHEMA}",
                p.display(),
                m.schema
            );
        }
        Ok(m)
    }

    /// A bundle is for the architecture it was made on (its wheels and
    /// its uv): made elsewhere, it is refused here with both names.
    pub fn check_arch(&self, dir: &Path) -> Result<()> {
        let here = std::env::consts::ARCH;
        match &self.arch {
            Some(a) if a != here => bail!(
                "bundle {} was made on a {a} machine (its wheels and uv are for {a}); this node is {here}: make the bundle with `greta bundle` on a {here} machine",
                dir.display()
            ),
            _ => Ok(()),
        }
    }
}

/// Checks a bundle against the plan made from its own lock dir and copies
/// its wheels into the cache (each hash-verified on the way in).
fn import_bundle(dir: &Path, cache: &Cache, items: &[Artifact]) -> Result<()> {
    let m = BundleManifest::load(dir)?;
    let lock_path = dir.join(&m.lockfile);
    let lock_sha = fetch::cache::sha256_file(&lock_path)?;
    if lock_sha != m.lock_sha256 {
        bail!(
            "{}: sha256 {lock_sha} differs from the bundle manifest ({}); the bundle was modified",
            lock_path.display(),
            m.lock_sha256
        );
    }
    let mut missing = Vec::new();
    for a in items {
        if let fetch::Lookup::Hit(_) = cache.lookup(a)? {
            continue;
        }
        let src = dir.join("wheels").join(&a.filename);
        if !src.is_file() {
            missing.push(a.filename.clone());
            continue;
        }
        cache.import(&src, a)?;
    }
    if !missing.is_empty() {
        bail!(
            "bundle {} (made for Python {}) lacks {} wheel(s) this interpreter needs: {}; make the bundle with `greta bundle --python X.Y` for this node's Python",
            dir.display(),
            m.python,
            missing.len(),
            missing.join(", ")
        );
    }
    Ok(())
}

/// `greta bundle`: fetch and stage a profile's wheels + lock + manifest.
pub fn bundle(
    plan: &Plan,
    lock_dir: &LockDir,
    out: &Path,
    fopts: &FetchOptions,
    index_url: Option<&str>,
) -> Result<BundleManifest> {
    if out.exists() {
        let empty = std::fs::read_dir(out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty && !out.join(BUNDLE_MANIFEST).is_file() {
            bail!(
                "{} exists and is not empty (and not a greta bundle); choose another -o DIR",
                out.display()
            );
        }
    }
    let cache = Cache::new(Cache::default_root()?);
    let mut items: Vec<Artifact> = plan.wheels.iter().map(artifact).collect();
    if let Some(idx) = index_url {
        let client = fetch::http::client(fopts)?;
        fetch::index::relocate(&client, idx, &mut items, fopts)?;
    }
    // The pinned uv for this machine's architecture travels too (fetched
    // from its pinned URL, verified like every wheel), so a node without
    // uv does not fall back to pip.
    let arch = std::env::consts::ARCH;
    let uv = match envs::uv_bootstrap::load(lock_dir)? {
        Some(pin) => match envs::uv_bootstrap::wheel_for(&pin, arch) {
            Ok(w) => Some((
                envs::uv_bootstrap::bundled(&pin, w),
                envs::uv_bootstrap::artifact(&pin, w),
            )),
            Err(e) => {
                eprintln!("greta: the bundle carries no uv: {e:#}");
                None
            }
        },
        None => {
            eprintln!(
                "greta: the bundle carries no uv: {} has no {}",
                lock_dir,
                envs::uv_bootstrap::TOOLS_FILE
            );
            None
        }
    };
    let mut all = items.clone();
    all.extend(uv.iter().map(|(_, a)| a.clone()));
    let t = Instant::now();
    let mut fetched = fetch::fetch_all(&cache, &all, fopts)?;
    let fetch_ms = t.elapsed().as_millis();
    let uv_fetched = uv.as_ref().and_then(|_| fetched.pop());
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let fname = out
        .file_name()
        .context("-o needs a directory name")?
        .to_string_lossy()
        .into_owned();
    let tmp = parent.join(format!(".{fname}.partial-{}", std::process::id()));
    if tmp.exists() {
        envs::remove_tree(&tmp)?;
    }
    remove_dead_partials(parent, &fname);
    std::fs::create_dir_all(tmp.join("wheels"))?;
    let result = (|| -> Result<BundleManifest> {
        for f in &fetched {
            let dest = tmp.join("wheels").join(&f.artifact.filename);
            copy_out_of_cache(&f.path, &dest)?;
        }
        let lock_name = plan
            .lockfile
            .file_name()
            .context("lockfile name")?
            .to_string_lossy()
            .into_owned();
        // The lock files are written from the set in effect (built in or
        // a directory); the lockfile's hash is checked against the plan below.
        let copy_lock_file = |name: &str| -> Result<()> {
            let text = lock_dir.read_required(name)?;
            std::fs::write(tmp.join(name), text)
                .with_context(|| format!("writing {}", tmp.join(name).display()))
        };
        copy_lock_file(&lock_name)?;
        copy_lock_file(lock::matrix::MATRIX_FILE)?;
        if let Some(f) = &uv_fetched {
            let tools = tmp.join(envs::uv_bootstrap::BUNDLE_TOOLS_DIR);
            std::fs::create_dir_all(&tools)?;
            let dest = tools.join(&f.artifact.filename);
            copy_out_of_cache(&f.path, &dest)?;
            copy_lock_file(envs::uv_bootstrap::TOOLS_FILE)?;
        }
        let copied_sha = fetch::cache::sha256_file(&tmp.join(&lock_name))?;
        if copied_sha != plan.lock_sha256 {
            bail!("{} changed while bundling; rerun", plan.lockfile.display());
        }
        let m = BundleManifest {
            schema: BUNDLE_SCHEMA.into(),
            fetch_ms,
            profile: plan.profile.clone(),
            python: plan
                .python
                .version
                .split('.')
                .take(2)
                .collect::<Vec<_>>()
                .join("."),
            lockfile: lock_name,
            lock_sha256: plan.lock_sha256.clone(),
            wheels: items.clone(),
            arch: Some(arch.to_string()),
            uv: uv.as_ref().map(|(b, _)| b.clone()),
            greta_version: env!("CARGO_PKG_VERSION").into(),
            created: envs::receipt::now_rfc3339(),
        };
        std::fs::write(
            tmp.join(BUNDLE_MANIFEST),
            serde_json::to_string_pretty(&m)? + "\n",
        )?;
        Ok(m)
    })();
    let m = match result {
        Ok(m) => m,
        Err(e) => {
            let _ = envs::remove_tree(&tmp);
            return Err(e);
        }
    };
    if out.exists() {
        envs::remove_tree(out)?;
    }
    std::fs::rename(&tmp, out)
        .with_context(|| format!("moving the bundle into {}", out.display()))?;
    Ok(m)
}
