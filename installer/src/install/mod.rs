//! The steps of `greta install` (and the shared front half of `greta
//! bundle`), one file each; every step takes typed input and returns a
//! typed report, so that [`begin`] and [`ToBuild::finish`] read as the
//! sequence they are and each step can be tested on its own:
//!
//! 1. [`plan`](plan::plan): [`detect`] the machine, choose the profile
//!    (explained), the interpreter, the lockfile's wheel set. Everything
//!    that can be wrong with the inputs fails here, before a single file is
//!    written.
//! 2. [`prepare`] ([`begin`]): the env's lock, the recovery of a killed
//!    install, and whether the env is already exactly this plan (then
//!    nothing else runs). The caller may ask its question here, before
//!    anything is fetched; [`ToBuild::finish`] runs the rest.
//! 3. [`fetch`]: every wheel verified into the cache (or from a bundle).
//! 4. [`build`]: venv in a staging dir, wheels installed from the verified
//!    local files only.
//! 5. [`prove`]: import torch/triton/jax (and the framework gates) in the
//!    staged env, the HIP runtime for rocm profiles ([`hip`]), the
//!    ultrasafe [`smoke`] gate, read as its typed report.
//! 6. [`receipt`]: receipt and activation script, with the final paths.
//! 7. [`swap`]: rename into place; the previous env survives every failure.
//!
//! [`report`] assembles what `greta install` prints (text and `--json`).
//!
//! `GRETA_TEST_PAUSE_AT=<step>` stops the process at a step boundary (the
//! kill tests use it to SIGKILL an install at known points).

mod build;
pub mod bundle;
mod detect;
mod fetch;
mod hip;
pub mod host;
mod output;
pub mod plan;
mod prepare;
mod prove;
mod receipt;
pub mod report;
pub mod smoke;
mod swap;

pub use bundle::{bundle, BundleManifest, BUNDLE_MANIFEST};
pub use output::InstallOutput;
pub use plan::{explain, plan, Detail, Plan, PlanInput};
pub use report::{InstallReport, SmokeStatus};

use anyhow::Result;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::envs::{self, installer};
use crate::fetch::FetchOptions;
/// Holds the run at a named step when `GRETA_TEST_PAUSE_AT` says so (test hook).
pub use greta_vocab::pause_at;

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
    /// Bound on each run of the installer tool (`uv venv`, `uv pip
    /// install`, `pip install`, `python -m venv`).
    pub installer_timeout: Duration,
    /// Rebuild even when the env is up to date.
    pub reinstall: bool,
    /// The env's files, checked beside the planning (see
    /// `envs::current::Contents`).
    pub early_contents: Option<std::thread::JoinHandle<envs::current::Contents>>,
    /// Print progress lines to stderr.
    pub verbose: bool,
}

/// Step 2, [`prepare`]: the env's lock, recovery, and whether the env is
/// already exactly this plan. Nothing is fetched or built yet: a question
/// that only matters for a build (`greta install` of a ROCm profile where
/// no AMD GPU is seen) is asked between this and [`ToBuild::finish`], so
/// an env that is up to date is never asked about. `Err` means a step
/// could not be done.
pub fn begin(plan: &Plan, input: InstallInput) -> Result<Begun<'_>> {
    let mut input = input;
    let early = input.early_contents.take().and_then(|h| h.join().ok());
    let mut timings = Timings::start();

    let prepared = prepare::prepare(plan, &input)?;
    timings.since_start("prepare");
    // What dead or other runs left in partial/ and this plan will not
    // resume goes, also when the env turns out to be up to date.
    let needed: Vec<_> = plan.wheels.iter().map(plan::artifact).collect();
    crate::fetch::sweep_unneeded_partials(&prepared.cache, &needed);
    bundle::sweep_recorded_partials(&prepared.cache);
    match prepare::current(plan, &input, &prepared, early, &mut timings) {
        prepare::Current::UpToDate(v) => {
            timings.since_start("total");
            let env = prepared.root.env_path(&input.name);
            let recovery = prepared.release();
            Ok(Begun::UpToDate(report::up_to_date(
                plan,
                env,
                recovery,
                &v,
                timings.done(),
            )))
        }
        prepare::Current::Build(rebuild) => Ok(Begun::Build(ToBuild {
            plan,
            input,
            prepared,
            rebuild,
            timings,
        })),
    }
}

