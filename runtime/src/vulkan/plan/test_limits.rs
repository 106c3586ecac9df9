//! Device limits the planner's tests plan against.

use super::Limits;

/// An NVIDIA H100/H200 as its Vulkan driver reports it (docs/performance.md,
/// vulkaninfo).
pub fn nvidia() -> Limits {
    Limits {
        max_range: u32::MAX as u64,
        offset_align: 16,
        max_invocations: 1024,
        max_shared: 49152,
        subgroup_arith: true,
        coop_f16: Some((16, 8, 16)),
        f16_storage: true,
        coop2: true,
        coop16: true,
        coop16_f16: true,
        subgroup_size: Some(32),
    }
}

/// lavapipe: no cooperative matrix, subgroups of 8.
pub fn lavapipe() -> Limits {
    Limits {
        coop_f16: None,
        coop2: false,
        coop16: false,
        coop16_f16: false,
        subgroup_size: Some(8),
        ..nvidia()
    }
}

/// A device with 16x16x16 f16 x f16 -> f32 cooperative matrices but no f16
/// accumulators (what `linear_f16_cm_cs` is for).
pub fn f32_acc_only() -> Limits {
    Limits {
        coop16_f16: false,
        ..nvidia()
    }
}
