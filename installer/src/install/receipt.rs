//! Step 6, receipt: what the env was built from (`greta-env.json`), its
//! activation script, and the venv relocated to its final path, all
//! written in the staging dir before the swap.

use anyhow::Result;
use std::path::Path;

use super::build::Built;
use super::Plan;
use crate::envs::{self, build::Staging, receipt::HipRef, Receipt};
use crate::fetch::Fetched;

/// The receipt, naming the final paths (the checks ran in staging).
pub(super) fn assemble(
    plan: &Plan,
    name: &str,
    built: &Built,
    fetched: &[Fetched],
    modules: &serde_json::Value,
    hip: Option<HipRef>,
) -> Receipt {
    let staging = &built.staging;
    Receipt {
        schema: envs::receipt::SCHEMA.into(),
        name: name.to_string(),
        profile: plan.profile.clone(),
        backend: plan.backend,
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
    staging.relocate(&super::major_minor(&plan.python.version))?;
    envs::activate::write(
        &staging.path,
        &staging.target,
        &plan.profile,
        &plan.env_vars,
    )?;
    receipt.write(&staging.path)
}

/// The import check ran in the staging dir; the receipt names the final one.
fn at_final_path(v: &serde_json::Value, staging: &Path, target: &Path) -> serde_json::Value {
    let text = v.to_string();
    let from = serde_json::to_string(&staging.display().to_string()).unwrap_or_default();
    let to = serde_json::to_string(&target.display().to_string()).unwrap_or_default();
    // Both are JSON string literals; strip the quotes to replace inside strings.
    let (from, to) = (&from[1..from.len() - 1], &to[1..to.len() - 1]);
    serde_json::from_str(&text.replace(from, to)).unwrap_or_else(|_| v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_the_final_path_not_staging() {
        let v = serde_json::json!({
            "torch": {"file": "/e/.cpu.staging/lib/python3.12/site-packages/torch/__init__.py",
                      "version": "2.5.1", "gates": [{"reason": "ran in /e/.cpu.staging"}]}
        });
        let out = at_final_path(&v, Path::new("/e/.cpu.staging"), Path::new("/e/cpu"));
        assert_eq!(
            out["torch"]["file"],
            "/e/cpu/lib/python3.12/site-packages/torch/__init__.py"
        );
        assert_eq!(out["torch"]["gates"][0]["reason"], "ran in /e/cpu");
        assert_eq!(out["torch"]["version"], "2.5.1");
        // Paths with characters JSON escapes still match.
        let v = serde_json::json!({"f": "/a \"q\"/x"});
        let out = at_final_path(&v, Path::new("/a \"q\""), Path::new("/b"));
        assert_eq!(out["f"], "/b/x");
    }
}
