//! Replays of synthetic machines (tests/sysroots/, built by make.py from the
//! real fixtures): every fact doctor's rules depend on, asserted.

use std::path::PathBuf;

use greta_probe::{CheckRun, Facts, Root, Vendor};
use greta_vocab::VkFamily;

use crate::common::collect;

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sysroots")
        .join(name)
}

fn replay(name: &str) -> (Facts, Vec<CheckRun>) {
    let root = Root::sysroot(tree(name)).expect("sysroot opens");
    let (f, checks) = collect(&root);
    eprintln!("{}", serde_json::to_string_pretty(&f).unwrap());
    for c in &checks {
        eprintln!("{:>14}  {}", c.id, c.summary);
    }
    (f, checks)
}

/// Finding ids the rules raise for these facts.
fn findings(f: &Facts) -> Vec<String> {
    greta_probe::diagnose(f).into_iter().map(|x| x.id).collect()
}

fn assert_findings(f: &Facts, must: &[&str], must_not: &[&str]) {
    let got = findings(f);
    for m in must {
        assert!(got.iter().any(|g| g == m), "{m} not raised; got {got:?}");
    }
    for m in must_not {
        assert!(!got.iter().any(|g| g == m), "{m} raised; got {got:?}");
    }
}

fn signal<'a>(f: &'a Facts, id: &str) -> Option<&'a greta_probe::Signal> {
    f.signals.iter().find(|s| s.id == id)
}

#[test]
fn mi300x_vf_cloud_node() {
    let (f, checks) = replay("mi300x-vf");
    assert_eq!(f.kernel_version.as_deref(), Some("6.8.0-60-generic"));
    assert_eq!(f.kernel_driver_version.as_deref(), Some("6.16.13"));
    let amd: Vec<_> = f.gpus.iter().filter(|g| g.vendor == Vendor::Amd).collect();
    assert_eq!(amd.len(), 1, "{:#?}", f.gpus);
    let g = amd[0];
    assert_eq!(g.name, "AMD Instinct MI300X VF");
    assert_eq!(g.pci_address.as_deref(), Some("0000:83:00.0"));
    assert_eq!((g.vendor_id, g.device_id), (Some(0x1002), Some(0x74b5)));
    assert_eq!(g.subsystem_device_id, Some(0x74a1));
    assert!(g.vf);
    assert_eq!(g.gfx.as_deref(), Some("gfx942"));
    assert_eq!(g.compute_units, Some(304));
    assert_eq!(g.render_minor, Some(128));
    assert_eq!(g.kernel_driver.as_deref(), Some("amdgpu"));
    assert_eq!(g.vram_bytes, Some(196288 * 1024 * 1024));
    assert_eq!(g.integrated, Some(false));
    for s in ["pci", "kfd", "rocminfo"] {
        assert!(g.seen_by.iter().any(|x| x == s), "{s} in {:?}", g.seen_by);
    }
    // Only the Processing-accelerator GPU, not the host bridge.
    assert!(f
        .gpus
        .iter()
        .all(|g| g.pci_address.as_deref() != Some("0000:00:01.0")));
    let drv = f.drivers.iter().find(|d| d.name == "amdgpu").unwrap();
    assert!(drv.loaded);
    // Nodes open for a user in render.
    for n in &f.device_nodes {
        assert!(n.exists, "{n:?}");
        assert_eq!(n.openable, Some(true), "{n:?}");
        assert_eq!(n.group.as_deref(), Some("render"));
        assert_eq!(n.mode.as_deref(), Some("0660"));
    }
    assert_eq!(f.device_nodes.len(), 2);
    // ROCm through the /opt/rocm symlink.
    assert_eq!(f.rocm.installs.len(), 1);
    assert_eq!(f.rocm.installs[0].path, "/opt/rocm-7.2.4");
    assert!(f.rocm.installs[0].active);
    assert_eq!(f.rocm.version.as_deref(), Some("7.2.4"));
    assert_eq!(f.rocm.hip_version.as_deref(), Some("7.2.53211-e0fdb1ab86"));
    assert!(f
        .rocm
        .active_reason
        .as_deref()
        .unwrap()
        .contains("/opt/rocm symlink"));
    assert_eq!(
        f.rocm.hip_libraries,
        vec![
            "/opt/rocm-7.2.4/lib/libamdhip64.so.7",
            "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.53211"
        ]
    );
    // rocminfo replayed through the --from parser.
    assert!(
        f.rocm.agent_gfx.iter().any(|x| x == "gfx942"),
        "{:?}",
        f.rocm.agent_gfx
    );
    assert_eq!(f.rocm.runtime_sees_gpu, Some(true));
    assert!(checks
        .iter()
        .any(|c| c.id == "rocm" && c.summary.contains("7.2.4")));
    assert!(f.container.is_none());
    assert_findings(
        &f,
        &["gpu.sriov-vf"],
        &[
            "gpu.none",
            "kfd.missing",
            "kfd.permission",
            "rocm.missing",
            "rocm.multiple",
            "driver.amdgpu-not-bound",
            "apu.small-vram",
        ],
    );
}

