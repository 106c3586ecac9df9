//! `rms_gemv_swiglu_f16`: the first half of a Llama MLP at decode in one
//! kernel. `n = x / sqrt(mean(x^2) + eps) * g` (RMSNorm, in the
//! projection's prologue: each row's kernel computes the inverse RMS of the
//! short input itself and scales as it loads), `gate = W[0..rows] n`,
//! `up = W[rows..2 rows] n` (the fused gate_up weights `[2 rows][cols]`),
//! `a = silu(gate) * up` (SwiGLU, in the epilogue; `silu(z) = z / (1 +
//! exp(-z))`); f32 arithmetic, a rounded once to f16.
//!
//! SwiGLU sits in this projection's epilogue rather than in the down
//! projection's prologue: there each of the down projection's rows would
//! recompute `silu` over all `rows` inputs (4096 x 11008 exponentials at
//! Llama-2-7B, about as long as the projection's own memory traffic on an
//! H200), or hold the activation in 22 KB of shared memory, above the 16 KB
//! every Vulkan device guarantees. Here each activation is computed once,
//! by the lanes that already hold its gate and up sums.
use super::*;

/// As [`super::gemv_f16`]: one f16 rounding of an f32 result. The f32 norm,
/// dot products and exp before it err by a few 2^-24 each (the sums by
/// about `sqrt(cols) 2^-24`), far below it.
pub const TOLERANCE: Tolerance = super::gemv_f16::F16_OUT;
/// Gains near 1 so the norm does not collapse.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-2.0, 2.0)), ("g", (0.5, 1.5))];
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp16);
/// The unfused steps this kernel does in one.
pub const PARTS: &[&str] = &["rmsnorm_f16", "gemv_f16 (gate, up)", "swiglu_f16"];

pub fn inputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F16, cols, Access::Read),
        spec("g", DType::F16, cols, Access::Read),
        spec("w", DType::F16, 2 * rows * cols, Access::Read),
    ]
}
pub fn outputs(rows: usize, _cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![spec("a", DType::F16, rows, Access::Write)]
}
/// The two dot products per output; the norm and the activation are noise.
pub fn flops(rows: usize, cols: usize, _eps: f32) -> u64 {
    4 * rows as u64 * cols as u64
}
pub fn check(rows: usize, cols: usize, eps: f32) -> Result<(), String> {
    super::rmsnorm::check(rows, cols, eps)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize, eps: f32) -> Vec<Vec<f64>> {
    let n = super::rmsnorm::norm(&x[0], &x[1], 1, cols, eps);
    let gu = super::linear_f16::linear(&n, &x[2], 1, 2 * rows, cols);
    let (gate, up) = gu.split_at(rows);
    let a = gate.iter().zip(up).map(|(g, u)| g / (1.0 + (-g).exp()) * u).collect();
    vec![a]
}
pub fn shape_class(rows: usize, cols: usize, _eps: f32) -> String {
    super::gemv_f16::rows_class8(rows, cols)
}
pub fn example() -> Op {
    Op::RmsGemvSwigluF16 { rows: 37, cols: 75, eps: 1e-5 }
}
