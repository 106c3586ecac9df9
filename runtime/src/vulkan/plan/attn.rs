//! `attn_prefill_f16`: which of its two kernels runs, and their launch.
//!
//! - `attn_prefill_f16` (`coopmat=0`): f32 FMAs, 32 query rows per
//!   workgroup of 128; any device, head_dim a multiple of 8.
//! - `attn_prefill_f16_cm` (`coopmat=1`): both products on KHR cooperative
//!   matrices (16x16x16 f16 x f16 -> f32 subgroup tiles, the `coop16`
//!   limit), 64 query rows per workgroup of four subgroups; needs a fixed
//!   subgroup size that is a multiple of 16 up to 64, 16-bit storage, and
//!   head_dim a multiple of 16. Only f32 accumulators are asked of the
//!   device (the output leaves through shared memory).
//!
//! The default is the cooperative-matrix kernel wherever it can run, else
//! the scalar one; `coopmat` forces either (a run's tuning, a tuning-cache
//! entry), and a forced kernel the device or the shape cannot take is
//! refused with the reason. Both kernels have the same bindings and push
//! constants, so graphs and gates run either.
//!
//! `--tune` times both kernels where both can run ([`super::candidates`]):
//! the scalar one is 10-11x slower on the H200 (docs/performance.md
//! "Vulkan prefill attention on cooperative matrices"), but no RDNA device has run the matrix one yet. Each
//! run's warm-up is sized from the last time of the same plan (not of the
//! shape class: the scalar kernel's warm-up sized from the matrix kernel's
//! time overran the 10 s submission limit at 2048 tokens, see
//! `vulkan/run.rs` `time_key`).

use super::{bad, check_keys, groups_for, whole, Dispatch, Limits, Plan, Shader, MAX_GROUPS};
use crate::error::RuntimeError;
use crate::tuning::{Knob, Tuning};
use greta_kernels::Op;

/// Query rows per workgroup of attn_prefill_f16.comp (its BQ; its keys
/// per tile, BK, are the same).
pub(super) const SCALAR_BQ: u64 = 32;

/// Keys per tile of both kernels (what a workgroup's outer loop steps by).
pub(super) const BK: u64 = 32;

/// attn_prefill_f16_cm.comp: query rows per workgroup (4 subgroups of 16).
const CM_BQ: u64 = 64;

/// Subgroups per workgroup of attn_prefill_f16_cm.comp (its NSG).
const CM_SUBGROUPS: u32 = 4;

/// Shared memory of attn_prefill_f16.comp at `head_dim`: Q, K and V tiles
/// of 32 rows as words of two halves, the 32 x 33 scores, 3 x 32 row floats.
fn scalar_shared(head_dim: usize) -> u64 {
    let rows = SCALAR_BQ;
    3 * rows * head_dim as u64 * 2 + (rows * (rows + 1) + 3 * rows) * 4
}

/// Shared memory of attn_prefill_f16_cm.comp at `head_dim` and subgroup
/// size `sg` (its `shared` declarations): K and V rows of BK keys, padded
/// by 8 halves (Q's 64 rows pass through the same space); per subgroup a
/// 16 x (BK + 4) f32 slice of S, a 16 x (BK + 8) f16 P tile, `sg` floats
/// of row partials and 16 reciprocal row sums.
fn cm_shared(head_dim: usize, sg: u32) -> u64 {
    let row = (head_dim as u64 / 8 + 1) * 16;
    let per_sg = 16 * (BK + 4) * 4 + 16 * (BK / 2 + 4) * 4 + u64::from(sg) * 4 + 16 * 4;
    2 * BK * row + u64::from(CM_SUBGROUPS) * per_sg
}

/// The plan of `op` (an `AttnPrefillF16`) under tuning `t`.
pub(super) fn prefill(op: &Op, t: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    let Op::AttnPrefillF16 {
        tokens,
        heads,
        head_dim,
        pos0,
        max_seq,
    } = *op
    else {
        return Err(bad(format!("{op} is not attn_prefill_f16")));
    };
    check_keys(t, &[Knob::Coopmat])?;
    let push = vec![
        tokens as u32,
        heads as u32,
        head_dim as u32,
        pos0,
        max_seq as u32,
    ];
    match t.get(Knob::Coopmat) {
        None => coop(op, tokens, heads, head_dim, &push, lim)
            .or_else(|_| scalar(op, tokens, heads, head_dim, push, lim)),
        Some(0) => scalar(op, tokens, heads, head_dim, push, lim),
        Some(1) => coop(op, tokens, heads, head_dim, &push, lim),
        Some(v) => Err(bad(format!(
            "coopmat={v}: must be 0 (attn_prefill_f16, f32 FMAs) or 1 (attn_prefill_f16_cm, cooperative matrices)"
        ))),
    }
}

