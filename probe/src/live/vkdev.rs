//! Vulkan physical devices, enumerated live through ash (the loader is
//! dlopened, so greta runs without libvulkan), or replayed from a capture.
//!
//! Enumeration runs on its own thread with a time limit: a broken ICD can
//! hang `vkCreateInstance`, and doctor must report that, not hang with it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{scanned, seen, signal};
use crate::facts::{Facts, Gpu, Vendor, VulkanDevice};
use crate::root::{CmdOutput, CmdStatus, Root};
use greta_vocab::VkFamily;

/// Pseudo-command under which the live enumeration is captured.
pub const DEVICES_CMD: &str = "greta-vulkan-devices";

/// Limit for creating an instance and querying every device.
pub const ENUMERATION_TIMEOUT: Duration = Duration::from_secs(20);

/// What one enumeration found; serialised into captures.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Enumeration {
    pub devices: Vec<VulkanDevice>,
    /// Why enumeration failed (loader missing, VK_ERROR_INCOMPATIBLE_DRIVER,
    /// timed out); None when it ran.
    pub error: Option<String>,
    /// Loader's instance version, e.g. "1.3.239".
    pub instance_version: Option<String>,
}

/// One device as the shared enumerator (`greta-vkenum`, which the runtime
/// reads devices through too) describes it, in the facts' terms.
fn device_of(d: &greta_vkenum::Description) -> VulkanDevice {
    let mut v = VulkanDevice {
        name: d.name.clone(),
        kind: d.driver.as_ref().map(|x| x.family()).unwrap_or_default(),
        device_type: Some(d.device_type),
        vendor_id: Some(d.vendor_id),
        device_id: Some(d.device_id),
        driver_name: d.driver_name.clone(),
        driver_info: d.driver_info.clone(),
        api_version: Some(d.api_version_text()),
        device_uuid: d.uuid,
        subgroup_size: d.subgroup_size,
        min_subgroup_size: d.min_subgroup_size,
        max_subgroup_size: d.max_subgroup_size,
        cooperative_matrix: Some(d.coop_ext),
        fp16: d.shader_f16,
        compute_units: d.compute_units,
        ..VulkanDevice::default()
    };
    if v.kind == VkFamily::Other {
        v.kind = kind_from_name(&v.name, v.driver_name.as_deref());
    }
    v
}

fn into_facts(e: greta_vkenum::Enumeration) -> Enumeration {
    Enumeration {
        devices: e.devices.iter().map(device_of).collect(),
        error: e.error.map(|e| e.to_string()),
        instance_version: e.instance_version.map(greta_vkenum::version_text),
    }
}

/// Fallback when the driver does not report a driverID.
pub fn kind_from_name(name: &str, driver: Option<&str>) -> VkFamily {
    let n = format!("{} {}", name, driver.unwrap_or("")).to_ascii_lowercase();
    if n.contains("llvmpipe") || n.contains("lavapipe") {
        VkFamily::Lavapipe
    } else if n.contains("radv") {
        VkFamily::Radv
    } else if n.contains("amdvlk") || n.contains("amd open-source") {
        VkFamily::Amdvlk
    } else if n.contains("amd proprietary") {
        VkFamily::AmdgpuPro
    } else if n.contains("nvidia") {
        VkFamily::Nvidia
    } else {
        VkFamily::Other
    }
}

/// Enumerates on a helper thread; a hang becomes an error after `timeout`
/// (the stuck thread is abandoned; it holds nothing doctor needs).
pub fn enumerate_with_timeout(timeout: Duration) -> Enumeration {
    into_facts(greta_vkenum::enumerate_with_timeout(
        c"greta-doctor",
        timeout,
    ))
}

/// Parser for captured `vulkaninfo` text (the `--from` parser); set by
/// collect when the text module is present.
pub type TextParser = fn(&str, &str, &mut Facts);

/// "AMD Radeon 760M (RADV GFX1103_R1)" -> "AMD Radeon 760M".
pub fn strip_driver_suffix(name: &str) -> String {
    let n = name.trim();
    match n.rfind(" (") {
        Some(i) if n.ends_with(')') && n[i..].contains("RADV") => n[..i].trim().to_string(),
        _ => n.to_string(),
    }
}

