//! Untimed passes before a run's timed repeats on GPUs: how many, sized
//! from the last time of the same plan on this device, so that the timed
//! repeats run at working clocks.

use super::plan::Plan;
use super::Device;
use crate::error::RuntimeError;
use greta_kernels::Op;
use greta_vocab::EnvVars;

/// Untimed passes before the timed repeats (GPUs only): at least this
/// many, and enough for the warm-up `crate::warmth` asks for once a run of the
/// same shape class has been timed on this device.
const WARMUP_PASSES: u32 = 2;
/// Most warm-up passes (bounds the command buffer of very short kernels).
const WARMUP_MAX_PASSES: u64 = 20_000;

/// Longest warm-up `GRETA_VK_WARMUP_MS` can ask for; larger values are
/// this (a warm-up also stops at [`WARMUP_MAX_PASSES`]).
const WARMUP_MAX: std::time::Duration = std::time::Duration::from_secs(60);

/// `GRETA_VK_WARMUP_MS` in nanoseconds (unset: `None`), clamped to
/// [`WARMUP_MAX`]; garbage is an error naming the variable, as for every
/// numeric setting (`greta_vocab::number`).
pub(super) fn warmup_from_env() -> Result<Option<u64>, RuntimeError> {
    greta_vocab::number::env_duration(
        EnvVars::GRETA_VK_WARMUP_MS,
        greta_vocab::number::Unit::Millis,
        WARMUP_MAX,
    )
    .map(|d| d.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
    .map_err(RuntimeError::BadInput)
}

/// Untimed warm-up passes on GPUs: an idle GPU runs the first
/// milliseconds at idle clocks (H200: 345 MHz SM clock at rest).
pub(super) fn warmup_passes(dev: &Device, op: &Op, plan: &Plan) -> u32 {
    if dev.info.is_cpu() {
        return 0;
    }
    // Per repeat, the last time measured for this plan.
    let per = dev
        .last_ns
        .get(&time_key(op, plan))
        .copied()
        .filter(|&ns| ns > 0)
        .map(|ns| {
            if plan.per_dispatch {
                ns * plan.dispatches.len().max(1) as u64
            } else {
                ns
            }
        });
    // GRETA_VK_WARMUP_MS overrides the warm-up time (measurements); read
    // and checked once, at open (`warmup_from_env`).
    let target = op_warmup_ns(dev, op);
    per.map_or(WARMUP_PASSES as u64, |ns| {
        target
            .div_ceil(ns)
            .clamp(WARMUP_PASSES as u64, WARMUP_MAX_PASSES)
    }) as u32
}

/// Which earlier run's time sizes a run's warm-up: one of the same shape
/// class, kernel and tuning. A shape class alone is not enough: in a tune
/// sweep a candidate 10x slower than the one timed before it (the scalar
/// prefill attention after the cooperative-matrix one, H200, 2026-11-26)
/// got a warm-up sized from the fast one's time, about 11.5 s of GPU work
/// in one submission against its 10 s limit, and the device was lost.
/// Nanoseconds of warm-up before work of `bytes` and `flops` is timed:
/// `GRETA_VK_WARMUP_MS` where set (exactly that: measurements), else
/// `crate::warmth`'s rule, less what the GPU's work just before left it
/// warm.
pub(super) fn warmup_target_ns(dev: &Device, bytes: u64, flops: u64) -> u64 {
    dev.warmup_ns
        .unwrap_or_else(|| dev.warmth.owed(crate::warmth::target_ns(bytes, flops)))
}

/// The same for `op`'s work (`crate::warmth::op_target_ns`).
fn op_warmup_ns(dev: &Device, op: &Op) -> u64 {
    dev.warmup_ns
        .unwrap_or_else(|| dev.warmth.owed(crate::warmth::op_target_ns(op)))
}

pub(super) fn time_key(op: &Op, plan: &Plan) -> String {
    format!(
        "{}|{}|{}",
        crate::tuning_cache::shape_class(op),
        plan.shader.name(),
        plan.tuning
    )
}

#[cfg(test)]
mod tests {
    use super::time_key;
    use crate::tuning::{Knob, Tuning};
    use crate::vulkan::plan::{plan, test_limits};
    use greta_kernels::Op;

    /// A warm-up is sized from the same plan's last time: the scalar
    /// attention kernel does not inherit the matrix kernel's (10x shorter)
    /// time, nor a tile size another's.
    #[test]
    fn a_warm_up_is_sized_from_the_same_plans_time_only() {
        let lim = test_limits::nvidia();
        let attn = Op::AttnPrefillF16 {
            tokens: 2048,
            heads: 32,
            head_dim: 128,
            pos0: 0,
            max_seq: 2048,
        };
        let key = |op: &Op, t: Tuning| time_key(op, &plan(op, &t, &lim).unwrap());
        let matrix = key(&attn, Tuning::default());
        assert_eq!(matrix, key(&attn, Tuning::default()));
        assert_ne!(matrix, key(&attn, Tuning::default().with(Knob::Coopmat, 0)));
        let norm = Op::RmsNorm {
            rows: 512,
            cols: 4096,
            eps: 1e-5,
        };
        assert_ne!(
            key(&norm, Tuning::default().with(Knob::Wg, 64)),
            key(&norm, Tuning::default().with(Knob::Wg, 256))
        );
    }
}
