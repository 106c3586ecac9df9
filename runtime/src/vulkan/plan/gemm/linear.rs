//! `linear_f16` (y = x W^T, W `[rows][cols]`): the tiled product of the
//! GEMM planner with W as B transposed. What is its own: its kernels
//! (`linear_f16`, `linear_f16_cm` and its `_cs`, `_bt`, `_bt_cs` variants,
//! `linear_f16_cm2`), their shared-memory layouts and spec constants, and
//! the names of its sizes (tokens, rows, cols for m, n, k).
//!
//! Tuning keys: `coopmat` picks the kernel:
//! - 3: `linear_f16_cm2` (VK_NV_cooperative_matrix2, both operands read
//!   along cols, any shape), the default where the device has it, with
//!   `gemm_f16_cm2`'s keys `bm`, `bn`, `bk`, `wg`, `uk` and `group_m` (the
//!   block order). On the H200 it runs the Llama-2-7B projections at
//!   317-339 TFLOP/s, where the KHR kernel below reaches 210-270
//!   (docs/performance.md, 2026-11-30).
//! - 1: `linear_f16_cm` (KHR cooperative matrix), the default elsewhere
//!   where the device has 16x16x16 f16 tiles and a fixed subgroup size and
//!   the shape is aligned to its blocks, with `bm`, `bn`, `bk`, `wg`, `sgn`
//!   and `epilogue` (0: the accumulators rounded to f16 accumulator tiles
//!   and stored straight to Y, the default where the device has 16x16x16
//!   f16 accumulators; 1: the `_cs` variants, each f32 tile out through a
//!   per-subgroup shared tile, for devices with f32 accumulators only. On
//!   NVIDIA's driver the shared-tile epilogue made the whole kernel 6.5x
//!   slower at every tile tried, docs/performance.md "Vulkan linear_f16
//!   back at the rate of 4fa97b0").
//! - 2: its `_bt` variant, W's slice staged transposed, a candidate only
//!   (27% slower on the H200 on 2026-11-26).
//! - 0: the FFMA tiled kernel, any shape, with `bm`, `bn`, `bk`, `tm`,
//!   `tn` (as the f32 GEMM's).

use super::{
    cm2_tiles, cm_tiles, ffma_tiles, keyed, one_dispatch, plan_of, prod, sweep, tiles, Cm2Kernel,
    Req, CM2_KEYS, CM_KEYS, FFMA_DEFAULT, FFMA_KEYS, FFMA_SWEEP,
};
use crate::error::RuntimeError;
use crate::tuning::{Knob, Tuning};
use crate::vulkan::plan::{bad, check_keys, Limits, Plan, Shader};
use greta_kernels::Op;

/// Cooperative-matrix linear_f16 defaults (`CM_KEYS`): 2 x 2 subgroups of
/// 32, each a 64 x 64 block of Y in 16 accumulator tiles, as the
/// `gemm_f16_cmreg` default.
const LINEAR_CM: [u32; 5] = [128, 128, 32, 128, 2];

/// `linear_f16_cm2` defaults (bm, bn, bk, wg, uk): 2 x 2 subgroups of 32
/// over a 128 x 128 block, 64-deep slices, two per loop trip. The fastest
/// tiles for all four projections of the Llama-2-7B prefill layer, each
/// timed inside the layer (H200, driver 580.159.04, 2026-11-30,
/// `scripts/gpu/linear-tiles.sh`; docs/performance.md).
const LINEAR_CM2: [u32; 5] = [128, 128, 64, 128, 2];

/// `linear_f16_cm2` default block order: 16 rows of blocks at a time (all
/// of a 2048-token prefill's), so the workgroups resident at once read the
/// same rows of W. On the same H200 the layer took 3101 us with it, 3115
/// with 8 and 3203 in dispatch order (gate/up: 1183, 1192, 1261 us).
const LINEAR_CM2_GROUP_M: u32 = 16;

