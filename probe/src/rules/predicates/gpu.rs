//! GPUs, their kernel driver and the machine they sit in.

use super::{about, describe, gpu_lines, when, Predicate, View};
use crate::facts::Gpu;

pub struct NoGpuKnown;
impl Predicate for NoGpuKnown {
    about!("no_gpu_known", "no GPU at all is known", ["gpus"]);
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(v.gpus.is_empty(), || {
            let sw: Vec<String> = v
                .facts
                .gpus
                .iter()
                .filter(|g| g.vendor == crate::facts::Vendor::Cpu)
                .map(|g| format!("only a software device: {}", g.name))
                .collect();
            if sw.is_empty() {
                vec!["no GPU in any source".into()]
            } else {
                sw
            }
        })
    }
}

#[cfg(test)]
#[test]
fn no_gpu_known() {
    use super::tests::*;
    use crate::facts::Vendor;
    let lavapipe = with_gpus(vec![gpu(Vendor::Cpu, "llvmpipe")]);
    assert_eq!(
        eval(&NoGpuKnown, &lavapipe).unwrap(),
        ["only a software device: llvmpipe"]
    );
    assert!(!holds(
        &NoGpuKnown,
        &with_gpus(vec![gpu(Vendor::Intel, "Arc")])
    ));
}

/// "some GPU of a kind is known", evidence one line per such GPU: the one
/// question behind `amd_gpu_present`, `gpu_vf` and `gfx94x_present`.
pub struct GpusOfKind {
    name: &'static str,
    meaning: &'static str,
    /// The GPUs of the kind.
    pick: for<'a, 'f> fn(&'a View<'f>) -> Vec<&'f Gpu>,
}

impl Predicate for GpusOfKind {
    fn name(&self) -> &'static str {
        self.name
    }
    fn meaning(&self) -> &'static str {
        self.meaning
    }
    fn reads(&self) -> &'static [&'static str] {
        &["gpus"]
    }
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let gpus = (self.pick)(v);
        when(!gpus.is_empty(), || gpu_lines(&gpus))
    }
}

pub const AMD_GPU_PRESENT: GpusOfKind = GpusOfKind {
    name: "amd_gpu_present",
    meaning: "an AMD GPU is known",
    pick: |v| v.amd.clone(),
};

#[cfg(test)]
#[test]
fn amd_gpu_present() {
    use super::tests::*;
    use crate::facts::Vendor;
    let f = with_gpus(vec![gpu(Vendor::Amd, "MI300X")]);
    assert_eq!(eval(&AMD_GPU_PRESENT, &f).unwrap(), ["GPU MI300X"]);
    assert!(!holds(
        &AMD_GPU_PRESENT,
        &with_gpus(vec![gpu(Vendor::Nvidia, "H100")])
    ));
}

