//! Step 1a, detect: the machine facts the profile is chosen from, and the
//! summary of them kept in the receipt, through the probe's front door.

use anyhow::{Context, Result};
use std::path::Path;

use crate::envs::ProbeSummary;

/// Facts for profile choice, from the live machine or a captured sysroot
/// (the doctor's engine, read-only; what it reads is the probe's
/// [`greta_probe::Scope::Profile`]), plus the summary kept in the receipt.
pub(super) fn probe_facts(
    sysroot: Option<&Path>,
    profile_forced: bool,
) -> Result<(greta_probe::Facts, ProbeSummary)> {
    let root = match sysroot {
        Some(d) => {
            greta_probe::Root::sysroot(d).with_context(|| format!("--sysroot {}", d.display()))?
        }
        None => greta_probe::Root::live(),
    };
    let facts = greta_probe::Probe::new(&root)
        .scope(greta_probe::Scope::Profile {
            forced: profile_forced,
        })
        .envs_at(crate::envs::EnvRoot::dir_in)
        .run()
        .facts;
    let summary = ProbeSummary::of(&facts);
    Ok((facts, summary))
}
