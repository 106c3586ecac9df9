//! The Vulkan loader library and every ICD manifest in the loader's own
//! search order, what driver each one is, and whether its library is there
//! and loads; implicit layers (AMD's switchable-graphics layer hides RADV).

use std::collections::BTreeMap;

use super::{scanned, signal};
use crate::facts::{Facts, Icd};
use crate::root::{CmdOutput, CmdStatus, Root};
use greta_vocab::VkFamily;

/// ELF `e_machine` of this build's target.
const HOST_MACHINE: u16 = if cfg!(target_arch = "aarch64") {
    183
} else {
    62
};

/// Directories the dynamic linker searches, in order: LD_LIBRARY_PATH,
/// `/etc/ld.so.conf` (with its includes), then the built-in defaults
/// (`greta_vocab::ld_so`, read through the root).
pub fn lib_dirs(root: &Root) -> Vec<String> {
    greta_vocab::ld_so::search_dirs(
        root.env("LD_LIBRARY_PATH"),
        &|file| root.read(file).ok(),
        &|dir| root.list(dir),
    )
}

/// Finds a bare library name (`libGLX_nvidia.so.0`) the way dlopen would.
pub fn find_lib(root: &Root, dirs: &[String], name: &str) -> Option<String> {
    dirs.iter()
        .map(|d| format!("{d}/{name}"))
        .find(|p| root.exists(p) && !root.is_dir(p))
}

/// Which driver a manifest is, from its file name and library path.
pub fn classify(manifest: &str, library: &str) -> VkFamily {
    let m = manifest.to_ascii_lowercase();
    let mname = m.rsplit('/').next().unwrap_or(&m).to_string();
    let l = library.to_ascii_lowercase();
    if l.contains("amdgpu-pro") || l.contains("amdvlkpro") || m.contains("amdgpu-pro") {
        VkFamily::AmdgpuPro
    } else if l.contains("amdvlk") || mname.starts_with("amd_icd") || mname.contains("amdvlk") {
        VkFamily::Amdvlk
    } else if l.contains("libvulkan_radeon") || mname.starts_with("radeon_icd") {
        VkFamily::Radv
    } else if l.contains("libvulkan_lvp") || mname.starts_with("lvp_icd") {
        VkFamily::Lavapipe
    } else if l.contains("nvidia") || mname.starts_with("nvidia_icd") {
        VkFamily::Nvidia
    } else {
        VkFamily::Other
    }
}

/// Every Vulkan driver Mesa and the vendors ship, by the library or
/// manifest file name (lower case) that identifies it, as a user knows it:
/// what the ICD line names even where the JSON's `kind` (the family a rule
/// reasons about) is `other`. More specific names first (`intel_hasvk`
/// before `intel`).
const DRIVER_NAMES: &[(&str, &str)] = &[
    ("amdgpu-pro", "AMDGPU-PRO"),
    ("amdvlkpro", "AMDGPU-PRO"),
    ("amd_pro_icd", "AMDGPU-PRO"),
    ("amdvlk", "AMDVLK"),
    ("amd_icd", "AMDVLK"),
    ("libvulkan_radeon", "RADV"),
    ("radeon_icd", "RADV"),
    ("libvulkan_lvp", "lavapipe"),
    ("lvp_icd", "lavapipe"),
    ("intel_hasvk", "Intel hasvk"),
    ("libvulkan_intel", "Intel ANV"),
    ("intel_icd", "Intel ANV"),
    ("libvulkan_nouveau", "NVK (nouveau)"),
    ("nouveau_icd", "NVK (nouveau)"),
    ("nvidia", "NVIDIA"),
    ("libvulkan_panfrost", "panvk (panfrost)"),
    ("panfrost_icd", "panvk (panfrost)"),
    ("libvulkan_freedreno", "turnip (freedreno)"),
    ("freedreno_icd", "turnip (freedreno)"),
    ("libvulkan_broadcom", "v3dv (Broadcom)"),
    ("broadcom_icd", "v3dv (Broadcom)"),
    ("libvulkan_virtio", "venus (virtio)"),
    ("virtio_icd", "venus (virtio)"),
    ("libvulkan_dzn", "dozen (dzn, D3D12)"),
    ("dzn_icd", "dozen (dzn, D3D12)"),
    ("libvulkan_asahi", "honeykrisp (Asahi)"),
    ("asahi_icd", "honeykrisp (Asahi)"),
    ("libvulkan_powervr", "PowerVR (Mesa)"),
    ("powervr_mesa_icd", "PowerVR (Mesa)"),
    ("libvulkan_imagination", "PowerVR (Imagination)"),
    ("libvulkan_gfxstream", "gfxstream"),
    ("gfxstream", "gfxstream"),
    ("swiftshader", "SwiftShader"),
    ("moltenvk", "MoltenVK"),
];

