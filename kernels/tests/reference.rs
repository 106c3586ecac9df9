//! The references themselves, on hand-computed cases, and the checker.

use greta_kernels::check::check_buf;
use greta_kernels::{reference, slow_hash, Access, DType, HostBuf, Op, Tolerance};

fn f32s(v: &[f32]) -> HostBuf {
    HostBuf::F32(v.to_vec())
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
    }
}

#[test]
fn gemm_by_hand() {
    // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]
    let op = Op::GemmF32 { m: 2, n: 2, k: 2 };
    let out = reference(
        &op,
        &[f32s(&[1., 2., 3., 4.]), f32s(&[5., 6., 7., 8.])],
        &[],
    )
    .unwrap();
    close(&out[0], &[19., 22., 43., 50.]);
    // Non-square: 1x3 * 3x2.
    let op = Op::GemmF32 { m: 1, n: 2, k: 3 };
    let out = reference(
        &op,
        &[f32s(&[1., 2., 3.]), f32s(&[1., 0., 0., 1., 1., 1.])],
        &[],
    )
    .unwrap();
    close(&out[0], &[4., 5.]);
    let h = |v: &[f32]| HostBuf::F16(v.iter().map(|&x| half::f16::from_f32(x)).collect());
    let op = Op::GemmF16 { m: 2, n: 2, k: 2 };
    let out = reference(&op, &[h(&[1., 2., 3., 4.]), h(&[5., 6., 7., 8.])], &[]).unwrap();
    close(&out[0], &[19., 22., 43., 50.]);
}

#[test]
fn norms_softmax_by_hand() {
    let x = f32s(&[3., 4.]);
    let out = reference(
        &Op::RmsNorm {
            rows: 1,
            cols: 2,
            eps: 0.0,
        },
        &[x.clone(), f32s(&[1., 2.])],
        &[],
    )
    .unwrap();
    let rms = (12.5f64).sqrt();
    close(&out[0], &[3. / rms, 8. / rms]);
    let out = reference(
        &Op::LayerNorm {
            rows: 1,
            cols: 2,
            eps: 0.0,
        },
        &[x.clone(), f32s(&[1., 1.]), f32s(&[0., 10.])],
        &[],
    )
    .unwrap();
    close(&out[0], &[-1., 11.]);
    let out = reference(
        &Op::Softmax { rows: 2, cols: 2 },
        &[f32s(&[0., 0., 1000., 1000.])],
        &[],
    )
    .unwrap();
    close(&out[0], &[0.5, 0.5, 0.5, 0.5]);
}

#[test]
fn rope_by_hand() {
    // head_dim 2: one pair, frequency 1, angle = position.
    let op = Op::Rope {
        tokens: 2,
        heads: 1,
        head_dim: 2,
        pos0: 0,
        theta: 10000.0,
    };
    let out = reference(&op, &[f32s(&[1., 0., 1., 0.])], &[]).unwrap();
    close(&out[0], &[1., 0., 1f64.cos(), 1f64.sin()]);
}

#[test]
fn kv_update_keeps_the_rest() {
    let op = Op::KvUpdate {
        layers: 1,
        max_seq: 3,
        heads: 1,
        head_dim: 2,
        pos: 1,
        n_new: 1,
    };
    let outs = op.outputs();
    assert!(outs.iter().all(|s| s.access == Access::ReadWrite));
    let prior = vec![
        f32s(&[1., 2., 3., 4., 5., 6.]),
        f32s(&[-1., -2., -3., -4., -5., -6.]),
    ];
    let out = reference(&op, &[f32s(&[9., 8.]), f32s(&[7., 6.])], &prior).unwrap();
    close(&out[0], &[1., 2., 9., 8., 5., 6.]);
    close(&out[1], &[-1., -2., 7., 6., -5., -6.]);
    // Without the prior content the reference refuses.
    assert!(reference(&op, &[f32s(&[9., 8.]), f32s(&[7., 6.])], &[]).is_err());
}

#[test]
fn slow_hash_is_xorshift32() {
    assert_eq!(slow_hash(0), 0x1234_5678);
    let mut x: u32 = 0x1234_5678;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    assert_eq!(slow_hash(1), x);
}

#[test]
fn contracts_and_rates() {
    let op = Op::GemmF32 { m: 2, n: 3, k: 4 };
    assert_eq!(op.flops(), 48);
    assert_eq!(op.bytes_moved(), 4 * (8 + 12 + 6));
    assert_eq!(
        Op::GemmF16 { m: 2, n: 3, k: 4 }.bytes_moved(),
        2 * (8 + 12) + 4 * 6
    );
    assert_eq!(Op::Copy { n: 10 }.bytes_moved(), 80);
    assert_eq!(Op::Fill { n: 10, value: 0 }.bytes_moved(), 40);
    assert_eq!(Op::Copy { n: 10 }.tolerance(), Tolerance::Exact);
    assert!(Op::TestSlow { iters: 1 }.is_test_only() && !Op::Copy { n: 1 }.is_test_only());
    assert_eq!(
        Op::Softmax { rows: 2, cols: 3 }.to_string(),
        "softmax(rows=2,cols=3)"
    );
    let op = Op::Rope {
        tokens: 1,
        heads: 2,
        head_dim: 4,
        pos0: 3,
        theta: 500.0,
    };
    let json = serde_json::to_string(&op).unwrap();
    assert!(json.contains("\"op\":\"rope\""), "{json}");
    assert_eq!(serde_json::from_str::<Op>(&json).unwrap(), op);
}

