//! Every op against its f64 CPU reference on lavapipe, validation on,
//! fresh random inputs, sizes that are not multiples of any tile.

use crate::common::*;
use greta_kernels::spirv::Shader;
use greta_kernels::Op;
use greta_runtime::{Backend, Knob, RunOpts};

#[test]
fn fill_and_copy() {
    let mut dev = device();
    let s = seed();
    for n in [1, 3, 4, 5, 1000, 4099, 70_001] {
        assert_op(
            &mut dev,
            &Op::Fill {
                n,
                value: 0x5a5a_0000 ^ n as u32,
            },
            s,
        );
        assert_op(&mut dev, &Op::Copy { n }, s);
    }
}

#[test]
fn vec_add() {
    let mut dev = device();
    let s = seed();
    for n in [1, 2, 7, 1024, 33_333] {
        assert_op(&mut dev, &Op::VecAdd { n }, s);
    }
}

#[test]
fn noop() {
    let mut dev = device();
    let out = assert_op(&mut dev, &Op::Noop, seed());
    assert!(out.outputs.is_empty());
}

#[test]
fn gemm_f32() {
    let mut dev = device();
    let s = seed();
    for (m, n, k) in [
        (1, 1, 1),
        (64, 64, 64),
        (67, 45, 33),
        (130, 70, 129),
        (5, 200, 17),
    ] {
        let out = assert_op(&mut dev, &Op::GemmF32 { m, n, k }, s);
        // vec4 rows (n and k multiples of 4) take the vec4 kernel, the rest the scalar one.
        let want = if n % 4 == 0 && k % 4 == 0 {
            Shader::GemmF32V4
        } else {
            Shader::GemmF32
        };
        assert_eq!(out.stats.kernel, want.name(), "{m}x{n}x{k}");
    }
    // The vec4 kernel at edges of every kind: m, n, k not multiples of the
    // 64x64x8 tile (n, k still multiples of 4).
    for (m, n, k) in [(67, 68, 36), (130, 132, 4), (1, 4, 12)] {
        let out = assert_op(&mut dev, &Op::GemmF32 { m, n, k }, s);
        assert_eq!(out.stats.kernel, Shader::GemmF32V4.name(), "{m}x{n}x{k}");
    }
    // Large products default to 128x128 blocks (odd m, shallow k keeps the reference cheap).
    let out = assert_op(
        &mut dev,
        &Op::GemmF32 {
            m: 1030,
            n: 1024,
            k: 19,
        },
        s,
    );
    assert_eq!(
        out.stats.tuning.get(Knob::Bm),
        Some(128),
        "{:?}",
        out.stats.tuning
    );
    let out = assert_op(
        &mut dev,
        &Op::GemmF32 {
            m: 1030,
            n: 1028,
            k: 20,
        },
        s,
    );
    assert_eq!(out.stats.kernel, Shader::GemmF32V4.name());
    assert_eq!(out.stats.tuning.get(Knob::Bm), Some(128));
}

/// Every tuning candidate (what `--tune` may pick) is correct too, at
/// shapes that are not multiples of any tile.
#[test]
fn every_tuning_candidate_is_correct() {
    let mut dev = device();
    let s = seed();
    for op in [
        Op::GemmF32 {
            m: 100,
            n: 90,
            k: 70,
        },
        Op::GemmF32 {
            m: 130,
            n: 136,
            k: 44,
        },
        Op::GemmF16 {
            m: 70,
            n: 33,
            k: 45,
        },
        Op::RmsNorm {
            rows: 3,
            cols: 1028,
            eps: 1e-6,
        },
        Op::LayerNorm {
            rows: 3,
            cols: 516,
            eps: 1e-5,
        },
        Op::Softmax {
            rows: 4,
            cols: 2052,
        },
        Op::RmsNorm {
            rows: 2,
            cols: 8196,
            eps: 1e-6,
        },
        Op::Fill {
            n: 12_291,
            value: 0x1234_5678,
        },
        Op::Copy { n: 5000 },
        Op::VecAdd { n: 4999 },
        Op::Rope {
            tokens: 3,
            heads: 2,
            head_dim: 32,
            pos0: 5,
            theta: 10000.0,
        },
    ] {
        assert_every_candidate(&mut dev, &op, s, &RunOpts::default());
    }
    assert_clean(&dev);
}

