//! Planning the f16 kernels of the transformer block (issue 23's "ops set
//! 1"): `gemv_f16`, `linear_f16`, `rmsnorm_f16`, `add_rmsnorm_f16`,
//! `swiglu_f16`. Each has a plain kernel (halves, any shape) and, where rows
//! are 16-byte aligned (cols % 8 == 0), a `_v8` one that moves 16-byte
//! vectors of 8 halves; `vec4` picks between them (0 plain, 1 wide; the
//! default is wide wherever the shape allows it). All of them store f16
//! through 16-bit storage, so a device without it refuses them (their
//! gates' f16 precondition asks for it too).
//!
//! Tuning keys: gemv_f16 `wg`, `vec4`, `unroll` (16-byte vectors per lane
//! in flight, 1..=8); the norms `wg`, `vec4`; swiglu_f16 `wg`, `vec4`;
//! linear_f16 `bm`, `bn`, `bk`, `tm`, `tn` (the plain tiled kernel, as the
//! f32 GEMM's) and `coopmat` (0 the tiled kernel, 1 the cooperative-matrix
//! one, the default where the device has 16x16x16 f16 tiles and a fixed
//! subgroup size and the shape is aligned to its blocks; 2 its `_bt`
//! variant, W's slice staged transposed, a candidate only: unmeasured).

use super::{
    bad, check_keys, groups_for, simple, wg_of, whole, Dispatch, Limits, Plan, Shader, MAX_GROUPS,
    NORM_MAX_NPT,
};
use crate::{Knob, Op, RuntimeError, Tuning};

/// 16-byte vectors each lane of gemv_f16 has in flight per loop trip.
const GEMV_UNROLL: u32 = 4;

/// Tiled linear_f16 defaults: 64 x 64 blocks, 16-deep slices, 4 x 4
/// outputs per invocation (256 invocations), as the f32 GEMM's.
const LINEAR_TILES: [(Knob, u32); 5] = [
    (Knob::Bm, 64),
    (Knob::Bn, 64),
    (Knob::Bk, 16),
    (Knob::Tm, 4),
    (Knob::Tn, 4),
];

/// Cooperative-matrix linear_f16 (bm, bn, bk, wg, sgn): 2 x 2 subgroups of
/// 32, each a 64 x 64 block of Y in 16 accumulator tiles, as the
/// `gemm_f16_cmreg` default.
const LINEAR_CM: (u32, u32, u32, u32, u32) = (128, 128, 32, 128, 2);

/// Product of tile sizes in u64, saturating (tile sizes come from tuning
/// caches and flags: arithmetic on them must never wrap).
fn prod(xs: &[u32]) -> u64 {
    xs.iter().fold(1u64, |a, &x| a.saturating_mul(u64::from(x)))
}

fn need_f16(op: &Op, lim: &Limits) -> Result<(), RuntimeError> {
    if lim.f16_storage {
        Ok(())
    } else {
        Err(RuntimeError::Unsupported(format!(
            "{op}: needs 16-bit storage and f16 arithmetic in shaders"
        )))
    }
}

/// The `vec4` knob for the f16 kernels: the `_v8` kernel (16-byte vectors
/// of 8 halves) needs cols % 8 == 0; `fits` adds the kernel's own limits.
fn wide(t: &Tuning, cols: usize, fits: bool) -> Result<bool, RuntimeError> {
    let ok = cols.is_multiple_of(8) && fits;
    match t.get(Knob::Vec4) {
        None => Ok(ok),
        Some(1) if ok => Ok(true),
        Some(0) => Ok(false),
        Some(v) => Err(bad(format!(
            "vec4={v}: the 8-half kernel needs cols % 8 == 0 (cols={cols}) and a row that fits \
             its registers, and a value of 0 or 1"
        ))),
    }
}

fn dim(op: &Op, v: usize) -> Result<u32, RuntimeError> {
    u32::try_from(v).map_err(|_| bad(format!("{op}: {v} does not fit the kernels' 32 bits")))
}

