//! Named yes/no questions about [`Facts`] that rules (rules.toml) combine.
//! Each carries its evidence (the fact, or the signal's `source:line`), so a
//! finding can always say what it is based on. Template variables for the
//! messages are computed here too.

use crate::facts::{Facts, Gpu, Vendor, VulkanDriverKind};
use crate::from::{amd, vulkaninfo::kind_name};
use std::collections::BTreeMap;

/// Every predicate a rule may name (besides `signal:<id>`), with its meaning
/// (printed by docs and checked when rules load).
pub const PREDICATES: &[(&str, &str)] = &[
    (
        "gpu_present",
        "at least one GPU (not a CPU/software device) is known",
    ),
    ("no_gpu_known", "no GPU at all is known"),
    ("amd_gpu_present", "an AMD GPU is known"),
    ("nvidia_gpu_present", "an NVIDIA GPU is known"),
    (
        "pci_scanned",
        "the PCI bus was read completely (live or sysroot)",
    ),
    (
        "pci_shows_no_amd_gpu",
        "the PCI bus was read and holds no AMD GPU",
    ),
    ("gpu_vf", "a GPU is an SR-IOV virtual function"),
    (
        "amd_gpu_driver_unbound",
        "PCI shows an AMD GPU whose bound driver is not amdgpu",
    ),
    ("amdgpu_not_loaded", "amdgpu is known not to be loaded"),
    ("amdgpu_loaded", "amdgpu (ROCk) is known to be loaded"),
    (
        "wsl",
        "the machine is WSL2 (GPU through /dev/dxg: no amdgpu module, no /dev/kfd by design)",
    ),
    (
        "device_nodes_scanned",
        "/dev/kfd and /dev/dri were inspected",
    ),
    ("kfd_node_absent", "/dev/kfd is known not to exist"),
    (
        "kfd_not_openable",
        "/dev/kfd exists but this user cannot open it",
    ),
    (
        "render_node_not_openable",
        "a /dev/dri/renderD* node exists but this user cannot open it",
    ),
    (
        "user_missing_groups",
        "the user lacks a group that owns a GPU device node",
    ),
    ("rocm_scanned", "every ROCm install location was inspected"),
    ("rocm_absent", "no ROCm install was found"),
    ("rocm_multiple", "two or more ROCm installs were found"),
    (
        "rocm_runtime_sees_no_gpu",
        "the HSA/HIP runtime ran and found no GPU",
    ),
    ("hsa_override_set", "HSA_OVERRIDE_GFX_VERSION is set"),
    (
        "ld_library_path_rocm",
        "LD_LIBRARY_PATH contains a ROCm directory",
    ),
    (
        "vulkan_loader_scanned",
        "the Vulkan loader library was looked for",
    ),
    ("vulkan_loader_absent", "no libvulkan.so.1 was found"),
    (
        "vulkan_icds_scanned",
        "the loader's ICD search path was read",
    ),
    ("vulkan_no_icds", "no ICD manifest was found"),
    (
        "vulkan_icd_library_missing",
        "an ICD manifest points at a library that is missing or does not load",
    ),
    ("vulkan_devices_known", "a Vulkan device list is known"),
    (
        "vulkan_only_cpu_devices",
        "every Vulkan device is a CPU (llvmpipe/lavapipe) device",
    ),
    (
        "vulkan_duplicate_gpu",
        "one GPU is listed twice (two ICDs, or duplicate manifests)",
    ),
    (
        "vulkan_amd_icds_both",
        "RADV and AMDVLK/AMDGPU-PRO manifests are both installed for an AMD GPU",
    ),
    (
        "vulkan_icd_chosen_by_env",
        "AMD_VULKAN_ICD, VK_DRIVER_FILES or VK_ICD_FILENAMES selects the driver",
    ),
    (
        "amd_switchable_layer_present",
        "AMD's switchable-graphics implicit layer is installed",
    ),
    (
        "amd_switchable_layer_disabled",
        "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1 is set",
    ),
    (
        "vulkan_in_play",
        "anything about Vulkan is known (loader, ICDs, devices or loader messages)",
    ),
    ("gfx94x_present", "an MI300-class GPU (gfx94x) is known"),
    (
        "apu_small_vram",
        "an integrated AMD GPU has 1 GiB or less of dedicated VRAM",
    ),
    (
        "python_scanned",
        "Python interpreters on PATH were looked for",
    ),
    ("python_absent", "no Python interpreter was found"),
    (
        "framework_backend_mismatch",
        "an installed framework was built for another GPU backend or ROCm/CUDA version",
    ),
];

