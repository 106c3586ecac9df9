//! What makes two Vulkan devices one GPU: the probe (reading vulkaninfo,
//! logs and the live loader) and the runtime (choosing the device a gate
//! runs on) used to disagree on the UUID's text and on the rule. Both now
//! speak [`DeviceUuid`] and decide with [`same_gpu`].
use std::fmt;
use std::str::FromStr;

/// `VkPhysicalDeviceIDProperties::deviceUUID`. Printed in the 8-4-4-4-12
/// form vulkaninfo and nvidia-smi print (so a user can match it by eye);
/// read from that form or from 32 bare hex digits (greta's smoke results
/// and tuning caches before 2026-11-23).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceUuid(pub [u8; 16]);

impl DeviceUuid {
    /// All zeros: what a driver that has no UUID reports; it names no GPU.
    pub fn is_nil(&self) -> bool {
        self.0 == [0; 16]
    }

    /// 32 lowercase hex digits, no dashes (file names).
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{shown} is not a device UUID (expected 32 hex digits, dashes allowed)")]
pub struct DeviceUuidError {
    shown: String,
}

impl FromStr for DeviceUuid {
    type Err = DeviceUuidError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bare: String = s.trim().chars().filter(|&c| c != '-').collect();
        let mut out = [0u8; 16];
        hex::decode_to_slice(&bare, &mut out).map_err(|_| DeviceUuidError {
            shown: format!("{:?}", s.chars().take(80).collect::<String>()),
        })?;
        Ok(DeviceUuid(out))
    }
}

impl fmt::Display for DeviceUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.hex();
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

impl fmt::Debug for DeviceUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceUuid({self})")
    }
}

serde_as_text!(DeviceUuid);

/// What is known of one device's identity. `bare_name` is the device name
/// without a driver's decoration (RADV's " (RADV NAVI31)", Dozen's
/// "Microsoft Direct3D12 (...)"), lowercased; the caller strips it, since
/// only the caller knows where its text came from.
#[derive(Clone, Debug, Default)]
pub struct GpuIdentity<'a> {
    pub uuid: Option<DeviceUuid>,
    /// PCI address (`0000:c3:00.0`) where the source shows one.
    pub pci: Option<&'a str>,
    pub bare_name: &'a str,
    /// The driver's family: a name counts only across two families.
    pub driver: crate::VkFamily,
}

/// Why two devices are one GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SameGpu {
    /// The same deviceUUID (not the nil one).
    Uuid(DeviceUuid),
    /// The same PCI address.
    Pci(String),
    /// Neither has a UUID or PCI address (a log, a paste), they come from
    /// different drivers, and their bare names agree (six characters at
    /// least: "AMD" alone names no GPU).
    Name,
}

/// The one rule: a shared non-nil deviceUUID, else a shared PCI address,
/// else (nothing better known on either side) one bare name under two
/// drivers. Two devices of one driver with one name are two cards.
pub fn same_gpu(a: &GpuIdentity, b: &GpuIdentity) -> Option<SameGpu> {
    match (a.uuid, b.uuid) {
        (Some(x), Some(y)) if !x.is_nil() && x == y => return Some(SameGpu::Uuid(x)),
        _ => {}
    }
    if let (Some(x), Some(y)) = (a.pci, b.pci) {
        if x == y {
            return Some(SameGpu::Pci(x.to_string()));
        }
    }
    let unknown = |g: &GpuIdentity| g.uuid.is_none() && g.pci.is_none();
    (unknown(a)
        && unknown(b)
        && a.driver != b.driver
        && a.bare_name.len() >= 6
        && a.bare_name == b.bare_name)
        .then_some(SameGpu::Name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_text_forms_read_and_the_vulkaninfo_form_is_written() {
        let a: DeviceUuid = "6d657361-3233-2e33-2e36-000000000000".parse().unwrap();
        let b: DeviceUuid = "6d6573613233 2e332e36000000000000"
            .replace(' ', "")
            .parse()
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "6d657361-3233-2e33-2e36-000000000000");
        assert_eq!(a.hex(), "6d65736132332e332e36000000000000");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            "\"6d657361-3233-2e33-2e36-000000000000\""
        );
        assert!("6d65".parse::<DeviceUuid>().is_err());
        assert!("not a uuid at all, not at all!"
            .parse::<DeviceUuid>()
            .is_err());
    }

    fn id<'a>(uuid: Option<&str>, name: &'a str, driver: &str) -> GpuIdentity<'a> {
        let driver = serde_json::from_str(&format!("\"{driver}\"")).unwrap();
        GpuIdentity {
            uuid: uuid.map(|u| u.parse().unwrap()),
            pci: None,
            bare_name: name,
            driver,
        }
    }

    #[test]
    fn the_rule() {
        let u = "00112233-4455-6677-8899-aabbccddeeff";
        let nil = "00000000-0000-0000-0000-000000000000";
        // One UUID: one GPU, whatever the drivers or names.
        assert!(matches!(
            same_gpu(&id(Some(u), "a", "radv"), &id(Some(u), "b", "radv")),
            Some(SameGpu::Uuid(_))
        ));
        // The nil UUID names nothing.
        assert_eq!(
            same_gpu(&id(Some(nil), "x", "radv"), &id(Some(nil), "x", "nvidia")),
            None
        );
        // Names count only when nothing better is known, and across drivers.
        let n = "amd radeon rx 7900 xtx";
        assert_eq!(
            same_gpu(&id(None, n, "radv"), &id(None, n, "amdvlk")),
            Some(SameGpu::Name)
        );
        assert_eq!(same_gpu(&id(None, n, "radv"), &id(None, n, "radv")), None);
        assert_eq!(
            same_gpu(&id(Some(u), n, "radv"), &id(None, n, "amdvlk")),
            None
        );
        assert_eq!(
            same_gpu(&id(None, "amd", "radv"), &id(None, "amd", "amdvlk")),
            None
        );
        // A shared PCI address.
        let mut a = id(None, "a", "radv");
        let mut b = id(None, "b", "amdvlk");
        a.pci = Some("0000:c3:00.0");
        b.pci = Some("0000:c3:00.0");
        assert_eq!(same_gpu(&a, &b), Some(SameGpu::Pci("0000:c3:00.0".into())));
    }
}