#[test]
fn gemm_f16_plain() {
    let mut dev = device();
    let s = seed();
    for (m, n, k) in [(1, 1, 1), (64, 64, 64), (67, 45, 33), (33, 97, 130)] {
        let out = assert_op(&mut dev, &Op::GemmF16 { m, n, k }, s);
        assert_eq!(out.stats.kernel, Shader::GemmF16.name());
    }
}

#[test]
fn norms_and_softmax() {
    let mut dev = device();
    let s = seed();
    for (rows, cols) in [(1, 1), (3, 5), (7, 256), (5, 1000), (2, 4099)] {
        assert_op(
            &mut dev,
            &Op::RmsNorm {
                rows,
                cols,
                eps: 1e-6,
            },
            s,
        );
        assert_op(
            &mut dev,
            &Op::LayerNorm {
                rows,
                cols,
                eps: 1e-5,
            },
            s,
        );
        assert_op(&mut dev, &Op::Softmax { rows, cols }, s);
    }
}

#[test]
fn rope() {
    let mut dev = device();
    let s = seed();
    for (tokens, heads, head_dim, pos0) in
        [(1, 1, 2, 0), (5, 3, 64, 7), (17, 2, 128, 40), (3, 5, 6, 1)]
    {
        assert_op(
            &mut dev,
            &Op::Rope {
                tokens,
                heads,
                head_dim,
                pos0,
                theta: 10000.0,
            },
            s,
        );
    }
}

#[test]
fn kv_update() {
    let mut dev = device();
    let s = seed();
    for (layers, max_seq, heads, head_dim, pos, n_new) in [
        (1, 1, 1, 1, 0, 1),
        (2, 16, 3, 8, 5, 4),
        (3, 33, 2, 5, 32, 1),
        (1, 9, 4, 16, 0, 9),
    ] {
        assert_op(
            &mut dev,
            &Op::KvUpdate {
                layers,
                max_seq,
                heads,
                head_dim,
                pos,
                n_new,
            },
            s,
        );
    }
}

/// Split dispatch: a lowered range limit forces several aligned sub-range
/// dispatches per repeat; the result must still be exact.
#[test]
fn elementwise_split_over_range_limit() {
    let mut dev = device_with(greta_runtime::VulkanOptions {
        select: greta_runtime::DeviceSelect::Cpu,
        validation: Some(true),
        cache: greta_runtime::CacheDir::Off,
        max_storage_range: Some(4096),
        ..Default::default()
    });
    let s = seed();
    for op in [
        Op::Fill { n: 5001, value: 7 },
        Op::Copy { n: 5001 },
        Op::VecAdd { n: 3001 },
    ] {
        let out = assert_op(&mut dev, &op, s);
        assert!(out.stats.dispatches_per_repeat > 1, "{op}: {:?}", out.stats);
    }
    // An op that cannot be split says so instead of running out of range.
    let err = dev
        .supports(&Op::Softmax {
            rows: 4,
            cols: 2000,
        })
        .unwrap_err();
    assert!(err.contains("maxStorageBufferRange"), "{err}");
}

/// The checker catches a kernel that is wrong in one element.
#[test]
fn broken_copy_is_detected() {
    let mut dev = device();
    let s = seed();
    for n in [2, 3, 1000, 4097] {
        let op = Op::TestBrokenCopy { n };
        let out = run_checked(&mut dev, &op, s, &RunOpts::default());
        assert!(
            !out.passes(),
            "broken copy n={n} passed: {:?}",
            out.comparisons
        );
        assert_eq!(out.comparisons[0].mismatches, 1, "{:?}", out.comparisons);
        assert_eq!(out.comparisons[0].first_bad, Some(n / 2));
    }
    assert_clean(&dev);
}

/// The test-only slow kernel computes the right thing when given time.
#[test]
fn slow_kernel_result() {
    let mut dev = device();
    assert_op(&mut dev, &Op::TestSlow { iters: 1000 }, seed());
}

#[test]
fn timestamps_are_reported() {
    let mut dev = device();
    let out = run_checked(
        &mut dev,
        &Op::Copy { n: 1 << 16 },
        seed(),
        &RunOpts {
            repeats: 5,
            ..RunOpts::default()
        },
    );
    assert_eq!(out.stats.device_ns.len(), 5);
    assert!(
        out.stats.device_ns.iter().all(|&ns| ns > 0),
        "{:?}",
        out.stats
    );
    assert_eq!(
        out.stats.timing,
        greta_runtime::TimingSource::DeviceTimestamps
    );
    assert_clean(&dev);
}

