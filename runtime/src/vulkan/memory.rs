//! Buffers backed by gpu-allocator: device-local storage, host-visible staging.

use crate::RuntimeError;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme, Allocator};
use gpu_allocator::MemoryLocation;

/// Buffers at least this large get their own `VkDeviceMemory` (no sub-allocation
/// waste, and no block-size limit for >= 1 GiB buffers).
const DEDICATED_FROM: u64 = 64 << 20;

pub struct Buffer {
    pub raw: vk::Buffer,
    pub alloc: Option<Allocation>,
    pub size: u64,
    /// What it was created with (pool matching).
    pub usage: vk::BufferUsageFlags,
    pub location: MemoryLocation,
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
    /// at most once; destroy the rest before anything new is allocated.
    pub fn trim_to(
        &mut self,
        device: &ash::Device,
        allocator: &mut Allocator,
        wanted: &[(u64, vk::BufferUsageFlags, MemoryLocation)],
    ) {
        let mut keep = Vec::new();
        let mut claimed = vec![false; wanted.len()];
        for b in self.free.drain(..) {
            let hit = wanted.iter().enumerate().position(|(i, w)| {
                !claimed[i] && w.0 == b.size && w.1 == b.usage && w.2 == b.location
            });
            match hit {
                Some(i) => {
                    claimed[i] = true;
                    keep.push(b);
                }
                None => destroy(device, allocator, b),
            }
        }
        self.free = keep;
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

    pub fn clear(&mut self, device: &ash::Device, allocator: &mut Allocator) {
        for b in self.free.drain(..) {
            destroy(device, allocator, b);
        }
    }
}

fn oom(what: &str, e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::OutOfMemory(format!("{what}: {e}"))
}

pub fn create(
    device: &ash::Device,
    allocator: &mut Allocator,
    name: &str,
    size: u64,
    usage: vk::BufferUsageFlags,
    location: MemoryLocation,
) -> Result<Buffer, RuntimeError> {
    let info = vk::BufferCreateInfo::default()
        .size(size.max(16))
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: valid device and create info.
    let raw = unsafe { device.create_buffer(&info, None) }.map_err(|e| match e {
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
            oom(name, e)
        }
        _ => RuntimeError::api(&format!("vkCreateBuffer({name}, {size} bytes)"), e),
    })?;
    // SAFETY: raw is a live buffer of this device.
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
    // Upload staging prefers host-visible VRAM (ReBAR); where that heap is
    // small (256 MiB BAR), fall back to plain host memory.
    let first = allocator.allocate(&desc(location));
    let first = match (first, location) {
        (Err(e), MemoryLocation::CpuToGpu) => {
            tracing::debug!("{name}: CpuToGpu allocation failed ({e}); trying host memory");
            allocator.allocate(&desc(MemoryLocation::GpuToCpu))
        }
        (r, _) => r,
    };
    let alloc = match first {
        Ok(a) => a,
        Err(e) => {
            // SAFETY: the buffer has no memory bound and is not in use.
            unsafe { device.destroy_buffer(raw, None) };
            return Err(oom(&format!("{name} ({size} bytes, {location:?})"), e));
        }
    };
    // SAFETY: memory from the allocator satisfies the buffer's requirements.
    if let Err(e) = unsafe { device.bind_buffer_memory(raw, alloc.memory(), alloc.offset()) } {
        let _ = allocator.free(alloc);
        // SAFETY: not in use.
        unsafe { device.destroy_buffer(raw, None) };
        return Err(RuntimeError::api("vkBindBufferMemory", e));
    }
    Ok(Buffer {
        raw,
        alloc: Some(alloc),
        size,
        usage,
        location,
    })
}

pub fn destroy(device: &ash::Device, allocator: &mut Allocator, mut buf: Buffer) {
    if let Some(a) = buf.alloc.take() {
        let _ = allocator.free(a);
    }
    // SAFETY: callers only destroy buffers no submission uses any more.
    unsafe { device.destroy_buffer(buf.raw, None) };
}

impl Buffer {
    /// The mapped bytes of a host-visible buffer.
    pub fn mapped(&mut self) -> Result<&mut [u8], RuntimeError> {
        self.alloc
            .as_mut()
            .and_then(|a| a.mapped_slice_mut())
            .ok_or_else(|| RuntimeError::api("map staging buffer", "memory is not host-visible"))
    }
}
