//! Comparing a device result with its f64 reference: the one engine the
//! smoke gates, the runtime's tests and the tuner all decide pass or fail
//! with, kept free of any device code so it can be proven on crafted data.
//!
//! Three rules hold for every comparison: a NaN or infinity in the output
//! never passes (the poison the output buffer is filled with before each run
//! is a NaN, so an element the kernel did not write fails), lengths must
//! agree, and the error must be within the op's tolerance.

use crate::host::HostBuf;
use serde::{Deserialize, Serialize};

pub use crate::host::{POISON_F32 as POISON_BITS, POISON_U32};

/// Fill an f32 slice with the poison NaN.
pub fn poison_f32(buf: &mut [f32]) {
    buf.fill(f32::from_bits(POISON_BITS));
}

/// How close an output must be to its f64 reference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Tolerance {
    /// Every element bit-equal to the reference rounded to f32 (fill, copy,
    /// kv_update: data movement has no rounding to excuse).
    Exact,
    /// `‖out − ref‖₂ / ‖ref‖₂ ≤ value` (fp32 math: 1e-5; f16 in, f32 acc: 1e-2).
    RelNorm(f64),
}

impl Tolerance {
    /// fp32 arithmetic.
    pub const FP32: Tolerance = Tolerance::RelNorm(1e-5);
    /// f16 inputs with f32 accumulation.
    pub const FP16_ACC32: Tolerance = Tolerance::RelNorm(1e-2);

    pub fn describe(&self) -> String {
        match self {
            Tolerance::Exact => "exact".to_string(),
            Tolerance::RelNorm(t) => format!("rel_err <= {t:e}"),
        }
    }
}

/// What one comparison found.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    pub pass: bool,
    /// `‖out − ref‖₂ / ‖ref‖₂` over the finite elements (NaN when the
    /// reference norm is zero, which the input generators never produce).
    pub rel_err: f64,
    /// Largest `|out − ref|` over the finite elements.
    pub max_abs_err: f64,
    /// Elements that are NaN or infinite (poison left behind counts here).
    pub non_finite: usize,
    /// Elements that differ from the reference rounded to f32.
    pub mismatches: usize,
    /// First element that is non-finite or, for exact checks, differs.
    pub first_bad: Option<usize>,
    /// Why it failed, in words; `None` when it passed.
    pub reason: Option<String>,
    /// Where the largest finite `|out − ref|` is (`None` when nothing differs).
    pub max_abs_at: Option<usize>,
}

impl CheckOutcome {
    /// Nothing compared differs.
    pub fn passed() -> Self {
        CheckOutcome {
            pass: true,
            rel_err: 0.0,
            max_abs_err: 0.0,
            non_finite: 0,
            mismatches: 0,
            first_bad: None,
            reason: None,
            max_abs_at: None,
        }
    }

    /// A failure no element-wise figure describes (a length or a reference
    /// that is wrong): the errors are NaN.
    pub fn failed(reason: String) -> Self {
        CheckOutcome {
            pass: false,
            rel_err: f64::NAN,
            max_abs_err: f64::NAN,
            reason: Some(reason),
            ..Self::passed()
        }
    }
}

/// Compare a device output against its f64 reference under `tol`.
pub fn check_f32(out: &[f32], reference: &[f64], tol: Tolerance) -> CheckOutcome {
    if out.len() != reference.len() {
        return CheckOutcome::failed(format!(
            "output has {} elements, reference has {}",
            out.len(),
            reference.len()
        ));
    }
    check_f32_by(out, |i| reference[i], tol)
}

/// Elements of one piece of a comparison: pieces are compared on every
/// core and their sums added in piece order, so the outcome is the same
/// for any number of threads (and, for a buffer of one piece, exactly the
/// serial loop's).
pub const CHECK_PIECE: usize = 1 << 16;

/// What one piece of a comparison found, combined in piece order.
#[derive(Clone, Copy, Default)]
struct Piece {
    err_sq: f64,
    ref_sq: f64,
    max_abs: f64,
    max_abs_at: Option<usize>,
    non_finite: usize,
    mismatches: usize,
    first_bad: Option<usize>,
}

impl Piece {
    /// `self` (the earlier elements) followed by `later`: the first place
    /// and the earliest of equal maxima win, as in one loop over both.
    fn then(self, later: Piece) -> Piece {
        let later_max = later.max_abs > self.max_abs;
        Piece {
            err_sq: self.err_sq + later.err_sq,
            ref_sq: self.ref_sq + later.ref_sq,
            max_abs: if later_max {
                later.max_abs
            } else {
                self.max_abs
            },
            max_abs_at: if later_max {
                later.max_abs_at
            } else {
                self.max_abs_at
            },
            non_finite: self.non_finite + later.non_finite,
            mismatches: self.mismatches + later.mismatches,
            first_bad: self.first_bad.or(later.first_bad),
        }
    }
}