/// `gemv_f16`: a row per subgroup, grid-stride. The dispatch is sized for
/// the device's subgroup size when it has one (32 assumed otherwise; the
/// kernel strides over whatever rows the grid leaves).
pub fn gemv(
    op: &Op,
    rows: usize,
    cols: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg, Knob::Vec4, Knob::Unroll])?;
    need_f16(op, lim)?;
    let wg = wg_of(t, 256, lim)?;
    let v8 = wide(t, cols, true)?;
    let unroll = t.get(Knob::Unroll).unwrap_or(GEMV_UNROLL);
    if !(1..=8).contains(&unroll) {
        return Err(bad(format!("unroll={unroll}: must be 1..=8")));
    }
    let sg = lim.subgroup_size.unwrap_or(32).clamp(1, wg);
    let d = Dispatch {
        push: vec![dim(op, rows)?, dim(op, cols)?],
        groups: [groups_for(rows as u64, u64::from(wg / sg)), 1, 1],
        ranges: whole(3),
    };
    let shader = if v8 {
        Shader::GemvF16V8
    } else {
        Shader::GemvF16
    };
    let mut p = simple(shader, wg, vec![d]);
    p.spec.push(unroll);
    p.spec.push(sg);
    p.tuning = p
        .tuning
        .with(Knob::Vec4, v8 as u32)
        .with(Knob::Unroll, unroll);
    Ok(p)
}

/// `rmsnorm_f16`, `add_rmsnorm_f16`: a workgroup per row; the `_v8` kernel
/// holds the row in registers, NPT vectors per invocation (at most
/// NORM_MAX_NPT).
pub fn row_norm(
    op: &Op,
    rows: usize,
    cols: usize,
    eps: f32,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg, Knob::Vec4])?;
    need_f16(op, lim)?;
    let wg = wg_of(t, 256, lim)?;
    let npt = (cols as u64).div_ceil(8).div_ceil(u64::from(wg));
    let v8 = wide(t, cols, npt <= u64::from(NORM_MAX_NPT))?;
    let (shaders, nbuf) = match op {
        Op::AddRmsNormF16 { .. } => ([Shader::AddRmsnormF16, Shader::AddRmsnormF16V8], 5),
        _ => ([Shader::RmsnormF16, Shader::RmsnormF16V8], 3),
    };
    let d = Dispatch {
        push: vec![dim(op, rows)?, dim(op, cols)?, eps.to_bits()],
        groups: [(rows as u64).clamp(1, u64::from(MAX_GROUPS)) as u32, 1, 1],
        ranges: whole(nbuf),
    };
    let mut p = simple(shaders[v8 as usize], wg, vec![d]);
    if v8 {
        p.spec.push(npt as u32); // <= NORM_MAX_NPT
    }
    p.tuning = p.tuning.with(Knob::Vec4, v8 as u32);
    Ok(p)
}

/// `swiglu_f16`: grid-stride over the output, 8 halves per step in `_v8`.
pub fn swiglu(
    op: &Op,
    rows: usize,
    cols: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(t, &[Knob::Wg, Knob::Vec4])?;
    need_f16(op, lim)?;
    let wg = wg_of(t, 256, lim)?;
    let v8 = wide(t, cols, true)?;
    let items = (rows as u64 * cols as u64) / if v8 { 8 } else { 1 };
    let d = Dispatch {
        push: vec![dim(op, rows)?, dim(op, cols)?],
        groups: [groups_for(items, u64::from(wg)), 1, 1],
        ranges: whole(2),
    };
    let shader = if v8 {
        Shader::SwigluF16V8
    } else {
        Shader::SwigluF16
    };
    let mut p = simple(shader, wg, vec![d]);
    p.tuning = p.tuning.with(Knob::Vec4, v8 as u32);
    Ok(p)
}

