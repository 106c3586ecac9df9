//! The directories other tools' variables name, as the library search
//! reads them: `ROCM_PATH`, `HIP_PATH`, `CUDA_PATH`, `CUDA_HOME`, and the
//! envs to look in (`GRETA_ENV`, `VIRTUAL_ENV`). Each is read by the
//! settings module's one rule for a directory
//! ([`greta_vocab::Setting::dir_path`]: UTF-8, no control character,
//! absolute, a directory or nothing yet). They are hints among other places
//! to look, and other tools read them too, so a refused value is not
//! searched and a warning says why, once per process however often the
//! search runs, rather than the run ending on it.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

/// The directory `var` names, or `None` when it is unset, empty or refused
/// (with a warning, the first time).
pub(super) fn search_dir(var: &'static str) -> Option<PathBuf> {
    match greta_vocab::Setting::dir_path(var) {
        Ok(s) => s.map(|s| s.value),
        Err(e) => {
            if first_time(&e) {
                tracing::warn!("{e}; greta does not look there");
            }
            None
        }
    }
}

/// Whether `said` is said for the first time in this process.
fn first_time(said: &str) -> bool {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    SAID.lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(said.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_is_new_once() {
        assert!(first_time("LOCATE_TEST_DIR=\"x\": not an absolute path"));
        assert!(!first_time("LOCATE_TEST_DIR=\"x\": not an absolute path"));
        assert!(first_time("LOCATE_TEST_DIR=\"y\": not an absolute path"));
    }
}
