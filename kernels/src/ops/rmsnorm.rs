//! `rmsnorm`: `y = x / sqrt(mean(x^2) + eps) * w`, per row (f32).
use super::*;

pub const TOLERANCE: Tolerance = F32;
/// Weights near 1 so the norm does not collapse.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-2.0, 2.0)), ("w", (0.5, 1.5))];
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp32);

pub fn inputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F32, rows * cols, Access::Read),
        spec("w", DType::F32, cols, Access::Read),
    ]
}
pub fn outputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![spec("y", DType::F32, rows * cols, Access::Write)]
}
pub fn flops(rows: usize, cols: usize, _eps: f32) -> u64 {
    4 * rows as u64 * cols as u64
}
pub fn check(rows: usize, cols: usize, eps: f32) -> Result<(), String> {
    super::rowwise::check(rows, cols)?;
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(format!("eps must be finite and >= 0, got {eps}"));
    }
    Ok(())
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize, eps: f32) -> Vec<Vec<f64>> {
    vec![norm(&x[0], &x[1], rows, cols, eps)]
}
pub fn shape_class(rows: usize, cols: usize, _eps: f32) -> String {
    rows_class(rows, cols)
}
pub fn example() -> Op {
    Op::RmsNorm {
        rows: 3,
        cols: 65,
        eps: 1e-6,
    }
}

/// `x / sqrt(mean(x^2) + eps) * g` per row of a `rows x cols` matrix, f64
/// (also rmsnorm_f16's and add_rmsnorm_f16's).
pub(super) fn norm(x: &[f64], g: &[f64], rows: usize, cols: usize, eps: f32) -> Vec<f64> {
    super::rowwise::map_rows(x, rows, cols, cols, |row, y| {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + eps as f64).sqrt();
        for ((y, v), g) in y.iter_mut().zip(row).zip(g) {
            *y = v * inv * g;
        }
    })
}
