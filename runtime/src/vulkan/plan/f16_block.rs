//! Planning the f16 kernels of the transformer block ("ops set
//! 1", docs/smoke.md): `gemv_f16`, `rmsnorm_f16`, `add_rmsnorm_f16`, `swiglu_f16`
//! (`linear_f16` is the GEMM planner's: `gemm::linear`). Each has a plain kernel (halves, any shape) and, where rows
//! are 16-byte aligned (cols % 8 == 0), a `_v8` one that moves 16-byte
//! vectors of 8 halves; `vec4` picks between them (0 plain, 1 wide; the
//! default is wide wherever the shape allows it). All of them store f16
//! through 16-bit storage, so a device without it refuses them (their
//! gates' f16 precondition asks for it too).
//!
//! Tuning keys: gemv_f16 `wg`, `vec4`, `unroll` (16-byte vectors per lane
//! in flight, 1..=8); the norms `wg`, `vec4`; swiglu_f16 `wg`, `vec4`.

use super::{
    bad, check_keys, groups_for, simple, switch, wg_of, whole, Dispatch, Limits, Plan, Shader,
    MAX_GROUPS, NORM_MAX_NPT,
};
use crate::error::RuntimeError;
use crate::tuning::{Knob, Tuning};
use greta_kernels::Op;

/// 16-byte vectors each lane of gemv_f16 has in flight per loop trip.
const GEMV_UNROLL: u32 = 4;
/// ... and of the fused kernels that read two weight rows a unit (the
/// gate and up rows, RoPE's row pair) beside the input and the norm's
/// weights: half as many trips in flight hold as many bytes of weights.
/// On an H200 (2026-11-29, `scripts/gpu/tune-gates.sh`, Vulkan) 2 against
/// 4 took rms_gemv_swiglu_f16 11008x4096 from 50.0 to 46.3 us and
/// rms_gemv_rope_kv_f16 32x128 from 29.6 to 26.9 us; gemv_add_f16 (one
/// row) kept 4: 7.8 against 8.0 us at 4096x4096.
const GEMV_PAIR_UNROLL: u32 = 2;

pub(super) fn need_f16(op: &Op, lim: &Limits) -> Result<(), RuntimeError> {
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
    switch(t, Knob::Vec4, cols.is_multiple_of(8) && fits, |v| {
        format!(
            "vec4={v}: the 8-half kernel needs cols % 8 == 0 (cols={cols}) and a row that fits \
             its registers, and a value of 0 or 1"
        )
    })
}

/// What every kernel here starts with: the keys it takes, 16-bit storage,
/// its workgroup size (`wg`, 256 by default).
fn f16_wg(op: &Op, t: &Tuning, keys: &[Knob], lim: &Limits) -> Result<u32, RuntimeError> {
    check_keys(t, keys)?;
    need_f16(op, lim)?;
    wg_of(t, 256, lim)
}

/// A plan of the plain (`pair[0]`) or the `_v8` kernel (`pair[1]`), its
/// `vec4` key saying which.
fn v8_plan(pair: [Shader; 2], v8: bool, wg: u32, d: Dispatch) -> Plan {
    let mut p = simple(pair[v8 as usize], wg, vec![d]);
    p.tuning = p.tuning.with(Knob::Vec4, v8 as u32);
    p
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
    let wg = f16_wg(op, t, &[Knob::Wg, Knob::Vec4, Knob::Unroll], lim)?;
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
    let mut p = v8_plan([Shader::GemvF16, Shader::GemvF16V8], v8, wg, d);
    p.spec.push(unroll);
    p.spec.push(sg);
    p.tuning = p.tuning.with(Knob::Unroll, unroll);
    Ok(p)
}

