//! `gemv_f16`: `y[o] = sum_i w[o][i] x[i]`, x and w f16, f32 accumulation,
//! y rounded once to f16. The decode projections of a transformer block
//! (weights `[out][in]` as a PyTorch `Linear` stores them): memory-bound,
//! the weight matrix is read once.
use super::*;

/// f16 outputs of f32 arithmetic. Rounding the stored value to f16 moves
/// each element by at most 2^-11 of itself (round to nearest, binary16 has
/// an 11-bit significand), so the relative norm of that error is at most
/// 4.9e-4 (elements in the f16 subnormal range err by at most 2^-25 in
/// absolute terms, nothing against the norm of a whole output). Products
/// of two f16 are exact in f32; the f32 sums add about
/// `sqrt(cols) * 2^-24` relative (~1e-5 at 11008 columns, sums of random
/// signs). The bound is twice the rounding term: a kernel that rounds
/// twice (an f16 intermediate) or drops a term fails it.
pub(super) const F16_OUT: Tolerance = Tolerance::RelNorm(1e-3);

pub const TOLERANCE: Tolerance = F16_OUT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// f16 operands; memory-bound (the weights dominate `bytes_moved`).
pub const FACTS: Facts = Facts::row_reduction(Precision::Fp16);

pub fn inputs(rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F16, cols, Access::Read),
        spec("w", DType::F16, rows * cols, Access::Read),
    ]
}
pub fn outputs(rows: usize, _cols: usize) -> Vec<BufferSpec> {
    vec![spec("y", DType::F16, rows, Access::Write)]
}
pub fn flops(rows: usize, cols: usize) -> u64 {
    2 * rows as u64 * cols as u64
}
pub use super::rowwise::check;
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], rows: usize, cols: usize) -> Vec<Vec<f64>> {
    let y = (0..rows)
        .map(|o| {
            let w = &x[1][o * cols..(o + 1) * cols];
            w.iter().zip(&x[0]).map(|(a, b)| a * b).sum()
        })
        .collect();
    vec![y]
}
pub fn shape_class(rows: usize, cols: usize) -> String {
    rows_class8(rows, cols)
}
pub fn example() -> Op {
    Op::GemvF16 { rows: 37, cols: 75 }
}

/// The tuning class of a row op over f16: both sizes bucketed, and whether
/// rows are 16-byte aligned (`a8`: cols % 8 == 0), which selects the kernels
/// that load 8 halves at a time. Shared by the f16 row ops of this set.
pub(super) fn rows_class8(rows: usize, cols: usize) -> String {
    format!(
        "rows{},cols{}{}",
        bucket(rows),
        bucket(cols),
        if cols.is_multiple_of(8) { ",a8" } else { "" }
    )
}
