//! The facts model: what any probe source (live machine, sysroot replay,
//! pasted text) can establish. It is serialised as the `facts` object of the
//! `greta.doctor/v1` JSON, so fields are only ever added, never renamed.
//!
//! Every field is optional or a list because each source sees only part of
//! the machine: a pasted `rocminfo` knows the gfx target but not the PCI
//! address, a sysroot knows the PCI address but maybe not the Vulkan devices.

use greta_vocab::VkFamily;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Facts {
    /// `uname -r` / `/proc/sys/kernel/osrelease`.
    pub kernel_version: Option<String>,
    /// Version of the loaded amdgpu (or nvidia) kernel module, as printed by
    /// `/sys/module/amdgpu/version`, amd-smi or `/proc/driver/nvidia/version`.
    pub kernel_driver_version: Option<String>,
    /// One entry per physical or virtual GPU; sources that see the same GPU
    /// (PCI + KFD + rocminfo + Vulkan) are merged into one entry.
    pub gpus: Vec<Gpu>,
    /// Kernel modules relevant to GPUs (amdgpu, nvidia, ...).
    pub drivers: Vec<KernelDriver>,
    /// `/dev/kfd`, `/dev/dri/renderD*` and whether this user can open them.
    pub device_nodes: Vec<DeviceNode>,
    pub vulkan: Vulkan,
    pub rocm: Rocm,
    pub python: Python,
    /// Error/notice signatures recognised in command output, logs or pasted
    /// text (e.g. `kfd-permission-denied`); rules match on their `id`.
    pub signals: Vec<Signal>,
    /// Hints that we run inside a container (`/.dockerenv`, cgroup names...).
    pub container: Option<String>,
    /// Where the facts came from: "live", "sysroot:DIR", or "from:FILE,...".
    pub sources: Vec<String>,
    /// Areas a source inspected completely, so that an *absence* is a fact:
    /// "pci" (all PCI display devices), "rocm" (every ROCm install location),
    /// "vulkan-loader", "vulkan-icds" (the loader's whole search path),
    /// "vulkan-devices" (a full enumeration), "python" (interpreters on PATH),
    /// "device-nodes" (/dev/kfd and /dev/dri). Pasted text inspects nothing
    /// completely, so "no ROCm found" is never concluded from a rocminfo
    /// paste; one exception, where the paste shows the command and the end
    /// of its output: a whole `lshw -c video` run in a terminal session
    /// listing only virtual or BMC adapters is "pci" (`from::lshw`).
    #[serde(default)]
    pub scanned: Vec<String>,
    /// Windows Subsystem for Linux 2, as a tool said so ("WSL environment
    /// detected.", a `-microsoft-standard-WSL2` kernel). There the GPU is
    /// reached through `/dev/dxg`: no amdgpu module and no `/dev/kfd` is normal.
    #[serde(default)]
    pub wsl: Option<bool>,
    /// Lists a source claimed longer than greta keeps (a paste of a
    /// million `Name: gfx942` lines), each with the length it claimed:
    /// the list holds the first [`crate::from::MAX_LISTED`]. Said in a
    /// note, never serialised.
    #[serde(skip)]
    pub cut: std::collections::BTreeMap<&'static str, usize>,
    /// Facts only the format-agnostic scan of pasted text found (no reader
    /// of a known format printed them), each with the line it stood on:
    /// lower confidence than a reader's, never the sole ground of a `fail`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_scan: Vec<ScanFact>,
}

/// One fact the format-agnostic scan read ("gpu", "rocm_version",
/// "vulkan_driver", and [`GPU_GFX`]: the target it gave a GPU a reader saw
/// without one), its value and the `file:line: text` it came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ScanFact {
    pub fact: String,
    pub value: String,
    pub evidence: String,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Amd,
    Nvidia,
    Intel,
    /// A software device (lavapipe/llvmpipe) or a CPU agent.
    Cpu,
    #[default]
    Other,
}

