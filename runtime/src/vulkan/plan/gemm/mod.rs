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
//!
//! `linear_f16` ([`linear`]) is the same tiled product with W stored
//! `[rows][cols]` (B transposed): it plans through the same tile checks,
//! dispatch sizing and sweeps here, giving only its own kernels and names.

use super::{bad, Dispatch, Limits, Plan, Shader, MAX_GROUPS};
use crate::error::RuntimeError;
use crate::tuning::{Knob, Tuning};
use greta_kernels::Op;

pub mod linear;

/// Cooperative-matrix-2 tile keys (then `uk`, k slices per unrolled loop
/// trip), and `gemm_f16_cm2`'s default (bm, bn, bk, workgroup size, uk):
/// the fastest of its sweep on the H200 (2026-11-21, driver 580.159.04).
const CM2_KEYS: [Knob; 4] = [Knob::Bm, Knob::Bn, Knob::Bk, Knob::Wg];
const GEMM_CM2: [u32; 5] = [128, 256, 32, 256, 4];

/// Register-accumulator cooperative-matrix tile keys (`gemm_f16_cmreg`,
/// `linear_f16_cm`): block sides, workgroup size, subgroups along n.
const CM_KEYS: [Knob; 5] = [Knob::Bm, Knob::Bn, Knob::Bk, Knob::Wg, Knob::Sgn];

/// `gemm_f16_cmreg` keys (`CM_KEYS`, then stages and direct) and defaults:
/// 2 x 2 subgroups of 32, each with a 64 x 64 block of C (16 accumulator
/// tiles), 64-deep slices in one stage (36 KiB of shared memory) copied
/// straight to shared memory. The fastest at 4096 and within 4% of the
/// fastest at 8192 in the H200 sweep (2026-11-22, docs/performance.md);
/// every variant of the sweep was within 25% of it.
const CMREG_KEYS: [Knob; 7] = [
    Knob::Bm,
    Knob::Bn,
    Knob::Bk,
    Knob::Wg,
    Knob::Sgn,
    Knob::Stages,
    Knob::Direct,
];
const CMREG_DEFAULT: [u32; 7] = [128, 128, 64, 128, 2, 1, 1];

/// FFMA tiled kernel keys (`gemm_f32`, `gemm_f16`, `linear_f16`): block
/// rows, columns and depth, outputs per invocation along m and n.
const FFMA_KEYS: [Knob; 5] = [Knob::Bm, Knob::Bn, Knob::Bk, Knob::Tm, Knob::Tn];

/// FFMA kernel defaults: 64x64 blocks, 16-deep k slices, 4x4 outputs per
/// invocation (256 invocations). Good on NVIDIA, RDNA and lavapipe alike.
const FFMA_DEFAULT: [u32; 5] = [64, 64, 16, 4, 4];

/// For large products (both sides >= 1024): 128x128 blocks, 8x8 outputs per
/// invocation, twice the arithmetic per shared-memory load.
const FFMA_LARGE: [u32; 5] = [128, 128, 8, 8, 8];

/// FFMA tiles worth sweeping, as `FFMA_KEYS`.
const FFMA_SWEEP: [[u32; 5]; 4] = [
    [64, 64, 16, 4, 4],
    [128, 128, 8, 8, 8],
    [64, 64, 8, 4, 4],
    [32, 32, 16, 2, 2],
];

/// `gemm_f32_v4` tile keys (its outputs per invocation are fixed).
const V4_KEYS: [Knob; 3] = [Knob::Bm, Knob::Bn, Knob::Bk];

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

/// One matrix product to plan, `[m][k] x [k][n]` (however the op lays out
/// its operands): the op, its shape and what its messages call the three
/// sizes, the tuning asked for and the device's limits. Every kernel
/// family's planner takes it.
#[derive(Clone, Copy)]
struct Req<'a> {
    op: &'a Op,
    m: usize,
    n: usize,
    k: usize,
    /// The op's names for m, n and k (`gemm`: m, n, k; `linear_f16`:
    /// tokens, rows, cols).
    dims: [&'static str; 3],
    t: &'a Tuning,
    lim: &'a Limits,
}

fn large(m: usize, n: usize) -> bool {
    m >= 1024 && n >= 1024
}

/// The tuning's value of each of `keys`, else the default at its place.
fn tiles<const N: usize>(t: &Tuning, keys: [Knob; N], defaults: [u32; N]) -> [u32; N] {
    let mut out = defaults;
    for (v, key) in out.iter_mut().zip(keys) {
        *v = t.get(key).unwrap_or(*v);
    }
    out
}

