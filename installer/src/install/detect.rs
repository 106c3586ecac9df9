//! Step 1a, detect: the machine facts the profile is chosen from, and the
//! summary of them kept in the receipt. Kept apart from planning so that
//! the collector block can be swapped for the probe's own front door
//! without touching the plan.

use anyhow::{Context, Result};
use std::path::Path;

/// Facts for profile choice, from the live machine or a captured sysroot
/// (the doctor's engine, read-only), plus the summary kept in the receipt.
///
/// Live, install reads only what the choice depends on: PCI (GPUs, kernel
/// driver), KFD (gfx targets), device nodes and ROCm, a few milliseconds of
/// file reads. The Vulkan ICD manifests (for the receipt's summary) are read
/// too, without loading the drivers; a Vulkan enumeration (loading every driver, 10-100 ms) and
/// the scan of Python interpreters on PATH (the doctor's business) are
/// skipped, except that a GPU visible only through Vulkan (WSL2, no PCI
/// sysfs) must still be seen when greta chooses the profile: with no
/// `--profile`, nothing found on PCI/KFD/ROCm and a GPU device node present,
/// Vulkan is enumerated too.
/// A captured sysroot is replayed whole (no live cost, and the captures
/// may hold only the Vulkan side).
pub(super) fn probe_facts(
    sysroot: Option<&Path>,
    profile_forced: bool,
) -> Result<(greta_probe::facts::Facts, serde_json::Value)> {
    use greta_probe::live;
    let facts = match sysroot {
        Some(d) => {
            let root = greta_probe::root::Root::sysroot(d)
                .with_context(|| format!("--sysroot {}", d.display()))?;
            greta_probe::collect::collect(&root).0
        }
        None => {
            let root = greta_probe::root::Root::live();
            let mut f = greta_probe::facts::Facts {
                sources: vec![root.source_label()],
                ..Default::default()
            };
            live::pci::collect(&root, &mut f);
            live::kfd::collect(&root, &mut f);
            live::nodes::collect(&root, &mut f);
            live::rocm::collect(
                &root,
                &mut f,
                greta_probe::collect::default_parsers().rocminfo,
            );
            f.vulkan.drivers = vulkan_driver_kinds(&root);
            let found_gpu = !f.gpus.is_empty() || !f.rocm.agent_gfx.is_empty();
            // A GPU a Vulkan driver can reach on Linux has a device node (DRM
            // render node; /dev/nvidia* for NVIDIA's driver; /dev/dxg under
            // WSL2); without one only software devices (lavapipe) could be
            // enumerated, and those choose nothing.
            let gpu_node = f
                .device_nodes
                .iter()
                .any(|n| n.exists && n.path.starts_with("/dev/dri/renderD"))
                || ["/dev/dxg", "/dev/nvidiactl", "/dev/nvidia0"]
                    .iter()
                    .any(|p| root.exists(p));
            if !profile_forced && !found_gpu && gpu_node {
                // The enumeration needs to know the loader is there (what
                // the doctor's ICD check finds first; its loading of each
                // driver library is not needed for that).
                let dirs = live::icd::lib_dirs(&root);
                f.vulkan.loader = live::icd::find_lib(&root, &dirs, "libvulkan.so.1");
                live::vkdev::collect(
                    &root,
                    &mut f,
                    greta_probe::collect::default_parsers().vulkaninfo,
                );
            }
            f
        }
    };
    let summary = probe_summary(&facts);
    Ok((facts, summary))
}

/// The kinds of the Vulkan drivers whose ICD manifests the loader would
/// find (what the receipt's summary records), read from the manifests
/// alone: the doctor also loads each driver library, which costs tens of
/// milliseconds and decides nothing here.
fn vulkan_driver_kinds(
    root: &greta_probe::root::Root,
) -> Vec<greta_probe::facts::VulkanDriverKind> {
    use greta_probe::live::icd;
    let mut kinds = Vec::new();
    for (manifest, _) in icd::search_manifests(root) {
        let lib = root
            .read(&manifest)
            .ok()
            .and_then(|t| icd::parse_manifest(&t).ok())
            .map(|(lib, _)| lib)
            .unwrap_or_default();
        let k = icd::classify(&manifest, &lib);
        if k != greta_probe::facts::VulkanDriverKind::Other && !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds
}

/// The facts a support engineer needs to judge an env: GPUs, driver, ROCm.
pub fn probe_summary(f: &greta_probe::facts::Facts) -> serde_json::Value {
    let gpus: Vec<_> = f
        .gpus
        .iter()
        .map(|g| {
            serde_json::json!({
                "vendor": g.vendor, "name": g.name, "gfx": g.gfx, "vf": g.vf,
                "pci_id": match (g.vendor_id, g.device_id) { (Some(v), Some(d)) => Some(format!("{v:04x}:{d:04x}")), _ => None },
            })
        })
        .collect();
    serde_json::json!({
        "sources": f.sources,
        "kernel": f.kernel_version,
        "kernel_driver_version": f.kernel_driver_version,
        "gpus": gpus,
        "rocm_version": f.rocm.version,
        "hsa_override_gfx_version": f.rocm.hsa_override_gfx_version,
        "vulkan_drivers": f.vulkan.drivers,
    })
}
