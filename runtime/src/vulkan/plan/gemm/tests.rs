//! Tests of the GEMM planner.
use super::super::test_limits::nvidia as h200;
use super::*;

fn f16(m: usize, n: usize, k: usize) -> Op {
    Op::GemmF16 { m, n, k }
}

fn run_plan(op: &Op, t: &Tuning, lim: &Limits) -> Result<Plan, RuntimeError> {
    let (Op::GemmF16 { m, n, k } | Op::GemmF32 { m, n, k }) = *op else {
        unreachable!()
    };
    plan(op, m, n, k, t, lim)
}

#[test]
fn defaults_pick_the_fast_kernels_where_they_apply() {
    let lim = h200();
    let p = run_plan(&f16(4096, 4096, 4096), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::GemmF16Cmreg);
    // bm bn bk wg sgn sg stages direct group_m probe, as the shader numbers them.
    assert_eq!(p.spec, vec![128, 128, 64, 128, 2, 32, 1, 1, 0, 0]);
    // Not a multiple of the block: the NV kernel, which takes any shape.
    let p = run_plan(&f16(4100, 4096, 4096), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::GemmF16Cm2);
    let p = run_plan(
        &Op::GemmF32 {
            m: 4096,
            n: 4096,
            k: 4096,
        },
        &Tuning::default(),
        &lim,
    )
    .unwrap();
    assert_eq!(
        (p.shader, p.spec.clone()),
        (Shader::GemmF32V4, vec![128, 128, 8, 256])
    );
    let p = run_plan(
        &Op::GemmF32 {
            m: 100,
            n: 90,
            k: 70,
        },
        &Tuning::default(),
        &lim,
    )
    .unwrap();
    assert_eq!(p.shader, Shader::GemmF32);
}

#[test]
fn a_device_with_two_subgroup_sizes_never_gets_cmreg() {
    // RDNA-like: wave32 and wave64 both possible, KHR cooperative matrix, no NV extension.
    let lim = Limits {
        subgroup_size: None,
        coop2: false,
        coop2_ops: false,
        max_shared: 65536,
        ..h200()
    };
    let p = run_plan(&f16(4096, 4096, 4096), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::GemmF16Coopmat);
    let err = run_plan(
        &f16(4096, 4096, 4096),
        &Tuning::default().with(Knob::Coopmat, 3),
        &lim,
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("subgroup size"), "{err}");
}

#[test]
fn the_spec_constants_carry_every_tuning_key() {
    // Device run 11 ran every cmreg candidate with the shader's default
    // stages because the planner dropped them: the spec must follow the tuning.
    let lim = h200();
    let t = Tuning::default()
        .with(Knob::Coopmat, 3)
        .with(Knob::Bk, 32)
        .with(Knob::Stages, 2)
        .with(Knob::Direct, 0)
        .with(Knob::GroupM, 8);
    let p = run_plan(&f16(8192, 8192, 8192), &t, &lim).unwrap();
    assert_eq!(p.spec, vec![128, 128, 32, 128, 2, 32, 2, 0, 8, 0]);
    assert_eq!(p.tuning.get(Knob::GroupM), Some(8));
    assert_eq!(p.tuning.get(Knob::Stages), Some(2));
    let p = run_plan(&f16(8192, 8192, 8192), &Tuning::default(), &lim).unwrap();
    assert_eq!(
        p.tuning.get(Knob::GroupM),
        None,
        "unset keys stay out of the cache"
    );
}

#[test]
fn shared_memory_over_the_device_limit_is_refused() {
    // Two stages of 128x128x64 with padded rows: 2 * (128*9 + 64*17) * 16
    // = 71680 bytes, over the 49152 the H200 reports.
    let t = Tuning::default()
        .with(Knob::Coopmat, 3)
        .with(Knob::Bk, 64)
        .with(Knob::Stages, 2);
    let err = run_plan(&f16(4096, 4096, 4096), &t, &h200()).err().unwrap();
    assert!(err.to_string().contains("71680 bytes"), "{err}");
    // A device with that much accepts it.
    let big = Limits {
        max_shared: 71680,
        ..h200()
    };
    run_plan(&f16(4096, 4096, 4096), &t, &big).unwrap();
}

/// A lavapipe-like device: no cooperative matrix, 32 KiB shared memory.
fn cpu_like() -> Limits {
    Limits {
        coop_f16: None,
        coop2: false,
        coop2_ops: false,
        coop16: false,
        coop16_f16: false,
        f16_storage: true,
        max_shared: 32768,
        max_invocations: 1024,
        subgroup_size: Some(8),
        ..h200()
    }
}

