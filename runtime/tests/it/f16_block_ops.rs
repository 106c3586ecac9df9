//! The f16 ops of the transformer block's set 1 (gemv_f16, linear_f16,
//! rmsnorm_f16, add_rmsnorm_f16, swiglu_f16) against their f64 references
//! on lavapipe, validation on: both kernels of each (halves; 16-byte
//! vectors of 8 halves), shapes off every tile and vector width, and every
//! tuning candidate.

use crate::common::*;
use greta_kernels::spirv::Shader;
use greta_kernels::{HostBuf, Op};
use greta_runtime::{Backend, Knob, RunOpts, Tuning};

fn with(t: Tuning) -> RunOpts {
    RunOpts {
        tuning: Some(t),
        repeats: 1,
        ..RunOpts::default()
    }
}

/// Runs `op` with `t` and asserts every output passes and `shader` ran.
fn check(dev: &mut greta_runtime::VulkanDevice, op: &Op, t: Tuning, shader: Shader, s: u64) {
    let out = run_checked(dev, op, s, &with(t.clone()));
    assert!(out.passes(), "{op} {t}: {:?}", out.comparisons);
    assert_eq!(out.stats.kernel, shader.name(), "{op} {t}");
}

#[test]
fn gemv_f16_both_kernels() {
    let mut dev = device();
    let s = seed();
    for (rows, cols) in [
        (1, 1),
        (5, 7),
        (37, 75),
        (3, 8),
        (64, 1024),
        (33, 4104),
        (9, 1000),
    ] {
        let op = Op::GemvF16 { rows, cols };
        let plain = Tuning::default().with(Knob::Vec4, 0);
        check(&mut dev, &op, plain, Shader::GemvF16, s);
        if cols % 8 == 0 {
            let out = assert_op(&mut dev, &op, s);
            assert_eq!(out.stats.kernel, Shader::GemvF16V8.name(), "{op}");
            // Fewer lanes than vectors per unrolled trip, and a tail.
            for unroll in [1, 3, 8] {
                let t = Tuning::default().with(Knob::Unroll, unroll);
                check(&mut dev, &op, t, Shader::GemvF16V8, s);
            }
        } else {
            assert_op(&mut dev, &op, s);
        }
    }
    assert_clean(&dev);
}

#[test]
fn linear_f16_tiled() {
    let mut dev = device();
    let s = seed();
    for (tokens, rows, cols) in [
        (1, 1, 1),
        (19, 40, 72),
        (64, 64, 64),
        (67, 45, 33),
        (3, 130, 17),
    ] {
        let out = assert_op(&mut dev, &Op::LinearF16 { tokens, rows, cols }, s);
        // lavapipe has no cooperative matrices: the tiled kernel.
        assert_eq!(out.stats.kernel, Shader::LinearF16.name());
    }
    assert_clean(&dev);
}

/// A transposed weight (W read as `[in][out]`, the layout mismatch of the
/// seeds' history) fails the check: the kernel really reads W `[out][in]`.
#[test]
fn linear_and_gemv_read_w_as_out_by_in() {
    let mut dev = device();
    let s = seed();
    for op in [
        Op::LinearF16 {
            tokens: 8,
            rows: 24,
            cols: 40,
        },
        Op::GemvF16 { rows: 24, cols: 40 },
    ] {
        let out = run_checked(&mut dev, &op, s, &RunOpts::default());
        assert!(out.passes(), "{op}: {:?}", out.comparisons);
        // The reference of the same inputs with W transposed disagrees.
        let inputs = inputs(&op, s);
        let w = inputs[1].as_f16().unwrap();
        let (rows, cols) = (24, 40);
        let wt: Vec<half::f16> = (0..rows * cols)
            .map(|e| w[(e % cols) * rows + e / cols])
            .collect();
        let swapped = [inputs[0].clone(), HostBuf::F16(wt)];
        let want = greta_kernels::reference(&op, &swapped, &[]).unwrap();
        let c = greta_kernels::check::check_buf(&out.outputs[0], &want[0], op.tolerance());
        assert!(!c.pass, "{op}: a transposed W passed: {c:?}");
    }
}

#[test]
fn rmsnorm_and_add_rmsnorm_f16_both_kernels() {
    let mut dev = device();
    let s = seed();
    for (rows, cols) in [(1, 1), (3, 5), (7, 256), (5, 1000), (2, 4104), (2, 4099)] {
        for eps in [1e-5f32, 0.0] {
            for op in [
                Op::RmsNormF16 { rows, cols, eps },
                Op::AddRmsNormF16 { rows, cols, eps },
            ] {
                let (plain, wide) = match op {
                    Op::RmsNormF16 { .. } => (Shader::RmsnormF16, Shader::RmsnormF16V8),
                    _ => (Shader::AddRmsnormF16, Shader::AddRmsnormF16V8),
                };
                let out = assert_op(&mut dev, &op, s);
                let want = if cols % 8 == 0 { wide } else { plain };
                assert_eq!(out.stats.kernel, want.name(), "{op}");
                check(
                    &mut dev,
                    &op,
                    Tuning::default().with(Knob::Vec4, 0),
                    plain,
                    s,
                );
            }
        }
    }
    // A row too long for the registers at a small workgroup: the plain kernel.
    let op = Op::RmsNormF16 {
        rows: 2,
        cols: 8 * 16 * 64 + 8,
        eps: 1e-5,
    };
    check(
        &mut dev,
        &op,
        Tuning::default().with(Knob::Wg, 64),
        Shader::RmsnormF16,
        s,
    );
    assert_clean(&dev);
}

