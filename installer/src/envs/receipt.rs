//! `greta-env.json`: what an env was built from, so `doctor`, support and a
//! later `greta install` can tell exactly which bytes are inside it.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const FILE: &str = "greta-env.json";
pub const SCHEMA: &str = "greta.env/v1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Receipt {
    pub schema: String,
    pub name: String,
    pub profile: String,
    /// "rocm", "cuda" or "cpu".
    pub backend: String,
    pub python: PythonInfo,
    pub lockfile: LockRef,
    pub wheels: Vec<WheelRef>,
    /// Which tool installed the wheels ("uv 0.9.1", "pip 24.0").
    pub installer: String,
    /// Variables the activation script exports (e.g. HSA_OVERRIDE_GFX_VERSION).
    pub env_vars: BTreeMap<String, String>,
    /// The probe summary the profile was chosen from.
    pub probe: serde_json::Value,
    /// What the import check saw in the env.
    pub checks: serde_json::Value,
    pub greta_version: String,
    /// RFC 3339, UTC.
    pub created: String,
    /// The HIP worker installed into the env (rocm profiles only), which
    /// `greta smoke` and `greta doctor` run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip_worker: Option<HipWorkerRef>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HipWorkerRef {
    /// `<env>/bin/greta-hip-worker`.
    pub path: String,
    /// Where the copy came from ("built now from greta's source tree", ...).
    pub source: String,
    /// `hipcc` version the kernels were built with (from `build-kernels`).
    pub hipcc: Option<String>,
    /// gfx targets the kernels were built for (the probe's AMD GPUs).
    pub gfx: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PythonInfo {
    /// The env's own `bin/python`.
    pub path: String,
    pub version: String,
    /// The interpreter the env was built from (`--python`, or the one
    /// found on PATH), as the plan named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LockRef {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WheelRef {
    pub name: String,
    pub version: String,
    pub filename: String,
    pub sha256: String,
}

impl Receipt {
    pub fn load(env: &Path) -> Result<Receipt> {
        let p = env.join(FILE);
        let text = crate::read::text_capped(&p, crate::read::MAX_DATA_FILE)?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
    }

    /// Written to a temporary name and renamed, so a receipt is whole or absent.
    pub fn write(&self, env: &Path) -> Result<()> {
        let p = env.join(FILE);
        let tmp = env.join(format!(".{FILE}.tmp"));
        let text = serde_json::to_string_pretty(self)? + "\n";
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
    }
}

/// The HIP worker recorded by the env in use: `$VIRTUAL_ENV`'s receipt when
/// it is a greta env, else the newest greta env (by `created`) whose receipt
/// records one that is still there. What `greta smoke`/`doctor` search first
/// after `$GRETA_HIP_WORKER`.
pub fn recorded_hip_worker() -> Option<std::path::PathBuf> {
    let usable = |r: &Receipt| {
        r.hip_worker
            .as_ref()
            .map(|w| std::path::PathBuf::from(&w.path))
            .filter(|p| p.is_file())
    };
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        if let Some(p) = Receipt::load(Path::new(&venv))
            .ok()
            .and_then(|r| usable(&r))
        {
            return Some(p);
        }
    }
    let root = super::EnvRoot::default_root().ok()?;
    let mut envs: Vec<Receipt> = root
        .list()
        .ok()?
        .into_iter()
        .filter_map(|(_, _, r)| r.ok())
        .filter(|r| usable(r).is_some())
        .collect();
    envs.sort_by(|a, b| a.created.cmp(&b.created));
    envs.last().and_then(usable)
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".into())
}