/// A tuning of the `family` pairs and each of `keys` with its value.
fn keyed(family: &[(Knob, u32)], keys: &[Knob], values: &[u32]) -> Tuning {
    let mut t = Tuning::of(family);
    t.0.extend(keys.iter().copied().zip(values.iter().copied()));
    t
}

/// The knob naming the FFMA kernel within its op's families: `coopmat=0`
/// where the f16 op has a cooperative-matrix kernel too, `v4=0` for f32,
/// none for f16 without one.
fn ffma_family(f16: bool, coop: bool) -> &'static [(Knob, u32)] {
    if coop {
        &[(Knob::Coopmat, 0)]
    } else if !f16 {
        &[(Knob::V4, 0)]
    } else {
        &[]
    }
}

/// One dispatch of `bm` x `bn` blocks over the product, push constants
/// `[m, n, k]`, every buffer bound whole.
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
        wave: None,
    }
}

/// The FFMA kernels' tiles (`FFMA_KEYS`, each from the tuning or
/// `defaults`) as the effective tuning and values, checked for the
/// divisions the kernel makes; then its invocations and accumulators
/// (`kernel` names it in the message).
fn ffma_tiles(
    t: &Tuning,
    kernel: &str,
    defaults: [u32; 5],
) -> Result<(Tuning, [u32; 5], u64, u64), RuntimeError> {
    let v = tiles(t, FFMA_KEYS, defaults);
    let eff = keyed(&[], &FFMA_KEYS, &v);
    let [bm, bn, _, tm, tn] = v;
    if v.contains(&0) || bm % tm != 0 || bn % tn != 0 {
        return Err(bad(format!(
            "{kernel} tiles {eff}: need bm % tm == 0, bn % tn == 0, all > 0"
        )));
    }
    Ok((eff, v, prod(&[bm / tm, bn / tn]), prod(&[tm, tn])))
}

/// The register-accumulator cooperative-matrix kernels' tiles (`CM_KEYS`
/// values, subgroup size `sg`, `shared` bytes of shared memory): tiles
/// multiples of 16 split evenly over the subgroups, slices over the
/// invocations, at most 32 accumulator tiles per subgroup; then the shape
/// a multiple of the block (`kernel` names it in the messages).
fn cm_tiles(r: &Req, kernel: &str, v: [u32; 5], sg: u32, shared: u64) -> Result<(), RuntimeError> {
    let Req {
        op,
        m,
        n,
        k,
        dims: [dm, dn, dk],
        lim,
        ..
    } = *r;
    let [bm, bn, bk, wg, sgn] = v;
    let tiles_ok = [bm, bn, bk].iter().all(|v| *v > 0 && v % 16 == 0)
        && sg > 0
        && wg % sg == 0
        && sgn > 0
        && (wg / sg).is_multiple_of(sgn)
        && wg <= lim.max_invocations;
    let sgm = if tiles_ok { wg / sg / sgn } else { 0 };
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
            "{kernel} tiles bm={bm} bn={bn} bk={bk} wg={wg} sgn={sgn} (subgroup {sg}): \
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
            "{kernel} needs {dm} % {bm}, {dn} % {bn}, {dk} % {bk} == 0 ({op})"
        )));
    }
    Ok(())
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
        dims: ["m", "n", "k"],
        t,
        lim,
    };
    let f16 = matches!(op, Op::GemmF16 { .. });
    if !f16 {
        super::check_keys(t, &[&[Knob::V4][..], &FFMA_KEYS].concat())?;
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
    super::check_keys(t, &[&FFMA_KEYS[..], &[family]].concat())?;
    let use_large = large(m, n) && lim.max_invocations >= 256 && lim.max_shared >= 8192;
    let defaults = if use_large && !t.0.keys().any(|k| *k != family) {
        FFMA_LARGE
    } else {
        FFMA_DEFAULT
    };
    let (eff, [bm, bn, bk, tm, tn], threads, accumulators) = ffma_tiles(t, "gemm", defaults)?;
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
    let mut eff = eff;
    eff.0.extend(ffma_family(f16, tag_coop).iter().copied());
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
    let d = if large(m, n) { 128 } else { 64 };
    let [bm, bn, bk] = tiles(t, V4_KEYS, [d, d, 8]);
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
    let tuning = keyed(&[(Knob::V4, 1)], &V4_KEYS, &[bm, bn, bk]);
    Ok(plan_of(Shader::GemmF32V4, vec![bm, bn, bk, wg], tuning, d))
}