#[derive(Debug, Default, Clone)]
pub struct Eval {
    /// Predicate name (or `signal:<id>`) -> evidence lines; absent = false.
    pub truths: BTreeMap<String, Vec<String>>,
    /// Template variables for messages.
    pub vars: BTreeMap<&'static str, String>,
}

impl Eval {
    pub fn holds(&self, name: &str) -> bool {
        self.truths.contains_key(name)
    }
    pub fn evidence(&self, name: &str) -> &[String] {
        self.truths.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Template variables every message may use.
pub const VARS: &[&str] = &[
    "gpus",
    "amd_gpus",
    "vf_gpus",
    "gfx94x_gpus",
    "gfx",
    "rocm_version",
    "rocm_installs",
    "rocm_active",
    "hsa_override",
    "hsa_override_gfx",
    "ld_rocm",
    "vulkan_drivers",
    "vulkan_devices",
    "vulkan_choice",
    "kfd_group",
    "missing_groups",
    "frameworks",
    "vram",
    "user",
    "override_value",
    "override_note",
];

pub fn describe(g: &Gpu) -> String {
    let mut s = if g.name.is_empty() {
        format!("{} GPU", vendor_name(g.vendor))
    } else {
        g.name.clone()
    };
    let mut extra = Vec::new();
    if let Some(x) = &g.gfx {
        extra.push(x.clone());
    }
    if let (Some(v), Some(d)) = (g.vendor_id, g.device_id) {
        extra.push(format!("{v:04x}:{d:04x}"));
    }
    if let Some(p) = &g.pci_address {
        extra.push(p.clone());
    }
    if !extra.is_empty() {
        s.push_str(&format!(" [{}]", extra.join(", ")));
    }
    if !g.seen_by.is_empty() {
        s.push_str(&format!(" (seen by {})", g.seen_by.join(", ")));
    }
    s
}

/// Name and gfx only, for messages (evidence carries the full description).
pub fn short(g: &Gpu) -> String {
    g.label(|| format!("{} GPU", vendor_name(g.vendor)))
}

fn vendor_name(v: Vendor) -> &'static str {
    match v {
        Vendor::Amd => "AMD",
        Vendor::Nvidia => "NVIDIA",
        Vendor::Intel => "Intel",
        Vendor::Cpu => "CPU",
        Vendor::Other => "unknown-vendor",
    }
}

fn gib(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", b >> 20)
    }
}