#[test]
fn phoenix_apu_radv_and_amdvlk_user_not_in_render() {
    let (f, _) = replay("phoenix-apu");
    let amd: Vec<_> = f.gpus.iter().filter(|g| g.vendor == Vendor::Amd).collect();
    // One GPU, although PCI, KFD, RADV and AMDVLK all report it.
    assert_eq!(amd.len(), 1, "{:#?}", f.gpus);
    let g = amd[0];
    assert_eq!(g.gfx.as_deref(), Some("gfx1103"));
    // pci.ids has only the code name "Phoenix1"; the RADV name is the marketing one.
    assert_eq!(g.name, "AMD Radeon 760M");
    assert_eq!(g.integrated, Some(true));
    assert_eq!(g.vram_bytes, Some(512 * 1024 * 1024));
    assert_eq!(g.gtt_bytes, Some(15 * 1024 * 1024 * 1024));
    assert_eq!(g.compute_units, Some(12));
    assert!(!g.vf);
    assert!(g.seen_by.iter().any(|s| s == "vulkan:radv"));
    assert!(g.seen_by.iter().any(|s| s == "vulkan:amdvlk"));
    // Audio function of the same chip is not a GPU.
    assert!(f
        .gpus
        .iter()
        .all(|g| g.pci_address.as_deref() != Some("0000:c5:00.1")));
    // /dev/kfd: group render, user not in it.
    let kfd = f
        .device_nodes
        .iter()
        .find(|n| n.path == "/dev/kfd")
        .unwrap();
    assert!(kfd.exists);
    assert_eq!(kfd.openable, Some(false));
    assert_eq!(kfd.group.as_deref(), Some("render"));
    assert_eq!(kfd.missing_groups, vec!["render"]);
    // renderD128: group video, user listed in /etc/group but the session lacks it.
    let rd = f
        .device_nodes
        .iter()
        .find(|n| n.path == "/dev/dri/renderD128")
        .unwrap();
    assert_eq!(rd.openable, Some(false));
    assert_eq!(rd.missing_groups, vec!["video"]);
    let stale = signal(&f, "device-group-stale-login").expect("stale login signal");
    assert_eq!(stale.source, "/dev/dri/renderD128");
    assert!(signal(&f, "device-group-stale-login")
        .is_some_and(|s| s.text.contains("ann") && s.text.contains("video")));
    // RADV + AMDVLK manifests, both libraries present, in search order (/etc before /usr/share).
    let kinds: Vec<_> = f.vulkan.icds.iter().map(|i| i.kind).collect();
    assert_eq!(kinds, vec![VkFamily::Amdvlk, VkFamily::Radv]);
    assert!(f
        .vulkan
        .icds
        .iter()
        .all(|i| i.library_ok == Some(true) && i.error.is_none()));
    assert_eq!(
        f.vulkan.icds[0].found_in.as_deref(),
        Some("/etc/vulkan/icd.d")
    );
    assert_eq!(
        f.vulkan.loader.as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/libvulkan.so.1")
    );
    // Both drivers expose the same device (same UUID): the duplicate-gpu case.
    assert_eq!(f.vulkan.devices.len(), 2);
    assert_eq!(
        f.vulkan.devices[0].device_uuid,
        f.vulkan.devices[1].device_uuid
    );
    assert!(f.vulkan.drivers.contains(&VkFamily::Radv));
    assert!(f.vulkan.drivers.contains(&VkFamily::Amdvlk));
    assert_eq!(f.rocm.hsa_override_gfx_version.as_deref(), Some("11.0.0"));
    assert!(f.rocm.installs.is_empty());
    // python3 (not python3-config), version from the captured run.
    assert_eq!(f.python.interpreters.len(), 1);
    assert_eq!(f.python.interpreters[0].path, "/usr/bin/python3");
    assert_eq!(f.python.interpreters[0].version.as_deref(), Some("3.11.2"));
    // torch from METADATA + version.py; numpy is not a framework.
    assert_eq!(f.python.frameworks.len(), 1, "{:?}", f.python.frameworks);
    let t = &f.python.frameworks[0];
    assert_eq!(
        (t.name.as_str(), t.version.as_str()),
        ("torch", "2.5.1+rocm6.2")
    );
    assert_eq!(t.backend.as_deref(), Some("rocm"));
    assert_eq!(t.backend_version.as_deref(), Some("6.2.41133-dd7f95766"));
    assert!(t.env.ends_with("/greta/envs/rocm6.2"));
    assert_findings(
        &f,
        &[
            "kfd.permission",
            "vulkan.duplicate-gpu",
            "rocm.hsa-override",
        ],
        &[
            // A 512 MiB carve-out beside 15 GiB of GTT is not small VRAM.
            "apu.small-vram",
            "gpu.none",
            "gpu.sriov-vf",
            "kfd.missing",
            "vulkan.cpu-only",
            "vulkan.no-icd",
            "vulkan.icd-incompatible",
        ],
    );
}

