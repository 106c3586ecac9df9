//! greta environments under `$XDG_DATA_HOME/greta/envs/<name>`.
//!
//! Next to each env live only hidden helpers, all named from the env name so
//! a killed install can be recognised and cleaned on the next run:
//! `.<name>.lock` (the guard), `.staging/<name>` (an env being built; only
//! the guard's holder builds there, so one found by the holder is a dead
//! build's and is never used), `.backup-<name>` (the previous env while the
//! new one is being renamed into place), `.trash-<name>-<pid>` (a replaced
//! env being deleted).
//!
//! The staging path is the same on every run on purpose: uv caches what it
//! asks an interpreter by the interpreter's path, and a venv at a new path
//! each time costs every `uv pip install` a fresh interpreter query (about
//! 50 ms measured). Greta builds older than this used
//! `.staging-<name>-<pid>`; those are still cleaned.

pub mod activate;
pub mod build;
pub mod check;
pub mod check_results;
pub mod current;
pub mod guard;
pub mod installed;
pub mod installer;
pub mod probe_summary;
pub mod receipt;
pub mod record;
pub mod uv_bootstrap;
pub mod venv_template;

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

pub use probe_summary::ProbeSummary;
pub use receipt::Receipt;

/// The directory (inside the envs dir, so the final rename stays on one
/// filesystem) that holds the envs being built.
pub const STAGING_DIR: &str = ".staging";

/// The directory holding all envs.
#[derive(Debug, Clone)]
pub struct EnvRoot {
    pub dir: PathBuf,
}

/// What a previous, killed install left behind and what was done about it.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Recovery {
    /// Staging dirs of dead installs, removed unused.
    pub removed_staging: Vec<PathBuf>,
    /// The previous env was found moved aside mid-swap and was put back.
    pub restored_backup: bool,
    /// A leftover backup of an env that had been replaced, removed.
    pub removed_backup: bool,
}

impl EnvRoot {
    /// `$GRETA_HOME/envs`, else `$XDG_DATA_HOME/greta/envs`, else
    /// `~/.local/share/greta/envs`.
    pub fn default_root() -> Result<EnvRoot> {
        let var = greta_vocab::EnvVars::GRETA_HOME;
        if let Some(g) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            if !Path::new(&g).is_absolute() {
                return Err(crate::rerun::FixFirst(format!(
                    "{var}={g:?} is not an absolute path: envs would go wherever greta runs; set it to an absolute directory or unset it"
                ))
                .into());
            }
        }
        let (dir, from) = Self::dir_from(&|k| std::env::var_os(k)).ok_or_else(|| {
            crate::rerun::FixFirst(format!(
                "none of {var}, XDG_DATA_HOME or HOME is set: cannot place greta envs"
            ))
        })?;
        // Each env's activation script holds its path as one quoted shell
        // word: a directory that cannot be one (a line feed in it would end
        // the script's line and run what follows) is refused here, before
        // anything is fetched or built.
        activate::quote_path(&format!("the envs directory (from {from})"), &dir)
            .map_err(|e| crate::rerun::FixFirst(format!("{e}; set {from} to another directory")))?;
        Ok(EnvRoot { dir })
    }

    /// Where envs go on a machine whose environment `env` reads: the one
    /// rule, used here to create envs and handed to the probe
    /// (`greta_probe::Probe::envs_at`) so that doctor reads the frameworks
    /// of the envs where this installer put them, live or in a snapshot.
    /// `GRETA_HOME` first (as docs/env.md promises; an absolute path only:
    /// [`EnvRoot::default_root`] refuses another by name).
    pub fn dir_in(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        Self::dir_from(env).map(|(d, _)| d)
    }

    /// [`EnvRoot::dir_in`] and the variable that placed it.
    fn dir_from(env: &dyn Fn(&str) -> Option<OsString>) -> Option<(PathBuf, &'static str)> {
        let home = greta_vocab::EnvVars::GRETA_HOME;
        if let Some(g) = env(home).filter(|v| !v.is_empty()) {
            let g = PathBuf::from(g);
            return g.is_absolute().then(|| (g.join("envs"), home));
        }
        let (base, from) = greta_vocab::dirs::base_dir_from(greta_vocab::dirs::Base::Data, env)?;
        Some((base.join("greta").join("envs"), from))
    }

    pub fn env_path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    pub fn lock_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!(".{name}.lock"))
    }
    pub fn backup_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!(".backup-{name}"))
    }
    pub fn staging_path(&self, name: &str) -> PathBuf {
        self.dir.join(STAGING_DIR).join(name)
    }
    pub fn trash_path(&self, name: &str) -> PathBuf {
        self.dir
            .join(format!(".trash-{name}-{}", std::process::id()))
    }

    /// Takes the env's guard (fails at once when another install holds it).
    /// The envs directory is created as any output directory greta writes
    /// (`greta_fsread::output`): a link on the way that another user
    /// planted in a shared directory is refused, not followed.
    pub fn lock(&self, name: &str) -> Result<guard::Guard> {
        greta_fsread::output::OutputDir::open(&self.dir, true)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        guard::Guard::try_acquire(&self.lock_path(name))
    }

    /// Cleans what a killed install of `name` left. Must hold the guard: then
    /// no live process owns any of these paths.
    pub fn recover(&self, name: &str, _guard: &guard::Guard) -> Result<Recovery> {
        let mut r = Recovery::default();
        let staging_prefix = format!(".staging-{name}-");
        let trash_prefix = format!(".trash-{name}-");
        if let Ok(rd) = fs::read_dir(&self.dir) {
            for e in rd.flatten() {
                let fname = e.file_name().to_string_lossy().into_owned();
                let is_staging = fname
                    .strip_prefix(&staging_prefix)
                    .is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()));
                let is_trash = fname
                    .strip_prefix(&trash_prefix)
                    .is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()));
                if is_staging {
                    remove_tree(&e.path())?;
                    r.removed_staging.push(e.path());
                } else if is_trash {
                    // A detached `rm` may still be at it: never an error.
                    let _ = remove_tree(&e.path());
                }
            }
        }
        let staging = self.staging_path(name);
        if staging.exists() {
            remove_tree(&staging)?;
            r.removed_staging.push(staging);
        }
        let backup = self.backup_path(name);
        if backup.exists() {
            let env = self.env_path(name);
            if env.exists() {
                // The new env made it into place; only the cleanup was lost.
                remove_tree(&backup)?;
                r.removed_backup = true;
            } else {
                fs::rename(&backup, &env).with_context(|| {
                    format!(
                        "restoring the previous env {} from {}",
                        env.display(),
                        backup.display()
                    )
                })?;
                r.restored_backup = true;
            }
        }
        Ok(r)
    }

    /// An install killed between the swap's two renames leaves the previous
    /// env only as `.backup-<name>`; `env list` then showed no env and `env
    /// remove` said there was none until the next install. Puts each such
    /// backup back (under the env's guard; one held by a running install is
    /// left to it).
    fn restore_orphaned_backups(&self) {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return;
        };
        for e in rd.flatten() {
            let fname = e.file_name().to_string_lossy().into_owned();
            let Some(name) = fname.strip_prefix(".backup-") else {
                continue;
            };
            if validate_name(name).is_err() || self.env_path(name).exists() {
                continue;
            }
            let Ok(g) = self.lock(name) else { continue };
            match self.recover(name, &g) {
                Ok(r) if r.restored_backup => {
                    crate::errln!(
                        "greta: restored env {name} from {} (an install was killed mid-swap)",
                        e.path().display()
                    )
                }
                Ok(_) => {}
                Err(err) => crate::errln!("greta: cannot restore env {name}: {err:#}"),
            }
        }
    }

    /// Every env with a readable receipt, sorted by name; envs without one
    /// are listed with the error so they are not silently hidden.
    pub fn list(&self) -> Result<Vec<(String, PathBuf, Result<Receipt>)>> {
        self.restore_orphaned_backups();
        let mut out = Vec::new();
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e).with_context(|| format!("reading {}", self.dir.display())),
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !e.path().is_dir() {
                continue;
            }
            let receipt = Receipt::load(&e.path());
            out.push((name, e.path(), receipt));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Removes an env: renamed to a trash name first, so a half-deleted tree
    /// is never mistaken for an env.
    pub fn remove(&self, name: &str) -> Result<PathBuf> {
        validate_name(name)?;
        self.restore_orphaned_backups();
        let env = self.env_path(name);
        if !env.exists() {
            bail!("no greta env named {name:?} under {}", self.dir.display());
        }
        let g = self.lock(name)?;
        let trash = self.trash_path(name);
        fs::rename(&env, &trash).with_context(|| format!("moving {} aside", env.display()))?;
        remove_tree(&trash)?;
        drop(g);
        Ok(env)
    }
}

