//! `vec_add`: `c[i] = a[i] + b[i]` (f32).
use super::*;

pub const TOLERANCE: Tolerance = F32;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the bytes it moves.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(n: usize) -> Vec<BufferSpec> {
    vec![
        spec("a", DType::F32, n, Access::Read),
        spec("b", DType::F32, n, Access::Read),
    ]
}
pub fn outputs(n: usize) -> Vec<BufferSpec> {
    vec![spec("c", DType::F32, n, Access::Write)]
}
pub fn flops(n: usize) -> u64 {
    n as u64
}
pub fn check(n: usize) -> Result<(), String> {
    nonzero("n", n)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], _n: usize) -> Vec<Vec<f64>> {
    vec![x[0].iter().zip(&x[1]).map(|(a, b)| a + b).collect()]
}
pub fn shape_class(n: usize) -> String {
    format!("n{}", bucket(n))
}
pub fn example() -> Op {
    Op::VecAdd { n: 1000 }
}
