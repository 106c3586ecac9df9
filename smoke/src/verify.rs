//! Checking one repeat's outputs against the f64 CPU reference of
//! greta-kernels. Data movement (fill, copy) is checked word for word
//! without materialising an f64 copy of a GiB buffer. GEMMs too large for a
//! full CPU reference in a repeat are checked on sampled rows, every
//! element for NaN/poison, and a random projection of the whole product
//! (Freivalds: `C·v` against `A·(B·v)`), so an error anywhere shows.

use crate::check::{
    check_buf, check_f32, check_f32_by, check_u32, CheckOutcome, Tolerance, POISON_BITS,
};
use crate::inputs::{Prepared, SplitMix64};
use crate::shared_refs::SharedRefs;
use greta_kernels::{HostBuf, Op, PAR_MIN};
use rayon::prelude::*;

/// Multiply-adds of CPU reference a GEMM check may spend per repeat before
/// it samples instead (≈ 0.1 s in a release build).
pub const GEMM_FULL_REFERENCE_MACS: u64 = 1 << 27;

/// Longest xorshift chain of the test-only slow kernel checked on the CPU.
pub const MAX_SLOW_REFERENCE_ITERS: u32 = 1 << 26;

/// Check the outputs read back after running `p`. `seed` (the repeat's,
/// which made `p`'s inputs) drives the GEMM row sampling.
pub fn verify(p: &Prepared, got: &[HostBuf], tol: Tolerance, seed: u64) -> CheckOutcome {
    verify_shared(p, got, tol, seed, None)
}

/// [`verify`], the f64 reference taken from (or computed for) the run's
/// other devices where it depends on the inputs alone ([`SharedRefs`]).
pub fn verify_shared(
    p: &Prepared,
    got: &[HostBuf],
    tol: Tolerance,
    seed: u64,
    shared: Option<&SharedRefs>,
) -> CheckOutcome {
    verify_inner(p, got, tol, seed, GEMM_FULL_REFERENCE_MACS, shared)
}

/// [`verify`] with the GEMM reference budget as a parameter (tests use a
/// small one to exercise sampling on small matrices).
#[cfg(test)]
pub fn verify_with_budget(
    p: &Prepared,
    got: &[HostBuf],
    tol: Tolerance,
    seed: u64,
    budget_macs: u64,
) -> CheckOutcome {
    verify_inner(p, got, tol, seed, budget_macs, None)
}

fn verify_inner(
    p: &Prepared,
    got: &[HostBuf],
    tol: Tolerance,
    seed: u64,
    budget_macs: u64,
    shared: Option<&SharedRefs>,
) -> CheckOutcome {
    let expected = p.op.outputs().len();
    if got.len() != expected {
        return CheckOutcome::failed(format!(
            "backend returned {} output buffers, expected {expected}",
            got.len()
        ));
    }
    // A composite op (the transformer block) declares its own error model,
    // element by element: the norm bound would let a wrong mask through.
    if p.op.composite().is_some() {
        let x: Vec<Vec<f64>> = p.inputs.iter().map(HostBuf::to_f64).collect();
        if let Some(exp) = p.op.expected(&x, got, seed) {
            return match exp {
                Ok(exp) => verify_expected(&p.op, &exp, got),
                Err(e) => CheckOutcome::failed(format!("CPU reference: {e}")),
            };
        }
    }
    match (&p.op, got) {
        (Op::Noop, _) => CheckOutcome::passed(),
        // The CPU reference of the test-only slow kernel is as slow as the
        // kernel (a serial chain): past this length, do not compute it.
        (Op::TestSlow { iters }, _) if *iters > MAX_SLOW_REFERENCE_ITERS => CheckOutcome::failed(format!(
            "test-only slow kernel finished before the timeout; its {iters}-step reference is not computed"
        )),
        (Op::Fill { n, value }, [HostBuf::U32(y)]) => check_u32_with(y, *n, |_| *value),
        (Op::Memtest { .. }, [HostBuf::U32(record)]) => verify_memtest(p, record),
        (Op::Copy { .. } | Op::TestBrokenCopy { .. }, [HostBuf::U32(y)]) => match &p.inputs[..] {
            [HostBuf::U32(x)] => check_u32(y, x),
            _ => CheckOutcome::failed("copy input is not u32".into()),
        },
        (Op::VecAdd { .. }, [HostBuf::F32(c)]) => match &p.inputs[..] {
            [HostBuf::F32(a), HostBuf::F32(b)] if a.len() == c.len() && b.len() == c.len() => {
                check_f32_by(c, |i| a[i] as f64 + b[i] as f64, tol)
            }
            _ => CheckOutcome::failed("vec_add buffers do not match".into()),
        },
        (Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k }, [HostBuf::F32(c)])
            if (*m as u64) * (*n as u64) * (*k as u64) > budget_macs =>
        {
            verify_gemm_sampled(p, c, tol, seed, budget_macs)
        }
        (Op::LinearF16 { tokens, rows, cols }, [HostBuf::F16(y)])
            if (*tokens as u64) * (*rows as u64) * (*cols as u64) > budget_macs =>
        {
            verify_linear_sampled(p, y, tol, seed, budget_macs)
        }
        _ => verify_with_reference(p, got, tol, seed, shared),
    }
}

