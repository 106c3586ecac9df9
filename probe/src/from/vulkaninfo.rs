//! `vulkaninfo` (full and `--summary`), `MESA_VK_DEVICE_SELECT=list`
//! sessions and bare Vulkan loader messages.
//!
//! The per-device `key = value` lines are the same in the full and summary
//! output, so one parser reads both: a block starts at `GPUn:` and the first
//! value of each key wins (the full dump repeats some keys in later structs).

use super::amd::{self, gfx_from_radv_name, parse_id};
use crate::facts::{Facts, Gpu, Vendor, VulkanDevice};
use greta_vocab::{DeviceType, VkDriver, VkFamily};

pub fn has_device_blocks(text: &str) -> bool {
    text.lines()
        .any(|l| l.trim_start().starts_with("deviceName") && l.contains('='))
        // ... with the keys of a device block, or grepped out of vulkaninfo
        // (`vulkaninfo | grep deviceName`, the command pasted above it).
        && (text.contains("driverID") || text.contains("deviceType") || text.contains("vulkaninfo"))
}

pub fn recognise_loader_log(text: &str) -> bool {
    [
        "[Loader Message]",
        "Cannot create Vulkan instance",
        "is not a conformant Vulkan implementation",
        "vulkaninfo",
    ]
    .iter()
    .any(|m| text.contains(m))
        || text
            .to_lowercase()
            .contains("is not a conformant vulkan implementation")
}

/// `VkDriverId` names (through the vocabulary's [`VkDriver`] mapping) and
/// `driverName` values to the driver families rules use.
pub fn kind_from_driver_id(id: &str) -> VkFamily {
    match VkDriver::from_id_name(id) {
        VkDriver::Other(_) => match id.trim() {
            "radv" => VkFamily::Radv,
            "AMD open-source driver" => VkFamily::Amdvlk,
            "AMD proprietary driver" => VkFamily::AmdgpuPro,
            "llvmpipe" => VkFamily::Lavapipe,
            "NVIDIA" => VkFamily::Nvidia,
            _ => VkFamily::Other,
        },
        known => known.family(),
    }
}

/// An ICD library path (or a manifest file name) to its driver family.
pub fn kind_from_library(path: &str) -> VkFamily {
    let lc = path.to_lowercase();
    let base = lc.rsplit('/').next().unwrap_or(&lc);
    if base.contains("radeon") {
        VkFamily::Radv
    } else if lc.contains("amdgpu-pro") || lc.contains("amdgpu_pro") || base.contains("amdvlk-pro")
    {
        VkFamily::AmdgpuPro
    } else if base.contains("amdvlk") || base.starts_with("amd_icd") {
        VkFamily::Amdvlk
    } else if base.contains("lvp") || base.contains("lavapipe") {
        VkFamily::Lavapipe
    } else if base.contains("nvidia") {
        VkFamily::Nvidia
    } else {
        VkFamily::Other
    }
}

/// The GPU a Vulkan device stands for; CPU devices (llvmpipe) are listed as
/// vendor `cpu` so "only a software device" can be told apart from "none".
pub fn gpu_of(d: &VulkanDevice) -> Gpu {
    let cpu = d.is_cpu();
    let vendor = if cpu {
        Vendor::Cpu
    } else {
        match d.vendor_id.map(|v| v as u16) {
            Some(amd::AMD) => Vendor::Amd,
            Some(amd::NVIDIA) => Vendor::Nvidia,
            Some(amd::INTEL) => Vendor::Intel,
            _ => match d.kind {
                VkFamily::Radv | VkFamily::Amdvlk | VkFamily::AmdgpuPro => Vendor::Amd,
                VkFamily::Nvidia => Vendor::Nvidia,
                _ => vendor_from_name(&d.name),
            },
        }
    };
    let integrated = d.integrated();
    let vendor_id = d
        .vendor_id
        .filter(|&v| v <= 0xffff && !cpu)
        .map(|v| v as u16);
    let device_id = d
        .device_id
        .filter(|&v| v <= 0xffff && v != 0 && !cpu)
        .map(|v| v as u16);
    Gpu {
        vendor,
        name: unwrap_layered_name(&d.name).to_string(),
        pci_address: d.pci_address.clone(),
        vendor_id,
        device_id,
        gfx: if vendor == Vendor::Amd {
            gfx_from_radv_name(&d.name)
        } else {
            None
        },
        vf: amd::is_vf(&d.name, vendor_id, device_id),
        integrated,
        seen_by: vec![format!("vulkan:{}", d.kind.name())],
        ..Gpu::default()
    }
}

