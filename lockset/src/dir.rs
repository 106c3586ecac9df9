//! Which lock set is in effect, and why (as rustup says why a toolchain is
//! active): `--lock-dir DIR` on the command line, `GRETA_LOCK_DIR` in the
//! environment, a bundle's own lock files, or the set built into this binary.
//!
//! Every lock file (matrix, pylock, tools) is read through [`LockDir`], so
//! the built-in set and a directory on disk behave the same, and every read
//! is bounded and refuses FIFOs and devices.

use anyhow::Result;
use greta_vocab::Source;
use std::fmt;
use std::path::{Path, PathBuf};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_lock.rs"));
}

/// A bundle's manifest (`greta bundle`): a bundle carries its own lock files
/// beside it, and this file is what put them in effect.
pub const BUNDLE_MANIFEST: &str = "greta-bundle.json";

/// The environment variable that points greta at another lock directory.
pub const ENV_VAR: &str = greta_vocab::EnvVars::GRETA_LOCK_DIR;

/// The flag that names a lock directory.
pub const FLAG: &str = "--lock-dir";

/// A set of lock files: a directory on disk or the one built in, with the
/// [`Source`] that put it in effect: `--lock-dir` ([`Source::Flag`]),
/// `GRETA_LOCK_DIR` ([`Source::Env`]), a bundle's manifest
/// ([`Source::File`]: `greta install --bundle DIR` uses the bundle's own
/// lock files) or nothing ([`Source::BuiltIn`], compiled into this binary
/// from the repository's `lock/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockDir {
    source: Source,
    /// `None` for the built-in set.
    dir: Option<PathBuf>,
}

impl LockDir {
    /// The set a command uses: the flag, else the variable, else built in.
    pub fn resolve(flag: Option<&Path>) -> LockDir {
        // A lock directory may be any path, UTF-8 or not.
        match greta_vocab::Setting::path(flag.map(|d| (d, FLAG)), ENV_VAR) {
            Some(s) => LockDir::at(&s.value, s.source),
            None => LockDir::built_in(),
        }
    }

    pub fn built_in() -> LockDir {
        LockDir {
            source: Source::BuiltIn,
            dir: None,
        }
    }

    /// `--lock-dir DIR`.
    pub fn from_flag(dir: &Path) -> LockDir {
        LockDir::at(dir, Source::Flag { name: FLAG })
    }

    /// The lock files of the bundle in `dir` (its manifest put them in effect).
    pub fn of_bundle(dir: &Path) -> LockDir {
        let manifest = dir.join(BUNDLE_MANIFEST);
        LockDir::at(
            dir,
            Source::File {
                path: manifest,
                line: None,
            },
        )
    }

    fn at(dir: &Path, source: Source) -> LockDir {
        LockDir {
            source,
            dir: Some(dir.to_path_buf()),
        }
    }

