//! The f64 reference of one Llama decoder layer (the transformer-block
//! gate): what the device's layer must reproduce, written from the maths and
//! independent of every kernel.
//!
//! One layer, batch 1, Hugging Face Llama semantics:
//!
//! ```text
//! a   = rmsnorm(x) * g_attn
//! q,k,v = Wq a, Wk a, Wv a            (per token; q,k rotated by RoPE at its position)
//! h   = x + Wo attention(q, [K_cache; k], [V_cache; v])   (causal, scale 1/sqrt(head_dim))
//! m   = rmsnorm(h) * g_mlp
//! y   = h + Wdown (silu(Wgate m) * (Wup m))
//! ```
//!
//! Layouts (row-major, no padding, as everywhere in this crate): a weight is
//! `[out][in]` as a PyTorch `Linear` stores it, so `(W a)[o] = sum_i W[o][i] a[i]`;
//! activations are `[tokens][hidden]`; K and V (the cache and the rows this
//! call appends) are `[position][heads][head_dim]`, one layer. RoPE is the
//! "rotate half" form of [`crate::Op::Rope`].
//!
//! The same function serves decode and prefill: `tokens` new tokens at
//! positions `pos0 .. pos0 + tokens`, attending causally to the `pos0` cached
//! positions and to each other. Decode is `tokens = 1, pos0 = L`; prefill
//! is `pos0 = 0`. That one code path is the point: the seeds' own history
//! had prefill and decode disagree on the Wq/Wk/Wv layout, which a shared
//! reference plus the consistency test below rules out.
//!
//! Where the device stores f16 is where its kernels end (the op
//! set, `docs/smoke.md`): the normed activations, the fused QKV projection
//! (then again after RoPE), the attention output, each projection before
//! its residual add, the residual sums, the MLP's gate and up values and
//! their SwiGLU product. The model rounds at exactly those points.
//!
//! Beside each value it carries the standard deviation of the error a
//! device makes there when it stores activations in fp16 and computes in
//! f32 ([`Numerics`], [`DEVICE`]): the gate's tolerance, derived from the
//! arithmetic rather than tuned until a kernel passes ([`Expected::check`]).
//! Tests prove the model both ways on a CPU model of the device that does
//! those roundings for real: its errors match the predicted spread, and a
//! wrong RoPE, an off-by-one mask, a transposed weight and a stale cache
//! row each fail the check.

pub mod composite;
pub mod graph;
mod steps;

use steps::{add, attention, matvec, rmsnorm, rope, store_all, swiglu, Fault, Mode, Num};

/// The shape of one layer. Llama-2-7B is [`BlockShape::LLAMA2_7B`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockShape {
    pub hidden: usize,
    pub heads: usize,
    pub head_dim: usize,
    /// The MLP's inner size (SwiGLU).
    pub ffn: usize,
    pub eps: f64,
    pub theta: f64,
}

impl BlockShape {
    /// Llama-2-7B: hidden 4096, 32 heads x 128, MLP 11008, RMSNorm eps 1e-5,
    /// RoPE theta 10000.
    pub const LLAMA2_7B: BlockShape = BlockShape {
        hidden: 4096,
        heads: 32,
        head_dim: 128,
        ffn: 11008,
        eps: 1e-5,
        theta: 10000.0,
    };

    /// Checks the sizes agree: `heads * head_dim == hidden`, even head_dim,
    /// nothing zero, finite positive eps and theta.
    pub fn check(&self) -> Result<(), String> {
        for (what, v) in [
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("head_dim", self.head_dim),
            ("ffn", self.ffn),
        ] {
            if v == 0 {
                return Err(format!("{what} must be > 0"));
            }
        }
        if self.heads.checked_mul(self.head_dim) != Some(self.hidden) {
            return Err(format!(
                "heads x head_dim ({} x {}) must equal hidden ({})",
                self.heads, self.head_dim, self.hidden
            ));
        }
        if !self.head_dim.is_multiple_of(2) {
            return Err(format!("head_dim must be even, got {}", self.head_dim));
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return Err(format!("eps must be finite and > 0, got {}", self.eps));
        }
        if !(self.theta.is_finite() && self.theta > 0.0) {
            return Err(format!("theta must be finite and > 0, got {}", self.theta));
        }
        Ok(())
    }