#[test]
fn contract_mismatch_is_bad_input() {
    let mut dev = device();
    let op = Op::Copy { n: 8 };
    let inputs = vec![greta_kernels::HostBuf::U32(vec![1; 7])];
    let mut outputs = vec![greta_kernels::HostBuf::poisoned(
        greta_kernels::DType::U32,
        8,
    )];
    let err = dev
        .run(greta_runtime::Job::new(
            &op,
            &inputs,
            &mut outputs,
            &RunOpts::default(),
        ))
        .unwrap_err();
    assert!(
        matches!(err, greta_runtime::RuntimeError::BadInput(_)),
        "{err}"
    );
    let bad_tuning = RunOpts {
        // copy takes wg, unroll and groups; coopmat is the f16 GEMM's.
        tuning: Some(greta_runtime::Tuning::default().with(Knob::Coopmat, 3)),
        ..RunOpts::default()
    };
    let inputs = vec![greta_kernels::HostBuf::U32(vec![1; 8])];
    let err = dev
        .run(greta_runtime::Job::new(
            &op,
            &inputs,
            &mut outputs,
            &bad_tuning,
        ))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("tuning key coopmat does not apply"),
        "{err}"
    );
    for bad in [
        RunOpts {
            repeats: 0,
            ..RunOpts::default()
        },
        RunOpts {
            timeout: std::time::Duration::ZERO,
            ..RunOpts::default()
        },
    ] {
        let err = dev
            .run(greta_runtime::Job::new(&op, &inputs, &mut outputs, &bad))
            .unwrap_err();
        assert!(
            matches!(err, greta_runtime::RuntimeError::BadInput(_)),
            "{err}"
        );
    }
    assert!(dev.lost().is_none());
    assert_clean(&dev);
}

/// Without timestamps the per-dispatch time falls back to wall clock.
#[test]
fn wall_clock_fallback() {
    let mut dev = device_with(greta_runtime::VulkanOptions {
        select: greta_runtime::DeviceSelect::Cpu,
        validation: Some(true),
        timestamps: Some(false),
        ..Default::default()
    });
    assert!(!dev.info().timestamps);
    let out = run_checked(
        &mut dev,
        &Op::Copy { n: 1000 },
        seed(),
        &RunOpts {
            repeats: 3,
            ..RunOpts::default()
        },
    );
    assert!(out.passes());
    assert_eq!(out.stats.timing, greta_runtime::TimingSource::WallClock);
    assert_eq!(out.stats.device_ns.len(), 3);
    assert!(out.stats.device_ns.iter().all(|&ns| ns > 0));
    assert_clean(&dev);
}

/// `Device` can move to another thread (a runner may watch it from one).
#[test]
fn device_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<greta_runtime::VulkanDevice>();
}

/// Rates on this machine's lavapipe, for the performance notes:
/// `cargo test -p greta-runtime --release --test ops -- --ignored --nocapture rates`.
#[test]
#[ignore = "measurement, not a check"]
fn rates() {
    let mut dev = device_with(greta_runtime::VulkanOptions {
        select: greta_runtime::DeviceSelect::Cpu,
        validation: Some(false),
        ..Default::default()
    });
    for op in [
        Op::Noop,
        Op::Fill {
            n: 1 << 24,
            value: 1,
        },
        Op::Copy { n: 1 << 24 },
        Op::VecAdd { n: 1 << 24 },
        Op::GemmF32 {
            m: 512,
            n: 512,
            k: 512,
        },
        Op::GemmF16 {
            m: 512,
            n: 512,
            k: 512,
        },
        Op::RmsNorm {
            rows: 256,
            cols: 1024,
            eps: 1e-6,
        },
        Op::Softmax {
            rows: 256,
            cols: 1024,
        },
        Op::LayerNorm {
            rows: 256,
            cols: 1024,
            eps: 1e-5,
        },
    ] {
        let out = run_checked(
            &mut dev,
            &op,
            1,
            &RunOpts {
                repeats: 5,
                ..RunOpts::default()
            },
        );
        assert!(out.passes());
        let ns = out.stats.median_ns().max(1) as f64;
        eprintln!(
            "{op}: {:.1} us/dispatch, {:.2} GB/s, {:.2} GFLOP/s ({})",
            ns / 1e3,
            op.bytes_moved() as f64 / ns,
            op.flops() as f64 / ns,
            out.stats.kernel
        );
    }
}

