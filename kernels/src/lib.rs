//! GRETA's smoke kernels as data: what each op computes ([`Op`]), the
//! buffers it reads and writes ([`BufferSpec`]), how many bytes and flops it
//! must move (for rates), an independent CPU reference in f64
//! ([`reference()`]), a comparison helper ([`check::compare`]) and the
//! SPIR-V of the GLSL compute shaders in `shaders/` ([`spirv`]).
//!
//! This crate holds no runtime logic: backends (`greta-runtime`) decide how
//! an op maps onto a kernel. Every multi-dimensional buffer is row-major, C
//! order, with no padding: element `[i][j]` of an `R x C` matrix is at
//! `i * C + j`.

#[cfg(test)]
mod attn_mfma_model;
#[cfg(test)]
mod attn_mma_model;
pub mod block;
pub mod check;
pub mod graph;
pub mod hip_src;
mod host;
pub mod matrix_lanes;
#[cfg(test)]
mod matrix_model;
mod ops;
#[cfg(test)]
mod par_tests;
mod reference;
pub mod spirv;
#[cfg(test)]
mod wgmma_model;

pub use host::{DType, HostBuf, PAR_MIN};
pub use ops::{
    attn_decode_chunk, attn_decode_chunks_per_group, attn_decode_splits, memtest_value, rope_table,
    Access, BufferSpec, Facts, MemError, MemReport, Needs, Op, OpError, Precision, RateUnit,
    Region, Scalar, Tolerance, ATTN_DECODE_GROUPS_PER_CU, ATTN_DECODE_MAX_CHUNKS, MEMTEST_PATTERNS,
};
pub use reference::{reference, slow_hash, SLOW_SEED};