    /// Elements of each weight, in [`BlockWeights`] field order.
    pub fn weight_lens(&self) -> [(&'static str, usize); 9] {
        let (d, f) = (self.hidden, self.ffn);
        [
            ("g_attn", d),
            ("wq", d * d),
            ("wk", d * d),
            ("wv", d * d),
            ("wo", d * d),
            ("g_mlp", d),
            ("w_gate", f * d),
            ("w_up", f * d),
            ("w_down", d * f),
        ]
    }
}

/// One layer's weights as exact values (an f16 device copy converts exactly).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockWeights {
    /// RMSNorm gain before attention, `[hidden]`.
    pub g_attn: Vec<f64>,
    /// Projections, each `[hidden][hidden]` (`[out][in]`).
    pub wq: Vec<f64>,
    pub wk: Vec<f64>,
    pub wv: Vec<f64>,
    pub wo: Vec<f64>,
    /// RMSNorm gain before the MLP, `[hidden]`.
    pub g_mlp: Vec<f64>,
    /// `[ffn][hidden]` each.
    pub w_gate: Vec<f64>,
    pub w_up: Vec<f64>,
    /// `[hidden][ffn]`.
    pub w_down: Vec<f64>,
}

impl BlockWeights {
    fn fields(&self) -> [&Vec<f64>; 9] {
        [
            &self.g_attn,
            &self.wq,
            &self.wk,
            &self.wv,
            &self.wo,
            &self.g_mlp,
            &self.w_gate,
            &self.w_up,
            &self.w_down,
        ]
    }
}

/// One output of the layer: the exact f64 value of each element and the
/// standard deviation of a device's error there (see [`forward`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub value: Vec<f64>,
    /// Standard deviation of `device - value`, per element.
    pub sd: Vec<f64>,
    /// The output elements `value` describes, when only some are checked
    /// (sampled tokens of a long prefill); `None`: all of them, in order.
    pub index: Option<Vec<usize>>,
}

/// What one call of the layer produces.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockOut {
    /// The layer's output, `[tokens][hidden]`.
    pub y: Expected,
    /// The rows appended to the caches at `pos0 ..`, `[tokens][heads][head_dim]`
    /// (K after RoPE, as the cache holds it).
    pub k_new: Expected,
    pub v_new: Expected,
}

/// How a device computes the layer, for the error model: activations stored
/// between steps in a format of unit roundoff `u_store`, arithmetic
/// (accumulation, norms, softmax, sin/cos arguments) in one of unit roundoff
/// `u_arith`. Weights, `x` and the cache are exact: they are the inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Numerics {
    pub u_store: f64,
    pub u_arith: f64,
}

/// fp16 activations and weights, f32 accumulation: what the gate's kernels do.
pub const DEVICE: Numerics = Numerics {
    u_store: 1.0 / 2048.0,              // 2^-11, binary16
    u_arith: 1.0 / (1u64 << 24) as f64, // 2^-24, binary32
};

impl Expected {
    /// How many standard deviations an element may be off. Each output
    /// element sums thousands of independent roundings, so its error is
    /// close to normal: `P(|N(0,1)| > 8) = 1.2e-15`, so a run checking the
    /// 7B layer's ~10^6 outputs fails by chance about once in 10^9 runs.
    /// The first-order model also leaves out products of two errors
    /// (relative size `u_store`, 0.05%), far inside that margin.
    pub const SIGMAS: f64 = 8.0;

    /// Every element of `got` finite and within `SIGMAS` standard
    /// deviations of the value; else the first element that is not, in words.
    pub fn check(&self, got: &[f64]) -> Result<(), String> {
        if got.len() != self.value.len() {
            return Err(format!(
                "{} values, expected {}",
                got.len(),
                self.value.len()
            ));
        }
        for (i, ((g, v), sd)) in got.iter().zip(&self.value).zip(&self.sd).enumerate() {
            if !g.is_finite() || (g - v).abs() > Self::SIGMAS * sd {
                return Err(format!(
                    "element {i}: {g} differs from {v} by {:e}, allowed {:e} ({} sd)",
                    (g - v).abs(),
                    Self::SIGMAS * sd,
                    Self::SIGMAS
                ));
            }
        }
        Ok(())
    }
}

