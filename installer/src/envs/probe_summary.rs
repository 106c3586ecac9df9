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

impl ProbeSummary {
    pub fn of(f: &Facts) -> ProbeSummary {
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
