//! `clinfo` (the modern `Key   value` layout and AMD's older `Key:  value`
//! one). Only GPU devices on a known platform become GPUs; zero OpenCL
//! devices is not proof that the machine has none.

use super::amd::{self, find_gfx};
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor};

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "clinfo",
    label: "clinfo",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "Number of platforms",
        "ICD loader Name",
        "Platform Name",
        "Number of devices",
        "Board name:",
    ]],
};

pub fn recognise(text: &str) -> bool {
    [
        "Number of platforms",
        "ICD loader Name",
        "Platform Name",
        "Number of devices",
    ]
    .iter()
    .any(|m| text.contains(m))
        || rocm_layout_fragment(text)
}

/// Device lines of ROCm's own clinfo without its headers (a `grep` of
/// it): a `Board name:` and a `Name:` that is a gfx target.
fn rocm_layout_fragment(text: &str) -> bool {
    let lines = || lines_of(text).map(str::trim);
    lines().any(|t| t.starts_with("Board name:"))
        && lines().any(|t| t.strip_prefix("Name:").is_some_and(|v| is_target(v.trim())))
}

/// `gfx1201`, `gfx90a:sramecc+:xnack-`: a value that is a target and nothing else.
fn is_target(v: &str) -> bool {
    let head = v.split(':').next().unwrap_or(v);
    find_gfx(head).is_some_and(|g| g == head)
}

fn field<'a>(t: &'a str, key: &str) -> Option<&'a str> {
    let rest = t.strip_prefix(key)?;
    if !(rest.starts_with(':') || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    Some(rest.trim_start_matches(':').trim())
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut platform_vendor = Vendor::Other;
    let mut device_type_gpu: Option<bool> = None;
    let mut pending: Option<Gpu> = None;
    // ROCm's clinfo prints `Board name:` before the device's `Name:`.
    let mut board_next: Option<String> = None;
    // The device block's own `Vendor ID:` and `Device Topology:` (AMD's
    // layout), which come before its `Name:`.
    let mut block_amd = false;
    let mut topology_next: Option<String> = None;
    let flush = |f: &mut Facts, p: &mut Option<Gpu>| {
        if let Some(mut g) = p.take() {
            if g.vendor != Vendor::Cpu {
                let forced = g
                    .gfx
                    .as_deref()
                    .and_then(|r| amd::forced_target(r, g.device_id, &g.name));
                if let Some((real, value)) = forced {
                    g.gfx = Some(real);
                    f.rocm.hsa_override_gfx_version.get_or_insert(value);
                }
                super::limits::push_gpu(f, g);
            }
        }
    };
    for l in lines_of(text) {
        let t = l.trim();
        if let Some(v) = field(t, "Platform Name").or_else(|| field(t, "Platform Vendor")) {
            platform_vendor = if v.contains("AMD") || v.contains("Advanced Micro Devices") {
                Vendor::Amd
            } else if v.contains("NVIDIA") {
                Vendor::Nvidia
            } else if v.contains("Intel") {
                Vendor::Intel
            } else {
                platform_vendor
            };
            continue;
        }
        if let Some(v) = field(t, "Device Type") {
            // A block whose `Name:` never came (a paste cut inside it) is
            // still the device its board name says.
            if let Some(g) = cut_block(&mut board_next, device_type_gpu, block_amd, platform_vendor)
            {
                flush(&mut f, &mut pending);
                pending = Some(Gpu {
                    pci_address: topology_next.take(),
                    ..g
                });
            }
            device_type_gpu = Some(v.contains("GPU"));
            block_amd = false;
            topology_next = None;
            continue;
        }
        if let Some(v) = field(t, "Vendor ID") {
            block_amd = v.eq_ignore_ascii_case("1002h") || v.eq_ignore_ascii_case("0x1002");
            continue;
        }
        if let Some(v) = field(t, "Device Topology") {
            topology_next = amd_topology(v);
            continue;
        }
        if let Some(v) = t.strip_prefix("Board name:") {
            board_next = Some(v.trim().to_string()).filter(|v| !v.is_empty());
            continue;
        }
        if let Some(v) = field(t, "Device PCI-e ID (AMD)") {
            if let Some(g) = pending.as_mut() {
                g.device_id = amd::parse_id(v).and_then(|x| u16::try_from(x).ok());
            }
            continue;
        }
        if let Some(v) = field(t, "Board name").or_else(|| field(t, "Device Board Name (AMD)")) {
            if let Some(g) = pending.as_mut() {
                if !v.is_empty() {
                    g.name = v.to_string();
                }
            }
            continue;
        }
        let name = field(t, "Device Name").or_else(|| {
            field(t, "Name").filter(|v| platform_vendor == Vendor::Amd || is_target(v))
        });
        if let Some(v) = name {
            flush(&mut f, &mut pending);
            let gfx = find_gfx(v);
            if device_type_gpu == Some(false) && gfx.is_none() {
                continue;
            }
            let vendor = if gfx.is_some() {
                Vendor::Amd
            } else {
                platform_vendor
            };
            if vendor == Vendor::Other && device_type_gpu != Some(true) {
                continue;
            }
            let (name, device_id) = match board_next.take() {
                Some(b) => {
                    let id = unnamed_device(&b);
                    (b, id)
                }
                None => (v.to_string(), None),
            };
            pending = Some(Gpu {
                vendor,
                name,
                device_id,
                gfx,
                pci_address: topology_next.take(),
                seen_by: vec!["clinfo".into()],
                ..Gpu::default()
            });
            device_type_gpu = None;
        }
    }
    if let Some(g) = cut_block(&mut board_next, device_type_gpu, block_amd, platform_vendor) {
        flush(&mut f, &mut pending);
        pending = Some(Gpu {
            pci_address: topology_next.take(),
            ..g
        });
    }
    flush(&mut f, &mut pending);
    f
}