/// [`check_f32`] with the reference computed element by element, for
/// buffers too large to hold an f64 copy of (streaming checks). Pieces of
/// [`CHECK_PIECE`] elements are compared on every core.
pub fn check_f32_by(
    out: &[f32],
    reference: impl Fn(usize) -> f64 + Sync,
    tol: Tolerance,
) -> CheckOutcome {
    use rayon::prelude::*;
    if let Some(i) = (0..out.len())
        .into_par_iter()
        .with_min_len(CHECK_PIECE)
        .find_first(|&i| !reference(i).is_finite())
    {
        // A reference bug, never the device's: still fail so it gets fixed.
        return CheckOutcome {
            first_bad: Some(i),
            ..CheckOutcome::failed(format!("CPU reference is not finite at element {i}"))
        };
    }
    let piece = |(n, part): (usize, &[f32])| {
        let mut p = Piece::default();
        for (j, &o) in part.iter().enumerate() {
            let i = n * CHECK_PIECE + j;
            let r = reference(i);
            p.ref_sq += r * r;
            if !o.is_finite() {
                p.non_finite += 1;
                p.first_bad.get_or_insert(i);
                continue;
            }
            let d = (o as f64 - r).abs();
            p.err_sq += d * d;
            if d > p.max_abs {
                p.max_abs = d;
                p.max_abs_at = Some(i);
            }
            if o != r as f32 {
                p.mismatches += 1;
                if tol == Tolerance::Exact {
                    p.first_bad.get_or_insert(i);
                }
            }
        }
        p
    };
    let pieces: Vec<Piece> = out.par_chunks(CHECK_PIECE).enumerate().map(piece).collect();
    let Piece {
        err_sq,
        ref_sq,
        max_abs,
        max_abs_at,
        non_finite,
        mismatches,
        first_bad,
    } = pieces.into_iter().fold(Piece::default(), Piece::then);
    let rel_err = if ref_sq > 0.0 {
        (err_sq / ref_sq).sqrt()
    } else {
        f64::NAN
    };
    let reason = if non_finite > 0 {
        let i = first_bad.unwrap_or(0);
        let what = if out[i].to_bits() == POISON_BITS {
            "never written (still the poison value)".to_string()
        } else {
            format!("{}", out[i])
        };
        Some(format!(
            "{non_finite} of {} elements are NaN/inf; first at [{i}]: {what}",
            out.len()
        ))
    } else {
        match tol {
            Tolerance::Exact if mismatches > 0 => {
                let i = first_bad.unwrap_or(0);
                Some(format!(
                    "{mismatches} of {} elements differ; first at [{i}]: got {}, want {}",
                    out.len(),
                    out[i],
                    reference(i) as f32
                ))
            }
            Tolerance::Exact => None,
            Tolerance::RelNorm(t) => {
                if rel_err.is_nan() {
                    Some("reference is all zero: relative error undefined".to_string())
                } else if rel_err > t {
                    Some(format!(
                        "rel_err {rel_err:.3e} > {t:e} (max_abs_err {max_abs:.3e})"
                    ))
                } else {
                    None
                }
            }
        }
    };
    CheckOutcome {
        pass: reason.is_none(),
        rel_err,
        max_abs_err: max_abs,
        non_finite,
        mismatches,
        first_bad,
        reason,
        max_abs_at,
    }
}

/// Exact comparison of raw 32-bit words (fill patterns written as integers).
pub fn check_u32(out: &[u32], reference: &[u32]) -> CheckOutcome {
    if out.len() != reference.len() {
        return CheckOutcome::failed(format!(
            "output has {} words, reference has {}",
            out.len(),
            reference.len()
        ));
    }
    // Equal slices (the usual case) compare at memcmp speed, on every
    // core; the loop below only runs to describe a difference.
    use rayon::prelude::*;
    if out
        .par_chunks(CHECK_PIECE)
        .zip(reference.par_chunks(CHECK_PIECE))
        .all(|(a, b)| a == b)
    {
        return CheckOutcome::passed();
    }
    check_u32_described(out, reference)
}

