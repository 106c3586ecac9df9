//! The layer as a composite op (`block_decode`, `block_prefill`): its
//! buffers, its f64 reference with the error model, and the graph of
//! catalogue ops a device replays for it (`super::graph`).
//!
//! A composite op has no kernel of its own: a backend runs its graph
//! (`greta-runtime`'s `Backend::run` hands it to `run_graph`), binding each
//! of the op's buffers to a range of one slot (`Composite::bind`): the
//! cached K/V rows are the first rows of the cache slots, the new rows the
//! last.

use super::graph::Fusion;
use super::{forward, BlockOut, BlockShape, BlockWeights, Expected, DEVICE};
use crate::graph::Composite;
use crate::{Access, BufferSpec, DType, HostBuf, Op};

/// The layer's shape from an op's fields: Llama's eps (1e-5) and RoPE
/// theta (10000) are fixed, as in every Llama-2 layer.
pub fn shape(hidden: usize, heads: usize, head_dim: usize, ffn: usize) -> BlockShape {
    BlockShape {
        hidden,
        heads,
        head_dim,
        ffn,
        eps: 1e-5,
        theta: 10000.0,
    }
}

/// The norm bound applies where no inputs are at hand (`check_buf` alone);
/// the gate checks each element against the derived error model
/// ([`Expected`], 8 standard deviations).
pub const TOLERANCE: crate::Tolerance = crate::Tolerance::FP16_ACC32;

/// Weights at `sqrt(3 / fan_in)` of Llama-2-7B's widths, so activations keep
/// their scale through the layer; gains near 1.
pub const INPUT_RANGES: &[(&str, (f32, f32))] = &[
    ("g_attn", (0.5, 1.5)),
    ("g_mlp", (0.5, 1.5)),
    ("wqkv", (-0.027, 0.027)),
    ("wo", (-0.027, 0.027)),
    ("w_gateup", (-0.027, 0.027)),
    ("w_down", (-0.0165, 0.0165)),
];

/// Fresh inputs of a composite op (all f16), in binding order: each
/// value `draw(lo, hi)` within its buffer's range ([`Op::input_range`]),
/// element by element, rounded to f16. A test draws from its own seeded
/// generator; an input that is not f16 is an error naming it.
pub fn draw_inputs(op: &Op, mut draw: impl FnMut(f32, f32) -> f32) -> Result<Vec<HostBuf>, String> {
    op.inputs()
        .iter()
        .map(|s| {
            if s.dtype != DType::F16 {
                return Err(format!("{op}: input {} is {:?}, not f16", s.name, s.dtype));
            }
            let (lo, hi) = op.input_range(s.name);
            Ok(HostBuf::F16(
                (0..s.len)
                    .map(|_| half::f16::from_f32(draw(lo, hi)))
                    .collect(),
            ))
        })
        .collect()
}

fn f16(name: &'static str, len: usize, access: Access) -> BufferSpec {
    BufferSpec {
        name,
        dtype: DType::F16,
        len,
        access,
    }
}

/// Inputs: the new tokens, the weights (QKV and gate/up fused, `[out][in]`)
/// and, after `past > 0` cached positions, the cache rows before them.
pub fn inputs(s: &BlockShape, tokens: usize, past: usize) -> Vec<BufferSpec> {
    let (d, f) = (s.hidden, s.ffn);
    let r = Access::Read;
    let mut v = vec![
        f16("x", tokens * d, r),
        f16("g_attn", d, r),
        f16("wqkv", 3 * d * d, r),
        f16("wo", d * d, r),
        f16("g_mlp", d, r),
        f16("w_gateup", 2 * f * d, r),
        f16("w_down", d * f, r),
    ];
    if past > 0 {
        v.push(f16("k_past", past * d, r));
        v.push(f16("v_past", past * d, r));
    }
    v
}

/// Outputs: the layer's output and the K/V rows it appends (K rotated).
pub fn outputs(s: &BlockShape, tokens: usize) -> Vec<BufferSpec> {
    let n = tokens * s.hidden;
    vec![
        f16("y", n, Access::Write),
        f16("k_new", n, Access::Write),
        f16("v_new", n, Access::Write),
    ]
}

/// The weights as [`forward`] takes them (the fused ones split by rows),
/// copied on every core (Llama-2-7B's layer is 1.6 GB of f64).
fn weights(s: &BlockShape, x: &[Vec<f64>]) -> BlockWeights {
    use rayon::prelude::*;
    let (d, f) = (s.hidden, s.ffn);
    let wqkv = &x[2];
    let gu = &x[5];
    let copy =
        |v: &[f64]| -> Vec<f64> { v.par_iter().with_min_len(crate::PAR_MIN).copied().collect() };
    BlockWeights {
        g_attn: copy(&x[1]),
        wq: copy(&wqkv[..d * d]),
        wk: copy(&wqkv[d * d..2 * d * d]),
        wv: copy(&wqkv[2 * d * d..]),
        wo: copy(&x[3]),
        g_mlp: copy(&x[4]),
        w_gate: copy(&gu[..f * d]),
        w_up: copy(&gu[f * d..]),
        w_down: copy(&x[6]),
    }
}

/// The outputs' exact values and the standard deviation of a device's
/// error in each ([`Expected`]), from inputs as f64 in binding order.
pub fn expected(s: &BlockShape, x: &[Vec<f64>]) -> Result<[Expected; 3], String> {
    let empty = Vec::new();
    let (kp, vp) = if x.len() > 8 {
        (&x[7], &x[8])
    } else {
        (&empty, &empty)
    };
    let o = forward(s, &weights(s, x), &x[0], kp, vp, DEVICE)?;
    Ok([o.y, o.k_new, o.v_new])
}

