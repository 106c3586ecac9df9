//! What the machine says about its AMD GPUs besides HIP: the gfx target of
//! a device from its KFD topology node (matched by PCI bus id), and — when
//! HIP finds no device — why.

use greta_vocab::Gfx;
use std::path::Path;

/// `gfx90a:sramecc+:xnack-` → `gfx90a`: kernels built for the bare processor
/// run whatever the xnack/sramecc mode, so that is what greta compiles for.
pub fn processor_of(target_id: &str) -> &str {
    target_id.split(':').next().unwrap_or(target_id).trim()
}

/// The HIP runtime's version as `major.minor.patch` (from 50221153 → 5.2.21153).
pub fn version_string(v: i32) -> String {
    format!("{}.{}.{}", v / 10_000_000, (v / 100_000) % 100, v % 100_000)
}

/// Environment variables that hide GPUs from HIP.
pub fn env_snapshot() -> Vec<(String, String)> {
    [
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "GPU_DEVICE_ORDINAL",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect()
}

/// Explains an empty device list from what the machine shows under `root`
/// (`/` live; a fake tree in tests): the KFD device node, the KFD topology's
/// GPU nodes, render nodes, and variables that hide devices.
pub fn diagnose_no_device(root: &Path, env: &[(String, String)]) -> String {
    let mut why = Vec::new();
    let kfd = root.join("dev/kfd");
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    let gpu_nodes: Vec<String> = std::fs::read_dir(&nodes)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_to_string(e.path().join("properties")).ok())
                .filter_map(|p| gfx_of_kfd_properties(&p).map(|g| g.to_string()))
                .collect()
        })
        .unwrap_or_default();
    if !root.join("sys/class/kfd").exists() && !kfd.exists() {
        why.push(
            "the amdgpu kernel driver's compute interface (KFD) is absent: /dev/kfd and /sys/class/kfd do not exist \
             (no AMD GPU in this machine, amdgpu not loaded, or a container started without --device /dev/kfd --device /dev/dri)"
                .to_string(),
        );
    } else if !kfd.exists() {
        why.push(
            "/sys/class/kfd exists but /dev/kfd does not (a container without --device /dev/kfd?)"
                .to_string(),
        );
    } else {
        match std::fs::OpenOptions::new().read(true).write(true).open(&kfd) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => why.push(format!(
                "{} exists but this user cannot open it ({e}): add the user to the render and video groups and log in again",
                kfd.display()
            )),
            _ => {}
        }
        if gpu_nodes.is_empty() {
            why.push(format!(
                "the KFD topology ({}) lists no GPU node (CPU agents only)",
                nodes.display()
            ));
        } else {
            why.push(format!(
                "the KFD topology lists GPU node(s) {}, yet HIP found none",
                gpu_nodes.join(", ")
            ));
        }
    }
    for (k, v) in env {
        why.push(format!("{k}={v} is set and may hide devices"));
    }
    why.join("; ")
}

/// The gfx target of the KFD node whose PCI location is `pci_bus_id`
/// (`0000:c1:00.0`), under `root` (`/` live). KFD's `location_id` is
/// `bus << 8 | device << 3 | function`, beside a `domain` line.
pub fn gfx_from_kfd(root: &Path, pci_bus_id: &str) -> Option<Gfx> {
    let at: greta_vocab::PciAddress = pci_bus_id.parse().ok()?;
    let want = (u32::from(at.bus) << 8) | (u32::from(at.device) << 3) | u32::from(at.function);
    let domain = at.domain.unwrap_or(0);
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    std::fs::read_dir(nodes)
        .ok()?
        .filter_map(|e| e.ok())
        .find_map(|e| {
            let text = std::fs::read_to_string(e.path().join("properties")).ok()?;
            let num = |key: &str| -> Option<u32> {
                text.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.trim().parse().ok())
            };
            let same = num("location_id ") == Some(want) && num("domain ").unwrap_or(0) == domain;
            if same {
                gfx_of_kfd_properties(&text)
            } else {
                None
            }
        })
}

