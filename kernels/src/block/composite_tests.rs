//! The composite ops against the layer reference: the graph of catalogue
//! ops, run through each op's own f64 reference with f16 stores between
//! steps ([`crate::graph::Graph::reference`]), lands within the layer's
//! error model; a mis-bound buffer does not.
use super::graph::Fusion;
use crate::{DType, HostBuf, Op};
use rand::{rngs::StdRng, Rng, SeedableRng};

fn rng() -> StdRng {
    let s = rand::random();
    eprintln!("seed {s}");
    StdRng::seed_from_u64(s)
}

/// Inputs drawn as the smoke gates draw them: each buffer from its op's
/// `input_range`, stored as f16.
fn inputs(op: &Op, rng: &mut StdRng) -> Vec<HostBuf> {
    super::composite::draw_inputs(op, |lo, hi| rng.gen_range(lo..hi)).unwrap()
}

/// Runs the op's graph on the host: the outputs as the device would store them.
fn run_graph(op: &Op, ins: &[HostBuf], bind: Option<Vec<(usize, usize)>>) -> Vec<HostBuf> {
    run_graph_as(op, ins, bind, Fusion::default(), |_| {})
}

/// [`run_graph`] of the graph fused as `fusion`, after `edit` (a fault
/// injected into the graph) had its way with it.
fn run_graph_as(
    op: &Op,
    ins: &[HostBuf],
    bind: Option<Vec<(usize, usize)>>,
    fusion: Fusion,
    edit: impl FnOnce(&mut crate::graph::Composite),
) -> Vec<HostBuf> {
    let mut c = op.composite_as(fusion).expect("composite").expect("builds");
    if let Some(b) = bind {
        c.bind = b;
    }
    edit(&mut c);
    let mut slots = c.slot_buffers(ins).unwrap();
    // A slot no op input fills and no step writes first (an injected
    // constant) holds ones.
    for (i, s) in c.graph.slots.iter().enumerate() {
        if s.name.starts_with("ones") {
            slots[i] = HostBuf::from_f64(DType::F16, &vec![1.0; s.len]);
        }
    }
    c.graph.reference(&mut slots).unwrap();
    let mut outs: Vec<HostBuf> = op
        .outputs()
        .iter()
        .map(|s| HostBuf::poisoned(s.dtype, s.len))
        .collect();
    c.take_outputs(ins.len(), &slots, &mut outs).unwrap();
    outs
}

fn outcomes(op: &Op, ins: &[HostBuf], outs: &[HostBuf]) -> Vec<crate::check::CheckOutcome> {
    let x: Vec<Vec<f64>> = ins.iter().map(HostBuf::to_f64).collect();
    let exp = op.expected(&x, outs, 1).expect("composite").unwrap();
    exp.iter().zip(outs).map(|(e, o)| e.outcome(o)).collect()
}

const SHAPES: [(usize, usize, usize, usize); 2] = [(64, 2, 32, 96), (256, 4, 64, 688)];

#[test]
fn the_graph_of_ops_lands_within_the_layer_error_model() {
    let mut rng = rng();
    for (hidden, heads, head_dim, ffn) in SHAPES {
        for op in [
            Op::BlockDecode {
                hidden,
                heads,
                head_dim,
                ffn,
                len: 37,
            },
            Op::BlockPrefill {
                hidden,
                heads,
                head_dim,
                ffn,
                tokens: 19,
            },
        ] {
            let ins = inputs(&op, &mut rng);
            for fusion in [Fusion::Fused, Fusion::Separate] {
                let outs = run_graph_as(&op, &ins, None, fusion, |_| {});
                for (o, spec) in outcomes(&op, &ins, &outs).iter().zip(op.outputs()) {
                    assert!(o.pass, "{op} {fusion:?} {}: {o:?}", spec.name);
                    assert!(
                        o.rel_err > 0.0,
                        "{op} {fusion:?} {}: the roundings happened",
                        spec.name
                    );
                }
            }
        }
    }
}