#[test]
fn two_rocm_installs_rocm_path_wins_and_kfd_missing_in_container() {
    let (f, _) = replay("two-rocm-no-kfd");
    let paths: Vec<_> = f.rocm.installs.iter().map(|i| i.path.as_str()).collect();
    assert_eq!(paths, vec!["/opt/rocm-6.2.0", "/opt/rocm-6.4.1", "/usr"]);
    let active: Vec<_> = f.rocm.installs.iter().filter(|i| i.active).collect();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].path, "/opt/rocm-6.2.0");
    assert_eq!(
        f.rocm.active_reason.as_deref(),
        Some("ROCM_PATH=/opt/rocm-6.2.0/")
    );
    assert_eq!(f.rocm.version.as_deref(), Some("6.2.0"));
    assert_eq!(f.rocm.hip_version.as_deref(), Some("6.2.41133-abc41133"));
    assert_eq!(
        f.rocm
            .installs
            .iter()
            .find(|i| i.path == "/usr")
            .unwrap()
            .version
            .as_deref(),
        Some("5.2.21153")
    );
    assert_eq!(f.rocm.ld_library_path_rocm, vec!["/opt/rocm-6.4.1/lib"]);
    assert_eq!(f.rocm.hipconfig.as_deref(), Some("/opt/rocm/bin/hipconfig"));
    assert!(f
        .rocm
        .hip_libraries
        .contains(&"/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.41133".to_string()));
    assert!(f
        .rocm
        .hip_libraries
        .contains(&"/usr/lib/x86_64-linux-gnu/libamdhip64.so.5".to_string()));
    // /dev/kfd missing, render node world-writable; container recognised.
    let kfd = f
        .device_nodes
        .iter()
        .find(|n| n.path == "/dev/kfd")
        .unwrap();
    assert!(!kfd.exists);
    assert_eq!(kfd.openable, None);
    let rd = f
        .device_nodes
        .iter()
        .find(|n| n.path == "/dev/dri/renderD128")
        .unwrap();
    assert_eq!(rd.openable, Some(true));
    assert!(f.container.as_deref().unwrap().starts_with("docker"));
    let g = f.gpus.iter().find(|g| g.vendor == Vendor::Amd).unwrap();
    assert_eq!(g.gfx.as_deref(), Some("gfx1100"));
    assert!(g.name.contains("7900"), "{}", g.name);
    // Found through /sys/class/drm/card0/device (relative sysfs links).
    assert_eq!(g.vram_bytes, Some(24 << 30));
    assert_eq!(g.gtt_bytes, Some(32 << 30));
    assert_eq!(g.integrated, Some(false));
    // rocminfo's error in the container, recognised by the --from signatures.
    assert!(!f.signals.is_empty(), "rocminfo error signature expected");
    assert_findings(
        &f,
        &["kfd.missing", "rocm.multiple", "rocm.ld-library-path"],
        &["gpu.none", "rocm.missing", "apu.small-vram", "gpu.sriov-vf"],
    );
}