/// `linear_f16_cm2` tiles (bm, bn, bk, wg, uk) worth sweeping.
const LINEAR_CM2_SWEEP: [[u32; 5]; 15] = [
    [128, 128, 64, 128, 2],
    [128, 128, 64, 128, 1],
    [128, 128, 64, 128, 4],
    [128, 128, 64, 256, 2],
    [128, 128, 32, 128, 4],
    [128, 128, 32, 128, 8],
    [128, 128, 128, 128, 1],
    [128, 256, 64, 256, 2],
    [128, 256, 64, 256, 1],
    [256, 128, 64, 256, 2],
    [128, 256, 32, 256, 4],
    [128, 256, 32, 256, 8],
    [256, 128, 32, 256, 4],
    [64, 128, 64, 128, 2],
    [128, 64, 64, 128, 2],
];

/// `linear_f16`: the cooperative-matrix-2 kernel where the device has it,
/// else the KHR cooperative-matrix kernel where it applies (unless
/// `coopmat=0` or tile keys ask for the tiled one), else the tiled kernel.
/// The caller has checked the device's 16-bit storage.
pub fn plan(
    op: &Op,
    tokens: usize,
    rows: usize,
    cols: usize,
    t: &Tuning,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    let r = &Req {
        op,
        m: tokens,
        n: rows,
        k: cols,
        dims: ["tokens", "rows", "cols"],
        t,
        lim,
    };
    match t.get(Knob::Coopmat) {
        Some(0) => tiled(r),
        Some(1) => coop(r, false),
        Some(2) => coop(r, true),
        Some(3) => cm2(r),
        Some(v) => Err(bad(format!("coopmat={v}: must be 0..=3"))),
        None if t.0.is_empty() => cm2(r).or_else(|_| coop(r, false)).or_else(|_| tiled(r)),
        None => tiled(r),
    }
}

/// `linear_f16`: the FFMA tiled kernel, any shape.
fn tiled(r: &Req) -> Result<Plan, RuntimeError> {
    let Req { t, lim, .. } = *r;
    check_keys(t, &[&[Knob::Coopmat][..], &FFMA_KEYS].concat())?;
    let (eff, [bm, bn, bk, tm, tn], threads, accumulators) =
        ffma_tiles(t, "linear_f16", FFMA_DEFAULT)?;
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
    let d = one_dispatch(r, bm, bn)?;
    Ok(plan_of(
        Shader::LinearF16,
        vec![bm, bn, bk, tm, tn, threads],
        eff.with(Knob::Coopmat, 0),
        d,
    ))
}

/// `linear_f16_cm`: KHR cooperative matrix, 16x16x16 f16 tiles, a fixed
/// subgroup size, tokens % bm == 0, rows % bn == 0, cols % bk == 0;
/// `transposed` (`coopmat=2`, a tuning candidate, never the default): the
/// `_bt` variant, W's slice staged `[k][n]` so B loads row-major. The
/// epilogue (`epilogue` key): the direct f16 store where the device has
/// f16 accumulators, else the shared-tile `_cs` variant.
fn coop(r: &Req, transposed: bool) -> Result<Plan, RuntimeError> {
    let Req { t, lim, .. } = *r;
    check_keys(
        t,
        &[&[Knob::Coopmat, Knob::Epilogue][..], &CM_KEYS].concat(),
    )?;
    let sg = lim.subgroup_size.filter(|_| lim.coop16).ok_or_else(|| {
        RuntimeError::Unsupported(
            "linear_f16_cm needs 16x16x16 f16 cooperative matrices and a fixed subgroup size"
                .into(),
        )
    })?;
    let shared_tile = match t.get(Knob::Epilogue) {
        None => !lim.coop16_f16,
        Some(0) if lim.coop16_f16 => false,
        Some(0) => {
            return Err(RuntimeError::Unsupported(
                "linear_f16_cm epilogue=0 needs 16x16x16 f16-accumulator cooperative matrices"
                    .into(),
            ))
        }
        Some(1) => true,
        Some(v) => return Err(bad(format!("epilogue={v}: must be 0 or 1"))),
    };
    let v = tiles(t, CM_KEYS, LINEAR_CM);
    let [bm, bn, bk, wg, sgn] = v;
    // Two stages of both slices, rows padded by 8 halves (16 bytes), and
    // for the shared-tile epilogue a 16 x 16 f32 tile per subgroup.
    // The _bt variant stages W's slice as [k][n + 8] halves instead.
    let b_stage = if transposed {
        prod(&[2, 2, bk]).saturating_mul(u64::from(bn) + 8)
    } else {
        prod(&[2, 16, bn, bk / 8 + 1])
    };
    let shared = prod(&[2, 16, bm, bk / 8 + 1])
        .saturating_add(b_stage)
        .saturating_add(if shared_tile {
            prod(&[wg / sg.max(1), 16 * 16 * 4])
        } else {
            0
        });
    cm_tiles(r, "linear_f16_cm", v, sg, shared)?;
    let d = one_dispatch(r, bm, bn)?;
    let shader = match (transposed, shared_tile) {
        (false, false) => Shader::LinearF16Cm,
        (false, true) => Shader::LinearF16CmCs,
        (true, false) => Shader::LinearF16CmBt,
        (true, true) => Shader::LinearF16CmBtCs,
    };
    let family = [
        (Knob::Coopmat, 1 + transposed as u32),
        (Knob::Epilogue, shared_tile as u32),
    ];
    Ok(plan_of(
        shader,
        vec![bm, bn, bk, wg, sgn, sg],
        keyed(&family, &CM_KEYS, &v),
        d,
    ))
}

