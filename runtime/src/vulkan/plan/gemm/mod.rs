//! GEMM planning: which of the five GEMM kernels runs an op, with which
//! tiles. The fast kernels need aligned shapes or device features; every
//! request that cannot use one falls back to a kernel that can, so the
//! default plan exists for any shape on any device.
//!
//! Tuning keys: `coopmat` (f16 only) picks the kernel family: 0 the FFMA
//! kernel (`gemm_f16`), 1 the KHR cooperative-matrix kernel with
//! accumulators in shared memory (`gemm_f16_coopmat`, any shape and
//! subgroup size), 2 the NV cooperative-matrix-2 kernel (`gemm_f16_cm2`),
//! 3 the KHR kernel with register accumulators (`gemm_f16_cmreg`). f32 has
//! `v4`: 1 the vec4, double-buffered kernel (`gemm_f32_v4`), 0 the scalar
//! tiled one (`gemm_f32`). The rest are tile sizes, except `probe=1` for
//! `gemm_f16_cmreg`: a diagnostic that skips the k loop's loads (wrong
//! results, so it can only be asked for explicitly, e.g. through a tuning
//! cache entry; the checks then fail the gate) to measure the multiply
//! loop's own ceiling (docs/performance.md).

use super::{bad, Dispatch, Limits, Plan, Shader, MAX_GROUPS};
use crate::{Knob, Op, RuntimeError, Tuning};

/// `gemm_f16_cm2` default block (bm, bn, bk, workgroup size): the fastest
/// of its sweep on the H200 (2026-11-21, driver 580.159.04).
const CM2_DEFAULT: (u32, u32, u32, u32) = (128, 256, 32, 256);

/// `gemm_f16_cm2` k slices per unrolled loop trip.
const CM2_UNROLL_K: u32 = 4;

/// `gemm_f16_cmreg` default (bm, bn, bk, wg, sgn, stages, direct): 2 x 2
/// subgroups of 32, each with a 64 x 64 block of C (16 accumulator tiles),
/// 64-deep slices in one stage (36 KiB of shared memory) copied straight to
/// shared memory. The fastest at 4096 and within 4% of the fastest at 8192
/// in the H200 sweep (2026-11-22, docs/performance.md); every variant of the
/// sweep was within 25% of it.
const CMREG_DEFAULT: (u32, u32, u32, u32, u32, u32, u32) = (128, 128, 64, 128, 2, 1, 1);

/// Scalar tiled kernel defaults: 64x64 blocks, 16-deep k slices, 4x4
/// outputs per invocation (256 invocations). Good on NVIDIA, RDNA and
/// lavapipe alike.
const GEMM_DEFAULT: [(Knob, u32); 5] = [
    (Knob::Bm, 64),
    (Knob::Bn, 64),
    (Knob::Bk, 16),
    (Knob::Tm, 4),
    (Knob::Tn, 4),
];

/// For large products (both sides >= 1024): 128x128 blocks, 8x8 outputs per
/// invocation, twice the arithmetic per shared-memory load.
const GEMM_LARGE: [(Knob, u32); 5] = [
    (Knob::Bm, 128),
    (Knob::Bn, 128),
    (Knob::Bk, 8),
    (Knob::Tm, 8),
    (Knob::Tn, 8),
];

/// Product of tile sizes in u64, saturating: tile sizes come from tuning
/// caches and flags, so arithmetic on them must never wrap (a wrapped shared
/// memory size once passed the limit check and crashed the driver); a
/// saturated product only has to compare as "too large" against a u32 limit.
fn prod(xs: &[u32]) -> u64 {
    xs.iter().fold(1u64, |a, &x| a.saturating_mul(u64::from(x)))
}

/// Largest `gemm_f16_cm2` tile side: the biggest block its sweep measured.
/// Workgroup-scope matrices have no shared-memory formula to check against,
/// so the planner bounds them itself rather than hand the driver a
/// 2^30-wide accumulator.
const CM2_MAX_TILE: u32 = 256;

