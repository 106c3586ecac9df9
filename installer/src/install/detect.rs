//! Step 1a, detect: the machine facts the profile is chosen from, and the
//! summary of them kept in the receipt, through the probe's front door.

use anyhow::{Context, Result};
use std::path::Path;

/// Facts for profile choice, from the live machine or a captured sysroot
/// (the doctor's engine, read-only; what it reads is the probe's
/// [`greta_probe::Scope::Profile`]), plus the summary kept in the receipt.
pub(super) fn probe_facts(
    sysroot: Option<&Path>,
    profile_forced: bool,
) -> Result<(greta_probe::Facts, serde_json::Value)> {
    let root = match sysroot {
        Some(d) => {
            greta_probe::Root::sysroot(d).with_context(|| format!("--sysroot {}", d.display()))?
        }
        None => greta_probe::Root::live(),
    };
    let facts = greta_probe::Probe::new(&root)
        .scope(greta_probe::Scope::Profile {
            forced: profile_forced,
        })
        .envs_at(crate::envs::EnvRoot::dir_in)
        .run()
        .facts;
    let summary = probe_summary(&facts);
    Ok((facts, summary))
}

/// The facts a support engineer needs to judge an env: GPUs, driver, ROCm.
pub fn probe_summary(f: &greta_probe::Facts) -> serde_json::Value {
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
