//! `VK_NV_cooperative_matrix2`, which ash 0.38 (Vulkan 1.3.281) predates:
//! the extension name, its feature struct (`VkPhysicalDeviceCooperativeMatrix2FeaturesNV`,
//! structure type 1000593000, chained into `vkGetPhysicalDeviceFeatures2`
//! and `vkCreateDevice`) and its flexible-dimension properties
//! (`VkCooperativeMatrixFlexibleDimensionsPropertiesNV`, structure type
//! 1000593001, from `vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`),
//! laid out as in the Vulkan headers.

use ash::vk;
use std::ffi::{c_void, CStr};

pub const NAME: &CStr = c"VK_NV_cooperative_matrix2";

const STRUCTURE_TYPE: vk::StructureType = vk::StructureType::from_raw(1_000_593_000);

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Features {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub workgroup_scope: vk::Bool32,
    pub flexible_dimensions: vk::Bool32,
    pub reductions: vk::Bool32,
    pub conversions: vk::Bool32,
    pub per_element_operations: vk::Bool32,
    pub tensor_addressing: vk::Bool32,
    pub block_loads: vk::Bool32,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            s_type: STRUCTURE_TYPE,
            p_next: std::ptr::null_mut(),
            workgroup_scope: vk::FALSE,
            flexible_dimensions: vk::FALSE,
            reductions: vk::FALSE,
            conversions: vk::FALSE,
            per_element_operations: vk::FALSE,
            tensor_addressing: vk::FALSE,
            block_loads: vk::FALSE,
        }
    }
}

impl Features {
    /// What greta's `gemm_f16_cm2` kernel uses: workgroup-scope matrices of
    /// any tile size, loaded through tensor layouts.
    pub fn usable(&self) -> bool {
        self.workgroup_scope == vk::TRUE
            && self.flexible_dimensions == vk::TRUE
            && self.tensor_addressing == vk::TRUE
    }

    /// Whether the matrices can also be reduced along rows, converted
    /// between uses and changed element by element: what a kernel that
    /// keeps a softmax in its matrices (`attn_prefill_f16_cm2`) needs.
    pub fn matrix_ops(&self) -> bool {
        self.reductions == vk::TRUE
            && self.conversions == vk::TRUE
            && self.per_element_operations == vk::TRUE
    }

    /// The subset greta enables: what `usable` checks, and the matrix
    /// operations where `ops`.
    pub fn needed(ops: bool) -> Self {
        let ops = if ops { vk::TRUE } else { vk::FALSE };
        Features {
            workgroup_scope: vk::TRUE,
            flexible_dimensions: vk::TRUE,
            tensor_addressing: vk::TRUE,
            reductions: ops,
            conversions: ops,
            per_element_operations: ops,
            ..Features::default()
        }
    }
}

/// `VkCooperativeMatrixFlexibleDimensionsPropertiesNV`: one combination of
/// types, scope and workgroup size the device runs workgroup-scope
/// matrices of any size at, given as granularities.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FlexibleDimensions {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub m_granularity: u32,
    pub n_granularity: u32,
    pub k_granularity: u32,
    pub a_type: vk::ComponentTypeKHR,
    pub b_type: vk::ComponentTypeKHR,
    pub c_type: vk::ComponentTypeKHR,
    pub result_type: vk::ComponentTypeKHR,
    pub saturating_accumulation: vk::Bool32,
    pub scope: vk::ScopeKHR,
    pub workgroup_invocations: u32,
}

impl Default for FlexibleDimensions {
    fn default() -> Self {
        FlexibleDimensions {
            s_type: vk::StructureType::from_raw(1_000_593_001),
            p_next: std::ptr::null_mut(),
            m_granularity: 0,
            n_granularity: 0,
            k_granularity: 0,
            a_type: vk::ComponentTypeKHR::FLOAT16,
            b_type: vk::ComponentTypeKHR::FLOAT16,
            c_type: vk::ComponentTypeKHR::FLOAT32,
            result_type: vk::ComponentTypeKHR::FLOAT32,
            saturating_accumulation: vk::FALSE,
            scope: vk::ScopeKHR::WORKGROUP,
            workgroup_invocations: 0,
        }
    }
}

/// A workgroup size at which f16 x f16 -> f32 workgroup-scope matrices
/// (greta's cooperative-matrix-2 kernels) run, and the granularities their
/// rows (m), columns (n) and depth (k) must be multiples of there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flex {
    pub workgroup: u32,
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