#[test]
fn every_kernel_is_embedded_as_spirv() {
    use greta_kernels::spirv::Shader;
    for k in [
        Shader::Noop,
        Shader::Fill,
        Shader::Copy,
        Shader::VecAdd,
        Shader::GemmF32,
        Shader::GemmF16,
        Shader::Rmsnorm,
        Shader::Layernorm,
        Shader::Softmax,
        Shader::Rope,
        Shader::KvUpdate,
        Shader::BrokenCopy,
        Shader::Slow,
    ] {
        let w = k.words();
        assert_eq!(w[0], 0x0723_0203, "{k}: not SPIR-V");
    }
}

#[test]
fn invalid_shapes_are_errors() {
    for op in [
        Op::Copy { n: 0 },
        Op::Rope {
            tokens: 1,
            heads: 1,
            head_dim: 3,
            pos0: 0,
            theta: 1e4,
        },
        Op::KvUpdate {
            layers: 1,
            max_seq: 4,
            heads: 1,
            head_dim: 1,
            pos: 3,
            n_new: 2,
        },
        Op::RmsNorm {
            rows: 1,
            cols: 1,
            eps: f32::NAN,
        },
        Op::TestBrokenCopy { n: 1 },
        Op::GemmF32 {
            m: 1 << 17,
            n: 1,
            k: 1 << 16,
        },
    ] {
        let e = op.validate().unwrap_err();
        assert!(!e.msg.is_empty(), "{op}");
    }
    // Wrong buffer type/length is reported with the buffer's name.
    let e = reference(&Op::Copy { n: 2 }, &[f32s(&[1., 2.])], &[]).unwrap_err();
    assert!(e.to_string().contains("input x"), "{e}");
}

/// f16 outputs (the transformer block's activations): widened exactly,
/// `Exact` against the reference rounded to f16, a relative norm as for
/// f32, and the f16 poison (a NaN) never passes.
#[test]
fn f16_outputs_are_checked_like_their_values() {
    use half::f16;
    let want = [1.0, 1.0 / 3.0, -2.5e-3];
    let h = |v: &[f64]| HostBuf::F16(v.iter().map(|&x| f16::from_f64(x)).collect());
    assert!(check_buf(&h(&want), &want, Tolerance::Exact).pass);
    let mut off = match h(&want) {
        HostBuf::F16(v) => v,
        _ => unreachable!(),
    };
    off[1] = f16::from_bits(off[1].to_bits() + 1);
    let off = HostBuf::F16(off);
    assert!(
        !check_buf(&off, &want, Tolerance::Exact).pass,
        "one ulp off is not exact"
    );
    assert!(check_buf(&off, &want, Tolerance::FP16_ACC32).pass);
    let poisoned = HostBuf::poisoned(DType::F16, 3);
    assert!(!check_buf(&poisoned, &want, Tolerance::RelNorm(f64::INFINITY)).pass);
}

#[test]
fn checker_verdicts() {
    let want = [1.0, 2.0, 3.0];
    assert!(check_buf(&f32s(&[1., 2., 3.]), &want, Tolerance::Exact).pass);
    let got = f32s(&[1., 2., 3.0001]);
    let c = check_buf(&got, &want, Tolerance::RelNorm(1e-4));
    assert!(c.pass && !check_buf(&got, &want, Tolerance::RelNorm(1e-6)).pass);
    assert_eq!(c.max_abs_at, Some(2));
    // NaN never passes, whatever the tolerance.
    let c = check_buf(
        &f32s(&[1., f32::NAN, 3.]),
        &want,
        Tolerance::RelNorm(f64::INFINITY),
    );
    assert!(!c.pass);
    assert_eq!(c.non_finite, 1);
    // Poison is NaN for floats and a mismatch for integers.
    let p = HostBuf::poisoned(DType::F32, 3);
    assert!(!check_buf(&p, &want, Tolerance::RelNorm(1.0)).pass);
    let p = HostBuf::poisoned(DType::U32, 3);
    assert!(!check_buf(&p, &want, Tolerance::Exact).pass);
    // Length mismatch fails.
    assert!(!check_buf(&f32s(&[1., 2.]), &want, Tolerance::RelNorm(1.0)).pass);
}
