//! `lshw -C display` (also `-class display`, `-c video`): one `*-display`
//! block per display device, with its product, vendor, `pci@` bus address
//! and `driver=` of the bound kernel driver. lshw translates its field
//! names (German `Produkt:`/`Hersteller:`/`Bus-Informationen:`), so fields
//! are found by what they hold, never by their name: the bus field holds
//! `pci@`, the configuration `driver=`, the vendor a GPU vendor's name, and
//! the product is the field just before the vendor (lshw's fixed order).

use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor};

/// A block header: "  *-display", "  *-display:0", "*-display UNCLAIMED".
fn display_header(l: &str) -> bool {
    l.trim_start().starts_with("*-display")
}

/// The `seen_by` of a block that shows the bound driver (or that none is).
pub const SHOWS_DRIVER: &str = "lshw-driver";

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "lshw",
    label: "lshw -C display",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["*-display"]],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(display_header) && text.contains("pci@")
}

/// The value of a `key: value` field line.
fn value(l: &str) -> &str {
    l.split_once(':').map_or("", |(_, v)| v.trim())
}

/// The vendor a vendor field names.
fn vendor_of(v: &str) -> Option<Vendor> {
    if v.contains("Advanced Micro Devices") || v.contains("[AMD/ATI]") {
        Some(Vendor::Amd)
    } else if v.contains("NVIDIA") {
        Some(Vendor::Nvidia)
    } else if v.starts_with("Intel Corporation") {
        Some(Vendor::Intel)
    } else {
        None
    }
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let lines: Vec<&str> = lines_of(text).collect();
    let mut i = 0;
    while i < lines.len() {
        if !display_header(lines[i]) {
            i += 1;
            continue;
        }
        // The block: its field lines, up to the next `*-` header.
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].trim_start().starts_with("*-") {
            end += 1;
        }
        let block = &lines[start..end];
        // lshw marks a device no driver claimed UNCLAIMED on its header.
        let unclaimed = lines[start - 1].contains("UNCLAIMED");
        i = end;
        let Some(vi) = block.iter().position(|l| vendor_of(value(l)).is_some()) else {
            continue;
        };
        let vendor = vendor_of(value(block[vi])).unwrap_or(Vendor::Other);
        let product = vi
            .checked_sub(1)
            .map(|p| value(block[p]).to_string())
            .unwrap_or_default();
        let address = block.iter().find_map(|l| {
            let p = l.find("pci@")? + 4;
            let a = l[p..].split_whitespace().next()?;
            (a.len() == 12).then(|| a.to_ascii_lowercase())
        });
        // A BMC's VGA device (ASPEED, Matrox) never gets here: its vendor
        // is none of the GPU vendors above.
        let driver = block.iter().find_map(|l| {
            let p = l.find("driver=")? + 7;
            l[p..].split_whitespace().next().map(String::from)
        });
        super::limits::push_gpu(
            &mut f,
            Gpu {
                vendor,
                vendor_id: vendor.pci_id(),
                name: product,
                pci_address: address,
                // The bound driver is known where lshw shows it: `driver=`, or
                // UNCLAIMED (none). A claimed block cut before its
                // configuration line shows a GPU, not its driver.
                seen_by: vec![if driver.is_some() || unclaimed {
                    SHOWS_DRIVER.into()
                } else {
                    "lshw".into()
                }],
                kernel_driver: driver,
                ..Gpu::default()
            },
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn german_and_english_field_names_give_the_same_gpu() {
        // ROCm legacy#538 (German) and the English names lshw prints by default.
        let de = "  *-display                 \n       Beschreibung: VGA compatible controller\n       Produkt: Curacao XT / Trinidad XT [Radeon R7 370 / R9 270X/370X]\n       Hersteller: Advanced Micro Devices, Inc. [AMD/ATI]\n       Physische ID: 0\n       Bus-Informationen: pci@0000:01:00.0\n       Konfiguration: driver=amdgpu latency=0\n";
        let en = "  *-display\n       description: VGA compatible controller\n       product: Curacao XT / Trinidad XT [Radeon R7 370 / R9 270X/370X]\n       vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n       physical id: 0\n       bus info: pci@0000:01:00.0\n       configuration: driver=amdgpu latency=0\n";
        for t in [de, en] {
            assert!(recognise(t));
            let f = parse(t);
            assert_eq!(f.gpus.len(), 1, "{t}");
            let g = &f.gpus[0];
            assert_eq!(g.vendor, Vendor::Amd);
            assert!(g.name.contains("R9 270X"), "{}", g.name);
            assert_eq!(g.pci_address.as_deref(), Some("0000:01:00.0"));
            assert_eq!(g.kernel_driver.as_deref(), Some("amdgpu"));
        }
    }

    #[test]
    fn a_virtual_display_adapter_is_no_gpu_and_blocks_do_not_bleed() {
        // ROCm legacy#1626: a VMware guest's SVGA adapter.
        let vm = "*-display                 \n       description: VGA compatible controller\n       product: SVGA II Adapter\n       vendor: VMware\n       bus info: pci@0000:00:0f.0\n       configuration: driver=vmwgfx latency=64\n";
        assert!(parse(vm).gpus.is_empty());
        // Two blocks: each keeps its own driver (the second has none).
        let two = "  *-display:0\n       product: GA102 [GeForce RTX 3090]\n       vendor: NVIDIA Corporation\n       bus info: pci@0000:01:00.0\n       configuration: driver=nvidia latency=0\n  *-display:1 UNCLAIMED\n       product: Navi 31 [Radeon RX 7900 XT/7900 XTX]\n       vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n       bus info: pci@0000:03:00.0\n";
        let f = parse(two);
        assert_eq!(f.gpus.len(), 2);
        assert_eq!(f.gpus[0].kernel_driver.as_deref(), Some("nvidia"));
        assert_eq!(f.gpus[1].vendor, Vendor::Amd);
        assert_eq!(f.gpus[1].kernel_driver, None);
        assert!(!recognise("*-display but no bus\n"));
    }

    /// UNCLAIMED: no driver bound, which lshw states (ROCm/amdgpu#41, an
    /// OpenStack guest; an Ubuntu Forums post of 2014-12-02, a Kaveri APU
    /// with no driver, is the same spelling). A claimed block cut before
    /// its configuration line does not say which driver is bound.
    #[test]
    fn unclaimed_is_a_gpu_with_no_driver() {
        let kaveri = "  *-display UNCLAIMED     \n       description: VGA compatible controller\n       product: Kaveri\n       vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n       physical id: 1\n       bus info: pci@0000:00:01.0\n       version: 00\n       configuration: latency=0\n";
        let g = &parse(kaveri).gpus[0];
        assert_eq!(
            (g.kernel_driver.as_deref(), g.seen_by.as_slice()),
            (None, &[SHOWS_DRIVER.to_string()][..])
        );
        let t = "   *-display:1 UNCLAIMED\n         description: VGA compatible controller\n         product: Amethyst XT [Radeon R9 M295X Mac Edition / R9 380X]\n         vendor: Advanced Micro Devices, Inc. [AMD/ATI]\n         physical id: 5\n         bus info: pci@0000:00:05.0\n";
        let g = &parse(t).gpus[0];
        assert_eq!(g.kernel_driver, None);
        assert_eq!(g.seen_by, [SHOWS_DRIVER]);
        let cut = t.replace(" UNCLAIMED", "");
        assert_eq!(parse(&cut).gpus[0].seen_by, ["lshw"]);
        let bound = format!("{cut}         configuration: driver=amdgpu latency=0\n");
        assert_eq!(parse(&bound).gpus[0].seen_by, [SHOWS_DRIVER]);
    }
}