/// add_rmsnorm_f16's h is the rounded sum, and y the norm of that h: the
/// outputs agree with rmsnorm_f16 run on the h it returned.
#[test]
fn add_rmsnorm_f16_norms_the_stored_h() {
    let mut dev = device();
    let s = seed();
    let (rows, cols) = (4, 1032);
    let op = Op::AddRmsNormF16 {
        rows,
        cols,
        eps: 1e-5,
    };
    let out = assert_op(&mut dev, &op, s);
    let norm = Op::RmsNormF16 {
        rows,
        cols,
        eps: 1e-5,
    };
    let inputs = inputs(&op, s);
    let mut y = vec![HostBuf::poisoned(greta_kernels::DType::F16, rows * cols)];
    dev.run(greta_runtime::Job::new(
        &norm,
        &[out.outputs[0].clone(), inputs[2].clone()],
        &mut y,
        &RunOpts::default(),
    ))
    .unwrap();
    assert_eq!(y[0], out.outputs[1], "y is rmsnorm of the stored h");
}

#[test]
fn swiglu_f16_both_kernels() {
    let mut dev = device();
    let s = seed();
    for (rows, cols) in [(1, 1), (3, 5), (7, 256), (5, 1000), (2, 4099), (3, 11008)] {
        let op = Op::SwigluF16 { rows, cols };
        let out = assert_op(&mut dev, &op, s);
        let want = if cols % 8 == 0 {
            Shader::SwigluF16V8
        } else {
            Shader::SwigluF16
        };
        assert_eq!(out.stats.kernel, want.name(), "{op}");
        check(
            &mut dev,
            &op,
            Tuning::default().with(Knob::Vec4, 0),
            Shader::SwigluF16,
            s,
        );
    }
    assert_clean(&dev);
}

/// Every tuning candidate (what `--tune` may pick) is correct.
#[test]
fn every_f16_block_tuning_candidate_is_correct() {
    let mut dev = device();
    let s = seed();
    for op in [
        Op::GemvF16 {
            rows: 70,
            cols: 520,
        },
        Op::LinearF16 {
            tokens: 70,
            rows: 33,
            cols: 45,
        },
        Op::RmsNormF16 {
            rows: 3,
            cols: 1032,
            eps: 1e-6,
        },
        Op::AddRmsNormF16 {
            rows: 3,
            cols: 2056,
            eps: 1e-6,
        },
        Op::SwigluF16 {
            rows: 3,
            cols: 1032,
        },
    ] {
        assert_every_candidate(&mut dev, &op, s, &with(Tuning::default()));
    }
    assert_clean(&dev);
}

/// The decode projections with the block's small steps fused in
/// (gemv_add_f16, rms_gemv_swiglu_f16, rms_gemv_rope_kv_f16) against their
/// f64 references (fresh random inputs; caches with meaningful prior rows
/// that must survive): both kernels of each, widths off every vector and
/// lane count, the Llama head size, and every tuning candidate of one.
#[test]
fn fused_decode_projections_both_kernels() {
    let mut dev = device();
    let s = seed();
    let mut ops = Vec::new();
    for (rows, cols) in [(1, 1), (37, 75), (3, 8), (64, 1024), (33, 4104), (9, 1000)] {
        ops.push(Op::GemvAddF16 { rows, cols });
        ops.push(Op::RmsGemvSwigluF16 {
            rows,
            cols,
            eps: 1e-5,
        });
    }
    for (heads, head_dim, pos0, max_seq) in [
        (1, 2, 0, 1),
        (3, 10, 7, 12),
        (2, 8, 5, 9),
        (4, 32, 300, 301),
        (2, 128, 40, 64),
    ] {
        ops.push(Op::RmsGemvRopeKvF16 {
            heads,
            head_dim,
            pos0,
            max_seq,
            theta: 10000.0,
            eps: 1e-5,
        });
    }
    for op in &ops {
        let (plain, wide) = match op {
            Op::GemvAddF16 { .. } => (Shader::GemvAddF16, Shader::GemvAddF16V8),
            Op::RmsGemvSwigluF16 { .. } => (Shader::RmsGemvSwigluF16, Shader::RmsGemvSwigluF16V8),
            _ => (Shader::RmsGemvRopeKvF16, Shader::RmsGemvRopeKvF16V8),
        };
        check(
            &mut dev,
            op,
            Tuning::default().with(Knob::Vec4, 0),
            plain,
            s,
        );
        let cols = match *op {
            Op::GemvAddF16 { cols, .. } | Op::RmsGemvSwigluF16 { cols, .. } => cols,
            Op::RmsGemvRopeKvF16 {
                heads, head_dim, ..
            } => heads * head_dim,
            _ => unreachable!(),
        };
        let out = assert_op(&mut dev, op, s);
        if cols % 8 == 0 {
            assert_eq!(out.stats.kernel, wide.name(), "{op}");
            for unroll in [1, 3, 8] {
                let t = Tuning::default().with(Knob::Unroll, unroll);
                check(&mut dev, op, t, wide, s);
            }
        } else {
            assert_eq!(out.stats.kernel, plain.name(), "{op}");
        }
    }
    let base = RunOpts {
        repeats: 1,
        ..RunOpts::default()
    };
    assert_every_candidate(
        &mut dev,
        &Op::RmsGemvRopeKvF16 {
            heads: 4,
            head_dim: 32,
            pos0: 3,
            max_seq: 9,
            theta: 10000.0,
            eps: 1e-5,
        },
        s,
        &base,
    );
    assert_clean(&dev);
}
