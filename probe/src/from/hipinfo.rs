//! `hipInfo` / `hipinfo.exe` (HIP's device-properties sample; the Windows HIP
//! SDK ships it in `bin`): one block per HIP device, opened by `device#  N`,
//! with `Name:`, `pciBusID:`, `totalGlobalMem:` and `gcnArchName:`. A device
//! here is one the HIP runtime itself opened, the same proof as a rocminfo
//! GPU agent, and on Windows the only tool output there is.

use super::amd::{self, find_gfx};
use super::kv;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "hip-info",
    label: "hipInfo",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "Name:",
        "totalGlobalMem",
        "multiProcessorCount",
        "gcnArchName",
        "pciBusID",
        "memInfo.total",
        "memInfo.free",
    ]],
};

pub fn recognise(text: &str) -> bool {
    let mut device = false;
    let mut keys = 0;
    let mut arch = false;
    for l in lines_of(text) {
        let t = l.trim();
        device |= device_index(t).is_some();
        if let Some((_, k, v)) = kv(t) {
            if matches!(
                k,
                "totalGlobalMem"
                    | "multiProcessorCount"
                    | "gcnArchName"
                    | "pciBusID"
                    | "memInfo.total"
                    | "memInfo.free"
            ) {
                keys += 1;
            }
            arch |= k == "gcnArchName" && find_gfx(v).is_some();
        }
    }
    // `device#` with its `Name:` is enough (a paste cut after the name);
    // without the banner, two of hipInfo's own property names, or the name
    // with its `gcnArchName:` target (the two lines people quote; no other
    // tool prints that key with a colon).
    let named = text.contains("Name:");
    (device && named) || keys >= 2 || (arch && named)
}

