//! `attn_prefill_f16`: which of its three kernels runs, and their launch.
//!
//! - `attn_prefill_f16` (`coopmat=0`): f32 FMAs, 32 query rows per
//!   workgroup of 128; any device, head_dim a multiple of 8.
//! - `attn_prefill_f16_cm` (`coopmat=1`): both products on KHR cooperative
//!   matrices (16x16x16 f16 x f16 -> f32 subgroup tiles, the `coop16`
//!   limit), 64 query rows per workgroup of four subgroups; needs a fixed
//!   subgroup size that is a multiple of 16 up to 64, 16-bit storage, and
//!   head_dim a multiple of 16. Only f32 accumulators are asked of the
//!   device (the output leaves through shared memory).
//! - `attn_prefill_f16_cm2` (`coopmat=2`): the cooperative-matrix kernel's
//!   launch, staging and products, with the softmax kept in the S tiles
//!   through VK_NV_cooperative_matrix2's matrix operations (row
//!   reductions, per-element functions, conversion of P to an A operand:
//!   the `coop2_ops` limit) instead of rounding S through shared memory;
//!   the same needs as `coopmat=1` besides.
//!
//! The default is the first of cm2, cm and scalar that can run; `coopmat`
//! forces one (a run's tuning, a tuning-cache entry), and a forced kernel
//! the device or the shape cannot take is refused with the reason. The
//! kernels have the same bindings and push constants, so graphs and gates
//! run any of them.
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

/// `attn_prefill_f16`'s tunings worth sweeping (`--tune`): each kernel,
/// the cooperative-matrix-2 one at each tile depth.
pub(super) fn candidates(push: &mut dyn FnMut(Tuning)) {
    for k in [0, 1] {
        push(Tuning::default().with(Knob::Coopmat, k));
    }
    for bk in CM2_KEYS {
        push(Tuning::default().with(Knob::Coopmat, 2).with(Knob::Bk, bk));
    }
}

/// Keys per tile attn_prefill_f16_cm2.comp takes (its BK; Q's 64 rows
/// pass through the K and V rows of one tile, so at least 32), the first
/// the default: on the H200 (580.159.04) 48 keys took 229.5 us at 2048
/// tokens, 32 keys 239.8 and 64 keys 251.9 (`--tune` of
/// attn_prefill_f16.32x128.S2048, 2026-11-30).
const CM2_KEYS: [u32; 3] = [48, 32, 64];

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

/// Shared memory of attn_prefill_f16_cm2.comp at `head_dim`: the K and V
/// rows of attn_prefill_f16_cm, and a 16 x 16 f32 output tile per subgroup
/// (the softmax needs none).
fn cm2_shared(head_dim: usize, bk: u32) -> u64 {
    let row = (head_dim as u64 / 8 + 1) * 16;
    2 * u64::from(bk) * row + u64::from(CM_SUBGROUPS) * 16 * 16 * 4
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
    if t.get(Knob::Coopmat) == Some(2) {
        check_keys(t, &[Knob::Coopmat, Knob::Bk])?;
    } else {
        check_keys(t, &[Knob::Coopmat])?;
    }
    let push = vec![
        tokens as u32,
        heads as u32,
        head_dim as u32,
        pos0,
        max_seq as u32,
    ];
    match t.get(Knob::Coopmat) {
        None => coop(op, tokens, heads, head_dim, &push, Some(CM2_KEYS[0]), lim)
            .or_else(|_| coop(op, tokens, heads, head_dim, &push, None, lim))
            .or_else(|_| scalar(op, tokens, heads, head_dim, push, lim)),
        Some(0) => scalar(op, tokens, heads, head_dim, push, lim),
        Some(1) => coop(op, tokens, heads, head_dim, &push, None, lim),
        Some(2) => {
            let bk = t.get(Knob::Bk).unwrap_or(CM2_KEYS[0]);
            if !CM2_KEYS.contains(&bk) {
                return Err(bad(format!(
                    "attn_prefill_f16_cm2 bk={bk}: keys per tile are one of {CM2_KEYS:?}"
                )));
            }
            coop(op, tokens, heads, head_dim, &push, Some(bk), lim)
        }
        Some(v) => Err(bad(format!(
            "coopmat={v}: must be 0 (attn_prefill_f16, f32 FMAs), 1 (attn_prefill_f16_cm, \
             cooperative matrices) or 2 (attn_prefill_f16_cm2, cooperative matrix 2)"
        ))),
    }
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
    Ok(plan_of(
        Shader::AttnPrefillF16,
        vec![head_dim as u32],
        Tuning::default().with(Knob::Coopmat, 0),
        d,
    ))
}