/// The entries of `list` greta's kernels can use: workgroup scope, f16
/// operands, f32 accumulator and result, no saturation, granularities
/// that are powers of two (as the extension promises; anything else is a
/// driver's garbage and is dropped).
pub fn f16_workgroup_sizes(list: &[FlexibleDimensions]) -> Vec<Flex> {
    let f16 = vk::ComponentTypeKHR::FLOAT16;
    let f32 = vk::ComponentTypeKHR::FLOAT32;
    let mut out: Vec<Flex> = list
        .iter()
        .filter(|e| {
            e.scope == vk::ScopeKHR::WORKGROUP
                && (e.a_type, e.b_type, e.c_type, e.result_type) == (f16, f16, f32, f32)
                && e.saturating_accumulation == vk::FALSE
                && e.workgroup_invocations > 0
                && [e.m_granularity, e.n_granularity, e.k_granularity]
                    .iter()
                    .all(|g| g.is_power_of_two())
        })
        .map(|e| Flex {
            workgroup: e.workgroup_invocations,
            m: e.m_granularity,
            n: e.n_granularity,
            k: e.k_granularity,
        })
        .collect();
    out.sort_by_key(|f| (f.workgroup, f.m, f.n, f.k));
    out.dedup();
    out
}

/// Most entries read from the driver: a device lists a handful.
const MAX_FLEX: u32 = 256;

type GetFlexibleDimensions =
    unsafe extern "system" fn(vk::PhysicalDevice, *mut u32, *mut FlexibleDimensions) -> vk::Result;

/// The device's [`f16_workgroup_sizes`]; empty where the driver has no such
/// function or the call fails.
///
/// # Safety
/// `pd` must be a physical device of `instance`, a live instance created
/// from `entry`, that has VK_NV_cooperative_matrix2.
pub unsafe fn workgroup_sizes(
    entry: &ash::Entry,
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> Vec<Flex> {
    let name = c"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV";
    // SAFETY: a live instance and a NUL-terminated name (the contract).
    let Some(f) = (unsafe { entry.get_instance_proc_addr(instance.handle(), name.as_ptr()) })
    else {
        return Vec::new();
    };
    // SAFETY: the function of that name has this signature (the Vulkan
    // registry's); a non-null pointer from the loader is callable.
    let get: GetFlexibleDimensions = unsafe { std::mem::transmute(f) };
    let mut count = 0u32;
    // SAFETY: the counting call: a live `pd`, a null array.
    let r = unsafe { get(pd, &mut count, std::ptr::null_mut()) };
    if r != vk::Result::SUCCESS {
        tracing::warn!("{}: {r}", name.to_string_lossy());
        return Vec::new();
    }
    let mut list = vec![FlexibleDimensions::default(); count.min(MAX_FLEX) as usize];
    let mut filled = list.len() as u32;
    // SAFETY: `filled` structures, each with its sType, in a live Vec.
    let r = unsafe { get(pd, &mut filled, list.as_mut_ptr()) };
    if r != vk::Result::SUCCESS && r != vk::Result::INCOMPLETE {
        tracing::warn!("{}: {r}", name.to_string_lossy());
        return Vec::new();
    }
    list.truncate(filled.min(list.len() as u32) as usize);
    f16_workgroup_sizes(&list)
}

// SAFETY: `Features` is a Vulkan input/output structure (sType, pNext first,
// then the fields of the C definition), valid in both chains.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for Features {}

#[cfg(test)]
mod tests {
    use super::{f16_workgroup_sizes, Flex, FlexibleDimensions};
    use ash::vk;

    /// Only f16 x f16 -> f32 workgroup-scope entries with power-of-two
    /// granularities count, once each, ordered by workgroup size.
    #[test]
    fn only_the_entries_the_kernels_can_use_are_kept() {
        let e = |wg: u32, g: u32| FlexibleDimensions {
            m_granularity: g,
            n_granularity: g,
            k_granularity: g,
            workgroup_invocations: wg,
            ..FlexibleDimensions::default()
        };
        let list = [
            e(256, 16),
            e(128, 16),
            e(128, 16),
            FlexibleDimensions {
                c_type: vk::ComponentTypeKHR::FLOAT16,
                result_type: vk::ComponentTypeKHR::FLOAT16,
                ..e(64, 16)
            },
            FlexibleDimensions {
                scope: vk::ScopeKHR::SUBGROUP,
                ..e(32, 16)
            },
            FlexibleDimensions {
                saturating_accumulation: vk::TRUE,
                ..e(512, 16)
            },
            e(1024, 24),
            e(0, 16),
        ];
        let f = |workgroup| Flex {
            workgroup,
            m: 16,
            n: 16,
            k: 16,
        };
        assert_eq!(f16_workgroup_sizes(&list), [f(128), f(256)]);
        assert!(f16_workgroup_sizes(&[]).is_empty());
    }

    #[test]
    fn the_flexible_dimensions_layout_matches_the_c_struct() {
        // sType (4) + pad (4) + pNext (8) + 10 x 32-bit fields (40).
        assert_eq!(std::mem::size_of::<FlexibleDimensions>(), 56);
    }

    #[test]
    fn layout_matches_the_c_struct() {
        // sType (4) + pad (4) + pNext (8) + 7 x VkBool32 (28) + pad (4).
        assert_eq!(std::mem::size_of::<super::Features>(), 48);
    }
}