/// The GPU vendor a device name states ("AMD Radeon ...", "NVIDIA GeForce ...",
/// "Intel(R) Arc ..."), also inside Dozen's "Microsoft Direct3D12 (NAME)".
pub fn vendor_from_name(name: &str) -> Vendor {
    let n = unwrap_layered_name(name);
    if n.contains("AMD") || n.contains("Radeon") || n.contains("Instinct") {
        Vendor::Amd
    } else if n.contains("NVIDIA")
        || n.contains("GeForce")
        || n.contains("Quadro")
        || n.contains("Tesla")
    {
        Vendor::Nvidia
    } else if n.contains("Intel") {
        Vendor::Intel
    } else {
        Vendor::Other
    }
}

/// Mesa's Dozen (Vulkan over Direct3D 12, on Windows and WSL) names a device
/// "Microsoft Direct3D12 (AMD Radeon(TM) Graphics)": the GPU is the inner name.
pub fn unwrap_layered_name(name: &str) -> &str {
    name.strip_prefix("Microsoft Direct3D12 (")
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(name)
}

fn push_device(f: &mut Facts, d: VulkanDevice) {
    if !f.vulkan.drivers.contains(&d.kind) {
        f.vulkan.drivers.push(d.kind);
    }
    f.gpus.push(gpu_of(&d));
    f.vulkan.devices.push(d);
}

/// Full or summary `vulkaninfo` output.
pub fn parse(text: &str) -> Facts {
    let mut f = parse_loader_log(text);
    let mut cur: Option<VulkanDevice> = None;
    let mut in_layers = false;
    let flush = |f: &mut Facts, cur: &mut Option<VulkanDevice>| {
        if let Some(mut d) = cur.take() {
            if !d.name.is_empty() {
                if d.kind == VkFamily::Other {
                    d.kind = guess_kind(&d);
                }
                push_device(f, d);
            }
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Layers: count") || t.starts_with("Instance Layers: count") {
            in_layers = true;
        } else if t.starts_with("Devices:")
            || t.starts_with("Device Groups:")
            || t.starts_with("Device Properties")
        {
            in_layers = false;
        }
        if in_layers && t.starts_with("VK_LAYER_") {
            let name = t.split([' ', '(']).next().unwrap_or(t).to_string();
            if name.starts_with("VK_LAYER_AMD_switchable_graphics")
                && !f.vulkan.implicit_layers.contains(&name)
            {
                f.vulkan.implicit_layers.push(name);
            }
        }
        if is_gpu_header(t) {
            flush(&mut f, &mut cur);
            cur = Some(VulkanDevice::default());
            continue;
        }
        // `vulkaninfo | grep deviceName` keeps no GPU headers: a deviceName
        // outside a device, or a second one in a device, starts the next.
        if t.starts_with("deviceName") && t.contains('=') {
            let named = cur.as_ref().is_some_and(|d| !d.name.is_empty());
            if cur.is_none() || named {
                flush(&mut f, &mut cur);
                cur = Some(VulkanDevice::default());
            }
        }
        let Some(d) = cur.as_mut() else { continue };
        if t.starts_with("VK_KHR_cooperative_matrix") || t.starts_with("VK_NV_cooperative_matrix") {
            d.cooperative_matrix = Some(true);
            continue;
        }
        let Some((k, v)) = t.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let first = |slot: &mut Option<String>| {
            if slot.is_none() {
                *slot = Some(v.to_string());
            }
        };
        match k {
            "deviceName" if d.name.is_empty() => d.name = v.to_string(),
            "deviceType" if d.device_type.is_none() => d.device_type = DeviceType::from_text(v),
            "vendorID" if d.vendor_id.is_none() => d.vendor_id = parse_id(v),
            "deviceID" if d.device_id.is_none() => d.device_id = parse_id(v),
            "apiVersion" => first(&mut d.api_version),
            "driverID" if d.kind == VkFamily::Other => d.kind = kind_from_driver_id(v),
            "driverName" => first(&mut d.driver_name),
            "driverInfo" => first(&mut d.driver_info),
            "deviceUUID" if d.device_uuid.is_none() => d.device_uuid = v.parse().ok(),
            "subgroupSize" if d.subgroup_size.is_none() => d.subgroup_size = v.parse().ok(),
            "minSubgroupSize" if d.min_subgroup_size.is_none() => {
                d.min_subgroup_size = v.parse().ok()
            }
            "maxSubgroupSize" if d.max_subgroup_size.is_none() => {
                d.max_subgroup_size = v.parse().ok()
            }
            "shaderFloat16" if d.fp16.is_none() => d.fp16 = Some(v == "true"),
            "cooperativeMatrix" => {
                d.cooperative_matrix = Some(v == "true" || d.cooperative_matrix == Some(true))
            }
            _ => {}
        }
        if let Some(a) = d.api_version.as_mut() {
            if let Some(p) = a.find(" (") {
                a.truncate(p);
            }
        }
    }
    flush(&mut f, &mut cur);
    f
}

