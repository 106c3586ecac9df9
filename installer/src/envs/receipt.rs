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
    pub backend: greta_vocab::Backend,
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
    /// The HIP runtime and compiler the smoke gate used (rocm profiles only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip: Option<HipRef>,
}

/// Which HIP libraries greta loaded for this env, and why those.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HipRef {
    /// libamdhip64 as opened (`path`) and the search rule that found it.
    pub library: String,
    pub library_why: String,
    /// hiprtc (or hipcc, where hiprtc is missing), and why.
    pub compiler: Option<String>,
    /// gfx targets of the probe's AMD GPUs.
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
    pub sha256: greta_vocab::Sha256,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WheelRef {
    pub name: String,
    pub version: String,
    pub filename: String,
    pub sha256: greta_vocab::Sha256,
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

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".into())
}
