//! Shared helpers: a lavapipe device with validation on, random inputs,
//! and a run-and-check against the f64 reference.
#![allow(dead_code)]

use greta_kernels::check::{check_buf, CheckOutcome};
use greta_kernels::{reference, Access, DType, HostBuf, Op};
use greta_runtime::{Backend, DeviceSelect, RunOpts};
use greta_runtime::{CacheDir, VulkanDevice as Device, VulkanOptions as OpenOptions};
use greta_vocab::EnvVars;
use half::f16;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The CPU Vulkan device (lavapipe) with the validation layers forced on.
pub fn device() -> Device {
    device_with(OpenOptions {
        select: DeviceSelect::Cpu,
        validation: Some(true),
        cache: CacheDir::Off,
        max_storage_range: None,
        ..Default::default()
    })
}

pub fn device_with(opts: OpenOptions) -> Device {
    Device::open_with(&opts).unwrap_or_else(|e| panic!("opening lavapipe failed: {e}"))
}

/// A fresh seed, printed so a failure can be replayed with GRETA_TEST_SEED.
pub fn seed() -> u64 {
    let s = std::env::var(EnvVars::GRETA_TEST_SEED)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    eprintln!("seed = {s} (replay with {}={s})", EnvVars::GRETA_TEST_SEED);
    s
}

pub fn random(rng: &mut StdRng, dtype: DType, len: usize) -> HostBuf {
    match dtype {
        DType::F32 => HostBuf::F32((0..len).map(|_| rng.gen_range(-2.0f32..2.0)).collect()),
        DType::F16 => HostBuf::F16(
            (0..len)
                .map(|_| f16::from_f32(rng.gen_range(-2.0f32..2.0)))
                .collect(),
        ),
        DType::U32 => HostBuf::U32((0..len).map(|_| rng.gen()).collect()),
    }
}

pub struct Outcome {
    pub outputs: Vec<HostBuf>,
    /// One per output, each under the op's tolerance.
    pub comparisons: Vec<CheckOutcome>,
    pub stats: greta_runtime::RunStats,
}

impl Outcome {
    /// Every output within the op's tolerance (applied by [`run_checked`]).
    pub fn passes(&self) -> bool {
        self.comparisons.iter().all(|c| c.pass)
    }
}

/// Random values for each of `op`'s inputs, in order.
fn draw_inputs(rng: &mut StdRng, op: &Op) -> Vec<HostBuf> {
    op.inputs()
        .iter()
        .map(|s| random(rng, s.dtype, s.len))
        .collect()
}

/// The inputs [`run_checked`] runs `op` on for `seed`: a test that checks
/// an outcome against something of its own starts from the same values.
pub fn inputs(op: &Op, seed: u64) -> Vec<HostBuf> {
    draw_inputs(&mut StdRng::seed_from_u64(seed), op)
}

/// Every tuning candidate the device offers for `op` (more than two) runs
/// correctly, each with `base`'s options and its tuning.
pub fn assert_every_candidate(dev: &mut Device, op: &Op, seed: u64, base: &RunOpts) {
    let cands = dev.tuning_candidates(op);
    assert!(cands.len() > 2, "{op}: {cands:?}");
    for t in cands {
        let opts = RunOpts {
            tuning: Some(t.clone()),
            ..base.clone()
        };
        let out = run_checked(dev, op, seed, &opts);
        assert!(
            out.passes(),
            "{op} tuning {t} ({}): {:?}",
            out.stats.kernel,
            out.comparisons
        );
    }
}

/// Runs `op` on fresh random inputs (outputs poisoned; read-write outputs
/// random) and compares every output with the reference.
pub fn run_checked(dev: &mut Device, op: &Op, seed: u64, opts: &RunOpts) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let inputs = draw_inputs(&mut rng, op);
    let mut outputs: Vec<HostBuf> = op
        .outputs()
        .iter()
        .map(|s| {
            if s.access == Access::ReadWrite {
                random(&mut rng, s.dtype, s.len)
            } else {
                HostBuf::poisoned(s.dtype, s.len)
            }
        })
        .collect();
    let prior = outputs.clone();
    let want = reference(op, &inputs, &prior).expect("reference");
    let stats = dev
        .run(greta_runtime::Job::new(op, &inputs, &mut outputs, opts))
        .unwrap_or_else(|e| panic!("{op}: {e}"));
    let comparisons = outputs
        .iter()
        .zip(&want)
        .map(|(g, w)| check_buf(g, w, op.tolerance()))
        .collect();
    Outcome {
        outputs,
        comparisons,
        stats,
    }
}

/// Fails the test if the validation layers said anything.
pub fn assert_clean(dev: &Device) {
    let msgs = dev.validation_messages();
    assert!(
        msgs.is_empty(),
        "{} validation message(s):\n{}",
        msgs.len(),
        msgs.join("\n")
    );
}

/// Asserts that `op` matches its reference, printing the errors.
pub fn assert_op(dev: &mut Device, op: &Op, seed: u64) -> Outcome {
    let out = run_checked(
        dev,
        op,
        seed,
        &RunOpts {
            repeats: 2,
            ..RunOpts::default()
        },
    );
    for c in &out.comparisons {
        eprintln!(
            "{op}: rel_err={:.3e} max_abs_err={:.3e} mismatches={} non_finite={}",
            c.rel_err, c.max_abs_err, c.mismatches, c.non_finite
        );
    }
    assert!(
        out.passes(),
        "{op} does not match its reference (tolerance {:?}): {:?}",
        op.tolerance(),
        out.comparisons
    );
    assert_eq!(out.stats.device_ns.len(), 2);
    assert_clean(dev);
    out
}
