//! The Vulkan loader, its ICDs and layers, and the devices they expose.

use super::{about, when, Predicate, Scanned, View};
use crate::facts::VulkanDevice;
use greta_vocab::VkFamily;
use greta_vocab::{same_gpu, GpuIdentity, SameGpu};

pub const VULKAN_LOADER_ABSENT: Scanned = Scanned {
    name: "vulkan_loader_absent",
    meaning: "no libvulkan.so.1 was found",
    reads: &["scanned", "vulkan.loader"],
    area: "vulkan-loader",
    and: |f| f.vulkan.loader.is_none(),
    evidence: "libvulkan.so.1: not found",
};

#[cfg(test)]
#[test]
fn vulkan_loader_absent() {
    use super::tests::*;
    let mut f = scanned(&["vulkan-loader"]);
    assert!(holds(&VULKAN_LOADER_ABSENT, &f));
    f.vulkan.loader = Some("/usr/lib/x86_64-linux-gnu/libvulkan.so.1".into());
    assert!(!holds(&VULKAN_LOADER_ABSENT, &f));
    assert!(!holds(
        &VULKAN_LOADER_ABSENT,
        &crate::facts::Facts::default()
    ));
}

pub const VULKAN_NO_ICDS: Scanned = Scanned {
    name: "vulkan_no_icds",
    meaning: "no ICD manifest was found",
    reads: &["scanned", "vulkan.icds"],
    area: "vulkan-icds",
    and: |f| f.vulkan.icds.is_empty(),
    evidence: "no ICD manifest in the loader's search path",
};

#[cfg(test)]
fn icd(manifest: &str, kind: VkFamily, ok: Option<bool>) -> crate::facts::Icd {
    crate::facts::Icd {
        manifest: manifest.into(),
        library_path: Some("libvulkan_x.so".into()),
        kind,
        library_ok: ok,
        ..crate::facts::Icd::default()
    }
}

#[cfg(test)]
#[test]
fn vulkan_no_icds() {
    use super::tests::*;
    let mut f = scanned(&["vulkan-icds"]);
    assert!(holds(&VULKAN_NO_ICDS, &f));
    f.vulkan.icds.push(icd(
        "/usr/share/vulkan/icd.d/radeon_icd.json",
        VkFamily::Radv,
        None,
    ));
    assert!(!holds(&VULKAN_NO_ICDS, &f));
}

pub struct VulkanIcdLibraryMissing;
impl Predicate for VulkanIcdLibraryMissing {
    about!(
        "vulkan_icd_library_missing",
        "an ICD manifest points at a library that is missing or does not load",
        ["vulkan.icds"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let bad: Vec<String> = v
            .facts
            .vulkan
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
        when(!bad.is_empty(), || bad)
    }
}

#[cfg(test)]
#[test]
fn vulkan_icd_library_missing() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    f.vulkan.icds.push(icd(
        "/etc/vulkan/icd.d/amd_icd64.json",
        VkFamily::Amdvlk,
        Some(false),
    ));
    assert_eq!(
        eval(&VulkanIcdLibraryMissing, &f).unwrap(),
        ["/etc/vulkan/icd.d/amd_icd64.json: library libvulkan_x.so does not load"]
    );
    f.vulkan.icds[0].library_ok = Some(true);
    assert!(!holds(&VulkanIcdLibraryMissing, &f));
}

/// "Vulkan device NAME (KIND)" per device.
fn device_lines(v: &View) -> Vec<String> {
    v.facts
        .vulkan
        .devices
        .iter()
        .map(|d| format!("Vulkan device {} ({})", d.name, d.kind.name()))
        .collect()
}

pub struct VulkanOnlyCpuDevices;
impl Predicate for VulkanOnlyCpuDevices {
    about!(
        "vulkan_only_cpu_devices",
        "every Vulkan device is a CPU (llvmpipe/lavapipe) device",
        ["vulkan.devices"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let devs = &v.facts.vulkan.devices;
        when(!devs.is_empty() && devs.iter().all(|d| d.is_cpu()), || {
            device_lines(v)
        })
    }
}

#[cfg(test)]
fn device(name: &str, kind: VkFamily) -> crate::facts::VulkanDevice {
    crate::facts::VulkanDevice {
        name: name.into(),
        kind,
        ..crate::facts::VulkanDevice::default()
    }
}

#[cfg(test)]
#[test]
fn vulkan_only_cpu_devices() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    assert!(!holds(&VulkanOnlyCpuDevices, &f));
    f.vulkan.devices.push(device(
        "llvmpipe (LLVM 15.0.6, 256 bits)",
        VkFamily::Lavapipe,
    ));
    assert_eq!(eval(&VulkanOnlyCpuDevices, &f).unwrap().len(), 1);
    f.vulkan.devices.push(device(
        "AMD Radeon RX 7900 XTX (RADV NAVI31)",
        VkFamily::Radv,
    ));
    assert!(!holds(&VulkanOnlyCpuDevices, &f));
}

