//! What greta knows about a device, backend-independent.

use greta_vocab::VkDriver;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Vulkan,
    Hip,
    Cuda,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Vulkan => "vulkan",
            BackendKind::Hip => "hip",
            BackendKind::Cuda => "cuda",
        }
    }
}

/// The vocabulary's: the probe reads the same types.
pub use greta_vocab::DeviceType;

/// One memory heap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryHeap {
    pub size: u64,
    pub device_local: bool,
}

/// A cooperative-matrix shape the device supports (`VK_KHR_cooperative_matrix`):
/// `C[m x n] (+)= A[m x k] * B[k x n]` with the given element types.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoopMatShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub a: String,
    pub b: String,
    pub c: String,
    pub result: String,
    /// Subgroup scope (the only scope greta's kernels use).
    pub subgroup_scope: bool,
}

/// Facts about one device, as a backend reports them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub backend: BackendKind,
    /// Position in [`crate::list_devices`] (what `--device N` selects).
    pub index: usize,
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    pub device_type: DeviceType,
    /// Driver id as the API names it, e.g. `MESA_RADV`, `NVIDIA_PROPRIETARY`,
    /// `MESA_LLVMPIPE` (serialised as that name). A type rather than text so
    /// that lavapipe's quirks and the RADV-first preference are matches, not
    /// string compares. HIP and CUDA, which have no `VkDriverId`, report
    /// `AMD_HIP` / `NVIDIA_CUDA` as [`VkDriver::Other`].
    pub driver_id: VkDriver,
    pub driver_name: String,
    pub driver_info: String,
    /// Raw driver version (vendor-specific encoding) and a readable form.
    pub driver_version: u32,
    pub driver_version_text: String,
    /// API version, e.g. `1.3.230` (Vulkan) or the HIP runtime version.
    pub api_version: String,
    /// deviceUUID (Vulkan; CUDA's device UUID), None where the API has
    /// none (HIP). Serialised in vulkaninfo's 8-4-4-4-12 form.
    pub uuid: Option<greta_vocab::DeviceUuid>,
    /// The PCI address, `0000:c1:00.0` (lower-case hex), where the API
    /// gives it: what matches the device to its sysfs card for telemetry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// f16 arithmetic and 16-bit storage both available.
    pub fp16: bool,
    pub int8: bool,
    pub subgroup_size: u32,
    pub min_subgroup_size: u32,
    pub max_subgroup_size: u32,
    pub coop_matrix: Vec<CoopMatShape>,
    pub memory_heaps: Vec<MemoryHeap>,
    /// Device timestamps usable on the compute queue.
    pub timestamps: bool,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f64,
    pub max_storage_buffer_range: u64,
    pub max_allocation_size: u64,
    pub max_workgroup_count: [u32; 3],
    pub max_workgroup_invocations: u32,
    pub max_shared_memory: u32,
    /// Other drivers that expose this same GPU (same deviceUUID), not used.
    pub also_exposed_by: Vec<VkDriver>,
    /// Human notes from discovery (duplicates skipped, missing features).
    pub notes: Vec<String>,
}

impl DeviceInfo {
    /// An empty record (every field zero/empty), for backends filling fields
    /// one by one and for tests.
    pub fn placeholder() -> Self {
        DeviceInfo {
            backend: BackendKind::Vulkan,
            index: 0,
            name: String::new(),
            vendor_id: 0,
            device_id: 0,
            device_type: DeviceType::Other,
            driver_id: VkDriver::Other(String::new()),
            driver_name: String::new(),
            driver_info: String::new(),
            driver_version: 0,
            driver_version_text: String::new(),
            api_version: String::new(),
            uuid: None,
            pci_bus_id: None,
            fp16: false,
            int8: false,
            subgroup_size: 0,
            min_subgroup_size: 0,
            max_subgroup_size: 0,
            coop_matrix: Vec::new(),
            memory_heaps: Vec::new(),
            timestamps: false,
            timestamp_period_ns: 0.0,
            max_storage_buffer_range: 0,
            max_allocation_size: 0,
            max_workgroup_count: [0; 3],
            max_workgroup_invocations: 0,
            max_shared_memory: 0,
            also_exposed_by: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A CPU implementation (lavapipe/llvmpipe, SwiftShader).
    pub fn is_cpu(&self) -> bool {
        self.device_type == DeviceType::Cpu
    }

    /// The f16 x f16 -> f32 subgroup cooperative-matrix shapes, in the
    /// driver's order.
    pub fn coop_f16_f32_shapes(&self) -> impl Iterator<Item = &CoopMatShape> {
        self.coop_matrix.iter().filter(|s| {
            s.subgroup_scope && s.a == "f16" && s.b == "f16" && s.c == "f32" && s.result == "f32"
        })
    }

    /// The f16 x f16 -> f16 subgroup cooperative-matrix shapes (f16
    /// accumulators), in the driver's order.
    pub fn coop_f16_f16_shapes(&self) -> impl Iterator<Item = &CoopMatShape> {
        self.coop_matrix.iter().filter(|s| {
            s.subgroup_scope && s.a == "f16" && s.b == "f16" && s.c == "f16" && s.result == "f16"
        })
    }

    /// The first f16 x f16 -> f32 subgroup cooperative-matrix shape, if any.
    pub fn coop_f16_f32(&self) -> Option<&CoopMatShape> {
        self.coop_f16_f32_shapes().next()
    }
}

/// Which device to open.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeviceSelect {
    /// The best non-CPU device (discrete, then integrated, then virtual);
    /// a CPU device only when nothing else exists.
    #[default]
    Auto,
    /// Position in [`crate::list_devices`], CPU devices included.
    Index(usize),
    /// The first CPU device (lavapipe): what tests and CI use.
    Cpu,
    /// First device whose name contains this text (case-insensitive).
    Name(String),
}

impl std::str::FromStr for DeviceSelect {
    type Err = String;
    /// `auto`, `cpu`, a number, or a name fragment.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err("empty device selector (use auto, cpu, an index or a name)".into());
        }
        Ok(match t.to_ascii_lowercase().as_str() {
            "auto" => DeviceSelect::Auto,
            "cpu" => DeviceSelect::Cpu,
            _ => match t.parse::<usize>() {
                Ok(i) => DeviceSelect::Index(i),
                Err(_) => DeviceSelect::Name(t.to_string()),
            },
        })
    }
}