/// The decode projections with the block's small steps fused in
/// (`gemv_add_f16`, `rms_gemv_swiglu_f16`, `rms_gemv_rope_kv_f16`: one
/// shader source, `gemv_fused_f16.comp`): gemv_f16's plan over their units
/// of work (a row; a gate and up row; a pair of rows RoPE mixes), the same
/// keys. `rms_gemv_rope_kv_f16` binds its cos/sin table after its outputs.
pub fn fused_gemv(op: &Op, t: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    // The QKV kernel's diagnostic `probe` (a norm prologue that leaves the
    // subgroup's last lane out, spec constant 3): `--inject prologue` only.
    let rope = matches!(op, Op::RmsGemvRopeKvF16 { .. });
    let keys: &[Knob] = if rope {
        &[Knob::Wg, Knob::Vec4, Knob::Unroll, Knob::Probe]
    } else {
        &[Knob::Wg, Knob::Vec4, Knob::Unroll]
    };
    let wg = f16_wg(op, t, keys, lim)?;
    let probe = match t.get(Knob::Probe) {
        None | Some(0) => false,
        Some(1) => true,
        Some(v) => return Err(bad(format!("probe={v}: must be 0 or 1"))),
    };
    let (cols, units, push, shaders, nbuf, default_unroll) = match *op {
        Op::GemvAddF16 { rows, cols } => (
            cols,
            rows,
            vec![dim(op, rows)?, dim(op, cols)?],
            [Shader::GemvAddF16, Shader::GemvAddF16V8],
            4,
            GEMV_UNROLL,
        ),
        Op::RmsGemvSwigluF16 { rows, cols, eps } => (
            cols,
            rows,
            vec![dim(op, rows)?, dim(op, cols)?, eps.to_bits()],
            [Shader::RmsGemvSwigluF16, Shader::RmsGemvSwigluF16V8],
            4,
            GEMV_PAIR_UNROLL,
        ),
        Op::RmsGemvRopeKvF16 {
            heads,
            head_dim,
            pos0,
            eps,
            ..
        } => (
            heads * head_dim,
            3 * heads * head_dim / 2,
            vec![dim(op, heads)?, dim(op, head_dim)?, pos0, eps.to_bits()],
            [Shader::RmsGemvRopeKvF16, Shader::RmsGemvRopeKvF16V8],
            7,
            GEMV_PAIR_UNROLL,
        ),
        _ => return Err(bad(format!("{op}: not a fused projection"))),
    };
    let v8 = wide(t, cols, true)?;
    let unroll = t.get(Knob::Unroll).unwrap_or(default_unroll);
    if !(1..=8).contains(&unroll) {
        return Err(bad(format!("unroll={unroll}: must be 1..=8")));
    }
    let sg = lim.subgroup_size.unwrap_or(32).clamp(1, wg);
    let d = Dispatch {
        push,
        groups: [groups_for(units as u64, u64::from(wg / sg)), 1, 1],
        ranges: whole(nbuf),
    };
    let mut p = v8_plan(shaders, v8, wg, d);
    p.spec.push(unroll);
    p.spec.push(sg);
    p.tuning = p.tuning.with(Knob::Unroll, unroll);
    if probe {
        p.spec.push(1);
        p.tuning = p.tuning.with(Knob::Probe, 1);
    }
    if let Op::RmsGemvRopeKvF16 {
        head_dim,
        pos0,
        theta,
        ..
    } = *op
    {
        p.aux.push(super::rope_table(1, head_dim, pos0, theta));
    }
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
    let wg = f16_wg(op, t, &[Knob::Wg, Knob::Vec4], lim)?;
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
    let mut p = v8_plan(shaders, v8, wg, d);
    if v8 {
        p.spec.push(npt as u32); // <= NORM_MAX_NPT
    }
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
    let wg = f16_wg(op, t, &[Knob::Wg, Knob::Vec4], lim)?;
    let v8 = wide(t, cols, true)?;
    let items = (rows as u64 * cols as u64) / if v8 { 8 } else { 1 };
    let d = Dispatch {
        push: vec![dim(op, rows)?, dim(op, cols)?],
        groups: [groups_for(items, u64::from(wg)), 1, 1],
        ranges: whole(2),
    };
    Ok(v8_plan([Shader::SwigluF16, Shader::SwigluF16V8], v8, wg, d))
}

