//! What several test modules share: the probe run as doctor runs it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use greta_probe::{CheckRun, Facts, Probe, Root};

/// Where greta's envs live, the installer's rule (`EnvRoot::dir_in`), which
/// the probe takes as input.
pub fn envs_at(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let base = match env("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(env("HOME").filter(|v| !v.is_empty())?).join(".local/share"),
    };
    Some(base.join("greta/envs"))
}

/// The full probe of `root`, as doctor runs it (without the HIP check).
pub fn collect(root: &Root) -> (Facts, Vec<CheckRun>) {
    let o = Probe::new(root).envs_at(envs_at).run();
    (o.facts, o.checks)
}

/// A copy of a sysroot tree, symlinks kept as links (the tests then damage
/// the copy, never the checked-in tree).
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let ft = std::fs::symlink_metadata(&src).unwrap().file_type();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if ft.is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}