/// `linear_f16_cm2`: VK_NV_cooperative_matrix2, any shape.
fn cm2(r: &Req) -> Result<Plan, RuntimeError> {
    if !r.lim.coop2 {
        return Err(RuntimeError::Unsupported(
            "linear_f16_cm2 needs VK_NV_cooperative_matrix2".into(),
        ));
    }
    cm2_tiles(
        r,
        &Cm2Kernel {
            shader: Shader::LinearF16Cm2,
            family: 3,
            defaults: LINEAR_CM2,
            group_m: Some(LINEAR_CM2_GROUP_M),
        },
    )
}

/// Tunings worth sweeping (pushed through `push`, which keeps the valid ones).
pub fn candidates(push: &mut dyn FnMut(Tuning)) {
    let cm2_keys = [&CM2_KEYS[..], &[Knob::Uk]].concat();
    sweep(push, &[(Knob::Coopmat, 3)], &cm2_keys, &LINEAR_CM2_SWEEP);
    for group_m in [0, 4, 8] {
        let family = [(Knob::Coopmat, 3), (Knob::GroupM, group_m)];
        sweep(push, &family, &cm2_keys, &[LINEAR_CM2]);
    }
    let cm = [
        [128, 128, 32, 128, 2],
        [128, 128, 64, 128, 2],
        [128, 256, 32, 256, 4],
        [64, 128, 32, 64, 2],
        [128, 64, 32, 128, 2],
    ];
    sweep(push, &[(Knob::Coopmat, 1)], &CM_KEYS, &cm);
    // The shared-tile epilogue where it is not the default (devices with
    // f16 accumulators), so a sweep shows what it costs (pushed tunings
    // that a device cannot run are dropped).
    let shared_tile = [(Knob::Coopmat, 1), (Knob::Epilogue, 1)];
    sweep(push, &shared_tile, &CM_KEYS, &[cm[0], cm[3], cm[4]]);
    sweep(push, &[(Knob::Coopmat, 2)], &CM_KEYS, &[cm[0], cm[4]]);
    sweep(push, &[(Knob::Coopmat, 0)], &FFMA_KEYS, &FFMA_SWEEP);
}

/// Most loop trips of one invocation (llvmpipe's guard): the k slices,
/// each a load of both tiles' share and the multiply.
pub fn max_loop_trips(cols: usize, plan: &Plan) -> u64 {
    let bk = u64::from(plan.spec[2]).max(1);
    let tile = u64::from(plan.spec[0]) + u64::from(plan.spec[1]);
    let threads = u64::from(*plan.spec.get(5).unwrap_or(&1)).max(1);
    (cols as u64).div_ceil(bk) * (bk + tile * bk / threads + 2)
}
