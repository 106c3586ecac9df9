//! `gemm_f16`: `C = A B`, A and B in f16, accumulated and stored in f32.
use super::*;

pub const TOLERANCE: Tolerance = Tolerance::FP16_ACC32;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
pub const FACTS: Facts = Facts::MATRIX_F16;

pub fn inputs(m: usize, n: usize, k: usize) -> Vec<BufferSpec> {
    super::gemm_f32::operands(DType::F16, m, n, k)
}
/// Same f32 result, work, limits and tuning class
/// as the f32 GEMM.
pub use super::gemm_f32::{check, flops, outputs, shape_class};
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], m: usize, n: usize, k: usize) -> Vec<Vec<f64>> {
    vec![super::gemm_f32::gemm(&x[0], &x[1], m, n, k)]
}
pub fn example() -> Op {
    Op::GemmF16 { m: 32, n: 48, k: 16 }
}