fn is_gpu_header(t: &str) -> bool {
    t.strip_prefix("GPU")
        .and_then(|r| r.strip_suffix(':'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn guess_kind(d: &VulkanDevice) -> VkFamily {
    if let Some(n) = &d.driver_name {
        let k = kind_from_driver_id(n);
        if k != VkFamily::Other {
            return k;
        }
    }
    if d.name.contains("(RADV ") {
        VkFamily::Radv
    } else if d.name.starts_with("llvmpipe") {
        VkFamily::Lavapipe
    } else {
        VkFamily::Other
    }
}

/// Loader messages and driver notices: the loader is present when an
/// instance version is printed; a non-conformance notice names a driver that
/// created a device (RADV prints it per device on GCN1/2 and new chips).
pub fn parse_loader_log(text: &str) -> Facts {
    let mut f = Facts::default();
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("Vulkan Instance Version:") {
            f.vulkan.loader = Some(format!("libvulkan.so.1 (instance {})", v.trim()));
        }
        let lc = t.to_lowercase();
        if lc.contains("is not a conformant vulkan implementation") {
            let kind = if lc.contains("radv") {
                VkFamily::Radv
            } else if lc.contains("lavapipe") || lc.contains("llvmpipe") {
                VkFamily::Lavapipe
            } else {
                VkFamily::Other
            };
            if kind != VkFamily::Other && !f.vulkan.drivers.contains(&kind) {
                f.vulkan.drivers.push(kind);
            }
        }
    }
    f
}

/// `MESA_VK_DEVICE_SELECT=list` output, typically in a terminal session
/// that switches `VK_ICD_FILENAMES` between runs (which tells whose list it is):
/// `  GPU 0: 1002:164e "AMD Radeon Graphics" integrated GPU 0000:19:00.0`.
pub fn parse_device_select(text: &str) -> Facts {
    let mut f = parse_loader_log(text);
    let mut icd_kind: Option<VkFamily> = None;
    for line in text.lines() {
        if let Some(p) = line
            .find("VK_ICD_FILENAMES=")
            .or_else(|| line.find("VK_DRIVER_FILES="))
        {
            let val = line[p..].split_once('=').map(|x| x.1).unwrap_or("").trim();
            let kinds: Vec<_> = val
                .split(':')
                .filter(|s| !s.is_empty())
                .map(kind_from_library)
                .collect();
            icd_kind = kinds
                .first()
                .copied()
                .filter(|k| kinds.iter().all(|x| x == k));
            continue;
        }
        let t = line.trim();
        let Some(rest) = t.strip_prefix("GPU ") else {
            continue;
        };
        let Some((_, rest)) = rest.split_once(": ") else {
            continue;
        };
        let Some((ids, rest)) = rest.split_once(' ') else {
            continue;
        };
        let Some((vid, did)) = ids.split_once(':') else {
            continue;
        };
        let (Ok(vid), Ok(did)) = (u32::from_str_radix(vid, 16), u32::from_str_radix(did, 16))
        else {
            continue;
        };
        let Some(q1) = rest.find('"') else { continue };
        let Some(q2) = rest[q1 + 1..].find('"') else {
            continue;
        };
        let name = rest[q1 + 1..q1 + 1 + q2].to_string();
        let tail = rest[q1 + 2 + q2..].trim();
        let pci = tail
            .split_whitespace()
            .last()
            .filter(|s| s.matches(':').count() == 2)
            .map(String::from);
        let device_type = if tail.starts_with("integrated") {
            Some(DeviceType::IntegratedGpu)
        } else if tail.starts_with("discrete") {
            Some(DeviceType::DiscreteGpu)
        } else if tail.starts_with("cpu") {
            Some(DeviceType::Cpu)
        } else {
            None
        };
        let kind = if name.contains("(RADV ") {
            VkFamily::Radv
        } else if name.starts_with("llvmpipe") {
            VkFamily::Lavapipe
        } else if let Some(k) = icd_kind {
            k
        } else if vid == amd::AMD as u32 {
            // Mesa always suffixes "(RADV ...)"; an AMD name without it comes
            // from AMDVLK or AMDGPU-PRO, which share one manifest name.
            VkFamily::Amdvlk
        } else if vid == amd::NVIDIA as u32 {
            VkFamily::Nvidia
        } else {
            VkFamily::Other
        };
        push_device(
            &mut f,
            VulkanDevice {
                name,
                kind,
                device_type,
                vendor_id: Some(vid),
                device_id: Some(did),
                pci_address: pci,
                ..VulkanDevice::default()
            },
        );
    }
    f
}

#[cfg(test)]
mod tests {

    #[test]
    fn grepped_device_names_are_devices() {
        let t = "vulkaninfo | grep deviceName\ndeviceName = AMD Radeon RX 9060 XT (RADV GFX1200)\ndeviceName = llvmpipe (LLVM 19.1.7, 256 bits)\n";
        assert!(has_device_blocks(t));
        let f = parse(t);
        assert_eq!(f.vulkan.devices.len(), 2, "{:?}", f.vulkan.devices);
        assert_eq!(f.vulkan.devices[0].kind, VkFamily::Radv);
    }
    use super::*;

    #[test]
    fn summary_block_parses() {
        let t = "Devices:\n========\nGPU0:\n\tapiVersion         = 1.3.238\n\tvendorID           = 0x1002\n\tdeviceID           = 0x73ff\n\tdeviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU\n\tdeviceName         = AMD Radeon RX 6600 (RADV NAVI23)\n\tdriverID           = DRIVER_ID_MESA_RADV\n";
        let f = parse(t);
        assert_eq!(f.vulkan.devices.len(), 1);
        let d = &f.vulkan.devices[0];
        assert_eq!(d.kind, VkFamily::Radv);
        assert_eq!(d.device_id, Some(0x73ff));
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1032"));
        assert_eq!(f.gpus[0].integrated, Some(false));
    }

    #[test]
    fn library_kinds() {
        assert_eq!(
            kind_from_library("/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so"),
            VkFamily::Radv
        );
        assert_eq!(
            kind_from_library("/opt/amdgpu/lib/x86_64-linux-gnu/amdvlk64.so"),
            VkFamily::Amdvlk
        );
        assert_eq!(
            kind_from_library("/opt/amdgpu-pro/lib/x86_64-linux-gnu/amdvlk64.so"),
            VkFamily::AmdgpuPro
        );
        assert_eq!(kind_from_library("libGLX_nvidia.so.0"), VkFamily::Nvidia);
        assert_eq!(
            kind_from_library("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"),
            VkFamily::Lavapipe
        );
        assert_eq!(
            kind_from_library("/usr/share/vulkan/icd.d/amd_icd64.json"),
            VkFamily::Amdvlk
        );
    }
}
