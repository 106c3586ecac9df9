//! The transformer-block composite ops on lavapipe (validation on): the
//! whole layer replayed as one command buffer of the f16 ops, every output
//! within the layer's fp16 error model of the f64 reference, fresh random
//! inputs drawn from the op's ranges.

use crate::common::*;
use greta_kernels::{HostBuf, Op};
use greta_runtime::{Backend, Job, RunOpts, TimingSource};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn inputs(op: &Op, seed: u64) -> Vec<HostBuf> {
    let mut rng = StdRng::seed_from_u64(seed);
    greta_kernels::block::composite::draw_inputs(op, |lo, hi| rng.gen_range(lo..hi))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn assert_block(dev: &mut greta_runtime::VulkanDevice, op: &Op, seed: u64) {
    let ins = inputs(op, seed);
    let mut outs: Vec<HostBuf> = op
        .outputs()
        .iter()
        .map(|s| HostBuf::poisoned(s.dtype, s.len))
        .collect();
    let opts = RunOpts {
        repeats: 2,
        ..RunOpts::default()
    };
    let stats = dev
        .run(Job::new(op, &ins, &mut outs, &opts))
        .unwrap_or_else(|e| panic!("{op}: {e}"));
    let x: Vec<Vec<f64>> = ins.iter().map(HostBuf::to_f64).collect();
    let expected = op
        .expected(&x, &outs, seed)
        .expect("a composite op")
        .unwrap();
    for ((e, o), spec) in expected.iter().zip(&outs).zip(op.outputs()) {
        let c = e.outcome(o);
        eprintln!(
            "{op} {}: rel_err={:.3e} max_abs={:.3e}",
            spec.name, c.rel_err, c.max_abs_err
        );
        assert!(c.pass, "{op} {}: {c:?}", spec.name);
    }
    let steps = op.composite().unwrap().unwrap().graph.steps.len();
    assert_eq!(stats.device_ns.len(), 2);
    assert!(stats.kernel.starts_with("graph:"), "{}", stats.kernel);
    assert_eq!(stats.kernel.matches('+').count() + 1, steps);
    if stats.timing == TimingSource::DeviceTimestamps {
        assert_eq!(stats.step_ns.len(), steps);
    }
    assert_clean(dev);
}

#[test]
fn decode_and_prefill_layers_match_the_reference_within_the_error_model() {
    let mut dev = device();
    let s = seed();
    // Cache lengths and token counts that are no multiple of any tile or split.
    for op in [
        Op::BlockDecode {
            hidden: 64,
            heads: 2,
            head_dim: 32,
            ffn: 96,
            len: 5,
        },
        Op::BlockDecode {
            hidden: 128,
            heads: 4,
            head_dim: 32,
            ffn: 344,
            len: 301,
        },
        Op::BlockPrefill {
            hidden: 64,
            heads: 2,
            head_dim: 32,
            ffn: 96,
            tokens: 7,
        },
        Op::BlockPrefill {
            hidden: 128,
            heads: 2,
            head_dim: 64,
            ffn: 344,
            tokens: 70,
        },
    ] {
        assert_block(&mut dev, &op, s);
    }
}
