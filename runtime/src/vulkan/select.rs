//! Enumerating physical devices into [`DeviceInfo`]s and choosing one.

use super::instance::Instance;
use crate::{
    BackendKind, CoopMatShape, DeviceInfo, DeviceSelect, DeviceType, MemoryHeap, RuntimeError,
};
use ash::vk;
use greta_vocab::VkDriver;

/// A physical device with what greta read from it.
pub struct Physical {
    pub raw: vk::PhysicalDevice,
    pub info: DeviceInfo,
    pub queue_family: u32,
    pub pipeline_cache_uuid: [u8; 16],
    pub timestamp_valid_bits: u32,
    pub min_storage_offset_align: u64,
    pub subgroup_arith: bool,
    pub storage16: bool,
    pub shader_f16: bool,
    /// VK_KHR_cooperative_matrix present and its feature on.
    pub has_coop_ext: bool,
    /// VK_NV_cooperative_matrix2 with the features `gemm_f16_cm2` needs
    /// (and Vulkan 1.3, for its SPIR-V 1.6).
    pub has_coop2: bool,
    pub vulkan_memory_model: bool,
}

fn ver(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

/// Readable driver version: NVIDIA packs 10.8.8.6 bits, others use the API encoding.
fn driver_ver(vendor: u32, v: u32) -> String {
    if vendor == 0x10de {
        format!("{}.{}.{}", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff)
    } else {
        ver(v)
    }
}

/// ash prints a known `VkDriverId` by its API name (`MESA_RADV`); an id
/// newer than ash is kept as `UNKNOWN_<n>`, as greta has always reported it.
fn driver_id_name(id: vk::DriverId) -> VkDriver {
    let s = format!("{id:?}");
    if s.starts_with("DriverId(") {
        VkDriver::Other(format!("UNKNOWN_{}", id.as_raw()))
    } else {
        VkDriver::from_id_name(&s)
    }
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

/// Every physical device, in enumeration order, before de-duplication.
pub fn enumerate(inst: &Instance) -> Result<Vec<Physical>, RuntimeError> {
    let i = &inst.raw;
    // SAFETY: valid instance.
    let devs = unsafe { i.enumerate_physical_devices() }.map_err(|e| match e {
        vk::Result::ERROR_INITIALIZATION_FAILED => RuntimeError::NoDevice(format!(
            "vkEnumeratePhysicalDevices: {e}: a Vulkan driver failed to initialise"
        )),
        _ => RuntimeError::api("vkEnumeratePhysicalDevices", e),
    })?;
    let mut out = Vec::new();
    for pd in devs {
        if let Some(p) = physical(inst, pd) {
            out.push(p);
        }
    }
    Ok(out)
}

/// The queue family greta submits to: a compute-only one (async compute)
/// where there is one, else any with compute.
fn compute_queue_family(qfs: &[vk::QueueFamilyProperties]) -> Option<usize> {
    qfs.iter()
        .position(|q| {
            q.queue_flags.contains(vk::QueueFlags::COMPUTE)
                && !q.queue_flags.contains(vk::QueueFlags::GRAPHICS)
        })
        .or_else(|| {
            qfs.iter()
                .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
        })
}

/// The device's memory heaps. `pd` was enumerated from `inst`.
fn memory_heaps(inst: &Instance, pd: vk::PhysicalDevice) -> Vec<MemoryHeap> {
    // SAFETY: `pd` is a physical device of `inst`'s live instance.
    let mem = unsafe { inst.raw.get_physical_device_memory_properties(pd) };
    mem.memory_heaps[..mem.memory_heap_count as usize]
        .iter()
        .map(|h| MemoryHeap {
            size: h.size,
            device_local: h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL),
        })
        .collect()
}

/// The cooperative-matrix shapes of a device that has
/// VK_KHR_cooperative_matrix; `pd` was enumerated from `inst`.
fn coop_shapes(inst: &Instance, pd: vk::PhysicalDevice) -> Vec<CoopMatShape> {
    let cm = ash::khr::cooperative_matrix::Instance::new(&inst.entry, &inst.raw);
    // SAFETY: `pd` is a physical device of `inst`'s live instance, and it
    // has VK_KHR_cooperative_matrix (the caller's check).
    match unsafe { cm.get_physical_device_cooperative_matrix_properties(pd) } {
        Ok(list) => list
            .iter()
            .map(|p| CoopMatShape {
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

/// What greta reads from one physical device; `None` when greta cannot use
/// it (Vulkan < 1.2, no compute queue). Each query below is one `unsafe`
/// call on `pd`, a physical device enumerated from `inst`'s live instance,
/// with its output structs chained correctly (ash's builders).
fn physical(inst: &Instance, pd: vk::PhysicalDevice) -> Option<Physical> {
    let i = &inst.raw;
    // SAFETY: see the function's comment.
    let props = unsafe { i.get_physical_device_properties(pd) };
    let api = props.api_version;
    if vk::api_version_major(api) == 1 && vk::api_version_minor(api) < 2 {
        tracing::info!(
            "skipping {:?}: Vulkan {} < 1.2",
            props.device_name_as_c_str(),
            ver(api)
        );
        return None;
    }
    // SAFETY: see the function's comment.
    let exts = unsafe { i.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    let has_ext = |n: &std::ffi::CStr| {
        exts.iter()
            .any(|e| e.extension_name_as_c_str().is_ok_and(|x| x == n))
    };
    let has_coop_ext = has_ext(ash::khr::cooperative_matrix::NAME);
    let mut v11 = vk::PhysicalDeviceVulkan11Properties::default();
    let mut drv = vk::PhysicalDeviceDriverProperties::default();
    let mut sgc = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let subgroup_size_control =
        vk::api_version_minor(api) >= 3 || has_ext(ash::ext::subgroup_size_control::NAME);
    {
        let mut p2 = vk::PhysicalDeviceProperties2::default()
            .push_next(&mut v11)
            .push_next(&mut drv);
        if subgroup_size_control {
            p2 = p2.push_next(&mut sgc);
        }
        // SAFETY: see the function's comment; `sgc` is chained only where
        // Vulkan 1.3 or VK_EXT_subgroup_size_control defines it.
        unsafe { i.get_physical_device_properties2(pd, &mut p2) };
    }
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let coop2_ext = has_coop_ext
        && has_ext(super::coop2::NAME)
        && vk::api_version_minor(api) >= 3
        && inst.api_version >= vk::API_VERSION_1_3;
    let mut c2 = super::coop2::Features::default();
    {
        let mut f2 = vk::PhysicalDeviceFeatures2::default()
            .push_next(&mut f11)
            .push_next(&mut f12);
        if coop2_ext {
            f2 = f2.push_next(&mut c2);
        }
        // SAFETY: see the function's comment; `c2` is chained only where
        // the device has VK_NV_cooperative_matrix2.
        unsafe { i.get_physical_device_features2(pd, &mut f2) };
    }
    let has_coop2 = coop2_ext && c2.usable();
    // SAFETY: see the function's comment.
    let qfs = unsafe { i.get_physical_device_queue_family_properties(pd) };
    let Some(qf) = compute_queue_family(&qfs) else {
        tracing::info!(
            "skipping {:?}: no compute queue",
            props.device_name_as_c_str()
        );
        return None;
    };
    let ts_bits = qfs[qf].timestamp_valid_bits;
    let heaps = memory_heaps(inst, pd);
    let coop = if has_coop_ext {
        coop_shapes(inst, pd)
    } else {
        Vec::new()
    };
    let device_type = DeviceType::from_vk(props.device_type.as_raw());
    let lim = &props.limits;
    let sg_ops = v11.subgroup_supported_operations;
    let subgroup_arith = v11
        .subgroup_supported_stages
        .contains(vk::ShaderStageFlags::COMPUTE)
        && sg_ops.contains(vk::SubgroupFeatureFlags::BASIC | vk::SubgroupFeatureFlags::ARITHMETIC);
    let (min_sg, max_sg) = if subgroup_size_control && sgc.min_subgroup_size > 0 {
        (sgc.min_subgroup_size, sgc.max_subgroup_size)
    } else {
        (v11.subgroup_size, v11.subgroup_size)
    };
    let mut notes = Vec::new();
    if !subgroup_arith {
        notes.push(
            "no subgroup arithmetic in compute shaders: norm/softmax kernels unavailable".into(),
        );
    }
    let info = DeviceInfo {
        backend: BackendKind::Vulkan,
        index: 0,
        name: props
            .device_name_as_c_str()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default(),
        vendor_id: props.vendor_id,
        device_id: props.device_id,
        device_type,
        driver_id: driver_id_name(drv.driver_id),
        driver_name: drv
            .driver_name_as_c_str()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default(),
        driver_info: drv
            .driver_info_as_c_str()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default(),
        driver_version: props.driver_version,
        driver_version_text: driver_ver(props.vendor_id, props.driver_version),
        api_version: ver(api),
        uuid: Some(greta_vocab::DeviceUuid(v11.device_uuid)),
        fp16: f12.shader_float16 == vk::TRUE && f11.storage_buffer16_bit_access == vk::TRUE,
        int8: f12.shader_int8 == vk::TRUE,
        subgroup_size: v11.subgroup_size,
        min_subgroup_size: min_sg,
        max_subgroup_size: max_sg,
        coop_matrix: coop,
        memory_heaps: heaps,
        timestamps: ts_bits > 0 && lim.timestamp_period > 0.0,
        timestamp_period_ns: lim.timestamp_period as f64,
        max_storage_buffer_range: lim.max_storage_buffer_range as u64,
        max_allocation_size: v11.max_memory_allocation_size,
        max_workgroup_count: lim.max_compute_work_group_count,
        max_workgroup_invocations: lim.max_compute_work_group_invocations,
        max_shared_memory: lim.max_compute_shared_memory_size,
        also_exposed_by: Vec::new(),
        notes,
    };
    Some(Physical {
        raw: pd,
        info,
        queue_family: qf as u32,
        pipeline_cache_uuid: props.pipeline_cache_uuid,
        timestamp_valid_bits: ts_bits,
        min_storage_offset_align: lim.min_storage_buffer_offset_alignment.max(4),
        subgroup_arith,
        storage16: f11.storage_buffer16_bit_access == vk::TRUE,
        shader_f16: f12.shader_float16 == vk::TRUE,
        has_coop_ext,
        has_coop2,
        vulkan_memory_model: f12.vulkan_memory_model == vk::TRUE,
    })
}

/// Rank of a driver when two expose the same GPU: [`VkDriver::preference`]
/// (RADV first, greta's primary target, then the vendors' own drivers,
/// then the rest).
fn driver_rank(d: &DeviceInfo) -> u32 {
    d.driver_id.preference()
}

/// Whether two devices are one GPU: the vocabulary's rule, which the
/// probe's `vulkan.duplicate-gpu` check uses too (a nil deviceUUID names
/// no GPU).
fn same_gpu(a: &DeviceInfo, b: &DeviceInfo) -> bool {
    fn id(d: &DeviceInfo) -> greta_vocab::GpuIdentity<'_> {
        greta_vocab::GpuIdentity {
            uuid: d.uuid,
            pci: None,
            bare_name: "",
            driver: d.driver_id.family(),
        }
    }
    greta_vocab::same_gpu(&id(a), &id(b)).is_some()
}

/// Keeps one entry per deviceUUID (the best-ranked driver, at the position
/// of the first occurrence), recording the others in `also_exposed_by` and a
/// note, then numbers the list.
pub fn dedupe(all: Vec<Physical>) -> Vec<Physical> {
    let infos: Vec<DeviceInfo> = all.iter().map(|p| p.info.clone()).collect();
    let (keep, merged) = dedupe_infos(infos);
    let mut slots: Vec<Option<Physical>> = all.into_iter().map(Some).collect();
    keep.iter()
        .zip(merged)
        .map(|(&k, info)| {
            let mut p = slots[k].take().unwrap();
            p.info = info;
            p
        })
        .collect()
}

/// The de-duplication itself, on infos: which originals to keep (indices,
/// in output order) and their updated infos.
pub fn dedupe_infos(all: Vec<DeviceInfo>) -> (Vec<usize>, Vec<DeviceInfo>) {
    let mut keep: Vec<usize> = Vec::new();
    let mut out: Vec<DeviceInfo> = Vec::new();
    for (i, d) in all.into_iter().enumerate() {
        let Some(pos) = out.iter().position(|q| same_gpu(q, &d)) else {
            keep.push(i);
            out.push(d);
            continue;
        };
        let (winner, loser) = if driver_rank(&d) < driver_rank(&out[pos]) {
            keep[pos] = i;
            (
                d,
                std::mem::replace(&mut out[pos], DeviceInfo::placeholder()),
            )
        } else {
            (
                std::mem::replace(&mut out[pos], DeviceInfo::placeholder()),
                d,
            )
        };
        let mut winner = winner;
        winner
            .also_exposed_by
            .extend(loser.also_exposed_by.iter().cloned());
        winner.also_exposed_by.push(loser.driver_id.clone());
        let note = if winner.driver_id == loser.driver_id {
            format!(
                "{} is listed twice by the Vulkan loader ({} both times, same deviceUUID: two ICD manifests for one driver?); greta counts it once",
                winner.name, winner.driver_id
            )
        } else {
            format!(
                "{} is exposed by two drivers ({} and {}, same deviceUUID); greta uses {}. Choose with AMD_VULKAN_ICD or VK_DRIVER_FILES",
                winner.name, winner.driver_id, loser.driver_id, winner.driver_id
            )
        };
        tracing::info!("{note}");
        winner.notes.push(note);
        out[pos] = winner;
    }
    for (i, d) in out.iter_mut().enumerate() {
        d.index = i;
    }
    (keep, out)
}

fn type_rank(t: DeviceType) -> u32 {
    match t {
        DeviceType::DiscreteGpu => 0,
        DeviceType::IntegratedGpu => 1,
        DeviceType::VirtualGpu => 2,
        DeviceType::Other => 3,
        DeviceType::Cpu => 4,
    }
}

/// Picks the device `sel` names from a de-duplicated list.
pub fn choose(list: &[Physical], sel: &DeviceSelect) -> Result<usize, RuntimeError> {
    let names = || {
        list.iter()
            .map(|p| format!("{}: {} ({})", p.info.index, p.info.name, p.info.driver_id))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if list.is_empty() {
        return Err(RuntimeError::NoDevice(
            "no Vulkan device found (the loader and a driver are present but expose no device with Vulkan >= 1.2 and a compute queue)".into(),
        ));
    }
    match sel {
        DeviceSelect::Auto => Ok((0..list.len())
            .min_by_key(|&i| (type_rank(list[i].info.device_type), i))
            .unwrap()),
        DeviceSelect::Index(i) => {
            if *i < list.len() {
                Ok(*i)
            } else {
                Err(RuntimeError::NoDevice(format!(
                    "no Vulkan device {i}; devices are: {}",
                    names()
                )))
            }
        }
        DeviceSelect::Cpu => list.iter().position(|p| p.info.is_cpu()).ok_or_else(|| {
            RuntimeError::NoDevice(format!(
                "no CPU Vulkan device (lavapipe); devices are: {}",
                names()
            ))
        }),
        DeviceSelect::Name(n) => {
            let n = n.to_lowercase();
            list.iter()
                .position(|p| p.info.name.to_lowercase().contains(&n))
                .ok_or_else(|| {
                    RuntimeError::NoDevice(format!(
                        "no Vulkan device named like {n:?}; devices are: {}",
                        names()
                    ))
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device whose deviceUUID is `uuid` sixteen times.
    fn info(name: &str, driver: &str, uuid: u8) -> DeviceInfo {
        let mut d = DeviceInfo::placeholder();
        d.name = name.into();
        d.driver_id = VkDriver::from_id_name(driver);
        d.uuid = Some(greta_vocab::DeviceUuid([uuid; 16]));
        d.device_type = DeviceType::IntegratedGpu;
        d
    }

    #[test]
    fn one_gpu_two_drivers_keeps_radv() {
        let (keep, out) = dedupe_infos(vec![
            info("AMD Radeon 760M (AMDVLK)", "AMD_OPEN_SOURCE", 0xaa),
            info("llvmpipe", "MESA_LLVMPIPE", 0xcc),
            info("AMD Radeon 760M (RADV GFX1103_R1)", "MESA_RADV", 0xaa),
        ]);
        assert_eq!(keep, vec![2, 1]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].driver_id, VkDriver::Radv);
        assert_eq!(out[0].index, 0);
        assert_eq!(out[1].index, 1);
        assert_eq!(out[0].also_exposed_by, vec![VkDriver::Amdvlk]);
        assert!(
            out[0]
                .notes
                .iter()
                .any(|n| n.contains("greta uses MESA_RADV")),
            "{:?}",
            out[0].notes
        );
    }

    #[test]
    fn first_of_equals_kept() {
        let (keep, out) = dedupe_infos(vec![
            info("a", "AMD_PROPRIETARY", 0x11),
            info("b", "AMD_OPEN_SOURCE", 0x11),
        ]);
        assert_eq!(keep, vec![0]);
        assert_eq!(out[0].name, "a");
    }
}