fn check_u32_described(out: &[u32], reference: &[u32]) -> CheckOutcome {
    let mut mismatches = 0usize;
    let mut first_bad = None;
    let mut max_abs = 0.0f64;
    let mut max_abs_at = None;
    for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
        if o != r {
            mismatches += 1;
            first_bad.get_or_insert(i);
            let d = (o as f64 - r as f64).abs();
            if d > max_abs {
                max_abs = d;
                max_abs_at = Some(i);
            }
        }
    }
    let reason = first_bad.map(|i| {
        let got = if out[i] == POISON_U32 {
            "never written (still the poison value)".to_string()
        } else {
            format!("{:#010x}", out[i])
        };
        format!(
            "{mismatches} of {} words differ; first at [{i}]: got {got}, want {:#010x}",
            out.len(),
            reference[i]
        )
    });
    CheckOutcome {
        pass: reason.is_none(),
        rel_err: if mismatches == 0 { 0.0 } else { f64::NAN },
        max_abs_err: max_abs,
        non_finite: 0,
        mismatches,
        first_bad,
        reason,
        max_abs_at,
    }
}

/// Compares one output buffer with its f64 reference (as
/// [`crate::reference()`] computes it): f32 under `tol`, u32 words exactly
/// (the reference holds integers), f16 widened to f32 (exactly: every f16
/// is an f32) under `tol`, where `Exact` means bit-equal to the reference
/// rounded to f16. The f16 poison is a NaN, so an unwritten element fails.
pub fn check_buf(got: &HostBuf, want: &[f64], tol: Tolerance) -> CheckOutcome {
    use crate::host::PAR_MIN;
    use rayon::prelude::*;
    match got {
        HostBuf::F32(v) => check_f32(v, want, tol),
        HostBuf::U32(v) => {
            let w32: Vec<u32> = want
                .par_iter()
                .with_min_len(PAR_MIN)
                .map(|&x| x as u32)
                .collect();
            check_u32(v, &w32)
        }
        HostBuf::F16(v) => {
            // The f16 poison widens to a NaN that is not the f32 poison:
            // widen it to the f32 poison so the report names it.
            let wide: Vec<f32> = v
                .par_iter()
                .with_min_len(PAR_MIN)
                .map(|h| {
                    if h.to_bits() == crate::host::POISON_F16 {
                        f32::from_bits(POISON_BITS)
                    } else {
                        h.to_f32()
                    }
                })
                .collect();
            match tol {
                // Rounded to f16 first: the f32 compare is then bit-exact
                // on f16 values.
                Tolerance::Exact => {
                    let w16: Vec<f64> = want
                        .par_iter()
                        .with_min_len(PAR_MIN)
                        .map(|&w| half::f16::from_f64(w).to_f64())
                        .collect();
                    check_f32(&wide, &w16, tol)
                }
                Tolerance::RelNorm(_) => check_f32(&wide, want, tol),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(n: usize) -> Vec<f64> {
        (0..n).map(|i| ((i as f64) * 0.37).sin() + 1.5).collect()
    }

    fn as_f32(r: &[f64]) -> Vec<f32> {
        r.iter().map(|&x| x as f32).collect()
    }

    #[test]
    fn exact_match_passes_with_zero_error() {
        let r = reference(1000);
        let c = check_f32(&as_f32(&r), &r, Tolerance::Exact);
        assert!(c.pass, "{c:?}");
        assert_eq!(c.mismatches, 0);
        assert!(c.rel_err < 1e-7, "rounding to f32 only: {}", c.rel_err);
    }

    #[test]
    fn exact_catches_one_wrong_element() {
        let r = reference(1000);
        let mut o = as_f32(&r);
        o[617] = o[618]; // a wrong index
        let c = check_f32(&o, &r, Tolerance::Exact);
        assert!(!c.pass);
        assert_eq!(c.mismatches, 1);
        assert_eq!(c.first_bad, Some(617));
        assert!(c.reason.unwrap().contains("[617]"));
    }

    #[test]
    fn poison_left_in_output_fails_and_is_named() {
        let r = reference(256);
        let mut o = as_f32(&r);
        let mut poisoned = vec![0f32; 256];
        poison_f32(&mut poisoned);
        o[200] = poisoned[200]; // one element skipped by the kernel
        for tol in [Tolerance::Exact, Tolerance::FP32, Tolerance::RelNorm(1.0e9)] {
            let c = check_f32(&o, &r, tol);
            assert!(!c.pass, "{tol:?}");
            assert_eq!(c.non_finite, 1);
            assert_eq!(c.first_bad, Some(200));
            let why = c.reason.unwrap();
            assert!(why.contains("never written"), "{why}");
        }
    }

    #[test]
    fn nan_never_passes_even_with_a_huge_tolerance() {
        let r = reference(64);
        let mut o = as_f32(&r);
        o[3] = f32::NAN;
        assert!(!check_f32(&o, &r, Tolerance::RelNorm(f64::INFINITY)).pass);
        o[3] = f32::INFINITY;
        assert!(!check_f32(&o, &r, Tolerance::RelNorm(f64::INFINITY)).pass);
    }

    #[test]
    fn poison_matches_what_buffers_are_filled_with() {
        use crate::DType;
        let f = HostBuf::poisoned(DType::F32, 1);
        assert_eq!(f.as_f32().unwrap()[0].to_bits(), POISON_BITS);
        assert!(f32::from_bits(POISON_BITS).is_nan());
        let u = HostBuf::poisoned(DType::U32, 1);
        assert_eq!(u.as_u32().unwrap()[0], POISON_U32);
    }

    #[test]
    fn rel_norm_is_relative_error_by_norm() {
        // ref = [3, 4] (norm 5); out = [3, 4.05] -> |err| = 0.05, rel = 0.01.
        let r = [3.0, 4.0];
        let o = [3.0f32, 4.05];
        let c = check_f32(&o, &r, Tolerance::RelNorm(1e-2 + 1e-6));
        assert!(c.pass, "{c:?}");
        assert!((c.rel_err - 0.01).abs() < 1e-6, "{}", c.rel_err);
        assert!((c.max_abs_err - 0.05).abs() < 1e-6);
        let c = check_f32(&o, &r, Tolerance::RelNorm(9e-3));
        assert!(!c.pass);
        assert!(c.reason.unwrap().contains("rel_err"));
    }

    #[test]
    fn fp32_tolerance_accepts_rounding_noise_and_rejects_a_real_error() {
        let r = reference(4096);
        // Noise of a few ulps on every element.
        let noisy: Vec<f32> = r
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = x as f32;
                f32::from_bits(f.to_bits().wrapping_add((i % 3) as u32))
            })
            .collect();
        assert!(check_f32(&noisy, &r, Tolerance::FP32).pass);
        // One element off by 1% of the whole vector's norm.
        let mut bad = as_f32(&r);
        let norm = r.iter().map(|x| x * x).sum::<f64>().sqrt();
        bad[10] += (0.01 * norm) as f32;
        let c = check_f32(&bad, &r, Tolerance::FP32);
        assert!(!c.pass);
        assert!(c.rel_err > 5e-3);
        // The fp16 tolerance lets 1e-3 through but not 1e-1.
        let mut f16ish = as_f32(&r);
        f16ish[0] += (1e-3 * norm) as f32;
        assert!(check_f32(&f16ish, &r, Tolerance::FP16_ACC32).pass);
        f16ish[0] += (1e-1 * norm) as f32;
        assert!(!check_f32(&f16ish, &r, Tolerance::FP16_ACC32).pass);
    }

    /// An f16 output the kernel never wrote is named as such, as an f32
    /// one is (the f16 poison widens to a NaN of other bits).
    #[test]
    fn unwritten_f16_output_is_named_never_written() {
        let want = [1.0, 1.0, 3.0];
        let mut v = vec![half::f16::from_f64(1.0); 3];
        v[2] = half::f16::from_bits(crate::host::POISON_F16);
        for tol in [Tolerance::Exact, Tolerance::RelNorm(1.0)] {
            let c = check_buf(&HostBuf::F16(v.clone()), &want, tol);
            assert!(!c.pass);
            assert_eq!(c.first_bad, Some(2));
            let why = c.reason.unwrap();
            assert!(why.contains("never written"), "{why}");
        }
        // Any other NaN is shown as one.
        v[2] = half::f16::NAN;
        let why = check_buf(&HostBuf::F16(v), &want, Tolerance::Exact)
            .reason
            .unwrap();
        assert!(!why.contains("never written"), "{why}");
    }

    #[test]
    fn length_mismatch_fails() {
        let r = reference(10);
        let c = check_f32(&as_f32(&r)[..9], &r, Tolerance::FP32);
        assert!(!c.pass);
        assert!(c.reason.unwrap().contains("9 elements"));
    }

    #[test]
    fn non_finite_reference_is_a_failure_not_a_pass() {
        let mut r = reference(10);
        r[4] = f64::NAN;
        let c = check_f32(&as_f32(&r), &r, Tolerance::FP32);
        assert!(!c.pass);
        assert!(c.reason.unwrap().contains("reference"));
    }

    #[test]
    fn all_zero_reference_cannot_pass_a_relative_check() {
        let r = vec![0.0; 8];
        let c = check_f32(&[0.0; 8], &r, Tolerance::FP32);
        assert!(!c.pass);
    }

    #[test]
    fn u32_exact_check() {
        let r: Vec<u32> = (0..100u32).map(|i| i.wrapping_mul(2654435761)).collect();
        assert!(check_u32(&r, &r).pass);
        let mut o = r.clone();
        o[99] = POISON_U32;
        let c = check_u32(&o, &r);
        assert!(!c.pass);
        assert_eq!(c.first_bad, Some(99));
        assert!(c.reason.unwrap().contains("never written"));
    }
}