/// One GEMM to plan: the op, its shape, the tuning asked for and the
/// device's limits. Every kernel family's planner takes it.
#[derive(Clone, Copy)]
struct Req<'a> {
    op: &'a Op,
    m: usize,
    n: usize,
    k: usize,
    t: &'a Tuning,
    lim: &'a Limits,
}

fn large(m: usize, n: usize) -> bool {
    m >= 1024 && n >= 1024
}

fn one_dispatch(r: &Req, bm: u32, bn: u32) -> Result<Dispatch, RuntimeError> {
    let Req { op, m, n, k, .. } = *r;
    let (gx, gy) = (
        (n as u64).div_ceil(u64::from(bn)),
        (m as u64).div_ceil(u64::from(bm)),
    );
    let fits = |v: u64| u32::try_from(v).ok().filter(|v| *v <= MAX_GROUPS);
    let (Some(x), Some(y)) = (fits(gx), fits(gy)) else {
        return Err(RuntimeError::Unsupported(format!(
            "{op}: needs [{gx}, {gy}, 1] workgroups, over {MAX_GROUPS}"
        )));
    };
    let dim = |v: usize| {
        u32::try_from(v).map_err(|_| bad(format!("{op}: {v} does not fit the kernels' 32 bits")))
    };
    Ok(Dispatch {
        push: vec![dim(m)?, dim(n)?, dim(k)?],
        groups: [x, y, 1],
        ranges: vec![None; 3],
    })
}

fn plan_of(shader: Shader, spec: Vec<u32>, tuning: Tuning, d: Dispatch) -> Plan {
    Plan {
        shader,
        per_dispatch: false,
        spec,
        tuning,
        aux: vec![],
        dispatches: vec![d],
        then: vec![],
    }
}

pub fn plan(
    op: &Op,
    m: usize,
    n: usize,
    k: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    let r = &Req {
        op,
        m,
        n,
        k,
        t,
        lim,
    };
    let f16 = matches!(op, Op::GemmF16 { .. });
    if !f16 {
        super::check_keys(
            t,
            &[Knob::V4, Knob::Bm, Knob::Bn, Knob::Bk, Knob::Tm, Knob::Tn],
        )?;
        return match t.get(Knob::V4) {
            Some(1) => v4(r),
            Some(0) => scalar(r, false),
            Some(v) => Err(bad(format!("v4={v}: must be 0 or 1"))),
            // The vec4 kernel wherever the shape allows it.
            None => v4(r).or_else(|_| scalar(r, false)),
        };
    }
    let coop_possible = lim.coop_f16.is_some() && lim.f16_storage;
    match t.get(Knob::Coopmat) {
        Some(0) => scalar(r, coop_possible),
        Some(1) if coop_possible => coop_shared(r),
        Some(2) if lim.coop2 => cm2(r),
        Some(3) if coop_possible => cmreg(r),
        Some(v @ 1..=3) => Err(bad(format!(
            "coopmat={v}: the device has no {}",
            if v == 2 {
                "VK_NV_cooperative_matrix2"
            } else {
                "f16 x f16 -> f32 cooperative matrix"
            }
        ))),
        Some(v) => Err(bad(format!("coopmat={v}: must be 0..=3"))),
        None => {
            // Defaults, fastest first (docs/performance.md has the sweep).
            if !t.0.is_empty() {
                return scalar(r, coop_possible);
            }
            if coop_possible {
                if let Ok(p) = cmreg(r) {
                    return Ok(p);
                }
            }
            if lim.coop2 {
                return cm2(r);
            }
            if coop_possible {
                return coop_shared(r);
            }
            scalar(r, false)
        }
    }
}