pub struct VulkanDuplicateGpu;
impl Predicate for VulkanDuplicateGpu {
    about!(
        "vulkan_duplicate_gpu",
        "one GPU is listed twice (two ICDs, or duplicate manifests)",
        ["vulkan.devices"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let devs = &v.facts.vulkan.devices;
        let mut dups = Vec::new();
        for (i, a) in devs.iter().enumerate() {
            for b in &devs[i + 1..] {
                if a.is_cpu() || b.is_cpu() {
                    continue;
                }
                // The vocabulary's rule, which the runtime's device list
                // uses too. Application logs show no UUID: one GPU under two
                // drivers (the vendor's and Dozen's "Microsoft Direct3D12
                // (NAME)", RADV's "NAME (RADV CODENAME)" and AMDVLK's "NAME")
                // has one bare name.
                let (na, nb) = (bare_device_name(&a.name), bare_device_name(&b.name));
                // Two installs of one driver (two Mesa builds) list each
                // GPU once each: same name and family, two driverInfo.
                let two_installs = (a.device_uuid.is_none() || b.device_uuid.is_none())
                    && crate::from::vulkaninfo::one_gpu_listed_twice(a, b)
                    && a.driver_info != b.driver_info;
                if two_installs {
                    dups.push(format!(
                        "{} and {} are one GPU (two installs of {}: {} and {})",
                        a.name,
                        b.name,
                        a.kind.name(),
                        a.driver_info.as_deref().unwrap_or(""),
                        b.driver_info.as_deref().unwrap_or("")
                    ));
                    continue;
                }
                if let Some(why) = same_gpu(&identity(a, &na), &identity(b, &nb)) {
                    dups.push(format!(
                        "{} ({}) and {} ({}) are one GPU ({})",
                        a.name,
                        a.kind.name(),
                        b.name,
                        b.kind.name(),
                        match why {
                            SameGpu::Pci(p) => p,
                            SameGpu::Name => "same device name".to_string(),
                            SameGpu::Uuid(u) => format!("deviceUUID {u}"),
                        }
                    ));
                }
            }
        }
        when(!dups.is_empty(), || dups)
    }
}

/// What the probe knows of a device's identity, for the vocabulary's rule.
fn identity<'d>(d: &'d VulkanDevice, bare_name: &'d str) -> GpuIdentity<'d> {
    GpuIdentity {
        uuid: d.device_uuid,
        pci: d.pci_address.as_deref(),
        bare_name,
        driver: d.kind,
    }
}

/// A Vulkan device name without the driver's decoration, lowercased.
fn bare_device_name(n: &str) -> String {
    let n = crate::from::vulkaninfo::unwrap_layered_name(n);
    let n = n.split(" (RADV ").next().unwrap_or(n);
    n.trim().to_lowercase()
}

#[cfg(test)]
#[test]
fn vulkan_duplicate_gpu() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    f.vulkan.devices = vec![
        device("AMD Radeon RX 7900 XTX (RADV NAVI31)", VkFamily::Radv),
        device("AMD Radeon RX 7900 XTX", VkFamily::Amdvlk),
    ];
    let ev = eval(&VulkanDuplicateGpu, &f).unwrap();
    assert!(ev[0].ends_with("are one GPU (same device name)"), "{ev:?}");
    // Same name under one driver: two cards, not one listed twice.
    f.vulkan.devices[1].kind = VkFamily::Radv;
    f.vulkan.devices[1].name = f.vulkan.devices[0].name.clone();
    assert!(!holds(&VulkanDuplicateGpu, &f));
    // A shared deviceUUID is one GPU whatever the names.
    for d in &mut f.vulkan.devices {
        d.device_uuid = Some("a1b2a1b2-a1b2-a1b2-a1b2-a1b2a1b2a1b2".parse().unwrap());
    }
    assert!(holds(&VulkanDuplicateGpu, &f));
    // Two installs of one driver (vkdevicechooser#19: Mesa 20.3.5, which
    // names the GPU `AMD RADV NAVY_FLOUNDER (ACO)`, and Mesa 22.0.2) list
    // the one GPU once each.
    let mut a = device("AMD RADV NAVY_FLOUNDER (ACO)", VkFamily::Radv);
    a.driver_info = Some("Mesa 20.3.5 (ACO)".into());
    let mut b = device("AMD RADV NAVY_FLOUNDER", VkFamily::Radv);
    b.driver_info = Some("Mesa 22.0.2 (git-f1d9e66a84)".into());
    f.vulkan.devices = vec![a, b];
    let ev = eval(&VulkanDuplicateGpu, &f).unwrap();
    assert!(ev[0].contains("two installs of radv"), "{ev:?}");
    // One install: two cards of one model.
    f.vulkan.devices[1].driver_info = f.vulkan.devices[0].driver_info.clone();
    f.vulkan.devices[1].name = f.vulkan.devices[0].name.clone();
    assert!(!holds(&VulkanDuplicateGpu, &f));
}

