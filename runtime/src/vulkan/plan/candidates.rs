//! The tunings a `--tune` sweep times for an op: each kernel family's own
//! list, each at every subgroup size the device offers, and no two that
//! plan to the same work.

use super::{attn, f16_block, gemm, plan, Limits, Plan, Shader, Wave};
use crate::tuning::{Knob, Tuning};
use greta_kernels::Op;

/// Tunings worth sweeping for `op` (the default first), all valid on this
/// device, each a different kernel or launch: two tunings that plan to the
/// same work (an explicit key equal to what the device's default picks
/// anyway, e.g. `epilogue=1` on a device with f32 accumulators only) are
/// timed once.
pub fn candidates(op: &Op, lim: &Limits) -> Vec<Tuning> {
    let mut out = vec![Tuning::default()];
    let mut seen: Vec<WorkKey> = plan(op, &Tuning::default(), lim)
        .map(|p| vec![WorkKey::of(&p)])
        .unwrap_or_default();
    let mut push = |t: Tuning| offer(op, lim, &mut out, &mut seen, t);
    kernel_candidates(op, lim, &mut push);
    // Where the device offers subgroup sizes, each candidate at each one:
    // the default of a kernel that counts subgroups is one of them (and
    // planned the same, so not timed twice); every other kernel runs at
    // the driver's choice by default.
    if let Some(r) = lim.waves.filter(|w| w.choice()) {
        for t in out.clone() {
            for size in r.sizes() {
                offer(
                    op,
                    lim,
                    &mut out,
                    &mut seen,
                    t.clone().with(Knob::Wave, size),
                );
            }
        }
    }
    out
}

/// Adds `t` to `out` when it plans, to work no earlier one plans to.
fn offer(op: &Op, lim: &Limits, out: &mut Vec<Tuning>, seen: &mut Vec<WorkKey>, t: Tuning) {
    let Ok(p) = plan(op, &t, lim) else { return };
    let key = WorkKey::of(&p);
    if !out.contains(&t) && !seen.contains(&key) {
        seen.push(key);
        out.push(t);
    }
}

/// Each kernel family's own sweep, through `push`.
fn kernel_candidates(op: &Op, lim: &Limits, mut push: &mut dyn FnMut(Tuning)) {
    match op {
        Op::GemmF32 { .. } | Op::GemmF16 { .. } => gemm::candidates(op, lim, &mut push),
        Op::TestSlow { .. } => {}
        Op::AttnPrefillF16 { .. } => attn::candidates(&mut push),
        Op::LinearF16 { .. } => gemm::linear::candidates(&mut push),
        // Chunks per workgroup: the same work in more or fewer workgroups
        // (a plan that makes the same dispatch as an earlier one is dropped).
        Op::AttnDecodeF16 { .. } => {
            for per in [1, 2, 4, 8, 16] {
                push(Tuning::default().with(Knob::Chunks, per));
            }
        }
        Op::GemvF16 { .. }
        | Op::GemvAddF16 { .. }
        | Op::RmsGemvSwigluF16 { .. }
        | Op::RmsGemvRopeKvF16 { .. }
        | Op::RmsNormF16 { .. }
        | Op::AddRmsNormF16 { .. }
        | Op::SwigluF16 { .. } => f16_block::candidates(op, &mut push),
        Op::RmsNorm { .. } | Op::LayerNorm { .. } | Op::Softmax { .. } => {
            for wg in [64, 128, 256, 512, 1024] {
                push(Tuning::default().with(Knob::Wg, wg));
            }
            push(Tuning::default().with(Knob::Reg, 0));
            push(Tuning::default().with(Knob::Vec4, 0));
        }
        Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. } => {
            for (wg, unroll) in [
                (256, 1),
                (256, 2),
                (256, 4),
                (256, 8),
                (128, 4),
                (512, 4),
                (1024, 4),
                (1024, 1),
            ] {
                push(
                    Tuning::default()
                        .with(Knob::Wg, wg)
                        .with(Knob::Unroll, unroll),
                );
            }
            for groups in [1024, 8192] {
                push(Tuning::default().with(Knob::Groups, groups));
            }
        }
        _ => {
            for wg in [64, 128, 256, 512, 1024] {
                push(Tuning::default().with(Knob::Wg, wg));
            }
        }
    }
}

/// What a plan runs: its passes' shaders and specialization constants and
/// every dispatch's push constants, groups and ranges (the tuning label
/// left out: two labels can name one kernel).
#[derive(PartialEq)]
struct WorkKey(Vec<(Shader, Vec<u32>)>, Vec<DispatchKey>, Option<Wave>);

type DispatchKey = (Vec<u32>, [u32; 3], Vec<Option<(u64, u64)>>);

impl WorkKey {
    fn of(p: &Plan) -> WorkKey {
        let passes = std::iter::once((p.shader, p.spec.clone()))
            .chain(p.then.iter().map(|t| (t.shader, t.spec.clone())))
            .collect();
        let dispatches = p
            .all_dispatches()
            .map(|d| (d.push.clone(), d.groups, d.ranges.clone()))
            .collect();
        WorkKey(passes, dispatches, p.wave)
    }
}
