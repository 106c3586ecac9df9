//! The Debian sid chroots of the every-target tests (built by
//! scripts/sid-chroot.sh under target/): found, or why this run cannot use
//! one. Set by its variable, a chroot is required; unset, its test skips and
//! says so.
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Which chroot, and how its test names itself.
pub struct SidChroot<'a> {
    /// The variable that names it (and makes the check required).
    pub var: &'a str,
    /// Its place under the repository when the variable is unset.
    pub default_dir: &'a str,
    /// The command that builds it.
    pub build: &'a str,
    /// The test's name on stderr, and what it checks.
    pub test: &'a str,
    pub check: &'a str,
}

/// The chroot's cache directory, or `None` (said on stderr) when this run
/// cannot use it and is not required to; a relative path is the
/// repository's (tests run in installer/).
pub fn find(c: &SidChroot<'_>, repo: &Path) -> Option<PathBuf> {
    let set = std::env::var_os(c.var).filter(|v| !v.is_empty());
    let dir = repo.join(
        set.as_deref()
            .map_or(Path::new(c.default_dir), |v: &OsStr| Path::new(v)),
    );
    // SAFETY: geteuid has no preconditions.
    let why_not = if unsafe { libc::geteuid() } != 0 {
        Some("it needs root (chroot, mount namespaces)".to_string())
    } else if !dir.join("stamp").is_file() || !dir.join("root").is_dir() {
        Some(format!(
            "no sid chroot in {} ({} makes it)",
            dir.display(),
            c.build
        ))
    } else {
        None
    };
    match (why_not, set) {
        (None, _) => Some(dir),
        (Some(w), Some(_)) => panic!("{} is set, so {} is required, but {w}", c.var, c.check),
        (Some(w), None) => {
            eprintln!(
                "{}: SKIPPED, {w}; scripts/test.sh builds the chroot and requires this check ({})",
                c.test, c.var
            );
            None
        }
    }
}
