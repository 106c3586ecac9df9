//! Buffers backed by gpu-allocator: device-local storage, host-visible staging.

use super::owned::Allocator;
use crate::error::RuntimeError;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::MemoryLocation;
use std::sync::Arc;

/// Buffers at least this large get their own `VkDeviceMemory` (no sub-allocation
/// waste, and no block-size limit for >= 1 GiB buffers).
const DEDICATED_FROM: u64 = 64 << 20;

/// A buffer and its memory; dropping it destroys the buffer and gives the
/// memory back to the allocator, whose `Arc` it holds (so the allocator,
/// and through it the device, outlive it).
pub struct Buffer {
    pub raw: vk::Buffer,
    alloc: Option<Allocation>,
    pub size: u64,
    /// What it was created with (pool matching).
    pub usage: vk::BufferUsageFlags,
    pub location: MemoryLocation,
    allocator: Arc<Allocator>,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: created from the allocator's device in `create`, destroyed
        // once; owners drop buffers only once no submission uses them.
        unsafe { self.allocator.device().raw.destroy_buffer(self.raw, None) };
        if let Some(a) = self.alloc.take() {
            if let Err(e) = self.allocator.lock().free(a) {
                tracing::warn!("freeing buffer memory: {e}");
            }
        }
    }
}

/// Buffers kept from the last run for the next one. Repeats of a gate and
/// tuning candidates allocate the same sizes again and again; on the
/// NVIDIA driver a GiB buffer freed and allocated anew ran at a third of the
/// bandwidth of one kept (H200, 2026-11-21: fill 1 GiB 870 us against
/// 246 us), and pinning GiBs of staging memory per run costs seconds.
#[derive(Default)]
pub struct Pool {
    free: Vec<Buffer>,
}

impl Pool {
    /// Keep only buffers matching `wanted` (size, usage, location), each
    /// at most once; drop (destroy) the rest before anything new is allocated.
    pub fn trim_to(&mut self, wanted: &[(u64, vk::BufferUsageFlags, MemoryLocation)]) {
        let mut claimed = vec![false; wanted.len()];
        self.free.retain(|b| {
            let hit = wanted.iter().enumerate().position(|(i, w)| {
                !claimed[i] && w.0 == b.size && w.1 == b.usage && w.2 == b.location
            });
            if let Some(i) = hit {
                claimed[i] = true;
            }
            hit.is_some()
        });
    }

    /// A kept buffer of this kind, if any.
    pub fn take(
        &mut self,
        size: u64,
        usage: vk::BufferUsageFlags,
        location: MemoryLocation,
    ) -> Option<Buffer> {
        let i = self
            .free
            .iter()
            .position(|b| b.size == size && b.usage == usage && b.location == location)?;
        Some(self.free.swap_remove(i))
    }

    pub fn put(&mut self, b: Buffer) {
        self.free.push(b);
    }
}

fn oom(what: &str, e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::OutOfMemory(format!("{what}: {e}"))
}

pub fn create(
    allocator: &Arc<Allocator>,
    name: &str,
    size: u64,
    usage: vk::BufferUsageFlags,
    location: MemoryLocation,
) -> Result<Buffer, RuntimeError> {
    let device = &allocator.device().raw;
    let info = vk::BufferCreateInfo::default()
        .size(size.max(16))
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: a live device; the create info outlives the call.
    let raw = unsafe { device.create_buffer(&info, None) }.map_err(|e| match e {
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
            oom(name, e)
        }
        _ => RuntimeError::api(&format!("vkCreateBuffer({name}, {size} bytes)"), e),
    })?;
    // Owned from here on: an error below drops it, which destroys it.
    let mut buf = Buffer {
        raw,
        alloc: None,
        size,
        usage,
        location,
        allocator: allocator.clone(),
    };
    // SAFETY: `raw` is a live buffer of this device.
    let requirements = unsafe { device.get_buffer_memory_requirements(raw) };
    let scheme = if size >= DEDICATED_FROM {
        AllocationScheme::DedicatedBuffer(raw)
    } else {
        AllocationScheme::GpuAllocatorManaged
    };
    let desc = |location| AllocationCreateDesc {
        name,
        requirements,
        location,
        linear: true,
        allocation_scheme: scheme,
    };
    let alloc = {
        let mut a = allocator.lock();
        // Upload staging prefers host-visible VRAM (ReBAR); where that heap is
        // small (256 MiB BAR), fall back to plain host memory.
        match (a.allocate(&desc(location)), location) {
            (Err(e), MemoryLocation::CpuToGpu) => {
                tracing::debug!("{name}: CpuToGpu allocation failed ({e}); trying host memory");
                a.allocate(&desc(MemoryLocation::GpuToCpu))
            }
            (r, _) => r,
        }
    }
    .map_err(|e| oom(&format!("{name} ({size} bytes, {location:?})"), e))?;
    // SAFETY: the handle is only used while the allocation lives (it moves
    // into `buf`, which frees it after destroying the buffer).
    let memory = unsafe { alloc.memory() };
    let offset = alloc.offset();
    // Owned by the buffer from here on: dropping it frees the memory too.
    buf.alloc = Some(alloc);
    // SAFETY: memory from the allocator satisfies the buffer's requirements
    // (they were its input); the buffer has no memory bound yet.
    unsafe { device.bind_buffer_memory(raw, memory, offset) }
        .map_err(|e| RuntimeError::api("vkBindBufferMemory", e))?;
    Ok(buf)
}

impl Buffer {
    /// The property flags of the memory type the buffer got.
    pub fn memory_properties(&self) -> Option<vk::MemoryPropertyFlags> {
        self.alloc.as_ref().map(|a| a.memory_properties())
    }

    /// The mapped bytes of a host-visible buffer.
    pub fn mapped(&mut self) -> Result<&mut [u8], RuntimeError> {
        self.alloc
            .as_mut()
            .and_then(|a| a.mapped_slice_mut())
            .ok_or_else(|| RuntimeError::api("map staging buffer", "memory is not host-visible"))
    }
}