/// `gemm_f32` / `gemm_f16` (FFMA, scalar shared memory, any shape).
fn scalar(r: &Req, tag_coop: bool) -> Result<Plan, RuntimeError> {
    let Req {
        op, m, n, t, lim, ..
    } = *r;
    let f16 = matches!(op, Op::GemmF16 { .. });
    // `coopmat` picks among the f16 kernels, `v4` among the f32 ones.
    let family = if f16 { Knob::Coopmat } else { Knob::V4 };
    super::check_keys(
        t,
        &[Knob::Bm, Knob::Bn, Knob::Bk, Knob::Tm, Knob::Tn, family],
    )?;
    let use_large = large(m, n) && lim.max_invocations >= 256 && lim.max_shared >= 8192;
    let defaults = if use_large && !t.0.keys().any(|k| *k != family) {
        GEMM_LARGE
    } else {
        GEMM_DEFAULT
    };
    let mut eff = Tuning::default();
    for (key, d) in defaults {
        eff.0.insert(key, t.get(key).unwrap_or(d));
    }
    let g = |key: Knob| eff.get(key).unwrap();
    let (bm, bn, bk, tm, tn) = (
        g(Knob::Bm),
        g(Knob::Bn),
        g(Knob::Bk),
        g(Knob::Tm),
        g(Knob::Tn),
    );
    if [bm, bn, bk, tm, tn].contains(&0) || bm % tm != 0 || bn % tn != 0 {
        return Err(bad(format!(
            "gemm tiles {eff}: need bm % tm == 0, bn % tn == 0, all > 0"
        )));
    }
    let threads = prod(&[bm / tm, bn / tn]);
    let accumulators = prod(&[tm, tn]);
    let threads = match u32::try_from(threads) {
        Ok(v) if v <= lim.max_invocations && accumulators <= 64 => v,
        _ => {
            return Err(bad(format!(
                "gemm tiles {eff}: {threads} invocations (max {}), {accumulators} accumulators \
                 (max 64)",
                lim.max_invocations,
            )))
        }
    };
    let shared = (u64::from(bm) + 1 + u64::from(bn)).saturating_mul(prod(&[bk, 4]));
    if shared > u64::from(lim.max_shared) {
        return Err(bad(format!(
            "gemm tiles {eff}: {shared} bytes of shared memory (max {})",
            lim.max_shared
        )));
    }
    let eff = if tag_coop {
        eff.with(Knob::Coopmat, 0)
    } else if !f16 {
        eff.with(Knob::V4, 0)
    } else {
        eff
    };
    let d = one_dispatch(r, bm, bn)?;
    Ok(plan_of(
        if f16 {
            Shader::GemmF16
        } else {
            Shader::GemmF32
        },
        vec![bm, bn, bk, tm, tn, threads],
        eff,
        d,
    ))
}

/// `gemm_f32_v4`: N % 4 == 0 and K % 4 == 0 (vec4 rows); any M.
fn v4(r: &Req) -> Result<Plan, RuntimeError> {
    let Req {
        m, n, k, t, lim, ..
    } = *r;
    if t.get(Knob::Tm).is_some() || t.get(Knob::Tn).is_some() {
        return Err(bad(
            "gemm_f32_v4 has 8x8 outputs per invocation: tm/tn do not apply".into(),
        ));
    }
    let (dm, dn) = if large(m, n) { (128, 128) } else { (64, 64) };
    let (bm, bn, bk) = (
        t.get(Knob::Bm).unwrap_or(dm),
        t.get(Knob::Bn).unwrap_or(dn),
        t.get(Knob::Bk).unwrap_or(8),
    );
    if !n.is_multiple_of(4) || !k.is_multiple_of(4) {
        return Err(bad(format!(
            "gemm_f32_v4 needs n and k multiples of 4 (n={n}, k={k})"
        )));
    }
    if bm == 0 || bn == 0 || bk == 0 || bm % 8 != 0 || bn % 8 != 0 || bk % 4 != 0 {
        return Err(bad(format!(
            "gemm_f32_v4 tiles bm={bm} bn={bn} bk={bk}: bm, bn multiples of 8, bk of 4"
        )));
    }
    // bm, bn >= 8 here, so wg >= 1.
    let wg = prod(&[bm / 8, bn / 8]);
    let shared = prod(&[2, bk]).saturating_mul(
        (u64::from(bm / 4) + 1)
            .saturating_mul(16)
            .saturating_add(prod(&[bn, 4])),
    );
    if wg > u64::from(lim.max_invocations)
        || !(prod(&[bm, bk]) / 4).is_multiple_of(wg)
        || !(prod(&[bk, bn]) / 4).is_multiple_of(wg)
        || shared > u64::from(lim.max_shared)
    {
        return Err(bad(format!(
            "gemm_f32_v4 tiles bm={bm} bn={bn} bk={bk}: {wg} invocations (max {}), {shared} bytes \
             of shared memory (max {}), and each slice must split evenly over the invocations",
            lim.max_invocations, lim.max_shared
        )));
    }
    let wg = wg as u32; // <= max_invocations, checked above
    let d = one_dispatch(r, bm, bn)?;
    let tuning = Tuning::of(&[
        (Knob::V4, 1),
        (Knob::Bm, bm),
        (Knob::Bn, bn),
        (Knob::Bk, bk),
    ]);
    Ok(plan_of(Shader::GemmF32V4, vec![bm, bn, bk, wg], tuning, d))
}