/// A memtest's error record against the reference's (zeros for a sound
/// slice; the injected flip where one was): a difference is reported as
/// the memory errors the device recorded, each with its word, bits and
/// pattern, or as a record no kernel writes.
fn verify_memtest(p: &Prepared, got: &[u32]) -> CheckOutcome {
    let want: Vec<u32> = match greta_kernels::reference(&p.op, &p.inputs, &p.outputs) {
        Ok(w) => w[0].iter().map(|&v| v as u32).collect(),
        Err(e) => return CheckOutcome::failed(format!("CPU reference: {e}")),
    };
    if got == want.as_slice() {
        return CheckOutcome::passed();
    }
    let mut c = check_u32(got, &want);
    let describe = |r: &greta_kernels::MemReport| {
        let shown: Vec<String> = r.errors.iter().map(|e| e.to_string()).collect();
        format!(
            "{} read(s) wrong, bits {:#010x} wrong in any: {}{}",
            r.count,
            r.bits,
            shown.join("; "),
            if (r.count as usize) > shown.len() {
                format!(" (the first {} shown)", shown.len())
            } else {
                String::new()
            }
        )
    };
    let (Some(got_r), Some(want_r)) = (
        greta_kernels::MemReport::decode(got),
        greta_kernels::MemReport::decode(&want),
    ) else {
        c.reason = Some(format!(
            "memtest: the error record is not one the kernel writes ({})",
            c.reason.unwrap_or_default()
        ));
        return c;
    };
    c.reason = Some(if want_r.count == 0 {
        format!("memtest: memory errors: {}", describe(&got_r))
    } else {
        format!(
            "memtest: the injected flip was not reported as injected: expected {}; the device recorded {}",
            describe(&want_r),
            if got_r.count == 0 {
                "nothing".to_string()
            } else {
                describe(&got_r)
            }
        )
    });
    c
}

fn check_u32_with(out: &[u32], n: usize, want: impl Fn(usize) -> u32 + Sync) -> CheckOutcome {
    if out.len() != n {
        return CheckOutcome::failed(format!("output has {} words, expected {n}", out.len()));
    }
    // On every core; only a miss builds the comparison that names and
    // counts every one.
    let missed = out
        .par_iter()
        .with_min_len(PAR_MIN)
        .enumerate()
        .any(|(i, &o)| o != want(i));
    if !missed {
        return CheckOutcome::passed();
    }
    let reference: Vec<u32> = (0..n).map(&want).collect();
    check_u32(out, &reference)
}

/// Each output within its per-element error model; the worst decides.
fn verify_expected(
    op: &Op,
    exp: &[greta_kernels::block::Expected],
    got: &[HostBuf],
) -> CheckOutcome {
    let specs = op.outputs();
    let mut worst = CheckOutcome::passed();
    for ((e, g), spec) in exp.iter().zip(got).zip(&specs) {
        worst = merge(worst, e.outcome(g), spec.name, specs.len() > 1);
    }
    worst
}

