//! `Backend::prepare` on lavapipe (validation on): the pipelines it builds
//! ahead, on several threads at once, are exactly those the runs then use.

use crate::common::*;
use greta_kernels::Op;
use greta_runtime::Backend;

#[test]
fn pipelines_built_ahead_are_the_ones_the_runs_use() {
    let mut dev = device();
    let s = seed();
    // Single-pass ops, a split reduction with a second pass, f16 ops that
    // plan a subgroup size where the device offers one, and a composite
    // whose graph steps bind their own slots.
    let ops = [
        Op::Copy { n: 1000 },
        Op::GemmF32 { m: 33, n: 17, k: 9 },
        Op::Softmax { rows: 4, cols: 300 },
        Op::RmsNormF16 {
            rows: 3,
            cols: 256,
            eps: 1e-5,
        },
        Op::AttnDecodeF16 {
            heads: 4,
            head_dim: 32,
            len: 300,
            max_seq: 512,
        },
        Op::BlockDecode {
            hidden: 128,
            heads: 4,
            head_dim: 32,
            ffn: 344,
            len: 37,
        },
    ];
    assert_eq!(dev.pipeline_count(), 0);
    let built = dev.prepare(&ops);
    assert!(
        built >= ops.len(),
        "built {built} pipelines for {} ops",
        ops.len()
    );
    assert_eq!(dev.pipeline_count(), built);
    // Asked again: everything is there.
    assert_eq!(dev.prepare(&ops), 0);
    for op in &ops {
        if op.is_composite() {
            let ins = inputs(op, s);
            let mut outs: Vec<greta_kernels::HostBuf> = op
                .outputs()
                .iter()
                .map(|o| greta_kernels::HostBuf::poisoned(o.dtype, o.len))
                .collect();
            dev.run(greta_runtime::Job::new(
                op,
                &ins,
                &mut outs,
                &Default::default(),
            ))
            .unwrap_or_else(|e| panic!("{op}: {e}"));
        } else {
            assert_op(&mut dev, op, s);
        }
    }
    // A key computed differently from the run's (bindings, constants,
    // subgroup size, a later pass) would have made the runs build more.
    assert_eq!(
        dev.pipeline_count(),
        built,
        "the runs built pipelines of their own"
    );
    assert_clean(&dev);
}
