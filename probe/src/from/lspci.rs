//! `lspci` output (`-nn`, `-k`, `-v` variants): the PCI view users paste
//! most often. GPUs are the VGA/Display/3D controller entries, and AMD's or
//! NVIDIA's "Processing accelerators" (class 1200: Instinct MI300X and its
//! SR-IOV VF); with `-k` the "Kernel driver in use" line says whether amdgpu
//! (or nvidia) is bound.

use super::amd;
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor};

const CLASSES: &[&str] = &[
    "VGA compatible controller",
    "Display controller",
    "3D controller",
    "Processing accelerators",
];

/// Class 1200 holds many non-GPU accelerators (FPGAs, AI ASICs): only AMD's
/// and NVIDIA's count as GPUs.
const ACCEL: &str = "Processing accelerators";

/// Without `-nn`, lspci names a device its pci.ids does not know as
/// "Device 74b5" (e.g. `[AMD/ATI] Device 74b5`, the MI300X VF on an older
/// pci.ids): the id is that last word.
fn unnamed_device_id(desc: &str) -> Option<u16> {
    let head = desc.split(" (rev").next().unwrap_or(desc).trim_end();
    let (before, id) = head.rsplit_once(' ')?;
    if !before.ends_with(" Device") || id.len() != 4 {
        return None;
    }
    u16::from_str_radix(id, 16).ok()
}

/// The device name lspci printed after the vendor's pci.ids name,
/// without its `[vvvv:dddd]` ids and revision ("Phoenix3", where greta's
/// pci.ids says "HawkPoint1" for 1002:1900); `None` when lspci knew no name
/// ("Device 74b5", "Device [1002:74b5]") or named the vendor otherwise.
fn printed_name(desc: &str, vid: Option<u16>) -> Option<String> {
    let vendor = pci_ids::Vendors::iter()
        .find(|v| Some(v.id()) == vid)?
        .name();
    let mut s = desc.split(" (rev").next().unwrap_or(desc).trim();
    if let Some(p) = s.rfind(" [").filter(|_| s.ends_with(']')) {
        let inner = &s[p + 2..s.len() - 1];
        if inner.len() == 9 && inner.as_bytes()[4] == b':' {
            s = &s[..p];
        }
    }
    let name = s.strip_prefix(vendor)?.trim();
    let unnamed = name.is_empty()
        || name == "Device"
        || name
            .strip_prefix("Device ")
            .is_some_and(|d| d.len() == 4 && d.bytes().all(|b| b.is_ascii_hexdigit()));
    (!unnamed).then(|| name.to_string())
}

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "lspci",
    label: "lspci",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[CLASSES],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(|l| {
        let mut it = l.splitn(2, ' ');
        it.next()
            .is_some_and(|s| s.parse::<greta_vocab::PciAddress>().is_ok())
            && it
                .next()
                .is_some_and(|r| CLASSES.iter().any(|c| r.starts_with(c)))
    })
}