/// The GPU of a device block cut before its `Name:` (a paste's end, or a
/// paste that starts inside a platform's device list): a GPU device of
/// AMD's platform or vendor id with a board name.
fn cut_block(
    board: &mut Option<String>,
    device_type_gpu: Option<bool>,
    block_amd: bool,
    platform_vendor: Vendor,
) -> Option<Gpu> {
    if device_type_gpu != Some(true) || !(block_amd || platform_vendor == Vendor::Amd) {
        return None;
    }
    let name = board.take()?;
    let device_id = unnamed_device(&name);
    Some(Gpu {
        vendor: Vendor::Amd,
        vendor_id: Some(amd::AMD),
        name: device_id
            .and_then(|d| amd::pci_name(amd::AMD, d))
            .map_or(name, str::to_string),
        device_id,
        seen_by: vec!["clinfo".into()],
        ..Gpu::default()
    })
}

/// The id of a board name that is no name: `Device 6860`, as pci.ids-less
/// tools print a device they cannot name.
fn unnamed_device(board: &str) -> Option<u16> {
    let hex = board.strip_prefix("Device ")?;
    (hex.len() == 4)
        .then(|| u16::from_str_radix(hex, 16).ok())
        .flatten()
}

/// AMD's `PCI[ B#6, D#0, F#0 ]` (decimal bus, device, function) as a PCI
/// address.
fn amd_topology(v: &str) -> Option<String> {
    let inner = v.strip_prefix("PCI[")?.strip_suffix(']')?;
    let mut n = [0u32; 3];
    for (slot, (part, tag)) in n.iter_mut().zip(inner.split(',').zip(["B#", "D#", "F#"])) {
        *slot = part.trim().strip_prefix(tag)?.parse().ok()?;
    }
    let [b, d, fun] = n;
    (b <= 0xff && d <= 0x1f && fun <= 7).then(|| format!("0000:{b:02x}:{d:02x}.{fun}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AMD's clinfo layout cut before the device's `Name:` (ROCm 1.6 on an
    /// MI25, legacy-rocm-build#216; the APP SDK on an A10-7850K,
    /// OpenCL-caffe#37, whose paste starts at the device list): the board
    /// name, its id when the board is `Device XXXX`, and the topology's
    /// address.
    #[test]
    fn a_device_block_cut_before_its_name_is_its_board() {
        let mi25 = "Number of devices:\t\t\t\t 4\n  Device Type:\t\t\t\t\t CL_DEVICE_TYPE_GPU\n  Vendor ID:\t\t\t\t\t 1002h\n  Board name:\t\t\t\t\t Device 6860\n  Device Topology:\t\t\t\t PCI[ B#6, D#0, F#0 ]\n  Max compute units:\t\t\t\t 64\n";
        let f = parse(mi25);
        assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
        assert_eq!(f.gpus[0].device_id, Some(0x6860));
        assert_eq!(f.gpus[0].pci_address.as_deref(), Some("0000:06:00.0"));
        assert!(f.gpus[0].name.contains("Vega 10"), "{}", f.gpus[0].name);
        let apu = "  Platform Name:                                 AMD Accelerated Parallel Processing\nNumber of devices:                               2\n  Device Type:                                   CL_DEVICE_TYPE_GPU\n  Vendor ID:                                     1002h\n  Board name:                                    AMD Radeon(TM) R7 Graphics  \n  Device Topology:                               PCI[ B#0, D#1, F#0 ]\n  Max compute units:                             8\n";
        let f = parse(apu);
        assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
        assert_eq!(f.gpus[0].name, "AMD Radeon(TM) R7 Graphics");
        assert_eq!(f.gpus[0].pci_address.as_deref(), Some("0000:00:01.0"));
        // The CPU device of the same list is none, named or cut.
        let cpu = "  Platform Name:     AMD Accelerated Parallel Processing\n  Device Type:   CL_DEVICE_TYPE_CPU\n  Vendor ID:   1002h\n  Board name:\n  Max compute units:  10\n";
        assert!(parse(cpu).gpus.is_empty());
        assert_eq!(
            amd_topology("PCI[ B#131, D#0, F#0 ]").as_deref(),
            Some("0000:83:00.0")
        );
        assert_eq!(amd_topology("PCI[ B#x, D#0, F#0 ]"), None);
    }

    /// ROCm's own clinfo prints `Board name:` before the device's `Name:`;
    /// a grep of it keeps no platform line (ROCm/ROCm#5696).
    #[test]
    fn rocm_layout_board_name_belongs_to_the_next_device() {
        let t = "$ /usr/bin/rocm-clinfo|grep -P 'Board|gfx'\n  Board name:\t\t\t\t\t AMD Radeon AI PRO R9700\n  Name:\t\t\t\t\t\t gfx1201\n  Board name:\t\t\t\t\t AMD Radeon RX 7900 XTX\n  Name:\t\t\t\t\t\t gfx1100\n";
        assert!(recognise(t));
        let f = parse(t);
        let got: Vec<_> = f
            .gpus
            .iter()
            .map(|g| (g.name.as_str(), g.gfx.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("AMD Radeon AI PRO R9700", Some("gfx1201")),
                ("AMD Radeon RX 7900 XTX", Some("gfx1100"))
            ]
        );
        assert_eq!(f.rocm.hsa_override_gfx_version, None);
    }

    /// The runtime reports the target HSA_OVERRIDE_GFX_VERSION forces: a
    /// board only gfx1151 carries reported as gfx1201 (ROCm/ROCm#5696, a
    /// stale `export HSA_OVERRIDE_GFX_VERSION=12.0.1`), or a PCI-e id of
    /// another chip. The GPU keeps its real target.
    #[test]
    fn a_target_the_board_contradicts_is_a_forced_override() {
        let t = "  Board name:\t\t\t\t\t Radeon 8060S Graphics\n  Name:\t\t\t\t\t\t gfx1201\n";
        let f = parse(t);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1151"));
        assert_eq!(f.rocm.hsa_override_gfx_version.as_deref(), Some("12.0.1"));
        let modern = "  Platform Name                                   AMD Accelerated Parallel Processing\n  Device Name                                     gfx1030\n  Device Board Name (AMD)                         AMD Radeon RX 6700 XT\n  Device PCI-e ID (AMD)                           0x73df\n";
        let f = parse(modern);
        assert_eq!(f.gpus[0].device_id, Some(0x73df));
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1031"));
        assert_eq!(f.rocm.hsa_override_gfx_version.as_deref(), Some("10.3.0"));
    }
}
