//! attn_decode_f16's split on devices that do and do not say how many
//! compute units they have.

use super::{plan, test_limits, Limits};
use crate::tuning::{Knob, Tuning};
use greta_kernels::Op;

fn decode(len: usize) -> Op {
    Op::AttnDecodeF16 {
        heads: 32,
        head_dim: 128,
        len,
        max_seq: 4096,
    }
}

/// (workgroups per head, chunks each walks) of the built-in plan.
fn split(lim: &Limits, len: usize) -> (u32, u32) {
    let p = plan(&decode(len), &Tuning::default(), lim).unwrap();
    let groups = p.dispatches[0].groups;
    assert_eq!(groups[0], 32, "a workgroup row per head");
    (groups[1], p.tuning.get(Knob::Chunks).unwrap())
}

/// With the units known the split is the HIP/CUDA planner's, four
/// workgroups a unit: at len 4096 (64 chunks of 64 positions a head) on
/// 132 SMs, 4 chunks each, 16 a head, 512 in all (under 528); without
/// them, the fixed aim of 1024 workgroups gives 2 chunks each.
#[test]
fn the_split_follows_the_compute_units_where_the_driver_tells() {
    assert_eq!(split(&test_limits::nvidia(), 4096), (16, 4));
    assert_eq!(split(&test_limits::lavapipe(), 4096), (32, 2));
    // A 12-unit Radeon 780M: 48 workgroups, so 32 chunks each, 2 a head.
    assert_eq!(split(&test_limits::radv_rdna3(), 4096), (2, 32));
    // Short caches give a workgroup per chunk on every device.
    for lim in [test_limits::nvidia(), test_limits::lavapipe()] {
        assert_eq!(split(&lim, 512), (8, 1));
    }
}

/// The split walks every position exactly once: splits x chunks covers
/// the head's chunks, and one split fewer would not.
#[test]
fn every_split_covers_the_cache_once() {
    for units in [1, 2, 12, 80, 132, 304, 1 << 16] {
        let lim = Limits {
            compute_units: Some(units),
            ..test_limits::nvidia()
        };
        for len in [1usize, 63, 64, 65, 512, 1000, 4096] {
            let chunks = len.div_ceil(64) as u32;
            let (splits, per) = split(&lim, len);
            assert!(splits * per >= chunks, "{units} units, len {len}");
            assert!((splits - 1) * per < chunks, "{units} units, len {len}");
        }
    }
}