fn plan_of(shader: Shader, spec: Vec<u32>, coopmat: u32, d: Dispatch) -> Plan {
    Plan {
        shader,
        per_dispatch: false,
        spec,
        tuning: Tuning::default().with(Knob::Coopmat, coopmat),
        aux: vec![],
        dispatches: vec![d],
        then: vec![],
        wave: None,
    }
}

/// attn_prefill_f16.comp: a workgroup of 128 per 32 query rows and head.
fn scalar(
    op: &Op,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    push: Vec<u32>,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    let shared = scalar_shared(head_dim);
    if shared > u64::from(lim.max_shared) {
        return Err(bad(format!(
            "{op}: needs {shared} bytes of shared memory, the device has {}",
            lim.max_shared
        )));
    }
    let d = Dispatch {
        push,
        groups: [groups_for(tokens as u64, SCALAR_BQ), heads as u32, 1],
        ranges: whole(4),
    };
    Ok(plan_of(Shader::AttnPrefillF16, vec![head_dim as u32], 0, d))
}

/// attn_prefill_f16_cm.comp: four subgroups per 64 query rows and head.
fn coop(
    op: &Op,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    push: &[u32],
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    let unsupported = |why: String| {
        Err(RuntimeError::Unsupported(format!(
            "attn_prefill_f16_cm (coopmat=1) for {op}: {why}"
        )))
    };
    if !lim.coop16 {
        return unsupported(
            "the device has no 16x16x16 f16 x f16 -> f32 subgroup cooperative matrix".into(),
        );
    }
    if !lim.f16_storage {
        return unsupported("the device lacks 16-bit storage and f16 arithmetic in shaders".into());
    }
    let sg = match lim.subgroup_size {
        Some(sg) if sg % 16 == 0 && (16..=64).contains(&sg) => sg,
        Some(sg) => return unsupported(format!("subgroup size {sg} is not 16, 32, 48 or 64")),
        None => return unsupported("the device has no fixed subgroup size".into()),
    };
    let wg = CM_SUBGROUPS * sg;
    if wg > lim.max_invocations {
        return unsupported(format!(
            "a workgroup of {wg} invocations, the device allows {}",
            lim.max_invocations
        ));
    }
    if !head_dim.is_multiple_of(16) {
        return unsupported(format!("head_dim {head_dim} is not a multiple of 16"));
    }
    let shared = cm_shared(head_dim, sg);
    if shared > u64::from(lim.max_shared) {
        return unsupported(format!(
            "needs {shared} bytes of shared memory, the device has {}",
            lim.max_shared
        ));
    }
    // The kernel numbers blocks from the last one, so every block needs a
    // workgroup of its own (no clamping to the grid limit).
    let blocks = (tokens as u64).div_ceil(CM_BQ);
    if blocks > u64::from(MAX_GROUPS) || heads > MAX_GROUPS as usize {
        return unsupported(format!(
            "{blocks} blocks of {CM_BQ} tokens x {heads} heads exceed {MAX_GROUPS} workgroups per dimension"
        ));
    }
    let d = Dispatch {
        push: push.to_vec(),
        groups: [blocks as u32, heads as u32, 1],
        ranges: whole(4),
    };
    Ok(plan_of(
        Shader::AttnPrefillF16Cm,
        vec![head_dim as u32, wg, sg],
        1,
        d,
    ))
}

