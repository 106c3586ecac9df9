//! `copy`: `y[i] = x[i]` (u32); read plus write bandwidth.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the bytes it moves.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(n: usize) -> Vec<BufferSpec> {
    vec![spec("x", DType::U32, n, Access::Read)]
}
pub fn outputs(n: usize) -> Vec<BufferSpec> {
    vec![spec("y", DType::U32, n, Access::Write)]
}
pub fn flops(_n: usize) -> u64 {
    0
}
pub fn check(n: usize) -> Result<(), String> {
    nonzero("n", n)
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], _n: usize) -> Vec<Vec<f64>> {
    vec![x[0].clone()]
}
pub fn shape_class(n: usize) -> String {
    format!("n{}", bucket(n))
}
pub fn example() -> Op {
    Op::Copy { n: 1000 }
}
