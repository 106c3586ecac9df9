//! Compute pipelines: one per (shader, specialization constants), created
//! through the device's pipeline cache and kept for the device's lifetime.

use crate::RuntimeError;
use ash::vk;
use std::collections::HashMap;

/// Push-constant bytes every pipeline layout reserves (the kernels use <= 32;
/// Vulkan guarantees 128).
pub const PUSH_BYTES: u32 = 64;

pub struct Pipeline {
    pub raw: vk::Pipeline,
    pub layout: vk::PipelineLayout,
    pub set_layout: vk::DescriptorSetLayout,
}

#[derive(Default)]
pub struct Pipelines {
    map: HashMap<(String, Vec<u32>, u32), Pipeline>,
    /// Pipelines created since the cache file was last written.
    pub created: usize,
}

impl Pipelines {
    /// The pipeline for `shader` with specialization constants `spec`
    /// (constant id i = spec[i]) and `bindings` storage buffers.
    pub fn get(
        &mut self,
        device: &ash::Device,
        cache: vk::PipelineCache,
        shader: &str,
        spec: &[u32],
        bindings: u32,
    ) -> Result<&Pipeline, RuntimeError> {
        let key = (shader.to_string(), spec.to_vec(), bindings);
        if !self.map.contains_key(&key) {
            let p = create(device, cache, shader, spec, bindings)?;
            self.created += 1;
            self.map.insert(key.clone(), p);
        }
        Ok(&self.map[&key])
    }

    pub fn destroy(&mut self, device: &ash::Device) {
        for (_, p) in self.map.drain() {
            // SAFETY: callers destroy pipelines only once the device is idle.
            unsafe {
                device.destroy_pipeline(p.raw, None);
                device.destroy_pipeline_layout(p.layout, None);
                device.destroy_descriptor_set_layout(p.set_layout, None);
            }
        }
    }
}

fn create(
    device: &ash::Device,
    cache: vk::PipelineCache,
    shader: &str,
    spec: &[u32],
    bindings: u32,
) -> Result<Pipeline, RuntimeError> {
    let words = greta_kernels::spirv::words(shader).ok_or_else(|| {
        RuntimeError::Unsupported(format!("shader {shader:?} is not built into this greta"))
    })?;
    let binds: Vec<vk::DescriptorSetLayoutBinding> = (0..bindings)
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    // SAFETY (whole function): valid device; every create info outlives its call;
    // objects created before a failure are destroyed on the error path.
    unsafe {
        let set_layout = device
            .create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&binds),
                None,
            )
            .map_err(|e| RuntimeError::api("vkCreateDescriptorSetLayout", e))?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(PUSH_BYTES)];
        let sets = [set_layout];
        let layout = match device.create_pipeline_layout(
            &vk::PipelineLayoutCreateInfo::default()
                .set_layouts(&sets)
                .push_constant_ranges(&ranges),
            None,
        ) {
            Ok(l) => l,
            Err(e) => {
                device.destroy_descriptor_set_layout(set_layout, None);
                return Err(RuntimeError::api("vkCreatePipelineLayout", e));
            }
        };
        let module = match device
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
        {
            Ok(m) => m,
            Err(e) => {
                device.destroy_pipeline_layout(layout, None);
                device.destroy_descriptor_set_layout(set_layout, None);
                return Err(RuntimeError::api(
                    &format!("vkCreateShaderModule({shader})"),
                    e,
                ));
            }
        };
        let entries: Vec<vk::SpecializationMapEntry> = (0..spec.len() as u32)
            .map(|i| vk::SpecializationMapEntry {
                constant_id: i,
                offset: i * 4,
                size: 4,
            })
            .collect();
        let data: Vec<u8> = spec.iter().flat_map(|v| v.to_le_bytes()).collect();
        let spec_info = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        if !spec.is_empty() {
            stage = stage.specialization_info(&spec_info);
        }
        let info = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout)];
        let res = device.create_compute_pipelines(cache, &info, None);
        device.destroy_shader_module(module, None);
        match res {
            Ok(p) => Ok(Pipeline {
                raw: p[0],
                layout,
                set_layout,
            }),
            Err((_, e)) => {
                device.destroy_pipeline_layout(layout, None);
                device.destroy_descriptor_set_layout(set_layout, None);
                Err(RuntimeError::api(
                    &format!("vkCreateComputePipelines({shader}, spec {spec:?})"),
                    e,
                ))
            }
        }
    }
}
