//! What the post-install import check recorded, per module: what it said
//! about itself and each gate's verdict. The receipt's and the install
//! report's `checks`.
//!
//! Field order is alphabetical on purpose: these were JSON objects (whose
//! keys serde_json sorts) and the receipt and `greta install --json` keep
//! their bytes (`tests/it/install_schema.rs`).

use greta_frameworks::{self as frameworks, judge, DeviceSeen};
use greta_smoke::results::GateStatus;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::path::Path;

/// Per module name (`torch`, `triton`, `jax`).
pub type Checks = BTreeMap<String, ModuleCheck>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleCheck {
    /// `torch.version.cuda` (torch only: the key is there, null or not).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub cuda: Option<Option<String>>,
    /// The device the gates ran on.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "sorted"
    )]
    pub device: Option<DeviceSeen>,
    /// torch only, like `cuda`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub device_count: Option<Option<u32>>,
    /// jax's devices as `platform:id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<String>>,
    #[serde(default)]
    pub error: Option<String>,
    /// `module.__file__`.
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<Vec<GateCheck>>,
    /// `torch.version.hip` (torch only, like `cuda`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub hip: Option<Option<String>>,
    /// Imported (installed, and the import finished).
    #[serde(default)]
    pub ok: bool,
    /// The gates' seed, when they computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub version: Option<String>,
}

/// One gate's verdict (also the pseudo-gates `M.import` and `M.device`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateCheck {
    pub device: Option<String>,
    pub first_call_us: Option<f64>,
    pub id: String,
    pub median_us: Option<f64>,
    pub reason: Option<String>,
    pub rel_err: Option<f64>,
    pub status: GateStatus,
    pub tolerance: Option<f64>,
}

/// A key that is there with a null reads as `Some(None)`, so it is
/// written back (serde reads a null `Option<Option<T>>` as `None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// `DeviceSeen`'s own field order is not alphabetical: written through a
/// JSON value, whose keys are sorted, as it always was here.
fn sorted<S: Serializer>(d: &Option<DeviceSeen>, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(d)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// The checks of a run as judged; empty when the check did not run.
pub fn of_run(
    run: Option<&frameworks::Run>,
    judged: &judge::Judgement,
    seed: u64,
    gated: bool,
) -> Checks {
    let Some(run) = run else {
        return Checks::new();
    };
    let mut out = Checks::new();
    for m in &run.frameworks {
        let torch = m.module == "torch";
        let check = ModuleCheck {
            cuda: torch.then(|| m.info.cuda.clone()),
            device: m.info.device.clone(),
            device_count: torch.then_some(m.info.device_count),
            devices: (m.module == "jax" && !m.info.devices.is_empty()).then(|| {
                m.info
                    .devices
                    .iter()
                    .map(|d| format!("{}:{}", d.platform, d.id.unwrap_or(0)))
                    .collect()
            }),
            error: m.error.clone(),
            file: m.file.clone(),
            gates: judged
                .modules
                .iter()
                .find(|j| j.module == m.module)
                .map(|mj| mj.gates.iter().map(gate_check).collect()),
            hip: torch.then(|| m.info.hip.clone()),
            ok: !matches!(m.status, frameworks::ModuleStatus::Missing) && m.import_s.is_some(),
            seed: gated.then_some(seed),
            version: m.version.clone(),
        };
        out.insert(m.module.clone(), check);
    }
    out
}

fn gate_check(g: &judge::Judged) -> GateCheck {
    let record = g.record.as_ref();
    GateCheck {
        device: record.and_then(|r| r.device.clone()),
        first_call_us: record.and_then(|r| r.first_call_us),
        id: g.id.clone(),
        median_us: record.and_then(|r| r.median_us),
        reason: g.reason.clone(),
        rel_err: record.and_then(|r| r.rel_err),
        status: g.verdict,
        tolerance: g.tolerance,
    }
}

/// The import check ran in the staging dir; the receipt names the final
/// one: every string that holds the staging path holds the final path.
pub fn at_final_path(checks: &Checks, staging: &Path, target: &Path) -> Checks {
    let Ok(text) = serde_json::to_string(checks) else {
        return checks.clone();
    };
    let from = serde_json::to_string(&staging.display().to_string()).unwrap_or_default();
    let to = serde_json::to_string(&target.display().to_string()).unwrap_or_default();
    // Both are JSON string literals; strip the quotes to replace inside strings.
    let (from, to) = (&from[1..from.len() - 1], &to[1..to.len() - 1]);
    serde_json::from_str(&text.replace(from, to)).unwrap_or_else(|_| checks.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torch(file: &str, reason: &str) -> Checks {
        let gate = GateCheck {
            device: None,
            first_call_us: None,
            id: "torch.device".into(),
            median_us: None,
            reason: Some(reason.into()),
            rel_err: None,
            status: GateStatus::Skip,
            tolerance: None,
        };
        Checks::from([(
            "torch".to_string(),
            ModuleCheck {
                cuda: Some(None),
                device: None,
                device_count: Some(Some(1)),
                devices: None,
                error: None,
                file: Some(file.into()),
                gates: Some(vec![gate]),
                hip: Some(Some("6.4.43484".into())),
                ok: true,
                seed: None,
                version: Some("2.5.1".into()),
            },
        )])
    }

    #[test]
    fn checks_name_the_final_path_not_staging() {
        let staged = torch(
            "/e/.cpu.staging/lib/python3.12/site-packages/torch/__init__.py",
            "ran in /e/.cpu.staging",
        );
        let out = at_final_path(&staged, Path::new("/e/.cpu.staging"), Path::new("/e/cpu"));
        assert_eq!(
            out,
            torch(
                "/e/cpu/lib/python3.12/site-packages/torch/__init__.py",
                "ran in /e/cpu"
            )
        );
        // Paths with characters JSON escapes still match.
        let staged = torch("/a \"q\"/x", "r");
        let out = at_final_path(&staged, Path::new("/a \"q\""), Path::new("/b"));
        assert_eq!(out["torch"].file.as_deref(), Some("/b/x"));
    }

    /// torch's build keys are written when null and read back as there, so
    /// an up-to-date install reports the receipt's checks unchanged.
    #[test]
    fn null_build_keys_survive_a_round_trip() {
        let c = torch("/f", "r");
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains(r#""cuda":null"#), "{text}");
        assert!(
            !text.contains("\"seed\"") && !text.contains("\"devices\""),
            "{text}"
        );
        let back: Checks = serde_json::from_str(&text).unwrap();
        assert_eq!(back, c);
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        // Keys in the order the JSON object had (sorted).
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(text, v.to_string());
    }

    /// A triton without the torch-only keys stays without them.
    #[test]
    fn other_modules_have_no_build_keys() {
        let text = r#"{"triton":{"error":null,"file":null,"ok":false,"version":null}}"#;
        let c: Checks = serde_json::from_str(text).unwrap();
        assert_eq!(c["triton"].cuda, None);
        assert_eq!(serde_json::to_string(&c).unwrap(), text);
    }
}
