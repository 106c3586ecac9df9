//! Opening the HIP backend. Where no AMD GPU exists (CI, these machines),
//! the error must say that no HIP device was found and why. On a machine
//! with one, every op runs and matches its f64 CPU reference.
#![cfg(feature = "hip")]

use greta_runtime::hip::{HipBackend, HipError};
use greta_runtime::kernels::{check, reference};
use greta_runtime::{Backend, DType, DeviceSelect, HostBuf, Op, RunOpts, RuntimeError};
use rand::{Rng, SeedableRng};

#[test]
fn opening_without_a_device_explains_why() {
    match HipBackend::open(&DeviceSelect::Auto) {
        Err(e) if e.is_no_device() => {
            let msg = e.to_string();
            assert!(
                msg.starts_with("no HIP device found: hipGetDeviceCount returned"),
                "{msg}"
            );
            assert!(msg.contains("/dev/kfd") || msg.contains("KFD"), "{msg}");
            let rt: RuntimeError = e.into();
            assert!(matches!(rt, RuntimeError::NoDevice(_)), "{rt}");
            let listed = greta_runtime::hip::list_devices().unwrap_err();
            assert!(matches!(listed, RuntimeError::NoDevice(_)), "{listed}");
        }
        Err(e) => panic!("expected no device or a working one, got: {e}"),
        Ok(b) => assert!(!b.info().name.is_empty() && b.hip_info().gfx.starts_with("gfx")),
    }
}

fn random(dtype: DType, len: usize, rng: &mut impl Rng) -> HostBuf {
    match dtype {
        DType::F32 => HostBuf::F32((0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()),
        DType::F16 => HostBuf::F16(
            (0..len)
                .map(|_| half::f16::from_f32(rng.gen_range(-1.0f32..1.0)))
                .collect(),
        ),
        DType::U32 => HostBuf::U32((0..len).map(|_| rng.gen()).collect()),
    }
}

/// Runs on an AMD GPU only (it returns early, saying so, elsewhere).
#[test]
fn every_op_matches_its_reference_on_a_real_gpu() {
    let mut dev = match HipBackend::open(&DeviceSelect::Auto) {
        Err(HipError::NoDevice { .. }) => {
            eprintln!("no HIP device here: the on-GPU check did not run");
            return;
        }
        Err(e) => panic!("{e}"),
        Ok(d) => d,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x9e7a);
    let ops = [
        Op::Noop,
        Op::Fill {
            n: 100_003,
            value: 0xa5a5_0f0f,
        },
        Op::Copy { n: 100_003 },
        Op::VecAdd { n: 100_003 },
        Op::GemmF32 {
            m: 129,
            n: 67,
            k: 95,
        },
        Op::GemmF16 {
            m: 129,
            n: 67,
            k: 95,
        },
        Op::RmsNorm {
            rows: 7,
            cols: 1001,
            eps: 1e-6,
        },
        Op::LayerNorm {
            rows: 7,
            cols: 1001,
            eps: 1e-5,
        },
        Op::Softmax {
            rows: 7,
            cols: 1001,
        },
        Op::Rope {
            tokens: 9,
            heads: 4,
            head_dim: 64,
            pos0: 1000,
            theta: 10000.0,
        },
        Op::KvUpdate {
            layers: 2,
            max_seq: 64,
            heads: 4,
            head_dim: 32,
            pos: 17,
            n_new: 5,
        },
    ];
    for op in ops {
        let inputs: Vec<HostBuf> = op
            .inputs()
            .iter()
            .map(|s| random(s.dtype, s.len, &mut rng))
            .collect();
        let prior: Vec<HostBuf> = op
            .outputs()
            .iter()
            .map(|s| match s.access {
                greta_runtime::kernels::Access::ReadWrite => random(s.dtype, s.len, &mut rng),
                _ => HostBuf::poisoned(s.dtype, s.len),
            })
            .collect();
        let mut outputs = prior.clone();
        let stats = dev
            .run(
                &op,
                &inputs,
                &mut outputs,
                &RunOpts {
                    repeats: 3,
                    ..RunOpts::default()
                },
            )
            .unwrap();
        assert_eq!(stats.device_ns.len(), 3);
        let want = reference(&op, &inputs, &prior).unwrap();
        for (got, want) in outputs.iter().zip(&want) {
            let c = check::compare(got, want);
            assert!(c.passes(op.tolerance()), "{op}: {c:?}");
        }
    }
    // The checker's own test kernel is caught.
    let op = Op::TestBrokenCopy { n: 1000 };
    let inputs = vec![random(DType::U32, 1000, &mut rng)];
    let mut outputs = vec![HostBuf::poisoned(DType::U32, 1000)];
    dev.run(&op, &inputs, &mut outputs, &RunOpts::default())
        .unwrap();
    let want = reference(&op, &inputs, &[]).unwrap();
    assert!(!check::compare(&outputs[0], &want[0]).passes(op.tolerance()));

    // The slow test kernel computes the documented chain...
    let op = Op::TestSlow { iters: 1000 };
    let mut out = vec![HostBuf::poisoned(DType::U32, 1)];
    dev.run(&op, &[], &mut out, &RunOpts::default()).unwrap();
    assert_eq!(
        out[0].as_u32().unwrap()[0],
        greta_runtime::kernels::slow_hash(1000)
    );
    // ...and with ~4e9 serial steps it outlasts a 20 ms limit: a timeout,
    // after which the device is lost and refuses further work at once.
    let op = Op::TestSlow { iters: u32::MAX };
    let opts = RunOpts {
        timeout: std::time::Duration::from_millis(20),
        ..RunOpts::default()
    };
    let started = std::time::Instant::now();
    let e = dev.run(&op, &[], &mut out, &opts).unwrap_err();
    assert!(matches!(e, RuntimeError::Timeout { .. }), "{e}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "the timeout did not return promptly"
    );
    assert!(dev.lost().is_some());
    let again = dev
        .run(&Op::Noop, &[], &mut [], &RunOpts::default())
        .unwrap_err();
    assert!(matches!(again, RuntimeError::DeviceLost(_)), "{again}");
}