/// The driver a manifest installs, as a user knows it (`Intel ANV`,
/// `venus (virtio)`), from its library, else its file name; `other
/// (NAME.json)` for one nobody listed.
pub fn driver_name(manifest: &str, library: &str) -> String {
    // Whole paths: AMDGPU-PRO's library is amdvlk64.so under /opt/amdgpu-pro.
    let (lib, man) = (library.to_ascii_lowercase(), manifest.to_ascii_lowercase());
    for name in [&lib, &man] {
        if let Some((_, n)) = DRIVER_NAMES.iter().find(|(k, _)| name.contains(k)) {
            return n.to_string();
        }
    }
    format!(
        "other ({})",
        manifest.rsplit('/').next().unwrap_or(manifest)
    )
}

/// Manifest search in the loader's order, each with where it was found.
/// `VK_DRIVER_FILES` (or the older `VK_ICD_FILENAMES`) replaces the search;
/// `VK_ADD_DRIVER_FILES` goes before it.
pub fn search_manifests(root: &Root) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let add = |path: String, from: &str, out: &mut Vec<(String, String)>| {
        if !out.iter().any(|(p, _)| *p == path) {
            out.push((path, from.to_string()));
        }
    };
    let exclusive = root
        .env_nonempty("VK_DRIVER_FILES")
        .map(|v| ("VK_DRIVER_FILES", v))
        .or_else(|| {
            root.env_nonempty("VK_ICD_FILENAMES")
                .map(|v| ("VK_ICD_FILENAMES", v))
        });
    let list_var = |var: &str, val: &str, out: &mut Vec<(String, String)>| {
        for entry in val.split(':').filter(|e| !e.is_empty()) {
            if root.is_dir(entry) {
                for name in root.list(entry) {
                    if name.ends_with(".json") {
                        let p = format!("{}/{name}", entry.trim_end_matches('/'));
                        root.note_path(&p);
                        add(p, var, out);
                    }
                }
            } else {
                root.note_path(entry);
                add(entry.to_string(), var, out);
            }
        }
    };
    if let Some((var, val)) = exclusive {
        list_var(var, val, &mut out);
        return out;
    }
    if let Some(val) = root.env_nonempty("VK_ADD_DRIVER_FILES") {
        list_var("VK_ADD_DRIVER_FILES", val, &mut out);
    }
    for dir in search_dirs(root, "icd.d") {
        for name in root.list(&dir) {
            if name.ends_with(".json") {
                let p = format!("{dir}/{name}");
                root.note_path(&p);
                add(p, &dir, &mut out);
            }
        }
    }
    out
}