pub fn evaluate(f: &Facts) -> Eval {
    let mut e = Eval::default();
    let mut set = |name: &str, cond: bool, ev: Vec<String>| {
        if cond {
            e.truths.insert(name.to_string(), ev);
        }
    };
    let scanned = |a: &str| f.scanned.iter().any(|s| s == a);
    let gpus: Vec<&Gpu> = f.gpus.iter().filter(|g| g.vendor != Vendor::Cpu).collect();
    let amd: Vec<&Gpu> = gpus
        .iter()
        .copied()
        .filter(|g| g.vendor == Vendor::Amd)
        .collect();
    let nv: Vec<&Gpu> = gpus
        .iter()
        .copied()
        .filter(|g| g.vendor == Vendor::Nvidia)
        .collect();
    let desc = |l: &[&Gpu]| {
        l.iter()
            .map(|g| format!("GPU {}", describe(g)))
            .collect::<Vec<_>>()
    };

    set("gpu_present", !gpus.is_empty(), desc(&gpus));
    let sw: Vec<String> = f
        .gpus
        .iter()
        .filter(|g| g.vendor == Vendor::Cpu)
        .map(|g| format!("only a software device: {}", g.name))
        .collect();
    set(
        "no_gpu_known",
        gpus.is_empty(),
        if sw.is_empty() {
            vec!["no GPU in any source".into()]
        } else {
            sw
        },
    );
    set("amd_gpu_present", !amd.is_empty(), desc(&amd));
    set("nvidia_gpu_present", !nv.is_empty(), desc(&nv));
    set("pci_scanned", scanned("pci"), vec!["PCI bus read".into()]);
    set(
        "pci_shows_no_amd_gpu",
        scanned("pci") && !amd.iter().any(|g| g.seen_by.iter().any(|s| s == "pci")),
        vec!["no AMD display device on the PCI bus".into()],
    );
    let vfs: Vec<&Gpu> = gpus.iter().copied().filter(|g| g.vf).collect();
    set("gpu_vf", !vfs.is_empty(), desc(&vfs));
    let unbound: Vec<String> = amd
        .iter()
        .filter(|g| {
            // Only sources that show the bound driver: sysfs, or `lspci -k`.
            g.seen_by.iter().any(|s| s == "pci" || s == "lspci-k")
                && g.kernel_driver.as_deref() != Some("amdgpu")
        })
        .map(|g| {
            format!(
                "GPU {}: bound driver {}",
                describe(g),
                g.kernel_driver.as_deref().unwrap_or("none")
            )
        })
        .collect();
    set("amd_gpu_driver_unbound", !unbound.is_empty(), unbound);
    let wsl_kernel = f
        .kernel_version
        .as_deref()
        .filter(|k| k.to_ascii_lowercase().contains("microsoft"));
    set(
        "wsl",
        f.wsl == Some(true) || wsl_kernel.is_some(),
        vec![match wsl_kernel {
            Some(k) => format!("WSL2 kernel {k}"),
            None => "WSL environment detected".into(),
        }],
    );
    let amdgpu = f.drivers.iter().find(|d| d.name == "amdgpu");
    set(
        "amdgpu_not_loaded",
        amdgpu.is_some_and(|d| !d.loaded),
        vec!["kernel module amdgpu: not loaded".into()],
    );
    set(
        "amdgpu_loaded",
        amdgpu.is_some_and(|d| d.loaded),
        vec![format!(
            "kernel module amdgpu loaded{}",
            amdgpu
                .and_then(|d| d.version.as_deref())
                .map(|v| format!(" (version {v})"))
                .unwrap_or_default()
        )],
    );
    set(
        "device_nodes_scanned",
        scanned("device-nodes"),
        vec!["device nodes inspected".into()],
    );
    let kfd = f.device_nodes.iter().find(|n| n.path == "/dev/kfd");
    set(
        "kfd_node_absent",
        kfd.is_some_and(|n| !n.exists),
        vec!["/dev/kfd: does not exist".into()],
    );
    let node_ev = |n: &crate::facts::DeviceNode| {
        format!(
            "{}: mode {} group {}, not openable by this user{}",
            n.path,
            n.mode.as_deref().unwrap_or("?"),
            n.group.as_deref().unwrap_or("?"),
            if n.missing_groups.is_empty() {
                String::new()
            } else {
                format!(" (not in: {})", n.missing_groups.join(", "))
            }
        )
    };
    set(
        "kfd_not_openable",
        kfd.is_some_and(|n| n.exists && n.openable == Some(false)),
        kfd.map(node_ev).into_iter().collect(),
    );
    let render: Vec<String> = f
        .device_nodes
        .iter()
        .filter(|n| n.path.starts_with("/dev/dri/renderD") && n.exists && n.openable == Some(false))
        .map(node_ev)
        .collect();
    set("render_node_not_openable", !render.is_empty(), render);
    let mut missing: Vec<String> = Vec::new();
    for n in &f.device_nodes {
        for g in &n.missing_groups {
            if !missing.contains(g) {
                missing.push(g.clone());
            }
        }
    }
    set(
        "user_missing_groups",
        !missing.is_empty(),
        vec![format!("user is not in: {}", missing.join(", "))],
    );

    let installs: Vec<String> = f
        .rocm
        .installs
        .iter()
        .map(|i| {
            format!(
                "{} ({}){}",
                i.path,
                i.version.as_deref().unwrap_or("version unknown"),
                if i.active { ", active" } else { "" }
            )
        })
        .collect();
    set(
        "rocm_scanned",
        scanned("rocm"),
        vec!["ROCm install locations read".into()],
    );
    set(
        "rocm_absent",
        f.rocm.installs.is_empty() && scanned("rocm"),
        vec!["no /opt/rocm*, ROCM_PATH or HIP_PATH install found".into()],
    );
    set(
        "rocm_multiple",
        f.rocm.installs.len() >= 2,
        installs
            .iter()
            .map(|i| format!("ROCm install {i}"))
            .collect(),
    );
    set(
        "rocm_runtime_sees_no_gpu",
        f.rocm.runtime_sees_gpu == Some(false),
        vec!["the HSA runtime (rocminfo/torch) listed no GPU agent".into()],
    );
    let ovr = f.rocm.hsa_override_gfx_version.clone();
    set(
        "hsa_override_set",
        ovr.is_some(),
        vec![format!(
            "HSA_OVERRIDE_GFX_VERSION={}",
            ovr.clone().unwrap_or_default()
        )],
    );
    set(
        "ld_library_path_rocm",
        !f.rocm.ld_library_path_rocm.is_empty(),
        vec![format!(
            "LD_LIBRARY_PATH contains {}",
            f.rocm.ld_library_path_rocm.join(", ")
        )],
    );

    let v = &f.vulkan;
    set(
        "vulkan_loader_scanned",
        scanned("vulkan-loader"),
        vec!["Vulkan loader looked for".into()],
    );
    set(
        "vulkan_loader_absent",
        scanned("vulkan-loader") && v.loader.is_none(),
        vec!["libvulkan.so.1: not found".into()],
    );
    set(
        "vulkan_icds_scanned",
        scanned("vulkan-icds"),
        vec!["ICD search path read".into()],
    );
    set(
        "vulkan_no_icds",
        scanned("vulkan-icds") && v.icds.is_empty(),
        vec!["no ICD manifest in the loader's search path".into()],
    );
    let bad_icds: Vec<String> = v
        .icds
        .iter()
        .filter(|i| i.library_ok == Some(false))
        .map(|i| {
            format!(
                "{}: library {} {}",
                i.manifest,
                i.library_path.as_deref().unwrap_or("?"),
                i.error.as_deref().unwrap_or("does not load")
            )
        })
        .collect();
    set("vulkan_icd_library_missing", !bad_icds.is_empty(), bad_icds);
    let devs: Vec<String> = v
        .devices
        .iter()
        .map(|d| format!("Vulkan device {} ({})", d.name, kind_name(d.kind)))
        .collect();
    set("vulkan_devices_known", !v.devices.is_empty(), devs.clone());
    let is_cpu = |d: &crate::facts::VulkanDevice| {
        d.kind == VulkanDriverKind::Lavapipe
            || d.device_type.as_deref().is_some_and(|t| t.contains("CPU"))
    };
    set(
        "vulkan_only_cpu_devices",
        !v.devices.is_empty() && v.devices.iter().all(is_cpu),
        devs,
    );
    let mut dups = Vec::new();
    for (i, a) in v.devices.iter().enumerate() {
        for b in &v.devices[i + 1..] {
            if is_cpu(a) || is_cpu(b) {
                continue;
            }
            let same_uuid = a.device_uuid.is_some()
                && a.device_uuid == b.device_uuid
                && a.device_uuid.as_deref() != Some("00000000-0000-0000-0000-000000000000");
            let same_pci = a.pci_address.is_some() && a.pci_address == b.pci_address;
            // Application logs show no UUID: one GPU under two drivers
            // (the vendor's and Dozen's "Microsoft Direct3D12 (NAME)", RADV's
            // "NAME (RADV CODENAME)" and AMDVLK's "NAME") has one bare name.
            let same_name = a.kind != b.kind
                && a.device_uuid.is_none()
                && b.device_uuid.is_none()
                && a.pci_address.is_none()
                && b.pci_address.is_none()
                && bare_device_name(&a.name).len() >= 6
                && bare_device_name(&a.name) == bare_device_name(&b.name);
            if same_uuid || same_pci || same_name {
                dups.push(format!(
                    "{} ({}) and {} ({}) are one GPU ({})",
                    a.name,
                    kind_name(a.kind),
                    b.name,
                    kind_name(b.kind),
                    if same_pci {
                        a.pci_address.clone().unwrap_or_default()
                    } else if same_name {
                        "same device name".to_string()
                    } else {
                        format!("deviceUUID {}", a.device_uuid.clone().unwrap_or_default())
                    }
                ));
            }
        }
    }
    set("vulkan_duplicate_gpu", !dups.is_empty(), dups);
    let has_icd = |k: VulkanDriverKind| {
        v.icds
            .iter()
            .any(|i| i.kind == k && i.library_ok != Some(false))
    };
    let both = has_icd(VulkanDriverKind::Radv)
        && (has_icd(VulkanDriverKind::Amdvlk) || has_icd(VulkanDriverKind::AmdgpuPro))
        && !amd.is_empty();
    set(
        "vulkan_amd_icds_both",
        both,
        v.icds
            .iter()
            .filter(|i| {
                matches!(
                    i.kind,
                    VulkanDriverKind::Radv | VulkanDriverKind::Amdvlk | VulkanDriverKind::AmdgpuPro
                )
            })
            .map(|i| format!("ICD {} ({})", i.manifest, kind_name(i.kind)))
            .collect(),
    );
    let env_of = |k: &str| {
        v.env
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, x)| x.clone())
    };
    let choice: Vec<String> = ["AMD_VULKAN_ICD", "VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .filter_map(|k| env_of(k).map(|x| format!("{k}={x}")))
        .collect();
    set(
        "vulkan_icd_chosen_by_env",
        !choice.is_empty(),
        choice.clone(),
    );
    let layers: Vec<String> = v
        .implicit_layers
        .iter()
        .filter(|l| l.starts_with("VK_LAYER_AMD_switchable_graphics"))
        .cloned()
        .collect();
    set(
        "amd_switchable_layer_present",
        !layers.is_empty(),
        layers
            .iter()
            .map(|l| format!("implicit layer {l}"))
            .collect(),
    );
    set(
        "amd_switchable_layer_disabled",
        env_of("DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1")
            .is_some_and(|x| !x.is_empty() && x != "0"),
        vec!["DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1 is set".into()],
    );
    let vk_signal = f
        .signals
        .iter()
        .any(|s| s.id.starts_with("vk") || s.id.starts_with("vulkaninfo"));
    set(
        "vulkan_in_play",
        v.loader.is_some()
            || !v.icds.is_empty()
            || !v.devices.is_empty()
            || vk_signal
            || scanned("vulkan-loader"),
        vec!["Vulkan facts present".into()],
    );
    let g94: Vec<&Gpu> = amd
        .iter()
        .copied()
        .filter(|g| g.gfx.as_deref().is_some_and(|x| x.starts_with("gfx94")))
        .collect();
    set("gfx94x_present", !g94.is_empty(), desc(&g94));
    let small: Vec<String> = amd
        .iter()
        .filter(|g| g.integrated == Some(true) && g.vram_bytes.is_some_and(|b| b <= 1 << 30))
        .map(|g| {
            format!(
                "GPU {}: integrated, dedicated VRAM {}",
                describe(g),
                gib(g.vram_bytes.unwrap_or(0))
            )
        })
        .collect();
    set("apu_small_vram", !small.is_empty(), small);
    set(
        "python_scanned",
        scanned("python"),
        vec!["PATH searched for Python".into()],
    );
    set(
        "python_absent",
        scanned("python") && f.python.interpreters.is_empty(),
        vec!["no python3 on PATH".into()],
    );
    let mismatch = framework_mismatch(f, &amd, &nv);
    set("framework_backend_mismatch", !mismatch.is_empty(), mismatch);

    for s in &f.signals {
        let ev = format!(
            "{}:{}: {}",
            s.source,
            s.line.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
            s.text
        );
        e.truths
            .entry(format!("signal:{}", s.id))
            .or_default()
            .push(ev);
    }

    // Template variables.
    let join = |l: Vec<String>| {
        if l.is_empty() {
            "none".to_string()
        } else {
            l.join("; ")
        }
    };
    e.vars
        .insert("gpus", join(gpus.iter().map(|g| short(g)).collect()));
    e.vars
        .insert("amd_gpus", join(amd.iter().map(|g| short(g)).collect()));
    e.vars
        .insert("vf_gpus", join(vfs.iter().map(|g| short(g)).collect()));
    e.vars
        .insert("gfx94x_gpus", join(g94.iter().map(|g| short(g)).collect()));
    let gfx: Vec<String> = {
        let mut x: Vec<String> = amd.iter().filter_map(|g| g.gfx.clone()).collect();
        x.dedup();
        x
    };
    e.vars.insert(
        "gfx",
        if gfx.is_empty() {
            "unknown".into()
        } else {
            gfx.join(", ")
        },
    );
    e.vars.insert(
        "rocm_version",
        f.rocm.version.clone().unwrap_or_else(|| "unknown".into()),
    );
    e.vars.insert("rocm_installs", join(installs));
    let active = f.rocm.installs.iter().find(|i| i.active);
    e.vars.insert(
        "rocm_active",
        match active {
            Some(i) => format!(
                "{} ({})",
                i.path,
                f.rocm
                    .active_reason
                    .as_deref()
                    .unwrap_or("default location")
            ),
            None => "none".into(),
        },
    );
    let (ovr_value, ovr_note) = override_hint(&gfx);
    e.vars.insert("override_value", ovr_value);
    e.vars.insert("override_note", ovr_note);
    e.vars.insert(
        "hsa_override",
        ovr.clone().unwrap_or_else(|| "unset".into()),
    );
    e.vars.insert(
        "hsa_override_gfx",
        ovr.as_deref()
            .and_then(amd::gfx_from_override)
            .unwrap_or_else(|| "an invalid target".into()),
    );
    e.vars
        .insert("ld_rocm", join(f.rocm.ld_library_path_rocm.clone()));
    e.vars.insert(
        "vulkan_drivers",
        join(
            v.drivers
                .iter()
                .map(|k| kind_name(*k).to_string())
                .collect(),
        ),
    );
    e.vars.insert(
        "vulkan_devices",
        join(
            v.devices
                .iter()
                .map(|d| format!("{} ({})", d.name, kind_name(d.kind)))
                .collect(),
        ),
    );
    e.vars.insert(
        "vulkan_choice",
        if choice.is_empty() {
            "greta keeps RADV when two ICDs expose one GPU".into()
        } else {
            format!("the environment chooses: {}", choice.join(", "))
        },
    );
    e.vars.insert(
        "kfd_group",
        kfd.and_then(|n| n.group.clone())
            .unwrap_or_else(|| "render".into()),
    );
    e.vars.insert(
        "missing_groups",
        if missing.is_empty() {
            "render,video".into()
        } else {
            missing.join(",")
        },
    );
    e.vars.insert(
        "frameworks",
        join(
            f.python
                .frameworks
                .iter()
                .map(|x| {
                    format!(
                        "{} {} ({} {})",
                        x.name,
                        x.version,
                        x.backend.as_deref().unwrap_or("?"),
                        x.backend_version.as_deref().unwrap_or("")
                    )
                })
                .collect(),
        ),
    );
    e.vars.insert(
        "vram",
        join(
            amd.iter()
                .filter_map(|g| {
                    g.vram_bytes.map(|b| {
                        format!(
                            "{}: {}",
                            if g.name.is_empty() { "GPU" } else { &g.name },
                            gib(b)
                        )
                    })
                })
                .collect(),
        ),
    );
    e.vars.insert("user", "$USER".into());
    e
}

