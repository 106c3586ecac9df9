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
        coop2_ops: true,
        // What the H200's driver lists (580.159.04): invocations, then
        // the m, n, k granularities.
        coop2_workgroups: coop2_listing(&[
            (32, 16, 16),
            (64, 16, 16),
            (128, 32, 16),
            (256, 32, 32),
        ]),
        coop16: true,
        coop16_f16: true,
        subgroup_size: Some(32),
        waves: None,
        // VK_NV_shader_sm_builtins on an H100/H200 SXM.
        compute_units: Some(132),
    }
}

/// An RDNA3 Radeon as RADV reports it (Mesa 26, drm-shim phoenix/navi31):
/// subgroups of 32 or 64 chosen per pipeline, KHR cooperative matrices of
/// 16x16x16 with f16 and f32 accumulators, 64 KiB of shared memory.
pub fn radv_rdna3() -> Limits {
    Limits {
        max_shared: 65536,
        coop_f16: Some((16, 16, 16)),
        coop2: false,
        coop2_ops: false,
        subgroup_size: None,
        waves: Some(super::Waves {
            min: 32,
            max: 64,
            full: true,
            max_subgroups: 32,
        }),
        // VK_AMD_shader_core_properties2 on a Radeon 780M (phoenix).
        compute_units: Some(12),
        ..nvidia()
    }
}

/// lavapipe: no cooperative matrix, subgroups of 8.
pub fn lavapipe() -> Limits {
    Limits {
        coop_f16: None,
        coop2: false,
        coop2_ops: false,
        coop16: false,
        coop16_f16: false,
        subgroup_size: Some(8),
        compute_units: None,
        ..nvidia()
    }
}

/// A device with 16x16x16 f16 x f16 -> f32 cooperative matrices but no f16
/// accumulators (what `linear_f16_cm_cs` is for), and no
/// VK_NV_cooperative_matrix2.
pub fn f32_acc_only() -> Limits {
    Limits {
        coop16_f16: false,
        coop2: false,
        coop2_ops: false,
        ..nvidia()
    }
}

/// A driver's cooperative-matrix-2 listing: (invocations, m, n)
/// granularities, k always 16.
pub fn coop2_listing(entries: &[(u32, u32, u32)]) -> Vec<greta_vkenum::coop2::Flex> {
    entries
        .iter()
        .map(|&(workgroup, m, n)| greta_vkenum::coop2::Flex {
            workgroup,
            m,
            n,
            k: 16,
        })
        .collect()
}
