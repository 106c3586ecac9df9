//! `rms_gemv_rope_kv_f16`: the attention input of one decode token in one
//! kernel. `n = x / sqrt(mean(x^2) + eps) * g` (RMSNorm in the prologue: the
//! kernel computes the inverse RMS of the short row itself and scales as it
//! loads), `[q; k; v] = W n` (the fused QKV weights `[3 d][d]`, `d = heads
//! x head_dim`), then in the epilogue RoPE of q and k at position `pos0`
//! ([`Op::RopeKvF16`]'s rotation) and the KV-cache write: q out, k and v
//! into row `pos0` of the caches (`[max_seq][heads][head_dim]`; the rest of
//! them survives). f32 arithmetic, each output rounded once to f16.
//!
//! Each unit of work is a pair of output rows `i` and `i + head_dim/2` of
//! one head, the two that RoPE mixes, so the rotation needs nothing from
//! another lane group.
use super::*;

/// As [`super::rope_kv_f16`]: each written element is one f32 result
/// rounded once to f16 (at most 2^-10 relative under either rounding a
/// Vulkan driver may use), the f32 norm, dot products and rotation before
/// it far below; the cache rows not written are compared exactly.
pub const TOLERANCE: Tolerance = Tolerance::RelNorm(1e-3);
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-2.0, 2.0)), ("g", (0.5, 1.5))];
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp16);
/// The unfused steps this kernel does in one.
pub const PARTS: &[&str] = &["rmsnorm_f16", "gemv_f16 (qkv)", "rope_kv_f16 (RoPE, KV write)"];

pub fn inputs(heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32, _eps: f32) -> Vec<BufferSpec> {
    let d = heads * head_dim;
    vec![
        spec("x", DType::F16, d, Access::Read),
        spec("g", DType::F16, d, Access::Read),
        spec("w", DType::F16, 3 * d * d, Access::Read),
    ]
}
pub fn outputs(heads: usize, head_dim: usize, _pos0: u32, max_seq: usize, _theta: f32, _eps: f32) -> Vec<BufferSpec> {
    let d = heads * head_dim;
    vec![
        spec("q", DType::F16, d, Access::Write),
        spec("k_cache", DType::F16, max_seq * d, Access::ReadWrite),
        spec("v_cache", DType::F16, max_seq * d, Access::ReadWrite),
    ]
}
/// x, g and the weights read once; q and the two new cache rows written.
pub fn bytes_moved(heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32, _eps: f32) -> u64 {
    let d = (heads * head_dim) as u64;
    2 * (3 * d * d + 2 * d + 3 * d)
}
/// The dot products; the norm and the rotation are noise.
pub fn flops(heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32, _eps: f32) -> u64 {
    let d = (heads * head_dim) as u64;
    6 * d * d
}
pub fn check(heads: usize, head_dim: usize, pos0: u32, max_seq: usize, theta: f32, eps: f32) -> Result<(), String> {
    nonzero("heads", heads)?;
    nonzero("head_dim", head_dim)?;
    if !head_dim.is_multiple_of(2) {
        return Err(format!("head_dim must be even, got {head_dim}"));
    }
    if pos0 as usize >= max_seq {
        return Err(format!("pos0 {pos0} must be below max_seq {max_seq}"));
    }
    if !(theta.is_finite() && theta > 0.0) {
        return Err(format!("theta must be finite and > 0, got {theta}"));
    }
    super::rmsnorm::check(1, heads * head_dim, eps)
}
// The six fields of the op, passed one by one as for every op (ops! macro).
#[allow(clippy::too_many_arguments)]
pub fn reference(
    x: &[Vec<f64>],
    prior: &[HostBuf],
    heads: usize,
    head_dim: usize,
    pos0: u32,
    _max_seq: usize,
    theta: f32,
    eps: f32,
) -> Vec<Vec<f64>> {
    let d = heads * head_dim;
    let n = super::rmsnorm::norm(&x[0], &x[1], 1, d, eps);
    let qkv = super::linear_f16::linear(&n, &x[2], 1, 3 * d, d);
    let mut k = prior[1].to_f64();
    let mut v = prior[2].to_f64();
    let mut q = vec![0.0; d];
    let (p, row) = (pos0 as f64, pos0 as usize * d);
    for h in 0..heads {
        let hs = h * head_dim..(h + 1) * head_dim;
        let ks = d + h * head_dim..d + (h + 1) * head_dim;
        q[hs.clone()].copy_from_slice(&super::rope_kv_f16::rotate(&qkv[hs.clone()], p, theta as f64, 1.0));
        let kr = super::rope_kv_f16::rotate(&qkv[ks], p, theta as f64, 1.0);
        k[row + hs.start..row + hs.end].copy_from_slice(&kr);
    }
    v[row..row + d].copy_from_slice(&qkv[2 * d..]);
    vec![q, k, v]
}
/// Row `pos0` of both caches (q, write-only, is whole).
pub fn written(heads: usize, head_dim: usize, pos0: u32, _max_seq: usize, _theta: f32, _eps: f32) -> Region {
    let d = heads * head_dim;
    let start = pos0 as usize * d;
    Region::Ranges(std::iter::once(start..start + d).collect())
}
/// The cache's length and the position do not change the work.
pub fn shape_class(heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32, _eps: f32) -> String {
    format!("h{},d{}{}", bucket(heads), bucket(head_dim), if (heads * head_dim).is_multiple_of(8) { ",a8" } else { "" })
}
pub fn example() -> Op {
    Op::RmsGemvRopeKvF16 {
        heads: 3,
        head_dim: 10,
        pos0: 7,
        max_seq: 12,
        theta: 10000.0,
        eps: 1e-5,
    }
}
