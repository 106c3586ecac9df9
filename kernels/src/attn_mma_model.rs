//! A CPU model of attn_prefill_f16.hip's tensor-core path (NVIDIA sm_80+):
//! the same shared tiles, the same `ldmatrix` row addresses, the same
//! fragment bookkeeping (the C fragment of S reused as the A fragment of
//! P, the masks, the online softmax per lane pair of rows), each `mma.sync`
//! executed by [`crate::matrix_model`]'s model of MMA_SYNC, checked against
//! the op's f64 reference. `ldmatrix` is modelled from PTX's definition:
//! lanes 8i..8i+7 give the row addresses of matrix i, and lane l receives
//! row l/4, columns 2(l%4) and 2(l%4)+1 of each (of its transpose with
//! `.trans`). A wrong address or fragment fails the comparison. What it
//! does not model is timing: the kernel's two cp.async stages (tile kt in
//! stage kt % 2) are here one tile read when it is used.

// Lane and element indices are written as the kernel writes them.
#![allow(clippy::needless_range_loop)]

use crate::matrix_lanes::MMA_SYNC;
use crate::matrix_model::{h, instr_model, Prefill};
use crate::{HostBuf, Op};
use half::f16;

/// Keys per tile (GRETA_PRE_MMA_BK) and query rows per block (GRETA_PRE_BQ).
const BK: usize = 32;
const BQ: usize = 64;

type Regs = Vec<[(f32, f32); 4]>;

/// `ldmatrix.x4` (with `.trans`: transposed) from `tile`, lane l giving
/// the start (row, column) of row l % 8 of matrix l / 8.
fn ldsm(tile: &[Vec<f32>], addr: impl Fn(usize) -> (usize, usize), trans: bool) -> Regs {
    let mut out = vec![[(0.0, 0.0); 4]; 32];
    for (i, _) in out.clone()[0].iter().enumerate() {
        let m: Vec<Vec<f32>> = (0..8)
            .map(|r| {
                let (row, col) = addr(8 * i + r);
                tile[row][col..col + 8].to_vec()
            })
            .collect();
        for (l, o) in out.iter_mut().enumerate() {
            let (r, c) = (l / 4, 2 * (l % 4));
            o[i] = if trans {
                (m[c][r], m[c + 1][r])
            } else {
                (m[r][c], m[r][c + 1])
            };
        }
    }
    out
}

/// `mma.sync.m16n8k16`: d += a b, b from registers `bi` and `bi + 1` of `b`.
fn mma(d: &mut [[f32; 4]], a: &Regs, b: &Regs, bi: usize) {
    let av: Vec<Vec<f32>> = a
        .iter()
        .map(|r| r.iter().flat_map(|&(x, y)| [x, y]).collect())
        .collect();
    let bv: Vec<Vec<f32>> = b
        .iter()
        .map(|r| vec![r[bi].0, r[bi].1, r[bi + 1].0, r[bi + 1].1])
        .collect();
    let cv: Vec<Vec<f32>> = d.iter().map(|r| r.to_vec()).collect();
    let out = instr_model(&MMA_SYNC, &av, &bv, &cv).expect("a consistent MMA_SYNC layout");
    for (dl, ol) in d.iter_mut().zip(out) {
        dl.copy_from_slice(&ol);
    }
}

/// Where the kernel's K fragment address could go wrong (the model of a
/// broken kernel, which must fail).
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Kernel,
    KHalvesSwapped,
}

