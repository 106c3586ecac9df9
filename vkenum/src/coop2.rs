//! `VK_NV_cooperative_matrix2`, which ash 0.38 (Vulkan 1.3.281) predates:
//! the extension name and its feature struct, laid out as in the Vulkan
//! headers (`VkPhysicalDeviceCooperativeMatrix2FeaturesNV`, structure type
//! 1000593000), so it can be chained into `vkGetPhysicalDeviceFeatures2`
//! and `vkCreateDevice`.

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

    /// The subset greta enables.
    pub fn needed() -> Self {
        Features {
            workgroup_scope: vk::TRUE,
            flexible_dimensions: vk::TRUE,
            tensor_addressing: vk::TRUE,
            ..Features::default()
        }
    }
}

// SAFETY: `Features` is a Vulkan input/output structure (sType, pNext first,
// then the fields of the C definition), valid in both chains.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for Features {}

#[cfg(test)]
mod tests {
    #[test]
    fn layout_matches_the_c_struct() {
        // sType (4) + pad (4) + pNext (8) + 7 x VkBool32 (28) + pad (4).
        assert_eq!(std::mem::size_of::<super::Features>(), 48);
    }
}