/// `linear_f16`: the cooperative-matrix kernel where it applies (unless
/// `coopmat=0` or tile keys ask for the tiled one), else the tiled kernel.
pub fn linear(
    op: &Op,
    tokens: usize,
    rows: usize,
    cols: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    need_f16(op, lim)?;
    match t.get(Knob::Coopmat) {
        Some(0) => linear_tiled(op, tokens, rows, cols, t, lim),
        Some(1) => linear_coop(op, tokens, rows, cols, t, lim, false),
        Some(2) => linear_coop(op, tokens, rows, cols, t, lim, true),
        Some(v) => Err(bad(format!("coopmat={v}: must be 0, 1 or 2"))),
        None if t.0.is_empty() => linear_coop(op, tokens, rows, cols, t, lim, false)
            .or_else(|_| linear_tiled(op, tokens, rows, cols, t, lim)),
        None => linear_tiled(op, tokens, rows, cols, t, lim),
    }
}

fn grid(op: &Op, tokens: usize, rows: usize, bm: u32, bn: u32) -> Result<[u32; 3], RuntimeError> {
    let (gx, gy) = (
        (rows as u64).div_ceil(u64::from(bn)),
        (tokens as u64).div_ceil(u64::from(bm)),
    );
    if gx > u64::from(MAX_GROUPS) || gy > u64::from(MAX_GROUPS) {
        return Err(RuntimeError::Unsupported(format!(
            "{op}: needs [{gx}, {gy}, 1] workgroups, over {MAX_GROUPS}"
        )));
    }
    Ok([gx as u32, gy as u32, 1])
}

fn linear_tiled(
    op: &Op,
    tokens: usize,
    rows: usize,
    cols: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    check_keys(
        t,
        &[
            Knob::Coopmat,
            Knob::Bm,
            Knob::Bn,
            Knob::Bk,
            Knob::Tm,
            Knob::Tn,
        ],
    )?;
    let mut eff = Tuning::default();
    for (key, d) in LINEAR_TILES {
        eff.0.insert(key, t.get(key).unwrap_or(d));
    }
    let g = |key: Knob| eff.get(key).unwrap_or(0);
    let (bm, bn, bk, tm, tn) = (
        g(Knob::Bm),
        g(Knob::Bn),
        g(Knob::Bk),
        g(Knob::Tm),
        g(Knob::Tn),
    );
    if [bm, bn, bk, tm, tn].contains(&0) || bm % tm != 0 || bn % tn != 0 {
        return Err(bad(format!(
            "linear_f16 tiles {eff}: need bm % tm == 0, bn % tn == 0, all > 0"
        )));
    }
    let threads = prod(&[bm / tm, bn / tn]);
    let accumulators = prod(&[tm, tn]);
    let shared = prod(&[bk, 4]).saturating_mul(u64::from(bm) + u64::from(bn));
    let threads = match u32::try_from(threads) {
        Ok(v)
            if v <= lim.max_invocations
                && accumulators <= 64
                && shared <= u64::from(lim.max_shared) =>
        {
            v
        }
        _ => {
            return Err(bad(format!(
                "linear_f16 tiles {eff}: {threads} invocations (max {}), {accumulators} \
                 accumulators (max 64), {shared} bytes of shared memory (max {})",
                lim.max_invocations, lim.max_shared
            )))
        }
    };
    let d = Dispatch {
        push: vec![dim(op, tokens)?, dim(op, rows)?, dim(op, cols)?],
        groups: grid(op, tokens, rows, bm, bn)?,
        ranges: whole(3),
    };
    Ok(Plan {
        shader: Shader::LinearF16,
        per_dispatch: false,
        spec: vec![bm, bn, bk, tm, tn, threads],
        tuning: eff.with(Knob::Coopmat, 0),
        aux: vec![],
        dispatches: vec![d],
        then: vec![],
    })
}