/// `<base>/vulkan/<sub>` for the XDG config dirs, /etc, then the XDG data dirs.
pub fn search_dirs(root: &Root, sub: &str) -> Vec<String> {
    let home = root.env_nonempty("HOME");
    // The user's directory (`$<home_var>`, else `$HOME/<under_home>`), then
    // the system list (`$<dirs_var>`, else `default_dirs`): the XDG rule.
    let xdg = |home_var: &str, under_home: &str, dirs_var: &str, default_dirs: &str| {
        let user = match root.env_nonempty(home_var) {
            Some(v) => Some(v.to_string()),
            None => home.map(|h| format!("{h}/{under_home}")),
        };
        let system = root.env_nonempty(dirs_var).unwrap_or(default_dirs);
        user.into_iter()
            .chain(system.split(':').map(str::to_string))
            .collect::<Vec<String>>()
    };
    let mut bases = xdg("XDG_CONFIG_HOME", ".config", "XDG_CONFIG_DIRS", "/etc/xdg");
    bases.push("/etc".into());
    bases.extend(xdg(
        "XDG_DATA_HOME",
        ".local/share",
        "XDG_DATA_DIRS",
        "/usr/local/share:/usr/share",
    ));
    let mut dirs = Vec::new();
    for b in bases {
        let b = b.trim_end_matches('/');
        if !b.starts_with('/') {
            continue;
        }
        let d = format!("{b}/vulkan/{sub}");
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// A manifest's JSON, or why it is unusable.
pub fn parse_manifest(text: &str) -> Result<(String, Option<String>), String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "invalid JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        )
    })?;
    let icd = v
        .get("ICD")
        .ok_or_else(|| "no \"ICD\" object (not a driver manifest)".to_string())?;
    let lib = icd
        .get("library_path")
        .and_then(|l| l.as_str())
        .filter(|l| !l.is_empty())
        .ok_or_else(|| "\"ICD\" has no \"library_path\" string".to_string())?;
    let api = icd
        .get("api_version")
        .and_then(|a| a.as_str())
        .map(str::to_string);
    Ok((lib.to_string(), api))
}

/// Checks an ELF header: 64-bit, this machine's architecture.
pub fn check_elf(header: &[u8]) -> Result<(), String> {
    if header.len() < 20 || &header[..4] != b"\x7fELF" {
        return Err("not an ELF shared library".into());
    }
    match header[4] {
        2 => {}
        1 => return Err("wrong ELF class: ELFCLASS32 (a 32-bit library)".into()),
        c => return Err(format!("unknown ELF class {c}")),
    }
    let machine = if header[5] == 2 {
        u16::from_be_bytes([header[18], header[19]])
    } else {
        u16::from_le_bytes([header[18], header[19]])
    };
    if machine != HOST_MACHINE {
        return Err(format!(
            "built for another architecture (ELF machine {machine}, this host {HOST_MACHINE})"
        ));
    }
    Ok(())
}

/// dlopen results of ICD libraries, recorded as the `greta-icd-load`
/// pseudo-command so a replay sees what the live run saw.
const LOAD_CMD: &str = "greta-icd-load";