/// `gemm_f16_cmreg`: aligned shapes, 16x16x16 f16 tiles, a fixed subgroup size.
fn cmreg(r: &Req) -> Result<Plan, RuntimeError> {
    let Req {
        op,
        m,
        n,
        k,
        t,
        lim,
    } = *r;
    super::check_keys(
        t,
        &[
            Knob::Coopmat,
            Knob::Bm,
            Knob::Bn,
            Knob::Bk,
            Knob::Wg,
            Knob::Sgn,
            Knob::Stages,
            Knob::Direct,
            Knob::GroupM,
            Knob::Probe,
        ],
    )?;
    let sg = lim.subgroup_size.ok_or_else(|| {
        RuntimeError::Unsupported("gemm_f16_cmreg needs a fixed subgroup size".into())
    })?;
    if !lim.coop16 {
        return Err(RuntimeError::Unsupported(
            "gemm_f16_cmreg needs a 16x16x16 f16 cooperative-matrix shape".into(),
        ));
    }
    let g = |key: Knob, d: u32| t.get(key).unwrap_or(d);
    let (bm, bn, bk, wg, sgn) = (
        g(Knob::Bm, CMREG_DEFAULT.0),
        g(Knob::Bn, CMREG_DEFAULT.1),
        g(Knob::Bk, CMREG_DEFAULT.2),
        g(Knob::Wg, CMREG_DEFAULT.3),
        g(Knob::Sgn, CMREG_DEFAULT.4),
    );
    let (stages, direct) = (
        g(Knob::Stages, CMREG_DEFAULT.5),
        g(Knob::Direct, CMREG_DEFAULT.6),
    );
    let group_m = g(Knob::GroupM, 0);
    let probe = g(Knob::Probe, 0);
    if !(1..=2).contains(&stages) || direct > 1 || group_m > 64 || probe > 1 {
        return Err(bad(format!(
            "gemm_f16_cmreg stages={stages} direct={direct} group_m={group_m} probe={probe}: \
             stages 1 or 2, direct 0 or 1, group_m 0..=64, probe 0 or 1"
        )));
    }
    let tiles_ok = [bm, bn, bk].iter().all(|v| *v > 0 && v % 16 == 0)
        && sg > 0
        && wg % sg == 0
        && sgn > 0
        && (wg / sg) % sgn == 0
        && wg <= lim.max_invocations;
    let sgm = if tiles_ok { wg / sg / sgn } else { 0 };
    let shared = prod(&[stages, 16])
        .saturating_mul(prod(&[bm, bk / 8 + 1]).saturating_add(prod(&[bk, bn / 8 + 1])));
    // Every divisor below is checked non-zero first (`||` stops at the first failure).
    if !tiles_ok
        || sgm == 0
        || u64::from(bm) % prod(&[sgm, 16]) != 0
        || u64::from(bn) % prod(&[sgn, 16]) != 0
        || !(prod(&[bm, bk]) / 8).is_multiple_of(u64::from(wg))
        || !(prod(&[bk, bn]) / 8).is_multiple_of(u64::from(wg))
        || prod(&[bm / sgm / 16, bn / sgn / 16]) > 32
        || shared > u64::from(lim.max_shared)
    {
        return Err(bad(format!(
            "gemm_f16_cmreg tiles bm={bm} bn={bn} bk={bk} wg={wg} sgn={sgn} (subgroup {sg}): \
             tiles multiples of 16 split evenly over the subgroups, at most 32 accumulator \
             tiles per subgroup, {shared} bytes of shared memory (max {})",
            lim.max_shared
        )));
    }
    if !m.is_multiple_of(bm as usize)
        || !n.is_multiple_of(bn as usize)
        || !k.is_multiple_of(bk as usize)
    {
        return Err(RuntimeError::Unsupported(format!(
            "gemm_f16_cmreg needs m % {bm}, n % {bn}, k % {bk} == 0 ({op})"
        )));
    }
    let d = one_dispatch(r, bm, bn)?;
    let tuning = Tuning::of(&[
        (Knob::Coopmat, 3),
        (Knob::Bm, bm),
        (Knob::Bn, bn),
        (Knob::Bk, bk),
        (Knob::Wg, wg),
        (Knob::Sgn, sgn),
        (Knob::Stages, stages),
        (Knob::Direct, direct),
    ]);
    // Optional keys only when set: entries written before they existed still match.
    let tuning = [(Knob::GroupM, group_m), (Knob::Probe, probe)]
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .fold(tuning, |t, (k, v)| t.with(k, v));
    Ok(plan_of(
        Shader::GemmF16Cmreg,
        vec![bm, bn, bk, wg, sgn, sg, stages, direct, group_m, probe],
        tuning,
        d,
    ))
}