/// `linear_f16_cm`: KHR cooperative matrix, 16x16x16 f16 tiles, a fixed
/// subgroup size, tokens % bm == 0, rows % bn == 0, cols % bk == 0;
/// `transposed` (`coopmat=2`, a tuning candidate, never the default): the
/// `_bt` variant, W's slice staged `[k][n]` so B loads row-major.
fn linear_coop(
    op: &Op,
    tokens: usize,
    rows: usize,
    cols: usize,
    t: &Tuning,
    lim: &Limits,
    transposed: bool,
) -> Result<Plan, RuntimeError> {
    check_keys(
        t,
        &[
            Knob::Coopmat,
            Knob::Bm,
            Knob::Bn,
            Knob::Bk,
            Knob::Wg,
            Knob::Sgn,
        ],
    )?;
    let sg = lim.subgroup_size.filter(|_| lim.coop16).ok_or_else(|| {
        RuntimeError::Unsupported(
            "linear_f16_cm needs 16x16x16 f16 cooperative matrices and a fixed subgroup size"
                .into(),
        )
    })?;
    let g = |key: Knob, d: u32| t.get(key).unwrap_or(d);
    let (bm, bn, bk, wg, sgn) = (
        g(Knob::Bm, LINEAR_CM.0),
        g(Knob::Bn, LINEAR_CM.1),
        g(Knob::Bk, LINEAR_CM.2),
        g(Knob::Wg, LINEAR_CM.3),
        g(Knob::Sgn, LINEAR_CM.4),
    );
    let tiles_ok = [bm, bn, bk].iter().all(|v| *v > 0 && v % 16 == 0)
        && sg > 0
        && wg % sg == 0
        && sgn > 0
        && (wg / sg) % sgn == 0
        && wg <= lim.max_invocations;
    let sgm = if tiles_ok { wg / sg / sgn } else { 0 };
    // Two stages of both slices, rows padded by 8 halves (16 bytes), and a
    // 16 x 16 f32 tile per subgroup for the epilogue.
    // The _bt variant stages W's slice as [k][n + 8] halves instead.
    let b_stage = if transposed {
        prod(&[2, 2, bk]).saturating_mul(u64::from(bn) + 8)
    } else {
        prod(&[2, 16, bn, bk / 8 + 1])
    };
    let shared = prod(&[2, 16, bm, bk / 8 + 1])
        .saturating_add(b_stage)
        .saturating_add(prod(&[wg / sg.max(1), 16 * 16 * 4]));
    if !tiles_ok
        || sgm == 0
        || u64::from(bm) % prod(&[sgm, 16]) != 0
        || u64::from(bn) % prod(&[sgn, 16]) != 0
        || !(prod(&[bm, bk]) / 8).is_multiple_of(u64::from(wg))
        || !(prod(&[bn, bk]) / 8).is_multiple_of(u64::from(wg))
        || prod(&[bm / sgm / 16, bn / sgn / 16]) > 32
        || shared > u64::from(lim.max_shared)
    {
        return Err(bad(format!(
            "linear_f16_cm tiles bm={bm} bn={bn} bk={bk} wg={wg} sgn={sgn} (subgroup {sg}): \
             tiles multiples of 16 split evenly over the subgroups, at most 32 accumulator \
             tiles per subgroup, {shared} bytes of shared memory (max {})",
            lim.max_shared
        )));
    }
    if !tokens.is_multiple_of(bm as usize)
        || !rows.is_multiple_of(bn as usize)
        || !cols.is_multiple_of(bk as usize)
    {
        return Err(RuntimeError::Unsupported(format!(
            "linear_f16_cm needs tokens % {bm}, rows % {bn}, cols % {bk} == 0 ({op})"
        )));
    }
    let d = Dispatch {
        push: vec![dim(op, tokens)?, dim(op, rows)?, dim(op, cols)?],
        groups: grid(op, tokens, rows, bm, bn)?,
        ranges: whole(3),
    };
    Ok(Plan {
        shader: if transposed {
            Shader::LinearF16CmBt
        } else {
            Shader::LinearF16Cm
        },
        per_dispatch: false,
        spec: vec![bm, bn, bk, wg, sgn, sg],
        tuning: Tuning::of(&[
            (Knob::Coopmat, 1 + transposed as u32),
            (Knob::Bm, bm),
            (Knob::Bn, bn),
            (Knob::Bk, bk),
            (Knob::Wg, wg),
            (Knob::Sgn, sgn),
        ]),
        aux: vec![],
        dispatches: vec![d],
        then: vec![],
    })
}