#[test]
fn tunings_that_wrapped_u32_arithmetic_are_refused() {
    // Each once passed the checks through a wrapped
    // product (SIGSEGV in the driver, a remainder by zero, unbounded memory).
    let f32_op = |s| Op::GemmF32 { m: s, n: s, k: s };
    let cases = [
        (
            f16(256, 256, 256),
            Tuning::default().with(Knob::Bk, 1 << 30),
        ),
        (
            f32_op(256),
            Tuning::default()
                .with(Knob::Bm, 1 << 31)
                .with(Knob::Bn, 128)
                .with(Knob::Bk, 8)
                .with(Knob::V4, 1),
        ),
        (f32_op(256), Tuning::default().with(Knob::Bk, 1 << 30)),
        (
            f32_op(256),
            Tuning::default().with(Knob::V4, 0).with(Knob::Bk, 1 << 30),
        ),
        (
            f32_op(256),
            Tuning::default()
                .with(Knob::V4, 0)
                .with(Knob::Tm, 1 << 16)
                .with(Knob::Tn, 1 << 16)
                .with(Knob::Bm, 1 << 16)
                .with(Knob::Bn, 1 << 16),
        ),
        (
            f16(4096, 4096, 4096),
            Tuning::default()
                .with(Knob::Coopmat, 2)
                .with(Knob::Bk, 1 << 30),
        ),
        (
            f16(4096, 4096, 4096),
            Tuning::default()
                .with(Knob::Coopmat, 3)
                .with(Knob::Bm, 1 << 28)
                .with(Knob::Bk, 1 << 28),
        ),
    ];
    for lim in [cpu_like(), h200()] {
        for (op, t) in &cases {
            match run_plan(op, t, &lim) {
                Err(RuntimeError::BadInput(msg)) => assert!(!msg.is_empty()),
                Err(RuntimeError::Unsupported(_)) => {}
                Err(e) => panic!("{op} {t}: unexpected error {e}"),
                Ok(p) => panic!("{op} {t}: planned {} {:?}", p.shader, p.spec),
            }
        }
    }
}

/// Shared memory each kernel declares (its shader's arrays), computed
/// independently of the planner in u128 from the spec constants.
fn shared_bytes(p: &Plan) -> u128 {
    let s: Vec<u128> = p.spec.iter().map(|v| *v as u128).collect();
    match p.shader {
        Shader::GemmF32 | Shader::GemmF16 => (s[0] + 1 + s[1]) * s[2] * 4,
        Shader::GemmF32V4 => 2 * s[2] * ((s[0] / 4 + 1) * 16 + s[1] * 4),
        Shader::GemmF16Cmreg => s[6] * 16 * (s[0] * (s[2] / 8 + 1) + s[2] * (s[1] / 8 + 1)),
        Shader::GemmF16Coopmat => s[0] * s[2] * 2 + s[2] * s[1] * 2 + s[0] * s[1] * 4,
        _ => 0,
    }
}

#[test]
fn edge_values_of_every_key_never_panic_and_plans_fit_the_device() {
    // Every combination of awkward values for the keys that size tiles.
    let values = [
        0u32,
        1,
        3,
        8,
        16,
        64,
        256,
        4096,
        1 << 16,
        1 << 30,
        1 << 31,
        u32::MAX,
    ];
    let mut planned = 0;
    for lim in [cpu_like(), h200()] {
        for family in [
            (Knob::V4, 0),
            (Knob::V4, 1),
            (Knob::Coopmat, 0),
            (Knob::Coopmat, 2),
            (Knob::Coopmat, 3),
        ] {
            let op = if family.0 == Knob::V4 {
                Op::GemmF32 {
                    m: 512,
                    n: 512,
                    k: 512,
                }
            } else {
                f16(512, 512, 512)
            };
            for bm in values {
                for bn in values {
                    for bk in values {
                        let t = Tuning::default()
                            .with(family.0, family.1)
                            .with(Knob::Bm, bm)
                            .with(Knob::Bn, bn)
                            .with(Knob::Bk, bk);
                        if let Ok(p) = run_plan(&op, &t, &lim) {
                            planned += 1;
                            assert!(
                                shared_bytes(&p) <= lim.max_shared as u128,
                                "{t}: {} {:?}",
                                p.shader,
                                p.spec
                            );
                            let (m, n) = (512u64, 512u64);
                            let g = p.dispatches[0].groups;
                            assert!(g[0] as u64 * p.spec[1] as u64 >= n, "{t}");
                            assert!(g[1] as u64 * p.spec[0] as u64 >= m, "{t}");
                        }
                    }
                }
            }
        }
    }
    assert!(
        planned > 10,
        "only {planned} plans: the sweep tests nothing"
    );
}

#[test]
fn every_candidate_plans_within_the_limits() {
    for lim in [
        h200(),
        Limits {
            subgroup_size: None,
            coop2: false,
            coop2_ops: false,
            ..h200()
        },
        Limits {
            coop_f16: None,
            coop2: false,
            coop2_ops: false,
            coop16: false,
            coop16_f16: false,
            max_shared: 32768,
            max_invocations: 256,
            ..h200()
        },
    ] {
        for op in [
            f16(4096, 4096, 4096),
            Op::GemmF32 {
                m: 4096,
                n: 4096,
                k: 4096,
            },
        ] {
            let mut n = 0;
            candidates(&op, &lim, &mut |t| {
                if let Ok(p) = run_plan(&op, &t, &lim) {
                    n += 1;
                    // The workgroup size (spec 3 or 5) never exceeds the device's.
                    let wg = match p.shader {
                        Shader::GemmF32 | Shader::GemmF16 => p.spec[5],
                        Shader::GemmF16Coopmat => p.spec[5],
                        _ => p.spec[3],
                    };
                    assert!(wg <= lim.max_invocations, "{} {t}", p.shader);
                }
            });
            assert!(n >= 4, "{op}: only {n} candidates plan");
        }
    }
}