#[test]
fn vk_driver_files_replaces_the_search() {
    let (f, _) = replay("vk-driver-files");
    assert_eq!(f.vulkan.icds.len(), 1, "{:#?}", f.vulkan.icds);
    let i = &f.vulkan.icds[0];
    assert_eq!(i.manifest, "/home/u/icd/lvp_icd.x86_64.json");
    assert_eq!(i.kind, VkFamily::Lavapipe);
    assert_eq!(i.found_in.as_deref(), Some("VK_DRIVER_FILES"));
    assert_eq!(i.library_ok, Some(true));
    assert_eq!(i.api_version.as_deref(), Some("1.1.230"));
    assert_eq!(f.vulkan.drivers, vec![VkFamily::Lavapipe]);
    assert!(f
        .vulkan
        .env
        .iter()
        .any(|(k, v)| k == "VK_DRIVER_FILES" && v == "/home/u/icd/lvp_icd.x86_64.json"));
    // No PCI bus in this tree: nothing claimed about GPUs, pci not "scanned".
    assert!(f.gpus.is_empty());
    assert!(!f.scanned.iter().any(|s| s == "pci"));
    // Without .greta/id nothing is claimed about permissions either.
    assert!(f.device_nodes.iter().all(|n| n.openable.is_none()));
}