/// The general path: the full f64 reference (from the inputs alone, so
/// shared by a run's devices), every output compared; the worst output
/// decides.
fn verify_with_reference(
    p: &Prepared,
    got: &[HostBuf],
    tol: Tolerance,
    seed: u64,
    shared: Option<&SharedRefs>,
) -> CheckOutcome {
    let compute =
        || greta_kernels::reference(&p.op, &p.inputs, &p.outputs).map_err(|e| e.to_string());
    let want = match shared {
        Some(s) => {
            let bufs: Vec<&HostBuf> = p.inputs.iter().chain(&p.outputs).collect();
            s.get(crate::shared_refs::key(&p.op, seed, &bufs), compute)
        }
        None => std::sync::Arc::new(compute()),
    };
    let want = match &*want {
        Ok(w) => w,
        Err(e) => return CheckOutcome::failed(format!("CPU reference: {e}")),
    };
    let specs = p.op.outputs();
    let mut worst = CheckOutcome::passed();
    for ((g, w), spec) in got.iter().zip(want).zip(&specs) {
        let c = check_buf(g, w, tol);
        worst = merge(worst, c, spec.name, specs.len() > 1);
    }
    worst
}

/// Keep the worse of two outcomes, errors as maxima; prefix the reason with
/// the buffer name when an op has several outputs.
fn merge(acc: CheckOutcome, c: CheckOutcome, name: &str, named: bool) -> CheckOutcome {
    let max = |a: f64, b: f64| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    };
    CheckOutcome {
        pass: acc.pass && c.pass,
        rel_err: max(acc.rel_err, c.rel_err),
        max_abs_err: max(acc.max_abs_err, c.max_abs_err),
        non_finite: acc.non_finite + c.non_finite,
        mismatches: acc.mismatches + c.mismatches,
        first_bad: acc.first_bad.or(c.first_bad),
        max_abs_at: if c.max_abs_err > acc.max_abs_err {
            c.max_abs_at
        } else {
            acc.max_abs_at
        },
        reason: acc.reason.or_else(|| {
            c.reason
                .map(|r| if named { format!("{name}: {r}") } else { r })
        }),
    }
}

fn verify_gemm_sampled(
    p: &Prepared,
    c: &[f32],
    tol: Tolerance,
    seed: u64,
    budget_macs: u64,
) -> CheckOutcome {
    let (m, n, k) = match p.op {
        Op::GemmF32 { m, n, k } | Op::GemmF16 { m, n, k } => (m, n, k),
        _ => unreachable!("only GEMMs are sampled"),
    };
    if let Err(bad) = element_count(c.len(), m * n) {
        return bad;
    }
    // 1. Every element written and finite.
    if let Some(bad) = non_finite(c, n, |i| c[i].to_bits() == POISON_BITS) {
        return bad;
    }
    let a = p.inputs[0].to_f64();
    let b = p.inputs[1].to_f64();
    // 2. Sampled rows against the exact f64 reference (the rows on every
    // core, each summed as serially).
    let (mut rng, picked) = sample_rows(seed, budget_macs / (n as u64 * k as u64), m);
    let mut got_rows = Vec::with_capacity(picked.len() * n);
    for &r in &picked {
        got_rows.extend_from_slice(&c[r * n..(r + 1) * n]);
    }
    let mut want_rows = vec![0.0f64; picked.len() * n];
    want_rows
        .par_chunks_mut(n)
        .zip(picked.par_iter())
        .for_each(|(out, &r)| {
            for p_ in 0..k {
                let av = a[r * k + p_];
                for (o, bv) in out.iter_mut().zip(&b[p_ * n..(p_ + 1) * n]) {
                    *o += av * bv;
                }
            }
        });
    let rows_check = match check_rows(&got_rows, &want_rows, tol, "sampled rows", &picked) {
        Ok(c) => c,
        Err(bad) => return bad,
    };
    // 3. Projection of the whole product on a random vector. Continuous
    // entries (not ±1, under which a uniform error over an even number of
    // columns can cancel) make an error orthogonal to it improbable.
    let v: Vec<f64> = (0..n).map(|_| rng.range_f64(-1.0, 1.0)).collect();
    let bv = mat_vec(&b, k, n, &v);
    let want_proj = mat_vec(&a, m, k, &bv);
    let got_proj: Vec<f32> = mat_vec(c, m, n, &v).into_iter().map(|x| x as f32).collect();
    let proj = check_f32(&got_proj, &want_proj, tol);
    sampled_outcome(
        rows_check,
        proj,
        &picked,
        n,
        "projection C·v of the whole product (one entry per row)",
    )
}