fn load_results(root: &Root, libs: &[String]) -> BTreeMap<String, Result<(), String>> {
    if root.is_live() {
        let mut map = BTreeMap::new();
        for lib in libs {
            if map.contains_key(lib) {
                continue;
            }
            // SAFETY: loading a Vulkan driver is what the loader does with
            // it anyway (RTLD_LAZY|RTLD_LOCAL); it stays loaded (no dlclose:
            // some drivers crash when unloaded) and nothing is called.
            let r = match unsafe { libloading::Library::new(lib) } {
                Ok(l) => {
                    std::mem::forget(l);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            };
            map.insert(lib.clone(), r);
        }
        let json: BTreeMap<&String, String> = map
            .iter()
            .map(|(k, v)| {
                (
                    k,
                    match v {
                        Ok(()) => "ok".to_string(),
                        Err(e) => e.clone(),
                    },
                )
            })
            .collect();
        root.note_cmd(CmdOutput {
            name: LOAD_CMD.into(),
            status: CmdStatus::Exited(0),
            text: serde_json::to_string_pretty(&json).unwrap_or_default(),
        });
        map
    } else {
        let out = root.run(LOAD_CMD, LOAD_CMD, &[]);
        let parsed: BTreeMap<String, String> = out
            .text()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        parsed
            .into_iter()
            .map(|(k, v)| (k, if v == "ok" { Ok(()) } else { Err(v) }))
            .collect()
    }
}

/// Implicit layer names that are active (not disabled by their env var).
fn implicit_layers(root: &Root) -> Vec<String> {
    let mut names = Vec::new();
    for dir in search_dirs(root, "implicit_layer.d") {
        for file in root.list(&dir) {
            if !file.ends_with(".json") {
                continue;
            }
            let Ok(text) = root.read(&format!("{dir}/{file}")) else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            for l in crate::from::icd_json::manifest_layers(&v) {
                let Some(name) = l.get("name").and_then(|n| n.as_str()) else {
                    continue;
                };
                let disabled = l
                    .get("disable_environment")
                    .and_then(|d| d.as_object())
                    .is_some_and(|d| d.keys().any(|k| root.env_nonempty(k).is_some()));
                if !disabled && !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
}

pub fn collect(root: &Root, f: &mut Facts) -> String {
    let dirs = lib_dirs(root);
    f.vulkan.loader = find_lib(root, &dirs, "libvulkan.so.1");
    scanned(f, "vulkan-loader");
    for var in [
        "AMD_VULKAN_ICD",
        "VK_DRIVER_FILES",
        "VK_ICD_FILENAMES",
        "VK_ADD_DRIVER_FILES",
    ] {
        if let Some(v) = root.env(var) {
            f.vulkan.env.push((var.to_string(), v.to_string()));
        }
    }
    let mut icds = Vec::new();
    let mut to_load = Vec::new();
    for (manifest, found_in) in search_manifests(root) {
        let mut icd = Icd {
            manifest: manifest.clone(),
            found_in: Some(found_in),
            ..Icd::default()
        };
        let text = match root.read(&manifest) {
            Ok(t) => t,
            Err(e) => {
                icd.kind = classify(&manifest, "");
                icd.error = Some(format!("cannot read manifest: {e}"));
                icd.library_ok = Some(false);
                icds.push(icd);
                continue;
            }
        };
        match parse_manifest(&text) {
            Err(e) => {
                icd.kind = classify(&manifest, "");
                icd.error = Some(e);
                icd.library_ok = Some(false);
            }
            Ok((lib, api)) => {
                icd.kind = classify(&manifest, &lib);
                icd.api_version = api;
                let resolved = if lib.starts_with('/') {
                    Some(lib.clone())
                } else if lib.contains('/') {
                    let dir = manifest.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                    Some(format!("{dir}/{lib}"))
                } else {
                    find_lib(root, &dirs, &lib)
                };
                icd.library_path = Some(resolved.clone().unwrap_or_else(|| lib.clone()));
                match resolved {
                    Some(p) if root.exists(&p) => match root.read_prefix(&p, 64) {
                        Ok(h) => match check_elf(&h) {
                            Ok(()) => {
                                icd.library_ok = Some(true);
                                to_load.push(p);
                            }
                            // A 32-bit driver (multiarch, Steam) serves 32-bit
                            // programs; 64-bit loaders skip it. Benign.
                            Err(e) if e.contains("ELFCLASS32") => {
                                icd.library_ok = None;
                            }
                            Err(e) => {
                                icd.library_ok = Some(false);
                                icd.error = Some(format!("{p}: {e}"));
                            }
                        },
                        Err(e) => {
                            icd.library_ok = Some(false);
                            icd.error = Some(format!("{p}: cannot read: {e}"));
                        }
                    },
                    _ => {
                        icd.library_ok = Some(false);
                        icd.error = Some(format!("library not found: {lib}"));
                    }
                }
            }
        }
        icds.push(icd);
    }
    let loads = load_results(root, &to_load);
    for icd in &mut icds {
        if icd.library_ok != Some(true) {
            continue;
        }
        if let Some(Err(e)) = icd.library_path.as_ref().and_then(|p| loads.get(p)) {
            icd.library_ok = Some(false);
            icd.error = Some(format!("library does not load: {e}"));
        }
    }
    for icd in &icds {
        if let Some(e) = &icd.error {
            signal(f, "vulkan-icd-broken", &icd.manifest, e);
        }
        if !f.vulkan.drivers.contains(&icd.kind) && icd.kind != VkFamily::Other {
            f.vulkan.drivers.push(icd.kind);
        }
    }
    f.vulkan.icds = icds;
    f.vulkan.implicit_layers = implicit_layers(root);
    scanned(f, "vulkan-icds");
    let loader = match &f.vulkan.loader {
        Some(p) => format!("loader {p}"),
        None => "no libvulkan.so.1".into(),
    };
    let list: Vec<String> = f
        .vulkan
        .icds
        .iter()
        .map(|i| {
            format!(
                "{}{}",
                driver_name(&i.manifest, i.library_path.as_deref().unwrap_or("")),
                if i.library_ok == Some(true) {
                    ""
                } else {
                    " (broken)"
                }
            )
        })
        .collect();
    format!(
        "{loader}; {} ICD manifest(s){}",
        list.len(),
        if list.is_empty() {
            String::new()
        } else {
            format!(": {}", list.join(", "))
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mesa_and_vendor_driver_is_named() {
        for (manifest, lib, want) in [
            (
                "/usr/share/vulkan/icd.d/intel_icd.x86_64.json",
                "libvulkan_intel.so",
                "Intel ANV",
            ),
            (
                "/usr/share/vulkan/icd.d/intel_hasvk_icd.x86_64.json",
                "libvulkan_intel_hasvk.so",
                "Intel hasvk",
            ),
            (
                "/usr/share/vulkan/icd.d/nouveau_icd.x86_64.json",
                "libvulkan_nouveau.so",
                "NVK (nouveau)",
            ),
            (
                "/usr/share/vulkan/icd.d/panfrost_icd.aarch64.json",
                "libvulkan_panfrost.so",
                "panvk (panfrost)",
            ),
            (
                "/usr/share/vulkan/icd.d/freedreno_icd.aarch64.json",
                "libvulkan_freedreno.so",
                "turnip (freedreno)",
            ),
            (
                "/usr/share/vulkan/icd.d/broadcom_icd.aarch64.json",
                "libvulkan_broadcom.so",
                "v3dv (Broadcom)",
            ),
            (
                "/usr/share/vulkan/icd.d/virtio_icd.x86_64.json",
                "libvulkan_virtio.so",
                "venus (virtio)",
            ),
            (
                "/usr/share/vulkan/icd.d/dzn_icd.x86_64.json",
                "libvulkan_dzn.so",
                "dozen (dzn, D3D12)",
            ),
            (
                "/usr/share/vulkan/icd.d/asahi_icd.aarch64.json",
                "libvulkan_asahi.so",
                "honeykrisp (Asahi)",
            ),
            (
                "/usr/share/vulkan/icd.d/powervr_mesa_icd.x86_64.json",
                "libvulkan_powervr_mesa.so",
                "PowerVR (Mesa)",
            ),
            (
                "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
                "/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so",
                "RADV",
            ),
            (
                "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
                "libvulkan_lvp.so",
                "lavapipe",
            ),
            (
                "/etc/vulkan/icd.d/nvidia_icd.json",
                "libGLX_nvidia.so.0",
                "NVIDIA",
            ),
            (
                "/etc/vulkan/icd.d/amd_icd64.json",
                "/usr/lib/x86_64-linux-gnu/amdvlk64.so",
                "AMDVLK",
            ),
            (
                "/etc/vulkan/icd.d/amd_pro_icd64.json",
                "/opt/amdgpu-pro/lib/x86_64-linux-gnu/amdvlk64.so",
                "AMDGPU-PRO",
            ),
            (
                "/usr/share/vulkan/icd.d/vk_swiftshader_icd.json",
                "libvk_swiftshader.so",
                "SwiftShader",
            ),
        ] {
            assert_eq!(driver_name(manifest, lib), want, "{manifest}");
        }
        assert_eq!(
            driver_name("/x/foo_icd.json", "libfoo.so"),
            "other (foo_icd.json)"
        );
    }

    #[test]
    fn search_dirs_follow_the_xdg_order() {
        let t = tempfile::tempdir().unwrap();
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let root = Root::sysroot(t.path()).unwrap();
        let defaults = root.with_env(env(&[("HOME", "/home/u")]));
        assert_eq!(
            search_dirs(&defaults, "icd.d"),
            [
                "/home/u/.config/vulkan/icd.d",
                "/etc/xdg/vulkan/icd.d",
                "/etc/vulkan/icd.d",
                "/home/u/.local/share/vulkan/icd.d",
                "/usr/local/share/vulkan/icd.d",
                "/usr/share/vulkan/icd.d",
            ]
        );
        // Set variables replace their defaults; relative and repeated entries drop out.
        let set = Root::sysroot(t.path()).unwrap().with_env(env(&[
            ("XDG_CONFIG_HOME", "/c/"),
            ("XDG_CONFIG_DIRS", "rel:/x"),
            ("XDG_DATA_HOME", "/d"),
            ("XDG_DATA_DIRS", "/x:/y"),
        ]));
        assert_eq!(
            search_dirs(&set, "implicit_layer.d"),
            [
                "/c/vulkan/implicit_layer.d",
                "/x/vulkan/implicit_layer.d",
                "/etc/vulkan/implicit_layer.d",
                "/d/vulkan/implicit_layer.d",
                "/y/vulkan/implicit_layer.d",
            ]
        );
    }

    #[test]
    fn classifies_real_manifest_names() {
        use VkFamily::*;
        assert_eq!(
            classify(
                "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
                "/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so"
            ),
            Radv
        );
        assert_eq!(
            classify(
                "/etc/vulkan/icd.d/amd_icd64.json",
                "/opt/amdgpu/lib/x86_64-linux-gnu/amdvlk64.so"
            ),
            Amdvlk
        );
        assert_eq!(
            classify(
                "/opt/amdgpu-pro/etc/vulkan/icd.d/amd_icd64.json",
                "/opt/amdgpu-pro/lib/x86_64-linux-gnu/amdvlk64.so"
            ),
            AmdgpuPro
        );
        assert_eq!(
            classify("/x/lvp_icd.x86_64.json", "libvulkan_lvp.so"),
            Lavapipe
        );
        assert_eq!(classify("/x/nvidia_icd.json", "libGLX_nvidia.so.0"), Nvidia);
        assert_eq!(
            classify("/x/intel_icd.x86_64.json", "libvulkan_intel.so"),
            Other
        );
    }

    #[test]
    fn manifests_parse_or_explain() {
        let ok = r#"{"file_format_version":"1.0.0","ICD":{"library_path":"libGLX_nvidia.so.0","api_version":"1.3.277"}}"#;
        assert_eq!(
            parse_manifest(ok),
            Ok(("libGLX_nvidia.so.0".into(), Some("1.3.277".into())))
        );
        let bad = parse_manifest("{\n \"ICD\": {\n  \"library_path\": \n").unwrap_err();
        assert!(bad.contains("line"), "{bad}");
        assert!(parse_manifest(r#"{"layer":{}}"#)
            .unwrap_err()
            .contains("ICD"));
        assert!(parse_manifest("\u{0}\u{ff}").is_err());
        assert!(parse_manifest(r#"{"ICD":{"library_path":5}}"#).is_err());
    }

    #[test]
    fn elf_headers() {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[18..20].copy_from_slice(&HOST_MACHINE.to_le_bytes());
        assert_eq!(check_elf(&h), Ok(()));
        h[4] = 1;
        assert!(check_elf(&h).unwrap_err().contains("ELFCLASS32"));
        h[4] = 2;
        h[18] = 3;
        h[19] = 0;
        assert!(check_elf(&h).unwrap_err().contains("architecture"));
        assert!(check_elf(b"#!/bin/sh").is_err());
    }
}