/// `gemm_f16_cm2`: VK_NV_cooperative_matrix2, any shape.
fn cm2(r: &Req) -> Result<Plan, RuntimeError> {
    let Req { t, lim, .. } = *r;
    super::check_keys(
        t,
        &[
            Knob::Bm,
            Knob::Bn,
            Knob::Bk,
            Knob::Wg,
            Knob::Uk,
            Knob::Coopmat,
        ],
    )?;
    let uk = t.get(Knob::Uk).unwrap_or(CM2_UNROLL_K);
    if !(1..=8).contains(&uk) {
        return Err(bad(format!("uk={uk}: must be 1..=8")));
    }
    let g = |key: Knob, d: u32| t.get(key).unwrap_or(d);
    let (bm, bn, bk, wg) = (
        g(Knob::Bm, CM2_DEFAULT.0),
        g(Knob::Bn, CM2_DEFAULT.1),
        g(Knob::Bk, CM2_DEFAULT.2),
        g(Knob::Wg, CM2_DEFAULT.3),
    );
    if [bm, bn, bk]
        .iter()
        .any(|v| *v == 0 || v % 16 != 0 || *v > CM2_MAX_TILE)
        || wg == 0
        || wg % 32 != 0
        || wg > lim.max_invocations
    {
        return Err(bad(format!(
            "gemm_f16_cm2 tiles bm={bm} bn={bn} bk={bk} wg={wg}: tiles multiples of 16 up to \
             {CM2_MAX_TILE}, wg of 32 up to {}",
            lim.max_invocations
        )));
    }
    let d = one_dispatch(r, bm, bn)?;
    let tuning = Tuning::of(&[
        (Knob::Coopmat, 2),
        (Knob::Uk, uk),
        (Knob::Bm, bm),
        (Knob::Bn, bn),
        (Knob::Bk, bk),
        (Knob::Wg, wg),
    ]);
    Ok(plan_of(
        Shader::GemmF16Cm2,
        vec![bm, bn, bk, wg, uk],
        tuning,
        d,
    ))
}

