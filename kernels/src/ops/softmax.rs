//! `softmax`: row-wise `exp(x - max) / sum(exp(x - max))` (f32).
use super::*;

pub const TOLERANCE: Tolerance = F32;
/// Logits wide enough to exercise the max shift.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[("x", (-8.0, 8.0))];
/// Memory-bound; its Vulkan kernel reduces each row across a subgroup.
pub const FACTS: Facts = Facts {
    precision: Precision::Fp32,
    rate: RateUnit::GBps,
    needs: Needs { subgroup_arith: true, matrix_units: false },
};

pub fn inputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![spec("x", DType::F32, rows * cols, Access::Read)]
}
pub fn outputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![spec("y", DType::F32, rows * cols, Access::Write)]
}
pub fn flops(rows: usize, cols: usize) -> u64 {
    4 * rows as u64 * cols as u64
}
pub fn check(rows: usize, cols: usize) -> Result<(), String> {
    nonzero("rows", rows)?;
    nonzero("cols", cols)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize) -> Vec<Vec<f64>> {
    let mut y = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[0][r * cols..(r + 1) * cols];
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        for c in 0..cols {
            y[r * cols + c] = (row[c] - max).exp() / sum;
        }
    }
    vec![y]
}
pub fn shape_class(rows: usize, cols: usize) -> String {
    rows_class(rows, cols)
}
pub fn example() -> Op {
    Op::Softmax { rows: 4, cols: 100 }
}
