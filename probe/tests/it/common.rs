//! What several test modules share: the probe run as doctor runs it.

use std::ffi::OsString;
use std::path::PathBuf;

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
