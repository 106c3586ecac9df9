//! `greta doctor -v`: what each check read, one line a fact, under its
//! check line (as `flutter doctor -v` shows each check's details). Drawn
//! from the facts the report carries, so a replay, a capture and `--json`
//! hold the same; nothing is read again.

use crate::facts::{Facts, Gpu};
use crate::rules::predicates::describe;

/// The detail lines of check `id` (a check of [`crate::collect::CHECKS`],
/// or `file:N` naming `--from` file `title`).
pub fn lines(id: &str, title: &str, f: &Facts) -> Vec<String> {
    let or_none = |v: Vec<String>, none: &str| {
        if v.is_empty() {
            vec![none.to_string()]
        } else {
            v
        }
    };
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "unknown".into());
    match id {
        "pci" => {
            let mut v: Vec<String> = f
                .gpus
                .iter()
                .filter(|g| g.vendor != crate::facts::Vendor::Cpu)
                .map(gpu_line)
                .collect();
            v = or_none(v, "no GPU");
            v.push(format!("kernel {}", opt(&f.kernel_version)));
            for d in &f.drivers {
                v.push(format!(
                    "module {}: {}{}",
                    d.name,
                    if d.loaded { "loaded" } else { "not loaded" },
                    d.version
                        .as_deref()
                        .map(|x| format!(", version {x}"))
                        .unwrap_or_default()
                ));
            }
            if let Some(c) = &f.container {
                v.push(format!("container: {c}"));
            }
            v
        }
        "kfd" => or_none(
            f.gpus
                .iter()
                .filter(|g| g.kfd_node.is_some() || g.vram_bytes.is_some() || g.gtt_bytes.is_some())
                .map(|g| {
                    let mem = |b: Option<u64>| {
                        b.map(greta_vocab::size::memory)
                            .unwrap_or_else(|| "?".into())
                    };
                    format!(
                        "{}: node {}, VRAM {}, GTT {}{}",
                        g.label(|| "GPU".into()),
                        g.kfd_node.map_or("?".into(), |n| n.to_string()),
                        mem(g.vram_bytes),
                        mem(g.gtt_bytes),
                        match g.integrated {
                            Some(true) => ", integrated",
                            Some(false) => ", discrete",
                            None => "",
                        }
                    )
                })
                .collect(),
            "no KFD GPU node",
        ),
        "device-nodes" => or_none(
            f.device_nodes
                .iter()
                .map(|n| {
                    if !n.exists {
                        return format!("{}: absent", n.path);
                    }
                    format!(
                        "{}: mode {} group {}, {}{}",
                        n.path,
                        n.mode.as_deref().unwrap_or("?"),
                        n.group.as_deref().unwrap_or("?"),
                        match n.openable {
                            Some(true) => "openable".to_string(),
                            Some(false) => "not openable".to_string(),
                            None => "openable unknown".to_string(),
                        },
                        if n.missing_groups.is_empty() {
                            String::new()
                        } else {
                            format!(" (not in: {})", n.missing_groups.join(", "))
                        }
                    )
                })
                .collect(),
            "no device node read",
        ),
        "vulkan-icds" => {
            let mut v = vec![format!(
                "loader {}",
                f.vulkan.loader.as_deref().unwrap_or("not found")
            )];
            for i in &f.vulkan.icds {
                v.push(format!(
                    "ICD {} ({}): library {} {}{}",
                    i.manifest,
                    i.kind.name(),
                    i.library_path.as_deref().unwrap_or("?"),
                    match i.library_ok {
                        Some(true) => "loads",
                        Some(false) => "does not load",
                        None => "not tried",
                    },
                    i.error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ));
            }
            for (k, x) in &f.vulkan.env {
                v.push(format!("{k}={x}"));
            }
            for l in &f.vulkan.implicit_layers {
                v.push(format!("implicit layer {l}"));
            }
            v
        }
        "vulkan-devices" => or_none(
            f.vulkan
                .devices
                .iter()
                .map(|d| {
                    let mut s = format!("{} ({})", d.name, d.kind.name());
                    let mut kv = Vec::new();
                    if let Some(t) = d.device_type {
                        kv.push(t.vk_name().to_ascii_lowercase());
                    }
                    if let Some(x) = &d.driver_info {
                        kv.push(format!("driver {x}"));
                    }
                    if let Some(x) = &d.api_version {
                        kv.push(format!("Vulkan {x}"));
                    }
                    if let Some(x) = d.compute_units {
                        kv.push(format!("{x} compute units"));
                    }
                    if let Some(x) = d.subgroup_size {
                        kv.push(format!("subgroup {x}"));
                    }
                    if let Some(x) = d.fp16 {
                        kv.push(format!("fp16 {}", if x { "yes" } else { "no" }));
                    }
                    if let Some(x) = d.cooperative_matrix {
                        kv.push(format!(
                            "cooperative matrix {}",
                            if x { "yes" } else { "no" }
                        ));
                    }
                    if !kv.is_empty() {
                        s.push_str(&format!(": {}", kv.join(", ")));
                    }
                    s
                })
                .collect(),
            "no Vulkan device",
        ),
        "rocm" => {
            let mut v: Vec<String> = f
                .rocm
                .installs
                .iter()
                .map(|i| {
                    format!(
                        "install {} ({}){}",
                        i.path,
                        i.version.as_deref().unwrap_or("version unknown"),
                        if i.active { ", active" } else { "" }
                    )
                })
                .collect();
            v = or_none(v, "no ROCm install");
            if let Some(r) = &f.rocm.active_reason {
                v.push(format!("active because: {r}"));
            }
            if let Some(h) = &f.rocm.hip_version {
                v.push(format!("HIP {h}"));
            }
            for l in &f.rocm.hip_libraries {
                v.push(format!("HIP runtime {l}"));
            }
            if !f.rocm.agent_gfx.is_empty() {
                v.push(format!("rocminfo agents {}", f.rocm.agent_gfx.join(", ")));
            }
            if let Some(o) = &f.rocm.hsa_override_gfx_version {
                v.push(format!("HSA_OVERRIDE_GFX_VERSION={o}"));
            }
            for (k, x) in &f.rocm.visible_devices {
                v.push(format!("{k}={x}"));
            }
            for d in &f.rocm.ld_library_path_rocm {
                v.push(format!("LD_LIBRARY_PATH entry {d}"));
            }
            v
        }
        "python" => {
            let mut v: Vec<String> = f
                .python
                .interpreters
                .iter()
                .map(|i| {
                    format!(
                        "{} {}",
                        i.path,
                        i.version.as_deref().unwrap_or("version unknown")
                    )
                })
                .collect();
            v = or_none(v, "no interpreter");
            for x in &f.python.frameworks {
                v.push(format!(
                    "{} {} in {} ({}{})",
                    x.name,
                    x.version,
                    x.env,
                    x.backend.as_deref().unwrap_or("backend unknown"),
                    x.backend_version
                        .as_deref()
                        .map(|b| format!(" {b}"))
                        .unwrap_or_default()
                ));
            }
            v
        }
        // Its line says what HIP answered; the error signatures it raised.
        "hip-runtime" => f
            .signals
            .iter()
            .filter(|s| s.source.starts_with("greta-hip-worker"))
            .map(|s| format!("{}: {}", s.id, s.text))
            .collect(),
        // A `--from` file: the lines of it a signature matched.
        _ => or_none(
            f.signals
                .iter()
                .filter(|s| s.source == title)
                .map(|s| {
                    format!(
                        "line {}: {} ({})",
                        s.line.map_or("?".into(), |l| l.to_string()),
                        s.text,
                        s.id
                    )
                })
                .collect(),
            "no error signature matched",
        ),
    }
}