impl Vendor {
    /// The vendor's PCI id (what `vendor_id` holds), for the vendors that
    /// have one.
    pub fn pci_id(self) -> Option<u16> {
        use crate::from::amd::{AMD, INTEL, NVIDIA};
        match self {
            Vendor::Amd => Some(AMD),
            Vendor::Nvidia => Some(NVIDIA),
            Vendor::Intel => Some(INTEL),
            Vendor::Cpu | Vendor::Other => None,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Gpu {
    pub vendor: Vendor,
    /// Marketing or pci.ids name, e.g. "AMD Instinct MI300X VF".
    pub name: String,
    /// PCI address "0000:83:00.0" when known.
    pub pci_address: Option<String>,
    pub vendor_id: Option<u16>,
    pub device_id: Option<u16>,
    pub revision: Option<u8>,
    pub subsystem_vendor_id: Option<u16>,
    pub subsystem_device_id: Option<u16>,
    /// "gfx942", from KFD `gfx_target_version`, rocminfo or driver strings.
    pub gfx: Option<String>,
    /// SR-IOV virtual function (e.g. MI300X VF 0x74b5, "Linux Guest").
    pub vf: bool,
    /// APU/iGPU (shares system memory) when known.
    pub integrated: Option<bool>,
    pub compute_units: Option<u32>,
    pub vram_bytes: Option<u64>,
    pub gtt_bytes: Option<u64>,
    /// Bound kernel driver ("amdgpu", "nvidia", "vfio-pci"), None if unbound.
    pub kernel_driver: Option<String>,
    /// KFD node / DRM render minor when known.
    pub render_minor: Option<u32>,
    /// Which sources reported this GPU ("pci", "kfd", "rocminfo", "vulkan", ...).
    pub seen_by: Vec<String>,
    /// Its KFD topology node number (the sysfs node directory, rocminfo's
    /// `Node:`): ROCr enumerates GPU agents in this order, which is the
    /// order HIP numbers devices in (see `hip_order`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kfd_node: Option<u32>,
    /// ROCr's device UUID (`GPU-` and the KFD `unique_id` in hex, as
    /// rocminfo prints it and `ROCR_VISIBLE_DEVICES` accepts it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocr_uuid: Option<String>,
    /// The HIP device index an application printed for it (ggml's
    /// `Device N:`), after whatever selection that process had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip_index: Option<u32>,
}

impl Gpu {
    /// An AMD GPU on the amdgpu driver as the AMD tool `tool` reports one
    /// (`amd-smi`, `rocm-smi`); the caller fills in what the tool said.
    pub fn amdgpu_seen_by(tool: &str) -> Gpu {
        Gpu {
            vendor: Vendor::Amd,
            kernel_driver: Some("amdgpu".into()),
            seen_by: vec![tool.into()],
            ..Gpu::default()
        }
    }

    /// The name (`unnamed()` when there is none) with the gfx target added
    /// unless the name already shows it: "AMD Radeon 760M (gfx1103)". One
    /// spelling for the doctor's summary line, `--from` notes and messages.
    pub fn label(&self, unnamed: impl FnOnce() -> String) -> String {
        let name = if self.name.is_empty() {
            unnamed()
        } else {
            self.name.clone()
        };
        match &self.gfx {
            Some(x) if !name.contains(x.as_str()) => format!("{name} ({x})"),
            _ => name,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelDriver {
    pub name: String,
    pub loaded: bool,
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceNode {
    pub path: String,
    pub exists: bool,
    /// Octal permission bits, e.g. "0660".
    pub mode: Option<String>,
    pub group: Option<String>,
    /// Whether the current user can open it read-write (None when unknown,
    /// e.g. replaying a capture of another user).
    pub openable: Option<bool>,
    /// Groups the user would need to join, when not openable.
    pub missing_groups: Vec<String>,
    /// Why `open(O_RDWR)` failed on the live machine ("EACCES", "EPERM":
    /// permission bits vs. a container's device cgroup), when it was tried.
    #[serde(default)]
    pub open_error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Vulkan {
    /// Path of the loader library found (`libvulkan.so.1`), None if missing.
    pub loader: Option<String>,
    /// ICD manifests in the loader's search order.
    pub icds: Vec<Icd>,
    /// Devices enumerated live through ash, or parsed from vulkaninfo text.
    pub devices: Vec<VulkanDevice>,
    /// Driver kinds seen anywhere (ICDs or devices), deduplicated, for rules.
    pub drivers: Vec<VkFamily>,
    /// `AMD_VULKAN_ICD`, `VK_DRIVER_FILES`, `VK_ICD_FILENAMES` as set.
    pub env: Vec<(String, String)>,
    /// Implicit layer names found (e.g. "VK_LAYER_AMD_switchable_graphics_64",
    /// which hides RADV); explicit layers do nothing unless enabled.
    #[serde(default)]
    pub implicit_layers: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Icd {
    pub manifest: String,
    pub library_path: Option<String>,
    pub kind: VkFamily,
    pub api_version: Option<String>,
    /// Whether the library file exists/loads; None when unknown.
    pub library_ok: Option<bool>,
    pub error: Option<String>,
    /// Where the loader found the manifest: "VK_DRIVER_FILES",
    /// "VK_ADD_DRIVER_FILES" or the search directory (e.g. "/usr/share/vulkan/icd.d").
    #[serde(default)]
    pub found_in: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VulkanDevice {
    pub name: String,
    pub kind: VkFamily,
    /// What the API or the tool said the device is (written as the API's
    /// name, "DISCRETE_GPU"; None where the source named no type).
    #[serde(default, with = "greta_vocab::device_type_vk_name")]
    pub device_type: Option<greta_vocab::DeviceType>,
    pub vendor_id: Option<u32>,
    pub device_id: Option<u32>,
    pub driver_name: Option<String>,
    pub driver_info: Option<String>,
    pub api_version: Option<String>,
    /// Read leniently from captures: a text that is no UUID is no UUID
    /// (None), not a capture that cannot be read.
    #[serde(default, deserialize_with = "lenient_uuid")]
    pub device_uuid: Option<greta_vocab::DeviceUuid>,
    /// PCI address when the text shows it (e.g. `MESA_VK_DEVICE_SELECT=list`).
    #[serde(default)]
    pub pci_address: Option<String>,
    pub fp16: Option<bool>,
    pub subgroup_size: Option<u32>,
    pub min_subgroup_size: Option<u32>,
    pub max_subgroup_size: Option<u32>,
    pub cooperative_matrix: Option<bool>,
    /// Compute units (AMD) or streaming multiprocessors (NVIDIA), where the
    /// driver says (`VK_AMD_shader_core_properties`, `VK_NV_shader_sm_builtins`).
    #[serde(default)]
    pub compute_units: Option<u32>,
}

impl VulkanDevice {
    /// A CPU (software) device: lavapipe, or a type that says CPU.
    pub fn is_cpu(&self) -> bool {
        self.kind == VkFamily::Lavapipe || self.device_type == Some(greta_vocab::DeviceType::Cpu)
    }

    /// Integrated (true) or discrete (false), where the type says.
    pub fn integrated(&self) -> Option<bool> {
        match self.device_type? {
            greta_vocab::DeviceType::IntegratedGpu => Some(true),
            greta_vocab::DeviceType::DiscreteGpu => Some(false),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Rocm {
    pub installs: Vec<RocmInstall>,
    /// Version of the active install or the one printed by a tool.
    pub version: Option<String>,
    pub hip_version: Option<String>,
    /// Why the active install is the active one ("ROCM_PATH", "/opt/rocm symlink", ...).
    pub active_reason: Option<String>,
    pub hsa_override_gfx_version: Option<String>,
    /// Entries of LD_LIBRARY_PATH that point into a ROCm tree.
    pub ld_library_path_rocm: Vec<String>,
    /// Whether the HIP/HSA runtime found a GPU agent (None: not run / unknown).
    pub runtime_sees_gpu: Option<bool>,
    /// gfx targets the runtime agents report (rocminfo), e.g. ["gfx942"].
    pub agent_gfx: Vec<String>,
    /// `libamdhip64.so*` files found (the HIP runtime a framework would load).
    #[serde(default)]
    pub hip_libraries: Vec<String>,
    /// `hipconfig` that was run (on PATH or in the active install).
    #[serde(default)]
    pub hipconfig: Option<String>,
    /// The device selection variables as set (`ROCR_VISIBLE_DEVICES`,
    /// `HIP_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES`), empty values kept:
    /// a set but empty variable hides every device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub visible_devices: Vec<(String, String)>,
    /// The HIP device index an application log names as the one a GPU
    /// error happened on (ggml's `current device: N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_hip_device: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RocmInstall {
    pub path: String,
    pub version: Option<String>,
    pub active: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Python {
    pub interpreters: Vec<Interpreter>,
    /// Frameworks installed in greta envs (read from METADATA, never imported).
    pub frameworks: Vec<Framework>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Interpreter {
    pub path: String,
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Framework {
    /// Env directory (or "pasted" for text sources).
    pub env: String,
    pub name: String,
    pub version: String,
    /// "rocm", "cuda" or "cpu" when the build says so.
    pub backend: Option<String>,
    /// e.g. "6.4.43484" from torch.version.hip, "12.4" from torch.version.cuda.
    pub backend_version: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Signal {
    /// Stable id of the signature, e.g. "kfd-permission-denied".
    pub id: String,
    /// File (or command) the line came from, and its 1-based line number.
    pub source: String,
    pub line: Option<usize>,
    /// The matching line, trimmed.
    pub text: String,
}

/// The `seen_by` of a GPU the format-agnostic scan of pasted text named.
pub const TEXT_SCAN: &str = "text-scan";

/// The `text_scan` fact of a gfx target the scan gave to a GPU a reader
/// saw without one (a kernel log's GPU at an address, named in the
/// paste's prose): the GPU is a reader's, its target is not.
pub const GPU_GFX: &str = "gpu_gfx";

impl Facts {
    /// These facts less what only the format-agnostic scan read (the
    /// entries of `text_scan`): GPUs no reader saw, a ROCm release, a
    /// kernel driver version and Vulkan drivers no reader stated. The rules compare a finding's
    /// predicates here and on the whole facts to tell a finding that rests
    /// on a reader's word from one that rests on the scan alone.
    pub fn readers_only(&self) -> Facts {
        let scanned = |fact: &str, value: &str| {
            self.text_scan
                .iter()
                .any(|s| s.fact == fact && s.value == value)
        };
        let mut f = self.clone();
        f.text_scan.clear();
        f.gpus.retain(|g| !g.seen_by.iter().all(|s| s == TEXT_SCAN));
        // A reader's GPU that only the scan named keeps no target a reader
        // did not give.
        for g in &mut f.gpus {
            if g.seen_by.iter().any(|s| s == TEXT_SCAN)
                && g.gfx.as_deref().is_some_and(|t| scanned(GPU_GFX, t))
            {
                g.gfx = None;
            }
        }
        if f.rocm
            .version
            .as_deref()
            .is_some_and(|v| scanned("rocm_version", v))
        {
            f.rocm.version = None;
        }
        if f.kernel_driver_version
            .as_deref()
            .is_some_and(|v| scanned("kernel_driver_version", v))
        {
            f.kernel_driver_version = None;
        }
        f.vulkan
            .drivers
            .retain(|k| !scanned("vulkan_driver", &format!("{k:?}").to_lowercase()));
        f
    }

    /// Facts from JSON written by another source or an older greta, which
    /// may omit fields: every missing field, also inside list elements
    /// (GPUs, ICDs...), takes its default, so only a wrong type fails.
    pub fn from_json_lenient(mut v: serde_json::Value) -> Result<Facts, serde_json::Error> {
        let mut full = serde_json::to_value(Facts::default())?;
        merge_json(&mut full, &mut v, "");
        serde_json::from_value(full)
    }
}

/// The default of one element of a list in the facts, by its JSON path.
fn element_default(path: &str) -> Option<serde_json::Value> {
    use crate::facts as f;
    let v = match path {
        "gpus" => serde_json::to_value(f::Gpu::default()),
        "drivers" => serde_json::to_value(f::KernelDriver::default()),
        "device_nodes" => serde_json::to_value(f::DeviceNode::default()),
        "signals" => serde_json::to_value(f::Signal::default()),
        "vulkan.icds" => serde_json::to_value(f::Icd::default()),
        "vulkan.devices" => serde_json::to_value(f::VulkanDevice::default()),
        "rocm.installs" => serde_json::to_value(f::RocmInstall::default()),
        "python.interpreters" => serde_json::to_value(f::Interpreter::default()),
        "python.frameworks" => serde_json::to_value(f::Framework::default()),
        _ => return None,
    };
    v.ok()
}

/// Overlay `src` onto `dst`, recursing into objects and filling list
/// elements from their type's defaults (scalars replace).
fn merge_json(dst: &mut serde_json::Value, src: &mut serde_json::Value, path: &str) {
    use serde_json::Value;
    match (dst, src) {
        (Value::Object(d), Value::Object(s)) => {
            for (k, v) in s.iter_mut() {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match d.get_mut(k) {
                    Some(dv) => merge_json(dv, v, &sub),
                    None => {
                        d.insert(k.clone(), v.take());
                    }
                }
            }
        }
        (d @ Value::Array(_), Value::Array(s)) => {
            let items = s
                .iter_mut()
                .map(|item| match element_default(path) {
                    Some(mut def) if item.is_object() => {
                        merge_json(&mut def, item, "");
                        def
                    }
                    _ => item.take(),
                })
                .collect();
            *d = Value::Array(items);
        }
        (d, s) => *d = s.take(),
    }
}

/// A device UUID from a capture, or None when the text is not one.
fn lenient_uuid<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<greta_vocab::DeviceUuid>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    Ok(text.and_then(|t| t.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_label_adds_gfx_once_and_falls_back_when_unnamed() {
        let mut g = Gpu {
            name: "AMD Radeon 760M".into(),
            gfx: Some("gfx1103".into()),
            ..Gpu::default()
        };
        assert_eq!(g.label(|| "x".into()), "AMD Radeon 760M (gfx1103)");
        g.name = "AMD Radeon Graphics (RADV GFX1103) gfx1103".into();
        assert_eq!(g.label(|| "x".into()), g.name);
        g.name.clear();
        assert_eq!(g.label(|| "unnamed GPU".into()), "unnamed GPU (gfx1103)");
        g.gfx = None;
        assert_eq!(g.label(|| "unnamed GPU".into()), "unnamed GPU");
    }
}
