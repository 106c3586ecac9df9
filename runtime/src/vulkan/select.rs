//! Enumerating physical devices into [`DeviceInfo`]s and choosing one.

use super::instance::Instance;
use crate::error::RuntimeError;
use crate::info::{BackendKind, CoopMatShape, DeviceInfo, DeviceSelect, MemoryHeap};
use ash::vk;
use greta_vkenum::Description;
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
    /// Its reductions, conversions and per-element operations as well.
    pub has_coop2_ops: bool,
    /// Its workgroup sizes for f16 x f16 -> f32 matrices, with granularities.
    pub coop2_workgroups: Vec<greta_vkenum::coop2::Flex>,
    /// The memory model with device scope (both enabled, or neither).
    pub vulkan_memory_model: bool,
    /// How a pipeline can fix its subgroup size (see [`super::plan::Waves`]).
    pub waves: Option<super::plan::Waves>,
    /// Subgroup-size control comes from VK_EXT_subgroup_size_control (to enable).
    pub waves_by_ext: bool,
    /// VK_KHR_pipeline_executable_properties with `pipelineExecutableInfo`.
    pub executable_info: bool,
    /// Compute units, where a vendor extension tells (`greta_vkenum`).
    pub compute_units: Option<u32>,
}

/// Every physical device greta can use (Vulkan >= 1.2 and a compute
/// queue), read by the one enumerator (`greta-vkenum`, as the doctor reads
/// them), in enumeration order, before de-duplication.
pub fn enumerate(inst: &Instance) -> Result<Vec<Physical>, RuntimeError> {
    // SAFETY: `inst` is a live instance created from its entry with its API version.
    let all = unsafe { greta_vkenum::enumerate(&inst.entry, &inst.raw, inst.api_version) }
        .map_err(|e| match e {
            vk::Result::ERROR_INITIALIZATION_FAILED => RuntimeError::NoDevice(format!(
                "vkEnumeratePhysicalDevices: {e}: a Vulkan driver failed to initialise"
            )),
            _ => RuntimeError::api("vkEnumeratePhysicalDevices", e),
        })?;
    Ok(all
        .into_iter()
        .filter_map(|(pd, d)| physical(pd, d))
        .collect())
}