/// Multiply-adds of f64 reference (with its error model) a check spends
/// before it samples tokens instead: about a second of a release build.
pub const FULL_REFERENCE_MACS: u64 = 1 << 29;

/// Tokens of a long prefill checked besides the first and the last.
const SAMPLED_TOKENS: usize = 2;

/// What a run's outputs `got` must match: every element where the f64
/// reference of the whole call is affordable ([`FULL_REFERENCE_MACS`]);
/// for a long prefill, sampled tokens (the first, the last and
/// [`SAMPLED_TOKENS`] drawn from `seed`), each the layer on that one token
/// at its position with the cache rows before it as the device wrote them
/// (`got`'s K and V): the same arithmetic as decode at that position.
pub fn expected_for(
    s: &BlockShape,
    x: &[Vec<f64>],
    got: &[crate::HostBuf],
    tokens: usize,
    seed: u64,
) -> Result<Vec<Expected>, String> {
    expected_within(s, x, got, tokens, seed, FULL_REFERENCE_MACS)
}

/// [`expected_for`] with the reference budget as a parameter (tests sample
/// small layers).
pub(crate) fn expected_within(
    s: &BlockShape,
    x: &[Vec<f64>],
    got: &[crate::HostBuf],
    tokens: usize,
    seed: u64,
    budget_macs: u64,
) -> Result<Vec<Expected>, String> {
    let (d, f) = (s.hidden as u64, s.ffn as u64);
    let t = tokens as u64;
    let macs = t
        .saturating_mul(4 * d * d + 3 * f * d)
        .saturating_add(t.saturating_mul(t).saturating_mul(d));
    if macs <= budget_macs || tokens < 3 {
        return expected(s, x).map(Vec::from);
    }
    let [_, k_dev, v_dev] = got else {
        return Err(format!(
            "{} outputs, expected y, k_new and v_new",
            got.len()
        ));
    };
    let (k_dev, v_dev) = (k_dev.to_f64(), v_dev.to_f64());
    let d = s.hidden;
    if k_dev.len() < tokens * d || v_dev.len() < tokens * d || x[0].len() < tokens * d {
        return Err("outputs shorter than the tokens they hold".into());
    }
    let mut pick = vec![0, tokens - 1];
    let mut r = seed | 1;
    for _ in 0..SAMPLED_TOKENS {
        // xorshift64: a few positions, reproducible from the gate's seed.
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        pick.push((r % tokens as u64) as usize);
    }
    pick.sort_unstable();
    pick.dedup();
    let w = weights(s, x);
    let mut out: Vec<Expected> = (0..3)
        .map(|_| Expected {
            value: Vec::new(),
            sd: Vec::new(),
            index: Some(Vec::new()),
        })
        .collect();
    // The sampled tokens on every core (each the layer on its own).
    use rayon::prelude::*;
    let each: Vec<BlockOut> = pick
        .par_iter()
        .map(|&t| {
            forward(
                s,
                &w,
                &x[0][t * d..(t + 1) * d],
                &k_dev[..t * d],
                &v_dev[..t * d],
                DEVICE,
            )
        })
        .collect::<Result<_, String>>()?;
    for (&t, o) in pick.iter().zip(each) {
        let rows = t * d..(t + 1) * d;
        for (e, part) in out.iter_mut().zip([o.y, o.k_new, o.v_new]) {
            e.value.extend(part.value);
            e.sd.extend(part.sd);
            if let Some(ix) = e.index.as_mut() {
                ix.extend(rows.clone());
            }
        }
    }
    Ok(out)
}

/// The reference values (what [`crate::reference()`] returns).
pub fn reference(s: &BlockShape, x: &[Vec<f64>]) -> Vec<Vec<f64>> {
    match expected(s, x) {
        Ok(e) => e.into_iter().map(|e| e.value).collect(),
        // Shapes were validated and buffers checked against them before.
        Err(e) => unreachable!("block reference on checked buffers: {e}"),
    }
}

/// The work of the composite's steps, summed (0 for a shape it refuses):
/// those of the unfused graph, so that the layer's work does not depend on
/// how a plan fuses its steps.
pub fn flops(s: &BlockShape, tokens: usize, past: usize) -> u64 {
    composite(s, tokens, past, Fusion::Separate)
        .map(|c| c.graph.steps.iter().map(|s| s.op.flops()).sum())
        .unwrap_or(0)
}

/// The composite of `tokens` new tokens after `past` cached positions, its
/// steps fused as `fusion` says.
pub fn composite(
    s: &BlockShape,
    tokens: usize,
    past: usize,
    fusion: Fusion,
) -> Result<Composite, String> {
    let bg = super::graph::build(s, tokens, past, fusion)?;
    let [x, g_attn, wqkv, wo, g_mlp, w_gateup, w_down, k_cache, v_cache, y] = bg.slots;
    let d = s.hidden;
    let mut bind = vec![
        (x, 0),
        (g_attn, 0),
        (wqkv, 0),
        (wo, 0),
        (g_mlp, 0),
        (w_gateup, 0),
        (w_down, 0),
    ];
    if past > 0 {
        bind.push((k_cache, 0));
        bind.push((v_cache, 0));
    }
    bind.extend([(y, 0), (k_cache, past * d), (v_cache, past * d)]);
    Ok(Composite {
        graph: bg.graph,
        bind,
        tokens,
    })
}