/// `gfx_target_version 90010` → `gfx90a`; CPU nodes (0) → None, and so
/// is a version no gfx name can spell (a minor or stepping over 15).
pub fn gfx_of_kfd_properties(text: &str) -> Option<Gfx> {
    let v: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("gfx_target_version "))
        .and_then(|v| v.trim().parse().ok())?;
    if v == 0 {
        return None;
    }
    let (major, minor, step) = (v / 10000, (v / 100) % 100, v % 100);
    // Through the text KFD's numbers always meant, so the target is the
    // one greta named before it had a type for it.
    let g: Gfx = format!("gfx{major}{minor}{step:x}").parse().ok()?;
    (g.major as u32 == major && g.minor as u32 == minor && g.stepping as u32 == step).then_some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ids() {
        assert_eq!(processor_of("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(processor_of("gfx1103"), "gfx1103");
        assert_eq!(version_string(50221153), "5.2.21153");
        assert_eq!(version_string(60342134), "6.3.42134");
        assert_eq!(
            gfx_of_kfd_properties("cpu_cores_count 8\ngfx_target_version 0\n"),
            None
        );
        assert_eq!(
            gfx_of_kfd_properties("gfx_target_version 90010\n")
                .map(|g| g.to_string())
                .as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            gfx_of_kfd_properties("gfx_target_version 90402\n")
                .map(|g| g.to_string())
                .as_deref(),
            Some("gfx942")
        );
        assert_eq!(
            gfx_of_kfd_properties("gfx_target_version 110003\n")
                .map(|g| g.to_string())
                .as_deref(),
            Some("gfx1103")
        );
    }

    #[test]
    fn the_gfx_target_comes_from_the_kfd_node_at_the_bus_id() {
        let root = tempfile::tempdir().unwrap();
        for (n, props) in [
            (
                "0",
                "cpu_cores_count 8\ngfx_target_version 0\nlocation_id 0\ndomain 0\n",
            ),
            (
                "1",
                "gfx_target_version 90402\nlocation_id 49408\ndomain 0\n",
            ),
            (
                "2",
                "gfx_target_version 110003\nlocation_id 768\ndomain 0\n",
            ),
        ] {
            let d = root.path().join("sys/class/kfd/kfd/topology/nodes").join(n);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("properties"), props).unwrap();
        }
        assert_eq!(
            gfx_from_kfd(root.path(), "0000:c1:00.0")
                .map(|g| g.to_string())
                .as_deref(),
            Some("gfx942")
        );
        assert_eq!(
            gfx_from_kfd(root.path(), "0000:03:00.0")
                .map(|g| g.to_string())
                .as_deref(),
            Some("gfx1103")
        );
        assert_eq!(gfx_from_kfd(root.path(), "0001:c1:00.0"), None);
        assert_eq!(gfx_from_kfd(root.path(), "garbage"), None);
    }

    #[test]
    fn no_kfd_at_all_is_explained() {
        let root = tempfile::tempdir().unwrap();
        let why = diagnose_no_device(root.path(), &[]);
        assert!(
            why.contains("/dev/kfd and /sys/class/kfd do not exist"),
            "{why}"
        );
        let why = diagnose_no_device(root.path(), &[("HIP_VISIBLE_DEVICES".into(), "-1".into())]);
        assert!(why.contains("HIP_VISIBLE_DEVICES=-1 is set"), "{why}");
    }

    #[test]
    fn kfd_with_cpu_nodes_only_is_explained() {
        let root = tempfile::tempdir().unwrap();
        let node = root.path().join("sys/class/kfd/kfd/topology/nodes/0");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("properties"), "gfx_target_version 0\n").unwrap();
        std::fs::create_dir_all(root.path().join("dev")).unwrap();
        std::fs::write(root.path().join("dev/kfd"), "").unwrap();
        let why = diagnose_no_device(root.path(), &[]);
        assert!(why.contains("lists no GPU node"), "{why}");
        let gpu = root.path().join("sys/class/kfd/kfd/topology/nodes/1");
        std::fs::create_dir_all(&gpu).unwrap();
        std::fs::write(
            gpu.join("properties"),
            "simd_count 1216\ngfx_target_version 90402\n",
        )
        .unwrap();
        let why = diagnose_no_device(root.path(), &[]);
        assert!(
            why.contains("GPU node(s) gfx942, yet HIP found none"),
            "{why}"
        );
    }
}
