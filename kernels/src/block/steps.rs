//! The layer's steps as a device computes them: each value with the
//! standard deviation of its error so far ([`Num`]), or (tests) with the
//! device's roundings carried out for real ([`Mode::emulate`]).

use super::{BlockShape, Numerics};

/// A value and the standard deviation of a device's error in it so far.
///
/// The model (probabilistic rounding error analysis, as in Higham and Mary,
/// "A new approach to probabilistic rounding error analysis", SIAM J. Sci.
/// Comput. 41(5), 2019): each rounding to nearest adds an independent error
/// uniform on `[-u|v|, u|v|]` (variance `(u v)^2 / 3`), and errors flow
/// through each step to first order (its derivative), adding in quadrature.
/// A worst-case bound would add them in absolute value instead: through the
/// layer's five chained matrix products that overstates a 4096-wide layer's
/// error by about `sqrt(4096)` per product, so far that a wrong mask or a
/// stale cache row would pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Num {
    pub(super) v: f64,
    pub(super) e: f64,
}

/// What the layer computes with: the exact values with their bounds, or
/// (tests only) the device's roundings carried out for real.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mode {
    pub(super) n: Numerics,
    /// Round for real (f16 stores, f32 sums): the CPU model of the device.
    pub(super) emulate: bool,
    pub(super) fault: Fault,
}

/// A deliberate mistake of the kind a kernel makes; tests inject each into
/// the emulated device and show the check catches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    /// Rotates by minus the angle.
    RopeSign,
    /// The newest position is masked out (an off-by-one causal mask).
    MaskOffByOne,
    /// Wq applied as `[in][out]`.
    TransposedWq,
    /// A token attends to a stale K/V row (the previous position's) instead
    /// of the row it has just written.
    StaleKv,
}

impl Mode {
    pub(super) fn store(&self, x: Num) -> Num {
        let v = if self.emulate {
            half::f16::from_f64(x.v).to_f64()
        } else {
            x.v
        };
        Num {
            v,
            e: (x.e * x.e + rounding(self.n.u_store, x.v)).sqrt(),
        }
    }

    pub(super) fn arith(&self, v: f64) -> f64 {
        if self.emulate {
            v as f32 as f64
        } else {
            v
        }
    }
}

pub(super) fn store_all(m: &Mode, v: Vec<Num>) -> Vec<Num> {
    v.into_iter().map(|x| m.store(x)).collect()
}

/// Variance of rounding `v` with unit roundoff `u`: the error is uniform
/// on `[-u|v|, u|v|]` (round to nearest), so `(u v)^2 / 3`.
pub(super) fn rounding(u: f64, v: f64) -> f64 {
    (u * v) * (u * v) / 3.0
}

pub(super) fn add(m: &Mode, a: &[Num], b: &[Num]) -> Vec<Num> {
    a.iter()
        .zip(b)
        .map(|(a, b)| {
            let v = m.arith(a.v + b.v);
            Num {
                v,
                e: (a.e * a.e + b.e * b.e + rounding(m.n.u_arith, v)).sqrt(),
            }
        })
        .collect()
}

/// A sum of `terms` (each a product rounded once), in f32 when emulating:
/// the value and the standard deviation of the accumulation's own error
/// (each product and each partial sum rounded once, recursive summation).
pub(super) fn sum(m: &Mode, terms: impl Iterator<Item = f64>) -> (f64, f64) {
    let u = m.n.u_arith;
    let (mut acc, mut exact, mut var) = (0.0, 0.0, 0.0);
    for t in terms {
        acc = m.arith(acc + m.arith(t));
        exact += t;
        var += rounding(u, t) + rounding(u, exact);
    }
    (acc, var.sqrt())
}

pub(super) fn rmsnorm(m: &Mode, x: &[Num], g: &[f64], eps: f64) -> Vec<Num> {
    let (n, u) = (x.len() as f64, m.n.u_arith);
    let (ss, ss_sd) = sum(m, x.iter().map(|x| x.v * x.v));
    let r = m.arith(1.0 / m.arith(ss / n + eps).sqrt());
    // d r = -r^3 / n * (sum x dx + d ss / 2): one error shared by the row.
    let k = r * r * r / n;
    let var_r =
        k * k * (x.iter().map(|x| x.v * x.v * x.e * x.e).sum::<f64>() + ss_sd * ss_sd / 4.0)
            + 3.0 * rounding(u, r);
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            let v = m.arith(m.arith(x.v * r) * g);
            let var = g * g * (x.e * x.e * r * r + x.v * x.v * var_r) + 2.0 * rounding(u, v);
            Num { v, e: var.sqrt() }
        })
        .collect()
}

/// `W a` for `W` `[rows][cols]` (exact weights); the rows on every core,
/// each as serially.
pub(super) fn matvec(m: &Mode, w: &[f64], a: &[Num], rows: usize, cols: usize) -> Vec<Num> {
    use rayon::prelude::*;
    (0..rows)
        .into_par_iter()
        .with_min_len((crate::PAR_MIN / cols.max(1)).max(1))
        .map(|r| {
            let row = &w[r * cols..(r + 1) * cols];
            let (v, acc_sd) = sum(m, row.iter().zip(a).map(|(w, a)| w * a.v));
            let prop: f64 = row.iter().zip(a).map(|(w, a)| w * w * a.e * a.e).sum();
            Num {
                v,
                e: (prop + acc_sd * acc_sd).sqrt(),
            }
        })
        .collect()
}

