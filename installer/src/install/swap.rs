//! Step 7, swap: the staged env renamed into place. The previous env is
//! moved aside first and put back by the next install's recovery if this
//! process dies in between (see `envs::build::Staging::promote`).

use anyhow::Result;
use std::path::PathBuf;

use super::pause_at;
use crate::envs::{build::Staging, EnvRoot};

/// Promotes `staging` to the env `name`; returns the env's path.
pub(super) fn swap(staging: Staging, root: &EnvRoot, name: &str) -> Result<PathBuf> {
    use crate::interrupt::{set_phase, Phase};
    // Ctrl-C from here on must not say "the previous env is untouched".
    set_phase(Phase::Swapping);
    let r = staging.promote(root, name, &pause_at);
    set_phase(if r.is_ok() {
        Phase::Swapped
    } else {
        Phase::Building
    });
    r
}
