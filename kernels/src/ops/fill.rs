//! `fill`: `y[i] = value` (u32); a pure write bandwidth.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Memory-bound: measured in the bytes it writes.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(_n: usize, _value: u32) -> Vec<BufferSpec> {
    vec![]
}
pub fn outputs(n: usize, _value: u32) -> Vec<BufferSpec> {
    vec![spec("y", DType::U32, n, Access::Write)]
}
pub fn flops(_n: usize, _value: u32) -> u64 {
    0
}
pub fn check(n: usize, _value: u32) -> Result<(), String> {
    nonzero("n", n)
}
pub fn shape(n: usize, value: u32) -> String {
    format!("n={n},value={value:#x}")
}
pub fn reference(_x: &[Vec<f64>], _prior: &[HostBuf], n: usize, value: u32) -> Vec<Vec<f64>> {
    vec![vec![value as f64; n]]
}
/// The value does not change the work.
pub fn shape_class(n: usize, _value: u32) -> String {
    format!("n{}", bucket(n))
}
pub fn example() -> Op {
    Op::Fill {
        n: 1000,
        value: 0xdead_beef,
    }
}
