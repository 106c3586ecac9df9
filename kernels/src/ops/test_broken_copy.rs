//! TEST-ONLY `test_broken_copy`: a copy with one wrong index, which the
//! comparison must catch. Its reference is the *correct* copy.
use super::*;

pub const TOLERANCE: Tolerance = EXACT;
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[];
/// A copy's facts.
pub const FACTS: Facts = super::copy::FACTS;

/// A copy's buffers, work and tuning class; its reference is the
/// correct copy's.
pub use super::copy::{flops, inputs, outputs, reference, shape_class};
pub fn check(n: usize) -> Result<(), String> {
    if n < 2 {
        return Err(format!("n must be >= 2 for the wrong index to show, got {n}"));
    }
    Ok(())
}
pub fn example() -> Op {
    Op::TestBrokenCopy { n: 64 }
}