impl Expected {
    /// [`Expected::check`] as a [`crate::check::CheckOutcome`] (what the
    /// smoke gates record): the relative norm error and the largest error
    /// beside the verdict; `mismatches` counts the elements outside the bound.
    pub fn outcome(&self, got: &crate::HostBuf) -> crate::check::CheckOutcome {
        use crate::check::CheckOutcome;
        let buf = got;
        let all = got.to_f64();
        let got = match &self.index {
            None => all,
            Some(ix) => match ix
                .iter()
                .map(|&i| all.get(i).copied())
                .collect::<Option<Vec<f64>>>()
            {
                Some(v) => v,
                None => {
                    return CheckOutcome::failed(format!(
                        "{} values, fewer than the sampled elements need",
                        all.len()
                    ))
                }
            },
        };
        let at = |i: usize| self.index.as_ref().map_or(i, |ix| ix[i]);
        if got.len() != self.value.len() {
            return CheckOutcome::failed(format!(
                "{} values, expected {}",
                got.len(),
                self.value.len()
            ));
        }
        let (mut num, mut den, mut max_abs, mut max_at) = (0.0, 0.0, 0.0f64, None);
        let (mut non_finite, mut mismatches, mut first_bad) = (0, 0, None);
        for (i, ((g, v), sd)) in got.iter().zip(&self.value).zip(&self.sd).enumerate() {
            den += v * v;
            if !g.is_finite() {
                non_finite += 1;
                first_bad.get_or_insert(i);
                continue;
            }
            let e = (g - v).abs();
            num += e * e;
            if e > max_abs {
                max_abs = e;
                max_at = Some(i);
            }
            if e > Self::SIGMAS * sd {
                mismatches += 1;
                first_bad.get_or_insert(i);
            }
        }
        let sampled = match &self.index {
            Some(ix) => format!(
                " (of {} sampled elements; element numbers are of the sample)",
                ix.len()
            ),
            None => String::new(),
        };
        let (first_bad, max_at) = (first_bad.map(at), max_at.map(at));
        // Name an element the device never wrote as such (the poison the
        // caller filled the output with), as `check_buf` does.
        let poison = first_bad.filter(|&i| match buf {
            crate::HostBuf::F16(v) => v
                .get(i)
                .is_some_and(|h| h.to_bits() == crate::host::POISON_F16),
            crate::HostBuf::F32(v) => v
                .get(i)
                .is_some_and(|f| f.to_bits() == crate::check::POISON_BITS),
            crate::HostBuf::U32(_) => false,
        });
        let reason = self.check(&got).err().map(|e| {
            let unwritten = poison
                .map(|i| format!("element {i} never written (still the poison value); "))
                .unwrap_or_default();
            format!(
                "{unwritten}{e}; {mismatches} element(s) outside the fp16 error model, {non_finite} not finite{sampled}"
            )
        });
        CheckOutcome {
            pass: reason.is_none(),
            rel_err: if den > 0.0 {
                (num / den).sqrt()
            } else {
                f64::NAN
            },
            max_abs_err: max_abs,
            non_finite,
            mismatches,
            first_bad,
            reason,
            max_abs_at: max_at,
        }
    }
}

/// The layer on `tokens = x.len() / hidden` new tokens at positions
/// `pos0 ..`, with `pos0 = k_cache.len() / hidden` cached positions before
/// them: the exact values, each with the standard deviation of the error of
/// a device computing as `n` describes. Errors name the first buffer whose
/// size does not fit the shape.
pub fn forward(
    s: &BlockShape,
    w: &BlockWeights,
    x: &[f64],
    k_cache: &[f64],
    v_cache: &[f64],
    n: Numerics,
) -> Result<BlockOut, String> {
    let mode = Mode {
        n,
        emulate: false,
        fault: Fault::None,
    };
    run(s, w, x, k_cache, v_cache, mode)
}

/// The CPU model of the device: [`forward`]'s arithmetic with the roundings
/// carried out, and optionally a fault. Returns the values only.
#[cfg(test)]
pub(crate) fn emulate(
    s: &BlockShape,
    w: &BlockWeights,
    x: &[f64],
    k_cache: &[f64],
    v_cache: &[f64],
    fault: Fault,
) -> Result<[Vec<f64>; 3], String> {
    let mode = Mode {
        n: DEVICE,
        emulate: true,
        fault,
    };
    let o = run(s, w, x, k_cache, v_cache, mode)?;
    Ok([o.y.value, o.k_new.value, o.v_new.value])
}

