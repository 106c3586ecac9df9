//! The layer as a graph of the catalogue's f16 ops: the steps a
//! device replays, over the layer's buffers. Decode (one token) projects
//! with `gemv_f16`, prefill with `linear_f16` on the matrix units; both
//! share every other step, so the layouts cannot drift apart between them.
//!
//! ```text
//! a      = rmsnorm_f16(x, g_attn)
//! qkv    = proj(a, wqkv)                    wqkv = [wq; wk; wv], [3d][d]
//! q, K, V <- rope_kv_f16(qkv)                rows pos0.. of the caches
//! attn   = attn_decode_f16 | attn_prefill_f16 (q, K, V)
//! o      = proj(attn, wo)
//! h, m   = add_rmsnorm_f16(x, o, g_mlp)     h = x + o, m = rmsnorm(h) g_mlp
//! gu     = proj(m, w_gateup)                w_gateup = [w_gate; w_up], [2f][d]
//! act    = swiglu_f16(gu)
//! down   = proj(act, w_down)
//! y, nxt = add_rmsnorm_f16(h, down, g_attn) y = h + down; nxt is the next
//!                                           layer's normed input (unchecked)
//! ```
//!
//! Decode fused ([`Fusion::Fused`], the default), five kernels where the
//! graph above has ten: the small steps ride in the projections' prologues
//! and epilogues, so no activation makes a round trip through memory
//! between them.
//!
//! ```text
//! q, K, V <- rms_gemv_rope_kv_f16(x, g_attn, wqkv)   norm, QKV, RoPE, cache rows
//! attn   = attn_decode_f16(q, K, V)
//! h      = gemv_add_f16(attn, wo, x)                 h = x + Wo attn
//! act    = rms_gemv_swiglu_f16(h, g_mlp, w_gateup)   norm, gate/up, SwiGLU
//! y      = gemv_add_f16(act, w_down, h)              y = h + Wdown act
//! ```
//!
//! (The next layer's norm is its own QKV step's prologue, so the fused
//! graph has no `nxt`.) Prefill has nothing to fuse yet: its projections
//! are `linear_f16` on the matrix units, without prologues.

use super::BlockShape;
use crate::graph::Graph;
use crate::{DType, Op};

/// Whether a decode graph runs its small steps inside the projections
/// (norms in prologues; RoPE, the KV write, SwiGLU and the residual adds
/// in epilogues) or each as a kernel of its own. A plan's choice: both
/// compute the same layer, and the unfused one stays runnable so that the
/// two can be compared on a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    #[default]
    Fused,
    Separate,
}

/// The layer's own buffers (what the composite op binds), by name, in the
/// op's binding order: inputs, then the caches (read-write), then `y`.
pub const BUFFERS: [&str; 10] = [
    "x", "g_attn", "wqkv", "wo", "g_mlp", "w_gateup", "w_down", "k_cache", "v_cache", "y",
];

/// A layer's graph and, for each of [`BUFFERS`], its slot.
pub struct BlockGraph {
    pub graph: Graph,
    pub slots: [usize; 10],
}

/// Binds `op`'s buffers by name: a name in `named` gets that slot; any
/// other output or scratch buffer a fresh slot of its own (an
/// intermediate). An input nobody named is a bug in the builder.
fn add(g: &mut Graph, op: Op, named: &[(&str, usize)]) -> Result<(), String> {
    let step = g.steps.len();
    let n_in = op.inputs().len();
    let mut bind = Vec::new();
    for (i, spec) in op.inputs().into_iter().chain(op.outputs()).enumerate() {
        match named.iter().find(|(n, _)| *n == spec.name) {
            Some(&(_, s)) => bind.push(s),
            None if i < n_in => {
                return Err(format!(
                    "step {step} ({op}): input {} is not bound",
                    spec.name
                ))
            }
            None => bind.push(g.slot(
                &format!("{step}.{}.{}", op.name(), spec.name),
                spec.dtype,
                spec.len,
            )),
        }
    }
    g.step(op, &bind);
    Ok(())
}

/// The slot `add` bound to `op`'s buffer `name` (the step just added).
fn out(g: &Graph, name: &str) -> usize {
    let st = g.steps.last().expect("a step was added");
    let specs: Vec<_> = st.op.inputs().into_iter().chain(st.op.outputs()).collect();
    let i = specs
        .iter()
        .position(|s| s.name == name)
        .expect("the op has this buffer");
    st.bind[i]
}

/// Adds a projection step `op` (gemv_f16 or linear_f16) of `x` by
/// weights `w` and returns the slot of its result `y`.
fn project(g: &mut Graph, op: Op, x: usize, w: usize) -> Result<usize, String> {
    add(g, op, &[("x", x), ("w", w)])?;
    Ok(out(g, "y"))
}

