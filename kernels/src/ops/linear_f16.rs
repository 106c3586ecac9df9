//! `linear_f16`: `y[t][o] = sum_i x[t][i] w[o][i]` (`Y = X W^T`, "NT"), x and
//! w f16, f32 accumulation, y rounded once to f16. The prefill projections
//! of a transformer block (weights `[out][in]`), on the matrix units.
use super::*;

/// As [`super::gemv_f16`]: one f16 rounding of an f32 result.
pub const TOLERANCE: Tolerance = super::gemv_f16::F16_OUT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
pub const FACTS: Facts = Facts::MATRIX_F16;

pub fn inputs(tokens: usize, rows: usize, cols: usize) -> Vec<BufferSpec> {
    vec![
        spec("x", DType::F16, tokens * cols, Access::Read),
        spec("w", DType::F16, rows * cols, Access::Read),
    ]
}
pub fn outputs(tokens: usize, rows: usize, _cols: usize) -> Vec<BufferSpec> {
    vec![spec("y", DType::F16, tokens * rows, Access::Write)]
}
pub fn flops(tokens: usize, rows: usize, cols: usize) -> u64 {
    2 * tokens as u64 * rows as u64 * cols as u64
}
pub fn check(tokens: usize, rows: usize, cols: usize) -> Result<(), String> {
    nonzero("tokens", tokens)?;
    nonzero("rows", rows)?;
    nonzero("cols", cols)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], tokens: usize, rows: usize, cols: usize) -> Vec<Vec<f64>> {
    vec![linear(&x[0], &x[1], tokens, rows, cols)]
}
pub fn shape_class(tokens: usize, rows: usize, cols: usize) -> String {
    format!("t{},r{},c{}", bucket(tokens), bucket(rows), bucket(cols))
}
pub fn example() -> Op {
    Op::LinearF16 { tokens: 19, rows: 40, cols: 72 }
}

/// `Y = X W^T` in f64: X `tokens x cols`, W `rows x cols`, Y `tokens x rows`.
/// Every element on its own (one dot product, summed in order) on every
/// core: a GEMV (`tokens = 1`) splits too.
pub fn linear(x: &[f64], w: &[f64], tokens: usize, rows: usize, cols: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let mut y = vec![0.0; tokens * rows];
    let min = (crate::PAR_MIN / cols.max(1)).max(1);
    y.par_iter_mut().with_min_len(min).enumerate().for_each(|(e, y)| {
        let (t, o) = (e / rows, e % rows);
        let xr = &x[t * cols..(t + 1) * cols];
        let wr = &w[o * cols..(o + 1) * cols];
        *y = xr.iter().zip(wr).map(|(a, b)| a * b).sum();
    });
    y
}
