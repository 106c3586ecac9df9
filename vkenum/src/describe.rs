//! What greta reads from one physical device, as a plain typed value.

use ash::vk;
use greta_vocab::{DeviceType, DeviceUuid, VkDriver};
use std::ffi::CStr;

/// A cooperative-matrix shape (`VK_KHR_cooperative_matrix`):
/// `C[m x n] (+)= A[m x k] * B[k x n]`, element types by short name (`f16`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoopShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub a: String,
    pub b: String,
    pub c: String,
    pub result: String,
    pub subgroup_scope: bool,
}

/// One memory heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heap {
    pub size: u64,
    pub device_local: bool,
}

/// Everything greta reads from a physical device. Fields that need a newer
/// API or an extension the device lacks are `None` or `false`: a query is
/// only made where the device supports it, as the spec requires.
#[derive(Clone, Debug, PartialEq)]
pub struct Description {
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    pub device_type: DeviceType,
    /// The driver by its `VkDriverId` (Vulkan 1.2 or VK_KHR_driver_properties);
    /// an id newer than ash is `UNKNOWN_<n>`, named the same everywhere.
    pub driver: Option<VkDriver>,
    pub driver_name: Option<String>,
    pub driver_info: Option<String>,
    /// Raw, in the vendor's encoding ([`Description::driver_version_text`]).
    pub driver_version: u32,
    pub api_version: u32,
    /// deviceUUID (Vulkan 1.1).
    pub uuid: Option<DeviceUuid>,
    /// The PCI address (`0000:c1:00.0`) from VK_EXT_pci_bus_info, where the
    /// driver offers it (RADV, AMDVLK, NVIDIA; not lavapipe).
    pub pci_bus: Option<String>,
    pub pipeline_cache_uuid: [u8; 16],
    pub subgroup_size: Option<u32>,
    /// Subgroup size range (Vulkan 1.3 or VK_EXT_subgroup_size_control).
    pub min_subgroup_size: Option<u32>,
    pub max_subgroup_size: Option<u32>,
    /// A compute pipeline can require a subgroup size in that range
    /// (`subgroupSizeControl`, compute in `requiredSubgroupSizeStages`;
    /// Vulkan 1.3 or VK_EXT_subgroup_size_control).
    pub subgroup_size_control: bool,
    /// That control is VK_EXT_subgroup_size_control's, to be enabled at
    /// device creation (device or instance older than Vulkan 1.3).
    pub subgroup_size_control_ext: bool,
    /// ... and require full subgroups (`computeFullSubgroups`).
    pub compute_full_subgroups: bool,
    /// `maxComputeWorkgroupSubgroups` (0 where unknown).
    pub max_compute_workgroup_subgroups: u32,
    /// Compute units (SMs on NVIDIA), where the driver says:
    /// VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties2's active
    /// units, else VK_AMD_shader_core_properties' engines x arrays x units
    /// (RADV offers both AMD ones). Core Vulkan does not tell, and a
    /// planner that spreads work over the units needs it.
    pub compute_units: Option<u32>,
    /// VK_KHR_pipeline_executable_properties with `pipelineExecutableInfo`:
    /// a pipeline's compiled code can be asked for its statistics.
    pub pipeline_executable_info: bool,
    /// Basic and arithmetic subgroup operations in compute shaders.
    pub subgroup_arith: bool,
    /// `shaderFloat16` (Vulkan 1.2 or VK_KHR_shader_float16_int8); `None`
    /// where the device cannot be asked (Vulkan 1.0).
    pub shader_f16: Option<bool>,
    pub shader_int8: bool,
    pub storage16: bool,
    pub vulkan_memory_model: bool,
    /// `vulkanMemoryModelDeviceScope`: Device-scope barriers and atomics
    /// under the memory model (required by Vulkan 1.3 beside it).
    pub vulkan_memory_model_device_scope: bool,
    /// VK_KHR_cooperative_matrix is present, with its shapes.
    pub coop_ext: bool,
    pub coop_shapes: Vec<CoopShape>,
    /// VK_NV_cooperative_matrix2 with what `gemm_f16_cm2` needs (and
    /// Vulkan 1.3 on device and instance, for its SPIR-V 1.6).
    pub coop2: bool,
    /// Where `coop2`: the matrices' reductions, conversions between uses
    /// and per-element operations as well (`Features::matrix_ops`).
    pub coop2_ops: bool,
    /// Where `coop2`: the workgroup sizes its f16 x f16 -> f32
    /// workgroup-scope matrices run at, with their granularities.
    pub coop2_workgroups: Vec<crate::coop2::Flex>,
    pub heaps: Vec<Heap>,
    /// The queue family greta submits to: compute-only if there is one.
    pub compute_queue_family: Option<u32>,
    pub timestamp_valid_bits: u32,
    pub timestamp_period_ns: f32,
    pub max_storage_buffer_range: u32,
    /// maxMemoryAllocationSize (Vulkan 1.1 properties; 0 where unknown).
    pub max_allocation_size: u64,
    pub max_workgroup_count: [u32; 3],
    pub max_workgroup_invocations: u32,
    pub max_shared_memory: u32,
    pub min_storage_offset_align: u64,
}