fn run(
    s: &BlockShape,
    w: &BlockWeights,
    x: &[f64],
    k_cache: &[f64],
    v_cache: &[f64],
    m: Mode,
) -> Result<BlockOut, String> {
    s.check()?;
    for ((name, len), got) in s.weight_lens().iter().zip(w.fields()) {
        if got.len() != *len {
            return Err(format!(
                "weight {name}: expected {len} values, got {}",
                got.len()
            ));
        }
    }
    let d = s.hidden;
    if x.is_empty() || !x.len().is_multiple_of(d) {
        return Err(format!(
            "x: {} values is not a whole number (> 0) of {d}-wide tokens",
            x.len()
        ));
    }
    if !k_cache.len().is_multiple_of(d) || k_cache.len() != v_cache.len() {
        return Err(format!(
            "caches: K has {} and V {} values; both must be the same whole number of {d}-wide positions",
            k_cache.len(),
            v_cache.len()
        ));
    }
    let tokens = x.len() / d;
    let pos0 = k_cache.len() / d;
    let exact = |v: &[f64]| v.iter().map(|&v| Num { v, e: 0.0 }).collect::<Vec<_>>();
    let x = exact(x);
    let wq_t;
    let wq = if m.fault == Fault::TransposedWq {
        wq_t = (0..d * d)
            .map(|i| w.wq[(i % d) * d + i / d])
            .collect::<Vec<_>>();
        &wq_t
    } else {
        &w.wq
    };

    // Each token on its own (and within a token the rows and heads), on
    // every core: every value is computed as serially, so the reference is
    // the same to the bit however many threads run it.
    use rayon::prelude::*;
    let mut k_all = exact(k_cache);
    let mut v_all = exact(v_cache);
    let qkv: Vec<[Vec<Num>; 3]> = (0..tokens)
        .into_par_iter()
        .map(|t| {
            let a = store_all(&m, rmsnorm(&m, &x[t * d..(t + 1) * d], &w.g_attn, s.eps));
            // The fused QKV projection stores its f16 result; RoPE reads it
            // back and stores again (rope_kv_f16).
            let mut qt = store_all(&m, matvec(&m, wq, &a, d, d));
            let mut kt = store_all(&m, matvec(&m, &w.wk, &a, d, d));
            let vt = store_all(&m, matvec(&m, &w.wv, &a, d, d));
            rope(&m, s, &mut qt, pos0 + t);
            rope(&m, s, &mut kt, pos0 + t);
            [store_all(&m, qt), store_all(&m, kt), vt]
        })
        .collect();
    let mut q = Vec::with_capacity(tokens * d);
    for [qt, kt, vt] in qkv {
        q.extend(qt);
        k_all.extend(kt);
        v_all.extend(vt);
    }

    let rows: Vec<Vec<Num>> = (0..tokens)
        .into_par_iter()
        .map(|t| {
            let p = pos0 + t;
            let stale;
            let (k_seen, v_seen): (&[Num], &[Num]) = if m.fault == Fault::StaleKv && p > 0 {
                // The row this token wrote is read back as the one before it.
                let mut k = k_all[..(p + 1) * d].to_vec();
                let mut v = v_all[..(p + 1) * d].to_vec();
                k.copy_within((p - 1) * d..p * d, p * d);
                v.copy_within((p - 1) * d..p * d, p * d);
                stale = (k, v);
                (&stale.0, &stale.1)
            } else {
                (&k_all, &v_all)
            };
            let visible = if m.fault == Fault::MaskOffByOne && p > 0 {
                p
            } else {
                p + 1
            };
            let attn = store_all(
                &m,
                attention(&m, s, &q[t * d..(t + 1) * d], k_seen, v_seen, visible),
            );
            // Each projection stores f16 (gemv_f16); the residual add reads it
            // back (add_rmsnorm_f16 fuses the add with the next norm).
            let o = store_all(&m, matvec(&m, &w.wo, &attn, d, d));
            let h = store_all(&m, add(&m, &x[t * d..(t + 1) * d], &o));
            let mm = store_all(&m, rmsnorm(&m, &h, &w.g_mlp, s.eps));
            let gate = store_all(&m, matvec(&m, &w.w_gate, &mm, s.ffn, d));
            let up = store_all(&m, matvec(&m, &w.w_up, &mm, s.ffn, d));
            let act = store_all(
                &m,
                gate.iter()
                    .zip(&up)
                    .map(|(g, u)| swiglu(&m, *g, *u))
                    .collect(),
            );
            let down = store_all(&m, matvec(&m, &w.w_down, &act, d, s.ffn));
            store_all(&m, add(&m, &h, &down))
        })
        .collect();
    let y = rows.concat();
    let split = |v: Vec<Num>| Expected {
        value: v.iter().map(|n| n.v).collect(),
        sd: v.iter().map(|n| n.e).collect(),
        index: None,
    };
    Ok(BlockOut {
        y: split(y),
        k_new: split(k_all.split_off(pos0 * d)),
        v_new: split(v_all.split_off(pos0 * d)),
    })
}

#[cfg(test)]
mod composite_tests;
#[cfg(test)]
mod tests;
