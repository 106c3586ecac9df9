//! `softmax`: row-wise `exp(x - max) / sum(exp(x - max))` (f32).
use super::*;

pub const TOLERANCE: Tolerance = F32;
/// Logits wide enough to exercise the max shift.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-8.0, 8.0))];
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp32);

pub fn inputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![spec("x", DType::F32, rows * cols, Access::Read)]
}
pub fn outputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![spec("y", DType::F32, rows * cols, Access::Write)]
}
pub fn flops(rows: usize, cols: usize) -> u64 {
    4 * rows as u64 * cols as u64
}
pub use super::rowwise::check;
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize) -> Vec<Vec<f64>> {
    let y = super::rowwise::map_rows(&x[0], rows, cols, cols, |row, y| {
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        for (y, v) in y.iter_mut().zip(row) {
            *y = (v - max).exp() / sum;
        }
    });
    vec![y]
}
pub fn shape_class(rows: usize, cols: usize) -> String {
    rows_class(rows, cols)
}
pub fn example() -> Op {
    Op::Softmax { rows: 4, cols: 100 }
}
