//! Ownership of Vulkan objects, as in wgpu-hal's Vulkan backend: every
//! object is held by a value whose `Drop` destroys it, and every child holds
//! an `Arc` of its parent, so a parent cannot be destroyed while a child
//! lives (VUID-vkDestroyInstance-instance-00629,
//! VUID-vkDestroyDevice-device-00378). An error anywhere while opening a
//! device or preparing a run just returns: what was created so far is
//! dropped, children first, with no cleanup path written by hand.
//!
//! The one exception is a lost device (a submission timed out): its queue
//! may still use the objects, so their owners are leaked with
//! `std::mem::forget` / `ManuallyDrop` and never dropped (see `Device`'s
//! `Drop` and `run::execute`).

use super::instance::Instance;
use ash::prelude::VkResult;
use ash::vk;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The logical device. It holds its instance's `Arc`, so the instance is
/// destroyed after the device, never before.
pub struct LogicalDevice {
    pub raw: ash::Device,
    instance: Arc<Instance>,
    /// Anything was submitted to a queue of it ([`Self::mark_submitted`]).
    submitted: AtomicBool,
}

impl LogicalDevice {
    /// `vkCreateDevice` on `phys`, a physical device of `instance`.
    pub fn new(
        instance: Arc<Instance>,
        phys: vk::PhysicalDevice,
        info: &vk::DeviceCreateInfo<'_>,
    ) -> VkResult<Arc<Self>> {
        // SAFETY: `phys` was enumerated from this instance; the create info
        // and its chain live across the call; the caller requests only
        // features the device reported as supported.
        let raw = unsafe { instance.raw.create_device(phys, info, None) }?;
        Ok(Arc::new(LogicalDevice {
            raw,
            instance,
            submitted: AtomicBool::new(false),
        }))
    }

    pub fn instance(&self) -> &Instance {
        &self.instance
    }

    /// Queue `index` of `family` (both requested in the create info).
    pub fn queue(&self, family: u32, index: u32) -> vk::Queue {
        // SAFETY: the device was created with this queue family and index.
        unsafe { self.raw.get_device_queue(family, index) }
    }

    /// Called before every queue submission.
    pub fn mark_submitted(&self) {
        self.submitted.store(true, Ordering::Relaxed);
    }

    /// `vkDeviceWaitIdle`, where anything was ever submitted (nothing can
    /// be pending otherwise: a compile-only device never submits, and on
    /// Mesa 25.0's RADV without a GPU, `RADV_FORCE_FAMILY`, the call itself
    /// jumps to a null pointer); an error (a lost device) is only logged:
    /// the callers are on the way to destroying objects and cannot do better.
    pub fn wait_idle(&self) {
        if !self.submitted.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: a live device; the queue is used by one thread at a time
        // (the `Device` that owns it is `&mut` here or being dropped).
        if let Err(e) = unsafe { self.raw.device_wait_idle() } {
            tracing::warn!("vkDeviceWaitIdle: {e}");
        }
    }
}

impl Drop for LogicalDevice {
    fn drop(&mut self) {
        self.wait_idle();
        // SAFETY: every child object holds an `Arc` of this device, so none
        // is left once this runs; the wait above finished all queued work.
        unsafe { self.raw.destroy_device(None) };
    }
}

/// A handle type destroyed by one `vkDestroy*` call on its device.
pub trait DeviceChild: Copy {
    /// # Safety
    /// `self` was created from `device`, no pending GPU work uses it, and it
    /// is destroyed once.
    unsafe fn destroy(self, device: &ash::Device);
}

macro_rules! device_child {
    ($($ty:ty => $destroy:ident;)*) => {
        $(impl DeviceChild for $ty {
            unsafe fn destroy(self, device: &ash::Device) {
                // SAFETY: the caller's contract (see the trait).
                unsafe { device.$destroy(self, None) }
            }
        })*
    };
}

device_child! {
    vk::PipelineCache => destroy_pipeline_cache;
    vk::CommandPool => destroy_command_pool;
    vk::DescriptorPool => destroy_descriptor_pool;
    vk::DescriptorSetLayout => destroy_descriptor_set_layout;
    vk::PipelineLayout => destroy_pipeline_layout;
    vk::ShaderModule => destroy_shader_module;
    vk::Pipeline => destroy_pipeline;
    vk::Fence => destroy_fence;
    vk::QueryPool => destroy_query_pool;
}

/// One object of `device`, destroyed on drop. Dropping one that a pending
/// submission still uses would be undefined behaviour: runs wait for their
/// fence first, and after a timeout leak their objects instead.
pub struct Owned<T: DeviceChild> {
    raw: T,
    device: Arc<LogicalDevice>,
}