/// What greta keeps of one device; `None` when greta cannot use it (Vulkan
/// < 1.2, no compute queue).
fn physical(raw: vk::PhysicalDevice, d: Description) -> Option<Physical> {
    if d.api_version < vk::API_VERSION_1_2 {
        tracing::info!(
            "skipping {:?}: Vulkan {} < 1.2",
            d.name,
            d.api_version_text()
        );
        return None;
    }
    let Some(qf) = d.compute_queue_family else {
        tracing::info!("skipping {:?}: no compute queue", d.name);
        return None;
    };
    let mut notes = Vec::new();
    if !d.subgroup_arith {
        notes.push(
            "no subgroup arithmetic in compute shaders: norm/softmax kernels unavailable".into(),
        );
    }
    let shader_f16 = d.shader_f16 == Some(true);
    let sg = d.subgroup_size.unwrap_or(0);
    let info = DeviceInfo {
        backend: BackendKind::Vulkan,
        index: 0,
        name: d.name.clone(),
        vendor_id: d.vendor_id,
        device_id: d.device_id,
        device_type: d.device_type,
        // A 1.2 device always reports its driver id.
        driver_id: d
            .driver
            .clone()
            .unwrap_or_else(|| VkDriver::Other(String::new())),
        driver_name: d.driver_name.clone().unwrap_or_default(),
        driver_info: d.driver_info.clone().unwrap_or_default(),
        driver_version: d.driver_version,
        driver_version_text: d.driver_version_text(),
        api_version: d.api_version_text(),
        uuid: d.uuid,
        pci_bus_id: d.pci_bus.clone(),
        fp16: shader_f16 && d.storage16,
        int8: d.shader_int8,
        subgroup_size: sg,
        min_subgroup_size: d.min_subgroup_size.unwrap_or(sg),
        max_subgroup_size: d.max_subgroup_size.unwrap_or(sg),
        coop_matrix: d
            .coop_shapes
            .iter()
            .map(|c| CoopMatShape {
                m: c.m,
                n: c.n,
                k: c.k,
                a: c.a.clone(),
                b: c.b.clone(),
                c: c.c.clone(),
                result: c.result.clone(),
                subgroup_scope: c.subgroup_scope,
            })
            .collect(),
        memory_heaps: d
            .heaps
            .iter()
            .map(|h| MemoryHeap {
                size: h.size,
                device_local: h.device_local,
            })
            .collect(),
        timestamps: d.timestamp_valid_bits > 0 && d.timestamp_period_ns > 0.0,
        timestamp_period_ns: d.timestamp_period_ns as f64,
        max_storage_buffer_range: d.max_storage_buffer_range as u64,
        max_allocation_size: d.max_allocation_size,
        max_workgroup_count: d.max_workgroup_count,
        max_workgroup_invocations: d.max_workgroup_invocations,
        max_shared_memory: d.max_shared_memory,
        also_exposed_by: Vec::new(),
        notes,
    };
    Some(Physical {
        raw,
        info,
        queue_family: qf,
        pipeline_cache_uuid: d.pipeline_cache_uuid,
        timestamp_valid_bits: d.timestamp_valid_bits,
        min_storage_offset_align: d.min_storage_offset_align,
        subgroup_arith: d.subgroup_arith,
        storage16: d.storage16,
        shader_f16,
        has_coop_ext: d.coop_ext,
        has_coop2: d.coop2,
        has_coop2_ops: d.coop2_ops,
        coop2_workgroups: d.coop2_workgroups.clone(),
        // With the memory model on, a shader may use Device scope (GLSL's
        // memoryBarrierBuffer and atomics: attn_decode_f16's count of its
        // workgroups) only where device scope is on too; a device with the
        // model but not that (Vulkan 1.3 requires both) gets neither.
        vulkan_memory_model: d.vulkan_memory_model && d.vulkan_memory_model_device_scope,
        waves: match (d.min_subgroup_size, d.max_subgroup_size) {
            (Some(min), Some(max)) if d.subgroup_size_control && min <= max => {
                Some(super::plan::Waves {
                    min,
                    max,
                    full: d.compute_full_subgroups,
                    max_subgroups: d.max_compute_workgroup_subgroups,
                })
            }
            _ => None,
        },
        waves_by_ext: d.subgroup_size_control_ext,
        executable_info: d.pipeline_executable_info,
        compute_units: d.compute_units,
    })
}

/// Keeps one entry per GPU (the best-ranked driver, at the position of the
/// GPU's first entry: `greta_vkenum::one_per_gpu`), recording the others in
/// `also_exposed_by` and a note, then numbers the list.
pub fn dedupe(all: Vec<Physical>) -> Vec<Physical> {
    let groups = greta_vkenum::one_per_gpu(&all, |p| greta_vkenum::Identity {
        uuid: p.info.uuid,
        driver: Some(p.info.driver_id.clone()),
    });
    let others: Vec<Vec<VkDriver>> = groups
        .iter()
        .map(|g| {
            g.others
                .iter()
                .map(|&o| all[o].info.driver_id.clone())
                .collect()
        })
        .collect();
    let mut slots: Vec<Option<Physical>> = all.into_iter().map(Some).collect();
    groups
        .iter()
        .zip(others)
        .enumerate()
        .map(|(i, (g, others))| {
            let mut p = slots[g.kept].take().expect("each entry is in one group");
            for o in others {
                let note = greta_vkenum::duplicate_note(&p.info.name, &p.info.driver_id, &o);
                tracing::info!("{note}");
                p.info.notes.push(note);
                p.info.also_exposed_by.push(o);
            }
            p.info.index = i;
            p
        })
        .collect()
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
            .min_by_key(|&i| (greta_vkenum::type_rank(list[i].info.device_type), i))
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
