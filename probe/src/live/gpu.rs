//! What a GPU *is*, from its ids: names from the pci.ids database, the gfx
//! target from KFD's `gfx_target_version`, SR-IOV VF and APU recognition.

use crate::facts::Vendor;

pub const VENDOR_AMD: u16 = 0x1002;
pub const VENDOR_NVIDIA: u16 = 0x10de;
pub const VENDOR_INTEL: u16 = 0x8086;

pub fn vendor_of(id: u16) -> Vendor {
    match id {
        VENDOR_AMD => Vendor::Amd,
        VENDOR_NVIDIA => Vendor::Nvidia,
        VENDOR_INTEL => Vendor::Intel,
        _ => Vendor::Other,
    }
}

/// KFD `gfx_target_version` (decimal major*10000 + minor*100 + stepping) to
/// the LLVM target name; minor and stepping print in hex (90010 -> gfx90a).
/// The DRM ip-discovery GC version must not be used instead: it gives
/// gfx943 for a gfx942 MI300X.
pub fn gfx_from_target_version(v: u64) -> Option<String> {
    if v == 0 {
        return None;
    }
    let major = v / 10000;
    let minor = (v / 100) % 100;
    let step = v % 100;
    if major == 0 || minor > 15 || step > 15 {
        return None;
    }
    Some(format!("gfx{major}{minor:x}{step:x}"))
}

/// Name for a PCI device from pci.ids: the bracketed marketing name when the
/// database has one ("Aqua Vanjaram [Instinct MI300X VF]" -> "AMD Instinct
/// MI300X VF"), else the chip name ("AMD Phoenix1").
pub fn pci_name(vendor: u16, device: u16) -> Option<String> {
    let dev = pci_ids::Device::from_vid_pid(vendor, device)?;
    let raw = dev.name();
    let short = match vendor {
        VENDOR_AMD => "AMD".to_string(),
        VENDOR_NVIDIA => "NVIDIA".to_string(),
        VENDOR_INTEL => "Intel".to_string(),
        _ => dev.vendor().name().to_string(),
    };
    let model = match (raw.find('['), raw.rfind(']')) {
        (Some(a), Some(b)) if b > a + 1 => raw[a + 1..b].trim(),
        _ => raw.trim(),
    };
    Some(format!("{short} {model}"))
}

/// Full pci.ids device name (for VF detection and codename matching).
pub fn pci_raw_name(vendor: u16, device: u16) -> Option<&'static str> {
    pci_ids::Device::from_vid_pid(vendor, device).map(|d| d.name())
}

/// Known SR-IOV virtual functions not (yet) spelled "VF" in every pci.ids.
const KNOWN_VF_IDS: &[(u16, u16)] = &[(VENDOR_AMD, 0x74b5), (VENDOR_AMD, 0x74bd)];

/// Whether the ids or the database name say "virtual function".
pub fn is_vf_id(vendor: u16, device: u16) -> bool {
    if KNOWN_VF_IDS.contains(&(vendor, device)) {
        return true;
    }
    pci_raw_name(vendor, device).is_some_and(name_says_vf)
}

pub fn name_says_vf(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains(" vf]") || n.ends_with(" vf") || n.contains(" vf ") || n.contains("virtual function")
}

/// gfx targets that only exist as APUs (GPU sharing system memory).
const APU_GFX: &[&str] = &[
    "gfx801", "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035", "gfx1036", "gfx1037",
    "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
];

/// AMD APU code names as pci.ids spells them.
const APU_CODENAMES: &[&str] = &[
    "phoenix",
    "hawkpoint",
    "hawk point",
    "rembrandt",
    "raphael",
    "renoir",
    "cezanne",
    "lucienne",
    "picasso",
    "raven",
    "barcelo",
    "mendocino",
    "van gogh",
    "vangogh",
    "strix",
    "krackan",
    "granite ridge",
    "carrizo",
    "stoney",
    "kabini",
    "mullins",
    "kaveri",
];

/// MI300A: gfx942 but an APU.
const APU_DEVICE_IDS: &[(u16, u16)] = &[(VENDOR_AMD, 0x74a0)];

pub fn gfx_is_apu(gfx: &str) -> bool {
    APU_GFX.contains(&gfx)
}

pub fn ids_are_apu(vendor: u16, device: u16) -> bool {
    if APU_DEVICE_IDS.contains(&(vendor, device)) {
        return true;
    }
    vendor == VENDOR_AMD
        && pci_raw_name(vendor, device).is_some_and(|n| {
            let n = n.to_ascii_lowercase();
            APU_CODENAMES.iter().any(|c| n.contains(c))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_target_versions_decode_with_hex_minor_and_step() {
        assert_eq!(gfx_from_target_version(90402).as_deref(), Some("gfx942"));
        assert_eq!(gfx_from_target_version(110003).as_deref(), Some("gfx1103"));
        assert_eq!(gfx_from_target_version(90010).as_deref(), Some("gfx90a"));
        assert_eq!(gfx_from_target_version(90012).as_deref(), Some("gfx90c"));
        assert_eq!(gfx_from_target_version(100300).as_deref(), Some("gfx1030"));
        assert_eq!(gfx_from_target_version(110000).as_deref(), Some("gfx1100"));
        assert_eq!(gfx_from_target_version(0), None);
        assert_eq!(gfx_from_target_version(99), None);
    }

    #[test]
    fn pci_ids_name_known_gpus() {
        assert_eq!(
            pci_name(0x1002, 0x74b5).as_deref(),
            Some("AMD Instinct MI300X VF")
        );
        assert_eq!(
            pci_name(0x1002, 0x74a1).as_deref(),
            Some("AMD Instinct MI300X")
        );
        assert!(pci_name(0x1002, 0x15bf).unwrap().contains("Phoenix"));
        assert!(is_vf_id(0x1002, 0x74b5));
        assert!(!is_vf_id(0x1002, 0x74a1));
        assert!(ids_are_apu(0x1002, 0x15bf));
        assert!(!ids_are_apu(0x1002, 0x74a1));
        assert!(gfx_is_apu("gfx1103") && !gfx_is_apu("gfx942"));
        assert_eq!(pci_name(0xffff, 0x0001), None);
    }
}
