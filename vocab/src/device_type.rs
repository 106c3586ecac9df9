//! What kind of device a GPU API reports: `VkPhysicalDeviceType`, which
//! HIP and CUDA devices are described in too.
use serde::{Deserialize, Serialize};

/// The kind of a device, as the runtime reports it (`"discrete_gpu"`) and
/// as the probe reads it from the loader or from a tool's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceType {
    DiscreteGpu,
    IntegratedGpu,
    VirtualGpu,
    Cpu,
    Other,
}

impl DeviceType {
    /// From `VkPhysicalDeviceType`'s value (1 integrated, 2 discrete,
    /// 3 virtual, 4 CPU; 0 and values newer than greta: `Other`).
    pub fn from_vk(raw: i32) -> DeviceType {
        match raw {
            1 => DeviceType::IntegratedGpu,
            2 => DeviceType::DiscreteGpu,
            3 => DeviceType::VirtualGpu,
            4 => DeviceType::Cpu,
            _ => DeviceType::Other,
        }
    }

    /// The API's name without its prefix (`DISCRETE_GPU`), as the probe's
    /// facts carry a live device's type.
    pub fn vk_name(self) -> &'static str {
        match self {
            DeviceType::DiscreteGpu => "DISCRETE_GPU",
            DeviceType::IntegratedGpu => "INTEGRATED_GPU",
            DeviceType::VirtualGpu => "VIRTUAL_GPU",
            DeviceType::Cpu => "CPU",
            DeviceType::Other => "OTHER",
        }
    }

    /// From the text a tool printed or the probe kept:
    /// `PHYSICAL_DEVICE_TYPE_DISCRETE_GPU` (vulkaninfo), `DISCRETE_GPU`,
    /// `discrete_gpu`, `integrated` (`MESA_VK_DEVICE_SELECT=list`). None
    /// when it names no type.
    pub fn from_text(text: &str) -> Option<DeviceType> {
        let t = text.to_ascii_uppercase();
        [
            ("INTEGRATED", DeviceType::IntegratedGpu),
            ("DISCRETE", DeviceType::DiscreteGpu),
            ("VIRTUAL", DeviceType::VirtualGpu),
            ("CPU", DeviceType::Cpu),
            ("OTHER", DeviceType::Other),
        ]
        .into_iter()
        .find(|(word, _)| t.contains(word))
        .map(|(_, d)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_value_its_name_and_every_printed_form_agree() {
        for raw in 0..6 {
            let d = DeviceType::from_vk(raw);
            assert_eq!(DeviceType::from_text(d.vk_name()), Some(d), "{raw}");
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(DeviceType::from_text(&json), Some(d), "{json}");
        }
        assert_eq!(DeviceType::from_vk(2), DeviceType::DiscreteGpu);
        assert_eq!(
            DeviceType::from_text("PHYSICAL_DEVICE_TYPE_CPU"),
            Some(DeviceType::Cpu)
        );
        assert_eq!(
            DeviceType::from_text("integrated"),
            Some(DeviceType::IntegratedGpu)
        );
        assert_eq!(DeviceType::from_text("?"), None);
        assert_eq!(
            serde_json::to_string(&DeviceType::DiscreteGpu).unwrap(),
            "\"discrete_gpu\""
        );
    }
}
