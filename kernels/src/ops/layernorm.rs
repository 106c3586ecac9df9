//! `layernorm`: `y = (x - mean) / sqrt(var + eps) * w + b`, per row (f32,
//! biased variance).
use super::*;

pub const TOLERANCE: Tolerance = F32;
/// Weights near 1 so the norm does not collapse; a small bias.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-2.0, 2.0)), ("w", (0.5, 1.5)), ("b", (-0.5, 0.5))];
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp32);

pub fn inputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F32, rows * cols, Access::Read),
        spec("w", DType::F32, cols, Access::Read),
        spec("b", DType::F32, cols, Access::Read),
    ]
}
pub fn outputs(rows: usize, cols: usize, _eps: f32) -> Vec<BufferSpec> {
    vec![spec("y", DType::F32, rows * cols, Access::Write)]
}
pub fn flops(rows: usize, cols: usize, _eps: f32) -> u64 {
    7 * rows as u64 * cols as u64
}
/// Same limits as rmsnorm.
pub use super::rmsnorm::check;
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize, eps: f32) -> Vec<Vec<f64>> {
    let (w, b) = (&x[1], &x[2]);
    let y = super::rowwise::map_rows(&x[0], rows, cols, cols, |row, y| {
        let mean = row.iter().sum::<f64>() / cols as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (var + eps as f64).sqrt();
        for (c, y) in y.iter_mut().enumerate() {
            *y = (row[c] - mean) * inv * w[c] + b[c];
        }
    });
    vec![y]
}
pub fn shape_class(rows: usize, cols: usize, _eps: f32) -> String {
    rows_class(rows, cols)
}
pub fn example() -> Op {
    Op::LayerNorm {
        rows: 3,
        cols: 65,
        eps: 1e-5,
    }
}