pub struct VulkanAmdIcdsBoth;
impl Predicate for VulkanAmdIcdsBoth {
    about!(
        "vulkan_amd_icds_both",
        "RADV and AMDVLK/AMDGPU-PRO manifests are both installed for an AMD GPU",
        ["vulkan.icds", "gpus"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let icds = &v.facts.vulkan.icds;
        let has_icd = |k: VkFamily| {
            icds.iter()
                .any(|i| i.kind == k && i.library_ok != Some(false))
        };
        let both = has_icd(VkFamily::Radv)
            && (has_icd(VkFamily::Amdvlk) || has_icd(VkFamily::AmdgpuPro))
            && !v.amd.is_empty();
        when(both, || {
            icds.iter()
                .filter(|i| {
                    matches!(
                        i.kind,
                        VkFamily::Radv | VkFamily::Amdvlk | VkFamily::AmdgpuPro
                    )
                })
                .map(|i| format!("ICD {} ({})", i.manifest, i.kind.name()))
                .collect()
        })
    }
}

#[cfg(test)]
#[test]
fn vulkan_amd_icds_both() {
    use super::tests::*;
    let mut f = with_gpus(vec![gpu(crate::facts::Vendor::Amd, "RX 7900")]);
    f.vulkan.icds = vec![
        icd("radeon_icd.json", VkFamily::Radv, Some(true)),
        icd("amd_icd64.json", VkFamily::Amdvlk, Some(true)),
    ];
    assert_eq!(eval(&VulkanAmdIcdsBoth, &f).unwrap().len(), 2);
    // A broken AMDVLK is not a second driver.
    f.vulkan.icds[1].library_ok = Some(false);
    assert!(!holds(&VulkanAmdIcdsBoth, &f));
}

/// RADV, Mesa's AMD Vulkan driver, is installed (its manifest) or seen (a
/// device it drives, a listing's driver name).
pub struct VulkanRadvInstalled;
impl Predicate for VulkanRadvInstalled {
    about!(
        "vulkan_radv_installed",
        "RADV (Mesa's AMD Vulkan driver) is installed or seen",
        ["vulkan.icds", "vulkan.drivers"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let vk = &v.facts.vulkan;
        let mut ev: Vec<String> = vk
            .icds
            .iter()
            .filter(|i| i.kind == VkFamily::Radv)
            .map(|i| format!("ICD {} (radv)", i.manifest))
            .collect();
        if ev.is_empty() && vk.drivers.contains(&VkFamily::Radv) {
            ev.push("Vulkan driver RADV seen".into());
        }
        when(!ev.is_empty(), || ev)
    }
}

#[cfg(test)]
#[test]
fn vulkan_radv_installed() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    assert!(!holds(&VulkanRadvInstalled, &f));
    f.vulkan.drivers.push(VkFamily::Lavapipe);
    assert!(!holds(&VulkanRadvInstalled, &f));
    f.vulkan.drivers.push(VkFamily::Radv);
    assert!(holds(&VulkanRadvInstalled, &f));
    f.vulkan.icds = vec![icd("radeon_icd.json", VkFamily::Radv, Some(true))];
    assert_eq!(
        eval(&VulkanRadvInstalled, &f).unwrap(),
        ["ICD radeon_icd.json (radv)"]
    );
}

pub struct VulkanAmdvlkInstalled;
impl Predicate for VulkanAmdvlkInstalled {
    about!(
        "vulkan_amdvlk_installed",
        "an AMDVLK (or AMDGPU-PRO Vulkan) manifest is installed; AMD discontinued AMDVLK in 2025 and RADV is its Vulkan driver",
        ["vulkan.icds"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let left: Vec<String> = v
            .facts
            .vulkan
            .icds
            .iter()
            .filter(|i| matches!(i.kind, VkFamily::Amdvlk | VkFamily::AmdgpuPro))
            .map(|i| format!("ICD {} ({})", i.manifest, i.kind.name()))
            .collect();
        when(!left.is_empty(), || left)
    }
}

#[cfg(test)]
#[test]
fn vulkan_amdvlk_installed() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    f.vulkan.icds = vec![icd("radeon_icd.json", VkFamily::Radv, Some(true))];
    assert!(!holds(&VulkanAmdvlkInstalled, &f));
    // left behind: its library may even be gone; the manifest still loads
    f.vulkan
        .icds
        .push(icd("amd_icd64.json", VkFamily::Amdvlk, Some(false)));
    assert_eq!(
        eval(&VulkanAmdvlkInstalled, &f).unwrap(),
        ["ICD amd_icd64.json (amdvlk)"]
    );
}

pub struct VulkanIcdChosenByEnv;
impl Predicate for VulkanIcdChosenByEnv {
    about!(
        "vulkan_icd_chosen_by_env",
        "AMD_VULKAN_ICD, VK_DRIVER_FILES or VK_ICD_FILENAMES selects the driver",
        ["vulkan.env"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let choice = v.vulkan_choice();
        when(!choice.is_empty(), || choice)
    }
}

#[cfg(test)]
#[test]
fn vulkan_icd_chosen_by_env() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    assert!(!holds(&VulkanIcdChosenByEnv, &f));
    f.vulkan.env = vec![
        ("AMD_VULKAN_ICD".into(), "AMDVLK".into()),
        ("AMD_VULKAN_ICD".into(), "RADV".into()),
    ];
    // The last setting wins.
    assert_eq!(
        eval(&VulkanIcdChosenByEnv, &f).unwrap(),
        ["AMD_VULKAN_ICD=RADV"]
    );
}

pub struct AmdSwitchableLayerPresent;
impl Predicate for AmdSwitchableLayerPresent {
    about!(
        "amd_switchable_layer_present",
        "AMD's switchable-graphics implicit layer is installed",
        ["vulkan.implicit_layers"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let layers: Vec<String> = v
            .facts
            .vulkan
            .implicit_layers
            .iter()
            .filter(|l| l.starts_with("VK_LAYER_AMD_switchable_graphics"))
            .map(|l| format!("implicit layer {l}"))
            .collect();
        when(!layers.is_empty(), || layers)
    }
}

#[cfg(test)]
#[test]
fn amd_switchable_layer_present() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    f.vulkan.implicit_layers = vec!["VK_LAYER_MESA_device_select".into()];
    assert!(!holds(&AmdSwitchableLayerPresent, &f));
    f.vulkan
        .implicit_layers
        .push("VK_LAYER_AMD_switchable_graphics_64".into());
    assert_eq!(
        eval(&AmdSwitchableLayerPresent, &f).unwrap(),
        ["implicit layer VK_LAYER_AMD_switchable_graphics_64"]
    );
}

pub struct AmdSwitchableLayerDisabled;
impl Predicate for AmdSwitchableLayerDisabled {
    about!(
        "amd_switchable_layer_disabled",
        "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1 is set",
        ["vulkan.env"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(
            v.vulkan_env("DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1")
                .is_some_and(|x| !x.is_empty() && x != "0"),
            || vec!["DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1 is set".into()],
        )
    }
}

#[cfg(test)]
#[test]
fn amd_switchable_layer_disabled() {
    use super::tests::*;
    let mut f = crate::facts::Facts::default();
    let var = "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1".to_string();
    f.vulkan.env = vec![(var.clone(), "0".into())];
    assert!(!holds(&AmdSwitchableLayerDisabled, &f));
    f.vulkan.env = vec![(var, "1".into())];
    assert!(holds(&AmdSwitchableLayerDisabled, &f));
}

pub struct VulkanInPlay;
impl Predicate for VulkanInPlay {
    about!(
        "vulkan_in_play",
        "anything about Vulkan is known (loader, ICDs, devices or loader messages)",
        [
            "vulkan.loader",
            "vulkan.icds",
            "vulkan.devices",
            "signals",
            "scanned",
        ]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let vk = &v.facts.vulkan;
        let vk_signal = v
            .facts
            .signals
            .iter()
            .any(|s| s.id.starts_with("vk") || s.id.starts_with("vulkaninfo"));
        when(
            vk.loader.is_some()
                || !vk.icds.is_empty()
                || !vk.devices.is_empty()
                || vk_signal
                || v.scanned("vulkan-loader"),
            || vec!["Vulkan facts present".into()],
        )
    }
}

#[cfg(test)]
#[test]
fn vulkan_in_play() {
    use super::tests::*;
    assert!(!holds(&VulkanInPlay, &crate::facts::Facts::default()));
    assert!(holds(&VulkanInPlay, &scanned(&["vulkan-loader"])));
    let mut f = crate::facts::Facts::default();
    f.signals.push(crate::facts::Signal {
        id: "vk-incompatible-driver".into(),
        ..crate::facts::Signal::default()
    });
    assert!(holds(&VulkanInPlay, &f));
}