/// "[1002:744c]" -> (0x1002, 0x744c): the last bracketed vvvv:dddd pair.
fn ids(s: &str) -> Option<(u16, u16)> {
    let mut found = None;
    let mut rest = s;
    while let Some(a) = rest.find('[') {
        let Some(b) = rest[a..].find(']') else { break };
        let inner = &rest[a + 1..a + b];
        if let Some((v, d)) = inner.split_once(':') {
            if v.len() == 4 && d.len() == 4 {
                if let (Ok(v), Ok(d)) = (u16::from_str_radix(v, 16), u16::from_str_radix(d, 16)) {
                    found = Some((v, d));
                }
            }
        }
        rest = &rest[a + b + 1..];
    }
    found
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut cur: Option<usize> = None;
    let with_k = text.contains("Kernel driver in use:") || text.contains("Kernel modules:");
    // Whether the open block showed its `-k` lines: a block the paste's end
    // cuts before them says nothing of its driver.
    let mut k_lines = false;
    for l in lines_of(text) {
        // A reporter's elision inside a device block ("..", "...", "…")
        // leaves the block open: its "Kernel driver in use" line follows.
        if !l.trim().is_empty() && l.trim().chars().all(|c| c == '.' || c == '…') {
            continue;
        }
        // `-v` fields pasted without their indent still belong to the block.
        if cur.is_some() && FIELDS.iter().any(|f| l.starts_with(f)) {
            if let Some(d) = l.strip_prefix("Kernel driver in use:") {
                f.gpus[cur.unwrap_or_default()].kernel_driver = Some(d.trim().to_string());
            }
            k_lines |= l.starts_with("Kernel ");
            continue;
        }
        if !l.starts_with(char::is_whitespace) {
            cur = None;
            k_lines = false;
            let mut it = l.splitn(2, ' ');
            let (Some(s), Some(rest)) = (it.next(), it.next()) else {
                continue;
            };
            // "03:00.0" or "0000:03:00.0"; lspci without -D names domain 0.
            let Ok(mut addr) = s.parse::<greta_vocab::PciAddress>() else {
                continue;
            };
            addr.domain.get_or_insert(0);
            let Some(class) = CLASSES.iter().find(|c| rest.starts_with(**c)) else {
                continue;
            };
            let mut desc = rest[class.len()..].trim_start();
            // `-nn` adds the class code: " [0300]: ..."
            if desc.len() > 6 && desc.starts_with('[') && desc.as_bytes()[5] == b']' {
                desc = &desc[6..];
            }
            let desc = desc.trim_start_matches(':').trim();
            let (mut vid, mut did) = ids(desc).unzip();
            // The BMC's VGA device (ASPEED, Matrox G200e) is no GPU.
            if amd::is_bmc_display(vid, desc) {
                continue;
            }
            let vendor = match vid {
                Some(amd::AMD) => Vendor::Amd,
                Some(amd::NVIDIA) => Vendor::Nvidia,
                Some(amd::INTEL) => Vendor::Intel,
                _ if desc.contains("AMD") || desc.contains("ATI") => Vendor::Amd,
                _ if desc.contains("NVIDIA") => Vendor::Nvidia,
                _ if desc.contains("Intel") => Vendor::Intel,
                _ => Vendor::Other,
            };
            if *class == ACCEL && !matches!(vendor, Vendor::Amd | Vendor::Nvidia) {
                continue;
            }
            if did.is_none() {
                if let Some(d) = unnamed_device_id(desc) {
                    vid = vid.or(match vendor {
                        Vendor::Amd => Some(amd::AMD),
                        Vendor::Nvidia => Some(amd::NVIDIA),
                        _ => None,
                    });
                    did = vid.map(|_| d);
                }
            }
            // The name lspci printed (its own pci.ids) first: greta's may
            // be older or newer, and the user reads and searches the one
            // on their screen.
            let name = match (printed_name(desc, vid.or(vendor.pci_id())), vid, did) {
                (Some(n), _, _) => n,
                (None, Some(v), Some(d)) => amd::pci_name(v, d).unwrap_or("").to_string(),
                _ => String::new(),
            };
            let name = if name.is_empty() {
                desc.split(" (rev")
                    .next()
                    .unwrap_or(desc)
                    .trim()
                    .to_string()
            } else {
                name
            };
            super::limits::push_gpu(
                &mut f,
                Gpu {
                    vendor,
                    vf: amd::is_vf(&name, vid, did),
                    name,
                    pci_address: Some(addr.to_string()),
                    vendor_id: vid,
                    device_id: did,
                    seen_by: vec![if with_k {
                        "lspci-k".into()
                    } else {
                        "lspci".into()
                    }],
                    ..Gpu::default()
                },
            );
            cur = Some(f.gpus.len() - 1);
            continue;
        }
        if let (Some(i), Some(d)) = (cur, l.trim().strip_prefix("Kernel driver in use:")) {
            f.gpus[i].kernel_driver = Some(d.trim().to_string());
        }
        k_lines |= l.trim_start().starts_with("Kernel ");
        if l.trim().is_empty() {
            cur = None;
        }
    }
    // The paste ends inside a GPU's block, before its `-k` lines.
    if let Some(i) = cur.filter(|_| with_k && !k_lines) {
        f.gpus[i].seen_by = vec!["lspci".into()];
    }
    f
}

