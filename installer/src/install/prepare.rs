//! Step 2, prepare: take the env's lock, clean up after a killed install,
//! and decide whether there is anything to do (an env already built from
//! exactly this plan is verified, not rebuilt).

use anyhow::Result;
use std::path::Path;
use std::time::Instant;

use super::{say, InstallInput, Plan, Timings};
use crate::envs::{self, guard::Guard, installer, EnvRoot, Recovery};
use crate::fetch::Cache;

/// What the rest of the install works in: the env root and the cache, the
/// env's lock (held until [`Prepared::release`]) and what recovery did.
pub(super) struct Prepared {
    pub root: EnvRoot,
    pub cache: Cache,
    pub recovery: Recovery,
    /// The uv `GRETA_UV` names, checked (see `installer::named_uv`).
    pub named_uv: Option<std::path::PathBuf>,
    guard: Guard,
}

impl Prepared {
    /// Lets go of the env's lock; what recovery did goes into the report.
    pub fn release(self) -> Recovery {
        drop(self.guard);
        self.recovery
    }
}

/// Whether the existing env is kept or a new one is built.
pub(super) enum Current {
    /// The env was already exactly this install: nothing more to do.
    UpToDate(Box<envs::current::Verified>),
    Build(Rebuild),
}

/// Why an env is built, for the report and the build step.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Rebuild {
    /// Why an existing env is rebuilt (None: there was none, or `--reinstall`).
    pub because: Option<String>,
    /// A distribution whose installed files were changed in place (uv links
    /// them from its cache, which is then damaged too).
    pub damaged_in_place: Option<String>,
}

/// The env's lock, recovery, and the interpreter query stored in its cache.
pub(super) fn prepare(plan: &Plan, input: &InstallInput) -> Result<Prepared> {
    envs::validate_name(&input.name)?;
    let root = EnvRoot::default_root()?;
    let cache = Cache::new(Cache::default_root()?);
    // A GRETA_UV that is no uv fails every install the same way: refused
    // by name before anything is fetched (unless pip installs).
    let named_uv = match input.installer {
        installer::Choice::Pip => None,
        _ => installer::named_uv()?,
    };
    let guard = root.lock(&input.name)?;
    let recovery = root.recover(&input.name, &guard)?;
    if let Some(i) = &plan.queried_interpreter {
        if let Some(p) = &i.path {
            i.remember(p, cache.root());
        }
    }
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
    Ok(Prepared {
        root,
        cache,
        recovery,
        named_uv,
        guard,
    })
}

/// Already built from exactly this plan? Then there is nothing to do.
pub(super) fn current(
    plan: &Plan,
    input: &InstallInput,
    prepared: &Prepared,
    early: Option<envs::current::Contents>,
    timings: &mut Timings,
) -> Current {
    let env_path = prepared.root.env_path(&input.name);
    if input.reinstall || !env_path.exists() {
        return Current::Build(Rebuild::default());
    }
    let t = Instant::now();
    let verdict = up_to_date(plan, &input.name, input.installer, &env_path, early);
    timings.insert("verify", t);
    match verdict {
        Ok(v) => Current::UpToDate(Box::new(v)),
        Err(stale) => {
            say(
                input.verbose,
                format!("rebuilding the env: {}", stale.reason),
            );
            Current::Build(Rebuild {
                because: Some(stale.reason),
                damaged_in_place: stale.changed_in_place,
            })
        }
    }
}

/// Whether the env at `env` is what this plan would build (see
/// `envs::current`); `Err` says what differs.
pub(super) fn up_to_date(
    plan: &Plan,
    name: &str,
    tool: installer::Choice,
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
        name,
        profile: &plan.profile,
        lock_sha256: plan.lock_sha256,
        wheels: plan
            .wheels
            .iter()
            .map(|w| {
                (
                    w.wheel.name.as_str(),
                    w.wheel.version.as_str(),
                    w.wheel.filename.as_str(),
                    w.wheel.sha256,
                )
            })
            .collect(),
        env_vars: &plan.env_vars,
        python,
        python_version: &plan.python.version,
        installer: match tool {
            installer::Choice::Auto => None,
            installer::Choice::Uv => Some("uv"),
            installer::Choice::Pip => Some("pip"),
        },
    };
    envs::current::verify(env, &want, early)
}
