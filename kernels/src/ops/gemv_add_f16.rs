//! `gemv_add_f16`: `y[o] = r[o] + sum_i w[o][i] x[i]`, x, w, r and y f16,
//! f32 arithmetic, y rounded once to f16: a decode projection with the
//! residual add in its epilogue (the attention output and the MLP's down
//! projection of a transformer block), one kernel where `gemv_f16` and an
//! add would store and re-read the projection.
use super::*;

/// As [`super::gemv_f16`]: one f16 rounding of an f32 result (the sum of
/// the f32 dot product and the f16 residual, exact in f32 to its own
/// rounding).
pub const TOLERANCE: Tolerance = super::gemv_f16::F16_OUT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// f16 operands; memory-bound (the weights dominate `bytes_moved`).
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp16);
/// The unfused steps this kernel does in one.
pub const PARTS: &[&str] = &["gemv_f16", "residual add"];

pub fn inputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F16, cols, Access::Read),
        spec("w", DType::F16, rows * cols, Access::Read),
        spec("r", DType::F16, rows, Access::Read),
    ]
}
pub fn outputs(rows: usize, _cols: usize) -> Vec<BufferSpec> {
    vec![spec("y", DType::F16, rows, Access::Write)]
}
/// The dot products and one add per row.
pub fn flops(rows: usize, cols: usize) -> u64 {
    2 * rows as u64 * cols as u64 + rows as u64
}
pub use super::rowwise::check;
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize) -> Vec<Vec<f64>> {
    let y = super::linear_f16::linear(&x[0], &x[1], 1, rows, cols)
        .iter()
        .zip(&x[2])
        .map(|(p, r)| p + r)
        .collect();
    vec![y]
}
pub fn shape_class(rows: usize, cols: usize) -> String {
    super::gemv_f16::rows_class8(rows, cols)
}
pub fn example() -> Op {
    Op::GemvAddF16 { rows: 37, cols: 75 }
}
