//! What a GPU *is*, from its ids: display names from the pci.ids database,
//! SR-IOV VF and APU recognition by id. The id-independent AMD knowledge
//! (vendor ids, gfx target decoding, which targets are APUs, raw pci.ids
//! names) lives once in [`crate::from::amd`] and serves live and `--from` alike.

use crate::facts::Vendor;
use crate::from::amd;

pub fn vendor_of(id: u16) -> Vendor {
    match id {
        amd::AMD => Vendor::Amd,
        amd::NVIDIA => Vendor::Nvidia,
        amd::INTEL => Vendor::Intel,
        _ => Vendor::Other,
    }
}

/// Name for a PCI device from pci.ids: the bracketed marketing name when the
/// database has one ("Aqua Vanjaram [Instinct MI300X VF]" -> "AMD Instinct
/// MI300X VF"), else the chip name ("AMD Phoenix1").
pub fn pci_name(vendor: u16, device: u16) -> Option<String> {
    let dev = pci_ids::Device::from_vid_pid(vendor, device)?;
    let raw = dev.name();
    let short = match vendor {
        amd::AMD => "AMD".to_string(),
        amd::NVIDIA => "NVIDIA".to_string(),
        amd::INTEL => "Intel".to_string(),
        _ => dev.vendor().name().to_string(),
    };
    let model = match (raw.find('['), raw.rfind(']')) {
        (Some(a), Some(b)) if b > a + 1 => raw[a + 1..b].trim(),
        _ => raw.trim(),
    };
    Some(format!("{short} {model}"))
}

/// Known SR-IOV virtual functions not (yet) spelled "VF" in every pci.ids.
const KNOWN_VF_IDS: &[(u16, u16)] = &[(amd::AMD, 0x74b5), (amd::AMD, 0x74bd)];

/// Whether the ids or the database name say "virtual function".
pub fn is_vf_id(vendor: u16, device: u16) -> bool {
    if KNOWN_VF_IDS.contains(&(vendor, device)) {
        return true;
    }
    amd::pci_name(vendor, device).is_some_and(name_says_vf)
}

pub fn name_says_vf(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains(" vf]") || n.ends_with(" vf") || n.contains(" vf ") || n.contains("virtual function")
}

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
const APU_DEVICE_IDS: &[(u16, u16)] = &[(amd::AMD, 0x74a0)];

pub fn ids_are_apu(vendor: u16, device: u16) -> bool {
    if APU_DEVICE_IDS.contains(&(vendor, device)) {
        return true;
    }
    vendor == amd::AMD
        && amd::pci_name(vendor, device).is_some_and(|n| {
            let n = n.to_ascii_lowercase();
            APU_CODENAMES.iter().any(|c| n.contains(c))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(pci_name(0xffff, 0x0001), None);
    }
}
