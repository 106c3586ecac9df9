//! The transformer-block composite ops on lavapipe (validation on): the
//! whole layer replayed as one command buffer of the f16 ops, every output
//! within the layer's fp16 error model of the f64 reference, fresh random
//! inputs drawn from the op's ranges.

use crate::common::*;
use greta_kernels::block::graph::Fusion;
use greta_kernels::{HostBuf, Op};
use greta_runtime::{Backend, Job, Knob, RunOpts, TimingSource, Tuning};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn inputs(op: &Op, seed: u64) -> Vec<HostBuf> {
    let mut rng = StdRng::seed_from_u64(seed);
    greta_kernels::block::composite::draw_inputs(op, |lo, hi| rng.gen_range(lo..hi))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `op` (with `tuning`, if any) and checks every output against the
/// layer's error model; returns the stats.
fn assert_block_with(
    dev: &mut greta_runtime::VulkanDevice,
    op: &Op,
    seed: u64,
    tuning: Option<Tuning>,
) -> greta_runtime::RunStats {
    let ins = inputs(op, seed);
    let mut outs: Vec<HostBuf> = op
        .outputs()
        .iter()
        .map(|s| HostBuf::poisoned(s.dtype, s.len))
        .collect();
    let opts = RunOpts {
        repeats: 2,
        tuning,
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
    let fusion = match stats.tuning.get(Knob::Fuse) {
        Some(0) => Fusion::Separate,
        _ => Fusion::Fused,
    };
    let steps = op.composite_as(fusion).unwrap().unwrap().graph.steps.len();
    assert_eq!(stats.device_ns.len(), 2);
    assert!(stats.kernel.starts_with("graph:"), "{}", stats.kernel);
    assert_eq!(stats.kernel.matches('+').count() + 1, steps);
    if stats.timing == TimingSource::DeviceTimestamps {
        assert_eq!(stats.step_ns.len(), steps);
    }
    assert_clean(dev);
    stats
}

fn assert_block(dev: &mut greta_runtime::VulkanDevice, op: &Op, seed: u64) {
    assert_block_with(dev, op, seed, None);
}

/// The decode layer runs fused by default (five kernels: the norms in the
/// projections' prologues, RoPE, the cache write, SwiGLU and the residual
/// adds in their epilogues) and unfused when the plan asks (`fuse=0`, ten
/// kernels); both within the error model, on fresh inputs. A key the
/// composite does not take, or a bad value, is refused.
#[test]
fn decode_runs_fused_by_default_and_unfused_when_asked() {
    let mut dev = device();
    let s = seed();
    let op = Op::BlockDecode {
        hidden: 128,
        heads: 4,
        head_dim: 32,
        ffn: 344,
        len: 37,
    };
    let fused = assert_block_with(&mut dev, &op, s, None);
    assert_eq!(fused.tuning, Tuning::of(&[(Knob::Fuse, 1)]));
    assert_eq!(
        fused.kernel,
        [
            "rms_gemv_rope_kv_f16_v8",
            "attn_decode_f16",
            "gemv_add_f16_v8",
            "rms_gemv_swiglu_f16_v8",
            "gemv_add_f16_v8"
        ]
        .map(|k| k.to_string())
        .join("+")
        .replace("rms_gemv_rope", "graph:rms_gemv_rope"),
    );
    let separate = assert_block_with(&mut dev, &op, s, Some(Tuning::of(&[(Knob::Fuse, 0)])));
    assert_eq!(separate.tuning, Tuning::of(&[(Knob::Fuse, 0)]));
    assert_eq!(separate.dispatches_per_repeat, 10, "{}", separate.kernel);
    assert_eq!(fused.dispatches_per_repeat, 5, "{}", fused.kernel);
    for bad in [
        Tuning::of(&[(Knob::Fuse, 2)]),
        Tuning::of(&[(Knob::Wg, 64)]),
    ] {
        let ins = inputs(&op, s);
        let mut outs: Vec<HostBuf> = op
            .outputs()
            .iter()
            .map(|s| HostBuf::poisoned(s.dtype, s.len))
            .collect();
        let opts = RunOpts {
            tuning: Some(bad.clone()),
            ..RunOpts::default()
        };
        let e = dev.run(Job::new(&op, &ins, &mut outs, &opts)).unwrap_err();
        assert!(
            matches!(e, greta_runtime::RuntimeError::BadInput(_)),
            "{bad}: {e}"
        );
    }
    assert_eq!(
        dev.tuning_candidates(&op),
        vec![
            Tuning::of(&[(Knob::Fuse, 1)]),
            Tuning::of(&[(Knob::Fuse, 0)])
        ]
    );
}

/// A fused kernel that is wrong fails the layer's check: `probe=1` runs
/// the QKV step's diagnostic variant, whose RMSNorm prologue leaves one
/// lane of each subgroup out of the sum of squares, on the device, inside
/// the fused graph (what `--inject prologue` asks for). The same layer with
/// the same inputs passes without it; `probe` needs the fused graph.
#[test]
fn a_wrong_fused_prologue_fails_the_layers_check() {
    let mut dev = device();
    let s = seed();
    let op = Op::BlockDecode {
        hidden: 128,
        heads: 4,
        head_dim: 32,
        ffn: 344,
        len: 37,
    };
    assert_block_with(&mut dev, &op, s, None);
    let ins = inputs(&op, s);
    let mut outs: Vec<HostBuf> = op
        .outputs()
        .iter()
        .map(|s| HostBuf::poisoned(s.dtype, s.len))
        .collect();
    let probe = Tuning::of(&[(Knob::Probe, 1)]);
    let opts = RunOpts {
        tuning: Some(probe.clone()),
        ..RunOpts::default()
    };
    let stats = dev
        .run(Job::new(&op, &ins, &mut outs, &opts))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stats.tuning, probe.clone().with(Knob::Fuse, 1));
    let x: Vec<Vec<f64>> = ins.iter().map(HostBuf::to_f64).collect();
    let expected = op.expected(&x, &outs, s).expect("a composite op").unwrap();
    // The new cache rows (k and v of the token, which the prologue's norm
    // scales) are far outside the error model (y, through attention and
    // the residual, moves less and may or may not): the layer fails.
    for ((e, o), spec) in expected.iter().zip(&outs).zip(op.outputs()) {
        let c = e.outcome(o);
        eprintln!(
            "probe: {} rel_err={:.3e} {:?}",
            spec.name, c.rel_err, c.reason
        );
        assert_eq!(c.non_finite, 0, "a wrong value, not a broken one: {c:?}");
        if spec.name != "y" {
            assert!(
                !c.pass && c.rel_err > 1e-2,
                "{} with a wrong prologue: {c:?}",
                spec.name
            );
        }
    }
    let opts = RunOpts {
        tuning: Some(probe.with(Knob::Fuse, 0)),
        ..RunOpts::default()
    };
    let e = dev.run(Job::new(&op, &ins, &mut outs, &opts)).unwrap_err();
    assert!(e.to_string().contains("needs the fused graph"), "{e}");
    assert_clean(&dev);
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

/// The Vulkan in-run copy ceiling: the faster of `vkCmdCopyBuffer` and
/// greta's copy shader over half the decode layer's footprint (the size
/// the HIP/CUDA ceiling copies with the driver's memcpy), each timed by the
/// device and its copy checked; a GB/s rate
/// the decode gate's ratio is read against. A TFLOP/s op and the noop
/// have none.
#[test]
fn vulkan_has_a_copy_ceiling_of_the_same_footprint() {
    let mut dev = device();
    let op = Op::BlockDecode {
        hidden: 128,
        heads: 4,
        head_dim: 32,
        ffn: 344,
        len: 301,
    };
    let c = dev
        .ceiling(&op, std::time::Duration::from_secs(30))
        .expect("a memory-bound op has a copy ceiling")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.unit, greta_runtime::CeilingUnit::GBps);
    assert!(c.rate.is_finite() && c.rate > 0.0, "{c:?}");
    // The faster of the driver's copy and greta's copy shader, named, the
    // other's rate beside it.
    let bytes = op.bytes_moved() / 2;
    let (driver, shader) = (
        format!("vkCmdCopyBuffer of {bytes} bytes (the faster: greta's copy shader (copy"),
        format!(
            "greta's copy shader (copy) of {bytes} bytes (the faster: vkCmdCopyBuffer reached "
        ),
    );
    assert!(
        c.source.starts_with(&driver) || c.source.starts_with(&shader),
        "{}",
        c.source
    );
    let gemm = Op::GemmF16 {
        m: 64,
        n: 64,
        k: 64,
    };
    assert!(dev
        .ceiling(&gemm, std::time::Duration::from_secs(5))
        .is_none());
    assert!(dev
        .ceiling(&Op::Noop, std::time::Duration::from_secs(5))
        .is_none());
    assert_clean(&dev);
}