/// Tunings worth sweeping (pushed through `push`, which keeps the valid ones).
pub fn candidates(op: &Op, push: &mut dyn FnMut(Tuning)) {
    let plain = Tuning::default().with(Knob::Vec4, 0);
    match op {
        Op::GemvF16 { .. }
        | Op::GemvAddF16 { .. }
        | Op::RmsGemvSwigluF16 { .. }
        | Op::RmsGemvRopeKvF16 { .. } => {
            // Both unrolls at the default workgroup: each kernel's default is one.
            for (wg, unroll) in [
                (128, 4),
                (256, 2),
                (256, 4),
                (256, 8),
                (512, 4),
                (1024, 4),
                (64, 4),
            ] {
                push(
                    Tuning::default()
                        .with(Knob::Wg, wg)
                        .with(Knob::Unroll, unroll),
                );
            }
            push(plain);
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
        Op::GemvAddF16 { .. } | Op::RmsGemvSwigluF16 { .. } | Op::RmsGemvRopeKvF16 { .. } => {
            let (units, cols) = match *op {
                Op::GemvAddF16 { rows, cols } | Op::RmsGemvSwigluF16 { rows, cols, .. } => {
                    (rows, cols)
                }
                Op::RmsGemvRopeKvF16 {
                    heads, head_dim, ..
                } => (3 * heads * head_dim / 2, heads * head_dim),
                _ => (0, 0),
            };
            let sg = u64::from(plan.spec.get(2).copied().unwrap_or(1)).max(1);
            let v8 = plan.tuning.get(Knob::Vec4) == Some(1);
            let per_row = if v8 { cols as u64 / 8 } else { cols as u64 };
            let per_sg = (units as u64).div_ceil(groups * (wg / sg).max(1));
            per_sg * (per_row.div_ceil(sg) + 1)
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
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan;
    use super::super::test_limits::{coop2_listing, f32_acc_only, lavapipe, nvidia};
    use super::*;

    fn linear(tokens: usize, rows: usize, cols: usize) -> Op {
        Op::LinearF16 { tokens, rows, cols }
    }

    /// NVIDIA's limits without VK_NV_cooperative_matrix2: the KHR kernels.
    fn khr_only() -> Limits {
        Limits {
            coop2: false,
            coop2_ops: false,
            ..nvidia()
        }
    }

    #[test]
    fn linear_takes_the_matrix_units_where_it_can_and_the_tiled_kernel_elsewhere() {
        let t = Tuning::default();
        // The Llama-2-7B prefill shapes on an NVIDIA GPU: the
        // cooperative-matrix-2 kernel, whatever the shape.
        for op in [
            linear(2048, 12288, 4096),
            linear(2048, 4096, 11008),
            linear(67, 45, 33),
        ] {
            let p = plan(&op, &t, &nvidia()).unwrap();
            assert_eq!(p.shader, Shader::LinearF16Cm2, "{op}");
            // bm bn bk wg uk group_m
            assert_eq!(p.spec, vec![128, 128, 64, 128, 2, 16], "{op}");
            let Op::LinearF16 { tokens, rows, .. } = op else {
                unreachable!()
            };
            // y is tokens x rows: x along rows, y along tokens.
            assert_eq!(
                p.dispatches[0].groups,
                [rows.div_ceil(128) as u32, tokens.div_ceil(128) as u32, 1],
                "{op}"
            );
            assert_eq!(p.tuning.get(Knob::Coopmat), Some(3));
        }
        // Without it, the KHR kernel where the shape is aligned.
        for op in [linear(2048, 12288, 4096), linear(2048, 4096, 11008)] {
            let p = plan(&op, &t, &khr_only()).unwrap();
            assert_eq!(p.shader, Shader::LinearF16Cm, "{op}");
            assert_eq!(p.spec, vec![128, 128, 32, 128, 2, 32], "{op}");
            assert_eq!(p.dispatches[0].groups[1], 2048 / 128, "{op}");
            assert_eq!(p.tuning.get(Knob::Coopmat), Some(1));
        }
        // Asking for the cooperative-matrix-2 kernel on a device without it
        // is an error, and its tiles are bounded.
        let cm2 = Tuning::default().with(Knob::Coopmat, 3);
        let e = plan(&linear(64, 64, 64), &cm2, &khr_only()).err().unwrap();
        assert!(e.to_string().contains("cooperative_matrix2"), "{e}");
        let huge = cm2.clone().with(Knob::Bn, 4096);
        let e = plan(&linear(64, 64, 64), &huge, &nvidia()).err().unwrap();
        assert!(e.to_string().contains("linear_f16_cm2 tiles"), "{e}");
        // Only at a workgroup size the driver lists for f16 workgroup-scope
        // matrices, with tiles of its granularity: else the KHR kernel.
        let only_256 = Limits {
            coop2_workgroups: coop2_listing(&[(256, 16, 16)]),
            ..nvidia()
        };
        let coarse = Limits {
            coop2_workgroups: coop2_listing(&[(128, 16, 256)]),
            ..nvidia()
        };
        let none = Limits {
            coop2_workgroups: Vec::new(),
            ..nvidia()
        };
        for lim in [&only_256, &coarse, &none] {
            let op = linear(2048, 4096, 4096);
            assert_eq!(plan(&op, &t, lim).unwrap().shader, Shader::LinearF16Cm);
            let e = plan(&op, &cm2, lim).err().unwrap();
            assert!(matches!(e, RuntimeError::Unsupported(_)), "{e}");
            assert!(e.to_string().contains("the driver lists"), "{e}");
        }
        let wide = cm2.clone().with(Knob::Wg, 256).with(Knob::Bn, 256);
        assert_eq!(
            plan(&linear(2048, 4096, 4096), &wide, &only_256)
                .unwrap()
                .shader,
            Shader::LinearF16Cm2
        );
        // The H200 lists no 96, 192 or 512 (192 computed NaNs there), and
        // no 256 for blocks of 16 rows.
        for (wg, bm) in [(96, 128), (192, 128), (512, 128), (256, 16)] {
            let asked = cm2.clone().with(Knob::Wg, wg).with(Knob::Bm, bm);
            let e = plan(&linear(64, 64, 64), &asked, &nvidia()).err().unwrap();
            assert!(e.to_string().contains("the driver lists no"), "{e}");
        }
        let small = cm2.clone().with(Knob::Wg, 64).with(Knob::Bm, 64);
        assert!(plan(&linear(64, 64, 64), &small, &nvidia()).is_ok());
        // Its block order is a key of its own, always in the tuning: a
        // cached entry of dispatch order (0) is not read as the default.
        for (asked, ran) in [(Some(8), 8), (Some(0), 0), (None, 16)] {
            let t = match asked {
                Some(g) => cm2.clone().with(Knob::GroupM, g),
                None => cm2.clone(),
            };
            let p = plan(&linear(2048, 4096, 4096), &t, &nvidia()).unwrap();
            assert_eq!(p.spec[5], ran, "{t}");
            assert_eq!(p.tuning.get(Knob::GroupM), Some(ran), "{t}");
            let again = plan(&linear(2048, 4096, 4096), &p.tuning, &nvidia()).unwrap();
            assert_eq!(again.spec, p.spec, "{t}");
        }
        let e = plan(
            &linear(64, 64, 64),
            &cm2.clone().with(Knob::GroupM, 65),
            &nvidia(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("group_m=65"), "{e}");
        // Unaligned, or no cooperative matrix: the tiled kernel, any shape.
        for (op, lim) in [
            (linear(67, 45, 33), khr_only()),
            (linear(2048, 4096, 4100), khr_only()),
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
    fn linear_stores_f16_tiles_directly_where_the_device_has_f16_accumulators() {
        let op = linear(2048, 12288, 4096);
        let t = Tuning::default();
        // NVIDIA (f16 accumulators of 16x16x16): the direct f16 store, as
        // the binary of 4fa97b0 ran it, not the shared-tile epilogue that cost
        // the kernel most of its rate there (docs/performance.md, 2026-11-26).
        let p = plan(&op, &t, &khr_only()).unwrap();
        assert_eq!(p.shader, Shader::LinearF16Cm);
        assert_eq!(p.tuning.get(Knob::Epilogue), Some(0));
        assert_eq!(p.spec, vec![128, 128, 32, 128, 2, 32]);
        // f16 x f16 -> f32 only: the shared-tile epilogue, same tiles.
        let p = plan(&op, &t, &f32_acc_only()).unwrap();
        assert_eq!(p.shader, Shader::LinearF16CmCs);
        assert_eq!(p.tuning.get(Knob::Epilogue), Some(1));
        assert_eq!(p.tuning.get(Knob::Coopmat), Some(1));
        assert_eq!(p.spec, vec![128, 128, 32, 128, 2, 32]);
        // The key picks either where the device can run it.
        let cs = Tuning::of(&[(Knob::Coopmat, 1), (Knob::Epilogue, 1)]);
        assert_eq!(
            plan(&op, &cs, &nvidia()).unwrap().shader,
            Shader::LinearF16CmCs
        );
        let direct = Tuning::of(&[(Knob::Coopmat, 1), (Knob::Epilogue, 0)]);
        let e = plan(&op, &direct, &f32_acc_only()).err().unwrap();
        assert!(matches!(e, RuntimeError::Unsupported(_)), "{e}");
        assert!(e.to_string().contains("f16-accumulator"), "{e}");
        let e = plan(
            &op,
            &Tuning::of(&[(Knob::Coopmat, 1), (Knob::Epilogue, 2)]),
            &nvidia(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("epilogue=2"), "{e}");
        // The _bt variant follows the same choice.
        let bt = Tuning::of(&[(Knob::Coopmat, 2)]);
        assert_eq!(
            plan(&op, &bt, &nvidia()).unwrap().shader,
            Shader::LinearF16CmBt
        );
        assert_eq!(
            plan(&op, &bt, &f32_acc_only()).unwrap().shader,
            Shader::LinearF16CmBtCs
        );
        // Only the shared-tile epilogue counts its tile per subgroup: 16
        // subgroups' 16 KiB on top of 40 KiB of slices pass 48 KiB.
        let wide = Tuning::of(&[
            (Knob::Coopmat, 1),
            (Knob::Bm, 128),
            (Knob::Bn, 128),
            (Knob::Bk, 32),
            (Knob::Wg, 512),
            (Knob::Sgn, 4),
        ]);
        assert_eq!(
            plan(&op, &wide, &nvidia()).unwrap().shader,
            Shader::LinearF16Cm
        );
        let e = plan(&op, &wide, &f32_acc_only()).err().unwrap();
        assert!(e.to_string().contains("57344"), "{e}");
        // A sweep on NVIDIA times both epilogues; on an f32-only device
        // every matrix-unit candidate plans to the shared-tile one.
        let c = super::super::candidates(&op, &nvidia());
        let shaders: Vec<Shader> = c
            .iter()
            .map(|t| plan(&op, t, &nvidia()).unwrap().shader)
            .collect();
        assert!(shaders.contains(&Shader::LinearF16Cm), "{c:?}");
        assert!(shaders.contains(&Shader::LinearF16CmCs), "{c:?}");
        // ... and each candidate is timed once: no two of them plan to
        // the same kernel, constants and launch (the epilogue=1 copies of
        // the default tiles did, 2026-11-26).
        let mut planned: Vec<(Shader, Vec<u32>, Vec<[u32; 3]>)> = Vec::new();
        for t in super::super::candidates(&op, &f32_acc_only()) {
            let p = plan(&op, &t, &f32_acc_only()).unwrap();
            assert!(
                p.shader != Shader::LinearF16Cm && p.shader != Shader::LinearF16CmBt,
                "{t}"
            );
            let work = (
                p.shader,
                p.spec.clone(),
                p.all_dispatches().map(|d| d.groups).collect(),
            );
            assert!(!planned.contains(&work), "{t} repeats {work:?}");
            planned.push(work);
        }
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
                    assert!(super::super::max_loop_trips(&op, &p) > 0, "{op} {t}");
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
