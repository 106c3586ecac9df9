//! Vulkan drivers, by the `VkDriverId` they report (the probe reads it from
//! vulkaninfo and ICD manifests, the runtime from the device itself), and
//! the family doctor's rules reason about ([`VkFamily`]), which an ICD's
//! file name can tell where no driver id is known.
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A driver family: what a rule needs to know of a Vulkan driver ("RADV
/// is hidden by AMDVLK", "only lavapipe"), and all an ICD manifest or a
/// log line can say. A known [`VkDriver`] has exactly one
/// ([`VkDriver::family`]); NVK, ANV, Dozen and the rest are `Other`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum VkFamily {
    Radv,
    Amdvlk,
    AmdgpuPro,
    Lavapipe,
    Nvidia,
    #[default]
    Other,
}

impl VkFamily {
    /// As doctor's JSON carries it (`radv`, `amdgpu-pro`).
    pub fn name(self) -> &'static str {
        match self {
            VkFamily::Radv => "radv",
            VkFamily::Amdvlk => "amdvlk",
            VkFamily::AmdgpuPro => "amdgpu-pro",
            VkFamily::Lavapipe => "lavapipe",
            VkFamily::Nvidia => "nvidia",
            VkFamily::Other => "other",
        }
    }

    /// As a user knows it (`RADV`, `AMDGPU-PRO`), for messages.
    pub fn label(self) -> &'static str {
        match self {
            VkFamily::Radv => "RADV",
            VkFamily::Amdvlk => "AMDVLK",
            VkFamily::AmdgpuPro => "AMDGPU-PRO",
            VkFamily::Lavapipe => "lavapipe",
            VkFamily::Nvidia => "NVIDIA",
            VkFamily::Other => "other",
        }
    }
}

/// A Vulkan driver as `VkPhysicalDeviceDriverProperties::driverID` names
/// it. Serialised as that name (`MESA_RADV`, `MESA_LLVMPIPE`, ...), which
/// is what greta's JSON has always carried; ids greta has no use for are
/// kept by name in `Other`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VkDriver {
    /// Mesa's RADV: greta's primary AMD driver.
    Radv,
    /// AMD's open-source AMDVLK.
    Amdvlk,
    /// AMD's proprietary driver (AMDGPU-PRO).
    AmdProprietary,
    /// Mesa's lavapipe (llvmpipe): Vulkan on the CPU.
    Lavapipe,
    NvidiaProprietary,
    /// Mesa's NVK (NVIDIA, open source).
    Nvk,
    /// Intel's ANV.
    IntelAnv,
    /// Mesa's Dozen (Vulkan over D3D12, WSL).
    Dozen,
    Other(String),
}

const NAMES: &[(&str, VkDriver)] = &[
    ("MESA_RADV", VkDriver::Radv),
    ("AMD_OPEN_SOURCE", VkDriver::Amdvlk),
    ("AMD_PROPRIETARY", VkDriver::AmdProprietary),
    ("MESA_LLVMPIPE", VkDriver::Lavapipe),
    ("NVIDIA_PROPRIETARY", VkDriver::NvidiaProprietary),
    ("MESA_NVK", VkDriver::Nvk),
    ("INTEL_OPEN_SOURCE_MESA", VkDriver::IntelAnv),
    ("MESA_DOZEN", VkDriver::Dozen),
];

impl VkDriver {
    /// From the driver id's name, as the API prints it; vulkaninfo's
    /// `DRIVER_ID_` prefix is accepted.
    pub fn from_id_name(name: &str) -> VkDriver {
        let name = name.trim();
        let bare = name.strip_prefix("DRIVER_ID_").unwrap_or(name);
        NAMES
            .iter()
            .find(|(n, _)| *n == bare)
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| VkDriver::Other(bare.to_string()))
    }

    pub fn id_name(&self) -> &str {
        match self {
            VkDriver::Other(s) => s,
            known => NAMES
                .iter()
                .find(|(_, d)| d == known)
                .map(|(n, _)| *n)
                .unwrap_or("UNKNOWN"),
        }
    }

    /// The family a rule reasons about.
    pub fn family(&self) -> VkFamily {
        match self {
            VkDriver::Radv => VkFamily::Radv,
            VkDriver::Amdvlk => VkFamily::Amdvlk,
            VkDriver::AmdProprietary => VkFamily::AmdgpuPro,
            VkDriver::Lavapipe => VkFamily::Lavapipe,
            VkDriver::NvidiaProprietary => VkFamily::Nvidia,
            VkDriver::Nvk | VkDriver::IntelAnv | VkDriver::Dozen | VkDriver::Other(_) => {
                VkFamily::Other
            }
        }
    }

    /// A CPU implementation: never the GPU a user meant.
    pub fn is_cpu(&self) -> bool {
        matches!(self, VkDriver::Lavapipe)
    }

    /// Rank when two drivers expose one GPU: RADV first (greta's primary
    /// target), then the vendors' own drivers, then the rest.
    pub fn preference(&self) -> u32 {
        match self {
            VkDriver::Radv => 0,
            VkDriver::NvidiaProprietary => 1,
            VkDriver::Amdvlk | VkDriver::AmdProprietary => 2,
            _ => 3,
        }
    }
}

impl fmt::Display for VkDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id_name())
    }
}

impl Serialize for VkDriver {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id_name())
    }
}

impl<'de> Deserialize<'de> for VkDriver {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(VkDriver::from_id_name(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_kept() {
        for (name, _) in NAMES {
            let d = VkDriver::from_id_name(name);
            assert!(!matches!(d, VkDriver::Other(_)), "{name}");
            assert_eq!(d.id_name(), *name);
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{name}\""));
        }
        assert_eq!(
            VkDriver::from_id_name("DRIVER_ID_MESA_RADV"),
            VkDriver::Radv
        );
        let odd = VkDriver::from_id_name("MOLTENVK");
        assert_eq!(odd, VkDriver::Other("MOLTENVK".into()));
        assert_eq!(odd.to_string(), "MOLTENVK");
        assert!(VkDriver::Lavapipe.is_cpu() && !VkDriver::Radv.is_cpu());
        assert!(VkDriver::Radv.preference() < VkDriver::Amdvlk.preference());
    }

    #[test]
    fn each_driver_has_one_family_and_families_keep_their_names() {
        for (name, d) in NAMES {
            let f = d.family();
            assert_eq!(
                serde_json::to_string(&f).unwrap(),
                format!("\"{}\"", f.name())
            );
            let want = match *name {
                "MESA_RADV" => "radv",
                "AMD_OPEN_SOURCE" => "amdvlk",
                "AMD_PROPRIETARY" => "amdgpu-pro",
                "MESA_LLVMPIPE" => "lavapipe",
                "NVIDIA_PROPRIETARY" => "nvidia",
                _ => "other",
            };
            assert_eq!(f.name(), want, "{name}");
        }
        assert_eq!(
            VkDriver::from_id_name("UNKNOWN_99").family(),
            VkFamily::Other
        );
        assert_eq!(VkFamily::AmdgpuPro.label(), "AMDGPU-PRO");
    }
}