/// Most loop trips of one invocation (llvmpipe's guard): the key tiles a
/// workgroup walks; the loops inside each are short.
pub(super) fn max_loop_trips(tokens: usize, pos0: u32) -> u64 {
    (pos0 as u64 + tokens as u64).div_ceil(BK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vulkan::plan::{candidates, plan, test_limits};

    fn op(tokens: usize, head_dim: usize) -> Op {
        Op::AttnPrefillF16 {
            tokens,
            heads: 32,
            head_dim,
            pos0: 0,
            max_seq: tokens,
        }
    }

    /// The error planning `o` under `t` on `lim` gives (a plan fails the test).
    fn refused(o: &Op, t: &Tuning, lim: &Limits) -> RuntimeError {
        match plan(o, t, lim) {
            Ok(p) => panic!("{o} with {t} planned {}", p.shader.name()),
            Err(e) => e,
        }
    }

    fn forced(v: u32) -> Tuning {
        Tuning::default().with(Knob::Coopmat, v)
    }

    #[test]
    fn devices_with_16x16x16_tiles_get_the_cooperative_matrix_kernel() {
        for (name, lim) in [
            ("nvidia", test_limits::nvidia()),
            ("f32 accumulators only", test_limits::f32_acc_only()),
        ] {
            let p = plan(&op(2048, 128), &Tuning::default(), &lim).unwrap();
            assert_eq!(p.shader, Shader::AttnPrefillF16Cm, "{name}");
            assert_eq!(p.spec, vec![128, 128, 32], "{name}: head_dim, wg, sg");
            assert_eq!(p.tuning, forced(1), "{name}");
            let d = &p.dispatches[0];
            assert_eq!(d.groups, [32, 32, 1], "{name}: 2048 / 64 blocks x 32 heads");
            assert_eq!(
                d.push,
                vec![2048, 32, 128, 0, 2048],
                "{name}: the scalar kernel's push"
            );
            assert!(cm_shared(128, 32) <= u64::from(lim.max_shared), "{name}");
        }
        // A partial last block still gets its workgroup.
        let p = plan(&op(100, 64), &Tuning::default(), &test_limits::nvidia()).unwrap();
        assert_eq!(p.dispatches[0].groups, [2, 32, 1]);
        // Wave64 (RDNA's other subgroup size): four subgroups of 64.
        let lim = Limits {
            subgroup_size: Some(64),
            max_shared: 65536,
            ..test_limits::f32_acc_only()
        };
        let p = plan(&op(512, 128), &Tuning::default(), &lim).unwrap();
        assert_eq!(
            (p.shader, p.spec.clone()),
            (Shader::AttnPrefillF16Cm, vec![128, 256, 64])
        );
    }

    #[test]
    fn lavapipe_and_shapes_the_matrix_kernel_cannot_take_get_the_scalar_kernel() {
        let scalar = |lim: &Limits, o: &Op| {
            let p = plan(o, &Tuning::default(), lim).unwrap();
            assert_eq!(p.shader, Shader::AttnPrefillF16, "{o}");
            let Op::AttnPrefillF16 { head_dim, .. } = *o else {
                unreachable!()
            };
            assert_eq!(p.spec, vec![head_dim as u32], "{o}: head_dim");
            assert_eq!(p.tuning, forced(0), "{o}");
            p
        };
        let p = scalar(&test_limits::lavapipe(), &op(2048, 128));
        assert_eq!(
            p.dispatches[0].groups,
            [64, 32, 1],
            "2048 / 32 rows x 32 heads"
        );
        // head_dim a multiple of 8 but not of 16.
        scalar(&test_limits::nvidia(), &op(100, 24));
        // No fixed subgroup size, no 16-bit storage, a subgroup of 8.
        for lim in [
            Limits {
                subgroup_size: None,
                ..test_limits::nvidia()
            },
            Limits {
                f16_storage: false,
                ..test_limits::nvidia()
            },
            Limits {
                subgroup_size: Some(8),
                ..test_limits::nvidia()
            },
        ] {
            scalar(&lim, &op(512, 128));
        }
        // 30 KiB of shared memory: the scalar kernel (28.5 KiB at head_dim
        // 128) fits, the matrix one (31.75 KiB) does not.
        let small = Limits {
            max_shared: 30 * 1024,
            ..test_limits::nvidia()
        };
        assert!(cm_shared(128, 32) > 30 * 1024 && scalar_shared(128) <= 30 * 1024);
        scalar(&small, &op(512, 128));
    }

    #[test]
    fn a_forced_kernel_the_device_cannot_run_is_refused_with_the_reason() {
        let o = op(512, 128);
        let e = refused(&o, &forced(1), &test_limits::lavapipe());
        let msg = e.to_string();
        assert!(matches!(e, RuntimeError::Unsupported(_)), "{msg}");
        assert!(msg.contains("attn_prefill_f16_cm (coopmat=1)"), "{msg}");
        assert!(msg.contains("16x16x16"), "{msg}");
        let e = refused(&op(100, 24), &forced(1), &test_limits::nvidia());
        assert!(
            e.to_string()
                .contains("head_dim 24 is not a multiple of 16"),
            "{e}"
        );
        let small = Limits {
            max_shared: 16 * 1024,
            ..test_limits::nvidia()
        };
        let e = refused(&o, &forced(1), &small);
        assert!(
            e.to_string()
                .contains("32512 bytes of shared memory, the device has 16384"),
            "{e}"
        );
        // The scalar kernel, forced, runs everywhere it fits.
        for lim in [test_limits::nvidia(), test_limits::lavapipe()] {
            let p = plan(&o, &forced(0), &lim).unwrap();
            assert_eq!(p.shader, Shader::AttnPrefillF16);
        }
        let e = refused(&o, &forced(2), &test_limits::nvidia());
        assert!(e.to_string().contains("coopmat=2: must be 0"), "{e}");
        let e = refused(
            &o,
            &Tuning::default().with(Knob::Wg, 64),
            &test_limits::nvidia(),
        );
        assert!(
            e.to_string().contains("tuning key wg does not apply"),
            "{e}"
        );
    }

    #[test]
    fn the_sweep_times_each_kernel_the_device_can_run_once() {
        let o = op(2048, 128);
        // The default is the matrix kernel; coopmat=1 is the same work.
        let scalar = Tuning::default().with(Knob::Coopmat, 0);
        assert_eq!(
            candidates(&o, &test_limits::nvidia()),
            vec![Tuning::default(), scalar]
        );
        // lavapipe: only the scalar kernel, which is the default.
        assert_eq!(
            candidates(&o, &test_limits::lavapipe()),
            vec![Tuning::default()]
        );
    }
}
