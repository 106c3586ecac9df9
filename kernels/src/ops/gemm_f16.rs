//! `gemm_f16`: `C = A B`, A and B in f16, accumulated and stored in f32.
use super::*;

pub const TOLERANCE: Tolerance = Tolerance::FP16_ACC32;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];

pub fn inputs(m: usize, n: usize, k: usize) -> Vec<BufferSpec> {
    vec![
        spec("a", DType::F16, m * k, Access::Read),
        spec("b", DType::F16, k * n, Access::Read),
    ]
}
pub fn outputs(m: usize, n: usize, _k: usize) -> Vec<BufferSpec> {
    vec![spec("c", DType::F32, m * n, Access::Write)]
}
pub fn flops(m: usize, n: usize, k: usize) -> u64 {
    super::gemm_f32::flops(m, n, k)
}
pub fn check(m: usize, n: usize, k: usize) -> Result<(), String> {
    super::gemm_f32::check(m, n, k)
}
pub fn shape(m: usize, n: usize, k: usize) -> String {
    super::gemm_f32::shape(m, n, k)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], m: usize, n: usize, k: usize) -> Vec<Vec<f64>> {
    vec![super::gemm_f32::gemm(&x[0], &x[1], m, n, k)]
}
pub fn example() -> Op {
    Op::GemmF16 { m: 32, n: 48, k: 16 }
}