/// An NVIDIA GPU and no AMD one: the errors CUDA and HIP share ("no kernel
/// image is available", "invalid device function", ggml's "no device
/// code") are then about the CUDA build, never ROCm (a ROCm torch prints
/// "CUDA error:" too, so the spelling alone cannot tell). A loaded NVIDIA
/// driver stands in for the GPU when a paste shows nvidia-smi's header but
/// not its GPU rows, as long as nothing in the text is AMD's.
pub struct NvidiaGpuNoAmd;
impl Predicate for NvidiaGpuNoAmd {
    about!(
        "nvidia_gpu_no_amd",
        "an NVIDIA GPU (or a loaded NVIDIA driver) is known and no AMD GPU, driver or ROCm is",
        ["gpus", "drivers", "rocm"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        if !v.amd.is_empty() {
            return None;
        }
        if !v.nvidia.is_empty() {
            return Some(gpu_lines(&v.nvidia));
        }
        let f = v.facts;
        let amd_stack = f.rocm.version.is_some() || f.drivers.iter().any(|d| d.name == "amdgpu");
        let nvidia = f.drivers.iter().find(|d| d.name == "nvidia" && d.loaded)?;
        when(!amd_stack, || {
            vec![match &nvidia.version {
                Some(ver) => format!("NVIDIA driver {ver} loaded"),
                None => "NVIDIA driver loaded".to_string(),
            }]
        })
    }
}

#[cfg(test)]
#[test]
fn nvidia_gpu_no_amd() {
    use super::tests::*;
    use crate::facts::Vendor;
    let f = with_gpus(vec![gpu(Vendor::Nvidia, "RTX 5090")]);
    assert_eq!(eval(&NvidiaGpuNoAmd, &f).unwrap(), ["GPU RTX 5090"]);
    // An AMD GPU beside it: the shared errors may be ROCm's.
    let both = with_gpus(vec![
        gpu(Vendor::Nvidia, "RTX 4070"),
        gpu(Vendor::Amd, "Radeon 780M"),
    ]);
    assert!(!holds(&NvidiaGpuNoAmd, &both));
    assert!(!holds(&NvidiaGpuNoAmd, &with_gpus(vec![])));
}

/// An nvidia-smi header whose GPU rows were not pasted (vllm-project/vllm
/// #18995: "NVIDIA-SMI 570.133.20 Driver Version: 570.133.20" and nothing
/// below) still says the machine runs the NVIDIA driver; with no AMD GPU,
/// driver or ROCm in the text the shared CUDA/HIP errors are CUDA's.
#[cfg(test)]
#[test]
fn nvidia_driver_without_gpu_rows_is_nvidia_context() {
    use super::tests::*;
    use crate::facts::{KernelDriver, Vendor};
    let driver = |name: &str, v: &str| KernelDriver {
        name: name.into(),
        loaded: true,
        version: Some(v.into()),
    };
    let mut f = with_gpus(vec![]);
    f.drivers.push(driver("nvidia", "570.133.20"));
    assert_eq!(
        eval(&NvidiaGpuNoAmd, &f).unwrap(),
        ["NVIDIA driver 570.133.20 loaded"]
    );
    // Any AMD evidence (an amdgpu driver, a ROCm version, an AMD GPU) keeps
    // the errors ambiguous.
    let mut amd_driver = f.clone();
    amd_driver.drivers.push(driver("amdgpu", "6.8.5"));
    assert!(!holds(&NvidiaGpuNoAmd, &amd_driver));
    let mut rocm = f.clone();
    rocm.rocm.version = Some("6.4.1".into());
    assert!(!holds(&NvidiaGpuNoAmd, &rocm));
    let mut amd_gpu = with_gpus(vec![gpu(Vendor::Amd, "Radeon RX 7900 XTX")]);
    amd_gpu.drivers.push(driver("nvidia", "570.133.20"));
    assert!(!holds(&NvidiaGpuNoAmd, &amd_gpu));
}

pub struct PciShowsNoAmdGpu;
impl Predicate for PciShowsNoAmdGpu {
    about!(
        "pci_shows_no_amd_gpu",
        "the PCI bus was read and holds no AMD GPU",
        ["scanned", "gpus"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(
            v.scanned("pci") && !v.amd.iter().any(|g| g.seen_by.iter().any(|s| s == "pci")),
            || vec!["no AMD display device on the PCI bus".into()],
        )
    }
}

#[cfg(test)]
#[test]
fn pci_shows_no_amd_gpu() {
    use super::tests::*;
    use crate::facts::Vendor;
    // An AMD GPU only rocminfo saw: PCI still shows none.
    let mut f = scanned(&["pci"]);
    f.gpus.push(gpu(Vendor::Amd, "MI300X"));
    assert!(holds(&PciShowsNoAmdGpu, &f));
    f.gpus[0].seen_by.push("pci".into());
    assert!(!holds(&PciShowsNoAmdGpu, &f));
}

pub const GPU_VF: GpusOfKind = GpusOfKind {
    name: "gpu_vf",
    meaning: "a GPU is an SR-IOV virtual function",
    pick: |v| v.vfs(),
};

#[cfg(test)]
#[test]
fn gpu_vf() {
    use super::tests::*;
    use crate::facts::Vendor;
    let mut f = with_gpus(vec![gpu(Vendor::Amd, "MI300X VF")]);
    assert!(!holds(&GPU_VF, &f));
    f.gpus[0].vf = true;
    assert_eq!(eval(&GPU_VF, &f).unwrap(), ["GPU MI300X VF"]);
}

/// Whether a source that saw `g` shows its bound driver (or that none is):
/// sysfs, `lspci -k`, an lshw block with `driver=` or UNCLAIMED.
fn shows_bound_driver(g: &crate::facts::Gpu) -> bool {
    g.seen_by
        .iter()
        .any(|s| s == "pci" || s == "lspci-k" || s == crate::from::lshw::SHOWS_DRIVER)
}

pub struct AmdGpuDriverUnbound;
impl Predicate for AmdGpuDriverUnbound {
    about!(
        "amd_gpu_driver_unbound",
        "PCI shows an AMD GPU whose bound driver is not amdgpu",
        ["gpus"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let unbound: Vec<String> = v
            .amd
            .iter()
            .filter(|g| {
                // Only sources that show the bound driver: sysfs, or `lspci -k`.
                shows_bound_driver(g) && g.kernel_driver.as_deref() != Some("amdgpu")
            })
            .map(|g| {
                format!(
                    "GPU {}: bound driver {}",
                    describe(g),
                    g.kernel_driver.as_deref().unwrap_or("none")
                )
            })
            .collect();
        when(!unbound.is_empty(), || unbound)
    }
}

#[cfg(test)]
#[test]
fn amd_gpu_driver_unbound() {
    use super::tests::*;
    use crate::facts::Vendor;
    let mut g = gpu(Vendor::Amd, "RX 7900");
    g.seen_by.push("pci".into());
    g.kernel_driver = Some("vfio-pci".into());
    let mut f = with_gpus(vec![g]);
    assert_eq!(
        eval(&AmdGpuDriverUnbound, &f).unwrap(),
        ["GPU RX 7900 (seen by pci): bound driver vfio-pci"]
    );
    f.gpus[0].kernel_driver = Some("amdgpu".into());
    assert!(!holds(&AmdGpuDriverUnbound, &f));
    // rocminfo does not show the bound driver.
    f.gpus[0].kernel_driver = None;
    f.gpus[0].seen_by = vec!["rocminfo".into()];
    assert!(!holds(&AmdGpuDriverUnbound, &f));
}

/// Every AMD GPU that PCI shows off amdgpu is bound to vfio-pci: it is
/// passed through to a virtual machine on purpose (the KVM/Proxmox host's
/// view), not a driver that failed to bind.
pub struct AmdGpuPassedThrough;
impl Predicate for AmdGpuPassedThrough {
    about!(
        "amd_gpu_passed_through",
        "every AMD GPU that PCI shows off amdgpu is bound to vfio-pci (reserved for a VM)",
        ["gpus"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let off: Vec<&&crate::facts::Gpu> = v
            .amd
            .iter()
            .filter(|g| shows_bound_driver(g) && g.kernel_driver.as_deref() != Some("amdgpu"))
            .collect();
        when(
            !off.is_empty()
                && off
                    .iter()
                    .all(|g| g.kernel_driver.as_deref() == Some("vfio-pci")),
            || {
                off.iter()
                    .map(|g| format!("GPU {}: bound to vfio-pci", describe(g)))
                    .collect()
            },
        )
    }
}

#[cfg(test)]
#[test]
fn amd_gpu_passed_through() {
    use super::tests::*;
    use crate::facts::Vendor;
    let mut g = gpu(Vendor::Amd, "MI50");
    g.seen_by.push("lspci-k".into());
    g.kernel_driver = Some("vfio-pci".into());
    let mut f = with_gpus(vec![g.clone()]);
    assert_eq!(
        eval(&AmdGpuPassedThrough, &f).unwrap(),
        ["GPU MI50 (seen by lspci-k): bound to vfio-pci"]
    );
    // A second GPU with no driver at all is not passthrough.
    let mut h = g.clone();
    h.kernel_driver = None;
    f.gpus.push(h);
    assert!(!holds(&AmdGpuPassedThrough, &f));
    // One on vfio-pci beside one on amdgpu: the host uses the other.
    f.gpus[1].kernel_driver = Some("amdgpu".into());
    assert!(holds(&AmdGpuPassedThrough, &f));
    // rocminfo does not show the bound driver; amdgpu bound is not it.
    f.gpus = vec![g.clone()];
    f.gpus[0].kernel_driver = Some("amdgpu".into());
    assert!(!holds(&AmdGpuPassedThrough, &f));
}

pub struct AmdgpuNotLoaded;
impl Predicate for AmdgpuNotLoaded {
    about!(
        "amdgpu_not_loaded",
        "amdgpu is known not to be loaded",
        ["drivers"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let amdgpu = v.facts.drivers.iter().find(|d| d.name == "amdgpu");
        when(amdgpu.is_some_and(|d| !d.loaded), || {
            vec!["kernel module amdgpu: not loaded".into()]
        })
    }
}

#[cfg(test)]
#[test]
fn amdgpu_not_loaded() {
    use super::tests::*;
    use crate::facts::{Facts, KernelDriver};
    let mut f = Facts {
        drivers: vec![KernelDriver {
            name: "amdgpu".into(),
            loaded: false,
            version: None,
        }],
        ..Facts::default()
    };
    assert!(holds(&AmdgpuNotLoaded, &f));
    f.drivers[0].loaded = true;
    assert!(!holds(&AmdgpuNotLoaded, &f));
    // Unknown is not "not loaded".
    assert!(!holds(&AmdgpuNotLoaded, &Facts::default()));
}

pub struct Wsl;
impl Predicate for Wsl {
    about!(
        "wsl",
        "the machine is WSL2 (GPU through /dev/dxg: no amdgpu module, no /dev/kfd by design)",
        ["wsl", "kernel_version"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let wsl_kernel = v
            .facts
            .kernel_version
            .as_deref()
            .filter(|k| k.to_ascii_lowercase().contains("microsoft"));
        when(v.facts.wsl == Some(true) || wsl_kernel.is_some(), || {
            vec![match wsl_kernel {
                Some(k) => format!("WSL2 kernel {k}"),
                None => "WSL environment detected".into(),
            }]
        })
    }
}

#[cfg(test)]
#[test]
fn wsl() {
    use super::tests::*;
    use crate::facts::Facts;
    let f = Facts {
        kernel_version: Some("5.15.167.4-microsoft-standard-WSL2".into()),
        ..Facts::default()
    };
    assert_eq!(
        eval(&Wsl, &f).unwrap(),
        ["WSL2 kernel 5.15.167.4-microsoft-standard-WSL2"]
    );
    let said = Facts {
        wsl: Some(true),
        ..Facts::default()
    };
    assert_eq!(eval(&Wsl, &said).unwrap(), ["WSL environment detected"]);
    assert!(!holds(&Wsl, &Facts::default()));
}

pub const GFX94X_PRESENT: GpusOfKind = GpusOfKind {
    name: "gfx94x_present",
    meaning: "an MI300-class GPU (gfx94x) is known",
    pick: |v| v.gfx94x(),
};

#[cfg(test)]
#[test]
fn gfx94x_present() {
    use super::tests::*;
    use crate::facts::Vendor;
    let mut f = with_gpus(vec![gpu(Vendor::Amd, "MI300X")]);
    assert!(!holds(&GFX94X_PRESENT, &f));
    f.gpus[0].gfx = Some("gfx942".into());
    assert_eq!(eval(&GFX94X_PRESENT, &f).unwrap(), ["GPU MI300X [gfx942]"]);
}

/// GTT from which an APU's memory is no longer small: 4 GiB (a 16 GiB
/// laptop gets 8 GiB by default, half of its RAM).
const LARGE_GTT: u64 = 4 << 30;

pub struct ApuSmallVram;
impl Predicate for ApuSmallVram {
    about!(
        "apu_small_vram",
        "an integrated AMD GPU has 1 GiB or less of dedicated VRAM and no large GTT is known",
        ["gpus"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        // A small carve-out beside a large GTT is not small VRAM: the GPU
        // maps the GTT, and current ROCm and Vulkan allocate from it.
        let large_gtt = |g: &&&crate::facts::Gpu| {
            g.gtt_bytes
                .is_some_and(|t| t >= LARGE_GTT && t > g.vram_bytes.unwrap_or(0))
        };
        let small: Vec<String> = v
            .amd
            .iter()
            .filter(|g| g.integrated == Some(true) && g.vram_bytes.is_some_and(|b| b <= 1 << 30))
            .filter(|g| !large_gtt(g))
            .map(|g| {
                format!(
                    "GPU {}: integrated, dedicated VRAM {}",
                    describe(g),
                    greta_vocab::size::memory(g.vram_bytes.unwrap_or(0))
                )
            })
            .collect();
        when(!small.is_empty(), || small)
    }
}

#[cfg(test)]
#[test]
fn apu_small_vram() {
    use super::tests::*;
    use crate::facts::Vendor;
    let mut g = gpu(Vendor::Amd, "Radeon 780M");
    g.integrated = Some(true);
    g.vram_bytes = Some(512 << 20);
    let mut f = with_gpus(vec![g]);
    assert_eq!(
        eval(&ApuSmallVram, &f).unwrap(),
        ["GPU Radeon 780M: integrated, dedicated VRAM 512 MiB"]
    );
    f.gpus[0].vram_bytes = Some(4 << 30);
    assert!(!holds(&ApuSmallVram, &f));
    // 512 MiB beside 12 GiB of GTT (legacy-rocm-build#2774: "By default
    // the GTT memory is half of the system"), 1 GiB beside 47 GiB: not small.
    f.gpus[0].vram_bytes = Some(512 << 20);
    f.gpus[0].gtt_bytes = Some(12 << 30);
    assert!(!holds(&ApuSmallVram, &f));
    f.gpus[0].gtt_bytes = Some(1 << 30);
    assert!(
        holds(&ApuSmallVram, &f),
        "a 1 GiB GTT (2016's Carrizo) is small too"
    );
}
