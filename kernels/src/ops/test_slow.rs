//! TEST-ONLY `test_slow`: a serial xorshift32 chain long enough to trip a
//! submission timeout.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// Its rate is not the point (it must time out); counted as a copy's.
pub const FACTS: Facts = Facts { precision: Precision::Fp32, rate: RateUnit::GBps, needs: Needs::NOTHING };

pub fn inputs(_iters: u32) -> Vec<BufferSpec> {
    vec![]
}
pub fn outputs(_iters: u32) -> Vec<BufferSpec> {
    vec![spec("y", DType::U32, 1, Access::Write)]
}
pub fn flops(_iters: u32) -> u64 {
    0
}
pub fn check(_iters: u32) -> Result<(), String> {
    Ok(())
}
pub fn reference(_x: &[Vec<f64>], _prior: &[HostBuf], iters: u32) -> Vec<Vec<f64>> {
    vec![vec![crate::slow_hash(iters) as f64]]
}
/// One class: the chain's length is what the gate sets, not a tuning.
pub fn shape_class(_iters: u32) -> String {
    String::new()
}
pub fn example() -> Op {
    Op::TestSlow { iters: 1000 }
}
