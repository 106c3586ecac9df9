//! Comparing a device result with the f64 reference.

use crate::host::HostBuf;
use crate::ops::Tolerance;
use serde::{Deserialize, Serialize};

/// How far a result is from its reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub len: usize,
    /// `||got - want||_2 / ||want||_2` (absolute norm when `want` is all zero).
    /// NaN when `got` has a non-finite element.
    pub rel_err_norm: f64,
    pub max_abs_err: f64,
    /// Index of the largest absolute error.
    pub max_abs_index: usize,
    /// Elements of `got` that are NaN or infinite where `want` is finite.
    pub nonfinite: usize,
    /// Elements that differ at all (bit-exact comparison in f64).
    pub mismatches: usize,
    pub first_mismatch: Option<usize>,
}

impl Comparison {
    /// Within tolerance, no non-finite element; NaN never passes.
    pub fn passes(&self, tol: Tolerance) -> bool {
        self.nonfinite == 0
            && self.rel_err_norm <= tol.rel_norm
            && (tol.rel_norm > 0.0 || self.mismatches == 0)
    }
}

/// Compares `got` with `want`. Lengths must agree (a length mismatch is
/// reported as every element mismatching).
pub fn compare(got: &HostBuf, want: &[f64]) -> Comparison {
    if got.len() != want.len() {
        return Comparison {
            len: want.len(),
            rel_err_norm: f64::INFINITY,
            max_abs_err: f64::INFINITY,
            max_abs_index: 0,
            nonfinite: 0,
            mismatches: want.len().max(got.len()),
            first_mismatch: Some(0),
        };
    }
    let (mut num, mut den, mut max_abs, mut max_i) = (0.0f64, 0.0f64, 0.0f64, 0usize);
    let (mut nonfinite, mut mismatches, mut first) = (0usize, 0usize, None);
    for (i, &w) in want.iter().enumerate() {
        let g = got.get_f64(i);
        if !g.is_finite() && w.is_finite() {
            nonfinite += 1;
        }
        if g != w {
            mismatches += 1;
            first.get_or_insert(i);
        }
        let d = (g - w).abs();
        if d > max_abs || d.is_nan() && !max_abs.is_nan() {
            max_abs = d;
            max_i = i;
        }
        num += d * d;
        den += w * w;
    }
    let rel = if nonfinite > 0 {
        f64::NAN
    } else if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    };
    Comparison {
        len: want.len(),
        rel_err_norm: rel,
        max_abs_err: max_abs,
        max_abs_index: max_i,
        nonfinite,
        mismatches,
        first_mismatch: first,
    }
}
