//! `rmsnorm_f16`: `y = x / sqrt(mean(x^2) + eps) * g` per row, x, g, y f16,
//! arithmetic in f32, y rounded once to f16.
use super::*;

/// As [`super::gemv_f16`]: one f16 rounding of an f32 result.
pub const TOLERANCE: Tolerance = super::gemv_f16::F16_OUT;
/// Gains near 1 so the norm does not collapse.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-2.0, 2.0)), ("g", (0.5, 1.5))];
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp16);

pub fn inputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F16, rows * cols, Access::Read),
        spec("g", DType::F16, cols, Access::Read),
    ]
}
pub fn outputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![spec("y", DType::F16, rows * cols, Access::Write)]
}
/// The same limits, work and f64 reference as rmsnorm (f16 values are
/// exact in f64).
pub use super::rmsnorm::{check, flops, reference};
pub fn shape_class(rows: usize, cols: usize, _eps: f32) -> String {
    super::gemv_f16::rows_class8(rows, cols)
}
pub fn example() -> Op {
    Op::RmsNormF16 { rows: 3, cols: 75, eps: 1e-5 }
}