/// The kernel's output for one (head, query block), `o[tokens][d]`.
fn block(p: &mut Prefill, q0: usize, hh: usize, variant: Variant) {
    let (hd, tokens, heads, pos0) = (p.head_dim, p.tokens, p.heads, p.pos0 as usize);
    let [q, k, v] = [&p.qkv[0], &p.qkv[1], &p.qkv[2]];
    let o = &mut p.out;
    let d = heads * hd;
    let (kc, nt) = (hd / 16, hd / 8);
    let row_of = |src: &[f32], r: usize, valid: bool| -> Vec<f32> {
        let mut v = vec![0.0; hd + 8];
        if valid {
            v[..hd].copy_from_slice(&src[r * d + hh * hd..r * d + (hh + 1) * hd]);
        }
        v
    };
    let qs: Vec<Vec<f32>> = (0..BQ)
        .map(|r| row_of(q, q0 + r, q0 + r < tokens))
        .collect();
    let sl2 = std::f32::consts::LOG2_E / (hd as f32).sqrt();
    let last = (q0 + BQ).min(tokens) - 1;
    let nkeys = pos0 + last + 1;
    for warp in 0..4 {
        let qf: Vec<Regs> = (0..kc)
            .map(|kk| ldsm(&qs, |l| (warp * 16 + l % 16, kk * 16 + (l / 16) * 8), false))
            .collect();
        let mut acc = vec![vec![[0f32; 4]; 32]; nt];
        let mut m = vec![[f32::NEG_INFINITY; 2]; 32];
        let mut lsum = vec![[0f32; 2]; 32];
        let warp_last = pos0 + (q0 + warp * 16 + 15).min(tokens - 1);
        for k0 in (0..nkeys).step_by(BK) {
            if k0 > warp_last {
                continue;
            }
            let ks: Vec<Vec<f32>> = (0..BK).map(|r| row_of(k, k0 + r, k0 + r < nkeys)).collect();
            let vs: Vec<Vec<f32>> = (0..BK).map(|r| row_of(v, k0 + r, k0 + r < nkeys)).collect();
            let mut s = vec![vec![[0f32; 4]; 32]; BK / 8];
            for (kk, a) in qf.iter().enumerate() {
                for j in (0..BK / 8).step_by(2) {
                    let r = ldsm(
                        &ks,
                        |l| {
                            let half = match variant {
                                Variant::Kernel => (l / 8) & 1,
                                Variant::KHalvesSwapped => l / 16,
                            };
                            (j * 8 + (l / 16) * 8 + l % 8, kk * 16 + half * 8)
                        },
                        false,
                    );
                    mma(&mut s[j], a, &r, 0);
                    mma(&mut s[j + 1], a, &r, 2);
                }
            }
            // Mask and scale; each lane's max over its entries of the
            // row's two halves, then over the row's 4 lanes (the shuffles
            // with l ^ 1 and l ^ 2).
            let mut mx = m.clone();
            for (l, ml) in mx.iter_mut().enumerate() {
                let row0 = q0 + warp * 16 + l / 4;
                let qpos = [pos0 + row0, pos0 + row0 + 8];
                for (j, sj) in s.iter_mut().enumerate() {
                    for e in 0..4 {
                        let key = k0 + j * 8 + 2 * (l % 4) + (e & 1);
                        let rh = e >> 1;
                        let x = if key <= qpos[rh] && key < nkeys {
                            sj[l][e] * sl2
                        } else {
                            f32::NEG_INFINITY
                        };
                        sj[l][e] = x;
                        ml[rh] = ml[rh].max(x);
                    }
                }
            }
            let mx: Vec<[f32; 2]> = (0..32)
                .map(|l| {
                    let g = &mx[l & !3..(l & !3) + 4];
                    [0, 1].map(|rh| g.iter().fold(f32::NEG_INFINITY, |a, x| a.max(x[rh])))
                })
                .collect();
            for l in 0..32 {
                let mut alpha = [0f32; 2];
                for rh in 0..2 {
                    alpha[rh] = if m[l][rh] == f32::NEG_INFINITY {
                        0.0
                    } else {
                        (m[l][rh] - mx[l][rh]).exp2()
                    };
                    m[l][rh] = mx[l][rh];
                    lsum[l][rh] *= alpha[rh];
                }
                for sj in s.iter_mut() {
                    for e in 0..4 {
                        let rh = e >> 1;
                        let p = if sj[l][e] == f32::NEG_INFINITY {
                            0.0
                        } else {
                            (sj[l][e] - m[l][rh]).exp2()
                        };
                        sj[l][e] = p;
                        lsum[l][rh] += p;
                    }
                }
                for aj in acc.iter_mut() {
                    for e in 0..4 {
                        aj[l][e] *= alpha[e >> 1];
                    }
                }
            }
            // P (f16) as the A fragment, V by ldmatrix.trans.
            for kk in 0..BK / 16 {
                let a: Regs = (0..32)
                    .map(|l| {
                        let (x, y) = (&s[2 * kk][l], &s[2 * kk + 1][l]);
                        [
                            (h(x[0]), h(x[1])),
                            (h(x[2]), h(x[3])),
                            (h(y[0]), h(y[1])),
                            (h(y[2]), h(y[3])),
                        ]
                    })
                    .collect();
                for j in (0..nt).step_by(2) {
                    let r = ldsm(&vs, |l| (kk * 16 + l % 16, j * 8 + (l / 16) * 8), true);
                    mma(&mut acc[j], &a, &r, 0);
                    mma(&mut acc[j + 1], &a, &r, 2);
                }
            }
        }
        // The row sums over the row's 4 lanes, then the store.
        for l in 0..32 {
            let g = &lsum[l & !3..(l & !3) + 4];
            let total = [0, 1].map(|rh| g.iter().map(|x| x[rh]).sum::<f32>());
            let row0 = q0 + warp * 16 + l / 4;
            for rh in 0..2 {
                let row = row0 + 8 * rh;
                if row < tokens {
                    for (j, aj) in acc.iter().enumerate() {
                        for b in 0..2 {
                            let col = 8 * j + 2 * (l % 4) + b;
                            o[row * d + hh * hd + col] = h(aj[l][2 * rh + b] / total[rh]);
                        }
                    }
                }
            }
        }
    }
}

/// The whole op through the model: every head and query block.
fn model(op: &Op, x: &[HostBuf], variant: Variant) -> Vec<f32> {
    let mut p = Prefill::of(op, x);
    for (hh, q0) in p.blocks(BQ) {
        block(&mut p, q0, hh, variant);
    }
    p.out
}

fn inputs(op: &Op, seed: u64) -> Vec<HostBuf> {
    let mut z = seed;
    op.inputs()
        .iter()
        .map(|s| {
            HostBuf::F16(
                (0..s.len)
                    .map(|_| {
                        z = z
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        f16::from_f64(((z >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0)
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The tensor-core path at both head sizes it serves, with a cached
/// prefix and partial tiles, reproduces the reference within the op's
/// tolerance; the same path with the K fragment's halves swapped does not.
#[test]
fn the_tensor_core_prefill_path_reproduces_the_reference() {
    for (hd, tokens, pos0) in [(64usize, 70usize, 5u32), (128, 40, 29)] {
        let op = Op::AttnPrefillF16 {
            tokens,
            heads: 2,
            head_dim: hd,
            pos0,
            max_seq: tokens + pos0 as usize,
        };
        let x = inputs(&op, hd as u64);
        let want = crate::reference(&op, &x, &[]).unwrap();
        let got = model(&op, &x, Variant::Kernel);
        let c = crate::check::check_f32(&got, &want[0], op.tolerance());
        assert!(c.pass, "head_dim {hd}: {c:?}");
        let bad = model(&op, &x, Variant::KHalvesSwapped);
        let c = crate::check::check_f32(&bad, &want[0], op.tolerance());
        assert!(
            !c.pass,
            "head_dim {hd}: a wrong K fragment passes ({})",
            c.rel_err
        );
    }
}
