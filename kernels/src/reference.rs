//! Independent CPU references, computed in f64 from the exact input values.

use crate::host::HostBuf;
use crate::ops::{Access, Op, OpError};

/// The seed of [`Op::TestSlow`]'s xorshift32 chain.
pub const SLOW_SEED: u32 = 0x1234_5678;

/// `iters` steps of xorshift32 (13, 17, 5) from [`SLOW_SEED`]: what the
/// test-only slow kernel writes.
pub fn slow_hash(iters: u32) -> u32 {
    let mut x = SLOW_SEED;
    for _ in 0..iters {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    x
}

/// Expected outputs of `op`, one `Vec<f64>` per entry of [`Op::outputs`].
///
/// `prior_outputs` is what the caller uploads into the output buffers; only
/// [`Access::ReadWrite`] outputs (the KV caches) use it, and may be empty
/// otherwise. For [`Op::TestBrokenCopy`] this is the *correct* copy, so the
/// broken kernel fails the comparison.
pub fn reference(
    op: &Op,
    inputs: &[HostBuf],
    prior_outputs: &[HostBuf],
) -> Result<Vec<Vec<f64>>, OpError> {
    op.validate()?;
    let err = |msg: String| OpError { op: op.name(), msg };
    let specs = op.inputs();
    if inputs.len() != specs.len() {
        return Err(err(format!(
            "expected {} input buffers, got {}",
            specs.len(),
            inputs.len()
        )));
    }
    for (s, b) in specs.iter().zip(inputs) {
        if s.dtype != b.dtype() || s.len != b.len() {
            return Err(err(format!(
                "input {}: expected {} x {}, got {} x {}",
                s.name,
                s.len,
                s.dtype,
                b.len(),
                b.dtype()
            )));
        }
    }
    let outs = op.outputs();
    for (i, s) in outs.iter().enumerate() {
        if s.access == Access::ReadWrite {
            match prior_outputs.get(i) {
                Some(b) if b.len() == s.len && b.dtype() == s.dtype => {}
                _ => {
                    return Err(err(format!(
                        "output {} is read-write: its prior content ({} x {}) is needed",
                        s.name, s.len, s.dtype
                    )))
                }
            }
        }
    }
    let x: Vec<Vec<f64>> = inputs.iter().map(HostBuf::to_f64).collect();
    let out = op.reference_of(&x, prior_outputs);
    debug_assert_eq!(out.len(), outs.len());
    debug_assert!(outs.iter().zip(&out).all(|(s, o)| s.len == o.len()));
    Ok(out)
}
