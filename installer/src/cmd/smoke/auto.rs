//! What `--backend auto` is decided from, as this binary's probe sees it:
//! the GPUs (PCI, KFD) and the Vulkan devices. The decision is
//! `greta_smoke::auto::choose_with`, which also finds the HIP/CUDA runtime.

use greta_probe::{Facts, Vendor};
use greta_smoke::auto::Machine;

/// The GPUs and their gfx targets, and the Vulkan loader and devices as
/// doctor sees them (the probe's `Devices` scope reads Vulkan only when
/// there is no gfx94x GPU).
pub fn seen() -> Machine {
    let f = greta_probe::Probe::new(&greta_probe::Root::live())
        .scope(greta_probe::Scope::Devices)
        .run()
        .facts;
    let mut m = Machine {
        amd_gpus: f
            .gpus
            .iter()
            .filter(|g| g.vendor == Vendor::Amd)
            .map(|g| (g.name.clone(), g.gfx.clone()))
            .collect(),
        nvidia_gpus: f
            .gpus
            .iter()
            .filter(|g| g.vendor == Vendor::Nvidia)
            .map(|g| g.name.clone())
            .collect(),
        ..Machine::default()
    };
    if !m.has_gfx94x() {
        vulkan_facts(&f, &mut m);
    }
    m
}

/// The Vulkan side of [`Machine`], from the devices the probe enumerated.
fn vulkan_facts(f: &Facts, m: &mut Machine) {
    if f.vulkan.loader.is_none() {
        m.vulkan_error = Some("no Vulkan loader, libvulkan.so.1".into());
        return;
    }
    for d in &f.vulkan.devices {
        if d.device_type == Some(greta_vocab::DeviceType::Cpu) {
            m.vulkan_cpus.push(d.name.clone());
        } else {
            m.vulkan_gpus.push(d.name.clone());
        }
    }
    if f.vulkan.devices.is_empty() {
        m.vulkan_error = f
            .signals
            .iter()
            .find(|s| s.id.starts_with("vulkan-enumeration") || s.id.starts_with("vk"))
            .map(|s| s.text.clone());
    }
}