/// `linear_f16` too large for a full reference (`Y = X W^T`, W `[out][in]`):
/// as [`verify_gemm_sampled`], every element finite, sampled token rows
/// against the exact f64 reference, and the projection `Y·v` of the whole
/// output against `X·(W^T·v)`.
fn verify_linear_sampled(
    p: &Prepared,
    y: &[half::f16],
    tol: Tolerance,
    seed: u64,
    budget_macs: u64,
) -> CheckOutcome {
    let Op::LinearF16 { tokens, rows, cols } = p.op else {
        unreachable!("only linear_f16 is sampled here")
    };
    if let Err(bad) = element_count(y.len(), tokens * rows) {
        return bad;
    }
    let c: Vec<f32> = y
        .par_iter()
        .with_min_len(PAR_MIN)
        .map(|h| h.to_f32())
        .collect();
    let poison = HostBuf::poisoned(greta_kernels::DType::F16, 1)
        .as_f16()
        .map(|p| p[0].to_bits());
    if let Some(bad) = non_finite(&c, rows, |i| Some(y[i].to_bits()) == poison) {
        return bad;
    }
    let x = p.inputs[0].to_f64();
    let w = p.inputs[1].to_f64();
    let (mut rng, picked) = sample_rows(seed, budget_macs / (rows as u64 * cols as u64), tokens);
    let mut got_rows = Vec::with_capacity(picked.len() * rows);
    let mut want_rows = Vec::with_capacity(picked.len() * rows);
    for &t in &picked {
        got_rows.extend_from_slice(&c[t * rows..(t + 1) * rows]);
        want_rows.extend(mat_vec(&w, rows, cols, &x[t * cols..(t + 1) * cols]));
    }
    let rows_check = match check_rows(&got_rows, &want_rows, tol, "sampled token rows", &picked) {
        Ok(c) => c,
        Err(bad) => return bad,
    };
    // Three projections: at f16's tolerance one random vector misses a
    // single wrong element when its weight there is small (a few per cent
    // of draws); all three miss it with odds of about 1 in 30000.
    let mut proj = CheckOutcome::passed();
    for _ in 0..3 {
        let v: Vec<f64> = (0..rows).map(|_| rng.range_f64(-1.0, 1.0)).collect();
        // W^T v: the rows of W weighted by v, a band of columns per task
        // on every core (each column summed over the rows in order, as
        // serially).
        let mut wtv = vec![0.0f64; cols];
        const BAND: usize = 256;
        wtv.par_chunks_mut(BAND)
            .enumerate()
            .for_each(|(band, acc)| {
                let c0 = band * BAND;
                for (o, vo) in v.iter().enumerate() {
                    let row = &w[o * cols + c0..o * cols + c0 + acc.len()];
                    for (a, wv) in acc.iter_mut().zip(row) {
                        *a += wv * vo;
                    }
                }
            });
        let want_proj = mat_vec(&x, tokens, cols, &wtv);
        let got_proj: Vec<f32> = mat_vec(&c, tokens, rows, &v)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let one = check_f32(&got_proj, &want_proj, tol);
        if !one.pass || proj.rel_err < one.rel_err {
            proj = one;
        }
        if !proj.pass {
            break;
        }
    }
    sampled_outcome(
        rows_check,
        proj,
        &picked,
        rows,
        "projection Y·v of the whole output (one entry per token)",
    )
}

/// A sampled check's output length against the op's: the failure naming
/// both when they differ.
fn element_count(len: usize, want: usize) -> Result<(), CheckOutcome> {
    if len == want {
        Ok(())
    } else {
        Err(CheckOutcome::failed(format!(
            "output has {len} elements, expected {want}"
        )))
    }
}