/// `gemm_f16_cmreg`: aligned shapes, 16x16x16 f16 tiles, a fixed subgroup size.
fn cmreg(r: &Req) -> Result<Plan, RuntimeError> {
    let Req { t, lim, .. } = *r;
    super::check_keys(
        t,
        &[
            &[Knob::Coopmat][..],
            &CMREG_KEYS,
            &[Knob::GroupM, Knob::Probe],
        ]
        .concat(),
    )?;
    let sg = lim.subgroup_size.ok_or_else(|| {
        RuntimeError::Unsupported("gemm_f16_cmreg needs a fixed subgroup size".into())
    })?;
    if !lim.coop16 {
        return Err(RuntimeError::Unsupported(
            "gemm_f16_cmreg needs a 16x16x16 f16 cooperative-matrix shape".into(),
        ));
    }
    let v = tiles(t, CMREG_KEYS, CMREG_DEFAULT);
    let [bm, bn, bk, wg, sgn, stages, direct] = v;
    let group_m = t.get(Knob::GroupM).unwrap_or(0);
    let probe = t.get(Knob::Probe).unwrap_or(0);
    if !(1..=2).contains(&stages) || direct > 1 || group_m > 64 || probe > 1 {
        return Err(bad(format!(
            "gemm_f16_cmreg stages={stages} direct={direct} group_m={group_m} probe={probe}: \
             stages 1 or 2, direct 0 or 1, group_m 0..=64, probe 0 or 1"
        )));
    }
    let shared = prod(&[stages, 16])
        .saturating_mul(prod(&[bm, bk / 8 + 1]).saturating_add(prod(&[bk, bn / 8 + 1])));
    cm_tiles(r, "gemm_f16_cmreg", [bm, bn, bk, wg, sgn], sg, shared)?;
    let d = one_dispatch(r, bm, bn)?;
    let tuning = keyed(&[(Knob::Coopmat, 3)], &CMREG_KEYS, &v);
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
    cm2_tiles(
        r,
        &Cm2Kernel {
            shader: Shader::GemmF16Cm2,
            family: 2,
            defaults: GEMM_CM2,
            group_m: None,
        },
    )
}

/// A VK_NV_cooperative_matrix2 kernel's planning facts: its spec constants
/// are bm, bn, bk, wg, uk, then group_m where it has one.
struct Cm2Kernel {
    shader: Shader,
    /// Its `coopmat` value.
    family: u32,
    /// bm, bn, bk, wg, uk.
    defaults: [u32; 5],
    /// Its default `group_m` where it orders its blocks by that key (spec
    /// constant 5; then the tuning always names it).
    group_m: Option<u32>,
}