/// Tunings worth sweeping (pushed through `push`, which keeps the valid ones).
pub fn candidates(op: &Op, push: &mut dyn FnMut(Tuning)) {
    let plain = Tuning::default().with(Knob::Vec4, 0);
    match op {
        Op::GemvF16 { .. } => {
            for (wg, unroll) in [(128, 4), (256, 2), (256, 8), (512, 4), (1024, 4), (64, 4)] {
                push(
                    Tuning::default()
                        .with(Knob::Wg, wg)
                        .with(Knob::Unroll, unroll),
                );
            }
            push(plain);
        }
        Op::LinearF16 { .. } => {
            for (bm, bn, bk, wg, sgn) in [
                (128, 128, 32, 128, 2),
                (128, 128, 64, 128, 2),
                (128, 256, 32, 256, 4),
                (64, 128, 32, 64, 2),
                (128, 64, 32, 128, 2),
            ] {
                push(Tuning::of(&[
                    (Knob::Coopmat, 1),
                    (Knob::Bm, bm),
                    (Knob::Bn, bn),
                    (Knob::Bk, bk),
                    (Knob::Wg, wg),
                    (Knob::Sgn, sgn),
                ]));
            }
            for (bm, bn, bk, wg, sgn) in [(128, 128, 32, 128, 2), (128, 64, 32, 128, 2)] {
                push(Tuning::of(&[
                    (Knob::Coopmat, 2),
                    (Knob::Bm, bm),
                    (Knob::Bn, bn),
                    (Knob::Bk, bk),
                    (Knob::Wg, wg),
                    (Knob::Sgn, sgn),
                ]));
            }
            for (bm, bn, bk, tm, tn) in [
                (64, 64, 16, 4, 4),
                (128, 128, 8, 8, 8),
                (64, 64, 8, 4, 4),
                (32, 32, 16, 2, 2),
            ] {
                push(Tuning::of(&[
                    (Knob::Coopmat, 0),
                    (Knob::Bm, bm),
                    (Knob::Bn, bn),
                    (Knob::Bk, bk),
                    (Knob::Tm, tm),
                    (Knob::Tn, tn),
                ]));
            }
        }
        _ => {
            for wg in [64, 128, 512, 1024] {
                push(Tuning::default().with(Knob::Wg, wg));
            }
            push(plain);
        }
    }
}