/// Folds a Vulkan device into the GPU list: the PCI GPU with the same
/// vendor/device id, else a new entry (a CPU device becomes vendor `cpu`).
pub fn merge_device(gpus: &mut Vec<Gpu>, d: &VulkanDevice) {
    let is_cpu = d.is_cpu();
    let ids = (
        d.vendor_id.and_then(|v| u16::try_from(v).ok()),
        d.device_id.and_then(|v| u16::try_from(v).ok()),
    );
    let pos = if is_cpu {
        gpus.iter()
            .position(|g| g.vendor == Vendor::Cpu && g.name == d.name)
    } else {
        gpus.iter()
            .position(|g| ids.1.is_some() && (g.vendor_id, g.device_id) == ids)
    };
    let g = match pos {
        Some(i) => &mut gpus[i],
        None => {
            gpus.push(Gpu {
                vendor: if is_cpu {
                    Vendor::Cpu
                } else {
                    ids.0.map(super::gpu::vendor_of).unwrap_or(Vendor::Other)
                },
                name: d.name.clone(),
                vendor_id: if is_cpu { None } else { ids.0 },
                device_id: if is_cpu { None } else { ids.1 },
                integrated: d.integrated(),
                ..Gpu::default()
            });
            gpus.last_mut().expect("just pushed")
        }
    };
    // pci.ids knows many APUs only by code name ("Phoenix1"); the driver's
    // marketing name ("AMD Radeon 760M") is what users recognise.
    if !is_cpu {
        if let (Some(v), Some(dev)) = (g.vendor_id, g.device_id) {
            let codename_only =
                crate::from::amd::pci_name(v, dev).is_some_and(|n| !n.contains('['));
            if codename_only && Some(&g.name) == super::gpu::pci_name(v, dev).as_ref() {
                let marketing = strip_driver_suffix(&d.name);
                if !marketing.is_empty() {
                    g.name = marketing;
                }
            }
        }
    }
    // Same label as the --from parser ("vulkan:radv"), so RADV and AMDVLK
    // seeing one GPU stay distinguishable.
    let kind = serde_json::to_value(d.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "other".into());
    seen(g, &format!("vulkan:{kind}"));
}

pub fn collect(root: &Root, f: &mut Facts, text_parser: Option<TextParser>) -> String {
    collect_enumerated(root, f, text_parser, None)
}

/// [`collect`], given a live enumeration already run (doctor starts it
/// beside the other checks, since loading the drivers is the slow part);
/// `None` enumerates here.
pub fn collect_enumerated(
    root: &Root,
    f: &mut Facts,
    text_parser: Option<TextParser>,
    enumerated: Option<Enumeration>,
) -> String {
    let enumeration = if root.is_live() {
        if f.vulkan.loader.is_none() {
            Enumeration {
                error: Some("no libvulkan.so.1".into()),
                ..Enumeration::default()
            }
        } else {
            enumerated.unwrap_or_else(|| enumerate_with_timeout(ENUMERATION_TIMEOUT))
        }
    } else {
        let cap = root.run(DEVICES_CMD, DEVICES_CMD, &[]);
        // Captured but unreadable: the devices are unknown (a note says
        // why), not an enumeration that failed.
        if let CmdStatus::Unknown(why) = &cap.status {
            return why.clone();
        }
        match cap.text().map(serde_json::from_str::<Enumeration>) {
            Some(Ok(e)) => e,
            Some(Err(e)) => Enumeration {
                error: Some(format!(".greta/cmd/{DEVICES_CMD}.txt: {e}")),
                ..Enumeration::default()
            },
            None => return replay_vulkaninfo(root, f, text_parser),
        }
    };
    if root.is_live() {
        root.note_cmd(CmdOutput {
            name: DEVICES_CMD.into(),
            status: CmdStatus::Exited(0),
            text: serde_json::to_string_pretty(&enumeration).unwrap_or_default(),
        });
    }
    apply(f, enumeration)
}