/// A Vulkan device name without the driver's decoration, lowercased.
fn bare_device_name(n: &str) -> String {
    let n = crate::from::vulkaninfo::unwrap_layered_name(n);
    let n = n.split(" (RADV ").next().unwrap_or(n);
    n.trim().to_lowercase()
}

/// Stopgap `HSA_OVERRIDE_GFX_VERSION` per GPU family: run as the nearest
/// target ROCm libraries commonly ship (ERRORS.md C1/C3: 10.3.0 for RDNA2,
/// 11.0.0 for RDNA3; Strix Halo/Point use the gfx1151 kernels, ollama#14855).
/// Phoenix (gfx1103) and Strix are native in ROCm 7.x wheels, so for them
/// the real fix is a newer stack (ERRORS.md C1: forcing 11.0.0 is "actively
/// wrong on the 780M"). Families with no known stand-in get no value.
const OVERRIDE_FAMILIES: &[(&str, &str)] = &[
    ("gfx103", "10.3.0"),
    ("gfx110", "11.0.0"),
    ("gfx115", "11.5.1"),
    ("gfx120", "12.0.1"),
    ("gfx90c", "9.0.0"),
    ("gfx902", "9.0.0"),
    ("gfx909", "9.0.0"),
];

/// (value for `export HSA_OVERRIDE_GFX_VERSION=`, one sentence for the fix).
fn override_hint(gfx: &[String]) -> (String, String) {
    let Some(g) = gfx.first() else {
        return (
            "<major.minor.stepping>".into(),
            "the GPU's target is not known here: look it up with rocminfo before choosing an override".into(),
        );
    };
    match OVERRIDE_FAMILIES.iter().find(|(p, _)| g.starts_with(p)) {
        Some((_, v)) if amd::gfx_from_override(v).as_deref() == Some(g.as_str()) => (
            (*v).into(),
            format!("{g} is itself the target {v} names: an override cannot add kernels, only a stack built for {g} can"),
        ),
        Some((_, v)) => (
            (*v).into(),
            format!("as a stopgap, run {g} as its family's commonly shipped target with HSA_OVERRIDE_GFX_VERSION={v}, and remove it once the stack ships {g}"),
        ),
        None => (
            "<major.minor.stepping>".into(),
            format!("no override stand-in is known for {g}: use a stack (or an older one) built for {g}"),
        ),
    }
}

/// A framework built for a backend the machine does not have, or for a
/// different ROCm major version than the one installed.
fn framework_mismatch(f: &Facts, amd: &[&Gpu], nv: &[&Gpu]) -> Vec<String> {
    let mut out = Vec::new();
    let installed_rocm: Option<&str> = f
        .rocm
        .installs
        .iter()
        .find(|i| i.active)
        .and_then(|i| i.version.as_deref());
    let major = |s: &str| s.split('.').next().map(str::to_string);
    for fw in &f.python.frameworks {
        let what = format!("{} {} in {}", fw.name, fw.version, fw.env);
        match fw.backend.as_deref() {
            Some("rocm") if amd.is_empty() && !nv.is_empty() => {
                out.push(format!("{what}: built for ROCm, but the GPU is NVIDIA"))
            }
            Some("cuda") if nv.is_empty() && !amd.is_empty() => {
                out.push(format!("{what}: built for CUDA, but the GPU is AMD"))
            }
            Some("rocm") => {
                if let (Some(inst), Some(bv)) = (installed_rocm, fw.backend_version.as_deref()) {
                    if major(inst) != major(bv) {
                        out.push(format!(
                            "{what}: built for ROCm {bv}, installed ROCm is {inst}"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    out
}
