//! `hipconfig` / `hipconfig --full` output: HIP version and ROCm path.

use super::shared_lines::lines_of;
use crate::facts::{Facts, RocmInstall};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "hipconfig",
    label: "hipconfig",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["HIP version"]],
};

pub fn recognise(text: &str) -> bool {
    text.contains("HIP version")
        && (text.contains("== hipconfig")
            || text.contains("HIP_PLATFORM")
            || text.contains("ROCM_PATH"))
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    for l in lines_of(text) {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "HIP version" if !v.is_empty() => {
                f.rocm.hip_version = Some(v.to_string());
                f.rocm.version.get_or_insert_with(|| v.to_string());
            }
            "ROCM_PATH" if v.starts_with('/') => {
                if !f.rocm.installs.iter().any(|i| i.path == v) {
                    f.rocm.installs.push(RocmInstall {
                        path: v.to_string(),
                        version: None,
                        active: true,
                    });
                }
                f.rocm
                    .active_reason
                    .get_or_insert_with(|| "hipconfig ROCM_PATH".into());
            }
            _ => {}
        }
    }
    f
}
