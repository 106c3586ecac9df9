//! The node labels AMD's Kubernetes labeller (ROCm/k8s-device-plugin,
//! `amdgpu-labeller`) puts on a GPU node, as `kubectl get node -o yaml`
//! (`amd.com/gpu.device-id: 74b5`) or `kubectl describe node`
//! (`amd.com/gpu.device-id=74b5`) prints them, and the node's `amd.com/gpu`
//! capacity. Cluster reports show a node this way when no tool ran on it:
//! the GPUs' device id and how many (`beta.amd.com/gpu.device-id.74b5:
//! "8"`), the amdgpu driver's version, VRAM and compute units per GPU.

use super::amd;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, KernelDriver, Vendor};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "kubernetes-node-labels",
    label: "Kubernetes node labels of AMD's GPU labeller",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["amd.com/gpu"]],
};

/// A label line: its key after the `amd.com/gpu` prefix (`.device-id`,
/// `.device-id.74b5`, or empty for the capacity) and its value unquoted.
fn label(line: &str) -> Option<(&str, &str)> {
    let t = line.trim().trim_start_matches("- ");
    // `kubectl describe node` prints the first label after the heading.
    let t = t.strip_prefix("Labels:").map_or(t, str::trim_start);
    let t = t.strip_prefix("beta.").unwrap_or(t);
    let rest = t.strip_prefix("amd.com/gpu")?;
    let p = rest.find([':', '='])?;
    let key = rest[..p].trim();
    if key.contains(char::is_whitespace) {
        return None;
    }
    let value = rest[p + 1..].trim().trim_matches(['"', '\'']).trim();
    Some((key, value))
}

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(|l| label(l).is_some_and(|(k, _)| k.starts_with(".device-id")))
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    // (device id, how many) from the count labels; the plain labels say
    // what every GPU of the node is.
    let mut counted: Vec<(u16, u64)> = Vec::new();
    let (mut device, mut capacity, mut vram, mut cus) = (None, None, None, None);
    for l in lines_of(text) {
        let Some((key, v)) = label(l) else { continue };
        let hex = |s: &str| u16::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        match key {
            ".device-id" => device = device.or(hex(v)),
            ".driver-version" if f.kernel_driver_version.is_none() && !v.is_empty() => {
                f.kernel_driver_version = Some(v.to_string());
                f.drivers.push(KernelDriver {
                    name: "amdgpu".into(),
                    loaded: true,
                    version: Some(v.to_string()),
                });
            }
            ".vram" => vram = vram.or(size_bytes(v)),
            ".cu-count" => cus = cus.or(v.parse::<u32>().ok()),
            "" => capacity = capacity.or(v.parse::<u64>().ok()),
            _ => {
                if let Some(id) = key.strip_prefix(".device-id.").and_then(hex) {
                    if let Ok(n) = v.parse::<u64>() {
                        if !counted.iter().any(|(d, _)| *d == id) {
                            counted.push((id, n));
                        }
                    }
                }
            }
        }
    }
    if counted.is_empty() {
        if let Some(d) = device {
            counted.push((d, capacity.unwrap_or(1).max(1)));
        }
    }
    for (d, n) in counted {
        let gpu = Gpu {
            vendor: Vendor::Amd,
            vendor_id: Some(amd::AMD),
            device_id: Some(d),
            vram_bytes: vram,
            compute_units: cus,
            seen_by: vec!["k8s-labels".into()],
            ..Gpu::default()
        };
        // A count is the node's word: at most the list's room is kept,
        // the rest counted (`limits`).
        let room = super::MAX_LISTED.saturating_sub(f.gpus.len()) as u64;
        for _ in 0..n.min(room) {
            super::limits::push_gpu(&mut f, gpu.clone());
        }
        if n > room {
            let beyond = usize::try_from(n - room).unwrap_or(usize::MAX);
            let at = f.cut.entry("GPUs").or_insert(super::MAX_LISTED);
            *at = at.saturating_add(beyond);
        }
    }
    f
}

/// The labeller's sizes: `191G`, `16G`, `512M`.
fn size_bytes(v: &str) -> Option<u64> {
    let (n, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit())?);
    let shift = match unit {
        "G" | "Gi" => 30,
        "M" | "Mi" => 20,
        _ => return None,
    };
    n.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels of an Azure ND MI300X v5 node (ROCm/k8s-device-plugin#112):
    /// eight MI300X VFs, counted by device id, amdgpu 6.8.5.
    #[test]
    fn the_labels_of_an_mi300x_node() {
        let t = "Label added by AMD on the node.\n```yaml\n    amd.com/gpu.cu-count: \"304\"\n    amd.com/gpu.device-id: 74b5\n    amd.com/gpu.driver-version: 6.8.5\n    amd.com/gpu.family: AI\n    amd.com/gpu.vram: 191G\n    beta.amd.com/gpu.cu-count.304: \"8\"\n    beta.amd.com/gpu.device-id.74b5: \"8\"\n    beta.amd.com/gpu.family.AI: \"8\"\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(f.gpus.len(), 8);
        assert!(f.gpus.iter().all(|g| g.device_id == Some(0x74b5)
            && g.compute_units == Some(304)
            && g.vram_bytes == Some(191 << 30)));
        assert_eq!(f.kernel_driver_version.as_deref(), Some("6.8.5"));
        // `kubectl describe node`: `=` labels and the capacity.
        let d = "Labels:  amd.com/gpu.device-id=740f\n          amd.com/gpu.family=AI\nCapacity:\n  amd.com/gpu:        4\n";
        let f = parse(d);
        assert_eq!(f.gpus.len(), 4);
        // A count no list holds is counted, not kept.
        let huge = "beta.amd.com/gpu.device-id.74b5: \"18446744073709551615\"\n";
        let f = parse(huge);
        assert_eq!(f.gpus.len(), super::super::MAX_LISTED);
        assert!(f.cut["GPUs"] > super::super::MAX_LISTED);
        // Prose naming the plugin is no node.
        assert!(!recognise(
            "see the amd.com/gpu resource in the device plugin docs\n"
        ));
    }
}
