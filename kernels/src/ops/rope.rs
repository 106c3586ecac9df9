//! `rope`: rotary position embedding, "rotate half" form (f32).
use super::*;

pub const TOLERANCE: Tolerance = F32;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the bytes it moves.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _theta: f32) -> Vec<BufferSpec> {
    vec![spec("x", DType::F32, tokens * heads * head_dim, Access::Read)]
}
pub fn outputs(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _theta: f32) -> Vec<BufferSpec> {
    vec![spec("y", DType::F32, tokens * heads * head_dim, Access::Write)]
}
pub fn flops(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _theta: f32) -> u64 {
    3 * tokens as u64 * heads as u64 * head_dim as u64
}
pub fn check(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, theta: f32) -> Result<(), String> {
    nonzero("tokens", tokens)?;
    nonzero("heads", heads)?;
    nonzero("head_dim", head_dim)?;
    if !head_dim.is_multiple_of(2) {
        return Err(format!("head_dim must be even, got {head_dim}"));
    }
    if !(theta.is_finite() && theta > 0.0) {
        return Err(format!("theta must be finite and > 0, got {theta}"));
    }
    Ok(())
}
pub fn reference(
    x: &[Vec<f64>],
    _prior: &[HostBuf],
    tokens: usize,
    heads: usize,
    head_dim: usize,
    pos0: u32,
    theta: f32,
) -> Vec<Vec<f64>> {
    let half = head_dim / 2;
    let mut y = vec![0.0; tokens * heads * head_dim];
    for t in 0..tokens {
        let p = (pos0 as u64 + t as u64) as f64;
        for h in 0..heads {
            let base = (t * heads + h) * head_dim;
            for i in 0..half {
                let f = (theta as f64).powf(-2.0 * i as f64 / head_dim as f64);
                let (s, c) = (p * f).sin_cos();
                let (a, b) = (x[0][base + i], x[0][base + i + half]);
                y[base + i] = a * c - b * s;
                y[base + i + half] = a * s + b * c;
            }
        }
    }
    vec![y]
}
/// The rotation's cos/sin table for `tokens` positions from `pos0`,
/// `[tokens][head_dim/2]` pairs (cos, sin) of `(pos0 + t) * theta^(-2i/head_dim)`,
/// computed in f64 and rounded once to f32: the kernels that take it
/// (rope and rope_kv_f16 on Vulkan, rms_gemv_rope_kv_f16 on every backend)
/// then err by f32 rounding alone, not by a GPU's trigonometry on angles
/// of thousands of radians, and need no f64 on the device.
pub fn table(tokens: usize, head_dim: usize, pos0: u32, theta: f32) -> Vec<f32> {
    let half = head_dim / 2;
    let mut t = Vec::with_capacity(tokens * half * 2);
    for tok in 0..tokens {
        let p = (pos0 as u64 + tok as u64) as f64;
        for i in 0..half {
            let f = (theta as f64).powf(-2.0 * i as f64 / head_dim as f64);
            let (s, c) = (p * f).sin_cos();
            t.push(c as f32);
            t.push(s as f32);
        }
    }
    t
}
/// Position and base do not change the work.
pub fn shape_class(tokens: usize, heads: usize, head_dim: usize, _pos0: u32, _theta: f32) -> String {
    format!("t{},h{},d{}", bucket(tokens), bucket(heads), bucket(head_dim))
}
pub fn example() -> Op {
    Op::Rope {
        tokens: 5,
        heads: 3,
        head_dim: 16,
        pos0: 7,
        theta: 10000.0,
    }
}
