//! `rmsnorm_f16`: `y = x / sqrt(mean(x^2) + eps) * g` per row, x, g, y f16,
//! arithmetic in f32, y rounded once to f16.
use super::*;

/// As [`super::gemv_f16`]: one f16 rounding of an f32 result.
pub const TOLERANCE: Tolerance = super::gemv_f16::F16_OUT;
/// Gains near 1 so the norm does not collapse.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-2.0, 2.0)), ("g", (0.5, 1.5))];
/// f16; memory-bound; its Vulkan kernel reduces each row across a subgroup.
pub const FACTS: Facts = Facts {
    precision: Precision::Fp16,
    rate: RateUnit::GBps,
    needs: Needs { subgroup_arith: true, matrix_units: false },
};

pub fn inputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F16, rows * cols, Access::Read),
        spec("g", DType::F16, cols, Access::Read),
    ]
}
pub fn outputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![spec("y", DType::F16, rows * cols, Access::Write)]
}
pub fn flops(rows: usize, cols: usize, _eps: f32) -> u64 {
    4 * rows as u64 * cols as u64
}
pub use super::rmsnorm::check;
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize, eps: f32) -> Vec<Vec<f64>> {
    vec![norm(&x[0], &x[1], rows, cols, eps)]
}
pub fn shape_class(rows: usize, cols: usize, _eps: f32) -> String {
    super::gemv_f16::rows_class8(rows, cols)
}
pub fn example() -> Op {
    Op::RmsNormF16 { rows: 3, cols: 75, eps: 1e-5 }
}

/// `x / sqrt(mean(x^2) + eps) * g` per row of a `rows x cols` matrix, f64.
pub(super) fn norm(x: &[f64], g: &[f64], rows: usize, cols: usize, eps: f32) -> Vec<f64> {
    let mut y = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let ms = row.iter().map(|v| v * v).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + eps as f64).sqrt();
        for c in 0..cols {
            y[r * cols + c] = row[c] * inv * g[c];
        }
    }
    y
}
