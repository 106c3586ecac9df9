//! Recording into a command buffer: the [`Recorder`] every Vulkan run and
//! graph replay records through, and one repeat of a plan's dispatches.

use super::memory::Buffer;
use super::plan::Plan;
use super::run::PipelineHandles;
use super::submit::api;
use crate::error::RuntimeError;
use ash::vk;

pub(super) const SHADER_RW: vk::AccessFlags = vk::AccessFlags::from_raw(
    vk::AccessFlags::SHADER_READ.as_raw() | vk::AccessFlags::SHADER_WRITE.as_raw(),
);

/// One repeat of the plan: its dispatches, then those of each later pass
/// behind a barrier (descriptor sets in [`Plan::all_dispatches`] order);
/// `timed` = the query pool and repeat index whose two timestamps bracket it.
pub(super) fn record_pass(
    rec: &Recorder<'_>,
    plan: &Plan,
    pipe: PipelineHandles,
    later: &[PipelineHandles],
    sets: &[vk::DescriptorSet],
    timed: Option<(vk::QueryPool, u32)>,
) {
    let layout = pipe.layout;
    rec.bind_pipeline(pipe.raw);
    // BOTTOM_OF_PIPE, not TOP_OF_PIPE: a top-of-pipe timestamp is written
    // as soon as the command is reached, while the previous repeat may
    // still run (the barrier between repeats holds back compute work, not
    // timestamps), and then counts part of that repeat too. Seen on the
    // H200 (2026-11-21): fill 1 GiB measured 870 us per repeat against
    // 246 us for the first. Bottom-of-pipe waits for all earlier work.
    if let Some((q, r)) = timed {
        rec.timestamp(q, 2 * r);
    }
    for (di, disp) in plan.dispatches.iter().enumerate() {
        if plan.per_dispatch && di > 0 {
            // A dependent chain: each dispatch waits for the previous one.
            rec.barrier(
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_WRITE,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                SHADER_RW,
            );
        }
        if let Some(&set) = sets.get(di) {
            rec.bind_set(layout, set);
        }
        if !disp.push.is_empty() {
            let bytes: Vec<u8> = disp.push.iter().flat_map(|w| w.to_le_bytes()).collect();
            rec.push_constants(layout, &bytes);
        }
        rec.dispatch(disp.groups);
    }
    let mut set_at = plan.dispatches.len();
    for (pass, p) in plan.then.iter().zip(later) {
        // The previous pass's results are what this one reads.
        rec.barrier(
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::AccessFlags::SHADER_WRITE,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            SHADER_RW,
        );
        rec.bind_pipeline(p.raw);
        for disp in &pass.dispatches {
            if let Some(&set) = sets.get(set_at) {
                rec.bind_set(p.layout, set);
            }
            set_at += 1;
            if !disp.push.is_empty() {
                let bytes: Vec<u8> = disp.push.iter().flat_map(|w| w.to_le_bytes()).collect();
                rec.push_constants(p.layout, &bytes);
            }
            rec.dispatch(disp.groups);
        }
    }
    if let Some((q, r)) = timed {
        rec.timestamp(q, 2 * r + 1);
    }
}

/// Records into one command buffer. Every method's SAFETY rests on the
/// same facts: `cmd` was allocated from `d`'s pool and is recording
/// (between [`Recorder::begin`] and [`Recorder::end`]) on this thread only,
/// and each handle passed in is a live object of `d` that the run's
/// `Resources` (or the device's pipeline cache) keep alive until the
/// submission has completed or been abandoned.
pub(super) struct Recorder<'a> {
    pub(super) d: &'a ash::Device,
    pub(super) cmd: vk::CommandBuffer,
}

