//! `noop`: an empty dispatch; what a launch costs.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Measured as what a dispatch costs.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::UsPerDispatch, needs: Needs::NOTHING };

pub fn inputs() -> Vec<BufferSpec> {
    vec![]
}
pub fn outputs() -> Vec<BufferSpec> {
    vec![]
}
pub fn flops() -> u64 {
    0
}
pub fn check() -> Result<(), String> {
    Ok(())
}
pub fn reference(_x: &[Vec<f64>], _prior: &[HostBuf]) -> Vec<Vec<f64>> {
    vec![]
}
pub fn shape_class() -> String {
    String::new()
}
pub fn example() -> Op {
    Op::Noop
}