/// `gemm_f16_coopmat`: KHR cooperative matrix, accumulators in shared memory, any shape.
fn coop_shared(r: &Req) -> Result<Plan, RuntimeError> {
    let Req { t, lim, .. } = *r;
    super::check_keys(t, &[Knob::Coopmat])?;
    let (cm, cn, ck) = lim.coop_f16.expect("checked by the caller");
    let (bm, bn, bk, wg) = (64u32, 64u32, 32u32, 128u32);
    let shared = bm * bk * 2 + bk * bn * 2 + bm * bn * 4;
    if shared > lim.max_shared || wg > lim.max_invocations {
        return Err(RuntimeError::Unsupported(format!(
            "gemm_f16_coopmat needs {shared} bytes of shared memory (max {})",
            lim.max_shared
        )));
    }
    let d = one_dispatch(r, bm, bn)?;
    Ok(plan_of(
        Shader::GemmF16Coopmat,
        vec![bm, bn, bk, cm, cn, wg, ck],
        Tuning::of(&[(Knob::Coopmat, 1)]),
        d,
    ))
}

/// Tunings worth sweeping (pushed through `push`, which keeps the valid ones).
pub fn candidates(op: &Op, lim: &Limits, push: &mut dyn FnMut(Tuning)) {
    let f16 = matches!(op, Op::GemmF16 { .. });
    if f16 {
        // (bm, bn, bk, wg, sgn, stages, direct, group_m)
        for (bm, bn, bk, wg, sgn, stages, direct, group_m) in [
            (128, 128, 64, 128, 2, 1, 1, 0),
            (128, 128, 64, 128, 2, 1, 0, 0),
            (128, 128, 64, 128, 2, 1, 1, 8),
            (128, 128, 32, 128, 2, 2, 0, 0),
            (128, 128, 32, 128, 2, 2, 1, 0),
            (128, 256, 32, 256, 4, 1, 0, 0),
            (256, 128, 32, 256, 2, 1, 0, 0),
            (64, 128, 32, 64, 2, 2, 0, 0),
            // 64x32 per subgroup: half the accumulators, more workgroups per SM.
            (128, 64, 32, 128, 2, 2, 0, 0),
        ] {
            push(Tuning::of(&[
                (Knob::Coopmat, 3),
                (Knob::Bm, bm),
                (Knob::Bn, bn),
                (Knob::Bk, bk),
                (Knob::Wg, wg),
                (Knob::Sgn, sgn),
                (Knob::Stages, stages),
                (Knob::Direct, direct),
                (Knob::GroupM, group_m),
            ]));
        }
    }
    if lim.coop2 && f16 {
        for (bm, bn, bk, wg, uk) in [
            (128, 256, 32, 256, 1),
            (128, 256, 32, 256, 2),
            (128, 256, 32, 256, 4),
            (128, 128, 32, 256, 4),
            (256, 128, 32, 256, 4),
            (64, 128, 32, 128, 4),
        ] {
            push(Tuning::of(&[
                (Knob::Coopmat, 2),
                (Knob::Bm, bm),
                (Knob::Bn, bn),
                (Knob::Bk, bk),
                (Knob::Wg, wg),
                (Knob::Uk, uk),
            ]));
        }
    }
    if f16 {
        push(Tuning::of(&[(Knob::Coopmat, 1)]));
    } else {
        for (bm, bn, bk) in [
            (128, 128, 8),
            (128, 128, 16),
            (64, 64, 8),
            (128, 64, 8),
            (64, 128, 16),
        ] {
            push(Tuning::of(&[
                (Knob::V4, 1),
                (Knob::Bm, bm),
                (Knob::Bn, bn),
                (Knob::Bk, bk),
            ]));
        }
    }
    let coop = f16 && lim.coop_f16.is_some() && lim.f16_storage;
    for (bm, bn, bk, tm, tn) in [
        (64, 64, 16, 4, 4),
        (128, 128, 8, 8, 8),
        (64, 64, 8, 4, 4),
        (32, 32, 16, 2, 2),
    ] {
        let t = Tuning::of(&[
            (Knob::Bm, bm),
            (Knob::Bn, bn),
            (Knob::Bk, bk),
            (Knob::Tm, tm),
            (Knob::Tn, tn),
        ]);
        push(if coop {
            t.with(Knob::Coopmat, 0)
        } else if !f16 {
            t.with(Knob::V4, 0)
        } else {
            t
        });
    }
}

#[cfg(test)]
mod tests;