/// What [`begin`] found.
pub enum Begun<'a> {
    /// The env was already exactly this plan: its report, nothing to do.
    UpToDate(InstallReport),
    /// An env is to be built.
    Build(ToBuild<'a>),
}

/// An install that will build its env: the env's lock is held (until
/// [`ToBuild::finish`] ends or this is dropped), nothing fetched yet.
pub struct ToBuild<'a> {
    plan: &'a Plan,
    input: InstallInput,
    prepared: prepare::Prepared,
    rebuild: prepare::Rebuild,
    timings: Timings,
}

impl ToBuild<'_> {
    /// Steps 3-7. `Ok` with `installed == false` means a check failed (the
    /// previous env is untouched); `Err` means a step could not be done.
    pub fn finish(self) -> Result<InstallReport> {
        let ToBuild {
            plan,
            input,
            prepared,
            rebuild,
            mut timings,
        } = self;
        let input = &input;

        let fetched = fetch::fetch(plan, input, &prepared.cache)?;
        timings.since_start("fetch");
        pause_at("fetched");

        let (built, prestarted) =
            build::build(plan, input, &prepared, &fetched, &rebuild, &mut timings)?;
        pause_at("installed");

        let proof = prove::prove(plan, input, &built, prestarted, &mut timings)?;
        let attempt = report::Attempt {
            env: prepared.root.env_path(&input.name),
            installer: built.installer.clone(),
            wheels: fetched.wheels.iter().map(report::wheel_report).collect(),
            recovery: prepared.recovery.clone(),
            checks: proof.modules.clone(),
            venv: built.venv.to_string(),
            rebuilt_because: rebuild.because.clone(),
        };
        let (hip, smoke) = match proof.verdict {
            prove::Verdict::Stopped { findings, smoke } => {
                return Ok(attempt.stopped(findings, smoke, timings.done()));
            }
            prove::Verdict::Proven { hip, smoke } => (hip, smoke),
        };
        pause_at("checked");

        let t = Instant::now();
        let r = receipt::assemble(
            plan,
            &input.name,
            &built,
            &fetched.wheels,
            &proof.modules,
            hip,
        );
        receipt::write(plan, &built.staging, &r)?;
        timings.insert("receipt", t);

        let t = Instant::now();
        let env = swap::swap(built.staging, &prepared.root, &input.name)?;
        timings.insert("swap", t);
        timings.since_start("total");
        prepared.release();
        Ok(attempt.installed(env, smoke, timings.done()))
    }
}

/// What an install of `plan` as the env `name` would find there, for
/// `--dry-run`: read only (no lock taken, nothing written), with the same
/// verification the install makes before it decides to rebuild.
pub enum Existing {
    /// No env of that name: it would be built.
    Absent,
    /// The env is already exactly this plan: nothing would be fetched.
    UpToDate(Box<envs::current::Verified>),
    /// The env would be rebuilt, for this reason.
    Stale(String),
}

pub fn existing(plan: &Plan, name: &str, tool: installer::Choice) -> Result<Existing> {
    envs::validate_name(name)?;
    let env = envs::EnvRoot::default_root()?.env_path(name);
    if !env.exists() {
        return Ok(Existing::Absent);
    }
    Ok(match prepare::up_to_date(plan, name, tool, &env, None) {
        Ok(v) => Existing::UpToDate(Box::new(v)),
        Err(stale) => Existing::Stale(stale.reason),
    })
}

/// Milliseconds per step, under the keys the `--json` report has always
/// used ("fetch" and "total" count from the start, the others per step).
struct Timings {
    start: Instant,
    ms: BTreeMap<String, u128>,
}

impl Timings {
    fn start() -> Self {
        Timings {
            start: Instant::now(),
            ms: BTreeMap::new(),
        }
    }
    fn insert(&mut self, step: &str, since: Instant) {
        self.ms.insert(step.into(), since.elapsed().as_millis());
    }
    fn since_start(&mut self, step: &str) {
        let start = self.start;
        self.insert(step, start);
    }
    fn done(self) -> BTreeMap<String, u128> {
        self.ms
    }
}

/// A progress line on stderr, with `--verbose`-style output on.
fn say(verbose: bool, msg: impl AsRef<str>) {
    if verbose {
        crate::errln!("greta: {}", msg.as_ref());
    }
}
