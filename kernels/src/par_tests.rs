//! The references and comparisons run on every core: the same bits on 1,
//! 2, 3 and 8 threads, and the same as their serial definitions.

use crate::check::{check_f32, CheckOutcome, Tolerance, CHECK_PIECE};
use crate::{reference, HostBuf, Op};
use rand::{Rng, SeedableRng};

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Seeded inputs of `op` in its ranges, f16 rounded where f16.
fn inputs(op: &Op, seed: u64) -> (Vec<HostBuf>, Vec<HostBuf>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut make = |s: &crate::BufferSpec| {
        let (lo, hi) = op.input_range(s.name);
        let v: Vec<f64> = (0..s.len)
            .map(|_| f64::from(rng.gen_range(lo..hi)))
            .collect();
        HostBuf::from_f64(s.dtype, &v)
    };
    let ins = op.inputs().iter().map(&mut make).collect();
    let prior = op.outputs().iter().map(&mut make).collect();
    (ins, prior)
}

fn bits(v: &[Vec<f64>]) -> Vec<Vec<u64>> {
    v.iter()
        .map(|o| o.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// Every op's reference (the catalogue's examples and shapes large enough
/// to split: rows, tokens, heads, a whole layer) is the same bits on any
/// number of threads.
#[test]
fn references_are_the_same_bits_on_any_number_of_threads() {
    let mut ops = Op::catalogue();
    ops.extend([
        Op::GemmF32 {
            m: 70,
            n: 90,
            k: 50,
        },
        Op::LinearF16 {
            tokens: 3,
            rows: 300,
            cols: 200,
        },
        Op::AttnPrefillF16 {
            tokens: 40,
            heads: 4,
            head_dim: 32,
            pos0: 9,
            max_seq: 64,
        },
        Op::RmsNorm {
            rows: 300,
            cols: 256,
            eps: 1e-5,
        },
        Op::BlockPrefill {
            hidden: 64,
            heads: 2,
            head_dim: 32,
            ffn: 96,
            tokens: 9,
        },
        Op::BlockDecode {
            hidden: 64,
            heads: 2,
            head_dim: 32,
            ffn: 96,
            len: 21,
        },
    ]);
    for op in ops.iter().filter(|o| !o.is_test_only()) {
        let (x, prior) = inputs(op, 5);
        let one = on_threads(1, || reference(op, &x, &prior).unwrap());
        for threads in [2, 3, 8] {
            let many = on_threads(threads, || reference(op, &x, &prior).unwrap());
            assert!(bits(&one) == bits(&many), "{op}: {threads} threads");
        }
    }
}

/// The split references against their serial definitions, loop for loop:
/// the GEMM, the linear/GEMV and attention (the rows, elements and heads
/// each computed as serially, so bit for bit).
#[test]
fn split_references_are_their_serial_loops_bit_for_bit() {
    let (m, n, k) = (33, 47, 29);
    let op = Op::GemmF32 { m, n, k };
    let (x, _) = inputs(&op, 1);
    let (a, b) = (x[0].to_f64(), x[1].to_f64());
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    let got = on_threads(3, || reference(&op, &x, &[]).unwrap());
    assert!(bits(&got) == bits(&[c]), "gemm");

    let (tokens, rows, cols) = (5, 61, 37);
    let op = Op::LinearF16 { tokens, rows, cols };
    let (x, _) = inputs(&op, 2);
    let (xv, w) = (x[0].to_f64(), x[1].to_f64());
    let mut y = vec![0.0; tokens * rows];
    for t in 0..tokens {
        for o in 0..rows {
            y[t * rows + o] = xv[t * cols..(t + 1) * cols]
                .iter()
                .zip(&w[o * cols..(o + 1) * cols])
                .map(|(a, b)| a * b)
                .sum();
        }
    }
    let got = on_threads(3, || reference(&op, &x, &[]).unwrap());
    assert!(bits(&got) == bits(&[y]), "linear");

    let (heads, hd, len) = (3, 16, 40);
    let op = Op::AttnDecodeF16 {
        heads,
        head_dim: hd,
        len,
        max_seq: 48,
    };
    let (x, _) = inputs(&op, 3);
    let (q, kc, vc) = (x[0].to_f64(), x[1].to_f64(), x[2].to_f64());
    let d = heads * hd;
    let mut o = vec![0.0; d];
    for h in 0..heads {
        let s: Vec<f64> = (0..len)
            .map(|p| {
                (0..hd)
                    .map(|i| q[h * hd + i] * kc[p * d + h * hd + i])
                    .sum::<f64>()
                    * (1.0 / (hd as f64).sqrt())
            })
            .collect();
        let mx = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|v| (v - mx).exp()).collect();
        let sum: f64 = e.iter().sum();
        for (p, ep) in e.iter().enumerate() {
            for i in 0..hd {
                o[h * hd + i] += ep / sum * vc[p * d + h * hd + i];
            }
        }
    }
    let got = on_threads(3, || reference(&op, &x, &[]).unwrap());
    assert!(bits(&got) == bits(&[o]), "attention");
}

/// The comparison loop as it was, serially, for the outcome's figures.
fn serial_check(
    out: &[f32],
    r: &[f64],
    tol: Tolerance,
) -> (f64, f64, Option<usize>, usize, usize, Option<usize>) {
    let (mut err_sq, mut ref_sq, mut max_abs, mut max_at) = (0.0f64, 0.0f64, 0.0f64, None);
    let (mut non_finite, mut mismatches, mut first_bad) = (0, 0, None);
    for (i, &o) in out.iter().enumerate() {
        ref_sq += r[i] * r[i];
        if !o.is_finite() {
            non_finite += 1;
            first_bad.get_or_insert(i);
            continue;
        }
        let d = (o as f64 - r[i]).abs();
        err_sq += d * d;
        if d > max_abs {
            max_abs = d;
            max_at = Some(i);
        }
        if o != r[i] as f32 {
            mismatches += 1;
            if tol == Tolerance::Exact {
                first_bad.get_or_insert(i);
            }
        }
    }
    (
        (err_sq / ref_sq).sqrt(),
        max_abs,
        max_at,
        non_finite,
        mismatches,
        first_bad,
    )
}

/// A comparison over many pieces: the same outcome on 1, 2, 3 and 8
/// threads; against the serial loop the same verdict, counts, places and
/// largest error, and the relative error within a few units of rounding
/// (its sums are added piece by piece).
#[test]
fn comparisons_are_the_same_on_any_number_of_threads_and_match_the_serial_loop() {
    let n = 3 * CHECK_PIECE + 777;
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let r: Vec<f64> = (0..n).map(|_| rng.gen_range(-2.0..2.0)).collect();
    let mut near: Vec<f32> = r.iter().map(|&v| (v * (1.0 + 1e-6)) as f32).collect();
    let exact: Vec<f32> = r.iter().map(|&v| v as f32).collect();
    let mut broken = exact.clone();
    broken[CHECK_PIECE + 5] = 9.0;
    broken[2 * CHECK_PIECE + 1] = f32::NAN;
    near[n - 3] += 0.5;
    for (out, tol) in [
        (&near, Tolerance::FP32),
        (&near, Tolerance::RelNorm(1e-2)),
        (&exact, Tolerance::Exact),
        (&broken, Tolerance::Exact),
        (&broken, Tolerance::FP32),
    ] {
        let one: CheckOutcome = on_threads(1, || check_f32(out, &r, tol));
        for threads in [2, 3, 8] {
            let many = on_threads(threads, || check_f32(out, &r, tol));
            assert_eq!(format!("{one:?}"), format!("{many:?}"), "{threads} threads");
        }
        let (rel, max_abs, max_at, non_finite, mismatches, first_bad) = serial_check(out, &r, tol);
        assert_eq!(
            (
                one.max_abs_err,
                one.max_abs_at,
                one.non_finite,
                one.mismatches,
                one.first_bad
            ),
            (max_abs, max_at, non_finite, mismatches, first_bad)
        );
        assert!(
            (one.rel_err - rel).abs() <= 1e-12 * rel.max(1e-300),
            "{} vs {rel}",
            one.rel_err
        );
    }
    // A buffer of one piece is the serial loop exactly.
    let small = &near[..1000];
    let c = check_f32(small, &r[..1000], Tolerance::FP32);
    assert_eq!(
        c.rel_err.to_bits(),
        serial_check(small, &r[..1000], Tolerance::FP32).0.to_bits()
    );
}