#[test]
fn swapped_cache_bindings_fail_the_check() {
    let mut rng = rng();
    let op = Op::BlockDecode {
        hidden: 64,
        heads: 2,
        head_dim: 32,
        ffn: 96,
        len: 37,
    };
    let ins = inputs(&op, &mut rng);
    let mut bind = op.composite().unwrap().unwrap().bind;
    // k_past and v_past (inputs 7 and 8) each placed in the other's cache.
    bind.swap(7, 8);
    let outs = run_graph(&op, &ins, Some(bind));
    let y = &outcomes(&op, &ins, &outs)[0];
    assert!(!y.pass, "a layer reading V as K must fail: {y:?}");
}

#[test]
fn flops_are_the_sum_of_the_steps_and_bytes_the_buffers() {
    let op = Op::BlockDecode {
        hidden: 4096,
        heads: 32,
        head_dim: 128,
        ffn: 11008,
        len: 512,
    };
    // Weights (4 d^2 + 3 f d) f16 plus the gains, the 512 cached rows of K
    // and V, x, and y, k_new, v_new.
    let (d, f) = (4096u64, 11008u64);
    let weights = 2 * (4 * d * d + 3 * f * d + 2 * d);
    assert_eq!(
        op.bytes_moved(),
        weights + 2 * 2 * 512 * d + 2 * d + 3 * 2 * d
    );
    // The layer's work is the unfused graph's, whatever a plan fuses; the
    // fused graph does the same multiply-adds (its norms and adds aside).
    let flops = |fusion| -> u64 {
        let c = op.composite_as(fusion).unwrap().unwrap();
        c.graph.steps.iter().map(|s| s.op.flops()).sum()
    };
    assert_eq!(op.flops(), flops(Fusion::Separate));
    assert!(op.flops() > 2 * (4 * d * d + 3 * f * d));
    let fused = flops(Fusion::Fused) as f64;
    assert!((fused / op.flops() as f64 - 1.0).abs() < 1e-3, "{fused}");
    // Five kernels where the unfused graph has ten.
    let steps = |fusion| op.composite_as(fusion).unwrap().unwrap().graph.steps.len();
    assert_eq!((steps(Fusion::Fused), steps(Fusion::Separate)), (5, 10));
}

/// A fused step that is fast but wrong fails the layer's check: a norm
/// prologue that drops its gain (scales by the inverse RMS alone), or
/// scales by the other norm's gain, moves the output far outside the
/// error model, as does an epilogue that adds the wrong residual.
#[test]
fn a_fault_in_a_fused_prologue_or_epilogue_fails_the_check() {
    let mut rng = rng();
    let op = Op::BlockDecode {
        hidden: 256,
        heads: 4,
        head_dim: 64,
        ffn: 688,
        len: 37,
    };
    let ins = inputs(&op, &mut rng);
    // Rebinds input `name` of the fused step running `which` to `to` (a
    // slot of the graph, or a fresh slot of ones).
    fn rebind(c: &mut crate::graph::Composite, which: &str, name: &str, to: Option<&str>) {
        let g = &mut c.graph;
        let i = g.steps.iter().position(|s| s.op.name() == which).unwrap();
        let k = g.steps[i]
            .op
            .inputs()
            .iter()
            .position(|s| s.name == name)
            .unwrap();
        let len = g.steps[i].op.inputs()[k].len;
        let slot = match to {
            Some(n) => g.slots.iter().position(|s| s.name == n).unwrap(),
            None => g.slot("ones", DType::F16, len),
        };
        g.steps[i].bind[k] = slot;
    }
    let faults: [(&str, &str, Option<&str>); 4] = [
        ("rms_gemv_rope_kv_f16", "g", None),
        ("rms_gemv_swiglu_f16", "g", None),
        ("rms_gemv_swiglu_f16", "g", Some("g_attn")),
        ("gemv_add_f16", "r", Some("x")),
    ];
    for (which, name, to) in faults {
        let outs = run_graph_as(&op, &ins, None, Fusion::Fused, |c| {
            // The last gemv_add_f16 adds h; point it at x instead.
            if which == "gemv_add_f16" {
                let g = &mut c.graph;
                let i = g.steps.iter().rposition(|s| s.op.name() == which).unwrap();
                let x = g.slots.iter().position(|s| s.name == "x").unwrap();
                g.steps[i].bind[2] = x;
            } else {
                rebind(c, which, name, to);
            }
        });
        let y = &outcomes(&op, &ins, &outs)[0];
        assert!(!y.pass, "{which} {name} -> {to:?} must fail: {y:?}");
    }
    // And unfaulted, the same inputs pass.
    let outs = run_graph_as(&op, &ins, None, Fusion::Fused, |_| {});
    assert!(outcomes(&op, &ins, &outs)[0].pass);
}