#[test]
fn broken_manifests_and_garbage_never_panic_and_explain() {
    let (f, checks) = replay("broken-icds");
    assert_eq!(checks.len(), 7);
    let by_name = |n: &str| {
        f.vulkan
            .icds
            .iter()
            .find(|i| i.manifest.ends_with(n))
            .unwrap_or_else(|| panic!("{n} missing"))
    };
    // Search order: XDG config home, then /etc, then the data dirs.
    assert_eq!(
        f.vulkan.icds[0].manifest,
        "/home/u/.config/vulkan/icd.d/radeon_icd.x86_64.json"
    );
    assert_eq!(
        f.vulkan.icds[1].manifest,
        "/etc/vulkan/icd.d/amd_icd32.json"
    );
    let radv = by_name("radeon_icd.x86_64.json");
    assert_eq!(radv.library_ok, Some(false));
    assert!(radv.error.as_deref().unwrap().contains("library not found"));
    let amd32 = by_name("amd_icd32.json");
    assert_eq!(amd32.kind, VkFamily::Amdvlk);
    // 32-bit driver for 32-bit programs: benign (fixtures/ERRORS.md), not broken.
    assert_eq!(amd32.library_ok, None, "{amd32:?}");
    assert_eq!(amd32.error, None);
    let broken = by_name("broken.json");
    assert!(broken
        .error
        .as_deref()
        .unwrap()
        .contains("invalid JSON at line"));
    let dir = by_name("dir_instead.json");
    assert!(dir.error.as_deref().unwrap().contains("cannot read"));
    let dangling = by_name("dangling.json");
    assert!(dangling.error.as_deref().unwrap().contains("cannot read"));
    // Bare soname found through /etc/ld.so.conf.d.
    let nv = by_name("nvidia_icd.json");
    assert_eq!(nv.kind, VkFamily::Nvidia);
    assert_eq!(
        nv.library_path.as_deref(),
        Some("/usr/lib/nvidia/libGLX_nvidia.so.0")
    );
    assert_eq!(nv.library_ok, Some(true));
    assert!(f.vulkan.loader.is_none());
    // Layer disabled only by its env var, which is not set: it is active.
    assert_eq!(
        f.vulkan.implicit_layers,
        vec!["VK_LAYER_AMD_switchable_graphics_64"]
    );
    // Every broken ICD is a signal with its manifest as the source.
    assert_eq!(
        f.signals
            .iter()
            .filter(|s| s.id == "vulkan-icd-broken")
            .count(),
        4
    );
    // Garbage sysfs/KFD/group/id/dev-nodes: no GPU invented, nothing panics.
    assert!(
        f.gpus.iter().all(|g| g.vendor != Vendor::Amd),
        "{:#?}",
        f.gpus
    );
    assert!(f.kernel_version.is_none(), "symlink loop reads as absent");
    let rd = f
        .device_nodes
        .iter()
        .find(|n| n.path == "/dev/dri/renderD128")
        .expect("the one valid dev-nodes line");
    assert_eq!(rd.openable, None, "garbage id: unknown, not a guess");
    // Its dev-nodes line is malformed (mode 06x0): unknown, so no fact
    // at all, never "absent".
    assert!(
        f.device_nodes.iter().all(|n| n.path != "/dev/kfd"),
        "{:#?}",
        f.device_nodes
    );
    assert_findings(
        &f,
        &[
            "vulkan.icd-incompatible",
            "vulkan.loader-missing",
            "vulkan.amd-switchable-layer",
        ],
        &["kfd.missing", "driver.amdgpu-not-bound"],
    );
}

#[test]
fn nvidia_machine_replays_captured_vulkaninfo() {
    let (f, checks) = replay("nvidia-rtx2060");
    let nv: Vec<_> = f
        .gpus
        .iter()
        .filter(|g| g.vendor == Vendor::Nvidia)
        .collect();
    assert_eq!(nv.len(), 1, "{:#?}", f.gpus);
    let g = nv[0];
    assert!(g.name.contains("2060"), "{}", g.name);
    assert_eq!(g.pci_address.as_deref(), Some("0000:01:00.0"));
    assert_eq!(g.kernel_driver.as_deref(), Some("nvidia"));
    assert!(g.seen_by.iter().any(|s| s == "pci") && g.seen_by.iter().any(|s| s == "vulkan:nvidia"));
    assert!(f
        .gpus
        .iter()
        .any(|g| g.vendor == Vendor::Cpu && g.name.contains("llvmpipe")));
    assert_eq!(f.kernel_driver_version.as_deref(), Some("525.125.06"));
    assert_eq!(f.vulkan.devices.len(), 2);
    assert!(f.vulkan.drivers.contains(&VkFamily::Nvidia));
    assert!(f.vulkan.drivers.contains(&VkFamily::Lavapipe));
    let nv_icd = f
        .vulkan
        .icds
        .iter()
        .find(|i| i.kind == VkFamily::Nvidia)
        .unwrap();
    assert_eq!(
        nv_icd.library_path.as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0")
    );
    assert!(checks
        .iter()
        .any(|c| c.id == "vulkan-devices" && c.summary.contains("vulkaninfo-summary")));
    // pyenv shims resolved like `pyenv exec` (selected 3.12.1; python3.12 is
    // the same binary; python3.10 is not selected), then /usr/bin/python3
    // -> python3.11 as one interpreter under its first name.
    let interp: Vec<(&str, Option<&str>)> = f
        .python
        .interpreters
        .iter()
        .map(|i| (i.path.as_str(), i.version.as_deref()))
        .collect();
    assert_eq!(
        interp,
        vec![
            ("/home/val/.pyenv/shims/python3", Some("3.12.1")),
            ("/usr/bin/python3", Some("3.11.2"))
        ]
    );
    assert_findings(
        &f,
        &[],
        &[
            "gpu.none",
            "vulkan.cpu-only",
            "vulkan.duplicate-gpu",
            "vulkan.loader-missing",
            "vulkan.no-icd",
            "vulkan.icd-incompatible",
            "driver.amdgpu-not-bound",
            "kfd.missing",
            "rocm.missing",
            "kfd.permission",
        ],
    );
}