/// The gathered `picked` rows against their exact reference; a failure
/// names the rows (`what`: "sampled rows", "sampled token rows").
fn check_rows(
    got: &[f32],
    want: &[f64],
    tol: Tolerance,
    what: &str,
    picked: &[usize],
) -> Result<CheckOutcome, CheckOutcome> {
    let rows_check = check_f32(got, want, tol);
    if rows_check.pass {
        return Ok(rows_check);
    }
    let why = rows_check.reason.clone().unwrap_or_default();
    Err(CheckOutcome {
        reason: Some(format!("{what} {picked:?}: {why}")),
        ..rows_check
    })
}

/// A sampled check's outcome: the projection (`what` names it, one entry
/// per row of `width` elements) decides, the worst error of either counts,
/// and the places go back from the gathered rows to the whole output.
fn sampled_outcome(
    rows_check: CheckOutcome,
    proj: CheckOutcome,
    picked: &[usize],
    width: usize,
    what: &str,
) -> CheckOutcome {
    CheckOutcome {
        pass: proj.pass,
        rel_err: rows_check.rel_err.max(proj.rel_err),
        max_abs_err: rows_check.max_abs_err,
        non_finite: 0,
        mismatches: rows_check.mismatches,
        first_bad: proj.first_bad.map(|r| r * width),
        max_abs_at: rows_check
            .max_abs_at
            .map(|i| picked[i / width] * width + i % width),
        reason: proj.reason.map(|r| format!("{what}: {r}")),
    }
}

/// The failure for a `width`-wide matrix with a NaN/inf element: how many,
/// and the first one's place, named "never written" when `poisoned` says
/// it still holds the poison; `None` when every element is finite.
fn non_finite(c: &[f32], width: usize, poisoned: impl Fn(usize) -> bool) -> Option<CheckOutcome> {
    let i = c
        .par_iter()
        .with_min_len(PAR_MIN)
        .position_first(|x| !x.is_finite())?;
    let count = c.iter().filter(|x| !x.is_finite()).count();
    let what = if poisoned(i) {
        "never written (still the poison value)".to_string()
    } else {
        c[i].to_string()
    };
    Some(CheckOutcome {
        non_finite: count,
        first_bad: Some(i),
        ..CheckOutcome::failed(format!(
            "{count} of {} elements are NaN/inf; first at [{}][{}]: {what}",
            c.len(),
            i / width,
            i % width
        ))
    })
}

/// Up to `want` (at least one) of `total` rows drawn for `seed`,
/// ascending, each once; and the generator, which goes on to draw the
/// projection vectors.
fn sample_rows(seed: u64, want: u64, total: usize) -> (SplitMix64, Vec<usize>) {
    let mut rng = SplitMix64::new(seed ^ 0x5a5a_5a5a);
    let want = usize::try_from(want).unwrap_or(usize::MAX).clamp(1, total);
    let mut picked: Vec<usize> = (0..want).map(|_| rng.below(total)).collect();
    picked.sort_unstable();
    picked.dedup();
    (rng, picked)
}

