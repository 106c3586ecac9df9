//! Untimed passes before a run's timed repeats on GPUs: how many, sized
//! from the last time of the same plan on this device, so that the timed
//! repeats run at working clocks.

use super::plan::Plan;
use super::Device;
use crate::error::RuntimeError;
use greta_kernels::Op;
use greta_vocab::EnvVars;

/// Untimed passes before the timed repeats (GPUs only): at least this
/// many, and enough for about [`WARMUP_NS`] of GPU time once a run of the
/// same shape class has been timed on this device.
const WARMUP_PASSES: u32 = 2;
/// GPU time of warm-up before the timed repeats of small ops (launch-bound
/// or cache-resident; quick profiles stay quick).
const WARMUP_NS: u64 = 30_000_000;
/// GPU time of warm-up before the timed repeats of large ops (a pass moves
/// at least [`LARGE_BYTES`] or does at least [`LARGE_FLOPS`]). An idle GPU clocks down
/// (H200: 345 MHz SM clock at rest) and the driver clocks it up only after
/// sustained work: timed straight after the seconds a gate spends checking
/// results on the CPU, fill 1 GiB ran at 1255 GB/s after 30 ms of warm-up
/// and at 4359 GB/s after 1 s (H200, driver 580.159.04, 2026-11-22; copy
/// 1691 -> 4085, rmsnorm 4096x8192 1492 -> 3826 GB/s, gemm_f16 4096
/// 13 -> 65 TFLOP/s).
const WARMUP_NS_LARGE: u64 = 1_000_000_000;
const LARGE_BYTES: u64 = 64 << 20;
const LARGE_FLOPS: u64 = 8_000_000_000;
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
    let target = warmup_target_ns(dev, op.bytes_moved(), op.flops());
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
/// `GRETA_VK_WARMUP_MS` where set (exactly that: measurements), else about
/// a second before large work (GPU clocks ramp), 30 ms before small, less
/// what the GPU's work just before left it warm (`crate::warmth`).
pub(super) fn warmup_target_ns(dev: &Device, bytes: u64, flops: u64) -> u64 {
    dev.warmup_ns.unwrap_or_else(|| {
        dev.warmth
            .owed(if bytes >= LARGE_BYTES || flops >= LARGE_FLOPS {
                WARMUP_NS_LARGE
            } else {
                WARMUP_NS
            })
    })
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