/// `device#                           0` -> 0.
fn device_index(t: &str) -> Option<u32> {
    let rest = t.strip_prefix("device#")?.trim();
    (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        .then(|| rest.parse().ok())
        .flatten()
}

#[derive(Default)]
struct Device {
    name: String,
    arch: Option<String>,
    bus: Option<u32>,
    slot: Option<u32>,
    domain: Option<u32>,
    mem_bytes: Option<u64>,
    cus: Option<u32>,
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut devices: Vec<Device> = Vec::new();
    for l in lines_of(text) {
        let t = l.trim();
        if device_index(t).is_some() {
            devices.push(Device::default());
            continue;
        }
        let Some((_, k, v)) = kv(t) else { continue };
        if k == "Name" && devices.is_empty() && !v.is_empty() {
            // A paste that starts at the name (the banner cut off).
            devices.push(Device::default());
        }
        let Some(d) = devices.last_mut() else {
            continue;
        };
        let num = || v.parse::<u32>().ok();
        match k {
            "Name" if d.name.is_empty() => d.name = v.to_string(),
            "gcnArchName" => d.arch = find_gfx(v),
            "pciBusID" => d.bus = num(),
            "pciDeviceID" => d.slot = num(),
            "pciDomainID" => d.domain = num(),
            "multiProcessorCount" => d.cus = num(),
            "totalGlobalMem" => d.mem_bytes = size(v),
            _ => {}
        }
    }
    for d in devices.into_iter().filter(|d| !d.name.is_empty()) {
        let amd_named = ["AMD", "Radeon", "Instinct"]
            .iter()
            .any(|w| d.name.contains(w));
        let vendor = if d.arch.is_some() || amd_named {
            Vendor::Amd
        } else if d.name.contains("NVIDIA") {
            Vendor::Nvidia
        } else {
            continue;
        };
        // hipInfo prints the PCI location in decimal.
        let pci_address = match (d.domain, d.bus, d.slot) {
            (Some(dom), Some(b), Some(s)) if dom <= 0xffff && b <= 0xff && s <= 0x1f => {
                Some(format!("{dom:04x}:{b:02x}:{s:02x}.0"))
            }
            _ => None,
        };
        let is_amd = vendor == Vendor::Amd;
        super::limits::push_gpu(
            &mut f,
            Gpu {
                vendor,
                vendor_id: is_amd.then_some(amd::AMD),
                name: d.name,
                gfx: d.arch,
                pci_address,
                vram_bytes: d.mem_bytes,
                compute_units: d.cus.filter(|_| is_amd),
                seen_by: vec!["hipinfo".into()],
                ..Gpu::default()
            },
        );
    }
    if f.gpus.iter().any(|g| g.vendor == Vendor::Amd) {
        f.rocm.runtime_sees_gpu = Some(true);
    }
    f
}

/// hipInfo's sizes: `23.98 GB`, `64.00 KB`, `512.00 MB` (binary units).
fn size(v: &str) -> Option<u64> {
    let mut w = v.split_whitespace();
    let n: f64 = w.next()?.parse().ok()?;
    let shift = match w.next()? {
        "KB" => 10,
        "MB" => 20,
        "GB" => 30,
        "TB" => 40,
        _ => return None,
    };
    let b = n * (1u64 << shift) as f64;
    (b.is_finite() && b >= 0.0 && b < u64::MAX as f64).then_some(b as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hipinfo.exe of the Windows HIP SDK (ROCm/ROCm#4514, an RX 7900 XTX
    /// without the `gcnArchName` line, cut), and the Linux hipInfo layout
    /// with the separator line and `gcnArchName` (hip-tests sample docs).
    #[test]
    fn devices_with_name_location_memory_and_target() {
        let win = "device#                           0\nName:                             AMD Radeon RX 7900 XTX\npciBusID:                         3\npciDeviceID:                      0\npciDomainID:                      0\nmultiProcessorCount:              48\ntotalGlobalMem:                   23.98 GB\nmajor:                            11\nminor:                            0\n";
        assert!(recognise(win));
        let f = parse(win);
        assert_eq!(f.gpus.len(), 1);
        let g = &f.gpus[0];
        assert_eq!(
            (g.vendor, g.name.as_str()),
            (Vendor::Amd, "AMD Radeon RX 7900 XTX")
        );
        assert_eq!(g.pci_address.as_deref(), Some("0000:03:00.0"));
        assert_eq!(g.vram_bytes, Some((23.98 * (1u64 << 30) as f64) as u64));
        assert_eq!(g.gfx, None, "major/minor 11/0 is not a target");
        assert_eq!(f.rocm.runtime_sees_gpu, Some(true));

        let linux = "--------------------------------------------------------------------------------\ndevice#                           0\nName:                             AMD Instinct MI50\npciBusID:                         38\npciDeviceID:                      0\npciDomainID:                      0\ntotalGlobalMem:                   31.98 GB\ngcnArchName:                      gfx906:sramecc+:xnack-\n--------------------------------------------------------------------------------\ndevice#                           1\nName:                             AMD Instinct MI50\ngcnArchName:                      gfx906:sramecc+:xnack-\n";
        let f = parse(linux);
        let gfx: Vec<_> = f.gpus.iter().map(|g| g.gfx.as_deref()).collect();
        assert_eq!(gfx, [Some("gfx906"), Some("gfx906")]);
        assert_eq!(f.gpus[0].pci_address.as_deref(), Some("0000:26:00.0"));
    }

    /// A paste cut right after the name (ROCm/ROCm#5105, PowerShell).
    #[test]
    fn a_head_cut_after_the_name_is_one_device() {
        let t = "PS C:\\AMD\\ROCm\\6.2\\bin> hipinfo.exe\n\n--------------------------------------------------------------------------------\ndevice#                               0\nName:                                 AMD Radeon RX 6950 XT\n";
        assert!(recognise(t));
        let f = parse(t);
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].name, "AMD Radeon RX 6950 XT");
    }

    /// The lines people quote from a newer hipInfo, without the `device#`
    /// banner: name, target and the `memInfo` pair (lmstudio-bug-tracker#2358,
    /// TheRock 7.14 on Windows); cut to name and target, still one device.
    #[test]
    fn quoted_name_and_target_without_the_banner() {
        let t = "Name:                             AMD Radeon RX 9070 XT\ngcnArchName:                      gfx1201\nmemInfo.total:                    15.92 GB\nmemInfo.free:                     15.77 GB (99%)\n";
        for t in [t, &t[..t.find("memInfo").unwrap()]] {
            assert!(recognise(t), "{t}");
            let f = parse(t);
            assert_eq!(f.gpus.len(), 1);
            assert_eq!(f.gpus[0].name, "AMD Radeon RX 9070 XT");
            assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1201"));
        }
        // An arch line naming no gfx target is not enough.
        assert!(!recognise("Name: x\ngcnArchName: \n"));
    }

    /// rocminfo's `Name:` lines and clinfo's properties are not hipInfo.
    #[test]
    fn other_tools_are_not_hipinfo() {
        assert!(!recognise(
            "  Name:                    gfx1100\n  Marketing Name:          Radeon RX 7900 XTX\n"
        ));
        assert!(!recognise("  Device Name                                     gfx1030\n  Max compute units                               36\n"));
        assert_eq!(size("23.98 GB"), Some((23.98 * (1u64 << 30) as f64) as u64));
        assert_eq!(size("1e300 GB"), None);
        assert_eq!(size("lots"), None);
    }
}