    /// Why this set is in effect.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The `origin` of `lock list --json`: `flag`, `env`, `bundle` or
    /// `built-in` (the names it has always had).
    pub fn origin_name(&self) -> &'static str {
        match self.source {
            Source::Flag { .. } => "flag",
            Source::Env { .. } => "env",
            Source::File { .. } => "bundle",
            Source::BuiltIn => "built-in",
        }
    }

    /// The directory on disk; `None` for the built-in set.
    pub fn on_disk(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The path shown for a file of this set in messages (`file:line:col`).
    /// Built-in files are shown as `<built-in>/lock/NAME`.
    pub fn shown(&self, name: &str) -> PathBuf {
        match &self.dir {
            Some(d) => d.join(name),
            None => Path::new("<built-in>/lock").join(name),
        }
    }

    /// The text of one file of the set; `Ok(None)` when the set has none.
    pub fn read(&self, name: &str) -> crate::Result<Option<String>> {
        match &self.dir {
            Some(d) => crate::read::text_if_exists(&d.join(name), crate::read::MAX_DATA_FILE),
            None => Ok(builtin::FILES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.to_string())),
        }
    }

    /// As [`LockDir::read`], but a missing file is an error naming it.
    pub fn read_required(&self, name: &str) -> crate::Result<String> {
        self.read(name)?.ok_or_else(|| {
            crate::Error::Failed(match self.dir {
                Some(_) => anyhow::anyhow!(
                    "cannot read {}: no such file (the lock directory, {})",
                    greta_vocab::os_text(self.shown(name).as_os_str()),
                    self.source
                ),
                None => {
                    anyhow::anyhow!("cannot read {}: no such file", self.shown(name).display())
                }
            })
        })
    }

    /// One line saying which set is in effect and why.
    pub fn why(&self) -> String {
        match (&self.source, &self.dir) {
            (Source::Flag { name } | Source::Env { name }, Some(d)) => {
                format!("{} (from {name})", greta_vocab::os_text(d.as_os_str()))
            }
            (Source::File { .. }, Some(d)) => format!(
                "{} (the bundle's lock files)",
                greta_vocab::os_text(d.as_os_str())
            ),
            _ => format!(
                "built into greta {} ({} files; --lock-dir or {ENV_VAR} to use another)",
                env!("CARGO_PKG_VERSION"),
                builtin::FILES.len()
            ),
        }
    }
}

impl fmt::Display for LockDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.dir {
            Some(d) => f.write_str(&greta_vocab::os_text(d.as_os_str())),
            None => f.write_str("<built-in>/lock"),
        }
    }
}

impl serde::Serialize for LockDir {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_set_holds_the_repository_lock_files() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lock");
        let b = LockDir::built_in();
        for name in ["matrix.toml", "tools.toml", "pylock.cpu.toml"] {
            let on_disk = std::fs::read_to_string(repo.join(name)).unwrap();
            assert_eq!(
                b.read(name).unwrap().as_deref(),
                Some(on_disk.as_str()),
                "{name}"
            );
        }
        assert_eq!(b.read("pylock.nope.toml").unwrap(), None);
        assert!(b.why().starts_with("built into greta"));
        assert_eq!(
            b.shown("matrix.toml"),
            Path::new("<built-in>/lock/matrix.toml")
        );
    }

    #[test]
    fn directory_set_reads_from_disk_and_says_why() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("matrix.toml"), "schema = 1\n").unwrap();
        let l = LockDir::from_flag(d.path());
        assert_eq!(
            l.read("matrix.toml").unwrap().as_deref(),
            Some("schema = 1\n")
        );
        assert_eq!(l.read("tools.toml").unwrap(), None);
        assert!(l.why().ends_with("(from --lock-dir)"), "{}", l.why());
        let e = l.read_required("tools.toml").unwrap_err().to_string();
        assert!(
            e.contains("tools.toml") && e.contains("no such file"),
            "{e}"
        );
    }

    /// A lock directory that is not UTF-8 is used as the bytes it is, and
    /// a message shows them escaped beside the variable that set it (it
    /// was `cannot read /tmp/��bad/matrix.toml: no such file`).
    #[test]
    fn a_lock_dir_that_is_not_utf8_is_named_with_its_variable() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let raw = d.path().join(std::ffi::OsStr::from_bytes(b"\xff\xfebad"));
        std::fs::create_dir(&raw).unwrap();
        std::fs::write(raw.join("matrix.toml"), "schema = 1\n").unwrap();
        let l = LockDir::at(&raw, Source::Env { name: ENV_VAR });
        assert_eq!(
            l.read("matrix.toml").unwrap().as_deref(),
            Some("schema = 1\n")
        );
        let e = l.read_required("tools.toml").unwrap_err().to_string();
        let shown = format!("{}/\\xff\\xfebad", d.path().display());
        assert_eq!(
            e,
            format!("cannot read {shown}/tools.toml: no such file (the lock directory, set by the environment variable GRETA_LOCK_DIR)")
        );
        assert_eq!(l.why(), format!("{shown} (from GRETA_LOCK_DIR)"));
        assert_eq!(l.to_string(), shown);
    }
}
