//! `vulkaninfo` (full and `--summary`), `MESA_VK_DEVICE_SELECT=list`
//! sessions and bare Vulkan loader messages.
//!
//! The per-device `key = value` lines are the same in the full and summary
//! output, so one parser reads both: a block starts at `GPUn:` and the first
//! value of each key wins (the full dump repeats some keys in later structs).

use super::amd::{self, gfx_from_radv_name, parse_id};
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu, Vendor, VulkanDevice};
use greta_vocab::{DeviceType, VkDriver, VkFamily};

/// The full `vulkaninfo` listing.
fn detect_full(t: &str) -> bool {
    t.contains("Device Properties and Extensions") || t.contains("VkPhysicalDeviceProperties:")
}

/// `vulkaninfo --summary` (or device blocks without the full listing).
fn detect_summary(t: &str) -> bool {
    !detect_full(t)
        && (has_device_blocks(t)
            || t.contains("VULKANINFO")
            || t.contains("Vulkan Instance Version"))
}

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "vulkaninfo",
    label: "vulkaninfo",
    detect: detect_full,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "Device Properties and Extensions",
        "VkPhysicalDeviceProperties:",
    ]],
};

/// This format's entry in the registry of readers (`super::readers`).
pub const SUMMARY_READER: super::readers::Fns = super::readers::Fns {
    name: "vulkaninfo-summary",
    label: "vulkaninfo --summary",
    detect: detect_summary,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[
        "deviceName",
        "GPU id",
        "VULKANINFO",
        "Vulkan Instance Version",
    ]],
};

/// This format's entry in the registry of readers (`super::readers`).
pub const DEVICE_SELECT_READER: super::readers::Fns = super::readers::Fns {
    name: "vulkan-device-select",
    label: "MESA_VK_DEVICE_SELECT=list",
    detect: |t| t.contains("selectable devices:") || has_device_select_lines(t),
    parse: |t, _| parse_device_select(t),
    alone: false,
    markers: &[&["selectable devices:", "GPU "]],
};

/// Loader messages only where no vulkaninfo listing carries them.
/// This format's entry in the registry of readers (`super::readers`).
pub const LOADER_LOG_READER: super::readers::Fns = super::readers::Fns {
    name: "vulkan-loader-log",
    label: "Vulkan loader messages",
    detect: |t| !detect_full(t) && !detect_summary(t) && recognise_loader_log(t),
    parse: |t, _| parse_loader_log(t),
    alone: false,
    markers: &[&[
        "[Loader Message]",
        "Cannot create Vulkan instance",
        "is not a conformant Vulkan implementation",
        "vulkaninfo",
    ]],
};

pub fn has_device_blocks(text: &str) -> bool {
    lines_of(text)
        .any(|l| l.trim_start().starts_with("deviceName") && l.contains('='))
        // ... with the keys of a device block, or grepped out of vulkaninfo
        // (`vulkaninfo | grep deviceName`, the command pasted above it).
        && (text.contains("driverID") || text.contains("deviceType") || text.contains("vulkaninfo"))
        || lines_of(text).any(|l| gpu_id_line(l.trim()).is_some())
}

/// vulkaninfo's device list lines outside the device blocks: `GPU id = 0
/// (NAME)` under each layer of the full dump's Layers section (what
/// `vulkaninfo | grep "GPU id"` keeps), `GPU id : 0 (NAME):` or `GPU id : 0
/// (NAME) [VK_KHR_wayland_surface]:` in its Presentable Surfaces section.
/// The index and the device name.
fn gpu_id_line(t: &str) -> Option<(u32, &str)> {
    let rest = t.strip_prefix("GPU id")?.trim_start();
    let rest = rest
        .strip_prefix('=')
        .or_else(|| rest.strip_prefix(':'))?
        .trim_start();
    let (idx, rest) = rest.split_once(' ')?;
    let idx = idx.parse().ok()?;
    let mut name = rest.trim().trim_end_matches(':').trim_end();
    if name.ends_with(']') {
        name = name[..name.rfind(" [")?].trim_end();
    }
    let name = name.strip_prefix('(')?.strip_suffix(')')?.trim();
    (!name.is_empty()).then_some((idx, name))
}

