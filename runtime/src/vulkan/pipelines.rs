//! Compute pipelines: one per (shader, specialization constants), created
//! through the device's pipeline cache and kept for the device's lifetime.

use super::owned::{LogicalDevice, Owned};
use super::plan::{Shader, Wave};
use crate::error::RuntimeError;
use ash::vk;
use std::collections::HashMap;
use std::sync::Arc;

/// Push-constant bytes every pipeline layout reserves (the kernels use <= 32;
/// Vulkan guarantees 128).
pub const PUSH_BYTES: u32 = 64;

/// A compute pipeline and the layouts it was made with, each destroyed on
/// drop (fields drop in order: the pipeline before its layouts).
pub struct Pipeline {
    pub raw: Owned<vk::Pipeline>,
    pub layout: Owned<vk::PipelineLayout>,
    pub set_layout: Owned<vk::DescriptorSetLayout>,
}

/// What tells pipelines apart: the shader, its specialization constants,
/// the storage buffers it binds and the subgroup size it requires.
pub type Key = (Shader, Vec<u32>, u32, Option<Wave>);

#[derive(Default)]
pub struct Pipelines {
    map: HashMap<Key, Pipeline>,
    /// Pipelines created since the cache file was last written.
    pub created: usize,
}

impl Pipelines {
    /// The pipeline for `shader` with specialization constants `spec`
    /// (constant id i = spec[i]), `bindings` storage buffers and the
    /// subgroup size `wave` requires.
    pub fn get(
        &mut self,
        device: &Arc<LogicalDevice>,
        cache: &Owned<vk::PipelineCache>,
        shader: Shader,
        spec: &[u32],
        bindings: u32,
        wave: Option<Wave>,
    ) -> Result<&Pipeline, RuntimeError> {
        let key = (shader, spec.to_vec(), bindings, wave);
        if !self.map.contains_key(&key) {
            let how = Build {
                shader,
                spec,
                bindings,
                wave,
                capture: false,
            };
            let p = create(device, cache.raw(), &how)?;
            self.created += 1;
            self.map.insert(key.clone(), p);
        }
        Ok(&self.map[&key])
    }

    /// How many pipelines exist.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Creates the pipelines of `keys` that do not exist yet, on up to
    /// `threads` threads at once, and returns how many were made. A
    /// driver compiles each pipeline on the calling thread: made one by one
    /// as the gates first need them, a Vulkan `health` spent 1.5-2 s of
    /// its first run on a node in compiles (H200, 2026-11-29). One that
    /// fails is left out quietly: the run that needs it creates it again
    /// and reports the error there, with its op.
    pub fn create_missing(
        &mut self,
        device: &Arc<LogicalDevice>,
        cache: &Owned<vk::PipelineCache>,
        keys: Vec<Key>,
        threads: usize,
    ) -> usize {
        let mut todo: Vec<Key> = Vec::new();
        for k in keys {
            if !self.map.contains_key(&k) && !todo.contains(&k) {
                todo.push(k);
            }
        }
        if todo.is_empty() {
            return 0;
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        // The cache was created without EXTERNALLY_SYNCHRONIZED: the driver
        // serializes its own use of it, so threads may share it.
        let cache = cache.raw();
        let made: Vec<(Key, Pipeline)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads.clamp(1, todo.len()))
                .map(|_| {
                    s.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(k) = todo.get(i) else { break };
                            let how = Build {
                                shader: k.0,
                                spec: &k.1,
                                bindings: k.2,
                                wave: k.3,
                                capture: false,
                            };
                            match create(device, cache, &how) {
                                Ok(p) => out.push((k.clone(), p)),
                                Err(e) => tracing::debug!("pipeline not made ahead: {e}"),
                            }
                        }
                        out
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_default())
                .collect()
        });
        let n = made.len();
        self.created += n;
        self.map.extend(made);
        n
    }
}

/// What a pipeline is made of.
pub struct Build<'a> {
    pub shader: Shader,
    pub spec: &'a [u32],
    pub bindings: u32,
    pub wave: Option<Wave>,
    /// Ask the driver to keep its statistics and code
    /// (VK_KHR_pipeline_executable_properties; the device must have been
    /// opened with it).
    pub capture: bool,
}

/// Creates the pipeline `how` describes through `cache` (null: none).
pub fn create(
    device: &Arc<LogicalDevice>,
    cache: vk::PipelineCache,
    how: &Build<'_>,
) -> Result<Pipeline, RuntimeError> {
    let Build {
        shader,
        spec,
        bindings,
        wave,
        capture,
    } = *how;
    let words = shader.words();
    let binds: Vec<vk::DescriptorSetLayoutBinding> = (0..bindings)
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&binds);
    // Each object below is owned as soon as it exists: an error drops (and
    // destroys) the ones made before it.
    let set_layout = Owned::create(device, |d| {
        // SAFETY: a live device (`d` is the owner's); the create info outlives the call.
        unsafe { d.create_descriptor_set_layout(&info, None) }
    })
    .map_err(|e| RuntimeError::api("vkCreateDescriptorSetLayout", e))?;
    let ranges = [vk::PushConstantRange::default()
        .stage_flags(vk::ShaderStageFlags::COMPUTE)
        .size(PUSH_BYTES)];
    let sets = [set_layout.raw()];
    let info = vk::PipelineLayoutCreateInfo::default()
        .set_layouts(&sets)
        .push_constant_ranges(&ranges);
    let layout = Owned::create(device, |d| {
        // SAFETY: as above; the set layout is live.
        unsafe { d.create_pipeline_layout(&info, None) }
    })
    .map_err(|e| RuntimeError::api("vkCreatePipelineLayout", e))?;
    let info = vk::ShaderModuleCreateInfo::default().code(&words);
    // Needed only while the pipeline is created; dropped at the end.
    let module = Owned::create(device, |d| {
        // SAFETY: as above; `words` is SPIR-V built into greta.
        unsafe { d.create_shader_module(&info, None) }
    })
    .map_err(|e| RuntimeError::api(&format!("vkCreateShaderModule({shader})"), e))?;
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
        .module(module.raw())
        .name(c"main");
    if !spec.is_empty() {
        stage = stage.specialization_info(&spec_info);
    }
    let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default();
    if let Some(w) = wave {
        required = required.required_subgroup_size(w.size);
        stage = stage.push_next(&mut required);
        if w.full {
            stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS);
        }
    }
    let flags = if capture {
        vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
            | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR
    } else {
        vk::PipelineCreateFlags::empty()
    };
    let info = [vk::ComputePipelineCreateInfo::default()
        .flags(flags)
        .stage(stage)
        .layout(layout.raw())];
    let raw = Owned::create(device, |d| {
        // SAFETY: as above; module, layout and cache (or null) are live
        // objects of this device; the cache is internally synchronized (it
        // is created without EXTERNALLY_SYNCHRONIZED); a required subgroup
        // size is only chained on a device opened with subgroup-size
        // control (plan::Limits::waves), within its range.
        unsafe { d.create_compute_pipelines(cache, &info, None) }
            .map(|p| p[0])
            .map_err(|(_, e)| e)
    })
    .map_err(|e| {
        RuntimeError::api(
            &format!(
                "vkCreateComputePipelines({shader}, spec {spec:?}{})",
                wave.map_or(String::new(), |w| format!(", subgroup size {}", w.size))
            ),
            e,
        )
    })?;
    Ok(Pipeline {
        raw,
        layout,
        set_layout,
    })
}
