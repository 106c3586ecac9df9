//! `rope_kv_f16`: RoPE of a fused QKV projection, q out, k and v into the
//! KV cache at rows `pos0..pos0+tokens` (the rest of the cache survives).
use super::*;

/// Each written element is one f32 result rounded once to f16: at most
/// 2^-10 of its value under either rounding a Vulkan driver may use for
/// `packHalf2x16` (to nearest: 2^-11; toward zero: 2^-10), so the norm of
/// the error is at most 2^-10 = 9.77e-4 of the output's norm. The f32
/// arithmetic before it (one product pair per element, cos/sin exact to
/// f32 from an f64 table or f64 trig) adds at most ~2^-22 (4e-7).
/// v is copied, error 0. 1e-3 covers both; a wrong angle is far outside
/// it (`kernels/src/ops/attn_tests.rs`).
pub const TOLERANCE: Tolerance = Tolerance::RelNorm(1e-3);
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the bytes it moves.
pub const FACTS: Facts = Facts { precision: Precision::Fp16, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32) -> Vec<BufferSpec> {
    vec![spec("qkv", DType::F16, tokens * 3 * heads * head_dim, Access::Read)]
}
pub fn outputs(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, max_seq: usize, _theta: f32) -> Vec<BufferSpec> {
    let d = heads * head_dim;
    vec![
        spec("q", DType::F16, tokens * d, Access::Write),
        spec("k_cache", DType::F16, max_seq * d, Access::ReadWrite),
        spec("v_cache", DType::F16, max_seq * d, Access::ReadWrite),
    ]
}
/// qkv read once, q and the new cache rows written once (f16).
pub fn bytes_moved(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32) -> u64 {
    2 * 6 * (tokens * heads * head_dim) as u64
}
/// Per rotated element (q and k): two multiplies and an add.
pub fn flops(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32) -> u64 {
    3 * 2 * (tokens * heads * head_dim) as u64
}
pub fn check(tokens: usize, heads: usize, head_dim: usize, pos0: u32, max_seq: usize, theta: f32) -> Result<(), String> {
    nonzero("tokens", tokens)?;
    nonzero("heads", heads)?;
    nonzero("head_dim", head_dim)?;
    // The kernels move whole 32-bit words of halves of each half-head,
    // and the HIP kernel keeps a token's head_dim/2 angles in shared memory.
    if !head_dim.is_multiple_of(4) || head_dim > 256 {
        return Err(format!("head_dim must be a multiple of 4 up to 256, got {head_dim}"));
    }
    if pos0 as usize + tokens > max_seq {
        return Err(format!("pos0 {pos0} + tokens {tokens} exceeds max_seq {max_seq}"));
    }
    if !(theta.is_finite() && theta > 0.0) {
        return Err(format!("theta must be finite and > 0, got {theta}"));
    }
    Ok(())
}
/// The rotation of one head's vector `x` at position `p` ("rotate half",
/// angle `p * theta^(-2i/head_dim)`), in f64: [`reference`] and the tests'
/// perturbed references share it.
pub(super) fn rotate(x: &[f64], p: f64, theta: f64, angle_scale: f64) -> Vec<f64> {
    let hd = x.len();
    let half = hd / 2;
    let mut y = vec![0.0; hd];
    for i in 0..half {
        let f = theta.powf(-2.0 * i as f64 / hd as f64);
        let (s, c) = (p * f * angle_scale).sin_cos();
        y[i] = x[i] * c - x[i + half] * s;
        y[i + half] = x[i] * s + x[i + half] * c;
    }
    y
}
// The six fields of the op, passed one by one as for every op (ops! macro).
#[allow(clippy::too_many_arguments)]
pub fn reference(
    x: &[Vec<f64>],
    prior: &[HostBuf],
    tokens: usize,
    heads: usize,
    head_dim: usize,
    pos0: u32,
    _max_seq: usize,
    theta: f32,
) -> Vec<Vec<f64>> {
    let d = heads * head_dim;
    let mut q = vec![0.0; tokens * d];
    let mut k = prior[1].to_f64();
    let mut v = prior[2].to_f64();
    for t in 0..tokens {
        let p = pos0 as f64 + t as f64;
        let row = &x[0][t * 3 * d..(t + 1) * 3 * d];
        let dst = (pos0 as usize + t) * d;
        for h in 0..heads {
            let hs = h * head_dim..(h + 1) * head_dim;
            let qh = rotate(&row[hs.clone()], p, theta as f64, 1.0);
            let kh = rotate(&row[d + h * head_dim..d + (h + 1) * head_dim], p, theta as f64, 1.0);
            q[t * d + h * head_dim..t * d + (h + 1) * head_dim].copy_from_slice(&qh);
            k[dst + h * head_dim..dst + (h + 1) * head_dim].copy_from_slice(&kh);
        }
        v[dst..dst + d].copy_from_slice(&row[2 * d..3 * d]);
    }
    vec![q, k, v]
}
/// Rows `pos0..pos0+tokens` of both caches (q, write-only, is whole).
pub fn written(tokens: usize, heads: usize, head_dim: usize, pos0: u32, _max_seq: usize, _theta: f32) -> Region {
    let d = heads * head_dim;
    let start = pos0 as usize * d;
    Region::Ranges(std::iter::once(start..start + tokens * d).collect())
}
/// The cache's length and the position do not change the work.
pub fn shape_class(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _max_seq: usize, _theta: f32) -> String {
    format!("t{},h{},d{}", bucket(tokens), bucket(heads), bucket(head_dim))
}
pub fn example() -> Op {
    Op::RopeKvF16 {
        tokens: 5,
        heads: 3,
        head_dim: 16,
        pos0: 7,
        max_seq: 20,
        theta: 10000.0,
    }
}