/// The memory test on a sound slice records nothing; with a word written
/// wrong (one bit, the top bit, several bits; at the first, a middle and
/// the last word) each pattern alone, and all four together, record it
/// exactly as the reference predicts: the word, expected and read values,
/// the pattern and the check. A kernel that did not check, or checked the
/// wrong value, fails here. Slices not a multiple of the workgroup, and
/// one several grid-strides long.
#[test]
fn memtest_records_nothing_on_sound_memory_and_every_injected_flip() {
    let mut dev = device();
    let s = seed();
    for words in [1usize, 1000, 4099, 300_001] {
        for patterns in [1u32, 2, 4, 8, 0xf] {
            assert_op(
                &mut dev,
                &Op::Memtest {
                    words,
                    patterns,
                    seed: 5,
                    flip_word: 0,
                    flip_mask: 0,
                },
                s,
            );
        }
    }
    let words = 4099;
    for patterns in [1u32, 2, 4, 8, 0xf] {
        for (flip_word, flip_mask) in [(0, 1), (2048, 1 << 31), (words - 1, 0x0f0f_0000)] {
            let op = Op::Memtest {
                words: words as usize,
                patterns,
                seed: 11,
                flip_word,
                flip_mask,
            };
            let out = assert_op(&mut dev, &op, s);
            let greta_kernels::HostBuf::U32(r) = &out.outputs[0] else {
                panic!("errors is u32")
            };
            let r = greta_kernels::MemReport::decode(r).expect("a record");
            assert_eq!(r.count, 2 * patterns.count_ones(), "{op}");
            assert_eq!(r.bits, flip_mask, "{op}");
            assert!(r.errors.iter().all(|e| e.word == flip_word), "{op}");
        }
    }
    // A slice over maxStorageBufferRange (lowered to 4 KiB here) runs in
    // chunks bound at their offsets; a flip in the last word of the last
    // chunk is reported at its index in the whole slice.
    let mut small = device_with(greta_runtime::VulkanOptions {
        select: greta_runtime::DeviceSelect::Cpu,
        validation: Some(true),
        cache: greta_runtime::CacheDir::Off,
        max_storage_range: Some(4096),
        ..Default::default()
    });
    for patterns in [1u32, 0xf] {
        let words = 3 * 1024 + 5;
        let op = Op::Memtest {
            words,
            patterns,
            seed: 2,
            flip_word: words as u32 - 1,
            flip_mask: 1 << 7,
        };
        let out = assert_op(&mut small, &op, s);
        let greta_kernels::HostBuf::U32(r) = &out.outputs[0] else {
            panic!("errors is u32")
        };
        let r = greta_kernels::MemReport::decode(r).expect("a record");
        assert_eq!(r.count, 2 * patterns.count_ones(), "{op}");
        assert!(r.errors.iter().all(|e| e.word == words as u32 - 1), "{op}");
    }
    // Passes per pattern: the clear, then write / check-and-invert / check.
    let out = assert_op(
        &mut dev,
        &Op::Memtest {
            words: 64,
            patterns: 0b1010,
            seed: 1,
            flip_word: 0,
            flip_mask: 0,
        },
        s,
    );
    assert_eq!(out.stats.kernel, Shader::Memtest.name());
}

/// `keep_scratch`: while on, each run's scratch (a memtest slice) stays
/// allocated after it, and the next run's is a new allocation (the kept
/// one is out of the pool); `release_kept` frees them all; while off,
/// nothing is kept.
#[test]
fn kept_scratch_stays_allocated_until_released() {
    let mut dev = device();
    let op = Op::Memtest {
        words: 4096,
        patterns: 0xf,
        seed: 1,
        flip_word: 0,
        flip_mask: 0,
    };
    assert_op(&mut dev, &op, seed());
    assert_eq!(dev.release_kept(), 0);
    dev.keep_scratch(true).unwrap();
    for _ in 0..3 {
        assert_op(&mut dev, &op, seed());
    }
    dev.keep_scratch(false).unwrap();
    assert_op(&mut dev, &op, seed());
    assert_eq!(dev.release_kept(), 3 * 4096 * 4);
    assert_eq!(dev.release_kept(), 0);
    assert_clean(&dev);
}