/// Most loop trips of one invocation (llvmpipe's guard), for the plans above.
pub fn max_loop_trips(op: &Op, plan: &Plan) -> u64 {
    let wg = u64::from(plan.spec.first().copied().unwrap_or(1));
    let groups = u64::from(plan.dispatches[0].groups[0]).max(1);
    match *op {
        Op::GemvF16 { rows, cols } => {
            // spec[2]: the subgroup size the dispatch was sized for (the
            // device's, where it has one fixed size, as lavapipe does).
            let sg = u64::from(plan.spec.get(2).copied().unwrap_or(1)).max(1);
            let per_row = if plan.shader == Shader::GemvF16V8 {
                cols as u64 / 8
            } else {
                cols as u64
            };
            let rows_per_sg = (rows as u64).div_ceil(groups * (wg / sg).max(1));
            rows_per_sg * (per_row.div_ceil(sg) + 1)
        }
        Op::RmsNormF16 { rows, cols, .. } | Op::AddRmsNormF16 { rows, cols, .. } => {
            let per_row = if plan.spec.len() > 1 {
                u64::from(plan.spec[1])
            } else {
                (cols as u64).div_ceil(wg)
            };
            (rows as u64).div_ceil(groups) * 3 * per_row
        }
        Op::SwigluF16 { rows, cols } => {
            let per = if plan.shader == Shader::SwigluF16V8 {
                8
            } else {
                1
            };
            (rows as u64 * cols as u64 / per).div_ceil(groups * wg)
        }
        Op::LinearF16 { cols, .. } => {
            let bk = u64::from(plan.spec[2]).max(1);
            let tile = u64::from(plan.spec[0]) + u64::from(plan.spec[1]);
            let threads = u64::from(*plan.spec.get(5).unwrap_or(&1)).max(1);
            (cols as u64).div_ceil(bk) * (bk + tile * bk / threads + 2)
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan;
    use super::*;

    /// An NVIDIA H100/H200 as its Vulkan driver reports it.
    fn nvidia() -> Limits {
        Limits {
            max_range: u32::MAX as u64,
            offset_align: 16,
            max_invocations: 1024,
            max_shared: 49152,
            subgroup_arith: true,
            coop_f16: Some((16, 8, 16)),
            f16_storage: true,
            coop2: true,
            coop16: true,
            subgroup_size: Some(32),
        }
    }

    /// lavapipe: no cooperative matrix, subgroups of 8.
    fn lavapipe() -> Limits {
        Limits {
            coop_f16: None,
            coop2: false,
            coop16: false,
            subgroup_size: Some(8),
            ..nvidia()
        }
    }

    fn linear(tokens: usize, rows: usize, cols: usize) -> Op {
        Op::LinearF16 { tokens, rows, cols }
    }

    #[test]
    fn linear_takes_the_matrix_units_where_it_can_and_the_tiled_kernel_elsewhere() {
        let t = Tuning::default();
        // The Llama-2-7B prefill shapes on an NVIDIA GPU.
        for op in [linear(2048, 12288, 4096), linear(2048, 4096, 11008)] {
            let p = plan(&op, &t, &nvidia()).unwrap();
            assert_eq!(p.shader, Shader::LinearF16Cm, "{op}");
            assert_eq!(p.spec, vec![128, 128, 32, 128, 2, 32], "{op}");
            // y is tokens x rows: x along rows, y along tokens.
            assert_eq!(p.dispatches[0].groups[1], 2048 / 128, "{op}");
            assert_eq!(p.tuning.get(Knob::Coopmat), Some(1));
        }
        // Unaligned, or no cooperative matrix: the tiled kernel, any shape.
        for (op, lim) in [
            (linear(67, 45, 33), nvidia()),
            (linear(2048, 4096, 4100), nvidia()),
            (linear(2048, 4096, 4096), lavapipe()),
        ] {
            let p = plan(&op, &t, &lim).unwrap();
            assert_eq!(p.shader, Shader::LinearF16, "{op}");
            assert_eq!(p.tuning.get(Knob::Coopmat), Some(0), "{op}");
        }
        // Asking for the matrix units where they cannot run is an error.
        let one = Tuning::default().with(Knob::Coopmat, 1);
        let e = plan(&linear(67, 45, 33), &one, &nvidia()).err().unwrap();
        assert!(e.to_string().contains("tokens % 128"), "{e}");
        let e = plan(&linear(128, 128, 32), &one, &lavapipe())
            .err()
            .unwrap();
        assert!(e.to_string().contains("cooperative"), "{e}");
        // Tiles that do not fit are refused, not handed to the driver.
        let huge = Tuning::of(&[(Knob::Coopmat, 1), (Knob::Bm, 4096), (Knob::Bk, 4096)]);
        assert!(plan(&linear(4096, 4096, 4096), &huge, &nvidia()).is_err());
        let huge = Tuning::of(&[(Knob::Coopmat, 0), (Knob::Bm, u32::MAX), (Knob::Tm, 1)]);
        assert!(plan(&linear(64, 64, 64), &huge, &nvidia()).is_err());
    }

    #[test]
    fn gemv_is_sized_by_the_subgroup_and_reads_vectors_where_rows_align() {
        let t = Tuning::default();
        let p = plan(
            &Op::GemvF16 {
                rows: 22016,
                cols: 4096,
            },
            &t,
            &nvidia(),
        )
        .unwrap();
        assert_eq!(p.shader, Shader::GemvF16V8);
        // 256 invocations in subgroups of 32: 8 rows per workgroup.
        assert_eq!(p.dispatches[0].groups, [22016 / 8, 1, 1]);
        assert_eq!(p.spec, vec![256, GEMV_UNROLL, 32]);
        let p = plan(
            &Op::GemvF16 {
                rows: 100,
                cols: 4096,
            },
            &t,
            &lavapipe(),
        )
        .unwrap();
        assert_eq!(p.dispatches[0].groups, [4, 1, 1]);
        let odd = Op::GemvF16 {
            rows: 100,
            cols: 1001,
        };
        assert_eq!(plan(&odd, &t, &nvidia()).unwrap().shader, Shader::GemvF16);
        let wide = Tuning::default().with(Knob::Vec4, 1);
        assert!(plan(&odd, &wide, &nvidia()).is_err());
        let bad = Tuning::default().with(Knob::Unroll, 9);
        assert!(plan(&Op::GemvF16 { rows: 1, cols: 8 }, &bad, &nvidia()).is_err());
    }

    #[test]
    fn norms_hold_rows_in_registers_up_to_their_limit() {
        let t = Tuning::default();
        let norm = |cols| Op::RmsNormF16 {
            rows: 2048,
            cols,
            eps: 1e-5,
        };
        let p = plan(&norm(4096), &t, &nvidia()).unwrap();
        assert_eq!(
            (p.shader, p.spec.clone()),
            (Shader::RmsnormF16V8, vec![256, 2])
        );
        let add = Op::AddRmsNormF16 {
            rows: 2048,
            cols: 11008,
            eps: 1e-5,
        };
        let p = plan(&add, &t, &nvidia()).unwrap();
        assert_eq!(
            (p.shader, p.spec.clone()),
            (Shader::AddRmsnormF16V8, vec![256, 6])
        );
        // Past NORM_MAX_NPT vectors per invocation: the plain kernel.
        let long = 8 * NORM_MAX_NPT as usize * 256 + 8;
        assert_eq!(
            plan(&norm(long), &t, &nvidia()).unwrap().shader,
            Shader::RmsnormF16
        );
        assert!(plan(
            &norm(long),
            &Tuning::default().with(Knob::Vec4, 1),
            &nvidia()
        )
        .is_err());
        let sw = Op::SwigluF16 {
            rows: 2048,
            cols: 11008,
        };
        let p = plan(&sw, &t, &nvidia()).unwrap();
        assert_eq!(p.shader, Shader::SwigluF16V8);
        assert_eq!(p.dispatches[0].groups[0], (2048 * 11008 / 8 / 256) as u32);
    }

    #[test]
    fn a_device_without_16_bit_storage_refuses_every_one() {
        let lim = Limits {
            f16_storage: false,
            ..nvidia()
        };
        for op in [
            Op::GemvF16 { rows: 8, cols: 8 },
            linear(128, 128, 128),
            Op::RmsNormF16 {
                rows: 1,
                cols: 8,
                eps: 0.0,
            },
            Op::AddRmsNormF16 {
                rows: 1,
                cols: 8,
                eps: 0.0,
            },
            Op::SwigluF16 { rows: 1, cols: 8 },
        ] {
            let e = plan(&op, &Tuning::default(), &lim).err().unwrap();
            assert!(matches!(e, RuntimeError::Unsupported(_)), "{op}: {e}");
        }
    }

    #[test]
    fn every_candidate_plans_on_both_devices() {
        for lim in [nvidia(), lavapipe()] {
            for op in [
                Op::GemvF16 {
                    rows: 4096,
                    cols: 11008,
                },
                linear(2048, 4096, 11008),
                Op::SwigluF16 {
                    rows: 7,
                    cols: 1001,
                },
            ] {
                let c = super::super::candidates(&op, &lim);
                assert!(c.len() > 3, "{op}: {c:?}");
                for t in &c {
                    let p = plan(&op, t, &lim).unwrap();
                    assert!(max_loop_trips(&op, &p) > 0, "{op} {t}");
                }
            }
        }
        // The matrix-unit candidates appear only where they run.
        let c = super::super::candidates(&linear(2048, 4096, 11008), &nvidia());
        assert!(c.iter().any(|t| t.get(Knob::Coopmat) == Some(1)));
        let bt = c.iter().find(|t| t.get(Knob::Coopmat) == Some(2)).unwrap();
        let p = plan(&linear(2048, 4096, 11008), bt, &nvidia()).unwrap();
        assert_eq!(p.shader, Shader::LinearF16CmBt);
        let c = super::super::candidates(&linear(2048, 4096, 11008), &lavapipe());
        assert!(c
            .iter()
            .all(|t| !matches!(t.get(Knob::Coopmat), Some(1 | 2))));
    }
}