/// Rotate-half RoPE of every head of one token's `[heads][head_dim]` row at
/// position `p`, as [`crate::Op::Rope`] defines it. The device computes the
/// angle `p * f` in arithmetic precision (f and the product each rounded
/// once), so the angle's error grows with the position.
pub(super) fn rope(m: &Mode, s: &BlockShape, x: &mut [Num], p: usize) {
    let (half, u) = (s.head_dim / 2, m.n.u_arith);
    let sign = if m.fault == Fault::RopeSign {
        -1.0
    } else {
        1.0
    };
    for head in x.chunks_exact_mut(s.head_dim) {
        for i in 0..half {
            let f = m.arith(s.theta.powf(-2.0 * i as f64 / s.head_dim as f64));
            let angle = m.arith(p as f64 * f) * sign;
            let (sin, cos) = angle.sin_cos();
            let (sin, cos) = (m.arith(sin), m.arith(cos));
            let var_angle = 2.0 * rounding(u, angle) + rounding(u, 1.0);
            let (a, b) = (head[i], head[i + half]);
            let ya = m.arith(a.v * cos - b.v * sin);
            let yb = m.arith(a.v * sin + b.v * cos);
            // d ya / d angle = -yb and d yb / d angle = ya.
            let var_a = a.e * a.e * cos * cos + b.e * b.e * sin * sin + var_angle * yb * yb;
            let var_b = a.e * a.e * sin * sin + b.e * b.e * cos * cos + var_angle * ya * ya;
            head[i] = Num {
                v: ya,
                e: (var_a + 2.0 * rounding(u, ya)).sqrt(),
            };
            head[i + half] = Num {
                v: yb,
                e: (var_b + 2.0 * rounding(u, yb)).sqrt(),
            };
        }
    }
}

/// Softmax attention of one token's query (all heads) over the first
/// `visible` positions of K and V (scale `1/sqrt(head_dim)`); the heads on
/// every core, each as serially.
pub(super) fn attention(
    m: &Mode,
    s: &BlockShape,
    q: &[Num],
    k: &[Num],
    v: &[Num],
    visible: usize,
) -> Vec<Num> {
    use rayon::prelude::*;
    let (hd, d) = (s.head_dim, s.hidden);
    let scale = 1.0 / (hd as f64).sqrt();
    let u = m.n.u_arith;
    let heads: Vec<Vec<Num>> = (0..s.heads)
        .into_par_iter()
        .map(|h| {
            let mut out = Vec::with_capacity(hd);
            let qh = &q[h * hd..(h + 1) * hd];
            let scores: Vec<Num> = (0..visible)
                .map(|j| {
                    let kj = &k[j * d + h * hd..j * d + (h + 1) * hd];
                    let (dot, acc) = sum(m, qh.iter().zip(kj).map(|(a, b)| a.v * b.v));
                    let prop: f64 = qh
                        .iter()
                        .zip(kj)
                        .map(|(a, b)| a.v * a.v * b.e * b.e + b.v * b.v * a.e * a.e)
                        .sum();
                    let v = m.arith(dot * scale);
                    Num {
                        v,
                        e: ((prop + acc * acc) * scale * scale + rounding(u, v)).sqrt(),
                    }
                })
                .collect();
            let max = scores.iter().map(|s| s.v).fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores
                .iter()
                .map(|x| m.arith(m.arith(x.v - max).exp()))
                .collect();
            let (total, total_sd) = sum(m, e.iter().copied());
            let p: Vec<f64> = e.iter().map(|e| m.arith(e / total)).collect();
            // d p_j = p_j (d s_j - sum_k p_k d s_k), plus the subtraction, exp,
            // the sum and the division in arithmetic precision.
            let mean_var: f64 = p.iter().zip(&scores).map(|(p, s)| p * p * s.e * s.e).sum();
            let var_p: Vec<f64> = p
                .iter()
                .zip(&scores)
                .map(|(p, s)| {
                    let own = rounding(u, s.v - max) + 2.0 * rounding(u, 1.0);
                    p * p * (s.e * s.e + mean_var + own + (total_sd / total).powi(2))
                })
                .collect();
            for c in 0..hd {
                let terms = (0..visible).map(|j| p[j] * v[j * d + h * hd + c].v);
                let (val, acc) = sum(m, terms);
                let prop: f64 = (0..visible)
                    .map(|j| {
                        let vj = v[j * d + h * hd + c];
                        var_p[j] * vj.v * vj.v + p[j] * p[j] * vj.e * vj.e
                    })
                    .sum();
                out.push(Num {
                    v: val,
                    e: (prop + acc * acc).sqrt(),
                });
            }
            out
        })
        .collect();
    heads.concat()
}

/// `silu(g) * up`, with silu's slope `sig (1 + g (1 - sig))` at `g`.
pub(super) fn swiglu(m: &Mode, g: Num, up: Num) -> Num {
    let u = m.n.u_arith;
    let sig = m.arith(1.0 / m.arith(1.0 + (-g.v).exp()));
    let silu = m.arith(g.v * sig);
    let v = m.arith(silu * up.v);
    let slope = sig * (1.0 + g.v * (1.0 - sig));
    let var_silu = slope * slope * g.e * g.e + 3.0 * rounding(u, silu);
    let var = up.v * up.v * var_silu + silu * silu * up.e * up.e + rounding(u, v);
    Num { v, e: var.sqrt() }
}
