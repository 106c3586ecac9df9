//! PCI display/accelerator devices from sysfs, the kernel driver bound to
//! each, the GPU kernel modules and their versions, and the kernel version.

use super::gpu;
use super::{hex_u32, scanned, seen};
use crate::facts::{Facts, Gpu, KernelDriver};
use crate::from::amd;
use crate::root::Root;

const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// Whether a PCI class code is a GPU: display controllers (0x03xxxx) of any
/// vendor, and "processing accelerators" (0x12xxxx) from GPU vendors —
/// Instinct MI200/MI300 report themselves as the latter. A server BMC's VGA
/// device (ASPEED, Matrox G200e) is a display controller but no GPU.
pub fn is_gpu_class(class: u32, vendor: u16) -> bool {
    let base = class >> 16;
    (base == 0x03 && !amd::is_bmc_display(Some(vendor), ""))
        || (base == 0x12 && matches!(vendor, amd::AMD | amd::NVIDIA))
}

pub fn collect(root: &Root, f: &mut Facts) -> String {
    f.kernel_version = root
        .read_trim("/proc/sys/kernel/osrelease")
        .filter(|s| !s.is_empty());
    let addrs = root.list(PCI_DEVICES);
    let pci_visible = !addrs.is_empty();
    for addr in addrs {
        let dir = format!("{PCI_DEVICES}/{addr}");
        let Some(class) = root
            .read_trim(&format!("{dir}/class"))
            .and_then(|s| hex_u32(&s))
        else {
            continue;
        };
        let id16 = |attr: &str| {
            root.read_trim(&format!("{dir}/{attr}"))
                .and_then(|s| hex_u32(&s))
                .and_then(|v| u16::try_from(v).ok())
        };
        let (Some(vendor), Some(device)) = (id16("vendor"), id16("device")) else {
            continue;
        };
        if !is_gpu_class(class, vendor) {
            continue;
        }
        let driver = root
            .read_link(&format!("{dir}/driver"))
            .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()));
        let render_minor = root.list(&format!("{dir}/drm")).iter().find_map(|n| {
            let m = n.strip_prefix("renderD")?.parse().ok()?;
            root.note_path(&format!("{dir}/drm/{n}"));
            Some(m)
        });
        let vf =
            root.read_link(&format!("{dir}/physfn")).is_some() || gpu::is_vf_id(vendor, device);
        let bytes = |attr: &str| {
            root.read_trim(&format!("{dir}/{attr}"))
                .and_then(|s| s.parse::<u64>().ok())
        };
        let mut g = Gpu {
            vendor: gpu::vendor_of(vendor),
            name: gpu::pci_name(vendor, device)
                .unwrap_or_else(|| format!("PCI device {vendor:04x}:{device:04x}")),
            pci_address: Some(addr.clone()),
            vendor_id: Some(vendor),
            device_id: Some(device),
            revision: root
                .read_trim(&format!("{dir}/revision"))
                .and_then(|s| hex_u32(&s))
                .and_then(|v| u8::try_from(v).ok()),
            subsystem_vendor_id: id16("subsystem_vendor"),
            subsystem_device_id: id16("subsystem_device"),
            vf,
            kernel_driver: driver,
            render_minor,
            vram_bytes: bytes("mem_info_vram_total"),
            gtt_bytes: bytes("mem_info_gtt_total"),
            ..Gpu::default()
        };
        if vendor == amd::AMD {
            g.integrated = Some(gpu::ids_are_apu(vendor, device));
        }
        seen(&mut g, "pci");
        f.gpus.push(g);
    }
    if pci_visible {
        scanned(f, "pci");
    }
    drm_memory(root, f);
    collect_modules(root, f);
    let n = f.gpus.len();
    let names: Vec<String> = f
        .gpus
        .iter()
        .map(|g| match &g.kernel_driver {
            Some(d) => format!("{} ({d})", g.name),
            None => format!("{} (no driver)", g.name),
        })
        .collect();
    match (pci_visible, n) {
        (false, _) => "PCI bus not visible (no /sys/bus/pci)".into(),
        (true, 0) => "no GPU on the PCI bus".into(),
        _ => names.join(", "),
    }
}

/// VRAM/GTT through `/sys/class/drm/card*/device` where the PCI directory
/// did not have them (the same files, reached the way tools document).
fn drm_memory(root: &Root, f: &mut Facts) {
    for card in root.list("/sys/class/drm") {
        let Some(n) = card.strip_prefix("card") else {
            continue;
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let dev = format!("/sys/class/drm/{card}/device");
        let Some(addr) = root
            .read_link(&dev)
            .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
        else {
            continue;
        };
        let Some(g) = f
            .gpus
            .iter_mut()
            .find(|g| g.pci_address.as_deref() == Some(addr.as_str()))
        else {
            continue;
        };
        let bytes = |attr: &str| {
            root.read_trim(&format!("{dev}/{attr}"))
                .and_then(|s| s.parse::<u64>().ok())
        };
        if g.vram_bytes.is_none() {
            g.vram_bytes = bytes("mem_info_vram_total");
        }
        if g.gtt_bytes.is_none() {
            g.gtt_bytes = bytes("mem_info_gtt_total");
        }
    }
}

/// GPU kernel modules: loaded or not, version, init state.
fn collect_modules(root: &Root, f: &mut Facts) {
    for name in ["amdgpu", "nvidia"] {
        let m = format!("/sys/module/{name}");
        if !root.is_dir(&m) {
            continue;
        }
        // In-tree modules have no `version`; `initstate` is "live" once loaded.
        let live = root
            .read_trim(&format!("{m}/initstate"))
            .map(|s| s == "live")
            .unwrap_or(true);
        let mut version = root
            .read_trim(&format!("{m}/version"))
            .filter(|v| !v.is_empty());
        if name == "nvidia" && version.is_none() {
            version = nvidia_proc_version(root);
        }
        f.drivers.push(KernelDriver {
            name: name.into(),
            loaded: live,
            version,
        });
    }
    if !f.drivers.iter().any(|d| d.name == "nvidia") {
        if let Some(v) = nvidia_proc_version(root) {
            f.drivers.push(KernelDriver {
                name: "nvidia".into(),
                loaded: true,
                version: Some(v),
            });
        }
    }
    f.kernel_driver_version = f
        .drivers
        .iter()
        .find(|d| d.name == "amdgpu" && d.version.is_some())
        .or_else(|| f.drivers.iter().find(|d| d.version.is_some()))
        .and_then(|d| d.version.clone());
}

/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 ...`
fn nvidia_proc_version(root: &Root) -> Option<String> {
    let t = root.read("/proc/driver/nvidia/version").ok()?;
    let line = t.lines().find(|l| l.starts_with("NVRM version"))?;
    let after = line.split("Kernel Module").nth(1)?;
    after.split_whitespace().next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_classes() {
        assert!(is_gpu_class(0x030000, 0x1002));
        assert!(is_gpu_class(0x038000, 0x10de));
        assert!(is_gpu_class(0x120000, 0x1002));
        assert!(!is_gpu_class(0x120000, 0x1da3));
        assert!(!is_gpu_class(0x020000, 0x1002));
    }
}
