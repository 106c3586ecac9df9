//! Vulkan ICD and layer manifests (`/usr/share/vulkan/icd.d/*.json`,
//! `implicit_layer.d/*.json`). A manifest says which driver is installed and
//! where its library is; whether that library loads is only known live.

use super::vulkaninfo::kind_from_library;
use super::Format;
use crate::facts::{Facts, Icd};
use serde_json::Value;

pub fn recognise(text: &str) -> Option<Format> {
    let v: Value = serde_json::from_str(text).ok()?;
    if v.get("ICD").and_then(|i| i.get("library_path")).is_some() {
        Some(Format::IcdManifest)
    } else if v.get("layer").or_else(|| v.get("layers")).is_some() {
        Some(Format::LayerManifest)
    } else {
        None
    }
}

pub fn parse(text: &str, source: &str) -> Facts {
    let mut f = Facts::default();
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return f;
    };
    if let Some(icd) = v.get("ICD") {
        let lib = icd
            .get("library_path")
            .and_then(Value::as_str)
            .map(String::from);
        let kind = lib.as_deref().map(kind_from_library).unwrap_or_default();
        f.vulkan.icds.push(Icd {
            manifest: source.to_string(),
            library_path: lib,
            kind,
            api_version: icd
                .get("api_version")
                .and_then(Value::as_str)
                .map(String::from),
            ..Icd::default()
        });
        f.vulkan.drivers.push(kind);
    }
    let layers: Vec<&Value> = match (v.get("layer"), v.get("layers")) {
        (Some(l), _) => vec![l],
        (None, Some(Value::Array(a))) => a.iter().collect(),
        _ => vec![],
    };
    for l in layers {
        // Implicit layers carry an enable/disable environment switch.
        if l.get("disable_environment").is_some() {
            if let Some(n) = l.get("name").and_then(Value::as_str) {
                f.vulkan.implicit_layers.push(n.to_string());
            }
        }
    }
    f
}