#[test]
fn sysroot_that_is_not_a_directory_is_an_error() {
    let file = tree("make.py");
    assert!(Root::sysroot(&file).is_err());
    assert!(Root::sysroot(tree("does-not-exist")).is_err());
}

#[test]
fn layer_disabled_by_its_environment_variable_is_not_reported() {
    let mut env = std::collections::BTreeMap::new();
    env.insert("HOME".to_string(), "/home/u".to_string());
    env.insert(
        "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1".to_string(),
        "1".to_string(),
    );
    let root = Root::sysroot(tree("broken-icds")).unwrap().with_env(env);
    let (f, _) = collect(&root);
    assert!(f.vulkan.implicit_layers.is_empty());
}

#[test]
fn legacy_icd_filenames_and_add_driver_files() {
    // The vk-driver-files machine with HOME=/home/u and `pairs` set: its
    // facts and the ICD manifests found, in the loader's order.
    let icds_with = |pairs: &[(&str, &str)]| {
        let env = [("HOME", "/home/u")]
            .iter()
            .chain(pairs)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let root = Root::sysroot(tree("vk-driver-files"))
            .unwrap()
            .with_env(env);
        let (f, _) = collect(&root);
        let m: Vec<String> = f.vulkan.icds.iter().map(|i| i.manifest.clone()).collect();
        (f, m)
    };
    // VK_ICD_FILENAMES (older name) with a directory: only that directory.
    let (f, m) = icds_with(&[("VK_ICD_FILENAMES", "/home/u/extra")]);
    assert_eq!(m, vec!["/home/u/extra/nvidia_icd.json"]);
    assert_eq!(
        f.vulkan.icds[0].found_in.as_deref(),
        Some("VK_ICD_FILENAMES")
    );
    // Bare soname not installed in this tree: not found, said so.
    assert!(f.vulkan.icds[0]
        .error
        .as_deref()
        .unwrap()
        .contains("libGLX_nvidia.so.0"));
    // VK_ADD_DRIVER_FILES alone: added before the standard search.
    let (f, m) = icds_with(&[("VK_ADD_DRIVER_FILES", "/home/u/icd/lvp_icd.x86_64.json")]);
    assert_eq!(
        m,
        vec![
            "/home/u/icd/lvp_icd.x86_64.json",
            "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json"
        ]
    );
    assert_eq!(
        f.vulkan.icds[0].found_in.as_deref(),
        Some("VK_ADD_DRIVER_FILES")
    );
    assert_eq!(
        f.vulkan.icds[1].found_in.as_deref(),
        Some("/usr/share/vulkan/icd.d")
    );
    // XDG_DATA_DIRS replaces /usr/local/share:/usr/share.
    let (f, _) = icds_with(&[("XDG_DATA_DIRS", "/opt/none")]);
    assert!(f.vulkan.icds.is_empty(), "{:?}", f.vulkan.icds);
}
