//! Vulkan ICD and layer manifests (`/usr/share/vulkan/icd.d/*.json`,
//! `implicit_layer.d/*.json`). A manifest says which driver is installed and
//! where its library is; whether that library loads is only known live.

use super::vulkaninfo::kind_from_library;
use crate::facts::{Facts, Icd};
use serde_json::Value;

/// Which manifest a JSON text is: an ICD's (`ICD.library_path`) or a layer's.
fn manifest(text: &str) -> Option<bool> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let v: Value = serde_json::from_str(text).ok()?;
    if v.get("ICD").and_then(|i| i.get("library_path")).is_some() {
        Some(true)
    } else if v.get("layer").or_else(|| v.get("layers")).is_some() {
        Some(false)
    } else {
        None
    }
}

/// This format's entry in the registry of readers (`super::readers`).
pub const ICD_READER: super::readers::Fns = super::readers::Fns {
    name: "icd-manifest",
    label: "Vulkan ICD manifest",
    detect: |t| manifest(t) == Some(true),
    parse,
    alone: true,
    markers: &[],
};

/// This format's entry in the registry of readers (`super::readers`).
pub const LAYER_READER: super::readers::Fns = super::readers::Fns {
    name: "layer-manifest",
    label: "Vulkan layer manifest",
    detect: |t| manifest(t) == Some(false),
    parse,
    alone: true,
    markers: &[],
};

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
    for l in manifest_layers(&v) {
        // Implicit layers carry an enable/disable environment switch.
        if l.get("disable_environment").is_some() {
            if let Some(n) = l.get("name").and_then(Value::as_str) {
                f.vulkan.implicit_layers.push(n.to_string());
            }
        }
    }
    f
}

/// The layer objects of a layer manifest: one under `layer` and/or a list
/// under `layers` (file format 1.0.1 and later). The live search of
/// `implicit_layer.d` ([`crate::live::icd`]) reads them the same way.
pub fn manifest_layers(v: &Value) -> Vec<&Value> {
    let mut layers: Vec<&Value> = Vec::new();
    if let Some(l) = v.get("layer") {
        layers.push(l);
    }
    if let Some(ls) = v.get("layers").and_then(Value::as_array) {
        layers.extend(ls);
    }
    layers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_come_from_layer_and_layers() {
        let names = |t: &str| -> Vec<String> {
            let v: Value = serde_json::from_str(t).unwrap();
            manifest_layers(&v)
                .iter()
                .map(|l| l["name"].as_str().unwrap_or("?").to_string())
                .collect()
        };
        assert_eq!(names(r#"{"layer":{"name":"A"}}"#), ["A"]);
        assert_eq!(
            names(r#"{"layers":[{"name":"B"},{"name":"C"}]}"#),
            ["B", "C"]
        );
        assert_eq!(
            names(r#"{"layer":{"name":"A"},"layers":[{"name":"B"}]}"#),
            ["A", "B"]
        );
        assert!(names(r#"{"layers":{"name":"B"}}"#).is_empty());
        assert!(names(r#"{"ICD":{"library_path":"x.so"}}"#).is_empty());
    }
}