/// Mesa before 22.2 named a RADV device `AMD RADV CODENAME`, Mesa 20.x with
/// the shader compiler after it (`AMD RADV NAVY_FLOUNDER (ACO)`, `AMD RADV
/// POLARIS10 (LLVM 9.0.1)`); later Mesa prints `NAME (RADV CODENAME)`. The
/// codename of the old form.
pub fn old_radv_codename(name: &str) -> Option<&str> {
    let rest = name.trim().strip_prefix("AMD RADV ")?;
    let code = rest.split([' ', '(']).next()?.trim();
    (!code.is_empty() && code.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then_some(code)
}

/// A device name as one GPU's identity: Dozen's wrapper and old RADV's
/// compiler suffix dropped (one GPU under Mesa 20.3 `(ACO)` and Mesa 22.0
/// without it is one name).
pub fn identity_name(name: &str) -> String {
    match old_radv_codename(name) {
        Some(code) => format!("AMD RADV {code}"),
        None => unwrap_layered_name(name).to_string(),
    }
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
                .or_else(|| old_radv_codename(&d.name).and_then(amd::gfx_from_chip))
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
    // Each device is compared with those before it: a listing of more
    // than a real node has is counted beyond the limit, not kept.
    if f.vulkan.devices.len() >= super::MAX_LISTED {
        *f.cut.entry("Vulkan devices").or_insert(super::MAX_LISTED) += 1;
        return;
    }
    if !f.vulkan.drivers.contains(&d.kind) {
        f.vulkan.drivers.push(d.kind);
    }
    // One listing that shows a device twice shows one GPU twice: the
    // device stays listed (the duplicate finding reads the devices), the GPU
    // is counted once.
    if !f.vulkan.devices.iter().any(|e| one_gpu_listed_twice(e, &d)) {
        super::limits::push_gpu(f, gpu_of(&d));
    }
    f.vulkan.devices.push(d);
}

/// Two devices of one device list that are one GPU: the same deviceUUID,
/// or the same name under one driver family from two installs of it
/// (different driverInfo: each ICD lists every GPU, so two Mesa builds list
/// each GPU, and llvmpipe, twice). Two cards of one model under one driver
/// share the driverInfo and stay two.
pub fn one_gpu_listed_twice(a: &VulkanDevice, b: &VulkanDevice) -> bool {
    if let (Some(x), Some(y)) = (a.device_uuid, b.device_uuid) {
        if x == y && a.is_cpu() == b.is_cpu() {
            return true;
        }
    }
    let two_installs = matches!((&a.driver_info, &b.driver_info), (Some(x), Some(y)) if x != y);
    two_installs && a.kind == b.kind && identity_name(&a.name) == identity_name(&b.name)
}

/// Full or summary `vulkaninfo` output.
pub fn parse(text: &str) -> Facts {
    let mut f = parse_loader_log(text);
    let mut cur: Option<VulkanDevice> = None;
    let mut in_layers = false;
    let mut listed: Vec<(u32, String)> = Vec::new();
    // A paste of two runs (`--summary`, then the full dump) lists each
    // device once per run: a device equal to one of an earlier run is that
    // one again. Within one run a repeat is a real duplicate listing.
    let mut run_start = 0;
    let flush = |f: &mut Facts, cur: &mut Option<VulkanDevice>, run_start: usize| {
        if let Some(mut d) = cur.take() {
            if !d.name.is_empty() {
                if d.kind == VkFamily::Other {
                    d.kind = guess_kind(&d);
                }
                if !f.vulkan.devices[..run_start].contains(&d) {
                    push_device(f, d);
                }
            }
        }
    };
    for line in lines_of(text) {
        let t = line.trim();
        if t == "VULKANINFO" {
            flush(&mut f, &mut cur, run_start);
            run_start = f.vulkan.devices.len();
        }
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
        if let Some((idx, name)) = gpu_id_line(t) {
            if !listed.iter().any(|(i, _)| *i == idx) {
                listed.push((idx, name.to_string()));
            }
            continue;
        }
        if is_gpu_header(t) {
            flush(&mut f, &mut cur, run_start);
            cur = Some(VulkanDevice::default());
            continue;
        }
        // `vulkaninfo | grep deviceName` keeps no GPU headers: a deviceName
        // outside a device, or a second one in a device, starts the next.
        if t.starts_with("deviceName") && t.contains('=') {
            let named = cur.as_ref().is_some_and(|d| !d.name.is_empty());
            if cur.is_none() || named {
                flush(&mut f, &mut cur, run_start);
                cur = Some(VulkanDevice::default());
            }
        }
        // A block pasted without its `GPUn:` header and with its ids above
        // its name (AMDVLK#30: `vendorID`, `deviceID`, `deviceType`, then
        // `deviceName`) starts at its first device key.
        if cur.is_none()
            && ["vendorID", "deviceID", "deviceType"]
                .iter()
                .any(|k| t.starts_with(k) && t.contains('='))
        {
            cur = Some(VulkanDevice::default());
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
    flush(&mut f, &mut cur, run_start);
    // The `GPU id` lines name the devices when no device block does.
    if f.vulkan.devices.is_empty() {
        for (_, name) in listed {
            let mut d = VulkanDevice {
                name,
                ..VulkanDevice::default()
            };
            d.kind = guess_kind(&d);
            push_device(&mut f, d);
        }
    }
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
    if d.name.contains("(RADV ") || old_radv_codename(&d.name).is_some() {
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
    for line in lines_of(text) {
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

/// One device line of Mesa's device-select list: `GPU 0: 1002:164e "AMD
/// Radeon Graphics" integrated GPU 0000:19:00.0` (`... "llvmpipe (...)" CPU
/// 0000:00:00.0`). Vendor id, device id, name, and what follows the name.
fn device_select_line(line: &str) -> Option<(u32, u32, &str, &str)> {
    let rest = line.trim().strip_prefix("GPU ")?;
    let (idx, rest) = rest.split_once(": ")?;
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (ids, rest) = rest.split_once(' ')?;
    let (vid, did) = ids.split_once(':')?;
    let (vid, did) = (
        u32::from_str_radix(vid, 16).ok()?,
        u32::from_str_radix(did, 16).ok()?,
    );
    let q1 = rest.find('"')?;
    let q2 = rest[q1 + 1..].find('"')?;
    Some((
        vid,
        did,
        &rest[q1 + 1..q1 + 1 + q2],
        rest[q1 + 2 + q2..].trim(),
    ))
}

/// Mesa's device-select list pasted without its `selectable devices:`
/// header (the block under the command, as people copy it).
pub fn has_device_select_lines(text: &str) -> bool {
    lines_of(text).any(|l| device_select_line(l).is_some())
}

/// `MESA_VK_DEVICE_SELECT=list` output, typically in a terminal session
/// that switches `VK_ICD_FILENAMES` between runs (which tells whose list it is):
/// `  GPU 0: 1002:164e "AMD Radeon Graphics" integrated GPU 0000:19:00.0`.
pub fn parse_device_select(text: &str) -> Facts {
    let mut f = parse_loader_log(text);
    let mut icd_kind: Option<VkFamily> = None;
    for line in lines_of(text) {
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
        let Some((vid, did, name, tail)) = device_select_line(line) else {
            continue;
        };
        let name = name.to_string();
        let lc_tail = tail.to_ascii_lowercase();
        let pci = tail
            .split_whitespace()
            .last()
            .filter(|s| s.matches(':').count() == 2)
            .map(String::from);
        let device_type = if lc_tail.starts_with("integrated") {
            Some(DeviceType::IntegratedGpu)
        } else if lc_tail.starts_with("discrete") {
            Some(DeviceType::DiscreteGpu)
        } else if lc_tail.starts_with("cpu") {
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

    /// AMDVLK#30: a device block without its header, its ids above its
    /// name: the ids belong to the device.
    #[test]
    fn ids_above_the_name_of_a_headerless_block_are_its_own() {
        let t = "\tapiVersion     = 0x401046  (1.1.70)\n\tdriverVersion  = 8388637 (0x80001d)\n\tvendorID       = 0x1002\n\tdeviceID       = 0x9851\n\tdeviceType     = INTEGRATED_GPU\n\tdeviceName     = Unknown AMD GPU\n";
        let f = parse(t);
        assert_eq!(f.vulkan.devices.len(), 1, "{:?}", f.vulkan.devices);
        assert_eq!(f.vulkan.devices[0].device_id, Some(0x9851));
        assert_eq!(f.vulkan.devices[0].name, "Unknown AMD GPU");
    }

    #[test]
    fn gpu_id_lines_name_the_devices() {
        // Grepped out of vulkaninfo (the stale-hsa-override-12.0.1 fixture).
        let t = "\t\tGPU id = 0 (AMD Radeon AI PRO R9700 (RADV GFX1201))\n\t\tGPU id = 1 (Radeon 8060S Graphics (RADV GFX1151))\n";
        assert!(has_device_blocks(t));
        let f = parse(t);
        assert_eq!(f.vulkan.devices.len(), 2, "{:?}", f.vulkan.devices);
        assert_eq!(f.vulkan.drivers, vec![VkFamily::Radv]);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1201"));
        assert_eq!(f.gpus[1].gfx.as_deref(), Some("gfx1151"));
        // The full dump repeats the list under every layer, then in
        // Presentable Surfaces (llama.cpp#6155; the surface form as
        // vulkaninfo prints it on Wayland): two GPUs, not six.
        let t = "Layers: count = 2\n==================\nVK_LAYER_KHRONOS_profiles (Khronos Profiles layer) Vulkan version 1.3.275, layer version 1:\n\tDevices: count = 2\n\t\tGPU id = 0 (NVIDIA GeForce RTX 3080)\n\t\tGPU id = 1 (NVIDIA GeForce RTX 3090 Ti)\nVK_LAYER_MESA_device_select (Linux device selection layer) Vulkan version 1.3.211, layer version 1:\n\tDevices: count = 2\n\t\tGPU id = 0 (NVIDIA GeForce RTX 3080)\n\t\tGPU id = 1 (NVIDIA GeForce RTX 3090 Ti)\nPresentable Surfaces:\n=====================\nGPU id : 0 (NVIDIA GeForce RTX 3080) [VK_KHR_wayland_surface]:\nGPU id : 1 (NVIDIA GeForce RTX 3090 Ti):\n";
        let f = parse(t);
        let names: Vec<_> = f.gpus.iter().map(|g| (g.vendor, g.name.as_str())).collect();
        assert_eq!(
            names,
            vec![
                (Vendor::Nvidia, "NVIDIA GeForce RTX 3080"),
                (Vendor::Nvidia, "NVIDIA GeForce RTX 3090 Ti")
            ]
        );
        // Device blocks, when present, are the list (richer than the names).
        let t = "\t\tGPU id = 0 (llvmpipe (LLVM 19.1.1, 256 bits))\nGPU0:\n\tdeviceType = PHYSICAL_DEVICE_TYPE_CPU\n\tdeviceName = llvmpipe (LLVM 19.1.1, 256 bits)\n\tdriverID = DRIVER_ID_MESA_LLVMPIPE\n";
        assert_eq!(parse(t).vulkan.devices.len(), 1);
        // Not a device line.
        assert!(gpu_id_line("GPU id = zero (x)").is_none());
        assert!(gpu_id_line("GPU id = 0").is_none());
    }

    #[test]
    fn old_mesa_radv_names_are_radv_with_their_chip() {
        // vkdevicechooser#19 (Mesa 20.3.5 and 22.0.2): `AMD RADV CODENAME`,
        // with the compiler after it in Mesa 20.x.
        let t = "$ vulkaninfo --summary | grep -E \"GPU.:|deviceName|driverInfo\"\nGPU0:\n        deviceName         = AMD RADV NAVY_FLOUNDER (ACO)\n        driverInfo         = Mesa 20.3.5 (ACO)\nGPU1:\n        deviceName         = AMD RADV POLARIS10 (LLVM 9.0.1)\n";
        let f = parse(t);
        assert_eq!(f.vulkan.drivers, vec![VkFamily::Radv]);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1031"));
        assert_eq!(f.gpus[1].gfx.as_deref(), Some("gfx803"));
        assert_eq!(old_radv_codename("AMD Radeon RX 6700M (RADV NAVI22)"), None);
        assert_eq!(
            identity_name("AMD RADV NAVY_FLOUNDER (ACO)"),
            identity_name("AMD RADV NAVY_FLOUNDER")
        );
    }

    #[test]
    fn one_gpu_listed_twice_is_one_gpu_and_two_devices() {
        // vkdevicechooser#19: two Mesa builds list the GPU and llvmpipe twice.
        let t = "$ vulkaninfo --summary | grep -E \"GPU.:|deviceName|driverInfo\"\nGPU0:\n        deviceName         = AMD RADV NAVY_FLOUNDER (ACO)\n        driverInfo         = Mesa 20.3.5 (ACO)\nGPU1:\n        deviceName         = llvmpipe (LLVM 11.0.1, 256 bits)\n        driverInfo         = Mesa 20.3.5 (LLVM 11.0.1)\nGPU2:\n        deviceName         = NVIDIA GeForce GTX 1650\n        driverInfo         = 470.103.01\nGPU3:\n        deviceName         = llvmpipe (LLVM 11.0.1, 256 bits)\n        driverInfo         = Mesa 22.0.2 (git-f1d9e66a84) (LLVM 11.0.1)\nGPU4:\n        deviceName         = AMD RADV NAVY_FLOUNDER\n        driverInfo         = Mesa 22.0.2 (git-f1d9e66a84)\n";
        let f = parse(t);
        assert_eq!(f.vulkan.devices.len(), 5);
        assert_eq!(f.gpus.len(), 3, "{:?}", f.gpus);
        // wslg#1340: Dozen lists one GPU twice, with one deviceUUID.
        let block = "\tvendorID           = 0x10de\n\tdeviceID           = 0x2482\n\tdeviceName         = Microsoft Direct3D12 (NVIDIA GeForce RTX 3070 Ti)\n\tdriverID           = DRIVER_ID_MESA_DOZEN\n\tdeviceUUID         = 733351a2-872e-52d1-9a24-c27af4e0e5b4\n";
        let t = format!("Devices:\n========\nGPU0:\n{block}GPU1:\n{block}");
        let f = parse(&t);
        assert_eq!((f.vulkan.devices.len(), f.gpus.len()), (2, 1));
        // The same listing pasted twice (two runs) is one listing.
        let f = parse(&format!(
            "==========\nVULKANINFO\n==========\n{t}==========\nVULKANINFO\n==========\n{t}"
        ));
        assert_eq!((f.vulkan.devices.len(), f.gpus.len()), (2, 1));
        // Two cards of one model under one driver stay two.
        let card = "\tdeviceName         = AMD Radeon RX 7900 XTX (RADV NAVI31)\n\tdriverInfo         = Mesa 24.0.5\n";
        let f = parse(&format!("GPU0:\n{card}GPU1:\n{card}"));
        assert_eq!(f.gpus.len(), 2);
    }

    #[test]
    fn device_select_list_without_its_header() {
        // GPU-T#33 (Mesa with LLVM 21): the block under the command, no
        // `selectable devices:` line; llvmpipe's type is printed `CPU`.
        let t = "GPU 0: 1002:6900 \"AMD Radeon R5 M465 Series (RADV ICELAND)\" discrete GPU 0000:01:00.0\nGPU 1: 8086:5917 \"Intel(R) UHD Graphics 620 (KBL GT2)\" integrated GPU 0000:00:02.0\nGPU 2: 10005:0 \"llvmpipe (LLVM 21.1.8, 256 bits)\" CPU 0000:00:00.0\n";
        assert!(has_device_select_lines(t));
        let f = parse_device_select(t);
        assert_eq!(f.vulkan.devices.len(), 3);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx802"));
        assert_eq!(f.vulkan.devices[2].device_type, Some(DeviceType::Cpu));
        // AMDVLK#401's form, with the header and a two-space indent.
        let t = "selectable devices:\n  GPU 0: 1002:7550 \"AMD Radeon Graphics (RADV GFX1201)\" discrete GPU 0000:03:00.0\n";
        assert_eq!(
            parse_device_select(t).gpus[0].gfx.as_deref(),
            Some("gfx1201")
        );
        // A ggml or rocm-smi `GPU 0:` line is no device-select line.
        assert!(!has_device_select_lines("GPU 0: AMD Radeon RX 7900 XTX\n"));
        assert!(!has_device_select_lines(
            "GPU[0]\t\t: Card series:\t\tNavi 31\n"
        ));
    }

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
