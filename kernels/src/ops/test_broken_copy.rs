//! TEST-ONLY `test_broken_copy`: a copy with one wrong index, which the
//! comparison must catch. Its reference is the *correct* copy.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// A copy's facts.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(n: usize) -> Vec<BufferSpec> {
    super::copy::inputs(n)
}
pub fn outputs(n: usize) -> Vec<BufferSpec> {
    super::copy::outputs(n)
}
pub fn flops(_n: usize) -> u64 {
    0
}
pub fn check(n: usize) -> Result<(), String> {
    if n < 2 {
        return Err(format!("n must be >= 2 for the wrong index to show, got {n}"));
    }
    Ok(())
}
pub fn reference(x: &[Vec<f64>], _prior: &[HostBuf], _n: usize) -> Vec<Vec<f64>> {
    vec![x[0].clone()]
}
pub fn shape_class(n: usize) -> String {
    format!("n{}", bucket(n))
}
pub fn example() -> Op {
    Op::TestBrokenCopy { n: 64 }
}