/// attn_prefill_f16_cm.comp (or, `cm2` = keys per tile,
/// attn_prefill_f16_cm2.comp: the same launch and staging): four subgroups
/// per 64 query rows and head.
fn coop(
    op: &Op,
    tokens: usize,
    heads: usize,
    head_dim: usize,
    push: &[u32],
    cm2: Option<u32>,
    lim: &Limits,
) -> Result<Plan, RuntimeError> {
    let (shader, coopmat) = if cm2.is_some() {
        (Shader::AttnPrefillF16Cm2, 2)
    } else {
        (Shader::AttnPrefillF16Cm, 1)
    };
    let unsupported = |why: String| {
        Err(RuntimeError::Unsupported(format!(
            "{} (coopmat={coopmat}) for {op}: {why}",
            shader.name()
        )))
    };
    if cm2.is_some() && !lim.coop2_ops {
        return unsupported(
            "the device has no VK_NV_cooperative_matrix2 with reductions, conversions and \
             per-element operations"
                .into(),
        );
    }
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
    let shared = match cm2 {
        Some(bk) => cm2_shared(head_dim, bk),
        None => cm_shared(head_dim, sg),
    };
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
    let (spec, tuning) = match cm2 {
        Some(bk) => (
            vec![head_dim as u32, wg, sg, bk],
            Tuning::default()
                .with(Knob::Coopmat, coopmat)
                .with(Knob::Bk, bk),
        ),
        None => (
            vec![head_dim as u32, wg, sg],
            Tuning::default().with(Knob::Coopmat, coopmat),
        ),
    };
    Ok(plan_of(shader, spec, tuning, d))
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

    /// The H200 with VK_NV_cooperative_matrix2 but without its matrix
    /// operations: the KHR kernel's device.
    fn nvidia_khr() -> Limits {
        Limits {
            coop2_ops: false,
            ..test_limits::nvidia()
        }
    }

    /// The launch both matrix kernels share, planned for 2048 tokens of
    /// 32 heads: a workgroup per 64 rows and head, the scalar kernel's push.
    fn four_subgroups_per_64_rows(p: &Plan, name: &str) {
        let d = &p.dispatches[0];
        assert_eq!(d.groups, [32, 32, 1], "{name}: 2048 / 64 blocks x 32 heads");
        assert_eq!(
            d.push,
            vec![2048, 32, 128, 0, 2048],
            "{name}: the scalar kernel's push"
        );
    }

    #[test]
    fn devices_with_cooperative_matrix_2_operations_get_the_cm2_kernel() {
        let lim = test_limits::nvidia();
        let p = plan(&op(2048, 128), &Tuning::default(), &lim).unwrap();
        assert_eq!(p.shader, Shader::AttnPrefillF16Cm2);
        assert_eq!(p.spec, vec![128, 128, 32, 48], "head_dim, wg, sg, bk");
        assert_eq!(p.tuning, forced(2).with(Knob::Bk, 48));
        four_subgroups_per_64_rows(&p, "cm2");
        assert!(cm2_shared(128, 48) < cm_shared(128, 32));
        let p = plan(&op(2048, 128), &forced(2).with(Knob::Bk, 64), &lim).unwrap();
        assert_eq!(p.spec, vec![128, 128, 32, 64]);
        assert_eq!(
            p.dispatches[0].groups,
            [32, 32, 1],
            "bk does not change the grid"
        );
        for bk in [16, 40, 128] {
            let e = refused(&op(512, 128), &forced(2).with(Knob::Bk, bk), &lim);
            assert!(e.to_string().contains("keys per tile are one of"), "{e}");
        }
        let e = refused(&op(512, 128), &forced(1).with(Knob::Bk, 64), &lim);
        assert!(
            e.to_string().contains("tuning key bk does not apply"),
            "{e}"
        );
        // The KHR kernel stays forceable there.
        let p = plan(&op(2048, 128), &forced(1), &lim).unwrap();
        assert_eq!(p.shader, Shader::AttnPrefillF16Cm);
        // A shape the matrix kernels cannot take gets the scalar one by
        // default, and a reason when cm2 is forced.
        let p = plan(&op(100, 24), &Tuning::default(), &lim).unwrap();
        assert_eq!(p.shader, Shader::AttnPrefillF16);
        let e = refused(&op(100, 24), &forced(2), &lim);
        assert!(
            e.to_string().contains("attn_prefill_f16_cm2 (coopmat=2)"),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("head_dim 24 is not a multiple of 16"),
            "{e}"
        );
        // Without the matrix operations (or on lavapipe), cm2 is refused.
        for l in [nvidia_khr(), test_limits::lavapipe()] {
            let e = refused(&op(512, 128), &forced(2), &l);
            assert!(matches!(e, RuntimeError::Unsupported(_)), "{e}");
            assert!(e.to_string().contains("reductions, conversions"), "{e}");
        }
    }

    #[test]
    fn devices_with_16x16x16_tiles_get_the_cooperative_matrix_kernel() {
        for (name, lim) in [
            ("nvidia", nvidia_khr()),
            ("f32 accumulators only", test_limits::f32_acc_only()),
        ] {
            let p = plan(&op(2048, 128), &Tuning::default(), &lim).unwrap();
            assert_eq!(p.shader, Shader::AttnPrefillF16Cm, "{name}");
            assert_eq!(p.spec, vec![128, 128, 32], "{name}: head_dim, wg, sg");
            assert_eq!(p.tuning, forced(1), "{name}");
            four_subgroups_per_64_rows(&p, name);
            assert!(cm_shared(128, 32) <= u64::from(lim.max_shared), "{name}");
        }
        // A partial last block still gets its workgroup.
        let p = plan(&op(100, 64), &Tuning::default(), &nvidia_khr()).unwrap();
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
        scalar(&nvidia_khr(), &op(100, 24));
        // No fixed subgroup size, no 16-bit storage, a subgroup of 8.
        for lim in [
            Limits {
                subgroup_size: None,
                ..nvidia_khr()
            },
            Limits {
                f16_storage: false,
                ..nvidia_khr()
            },
            Limits {
                subgroup_size: Some(8),
                ..nvidia_khr()
            },
        ] {
            scalar(&lim, &op(512, 128));
        }
        // 30 KiB of shared memory: the scalar kernel (28.5 KiB at head_dim
        // 128) fits, the matrix one (31.75 KiB) does not.
        let small = Limits {
            max_shared: 30 * 1024,
            ..nvidia_khr()
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
        let e = refused(&op(100, 24), &forced(1), &nvidia_khr());
        assert!(
            e.to_string()
                .contains("head_dim 24 is not a multiple of 16"),
            "{e}"
        );
        let small = Limits {
            max_shared: 16 * 1024,
            ..nvidia_khr()
        };
        let e = refused(&o, &forced(1), &small);
        assert!(
            e.to_string()
                .contains("32512 bytes of shared memory, the device has 16384"),
            "{e}"
        );
        // The scalar kernel, forced, runs everywhere it fits.
        for lim in [nvidia_khr(), test_limits::lavapipe()] {
            let p = plan(&o, &forced(0), &lim).unwrap();
            assert_eq!(p.shader, Shader::AttnPrefillF16);
        }
        let e = refused(&o, &forced(3), &nvidia_khr());
        assert!(e.to_string().contains("coopmat=3: must be 0"), "{e}");
        let e = refused(&o, &Tuning::default().with(Knob::Wg, 64), &nvidia_khr());
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
            candidates(&o, &nvidia_khr()),
            vec![Tuning::default(), scalar.clone()]
        );
        // With the cm2 operations: its default first, then both others,
        // then its other tile depths.
        assert_eq!(
            candidates(&o, &test_limits::nvidia()),
            vec![
                Tuning::default(),
                scalar,
                forced(1),
                forced(2).with(Knob::Bk, 32),
                forced(2).with(Knob::Bk, 64)
            ]
        );
        // lavapipe: only the scalar kernel, which is the default.
        assert_eq!(
            candidates(&o, &test_limits::lavapipe()),
            vec![Tuning::default()]
        );
    }
}
