//! Which lock set is in effect, and why (as rustup says why a toolchain is
//! active): `--lock-dir DIR` on the command line, `GRETA_LOCK_DIR` in the
//! environment, a bundle's own lock files, or the set built into this binary.
//!
//! Every lock file (matrix, pylock, tools) is read through [`LockDir`], so
//! the built-in set and a directory on disk behave the same, and every read
//! is bounded and refuses FIFOs and devices.

use anyhow::Result;
use std::fmt;
use std::path::{Path, PathBuf};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_lock.rs"));
}

/// The environment variable that points greta at another lock directory.
pub const ENV_VAR: &str = greta_vocab::EnvVars::GRETA_LOCK_DIR;

/// Where the lock set in effect came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// `--lock-dir DIR`.
    Flag,
    /// `GRETA_LOCK_DIR=DIR`.
    Env,
    /// `greta install --bundle DIR`: the bundle's own lock files.
    Bundle,
    /// Compiled into this binary from the repository's `lock/`.
    BuiltIn,
}

/// A set of lock files: a directory on disk or the one built in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockDir {
    origin: Origin,
    /// `None` for the built-in set.
    dir: Option<PathBuf>,
}

impl LockDir {
    /// The set a command uses: the flag, else the variable, else built in.
    pub fn resolve(flag: Option<&Path>) -> LockDir {
        if let Some(d) = flag {
            return LockDir::at(d, Origin::Flag);
        }
        match std::env::var_os(ENV_VAR) {
            Some(d) if !d.is_empty() => LockDir::at(Path::new(&d), Origin::Env),
            _ => LockDir::built_in(),
        }
    }

    pub fn built_in() -> LockDir {
        LockDir {
            origin: Origin::BuiltIn,
            dir: None,
        }
    }

    pub fn at(dir: &Path, origin: Origin) -> LockDir {
        LockDir {
            origin,
            dir: Some(dir.to_path_buf()),
        }
    }

    pub fn origin(&self) -> Origin {
        self.origin
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
    pub fn read(&self, name: &str) -> Result<Option<String>> {
        match &self.dir {
            Some(d) => crate::read::text_if_exists(&d.join(name), crate::read::MAX_DATA_FILE),
            None => Ok(builtin::FILES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.to_string())),
        }
    }

    /// As [`LockDir::read`], but a missing file is an error naming it.
    pub fn read_required(&self, name: &str) -> Result<String> {
        self.read(name)?.ok_or_else(|| {
            anyhow::anyhow!("cannot read {}: no such file", self.shown(name).display())
        })
    }

    /// One line saying which set is in effect and why.
    pub fn why(&self) -> String {
        match (&self.origin, &self.dir) {
            (Origin::Flag, Some(d)) => format!("{} (from --lock-dir)", d.display()),
            (Origin::Env, Some(d)) => format!("{} (from {ENV_VAR})", d.display()),
            (Origin::Bundle, Some(d)) => format!("{} (the bundle's lock files)", d.display()),
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
            Some(d) => write!(f, "{}", d.display()),
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
        let l = LockDir::at(d.path(), Origin::Flag);
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
}
