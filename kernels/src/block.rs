//! The f64 reference of one Llama decoder layer (issue 23's transformer-block
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

/// What one call of the layer produces.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockOut {
    /// The layer's output, `[tokens][hidden]`.
    pub y: Vec<f64>,
    /// The rows appended to the caches at `pos0 ..`, `[tokens][heads][head_dim]`
    /// (K after RoPE, as the cache holds it).
    pub k_new: Vec<f64>,
    pub v_new: Vec<f64>,
}

/// The layer on `tokens = x.len() / hidden` new tokens at positions
/// `pos0 ..`, with `pos0 = k_cache.len() / hidden` cached positions before
/// them. Errors name the first buffer whose size does not fit the shape.
pub fn forward(
    s: &BlockShape,
    w: &BlockWeights,
    x: &[f64],
    k_cache: &[f64],
    v_cache: &[f64],
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

    let mut k_all = k_cache.to_vec();
    let mut v_all = v_cache.to_vec();
    let mut q = Vec::with_capacity(tokens * d);
    for t in 0..tokens {
        let a = rmsnorm(&x[t * d..(t + 1) * d], &w.g_attn, s.eps);
        let mut qt = matvec(&w.wq, &a, d, d);
        let mut kt = matvec(&w.wk, &a, d, d);
        let vt = matvec(&w.wv, &a, d, d);
        rope(s, &mut qt, pos0 + t);
        rope(s, &mut kt, pos0 + t);
        q.extend(qt);
        k_all.extend(kt);
        v_all.extend(vt);
    }

    let mut y = Vec::with_capacity(tokens * d);
    for t in 0..tokens {
        let attn = attention(s, &q[t * d..(t + 1) * d], &k_all, &v_all, pos0 + t + 1);
        let o = matvec(&w.wo, &attn, d, d);
        let h: Vec<f64> = x[t * d..(t + 1) * d]
            .iter()
            .zip(&o)
            .map(|(a, b)| a + b)
            .collect();
        let m = rmsnorm(&h, &w.g_mlp, s.eps);
        let gate = matvec(&w.w_gate, &m, s.ffn, d);
        let up = matvec(&w.w_up, &m, s.ffn, d);
        let act: Vec<f64> = gate.iter().zip(&up).map(|(g, u)| silu(*g) * u).collect();
        let down = matvec(&w.w_down, &act, d, s.ffn);
        y.extend(h.iter().zip(&down).map(|(a, b)| a + b));
    }
    Ok(BlockOut {
        y,
        k_new: k_all.split_off(pos0 * d),
        v_new: v_all.split_off(pos0 * d),
    })
}

fn rmsnorm(x: &[f64], g: &[f64], eps: f64) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let r = 1.0 / (ms + eps).sqrt();
    x.iter().zip(g).map(|(v, g)| v * r * g).collect()
}

/// `W a` for `W` `[rows][cols]`.
fn matvec(w: &[f64], a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows)
        .map(|r| {
            w[r * cols..(r + 1) * cols]
                .iter()
                .zip(a)
                .map(|(w, a)| w * a)
                .sum()
        })
        .collect()
}

/// Rotate-half RoPE of every head of one token's `[heads][head_dim]` row at
/// position `p`, as [`crate::Op::Rope`] defines it.
fn rope(s: &BlockShape, x: &mut [f64], p: usize) {
    let half = s.head_dim / 2;
    for head in x.chunks_exact_mut(s.head_dim) {
        for i in 0..half {
            let f = s.theta.powf(-2.0 * i as f64 / s.head_dim as f64);
            let (sin, cos) = (p as f64 * f).sin_cos();
            let (a, b) = (head[i], head[i + half]);
            head[i] = a * cos - b * sin;
            head[i + half] = a * sin + b * cos;
        }
    }
}

