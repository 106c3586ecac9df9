//! Step 6, receipt: what the env was built from (`greta-env.json`), its
//! activation script, and the venv relocated to its final path, all
//! written in the staging dir before the swap.

use anyhow::Result;

use super::build::Built;
use super::Plan;
use crate::envs::check_results::{at_final_path, Checks};
use crate::envs::{self, build::Staging, receipt::HipRef, Receipt};
use crate::fetch::Fetched;

/// The receipt, naming the final paths (the checks ran in staging).
pub(super) fn assemble(
    plan: &Plan,
    name: &str,
    built: &Built,
    fetched: &[Fetched],
    modules: &Checks,
    hip: Option<HipRef>,
) -> Receipt {
    let staging = &built.staging;
    Receipt {
        schema: envs::receipt::SCHEMA.into(),
        name: name.to_string(),
        profile: plan.profile.clone(),
        backend: plan.backend,
        backend_version: plan.backend_version.clone(),
        python: envs::receipt::PythonInfo {
            path: staging
                .target
                .join("bin")
                .join("python")
                .display()
                .to_string(),
            version: plan.python.version.clone(),
            base: Some(built.python.display().to_string()),
        },
        lockfile: envs::receipt::LockRef {
            path: plan.lockfile.display().to_string(),
            sha256: plan.lock_sha256,
        },
        wheels: fetched
            .iter()
            .map(|f| envs::receipt::WheelRef {
                name: f.artifact.name.clone(),
                version: f.artifact.version.clone(),
                filename: f.artifact.filename.clone(),
                sha256: f.artifact.sha256,
            })
            .collect(),
        installer: built.installer.clone(),
        env_vars: plan.env_vars.clone(),
        probe: plan.probe.clone(),
        checks: at_final_path(modules, &staging.path, &staging.target),
        greta_version: env!("CARGO_PKG_VERSION").into(),
        created: envs::receipt::now_rfc3339(),
        hip,
    }
}

/// Relocates the staged venv to its final path and writes the activation
/// script and the receipt into it.
pub(super) fn write(plan: &Plan, staging: &Staging, receipt: &Receipt) -> Result<()> {
    staging.relocate(&envs::receipt::major_minor(&plan.python.version))?;
    envs::activate::write(
        &staging.path,
        &staging.target,
        &plan.profile,
        &plan.env_vars,
        plan.probe.hip_devices(),
    )?;
    receipt.write(&staging.path)
}
