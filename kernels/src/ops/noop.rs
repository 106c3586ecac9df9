//! `noop`: an empty dispatch; what a launch costs.
use super::*;

pub const NAME: &str = "noop";
pub const TEST_ONLY: bool = false;
pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
pub const HIP: (&str, &str) = ("noop.hip", include_str!("../../hip/noop.hip"));

pub fn inputs() -> Vec<BufferSpec> {
    vec![]
}
pub fn outputs() -> Vec<BufferSpec> {
    vec![]
}
pub fn bytes_moved() -> u64 {
    0
}
pub fn flops() -> u64 {
    0
}
pub fn check() -> Result<(), String> {
    Ok(())
}
pub fn shape() -> String {
    String::new()
}
pub fn reference(_x: &[Vec<f64>], _prior: &[HostBuf]) -> Vec<Vec<f64>> {
    vec![]
}
pub fn example() -> Op {
    Op::Noop
}
