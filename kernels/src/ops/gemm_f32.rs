//! `gemm_f32`: `C = A B`, all f32, row-major.
use super::*;

pub const TOLERANCE: Tolerance = F32;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Compute-bound: measured in its flops.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::TFlops, needs: Needs::NOTHING };

pub fn inputs(m: usize, n: usize, k: usize) -> Vec<BufferSpec> {
    operands(DType::F32, m, n, k)
}
/// A (m x k) and B (k x n) in `dtype` (shared with [`super::gemm_f16`]).
pub(super) fn operands(dtype: DType, m: usize, n: usize, k: usize) -> Vec<BufferSpec> {
    vec![spec("a", dtype, m * k, Access::Read), spec("b", dtype, k * n, Access::Read)]
}
pub fn outputs(m: usize, n: usize, _k: usize) -> Vec<BufferSpec> {
    vec![spec("c", DType::F32, m * n, Access::Write)]
}
pub fn flops(m: usize, n: usize, k: usize) -> u64 {
    2 * m as u64 * n as u64 * k as u64
}
pub fn check(m: usize, n: usize, k: usize) -> Result<(), String> {
    nonzero("m", m)?;
    nonzero("n", n)?;
    nonzero("k", k)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], m: usize, n: usize, k: usize) -> Vec<Vec<f64>> {
    vec![gemm(&x[0], &x[1], m, n, k)]
}
pub fn shape_class(m: usize, n: usize, k: usize) -> String {
    format!("m{},n{},k{}", bucket(m), bucket(n), bucket(k))
}
pub fn example() -> Op {
    Op::GemmF32 { m: 33, n: 17, k: 9 }
}

/// `C = A B` in f64 (shared with [`super::gemm_f16`]); the rows of C on
/// every core, each summed in the same order as serially.
pub(super) fn gemm(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let mut c = vec![0.0; m * n];
    c.par_chunks_mut(n.max(1)).take(m).enumerate().for_each(|(i, crow)| {
        for p in 0..k {
            let av = a[i * k + p];
            let brow = &b[p * n..(p + 1) * n];
            for (cv, bv) in crow.iter_mut().zip(brow) {
                *cv += av * bv;
            }
        }
    });
    c
}