/// The fields `lspci -v` prints under a device (indented by lspci; some
/// pastes lose the indent).
const FIELDS: &[&str] = &[
    "Subsystem:",
    "Control:",
    "Status:",
    "Latency:",
    "Interrupt:",
    "Region ",
    "Expansion ROM",
    "Capabilities:",
    "Flags:",
    "Memory at",
    "I/O ports",
    "Kernel driver in use:",
    "Kernel modules:",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// legacy-rocm-build#651 pasted `lspci -vv` with its indent lost and
    /// cut inside the GPU's block: the Ethernet device's driver line says
    /// nothing of the GPU's driver. A block that shows its `-k` lines says.
    #[test]
    fn a_block_cut_by_the_paste_end_says_nothing_of_its_driver() {
        let cut = "00:1f.6 Ethernet controller: Intel Corporation Ethernet Connection (2) I219-LM (rev 31)\nSubsystem: Intel Corporation Ethernet Connection (2) I219-LM\nKernel driver in use: e1000e\nKernel modules: e1000e\n\n01:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Polaris 22 [Radeon RX Vega M GL] (rev c0) (prog-if 00 [VGA controller])\nSubsystem: Intel Corporation Device 2073\nLatency: 0, Cache Line Size: 64 bytes\nInterrupt: pin A routed to I\n";
        let g = &parse(cut).gpus;
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].seen_by, ["lspci"], "driver unknown, not unbound");
        let whole = format!("{cut}Kernel driver in use: amdgpu\nKernel modules: amdgpu\n");
        let g = &parse(&whole).gpus;
        assert_eq!(g[0].kernel_driver.as_deref(), Some("amdgpu"));
        assert_eq!(g[0].seen_by, ["lspci-k"]);
        let unbound = format!("{cut}Kernel modules: amdgpu\n");
        let g = &parse(&unbound).gpus;
        assert_eq!(
            (g[0].kernel_driver.as_deref(), g[0].seen_by[0].as_str()),
            (None, "lspci-k")
        );
    }

    /// ROCm/amdgpu#157 pasted the host's `lspci -nnv` with a `..` line
    /// between the device and its driver line; "..." is the usual spelling.
    #[test]
    fn an_elision_line_keeps_the_device_block_open() {
        for dots in ["..", "...", "…"] {
            let t = format!("44:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Vega 20 [Radeon Pro VII/Radeon Instinct MI50 32GB] [1002:66a1] (rev 02)\n{dots}\n        Kernel driver in use: vfio-pci\n");
            let f = parse(&t);
            assert_eq!(f.gpus.len(), 1);
            assert_eq!(
                f.gpus[0].kernel_driver.as_deref(),
                Some("vfio-pci"),
                "{dots}"
            );
        }
        // A new device line still ends the block.
        let t = "03:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [1002:744c]\n04:00.0 Ethernet controller: Intel Corporation I211 [8086:1539]\n\tKernel driver in use: igb\n";
        assert_eq!(parse(t).gpus[0].kernel_driver, None);
    }

    #[test]
    fn amd_accelerator_without_nn_is_named_from_its_device_word() {
        // lspci with a pci.ids older than the device prints "Device 74b5".
        let f = parse(
            "08:00.0 Processing accelerators: Advanced Micro Devices, Inc. [AMD/ATI] Device 74b5\n",
        );
        assert_eq!(f.gpus.len(), 1);
        let g = &f.gpus[0];
        assert_eq!(g.vendor, Vendor::Amd);
        assert_eq!((g.vendor_id, g.device_id), (Some(0x1002), Some(0x74b5)));
        assert!(g.vf, "0x74b5 is the MI300X VF: {g:?}");
    }

    /// lspci's own pci.ids names the chip: a Proxmox host's `lspci -nnk`
    /// (ryzen-gpu-passthrough-proxmox#77) prints "Phoenix3" for 1002:1900,
    /// which greta's pci.ids calls "HawkPoint1"; an Ubuntu Forums paste of
    /// 2014 prints a bare "Kaveri". The printed name is kept; a device
    /// lspci could not name gets greta's.
    #[test]
    fn the_name_lspci_printed_is_kept() {
        let t = "c6:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Phoenix3 [1002:1900] (rev c5)\n";
        let g = &parse(t).gpus[0];
        assert_eq!((g.name.as_str(), g.device_id), ("Phoenix3", Some(0x1900)));
        let t =
            "00:01.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Kaveri\n";
        assert_eq!(parse(t).gpus[0].name, "Kaveri");
        let t = "c6:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Device [1002:1900] (rev c5)\n";
        assert_eq!(
            parse(t).gpus[0].name,
            amd::pci_name(0x1002, 0x1900).unwrap()
        );
    }

    #[test]
    fn other_vendors_accelerators_are_not_gpus() {
        let t = "3b:00.0 Processing accelerators: Intel Corporation Device 0b25 (rev 01)\n\
                 3c:00.0 Processing accelerators: Xilinx Corporation Device 5020\n";
        assert!(parse(t).gpus.is_empty());
    }

    #[test]
    fn unnamed_device_word_needs_four_hex_digits_after_device() {
        assert_eq!(
            unnamed_device_id("[AMD/ATI] Device 74b5 (rev 01)"),
            Some(0x74b5)
        );
        assert_eq!(
            unnamed_device_id("[AMD/ATI] Aqua Vanjaram [Instinct MI300X]"),
            None
        );
        assert_eq!(unnamed_device_id("[AMD/ATI] Device zzzz"), None);
        assert_eq!(unnamed_device_id("Device"), None);
    }
}