impl Recorder<'_> {
    pub(super) fn begin(&self) -> Result<(), RuntimeError> {
        let info = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: a freshly allocated command buffer (initial state).
        unsafe { self.d.begin_command_buffer(self.cmd, &info) }.map_err(api("vkBeginCommandBuffer"))
    }

    pub(super) fn end(&self) -> Result<(), RuntimeError> {
        // SAFETY: recording (see the type); no query is active.
        unsafe { self.d.end_command_buffer(self.cmd) }.map_err(api("vkEndCommandBuffer"))
    }

    /// Makes the copies back to the staging buffers visible to the host,
    /// then ends recording: how every submission greta waits on finishes.
    pub(super) fn end_for_host(&self) -> Result<(), RuntimeError> {
        self.barrier(
            vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::TRANSFER_WRITE,
            vk::PipelineStageFlags::HOST,
            vk::AccessFlags::HOST_READ,
        );
        self.end()
    }

    pub(super) fn reset_queries(&self, pool: vk::QueryPool, count: u32) {
        // SAFETY: recording (see the type); `count` is the pool's size.
        unsafe { self.d.cmd_reset_query_pool(self.cmd, pool, 0, count) }
    }

    pub(super) fn timestamp(&self, pool: vk::QueryPool, query: u32) {
        // SAFETY: recording (see the type); `query` < the pool's size, reset
        // at the start of this buffer and written once.
        unsafe {
            self.d.cmd_write_timestamp(
                self.cmd,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                pool,
                query,
            )
        }
    }

    /// Copies the first `size` bytes of `src` into `dst`.
    pub(super) fn copy(&self, src: &Buffer, dst: &Buffer, size: u64) {
        let region = [vk::BufferCopy {
            src_offset: 0,
            dst_offset: 0,
            size,
        }];
        // SAFETY: recording (see the type); both buffers hold `size` bytes
        // (twins of one size) with TRANSFER_SRC/DST usage.
        unsafe { self.d.cmd_copy_buffer(self.cmd, src.raw, dst.raw, &region) }
    }

    /// Copies `size` bytes of `src` from `src_at` into `dst` at `dst_at`.
    pub(super) fn copy_at(&self, src: &Buffer, src_at: u64, dst: &Buffer, dst_at: u64, size: u64) {
        let region = [vk::BufferCopy {
            src_offset: src_at,
            dst_offset: dst_at,
            size,
        }];
        // SAFETY: recording (see the type); the caller keeps both ranges
        // inside their buffers, which have TRANSFER_SRC/DST usage.
        unsafe { self.d.cmd_copy_buffer(self.cmd, src.raw, dst.raw, &region) }
    }

    /// Fills the whole of `dst` with the 32-bit word `value`.
    pub(super) fn fill(&self, dst: &Buffer, value: u32) {
        // SAFETY: recording (see the type); `dst` has TRANSFER_DST usage and
        // WHOLE_SIZE covers it from offset 0.
        unsafe {
            self.d
                .cmd_fill_buffer(self.cmd, dst.raw, 0, vk::WHOLE_SIZE, value)
        }
    }

    /// A global memory barrier: `src` accesses of `src_stage` before it are
    /// visible to `dst` accesses of `dst_stage` after it.
    pub(super) fn barrier(
        &self,
        src_stage: vk::PipelineStageFlags,
        src: vk::AccessFlags,
        dst_stage: vk::PipelineStageFlags,
        dst: vk::AccessFlags,
    ) {
        let mb = [vk::MemoryBarrier::default()
            .src_access_mask(src)
            .dst_access_mask(dst)];
        // SAFETY: recording (see the type); the access masks belong to the stages.
        unsafe {
            self.d.cmd_pipeline_barrier(
                self.cmd,
                src_stage,
                dst_stage,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            )
        }
    }

    pub(super) fn bind_pipeline(&self, pipeline: vk::Pipeline) {
        // SAFETY: recording (see the type); a compute pipeline.
        unsafe {
            self.d
                .cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, pipeline)
        }
    }

    pub(super) fn bind_set(&self, layout: vk::PipelineLayout, set: vk::DescriptorSet) {
        // SAFETY: recording (see the type); the set was allocated with the
        // layout's set layout and written before recording.
        unsafe {
            self.d.cmd_bind_descriptor_sets(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                layout,
                0,
                &[set],
                &[],
            )
        }
    }

    pub(super) fn push_constants(&self, layout: vk::PipelineLayout, bytes: &[u8]) {
        // SAFETY: recording (see the type); the layout reserves PUSH_BYTES
        // for compute and plans push at most that many.
        unsafe {
            self.d
                .cmd_push_constants(self.cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, bytes)
        }
    }

    pub(super) fn dispatch(&self, groups: [u32; 3]) {
        // SAFETY: recording (see the type) with a compute pipeline bound;
        // plans keep each group count within the device's limits.
        unsafe {
            self.d
                .cmd_dispatch(self.cmd, groups[0], groups[1], groups[2])
        }
    }
}
