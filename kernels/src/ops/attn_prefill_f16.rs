//! `attn_prefill_f16`: causal attention of a block of new tokens over an
//! f16 KV cache (flash-attention style: online softmax over K/V tiles).
use super::attn_decode_f16::{attend, check_head_dim};
use super::*;

/// The same bound as attn_decode_f16 (the same arithmetic per query row:
/// see its TOLERANCE): f16 rounding of the output (<= 2^-10 in norm) plus
/// f16 softmax weights on the matrix units (<= 2^-11), 2e-3.
pub const TOLERANCE: Tolerance = Tolerance::RelNorm(2e-3);
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Compute-bound at the gates' sizes: measured in flops.
pub const FACTS: Facts = Facts { precision: Precision::Fp16, rate: RateUnit::TFlops, needs: Needs::NOTHING };

/// Most head_dim: 32-row tiles of Q, K and V (f16) and the scores stay
/// within 28 KiB of shared memory (a Vulkan workgroup may have as little
/// as 16 KiB: the planner checks the device's limit), and the tensor-core
/// tiles of 64 rows of K and V within the 48 KiB a CUDA block has.
pub const MAX_HEAD_DIM: usize = 128;

pub fn inputs(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, max_seq: usize) -> Vec<BufferSpec> {
    let d = heads * head_dim;
    vec![
        spec("q", DType::F16, tokens * d, Access::Read),
        spec("k_cache", DType::F16, max_seq * d, Access::Read),
        spec("v_cache", DType::F16, max_seq * d, Access::Read),
    ]
}
pub fn outputs(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize) -> Vec<BufferSpec> {
    vec![spec("o", DType::F16, tokens * heads * head_dim, Access::Write)]
}
/// (query, key) pairs the causal mask lets through: token t sees
/// `pos0 + t + 1` positions.
pub fn visible_pairs(tokens: usize, pos0: u32) -> u64 {
    let t = tokens as u64;
    t * pos0 as u64 + t * (t + 1) / 2
}
/// 4 flops per head, dimension and visible pair (QK^T and PV, a
/// multiply-add each), the usual count for causal attention.
pub fn flops(tokens: usize, heads: usize, head_dim: usize, pos0: u32, _max_seq: usize) -> u64 {
    4 * (heads * head_dim) as u64 * visible_pairs(tokens, pos0)
}
pub fn check(tokens: usize, heads: usize, head_dim: usize, pos0: u32, max_seq: usize) -> Result<(), String> {
    nonzero("tokens", tokens)?;
    nonzero("heads", heads)?;
    check_head_dim(head_dim, MAX_HEAD_DIM)?;
    if pos0 as usize + tokens > max_seq {
        return Err(format!("pos0 {pos0} + tokens {tokens} exceeds max_seq {max_seq}"));
    }
    Ok(())
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], tokens: usize, heads: usize, head_dim: usize, pos0: u32, _max_seq: usize) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    let d = heads * head_dim;
    let mut o = vec![0.0; tokens * d];
    // O(tokens^2) work (17 G multiply-adds at the S=2048 gate): the rows
    // are independent, so they are shared out over every core (row t's
    // cost grows with t: rayon's work stealing evens it out).
    o.par_chunks_mut(d).enumerate().for_each(|(t, row)| {
        let visible = pos0 as usize + t + 1;
        row.copy_from_slice(&attend(&x[0][t * d..(t + 1) * d], &x[1], &x[2], heads, head_dim, visible));
    });
    vec![o]
}
/// The position changes the work only through the visible pairs; the
/// cache's capacity not at all.
pub fn shape_class(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize) -> String {
    format!("t{},h{},d{}", bucket(tokens), bucket(heads), bucket(head_dim))
}
/// Tokens not a multiple of any tile, after cached positions.
pub fn example() -> Op {
    Op::AttnPrefillF16 {
        tokens: 37,
        heads: 2,
        head_dim: 16,
        pos0: 5,
        max_seq: 50,
    }
}
