//! `add_rmsnorm_f16`: the fused residual add + RMSNorm of a transformer
//! block. `h = x + r` rounded to f16 (the new residual stream), and
//! `y = h / sqrt(mean(h^2) + eps) * g` of that ROUNDED h (as a following
//! kernel reading h would compute it), y rounded once to f16.
use super::*;

/// As [`super::gemv_f16`]: each output is one f16 rounding of an f32 result
/// (h of an f32 sum of two halves, y of the f32 norm of the stored h).
pub const TOLERANCE: Tolerance = super::gemv_f16::F16_OUT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] =
    &[("x", (-2.0, 2.0)), ("r", (-2.0, 2.0)), ("g", (0.5, 1.5))];
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp16);

pub fn inputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F16, rows * cols, Access::Read),
        spec("r", DType::F16, rows * cols, Access::Read),
        spec("g", DType::F16, cols, Access::Read),
    ]
}
pub fn outputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![
        spec("h", DType::F16, rows * cols, Access::Write),
        spec("y", DType::F16, rows * cols, Access::Write),
    ]
}
pub fn flops(rows: usize, cols: usize, _eps: f32) -> u64 {
    5 * rows as u64 * cols as u64
}
pub use super::rmsnorm::check;
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize, eps: f32) -> Vec<Vec<f64>> {
    let h: Vec<f64> = x[0]
        .iter()
        .zip(&x[1])
        .map(|(a, b)| half::f16::from_f64(a + b).to_f64())
        .collect();
    let y = super::rmsnorm::norm(&h, &x[2], rows, cols, eps);
    vec![h, y]
}
pub fn shape_class(rows: usize, cols: usize, _eps: f32) -> String {
    super::gemv_f16::rows_class8(rows, cols)
}
pub fn example() -> Op {
    Op::AddRmsNormF16 { rows: 3, cols: 75, eps: 1e-5 }
}