/// A VK_NV_cooperative_matrix2 kernel (`gemm_f16_cm2`, `linear_f16_cm2`),
/// any shape, tagged `coopmat=family`.
fn cm2_tiles(r: &Req, k: &Cm2Kernel) -> Result<Plan, RuntimeError> {
    let Req { t, lim, .. } = *r;
    let keys: &[Knob] = if k.group_m.is_some() {
        &[Knob::Uk, Knob::Coopmat, Knob::GroupM]
    } else {
        &[Knob::Uk, Knob::Coopmat]
    };
    super::check_keys(t, &[&CM2_KEYS[..], keys].concat())?;
    let uk = t.get(Knob::Uk).unwrap_or(k.defaults[4]);
    if !(1..=8).contains(&uk) {
        return Err(bad(format!("uk={uk}: must be 1..=8")));
    }
    let group_m = t.get(Knob::GroupM).or(k.group_m).unwrap_or(0);
    if group_m > 64 {
        return Err(bad(format!("group_m={group_m}: must be 0..=64")));
    }
    let d = &k.defaults;
    let v = tiles(t, CM2_KEYS, [d[0], d[1], d[2], d[3]]);
    let [bm, bn, bk, wg] = v;
    if [bm, bn, bk]
        .iter()
        .any(|v| *v == 0 || v % 16 != 0 || *v > CM2_MAX_TILE)
        || wg == 0
        || wg > lim.max_invocations
    {
        return Err(bad(format!(
            "{} tiles bm={bm} bn={bn} bk={bk} wg={wg}: tiles multiples of 16 up to \
             {CM2_MAX_TILE}, wg up to {}",
            k.shader.name(),
            lim.max_invocations
        )));
    }
    // Only where the driver lists the workgroup size with granularities
    // the tiles are multiples of. The H200's driver lists 32, 64, 128 and
    // 256 invocations (580.159.04); a kernel of 192 planned before this
    // check computed NaNs and wrong values at every tile tried
    // (linear_f16_cm2 192x128 and 128x192, 2026-11-30, caught by the
    // layer's check).
    let listed = lim.coop2_workgroups.iter().any(|f| {
        f.workgroup == wg && bm % f.m.max(1) == 0 && bn % f.n.max(1) == 0 && bk % f.k.max(1) == 0
    });
    if !listed {
        return Err(RuntimeError::Unsupported(format!(
            "{} tiles bm={bm} bn={bn} bk={bk} wg={wg}: the driver lists no workgroup-scope \
             f16 matrices at that workgroup size and granularity ({})",
            k.shader.name(),
            if lim.coop2_workgroups.is_empty() {
                "it lists none".to_string()
            } else {
                lim.coop2_workgroups
                    .iter()
                    .map(|f| format!("{} invocations: {}x{}x{}", f.workgroup, f.m, f.n, f.k))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )));
    }
    let d = one_dispatch(r, bm, bn)?;
    let mut tuning = keyed(&[(Knob::Coopmat, k.family), (Knob::Uk, uk)], &CM2_KEYS, &v);
    let mut spec = vec![bm, bn, bk, wg, uk];
    if k.group_m.is_some() {
        spec.push(group_m);
        tuning = tuning.with(Knob::GroupM, group_m);
    }
    Ok(plan_of(k.shader, spec, tuning, d))
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

/// Pushes a tuning of `family` and `keys` for each row of `sweep`.
fn sweep<const N: usize>(
    push: &mut dyn FnMut(Tuning),
    family: &[(Knob, u32)],
    keys: &[Knob],
    sweep: &[[u32; N]],
) {
    for row in sweep {
        push(keyed(family, keys, row));
    }
}

/// Tunings worth sweeping (pushed through `push`, which keeps the valid ones).
pub fn candidates(op: &Op, lim: &Limits, push: &mut dyn FnMut(Tuning)) {
    let f16 = matches!(op, Op::GemmF16 { .. });
    if f16 {
        let keys = [&CMREG_KEYS[..], &[Knob::GroupM]].concat();
        // bm, bn, bk, wg, sgn, stages, direct, group_m
        sweep(
            push,
            &[(Knob::Coopmat, 3)],
            &keys,
            &[
                [128, 128, 64, 128, 2, 1, 1, 0],
                [128, 128, 64, 128, 2, 1, 0, 0],
                [128, 128, 64, 128, 2, 1, 1, 8],
                [128, 128, 32, 128, 2, 2, 0, 0],
                [128, 128, 32, 128, 2, 2, 1, 0],
                [128, 256, 32, 256, 4, 1, 0, 0],
                [256, 128, 32, 256, 2, 1, 0, 0],
                [64, 128, 32, 64, 2, 2, 0, 0],
                // 64x32 per subgroup: half the accumulators, more workgroups per SM.
                [128, 64, 32, 128, 2, 2, 0, 0],
            ],
        );
    }
    if lim.coop2 && f16 {
        // bm, bn, bk, wg, uk
        sweep(
            push,
            &[(Knob::Coopmat, 2)],
            &[&CM2_KEYS[..], &[Knob::Uk]].concat(),
            &[
                [128, 256, 32, 256, 1],
                [128, 256, 32, 256, 2],
                [128, 256, 32, 256, 4],
                [128, 128, 32, 256, 4],
                [256, 128, 32, 256, 4],
                [64, 128, 32, 128, 4],
            ],
        );
    }
    if f16 {
        push(Tuning::of(&[(Knob::Coopmat, 1)]));
    } else {
        sweep(
            push,
            &[(Knob::V4, 1)],
            &V4_KEYS,
            &[
                [128, 128, 8],
                [128, 128, 16],
                [64, 64, 8],
                [128, 64, 8],
                [64, 128, 16],
            ],
        );
    }
    let coop = f16 && lim.coop_f16.is_some() && lim.f16_storage;
    sweep(push, ffma_family(f16, coop), &FFMA_KEYS, &FFMA_SWEEP);
}

#[cfg(test)]
mod tests;