impl<T: DeviceChild> Owned<T> {
    /// Takes ownership of what `create` makes from the device it is given.
    /// `create` must create the object from that device (its `unsafe`
    /// block's SAFETY comment says so): the object is destroyed there.
    pub fn create(
        device: &Arc<LogicalDevice>,
        create: impl FnOnce(&ash::Device) -> VkResult<T>,
    ) -> VkResult<Self> {
        let raw = create(&device.raw)?;
        Ok(Owned {
            raw,
            device: device.clone(),
        })
    }

    pub fn raw(&self) -> T {
        self.raw
    }
}

impl<T: DeviceChild> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: created from `self.device` (see `create`), destroyed only
        // here; owners drop it only once no submission uses it.
        unsafe { self.raw.destroy(&self.device.raw) }
    }
}

/// A primary command buffer, freed back to its pool on drop; it holds the
/// pool's `Arc`, so the pool outlives it.
pub struct CommandBuffer {
    raw: vk::CommandBuffer,
    pool: Arc<Owned<vk::CommandPool>>,
}

impl CommandBuffer {
    pub fn allocate(pool: &Arc<Owned<vk::CommandPool>>) -> VkResult<Self> {
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool.raw())
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: a live pool of this device; the pool is used by one thread
        // at a time (its `Device` is borrowed mutably for the run).
        let raw = unsafe { pool.device.raw.allocate_command_buffers(&info) }?[0];
        Ok(CommandBuffer {
            raw,
            pool: pool.clone(),
        })
    }

    pub fn raw(&self) -> vk::CommandBuffer {
        self.raw
    }
}

impl Drop for CommandBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated from this pool, freed once, not pending (as for
        // `Owned`).
        unsafe {
            self.pool
                .device
                .raw
                .free_command_buffers(self.pool.raw(), &[self.raw])
        }
    }
}

/// A descriptor pool and the sets allocated from it: the sets are freed
/// with the pool (it is created without FREE_DESCRIPTOR_SET).
pub struct DescriptorSets {
    /// Plain handles: nothing frees them one by one, the pool does.
    pub sets: Vec<vk::DescriptorSet>,
    _pool: Owned<vk::DescriptorPool>,
}

impl DescriptorSets {
    /// One pool holding `layouts.len()` sets of storage buffers (`buffers`
    /// descriptors in all), and one set per layout (none when `buffers` is
    /// 0). An error names the call that failed.
    pub fn new(
        device: &Arc<LogicalDevice>,
        layouts: &[vk::DescriptorSetLayout],
        buffers: u32,
    ) -> Result<Self, (&'static str, vk::Result)> {
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: buffers.max(1),
        }];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(layouts.len() as u32)
            .pool_sizes(&sizes);
        let pool = Owned::create(device, |d| {
            // SAFETY: a live device (`d` is the owner's); the create info
            // outlives the call.
            unsafe { d.create_descriptor_pool(&info, None) }
        })
        .map_err(|e| ("vkCreateDescriptorPool", e))?;
        let sets = if buffers > 0 {
            let info = vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(pool.raw())
                .set_layouts(layouts);
            // SAFETY: the pool was sized for these sets just above; the
            // layouts are live (the device's pipelines own them).
            unsafe { device.raw.allocate_descriptor_sets(&info) }
                .map_err(|e| ("vkAllocateDescriptorSets", e))?
        } else {
            vec![]
        };
        Ok(DescriptorSets { sets, _pool: pool })
    }
}

/// gpu-allocator's allocator for one device. It holds the device's `Arc`;
/// buffers hold this one's.
pub struct Allocator {
    // Field order: gpu-allocator's `Drop` frees its `VkDeviceMemory` blocks
    // through the device, so it is dropped before the `device` field.
    inner: Mutex<gpu_allocator::vulkan::Allocator>,
    device: Arc<LogicalDevice>,
}

impl Allocator {
    pub fn new(
        device: &Arc<LogicalDevice>,
        phys: vk::PhysicalDevice,
    ) -> Result<Arc<Self>, gpu_allocator::AllocationError> {
        let inner =
            gpu_allocator::vulkan::Allocator::new(&gpu_allocator::vulkan::AllocatorCreateDesc {
                instance: device.instance().raw.clone(),
                device: device.raw.clone(),
                physical_device: phys,
                debug_settings: Default::default(),
                buffer_device_address: false,
                allocation_sizes: Default::default(),
            })?;
        Ok(Arc::new(Allocator {
            inner: Mutex::new(inner),
            device: device.clone(),
        }))
    }

    pub fn device(&self) -> &Arc<LogicalDevice> {
        &self.device
    }

    /// The allocator; a panic while it was locked leaves it consistent
    /// (gpu-allocator does not panic half-way), so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, gpu_allocator::vulkan::Allocator> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
