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

    /// The short word `greta.smoke/v1` reports print (`discrete`,
    /// `integrated`, `virtual`, `cpu`, `other`).
    pub fn short_name(self) -> &'static str {
        match self {
            DeviceType::DiscreteGpu => "discrete",
            DeviceType::IntegratedGpu => "integrated",
            DeviceType::VirtualGpu => "virtual",
            DeviceType::Cpu => "cpu",
            DeviceType::Other => "other",
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

/// Serde for a [`DeviceType`] written as its [`DeviceType::short_name`]
/// (`#[serde(with = "greta_vocab::device_type_short")]`, the smoke report's
/// form); any printed form reads back.
pub mod short {
    use super::DeviceType;

    pub fn serialize<S: serde::Serializer>(d: &DeviceType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.short_name())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DeviceType, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        DeviceType::from_text(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not a device type")))
    }
}

/// Serde for an `Option<DeviceType>` written as its [`DeviceType::vk_name`]
/// (`DISCRETE_GPU`: how the probe's facts and captures have always carried
/// a device's type); any printed form reads back, and a text that names no
/// type reads as none (captures and pastes are read leniently).
pub mod vk_name {
    use super::DeviceType;

    pub fn serialize<S: serde::Serializer>(
        d: &Option<DeviceType>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(d.vk_name()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DeviceType>, D::Error> {
        let text = <Option<String> as serde::Deserialize>::deserialize(d)?;
        Ok(text.as_deref().and_then(DeviceType::from_text))
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
        for raw in 0..6 {
            let d = DeviceType::from_vk(raw);
            assert_eq!(DeviceType::from_text(d.short_name()), Some(d), "{raw}");
        }
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Report {
            #[serde(with = "short")]
            t: DeviceType,
        }
        let r = Report {
            t: DeviceType::IntegratedGpu,
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(text, r#"{"t":"integrated"}"#);
        assert_eq!(serde_json::from_str::<Report>(&text).unwrap(), r);
        assert!(serde_json::from_str::<Report>(r#"{"t":"gpu?"}"#).is_err());
        assert_eq!(
            serde_json::to_string(&DeviceType::DiscreteGpu).unwrap(),
            "\"discrete_gpu\""
        );
    }

    /// The facts' form: the API's name, every printed form read back, and
    /// a text naming no type read as none.
    #[test]
    fn the_facts_form_is_the_api_name() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Device {
            #[serde(default, with = "vk_name")]
            device_type: Option<DeviceType>,
        }
        let d = Device {
            device_type: Some(DeviceType::IntegratedGpu),
        };
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(text, r#"{"device_type":"INTEGRATED_GPU"}"#);
        assert_eq!(serde_json::from_str::<Device>(&text).unwrap(), d);
        for form in ["PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU", "integrated"] {
            let t = format!(r#"{{"device_type":"{form}"}}"#);
            assert_eq!(serde_json::from_str::<Device>(&t).unwrap(), d, "{form}");
        }
        let none = Device { device_type: None };
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"device_type":null}"#
        );
        for t in [r#"{"device_type":null}"#, r#"{"device_type":"gpu?"}"#, "{}"] {
            assert_eq!(serde_json::from_str::<Device>(t).unwrap(), none, "{t}");
        }
    }
}