/// Env names become directory names: keep them plain.
pub fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_');
    if !ok {
        bail!(
            "env name {name:?}: use 1-64 letters, digits, '.', '-' or '_', not starting with '.'"
        );
    }
    Ok(())
}

/// `remove_dir_all` that also copes with read-only files inside.
pub fn remove_tree(p: &Path) -> Result<()> {
    match fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(p);
            fs::remove_dir_all(p).with_context(|| format!("removing {}", p.display()))
        }
    }
}

fn make_writable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = fs::symlink_metadata(p) {
        if m.is_dir() {
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o755));
            if let Ok(rd) = fs::read_dir(p) {
                for e in rd.flatten() {
                    make_writable(&e.path());
                }
            }
        }
    }
}

#[cfg(test)]
mod dir_in_tests {
    use super::EnvRoot;
    use std::ffi::OsString;
    use std::path::PathBuf;

    /// The one rule for where envs go, as `greta install` and doctor (the
    /// probe, through `envs_at`) both apply it.
    #[test]
    fn envs_go_under_xdg_data_home_else_home() {
        let at = |pairs: &[(&str, &str)]| {
            let env: Vec<(String, OsString)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), OsString::from(v)))
                .collect();
            EnvRoot::dir_in(&|k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        };
        assert_eq!(
            at(&[("XDG_DATA_HOME", "/d"), ("HOME", "/h")]),
            Some(PathBuf::from("/d/greta/envs"))
        );
        assert_eq!(
            at(&[("XDG_DATA_HOME", ""), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.local/share/greta/envs"))
        );
        assert_eq!(at(&[("HOME", "")]), None);
        // GRETA_HOME wins over both (it was once documented and
        // ignored); a relative one places nothing.
        assert_eq!(
            at(&[
                (greta_vocab::EnvVars::GRETA_HOME, "/g"),
                ("XDG_DATA_HOME", "/d"),
                ("HOME", "/h")
            ]),
            Some(PathBuf::from("/g/envs"))
        );
        assert_eq!(
            at(&[(greta_vocab::EnvVars::GRETA_HOME, "g"), ("HOME", "/h")]),
            None
        );
        assert_eq!(
            at(&[(greta_vocab::EnvVars::GRETA_HOME, ""), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.local/share/greta/envs"))
        );
    }
}
