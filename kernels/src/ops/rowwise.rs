//! What the row-wise ops share (softmax, the norms, swiglu_f16, gemv_f16:
//! each row of a `rows x cols` matrix on its own): their limits and the
//! loop of their f64 references over rows.

use super::nonzero;

/// A `rows x cols` op's limits: both sizes non-zero.
pub fn check(rows: usize, cols: usize) -> Result<(), String> {
    nonzero("rows", rows)?;
    nonzero("cols", cols)
}

/// A fresh `rows x out_cols` matrix whose row `r` is `f(x's row r, out)`,
/// x holding rows of `in_cols` (shapes checked before, so neither width
/// is 0).
pub fn map_rows(
    x: &[f64],
    rows: usize,
    in_cols: usize,
    out_cols: usize,
    f: impl Fn(&[f64], &mut [f64]) + Sync,
) -> Vec<f64> {
    use rayon::prelude::*;
    let mut y = vec![0.0; rows * out_cols];
    // Rows on every core, each computed as serially.
    let min = (crate::PAR_MIN / in_cols.max(1)).max(1);
    x.par_chunks_exact(in_cols)
        .zip(y.par_chunks_exact_mut(out_cols))
        .with_min_len(min)
        .for_each(|(row, out)| f(row, out));
    y
}
