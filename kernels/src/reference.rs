//! Independent CPU references, computed in f64 from the exact input values.

use crate::host::{DType, HostBuf};
use crate::op::{Access, Op, OpError};

/// The seed of [`Op::TestSlow`]'s xorshift32 chain.
pub const SLOW_SEED: u32 = 0x1234_5678;

/// `iters` steps of xorshift32 (13, 17, 5) from [`SLOW_SEED`]: what the
/// test-only slow kernel writes.
pub fn slow_hash(iters: u32) -> u32 {
    let mut x = SLOW_SEED;
    for _ in 0..iters {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    x
}

/// Expected outputs of `op`, one `Vec<f64>` per entry of [`Op::outputs`].
///
/// `prior_outputs` is what the caller uploads into the output buffers; only
/// [`Access::ReadWrite`] outputs (the KV caches) use it, and may be empty
/// otherwise. For [`Op::TestBrokenCopy`] this is the *correct* copy, so the
/// broken kernel fails the comparison.
pub fn reference(
    op: &Op,
    inputs: &[HostBuf],
    prior_outputs: &[HostBuf],
) -> Result<Vec<Vec<f64>>, OpError> {
    op.validate()?;
    let err = |msg: String| OpError { op: op.name(), msg };
    let specs = op.inputs();
    if inputs.len() != specs.len() {
        return Err(err(format!(
            "expected {} input buffers, got {}",
            specs.len(),
            inputs.len()
        )));
    }
    for (s, b) in specs.iter().zip(inputs) {
        if s.dtype != b.dtype() || s.len != b.len() {
            return Err(err(format!(
                "input {}: expected {} x {}, got {} x {}",
                s.name,
                s.len,
                s.dtype,
                b.len(),
                b.dtype()
            )));
        }
    }
    let outs = op.outputs();
    for (i, s) in outs.iter().enumerate() {
        if s.access == Access::ReadWrite {
            match prior_outputs.get(i) {
                Some(b) if b.len() == s.len && b.dtype() == s.dtype => {}
                _ => {
                    return Err(err(format!(
                        "output {} is read-write: its prior content ({} x {}) is needed",
                        s.name, s.len, s.dtype
                    )))
                }
            }
        }
    }
    let x: Vec<Vec<f64>> = inputs.iter().map(HostBuf::to_f64).collect();
    let out = match *op {
        Op::Noop => vec![],
        Op::Fill { n, value } => vec![vec![value as f64; n]],
        Op::Copy { .. } | Op::TestBrokenCopy { .. } => vec![x[0].clone()],
        Op::VecAdd { .. } => vec![x[0].iter().zip(&x[1]).map(|(a, b)| a + b).collect()],
        Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k } => vec![gemm(&x[0], &x[1], m, n, k)],
        Op::RmsNorm { rows, cols, eps } => {
            let mut y = vec![0.0; rows * cols];
            for r in 0..rows {
                let row = &x[0][r * cols..(r + 1) * cols];
                let ms = row.iter().map(|v| v * v).sum::<f64>() / cols as f64;
                let inv = 1.0 / (ms + eps as f64).sqrt();
                for c in 0..cols {
                    y[r * cols + c] = row[c] * inv * x[1][c];
                }
            }
            vec![y]
        }
        Op::LayerNorm { rows, cols, eps } => {
            let mut y = vec![0.0; rows * cols];
            for r in 0..rows {
                let row = &x[0][r * cols..(r + 1) * cols];
                let mean = row.iter().sum::<f64>() / cols as f64;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
                let inv = 1.0 / (var + eps as f64).sqrt();
                for c in 0..cols {
                    y[r * cols + c] = (row[c] - mean) * inv * x[1][c] + x[2][c];
                }
            }
            vec![y]
        }
        Op::Softmax { rows, cols } => {
            let mut y = vec![0.0; rows * cols];
            for r in 0..rows {
                let row = &x[0][r * cols..(r + 1) * cols];
                let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
                for c in 0..cols {
                    y[r * cols + c] = (row[c] - max).exp() / sum;
                }
            }
            vec![y]
        }
        Op::Rope {
            tokens,
            heads,
            head_dim,
            pos0,
            theta,
        } => {
            let half = head_dim / 2;
            let mut y = vec![0.0; tokens * heads * head_dim];
            for t in 0..tokens {
                let p = (pos0 as u64 + t as u64) as f64;
                for h in 0..heads {
                    let base = (t * heads + h) * head_dim;
                    for i in 0..half {
                        let f = (theta as f64).powf(-2.0 * i as f64 / head_dim as f64);
                        let (s, c) = (p * f).sin_cos();
                        let (a, b) = (x[0][base + i], x[0][base + i + half]);
                        y[base + i] = a * c - b * s;
                        y[base + i + half] = a * s + b * c;
                    }
                }
            }
            vec![y]
        }
        Op::KvUpdate {
            layers,
            max_seq,
            heads,
            head_dim,
            pos,
            n_new,
        } => {
            let row = heads * head_dim;
            let mut k = prior_outputs[0].to_f64();
            let mut v = prior_outputs[1].to_f64();
            for l in 0..layers {
                for j in 0..n_new {
                    let src = (l * n_new + j) * row;
                    let dst = (l * max_seq + pos + j) * row;
                    k[dst..dst + row].copy_from_slice(&x[0][src..src + row]);
                    v[dst..dst + row].copy_from_slice(&x[1][src..src + row]);
                }
            }
            vec![k, v]
        }
        Op::TestSlow { iters } => vec![vec![slow_hash(iters) as f64]],
    };
    debug_assert_eq!(out.len(), outs.len());
    debug_assert!(outs
        .iter()
        .zip(&out)
        .all(|(s, o)| s.len == o.len() && (s.dtype != DType::F16)));
    Ok(out)
}

fn gemm(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        let crow = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let av = a[i * k + p];
            let brow = &b[p * n..(p + 1) * n];
            for (cv, bv) in crow.iter_mut().zip(brow) {
                *cv += av * bv;
            }
        }
    }
    c
}