/// `mat · v` in f64 for a row-major `rows × cols` matrix; the rows on
/// every core, each summed as serially.
fn mat_vec<T: Copy + Into<f64> + Sync>(mat: &[T], rows: usize, cols: usize, v: &[f64]) -> Vec<f64> {
    (0..rows)
        .into_par_iter()
        .with_min_len((PAR_MIN / cols.max(1)).max(1))
        .map(|r| {
            mat[r * cols..(r + 1) * cols]
                .iter()
                .zip(v)
                .map(|(&x, y)| x.into() * y)
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::prepare;

    /// What a correct device would return: the reference rounded to f32.
    fn perfect(p: &Prepared) -> Vec<HostBuf> {
        let want = greta_kernels::reference(&p.op, &p.inputs, &p.outputs).unwrap();
        p.op.outputs()
            .iter()
            .zip(want)
            .map(|(s, w)| match s.dtype {
                greta_kernels::DType::U32 => HostBuf::U32(w.iter().map(|&x| x as u32).collect()),
                _ => HostBuf::F32(w.iter().map(|&x| x as f32).collect()),
            })
            .collect()
    }

    fn tol(op: &Op) -> Tolerance {
        op.tolerance()
    }

    #[test]
    fn perfect_outputs_pass_for_every_op() {
        let ops = Op::catalogue();
        for op in ops {
            let p = prepare(&op, false, 11);
            let c = verify(&p, &perfect(&p), tol(&p.op), 1);
            assert!(c.pass, "{op}: {c:?}");
        }
    }

    #[test]
    fn poisoned_outputs_fail_for_every_op_with_outputs() {
        for op in Op::catalogue()
            .into_iter()
            .filter(|o| !o.outputs().is_empty())
        {
            let p = prepare(&op, false, 5);
            // The device wrote nothing: outputs come back as uploaded.
            let c = verify(&p, &p.outputs.clone(), tol(&p.op), 1);
            assert!(!c.pass, "{op}");
            assert!(c.reason.unwrap().contains("never written"), "{op}");
        }
    }

    #[test]
    fn broken_copy_semantics_are_caught() {
        // What TestBrokenCopy does: element n/2 skipped, n/2+1 written twice.
        let p = prepare(&Op::TestBrokenCopy { n: 64 }, false, 2);
        let mut y = p.inputs[0].as_u32().unwrap().to_vec();
        y[32] = p.outputs[0].as_u32().unwrap()[32];
        let c = verify(&p, &[HostBuf::U32(y)], Tolerance::Exact, 1);
        assert!(!c.pass);
        assert_eq!(c.first_bad, Some(32));
    }

    #[test]
    fn kv_update_that_clobbers_other_rows_fails() {
        let op = Op::KvUpdate {
            layers: 1,
            max_seq: 8,
            heads: 1,
            head_dim: 4,
            pos: 2,
            n_new: 1,
        };
        let p = prepare(&op, false, 3);
        let mut out = perfect(&p);
        if let HostBuf::F32(v) = &mut out[1] {
            v[0] += 1.0; // v_cache row 0 is outside the written rows
        }
        let c = verify(&p, &out, Tolerance::Exact, 1);
        assert!(!c.pass);
        assert!(c.reason.unwrap().starts_with("v_cache:"));
    }

    /// Over the test budget (4 rows' worth): sampling kicks in.
    const BUDGET: u64 = 4 * 256 * 64;

    fn big_gemm() -> (Prepared, Vec<f32>) {
        let (m, n, k) = (256, 256, 64);
        let op = Op::GemmF32 { m, n, k };
        let p = prepare(&op, false, 4);
        let a = p.inputs[0].as_f32().unwrap();
        let b = p.inputs[1].as_f32().unwrap();
        let mut c = vec![0.0f64; m * n];
        for i in 0..m {
            for q in 0..k {
                let av = a[i * k + q] as f64;
                for j in 0..n {
                    c[i * n + j] += av * b[q * n + j] as f64;
                }
            }
        }
        (p, c.into_iter().map(|x| x as f32).collect())
    }

    /// An error the sampled check must see whichever rows it samples:
    /// every one of 8 seeds fails.
    fn fails_for_every_seed(check: impl Fn(u64) -> CheckOutcome) {
        for seed in 0..8 {
            let c = check(seed);
            assert!(!c.pass, "seed {seed}: {c:?}");
        }
    }

    #[test]
    fn sampled_gemm_check_catches_errors_outside_the_sampled_rows() {
        let (p, good) = big_gemm();
        let run = |c: &[f32], seed: u64| {
            verify_with_budget(
                &p,
                &[HostBuf::F32(c.to_vec())],
                Tolerance::FP32,
                seed,
                BUDGET,
            )
        };
        let c = run(&good, 9);
        assert!(c.pass, "{c:?}");
        // One 16x16 tile wrong: the projection sees it whichever rows were
        // sampled (every seed, not a lucky one).
        let mut bad = good.clone();
        for r in 200..216 {
            for j in 0..16 {
                bad[r * 256 + j] += 0.5;
            }
        }
        fails_for_every_seed(|seed| run(&bad, seed));
        // A single element wrong, outside the sampled rows (any of 8 seeds).
        let mut one = good.clone();
        one[123 * 256 + 45] += 1.0;
        fails_for_every_seed(|seed| run(&one, seed));
        // An unwritten element anywhere.
        let mut hole = good;
        hole[7_777] = f32::from_bits(POISON_BITS);
        let c = run(&hole, 9);
        assert!(!c.pass);
        assert!(c.reason.unwrap().contains("never written"));
    }

    /// linear_f16 over the budget: the f16 output of the exact product
    /// (rounded once) passes; a wrong element outside the sampled token
    /// rows, a transposed weight and an unwritten element each fail.
    #[test]
    fn sampled_linear_check_catches_errors_outside_the_sampled_rows() {
        use half::f16;
        let (tokens, rows, cols) = (96, 80, 64);
        let op = Op::LinearF16 { tokens, rows, cols };
        let budget = 2 * (rows * cols) as u64;
        let p = prepare(&op, false, 6);
        let exact = greta_kernels::reference(&p.op, &p.inputs, &p.outputs).unwrap();
        let good: Vec<f16> = exact[0].iter().map(|&v| f16::from_f64(v)).collect();
        let tol = op.tolerance();
        let run = |y: &[f16], seed: u64| {
            verify_with_budget(&p, &[HostBuf::F16(y.to_vec())], tol, seed, budget)
        };
        for seed in 0..4 {
            let c = run(&good, seed);
            assert!(c.pass, "{c:?}");
        }
        let mut one = good.clone();
        one[77 * rows + 5] = f16::from_f64(exact[0][77 * rows + 5] + 4.0);
        fails_for_every_seed(|seed| run(&one, seed));
        // W used as [in][out] (read down a column): the layout mismatch
        // the seeds' history had.
        let x = p.inputs[0].to_f64();
        let w = p.inputs[1].to_f64();
        let transposed: Vec<f16> = (0..tokens * rows)
            .map(|e| {
                let (t, o) = (e / rows, e % rows);
                let s: f64 = (0..cols)
                    .map(|i| x[t * cols + i] * w[(i * rows + o) % (rows * cols)])
                    .sum();
                f16::from_f64(s)
            })
            .collect();
        assert!(!run(&transposed, 3).pass);
        let mut hole = good;
        hole[1234] = f16::from_bits(0x7e5a);
        let c = run(&hole, 1);
        assert!(!c.pass);
        assert!(c.reason.unwrap().contains("never written"), "poison");
    }

    /// A memtest's record is read as memory errors: a sound record passes;
    /// one the device filled names the word, bit and pattern; a record
    /// the kernel cannot have written, or an injected flip reported wrong,
    /// says so.
    #[test]
    fn memtest_records_read_as_memory_errors() {
        let op = |flip_mask| Op::Memtest {
            words: 64,
            patterns: 1,
            seed: 1,
            flip_word: 3,
            flip_mask,
        };
        let p = prepare(&op(0), false, 5);
        let tol = p.op.tolerance();
        assert!(verify(&p, &perfect(&p), tol, 1).pass);
        // What the device of a flipped bit 3 of word 3 records.
        let faulty = prepare(&op(1 << 3), false, 5);
        let got = perfect(&faulty);
        let c = verify(&p, &got, tol, 1);
        let why = c.reason.unwrap();
        assert!(!c.pass);
        assert!(
            why.starts_with("memtest: memory errors: 2 read(s) wrong, bits 0x00000008 wrong in any: word 0x3 (byte 0xc of the slice): bit 3 wrong, expected 0x00000008 read 0x00000000 (walking_ones, check after write); word 0x3"),
            "{why}"
        );
        // The injected flip reported as nothing.
        let c = verify(&faulty, &perfect(&p), tol, 1);
        assert!(c
            .reason
            .unwrap()
            .contains("the injected flip was not reported as injected: expected 2 read(s) wrong"),);
        // Garbage (poison) in the record.
        let c = verify(
            &p,
            &[HostBuf::poisoned(greta_kernels::DType::U32, 36)],
            tol,
            1,
        );
        assert!(c
            .reason
            .unwrap()
            .starts_with("memtest: the error record is not one the kernel writes"),);
    }
}