/// The graph of one layer on `tokens` new tokens at positions `pos0..`,
/// caches of exactly `pos0 + tokens` positions; a decode graph (one token)
/// fused as `fusion` says.
pub fn build(
    s: &BlockShape,
    tokens: usize,
    pos0: usize,
    fusion: Fusion,
) -> Result<BlockGraph, String> {
    s.check()?;
    let (d, f) = (s.hidden, s.ffn);
    let max_seq = pos0 + tokens;
    let eps = s.eps as f32;
    let mut g = Graph::default();
    let f16 = DType::F16;
    let x = g.slot("x", f16, tokens * d);
    let g_attn = g.slot("g_attn", f16, d);
    let wqkv = g.slot("wqkv", f16, 3 * d * d);
    let wo = g.slot("wo", f16, d * d);
    let g_mlp = g.slot("g_mlp", f16, d);
    let w_gateup = g.slot("w_gateup", f16, 2 * f * d);
    let w_down = g.slot("w_down", f16, d * f);
    let k_cache = g.slot("k_cache", f16, max_seq * d);
    let v_cache = g.slot("v_cache", f16, max_seq * d);
    let y = g.slot("y", f16, tokens * d);
    // The residual add and norm that closes each half of the layer.
    let add_norm = Op::AddRmsNormF16 {
        rows: tokens,
        cols: d,
        eps,
    };
    if tokens == 1 && fusion == Fusion::Fused {
        let bufs = [
            x, g_attn, wqkv, wo, g_mlp, w_gateup, w_down, k_cache, v_cache, y,
        ];
        return fused_decode(g, s, pos0, bufs);
    }
    let proj = |rows: usize, cols: usize| {
        if tokens == 1 {
            Op::GemvF16 { rows, cols }
        } else {
            Op::LinearF16 { tokens, rows, cols }
        }
    };

    add(
        &mut g,
        Op::RmsNormF16 {
            rows: tokens,
            cols: d,
            eps,
        },
        &[("x", x), ("g", g_attn)],
    )?;
    let a = out(&g, "y");
    let qkv = project(&mut g, proj(3 * d, d), a, wqkv)?;
    let rope = Op::RopeKvF16 {
        tokens,
        heads: s.heads,
        head_dim: s.head_dim,
        pos0: pos0 as u32,
        max_seq,
        theta: s.theta as f32,
    };
    add(
        &mut g,
        rope,
        &[("qkv", qkv), ("k_cache", k_cache), ("v_cache", v_cache)],
    )?;
    let q = out(&g, "q");
    let attn = if tokens == 1 {
        Op::AttnDecodeF16 {
            heads: s.heads,
            head_dim: s.head_dim,
            len: max_seq,
            max_seq,
        }
    } else {
        Op::AttnPrefillF16 {
            tokens,
            heads: s.heads,
            head_dim: s.head_dim,
            pos0: pos0 as u32,
            max_seq,
        }
    };
    add(
        &mut g,
        attn,
        &[("q", q), ("k_cache", k_cache), ("v_cache", v_cache)],
    )?;
    let att = out(&g, "o");
    let o = project(&mut g, proj(d, d), att, wo)?;
    add(
        &mut g,
        add_norm.clone(),
        &[("x", x), ("r", o), ("g", g_mlp)],
    )?;
    let (h, m) = (out(&g, "h"), out(&g, "y"));
    let gu = project(&mut g, proj(2 * f, d), m, w_gateup)?;
    add(
        &mut g,
        Op::SwigluF16 {
            rows: tokens,
            cols: f,
        },
        &[("gu", gu)],
    )?;
    let act = out(&g, "a");
    let down = project(&mut g, proj(d, f), act, w_down)?;
    add(
        &mut g,
        add_norm,
        &[("x", h), ("r", down), ("g", g_attn), ("h", y)],
    )?;
    g.validate()?;
    Ok(BlockGraph {
        graph: g,
        slots: [
            x, g_attn, wqkv, wo, g_mlp, w_gateup, w_down, k_cache, v_cache, y,
        ],
    })
}

/// The fused decode graph (see the module docs) over the layer's buffers
/// `bufs` ([`BUFFERS`] order), already slots of `g`.
fn fused_decode(
    mut g: Graph,
    s: &BlockShape,
    pos0: usize,
    bufs: [usize; 10],
) -> Result<BlockGraph, String> {
    let [x, g_attn, wqkv, wo, g_mlp, w_gateup, w_down, k_cache, v_cache, y] = bufs;
    let (d, f) = (s.hidden, s.ffn);
    let max_seq = pos0 + 1;
    let eps = s.eps as f32;
    add(
        &mut g,
        Op::RmsGemvRopeKvF16 {
            heads: s.heads,
            head_dim: s.head_dim,
            pos0: pos0 as u32,
            max_seq,
            theta: s.theta as f32,
            eps,
        },
        &[
            ("x", x),
            ("g", g_attn),
            ("w", wqkv),
            ("k_cache", k_cache),
            ("v_cache", v_cache),
        ],
    )?;
    let q = out(&g, "q");
    add(
        &mut g,
        Op::AttnDecodeF16 {
            heads: s.heads,
            head_dim: s.head_dim,
            len: max_seq,
            max_seq,
        },
        &[("q", q), ("k_cache", k_cache), ("v_cache", v_cache)],
    )?;
    let att = out(&g, "o");
    add(
        &mut g,
        Op::GemvAddF16 { rows: d, cols: d },
        &[("x", att), ("w", wo), ("r", x)],
    )?;
    let h = out(&g, "y");
    add(
        &mut g,
        Op::RmsGemvSwigluF16 {
            rows: f,
            cols: d,
            eps,
        },
        &[("x", h), ("g", g_mlp), ("w", w_gateup)],
    )?;
    let act = out(&g, "a");
    add(
        &mut g,
        Op::GemvAddF16 { rows: d, cols: f },
        &[("x", act), ("w", w_down), ("r", h), ("y", y)],
    )?;
    g.validate()?;
    Ok(BlockGraph {
        graph: g,
        slots: bufs,
    })
}
