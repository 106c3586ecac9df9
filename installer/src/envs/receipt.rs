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
    /// The ROCm/CUDA user space the profile's wheels were built against
    /// (`backend-version` in matrix.toml, e.g. "6.4"). Receipts written
    /// before greta kept it have none: [`Receipt::backend_major_minor`]
    /// then reads it from the profile name, as greta did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_version: Option<String>,
    pub python: PythonInfo,
    pub lockfile: LockRef,
    pub wheels: Vec<WheelRef>,
    /// Which tool installed the wheels ("uv 0.9.1", "pip 24.0").
    pub installer: String,
    /// Variables the activation script exports (e.g. HSA_OVERRIDE_GFX_VERSION).
    pub env_vars: BTreeMap<String, String>,
    /// The probe summary the profile was chosen from.
    pub probe: super::ProbeSummary,
    /// What the import check saw in the env.
    pub checks: super::check_results::Checks,
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
    /// The backend's major.minor the env's frameworks must report ("6.4"):
    /// the recorded `backend_version`, else (a receipt from before it was
    /// kept) a ROCm profile's name, "rocm6.4".
    pub fn backend_major_minor(&self) -> Option<String> {
        if let Some(v) = &self.backend_version {
            return Some(major_minor(v));
        }
        (self.backend == greta_vocab::Backend::Rocm)
            .then(|| self.profile.strip_prefix("rocm").map(str::to_string))
            .flatten()
            .filter(|v| !v.is_empty())
    }

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

#[cfg(test)]
impl Receipt {
    /// A cpu env `env` of one wheel (`demo 1.0`), not probed, unchecked.
    pub(crate) fn sample() -> Receipt {
        Receipt {
            schema: SCHEMA.into(),
            name: "env".into(),
            profile: "cpu".into(),
            backend: greta_vocab::Backend::Cpu,
            backend_version: None,
            python: PythonInfo {
                path: "/e/bin/python".into(),
                version: "3.11.7".into(),
                base: None,
            },
            lockfile: LockRef {
                path: "pylock.cpu.toml".into(),
                sha256: greta_vocab::Sha256([0xab; 32]),
            },
            wheels: vec![WheelRef {
                name: "demo".into(),
                version: "1.0".into(),
                filename: "demo-1.0-py3-none-any.whl".into(),
                sha256: greta_vocab::Sha256([0xcd; 32]),
            }],
            installer: "uv 0.13.9".into(),
            env_vars: BTreeMap::new(),
            probe: super::ProbeSummary::not_probed("test"),
            checks: Default::default(),
            greta_version: env!("CARGO_PKG_VERSION").into(),
            created: "2026-11-22T00:00:00Z".into(),
            hip: None,
        }
    }
}

/// "6.4.1" → "6.4", "3.11.7" → "3.11": torch reports the ROCm/CUDA minor it
/// was built with, and a venv's site-packages is named for Python's x.y.
pub fn major_minor(v: &str) -> String {
    v.split('.').take(2).collect::<Vec<_>>().join(".")
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rocm(profile: &str, backend_version: Option<&str>) -> Receipt {
        let mut r = Receipt::sample();
        r.profile = profile.into();
        r.backend = greta_vocab::Backend::Rocm;
        r.backend_version = backend_version.map(str::to_string);
        r
    }

    /// The framework gates read the recorded backend version, not the
    /// profile's name (which need not spell it: `rocm6.4-therock`).
    #[test]
    fn the_backend_version_is_read_from_the_receipt() {
        let r = rocm("rocm6.4-therock", Some("6.4.1"));
        assert_eq!(r.backend_major_minor().as_deref(), Some("6.4"));
        let mut cuda = rocm("cuda", Some("13.0"));
        cuda.backend = greta_vocab::Backend::Cuda;
        assert_eq!(cuda.backend_major_minor().as_deref(), Some("13.0"));
        let text = serde_json::to_string_pretty(&r).unwrap();
        assert!(text.contains("\"backend_version\": \"6.4.1\""), "{text}");
    }

    /// A receipt written before `backend_version` was kept still loads, and
    /// its version comes from a ROCm profile's name, as it used to.
    #[test]
    fn an_old_receipt_without_a_backend_version_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let mut old: serde_json::Value = serde_json::to_value(rocm("rocm6.3", None)).unwrap();
        assert!(old.get("backend_version").is_none(), "{old}");
        old["probe"] = serde_json::json!({"sources": ["live"], "gpus": [],
            "hsa_override_gfx_version": null, "kernel": null, "kernel_driver_version": null,
            "rocm_version": "6.3.0", "vulkan_drivers": []});
        std::fs::write(dir.path().join(FILE), old.to_string()).unwrap();
        let r = Receipt::load(dir.path()).unwrap();
        assert_eq!(r.backend_version, None);
        assert_eq!(r.backend_major_minor().as_deref(), Some("6.3"));
        assert!(matches!(r.probe, super::super::ProbeSummary::Probed(_)));
        let mut cpu = r.clone();
        cpu.backend = greta_vocab::Backend::Cpu;
        cpu.profile = "cpu".into();
        assert_eq!(cpu.backend_major_minor(), None);
        let mut bare = r;
        bare.profile = "rocm".into();
        assert_eq!(bare.backend_major_minor(), None);
    }

    #[test]
    fn versions_shorten_to_major_minor() {
        assert_eq!(major_minor("6.4.1"), "6.4");
        assert_eq!(major_minor("3.11.7"), "3.11");
        assert_eq!(major_minor("12.6"), "12.6");
        assert_eq!(major_minor("7"), "7");
    }
}