#[test]
fn a_long_prefill_is_checked_on_sampled_tokens_with_the_device_cache() {
    use crate::block::composite::{expected_within, shape};
    let mut rng = rng();
    let (hidden, heads, head_dim, ffn, tokens) = (64, 2, 32, 96, 23);
    let op = Op::BlockPrefill {
        hidden,
        heads,
        head_dim,
        ffn,
        tokens,
    };
    let s = shape(hidden, heads, head_dim, ffn);
    let ins = inputs(&op, &mut rng);
    let x: Vec<Vec<f64>> = ins.iter().map(HostBuf::to_f64).collect();
    let outs = run_graph(&op, &ins, None);
    let seed = rng.gen();
    // A budget of nothing forces sampling.
    let exp = expected_within(&s, &x, &outs, tokens, seed, 0).unwrap();
    let ix = exp[0].index.clone().expect("sampled");
    assert!(
        ix.contains(&0) && ix.contains(&(tokens * hidden - 1)),
        "first and last tokens"
    );
    assert!(ix.len() < tokens * hidden && ix.len().is_multiple_of(hidden));
    for (e, o) in exp.iter().zip(&outs) {
        assert!(e.outcome(o).pass, "{:?}", e.outcome(o));
    }
    // The last token's output wrong by a little: caught.
    let mut bad = outs.clone();
    if let HostBuf::F16(y) = &mut bad[0] {
        let i = tokens * hidden - 3;
        y[i] = half::f16::from_f64(y[i].to_f64() + 0.05);
    }
    assert!(!exp[0].outcome(&bad[0]).pass);
    // Same inputs, same seed: the same sample.
    assert_eq!(
        expected_within(&s, &x, &outs, tokens, seed, 0).unwrap()[0].index,
        Some(ix)
    );
}

/// Drawn inputs lie in their buffers' ranges, in binding order; an op
/// with an input that is not f16 is refused, naming it.
#[test]
fn drawn_inputs_follow_the_ranges_and_refuse_other_types() {
    let op = Op::BlockPrefill {
        hidden: 64,
        heads: 2,
        head_dim: 32,
        ffn: 96,
        tokens: 3,
    };
    let mut rng = rng();
    let ins = inputs(&op, &mut rng);
    for (b, s) in ins.iter().zip(op.inputs()) {
        let (lo, hi) = op.input_range(s.name);
        let v = b.to_f64();
        assert_eq!(v.len(), s.len, "{}", s.name);
        // f16 rounding may land on the range's ends.
        let slack = 1e-3 * (hi - lo) as f64;
        assert!(
            v.iter()
                .all(|&x| x >= lo as f64 - slack && x <= hi as f64 + slack),
            "{}",
            s.name
        );
    }
    let e = super::composite::draw_inputs(&Op::VecAdd { n: 4 }, |lo, _| lo).unwrap_err();
    assert!(e.contains("input a is F32, not f16"), "{e}");
}
