//! The machine as profile selection sees it: the probe's facts summarised
//! into a [`greta_lockset::Host`] (the lock set reads no machine itself).

use greta_lockset::{Amd, Host, Kfd, Nvidia, RocmRelease};
use greta_probe::{Facts, Vendor};

/// What `greta install` and `greta lock select` choose a profile from.
pub fn of(f: &Facts) -> Host {
    Host {
        nvidia: f
            .gpus
            .iter()
            .find(|g| g.vendor == Vendor::Nvidia)
            .map(|g| Nvidia {
                name: g.name.clone(),
                driver: nvidia_driver(f),
            }),
        amd: amd(f),
        other_gpus: f
            .gpus
            .iter()
            .filter(|g| !matches!(g.vendor, Vendor::Cpu | Vendor::Nvidia | Vendor::Amd))
            .map(|g| format!("{} ({:?})", g.name, g.vendor).to_lowercase())
            .collect(),
    }
}

/// The AMD side: every target the GPUs and ROCm's agents report, the KFD,
/// the host ROCm release and where it is, and HIP's device order.
fn amd(f: &Facts) -> Option<Amd> {
    let amd: Vec<_> = f.gpus.iter().filter(|g| g.vendor == Vendor::Amd).collect();
    if amd.is_empty() && f.rocm.agent_gfx.is_empty() {
        return None;
    }
    let mut gfx: Vec<String> = amd.iter().filter_map(|g| g.gfx.clone()).collect();
    gfx.extend(f.rocm.agent_gfx.iter().cloned());
    gfx.iter_mut().for_each(|g| *g = g.to_ascii_lowercase());
    gfx.sort();
    gfx.dedup();
    let mut names: Vec<String> = amd
        .iter()
        .map(|g| g.name.clone())
        .filter(|n| !n.is_empty())
        .collect();
    names.dedup();
    let node = f.device_nodes.iter().find(|n| n.path == "/dev/kfd");
    let seen_by_kfd = amd
        .iter()
        .any(|g| g.seen_by.iter().any(|s| s == "kfd" || s == "rocminfo"));
    let kfd = match node {
        Some(n) if n.exists => Kfd::Present("/dev/kfd present".into()),
        Some(_) => Kfd::Missing("/dev/kfd does not exist".into()),
        None if seen_by_kfd || f.rocm.runtime_sees_gpu == Some(true) => {
            Kfd::Present("the KFD/HSA runtime reports the GPU".into())
        }
        None => Kfd::Unknown,
    };
    let rocm = f.rocm.version.as_deref().map(|v| {
        let active = f.rocm.installs.iter().find(|i| i.active);
        let at = match (active, &f.rocm.active_reason) {
            (Some(i), Some(r)) => format!("ROCm {v} at {} ({r})", i.path),
            (Some(i), None) => format!("ROCm {v} at {}", i.path),
            (None, Some(r)) => format!("ROCm {v} ({r})"),
            (None, None) => format!("ROCm {v}"),
        };
        RocmRelease {
            version: v.to_string(),
            at,
        }
    });
    let driver_version = f
        .drivers
        .iter()
        .find(|d| d.name == "amdgpu")
        .and_then(|d| d.version.clone())
        .or_else(|| f.kernel_driver_version.clone());
    Some(Amd {
        gfx,
        names,
        kfd,
        rocm,
        hsa_override: f.rocm.hsa_override_gfx_version.clone(),
        driver_version,
        hip_order: greta_probe::hip_devices(f)
            .filter(|h| h.from == greta_probe::OrderFrom::Kfd)
            .map(|h| {
                h.gpus
                    .into_iter()
                    .map(|g| g.gfx.map(|x| x.to_ascii_lowercase()))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// The NVIDIA driver's version: the module's, else the kernel driver
/// version where the NVIDIA driver is the one bound (or no amdgpu is).
fn nvidia_driver(f: &Facts) -> Option<String> {
    f.drivers
        .iter()
        .find(|d| d.name == "nvidia")
        .and_then(|d| d.version.clone())
        .or_else(|| {
            let bound_nv = f.drivers.iter().any(|d| d.name == "nvidia" && d.loaded);
            if bound_nv || !f.drivers.iter().any(|d| d.name == "amdgpu" && d.loaded) {
                f.kernel_driver_version.clone()
            } else {
                None
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use greta_probe::{DeviceNode, Gpu, KernelDriver};

    fn gpu(vendor: Vendor, name: &str, gfx: Option<&str>) -> Gpu {
        Gpu {
            vendor,
            name: name.into(),
            gfx: gfx.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn an_nvidia_gpu_carries_its_driver_version() {
        let f = Facts {
            gpus: vec![gpu(Vendor::Nvidia, "NVIDIA H200", None)],
            drivers: vec![KernelDriver {
                name: "nvidia".into(),
                version: Some("580.95".into()),
                loaded: true,
            }],
            ..Default::default()
        };
        let h = of(&f);
        assert_eq!(
            h.nvidia,
            Some(Nvidia {
                name: "NVIDIA H200".into(),
                driver: Some("580.95".into())
            })
        );
        assert!(h.amd.is_none());
    }

    #[test]
    fn amd_targets_are_lower_case_sorted_and_once_with_the_kfd_state() {
        let f = Facts {
            gpus: vec![
                gpu(Vendor::Amd, "Radeon 780M", Some("GFX1103")),
                gpu(Vendor::Amd, "Radeon RX 7900 XTX", Some("gfx1100")),
            ],
            device_nodes: vec![DeviceNode {
                path: "/dev/kfd".into(),
                exists: false,
                ..Default::default()
            }],
            ..Default::default()
        };
        let a = of(&f).amd.unwrap();
        assert_eq!(a.gfx, ["gfx1100", "gfx1103"]);
        assert_eq!(a.names, ["Radeon 780M", "Radeon RX 7900 XTX"]);
        assert_eq!(a.kfd, Kfd::Missing("/dev/kfd does not exist".into()));
        assert!(a.rocm.is_none());
    }

    #[test]
    fn other_gpus_are_named_for_the_cpu_reason() {
        let f = Facts {
            gpus: vec![gpu(Vendor::Intel, "Arc A770", None)],
            ..Default::default()
        };
        let h = of(&f);
        assert_eq!(h.other_gpus, ["arc a770 (intel)"]);
        assert!(h.nvidia.is_none() && h.amd.is_none());
    }
}