fn gpu_line(g: &Gpu) -> String {
    format!(
        "GPU {}{}",
        describe(g),
        g.kernel_driver
            .as_deref()
            .map(|d| format!(", driver {d}"))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{DeviceNode, Icd, VulkanDevice};
    use greta_vocab::VkFamily;

    #[test]
    fn each_check_says_what_it_read() {
        let mut f = Facts::default();
        f.vulkan.loader = Some("/usr/lib/libvulkan.so.1".into());
        f.vulkan.icds.push(Icd {
            manifest: "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json".into(),
            kind: VkFamily::Lavapipe,
            library_path: Some("libvulkan_lvp.so".into()),
            library_ok: Some(true),
            ..Icd::default()
        });
        f.vulkan.devices.push(VulkanDevice {
            name: "llvmpipe".into(),
            kind: VkFamily::Lavapipe,
            subgroup_size: Some(8),
            fp16: Some(true),
            ..VulkanDevice::default()
        });
        f.vulkan.devices.push(VulkanDevice {
            name: "AMD Radeon 780M (RADV PHOENIX)".into(),
            kind: VkFamily::Radv,
            subgroup_size: Some(64),
            compute_units: Some(12),
            ..VulkanDevice::default()
        });
        f.device_nodes.push(DeviceNode {
            path: "/dev/kfd".into(),
            exists: false,
            ..DeviceNode::default()
        });
        let icds = lines("vulkan-icds", "", &f);
        assert_eq!(icds[0], "loader /usr/lib/libvulkan.so.1");
        assert!(icds[1].contains("lvp_icd.x86_64.json (lavapipe): library libvulkan_lvp.so loads"));
        assert_eq!(
            lines("vulkan-devices", "", &f),
            [
                "llvmpipe (lavapipe): subgroup 8, fp16 yes",
                "AMD Radeon 780M (RADV PHOENIX) (radv): 12 compute units, subgroup 64"
            ]
        );
        assert_eq!(lines("device-nodes", "", &f), ["/dev/kfd: absent"]);
        assert_eq!(lines("rocm", "", &f), ["no ROCm install"]);
        assert_eq!(lines("pci", "", &f)[0], "no GPU");
    }
}
