//! The probe summary an install plan is made from and its receipt keeps:
//! the facts a support engineer needs to judge an env (GPUs, driver,
//! ROCm), not the whole probe.
//!
//! Field order is alphabetical on purpose: the summary used to be a JSON
//! object (whose keys serde_json sorts), and `greta-env.json` and
//! `greta install --json` keep its bytes (`tests/it/install_schema.rs`).

use greta_probe::{Facts, Vendor};
use greta_vocab::VkFamily;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProbeSummary {
    /// This machine, as the probe saw it.
    Probed(MachineSummary),
    /// Not probed (a bundle is for another node): only why.
    NotProbed { sources: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineSummary {
    pub gpus: Vec<GpuSummary>,
    /// The AMD GPUs in HIP's order (KFD topology order, before any
    /// selection), where there are several: what the activation script
    /// tells the user each HIP device index is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hip_devices: Vec<HipDeviceSummary>,
    pub hsa_override_gfx_version: Option<String>,
    pub kernel: Option<String>,
    pub kernel_driver_version: Option<String>,
    pub rocm_version: Option<String>,
    pub sources: Vec<String>,
    #[serde(default)]
    pub vulkan_drivers: Vec<VkFamily>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSummary {
    pub gfx: Option<String>,
    pub name: String,
    /// `1002:74b5`: vendor and device id.
    pub pci_id: Option<String>,
    pub vendor: Vendor,
    pub vf: bool,
}

/// One AMD GPU as HIP numbers it (its position in `hip_devices` is ROCr's
/// index), and whether the env's wheels carry its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HipDeviceSummary {
    pub gfx: Option<String>,
    pub integrated: bool,
    pub name: String,
    pub pci_address: Option<String>,
    /// The env's wheels carry kernels for it (set by the plan).
    #[serde(default)]
    pub served: bool,
    pub uuid: Option<String>,
}

impl ProbeSummary {
    pub fn of(f: &Facts) -> ProbeSummary {
        let hip_devices = greta_probe::hip_devices(f)
            .filter(|d| d.from == greta_probe::OrderFrom::Kfd && d.gpus.len() > 1)
            .map(|d| {
                d.gpus
                    .into_iter()
                    .map(|g| HipDeviceSummary {
                        gfx: g.gfx,
                        integrated: g.integrated,
                        name: g.name,
                        pci_address: g.pci_address,
                        served: false,
                        uuid: g.uuid,
                    })
                    .collect()
            })
            .unwrap_or_default();
        ProbeSummary::Probed(MachineSummary {
            gpus: f
                .gpus
                .iter()
                .map(|g| GpuSummary {
                    gfx: g.gfx.clone(),
                    name: g.name.clone(),
                    pci_id: match (g.vendor_id, g.device_id) {
                        (Some(v), Some(d)) => Some(format!("{v:04x}:{d:04x}")),
                        _ => None,
                    },
                    vendor: g.vendor,
                    vf: g.vf,
                })
                .collect(),
            hip_devices,
            hsa_override_gfx_version: f.rocm.hsa_override_gfx_version.clone(),
            kernel: f.kernel_version.clone(),
            kernel_driver_version: f.kernel_driver_version.clone(),
            rocm_version: f.rocm.version.clone(),
            sources: f.sources.clone(),
            vulkan_drivers: f.vulkan.drivers.clone(),
        })
    }

    pub fn not_probed(why: &str) -> ProbeSummary {
        ProbeSummary::NotProbed {
            sources: vec![why.to_string()],
        }
    }

    pub fn sources(&self) -> &[String] {
        match self {
            ProbeSummary::Probed(m) => &m.sources,
            ProbeSummary::NotProbed { sources } => sources,
        }
    }

    pub fn gpus(&self) -> &[GpuSummary] {
        match self {
            ProbeSummary::Probed(m) => &m.gpus,
            ProbeSummary::NotProbed { .. } => &[],
        }
    }

    /// The AMD GPUs in HIP's order (empty for one GPU, or not probed).
    pub fn hip_devices(&self) -> &[HipDeviceSummary] {
        match self {
            ProbeSummary::Probed(m) => &m.hip_devices,
            ProbeSummary::NotProbed { .. } => &[],
        }
    }

    /// Marks the HIP devices whose target `serves` says the env carries.
    pub fn mark_served(&mut self, serves: impl Fn(&str) -> bool) {
        if let ProbeSummary::Probed(m) = self {
            for d in &mut m.hip_devices {
                d.served = d.gfx.as_deref().is_some_and(&serves);
            }
        }
    }

    /// The names of `vendor`'s GPUs, in the probe's order.
    pub fn gpu_names(&self, vendor: Vendor) -> Vec<String> {
        self.gpus()
            .iter()
            .filter(|g| g.vendor == vendor)
            .map(|g| g.name.clone())
            .collect()
    }

    /// AMD gfx targets the probe saw ("gfx942"), sorted, once each.
    pub fn amd_gfx(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .gpus()
            .iter()
            .filter(|g| g.vendor == Vendor::Amd)
            .filter_map(|g| g.gfx.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(vendor: Vendor, gfx: Option<&str>) -> GpuSummary {
        GpuSummary {
            gfx: gfx.map(str::to_string),
            name: format!("{vendor:?} GPU"),
            pci_id: None,
            vendor,
            vf: false,
        }
    }

    fn probed(gpus: Vec<GpuSummary>) -> ProbeSummary {
        ProbeSummary::Probed(MachineSummary {
            gpus,
            hip_devices: vec![],
            hsa_override_gfx_version: None,
            kernel: Some("6.8.0".into()),
            kernel_driver_version: None,
            rocm_version: Some("6.4.1".into()),
            sources: vec!["live".into()],
            vulkan_drivers: vec![],
        })
    }

    #[test]
    fn gfx_targets_are_the_amd_gpus_once_each() {
        let p = probed(vec![
            gpu(Vendor::Amd, Some("gfx942")),
            gpu(Vendor::Nvidia, None),
            gpu(Vendor::Amd, Some("gfx90a")),
            gpu(Vendor::Amd, Some("gfx942")),
            gpu(Vendor::Amd, None),
        ]);
        assert_eq!(p.amd_gfx(), vec!["gfx90a", "gfx942"]);
        assert_eq!(p.gpu_names(Vendor::Nvidia), vec!["Nvidia GPU"]);
        assert!(ProbeSummary::not_probed("x").amd_gfx().is_empty());
    }

    /// Several AMD GPUs on KFD nodes are kept in HIP's order (node order,
    /// not the facts' PCI order); one GPU keeps the summary's old bytes.
    #[test]
    fn hip_devices_are_kept_in_kfd_order_for_several_gpus_only() {
        let g = |node, gfx: &str| greta_probe::Gpu {
            vendor: Vendor::Amd,
            name: format!("GPU {gfx}"),
            gfx: Some(gfx.into()),
            kfd_node: Some(node),
            ..Default::default()
        };
        let mut f = Facts {
            gpus: vec![g(2, "gfx1201"), g(1, "gfx1103")],
            ..Facts::default()
        };
        let mut p = ProbeSummary::of(&f);
        let order: Vec<_> = p
            .hip_devices()
            .iter()
            .map(|d| d.gfx.clone().unwrap())
            .collect();
        assert_eq!(order, ["gfx1103", "gfx1201"]);
        assert!(p.hip_devices()[0].integrated);
        p.mark_served(|x| x == "gfx1201");
        let served: Vec<_> = p.hip_devices().iter().map(|d| d.served).collect();
        assert_eq!(served, [false, true]);
        let back: ProbeSummary = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        f.gpus.pop();
        let one = serde_json::to_string(&ProbeSummary::of(&f)).unwrap();
        assert!(!one.contains("hip_devices"), "{one}");
    }

    /// Both forms read back as themselves: a summary of a machine with no
    /// GPU is not taken for one that was not probed, nor the other way.
    #[test]
    fn both_forms_round_trip_and_stay_apart() {
        for p in [
            probed(vec![]),
            probed(vec![gpu(Vendor::Amd, Some("gfx942"))]),
            ProbeSummary::not_probed("not probed: bundle for another node"),
        ] {
            let text = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<ProbeSummary>(&text).unwrap(), p);
        }
        assert_eq!(
            serde_json::to_string(&ProbeSummary::not_probed("why")).unwrap(),
            r#"{"sources":["why"]}"#
        );
        // Keys in the order the JSON object had (sorted).
        let text = serde_json::to_string(&probed(vec![])).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(text, v.to_string());
    }
}
