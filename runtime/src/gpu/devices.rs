//! The runtime's device records for HIP and CUDA devices: what
//! `greta smoke --list` and `DeviceInfo` carry, from the driver's answers.

use super::compile::CachedObject;
use super::compiler::CompilerChoice;
use super::driver::{Api, Driver, GpuDevice, GpuError};
use crate::info::{BackendKind, DeviceInfo, DeviceType, MemoryHeap};

/// Every device of `driver`, as greta numbers them (the driver's ordinals).
pub fn list<D: Driver>(driver: &D) -> Result<Vec<DeviceInfo>, GpuError> {
    let n = driver.device_count()?;
    (0..n)
        .map(|i| Ok(device_info(driver, &driver.device(i)?, None, None)))
        .collect()
}

/// The runtime's device record for `d`, with what greta loaded and built.
pub fn device_info<D: Driver>(
    driver: &D,
    d: &GpuDevice,
    compiler: Option<&CompilerChoice>,
    object: Option<&CachedObject>,
) -> DeviceInfo {
    let (kind, vendor, driver_id, driver_name) = match d.api {
        Api::Hip => (BackendKind::Hip, 0x1002, "AMD_HIP", "HIP (ROCm)"),
        Api::Cuda => (BackendKind::Cuda, 0x10de, "NVIDIA_CUDA", "CUDA driver API"),
    };
    let mut notes = vec![
        format!("{} runtime: {}", d.api.label(), driver.library()),
        format!(
            "{} compute units, warp {}, target {} (from {})",
            d.compute_units, d.warp_size, d.arch, d.arch_source
        ),
    ];
    if let Some(c) = compiler {
        notes.push(format!(
            "kernels: {} {} for {} ({}){}",
            c.kind.as_str(),
            c.version,
            c.target,
            c.library,
            match object {
                Some(o) if o.compiled => format!(", compiled now into {}", o.path.display()),
                Some(o) => format!(", cached in {}", o.path.display()),
                None => String::new(),
            }
        ));
    }
    DeviceInfo {
        backend: kind,
        index: d.ordinal,
        name: d.name.clone(),
        vendor_id: if d.pci_vendor_id != 0 {
            d.pci_vendor_id
        } else {
            vendor
        },
        device_id: d.pci_device_id,
        device_type: if d.integrated {
            DeviceType::IntegratedGpu
        } else {
            DeviceType::DiscreteGpu
        },
        driver_id: greta_vocab::VkDriver::from_id_name(driver_id),
        driver_name: driver_name.into(),
        driver_info: d.arch.to_string(),
        driver_version: d.driver_version_raw,
        driver_version_text: d.driver_version.clone(),
        api_version: d.runtime_version.clone(),
        uuid: d.uuid,
        pci_bus_id: Some(d.pci_bus_id.trim().to_ascii_lowercase()).filter(|b| !b.is_empty()),
        // Every GPU HIP or CUDA 11+ runs on has f16 arithmetic and storage.
        fp16: true,
        int8: true,
        subgroup_size: d.warp_size,
        min_subgroup_size: d.warp_size,
        max_subgroup_size: d.warp_size,
        coop_matrix: Vec::new(),
        memory_heaps: vec![MemoryHeap {
            size: d.total_memory_bytes,
            device_local: !d.integrated,
        }],
        timestamps: true,
        // Event times resolve about 0.5 µs (CUDA) to 1 µs (HIP).
        timestamp_period_ns: 1000.0,
        max_storage_buffer_range: d.total_memory_bytes,
        max_allocation_size: d.total_memory_bytes,
        max_workgroup_count: d.max_grid,
        max_workgroup_invocations: d.max_threads_per_block,
        max_shared_memory: d.max_shared_memory_per_block,
        also_exposed_by: Vec::new(),
        notes,
    }
}