/// `1.3.230`.
pub fn version_text(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

impl Description {
    pub fn api_version_text(&self) -> String {
        version_text(self.api_version)
    }

    /// Readable driver version: NVIDIA packs 10.8.8.6 bits, others use the
    /// API encoding.
    pub fn driver_version_text(&self) -> String {
        let v = self.driver_version;
        if self.vendor_id == 0x10de {
            format!("{}.{}.{}", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff)
        } else {
            version_text(v)
        }
    }

    pub fn is_cpu(&self) -> bool {
        self.device_type == DeviceType::Cpu
    }
}

/// The one naming of a live `VkDriverId`: ash prints a known id by its API
/// name (`MESA_RADV`); an id newer than ash is `UNKNOWN_<n>`.
pub fn driver_of(id: vk::DriverId) -> VkDriver {
    let s = format!("{id:?}");
    if s.starts_with("DriverId(") {
        VkDriver::Other(format!("UNKNOWN_{}", id.as_raw()))
    } else {
        VkDriver::from_id_name(&s)
    }
}

fn text(r: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> Option<String> {
    r.ok()
        .map(|c| c.to_string_lossy().trim().to_string())
        .filter(|s| !s.is_empty())
}

fn component(t: vk::ComponentTypeKHR) -> String {
    match t {
        vk::ComponentTypeKHR::FLOAT16 => "f16".into(),
        vk::ComponentTypeKHR::FLOAT32 => "f32".into(),
        vk::ComponentTypeKHR::FLOAT64 => "f64".into(),
        vk::ComponentTypeKHR::SINT8 => "i8".into(),
        vk::ComponentTypeKHR::UINT8 => "u8".into(),
        vk::ComponentTypeKHR::SINT32 => "i32".into(),
        vk::ComponentTypeKHR::UINT32 => "u32".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The queue family greta submits to: a compute-only one (async compute)
/// where there is one, else any with compute.
fn compute_queue_family(qfs: &[vk::QueueFamilyProperties]) -> Option<usize> {
    let compute = |q: &&vk::QueueFamilyProperties| q.queue_flags.contains(vk::QueueFlags::COMPUTE);
    qfs.iter()
        .position(|q| compute(&q) && !q.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        .or_else(|| qfs.iter().position(|q| compute(&q)))
}

/// Reads one device.
///
/// # Safety
/// `pd` must be a physical device of `instance`, a live instance created
/// from `entry` with API version `instance_api`.
pub unsafe fn describe(
    entry: &ash::Entry,
    instance: &ash::Instance,
    instance_api: u32,
    pd: vk::PhysicalDevice,
) -> Description {
    // Every call below: `pd` belongs to the live `instance` (this
    // function's contract); each output structure is a live local of the
    // type its sType names, chained only where the device supports it (by
    // API version or by the extension that defines it).
    // SAFETY: as above.
    let props = unsafe { instance.get_physical_device_properties(pd) };
    // SAFETY: as above; ash sizes the Vec from the driver's count.
    let exts = unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    let has = |n: &CStr| {
        exts.iter()
            .any(|e| e.extension_name_as_c_str().is_ok_and(|x| x == n))
    };
    let api = props.api_version;
    let v11 = instance_api >= vk::API_VERSION_1_1 && api >= vk::API_VERSION_1_1;
    let v12 = v11 && api >= vk::API_VERSION_1_2;
    let v13 = v11 && api >= vk::API_VERSION_1_3;
    let lim = &props.limits;
    // SAFETY: as above.
    let qfs = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    let queue = compute_queue_family(&qfs);
    // SAFETY: as above.
    let mem = unsafe { instance.get_physical_device_memory_properties(pd) };
    let coop_ext = has(ash::khr::cooperative_matrix::NAME);
    let mut d = Description {
        name: text(props.device_name_as_c_str()).unwrap_or_default(),
        vendor_id: props.vendor_id,
        device_id: props.device_id,
        device_type: DeviceType::from_vk(props.device_type.as_raw()),
        driver: None,
        driver_name: None,
        driver_info: None,
        driver_version: props.driver_version,
        api_version: api,
        uuid: None,
        pci_bus: None,
        pipeline_cache_uuid: props.pipeline_cache_uuid,
        subgroup_size: None,
        min_subgroup_size: None,
        max_subgroup_size: None,
        subgroup_size_control: false,
        subgroup_size_control_ext: false,
        compute_full_subgroups: false,
        max_compute_workgroup_subgroups: 0,
        compute_units: None,
        pipeline_executable_info: false,
        subgroup_arith: false,
        shader_f16: None,
        shader_int8: false,
        storage16: false,
        vulkan_memory_model: false,
        vulkan_memory_model_device_scope: false,
        coop_ext,
        coop_shapes: Vec::new(),
        coop2: false,
        coop2_ops: false,
        coop2_workgroups: Vec::new(),
        heaps: mem.memory_heaps[..(mem.memory_heap_count as usize).min(vk::MAX_MEMORY_HEAPS)]
            .iter()
            .map(|h| Heap {
                size: h.size,
                device_local: h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL),
            })
            .collect(),
        compute_queue_family: queue.map(|q| q as u32),
        timestamp_valid_bits: queue.map_or(0, |q| qfs[q].timestamp_valid_bits),
        timestamp_period_ns: lim.timestamp_period,
        max_storage_buffer_range: lim.max_storage_buffer_range,
        max_allocation_size: 0,
        max_workgroup_count: lim.max_compute_work_group_count,
        max_workgroup_invocations: lim.max_compute_work_group_invocations,
        max_shared_memory: lim.max_compute_shared_memory_size,
        min_storage_offset_align: lim.min_storage_buffer_offset_alignment.max(4),
    };
    if !v11 {
        return d;
    }
    let have_driver = v12 || has(ash::khr::driver_properties::NAME);
    let have_sizes = v13 || has(ash::ext::subgroup_size_control::NAME);
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut sub = vk::PhysicalDeviceSubgroupProperties::default();
    let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut drv = vk::PhysicalDeviceDriverProperties::default();
    let mut size = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let have_pci = has(ash::ext::pci_bus_info::NAME);
    let mut pci = vk::PhysicalDevicePCIBusInfoPropertiesEXT::default();
    let have_sms = has(ash::nv::shader_sm_builtins::NAME);
    let mut sms = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
    let have_amd = has(ash::amd::shader_core_properties::NAME);
    let mut amd = vk::PhysicalDeviceShaderCorePropertiesAMD::default();
    let have_amd2 = has(ash::amd::shader_core_properties2::NAME);
    let mut amd2 = vk::PhysicalDeviceShaderCoreProperties2AMD::default();
    {
        let mut p2 = vk::PhysicalDeviceProperties2::default()
            .push_next(&mut id)
            .push_next(&mut sub)
            .push_next(&mut maint3);
        if have_driver {
            p2 = p2.push_next(&mut drv);
        }
        if have_sizes {
            p2 = p2.push_next(&mut size);
        }
        if have_pci {
            p2 = p2.push_next(&mut pci);
        }
        if have_sms {
            p2 = p2.push_next(&mut sms);
        }
        if have_amd {
            p2 = p2.push_next(&mut amd);
        }
        if have_amd2 {
            p2 = p2.push_next(&mut amd2);
        }
        // SAFETY: as above; the instance is at least 1.1 (`v11`), and the
        // driver and subgroup-size structures are chained only where 1.2/1.3
        // or their extension define them, the vendor ones only with theirs.
        unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
    }
    d.uuid = Some(DeviceUuid(id.device_uuid));
    if have_pci {
        d.pci_bus = Some(format!(
            "{:04x}:{:02x}:{:02x}.{:x}",
            pci.pci_domain, pci.pci_bus, pci.pci_device, pci.pci_function
        ));
    }
    d.compute_units = compute_units(
        have_sms.then_some(sms.shader_sm_count),
        have_amd2.then_some(amd2.active_compute_unit_count),
        have_amd.then_some([
            amd.shader_engine_count,
            amd.shader_arrays_per_engine_count,
            amd.compute_units_per_shader_array,
        ]),
    );
    d.subgroup_size = Some(sub.subgroup_size).filter(|&s| s > 0);
    d.subgroup_arith = sub.supported_stages.contains(vk::ShaderStageFlags::COMPUTE)
        && sub
            .supported_operations
            .contains(vk::SubgroupFeatureFlags::BASIC | vk::SubgroupFeatureFlags::ARITHMETIC);
    d.max_allocation_size = maint3.max_memory_allocation_size;
    if have_driver {
        d.driver = Some(driver_of(drv.driver_id));
        d.driver_name = text(drv.driver_name_as_c_str());
        d.driver_info = text(drv.driver_info_as_c_str());
    }
    if have_sizes {
        d.min_subgroup_size = Some(size.min_subgroup_size).filter(|&s| s > 0);
        d.max_subgroup_size = Some(size.max_subgroup_size).filter(|&s| s > 0);
        d.max_compute_workgroup_subgroups = size.max_compute_workgroup_subgroups;
    }
    let have_exec_info = has(ash::khr::pipeline_executable_properties::NAME);
    let have_f16 = v12 || has(ash::khr::shader_float16_int8::NAME);
    let mut f16 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
    let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let coop2_ext =
        coop_ext && has(crate::coop2::NAME) && v13 && instance_api >= vk::API_VERSION_1_3;
    let mut c2 = crate::coop2::Features::default();
    let mut sizes = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
    let mut exec_info = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
    {
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut s16);
        if have_sizes {
            f2 = f2.push_next(&mut sizes);
        }
        if have_exec_info {
            f2 = f2.push_next(&mut exec_info);
        }
        if v12 {
            // 1.2's own structure holds float16/int8 and the memory model.
            f2 = f2.push_next(&mut f12);
        } else if have_f16 {
            f2 = f2.push_next(&mut f16);
        }
        if coop2_ext {
            f2 = f2.push_next(&mut c2);
        }
        // SAFETY: as above; Vulkan12Features only on 1.2 (never beside the
        // float16/int8 structure it contains), that structure only with 1.2
        // or its extension, the NV structure only with its extension.
        unsafe { instance.get_physical_device_features2(pd, &mut f2) };
    }
    d.storage16 = s16.storage_buffer16_bit_access == vk::TRUE;
    if v12 {
        d.shader_f16 = Some(f12.shader_float16 == vk::TRUE);
        d.shader_int8 = f12.shader_int8 == vk::TRUE;
        d.vulkan_memory_model = f12.vulkan_memory_model == vk::TRUE;
        d.vulkan_memory_model_device_scope = f12.vulkan_memory_model_device_scope == vk::TRUE;
    } else {
        d.shader_f16 = Some(have_f16 && f16.shader_float16 == vk::TRUE);
        d.shader_int8 = have_f16 && f16.shader_int8 == vk::TRUE;
    }
    d.coop2 = coop2_ext && c2.usable();
    d.coop2_ops = d.coop2 && c2.matrix_ops();
    d.subgroup_size_control = have_sizes
        && sizes.subgroup_size_control == vk::TRUE
        && size
            .required_subgroup_size_stages
            .contains(vk::ShaderStageFlags::COMPUTE);
    d.subgroup_size_control_ext = d.subgroup_size_control
        && !(api >= vk::API_VERSION_1_3 && instance_api >= vk::API_VERSION_1_3);
    d.compute_full_subgroups = have_sizes && sizes.compute_full_subgroups == vk::TRUE;
    d.pipeline_executable_info = have_exec_info && exec_info.pipeline_executable_info == vk::TRUE;
    if coop_ext {
        d.coop_shapes = coop_shapes(entry, instance, pd);
    }
    if d.coop2 {
        // SAFETY: `pd` of the live `instance` from `entry`, with the
        // extension (coop2 implies it).
        d.coop2_workgroups = unsafe { crate::coop2::workgroup_sizes(entry, instance, pd) };
    }
    d
}

/// The compute units from what the vendor extensions said: NVIDIA's SM
/// count, AMD's active units, else AMD's layout multiplied out (checked:
/// the numbers come from a driver). Zero, an overflow or a count past any
/// GPU's is no answer.
fn compute_units(sms: Option<u32>, active: Option<u32>, layout: Option<[u32; 3]>) -> Option<u32> {
    const MOST: u32 = 1 << 16;
    let layout = layout.and_then(|[e, a, u]| e.checked_mul(a)?.checked_mul(u));
    [sms, active, layout]
        .into_iter()
        .flatten()
        .find(|&n| (1..=MOST).contains(&n))
}

/// The cooperative-matrix shapes of a device that has VK_KHR_cooperative_matrix.
fn coop_shapes(
    entry: &ash::Entry,
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> Vec<CoopShape> {
    let cm = ash::khr::cooperative_matrix::Instance::new(entry, instance);
    // SAFETY: `pd` is a physical device of the live `instance` with
    // VK_KHR_cooperative_matrix (the caller's check).
    match unsafe { cm.get_physical_device_cooperative_matrix_properties(pd) } {
        Ok(list) => list
            .iter()
            .map(|p| CoopShape {
                m: p.m_size,
                n: p.n_size,
                k: p.k_size,
                a: component(p.a_type),
                b: component(p.b_type),
                c: component(p.c_type),
                result: component(p.result_type),
                subgroup_scope: p.scope == vk::ScopeKHR::SUBGROUP,
            })
            .collect(),
        Err(e) => {
            tracing::warn!("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR: {e}");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::compute_units;

    /// NVIDIA's SM count first, then AMD's active units (a harvested part
    /// has fewer than its layout), then the layout multiplied out.
    #[test]
    fn compute_units_come_from_the_first_vendor_answer() {
        assert_eq!(compute_units(Some(132), None, None), Some(132));
        assert_eq!(compute_units(None, Some(12), Some([1, 2, 8])), Some(12));
        assert_eq!(compute_units(None, None, Some([1, 2, 6])), Some(12));
        assert_eq!(compute_units(None, None, None), None);
    }

    /// A driver's zero or an absurd layout gives no count, never a wrapped
    /// product or a panic.
    #[test]
    fn zero_and_overflowing_layouts_are_no_answer() {
        assert_eq!(compute_units(Some(0), None, None), None);
        assert_eq!(compute_units(None, Some(0), Some([2, 2, 3])), Some(12));
        assert_eq!(compute_units(None, None, Some([u32::MAX, 2, 2])), None);
        assert_eq!(compute_units(None, None, Some([1 << 12, 1 << 12, 1])), None);
    }
}