fn apply(f: &mut Facts, e: Enumeration) -> String {
    if let Some(err) = &e.error {
        let id = if err.contains("did not finish") {
            "vulkan-enumeration-timeout"
        } else if err.contains("no libvulkan") || err.contains("not loadable") {
            "vulkan-loader-unusable"
        } else {
            "vulkan-enumeration-failed"
        };
        signal(f, id, "vulkan (ash)", err);
    } else {
        scanned(f, "vulkan-devices");
    }
    for d in &e.devices {
        merge_device(&mut f.gpus, d);
        if d.kind != VkFamily::Other && !f.vulkan.drivers.contains(&d.kind) {
            f.vulkan.drivers.push(d.kind);
        }
    }
    let summary: Vec<String> = e
        .devices
        .iter()
        .map(|d| {
            format!(
                "{} [{}]",
                d.name,
                d.device_type
                    .map_or("?", |t| t.vk_name())
                    .to_ascii_lowercase()
            )
        })
        .collect();
    f.vulkan.devices = e.devices;
    match (&e.error, summary.is_empty()) {
        (Some(err), _) => err.clone(),
        (None, true) => "no Vulkan device".into(),
        (None, false) => summary.join(", "),
    }
}

/// Sysroot without a greta enumeration: the captured `vulkaninfo` text,
/// through the `--from` parser (which also merges the GPUs it names).
fn replay_vulkaninfo(root: &Root, f: &mut Facts, parser: Option<TextParser>) -> String {
    for name in ["vulkaninfo-summary", "vulkaninfo"] {
        let out = root.run(name, "vulkaninfo", &[]);
        if let CmdStatus::Unknown(why) = &out.status {
            return format!("{name}: {why}");
        }
        let Some(text) = out.text() else { continue };
        let Some(parse) = parser else {
            return format!("captured {name} present, no parser for it in this build");
        };
        let before = f.vulkan.devices.len();
        parse(text, &format!(".greta/cmd/{name}.txt"), f);
        let n = f.vulkan.devices.len().saturating_sub(before);
        if n > 0 {
            scanned(f, "vulkan-devices");
        }
        return format!("{n} device(s) from captured {name}");
    }
    "not captured".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_and_versions_format_like_vulkaninfo() {
        let u: [u8; 16] = [
            0x6d, 0x65, 0x73, 0x61, 0x32, 0x33, 0x2e, 0x33, 0x2e, 0x36, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(
            greta_vocab::DeviceUuid(u).to_string(),
            "6d657361-3233-2e33-2e36-000000000000"
        );
        assert_eq!(
            greta_vkenum::version_text((1 << 22) | (3 << 12) | 230),
            "1.3.230"
        );
    }

    #[test]
    fn cpu_devices_merge_as_cpu_vendor_and_gpus_by_ids() {
        let mut gpus = vec![Gpu {
            vendor: Vendor::Amd,
            vendor_id: Some(0x1002),
            device_id: Some(0x15bf),
            ..Gpu::default()
        }];
        let radv = VulkanDevice {
            name: "AMD Radeon 760M (RADV GFX1103_R1)".into(),
            kind: VkFamily::Radv,
            device_type: Some(greta_vocab::DeviceType::IntegratedGpu),
            vendor_id: Some(0x1002),
            device_id: Some(0x15bf),
            ..VulkanDevice::default()
        };
        let lvp = VulkanDevice {
            name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            kind: VkFamily::Lavapipe,
            device_type: Some(greta_vocab::DeviceType::Cpu),
            vendor_id: Some(0x10005),
            ..VulkanDevice::default()
        };
        merge_device(&mut gpus, &radv);
        assert_eq!(
            strip_driver_suffix("AMD Radeon 760M (RADV GFX1103_R1)"),
            "AMD Radeon 760M"
        );
        assert_eq!(
            strip_driver_suffix("llvmpipe (LLVM 15.0.6, 256 bits)"),
            "llvmpipe (LLVM 15.0.6, 256 bits)"
        );
        merge_device(&mut gpus, &lvp);
        merge_device(&mut gpus, &lvp);
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].seen_by, vec!["vulkan:radv"]);
        assert_eq!(gpus[1].vendor, Vendor::Cpu);
    }
}