/// Softmax attention of one token's query (all heads) over the first
/// `visible` positions of K and V.
fn attention(s: &BlockShape, q: &[f64], k: &[f64], v: &[f64], visible: usize) -> Vec<f64> {
    let (hd, d) = (s.head_dim, s.hidden);
    let scale = 1.0 / (hd as f64).sqrt();
    let mut out = vec![0.0; d];
    for h in 0..s.heads {
        let qh = &q[h * hd..(h + 1) * hd];
        let scores: Vec<f64> = (0..visible)
            .map(|j| {
                let kj = &k[j * d + h * hd..j * d + (h + 1) * hd];
                qh.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        let oh = &mut out[h * hd..(h + 1) * hd];
        for (j, ej) in e.iter().enumerate() {
            let vj = &v[j * d + h * hd..j * d + (h + 1) * hd];
            for (o, vv) in oh.iter_mut().zip(vj) {
                *o += ej / sum * vv;
            }
        }
    }
    out
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const SMALL: BlockShape = BlockShape {
        hidden: 16,
        heads: 2,
        head_dim: 8,
        ffn: 24,
        eps: 1e-5,
        theta: 10000.0,
    };

    fn seed() -> u64 {
        let s = rand::random();
        eprintln!("seed {s}");
        s
    }

    fn random(rng: &mut rand::rngs::StdRng, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| rng.gen_range(-1.0..1.0) * scale).collect()
    }

    fn weights(s: &BlockShape, rng: &mut rand::rngs::StdRng) -> BlockWeights {
        // Scaled like an initialised layer so activations stay O(1).
        let (ws, fs) = (1.0 / (s.hidden as f64).sqrt(), 1.0 / (s.ffn as f64).sqrt());
        let gain =
            |rng: &mut rand::rngs::StdRng| (0..s.hidden).map(|_| rng.gen_range(0.5..1.5)).collect();
        BlockWeights {
            g_attn: gain(rng),
            wq: random(rng, s.hidden * s.hidden, ws),
            wk: random(rng, s.hidden * s.hidden, ws),
            wv: random(rng, s.hidden * s.hidden, ws),
            wo: random(rng, s.hidden * s.hidden, ws),
            g_mlp: gain(rng),
            w_gate: random(rng, s.ffn * s.hidden, ws),
            w_up: random(rng, s.ffn * s.hidden, ws),
            w_down: random(rng, s.hidden * s.ffn, fs),
        }
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "[{i}] {x} vs {y}");
        }
    }

    /// Prefill of S tokens then decode of one more equals prefill of S+1:
    /// the KV cache a prefill appends is exactly what decode reads back
    /// (the layout mismatch between the two paths that the seeds once had
    /// would break this).
    #[test]
    fn decode_after_prefill_equals_longer_prefill() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed());
        let s = SMALL;
        let w = weights(&s, &mut rng);
        let x = random(&mut rng, 6 * s.hidden, 1.0);
        let full = forward(&s, &w, &x, &[], &[]).unwrap();
        let pre = forward(&s, &w, &x[..5 * s.hidden], &[], &[]).unwrap();
        let dec = forward(&s, &w, &x[5 * s.hidden..], &pre.k_new, &pre.v_new).unwrap();
        close(&full.y[5 * s.hidden..], &dec.y);
        close(&full.k_new[5 * s.hidden..], &dec.k_new);
        close(&full.v_new[..5 * s.hidden], &pre.v_new);
    }

    /// Causal: a token's output never depends on later tokens.
    #[test]
    fn later_tokens_do_not_change_earlier_outputs() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed());
        let s = SMALL;
        let w = weights(&s, &mut rng);
        let mut x = random(&mut rng, 4 * s.hidden, 1.0);
        let a = forward(&s, &w, &x, &[], &[]).unwrap();
        x[3 * s.hidden + 1] += 0.5;
        let b = forward(&s, &w, &x, &[], &[]).unwrap();
        assert_eq!(a.y[..3 * s.hidden], b.y[..3 * s.hidden]);
        assert_ne!(a.y[3 * s.hidden..], b.y[3 * s.hidden..]);
    }

    /// RoPE makes a score depend on relative position only: a query and a
    /// key rotated to positions (37, 37) score as at (0, 0), and at
    /// (38, 37) as at (1, 0). Any consistent rotation passes this; that it
    /// is the catalogue's rotation is the next test.
    #[test]
    fn rope_scores_depend_on_relative_position() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed());
        let s = SMALL;
        let q0 = random(&mut rng, s.hidden, 1.0);
        let k0 = random(&mut rng, s.hidden, 1.0);
        let score = |pq: usize, pk: usize| {
            let (mut q, mut k) = (q0.clone(), k0.clone());
            rope(&s, &mut q, pq);
            rope(&s, &mut k, pk);
            q.iter().zip(&k).map(|(a, b)| a * b).sum::<f64>()
        };
        assert!((score(37, 37) - score(0, 0)).abs() < 1e-9);
        assert!((score(38, 37) - score(1, 0)).abs() < 1e-9);
        assert!(
            (score(1, 0) - score(0, 0)).abs() > 1e-6,
            "rotation did nothing"
        );
    }

    /// The layer's RoPE is the catalogue's `rope` op (same pairing, same
    /// angles), checked against that op's own reference.
    #[test]
    fn rope_is_the_rope_op() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed());
        let s = SMALL;
        let x: Vec<f32> = (0..s.hidden).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let pos = rng.gen_range(0..5000u32);
        let op = crate::Op::Rope {
            tokens: 1,
            heads: s.heads,
            head_dim: s.head_dim,
            pos0: pos,
            theta: s.theta as f32,
        };
        let want = crate::reference(&op, &[crate::HostBuf::F32(x.clone())], &[]).unwrap();
        let mut got: Vec<f64> = x.iter().map(|v| *v as f64).collect();
        rope(&s, &mut got, pos as usize);
        close(&got, &want[0]);
    }

    /// A hand-computed layer: hidden 2, one head, ffn 1, position 0 (RoPE is
    /// the identity there), so attention over one key returns v itself.
    #[test]
    fn tiny_layer_by_hand() {
        let s = BlockShape {
            hidden: 2,
            heads: 1,
            head_dim: 2,
            ffn: 1,
            // Negligible next to the mean square (12.5); check() wants > 0.
            eps: 1e-30,
            theta: 10000.0,
        };
        let id = vec![1.0, 0.0, 0.0, 1.0];
        let w = BlockWeights {
            g_attn: vec![1.0, 1.0],
            wq: id.clone(),
            wk: id.clone(),
            wv: vec![2.0, 0.0, 0.0, 2.0],
            wo: id.clone(),
            g_mlp: vec![1.0, 1.0],
            w_gate: vec![1.0, 0.0],
            w_up: vec![0.0, 1.0],
            w_down: vec![1.0, 1.0],
        };
        // x = (3, 4): rms = sqrt(12.5); a = x / rms; v = 2a; h = x + 2a.
        let x = [3.0, 4.0];
        let rms = 12.5f64.sqrt();
        let h = [3.0 + 6.0 / rms, 4.0 + 8.0 / rms];
        let rms_h = ((h[0] * h[0] + h[1] * h[1]) / 2.0).sqrt();
        let (m0, m1) = (h[0] / rms_h, h[1] / rms_h);
        let act = m0 / (1.0 + (-m0).exp()) * m1;
        let out = forward(&s, &w, &x, &[], &[]).unwrap();
        close(&out.y, &[h[0] + act, h[1] + act]);
        close(&out.v_new, &[6.0 / rms, 8.0 / rms]);
        close(&out.k_new, &[3.0 / rms, 4.0 / rms]);
    }

    #[test]
    fn bad_sizes_are_errors_naming_the_buffer() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed());
        let s = SMALL;
        let mut w = weights(&s, &mut rng);
        let x = random(&mut rng, s.hidden, 1.0);
        assert!(forward(&s, &w, &x[1..], &[], &[])
            .unwrap_err()
            .contains("x:"));
        assert!(forward(&s, &w, &x, &x, &[]).unwrap_err().contains("caches"));
        w.w_up.pop();
        assert!(forward(&s, &w, &x, &[], &[]).unwrap_err().contains("w_up"));
        let bad = BlockShape { heads: 3, ..s };
        assert!(forward(&bad, &w, &x, &[], &[])
            .unwrap_err()
            .contains("hidden"));
        assert!(BlockShape::LLAMA2_7B.check().is_ok());
    }
}
