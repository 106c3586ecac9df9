//! The transformer block's attention ops on lavapipe against
//! their f64 references, validation on: rope_kv_f16, attn_decode_f16 (a
//! split whose last workgroup per head combines, over the op's scratch)
//! and attn_prefill_f16, at sizes that are not multiples of their chunks
//! and tiles.

use crate::common::*;
use greta_kernels::{attn_decode_chunk, HostBuf, Op};
use greta_runtime::{Backend, Knob, RunOpts, RuntimeError, Tuning};

#[test]
fn rope_kv_f16_writes_its_rows_and_keeps_the_rest() {
    let mut dev = device();
    let s = seed();
    for (tokens, heads, head_dim, pos0, max_seq) in [
        (1, 1, 4, 0, 1),
        (5, 3, 64, 7, 20),
        (17, 2, 128, 40, 64),
        (3, 5, 12, 1, 9),
    ] {
        let op = Op::RopeKvF16 {
            tokens,
            heads,
            head_dim,
            pos0,
            max_seq,
            theta: 10000.0,
        };
        let out = assert_op(&mut dev, &op, s);
        // Outside rows pos0..pos0+tokens both caches are bit for bit what
        // was uploaded (assert_op's comparison is a norm).
        let again = run_checked(&mut dev, &op, s, &RunOpts::default());
        let d = heads * head_dim;
        let rows = pos0 as usize * d..(pos0 as usize + tokens) * d;
        for c in 1..3 {
            let (HostBuf::F16(a), HostBuf::F16(b)) = (&out.outputs[c], &again.outputs[c]) else {
                panic!("caches are f16")
            };
            for i in (0..max_seq * d).filter(|i| !rows.contains(i)) {
                assert_eq!(
                    a[i].to_bits(),
                    b[i].to_bits(),
                    "{op}: cache {c} element {i}"
                );
            }
        }
    }
    assert_clean(&dev);
}

#[test]
fn attn_decode_f16_splits_and_combines() {
    let mut dev = device();
    let s = seed();
    // Chunks of 64 rows at head_dim 128: lengths of one, a few, exactly one
    // chunk, one past it, several with a partial last (300), one past a
    // power of two (4097); head sizes whose rows take 1, 3 (of 4), 8 and 32
    // lanes; one head and many.
    for (heads, head_dim, len, max_seq) in [
        (4, 64, 100, 130),
        (2, 128, 1, 1),
        (1, 128, 7, 9),
        (2, 128, 64, 64),
        (3, 128, 65, 80),
        (2, 128, 300, 301),
        (32, 128, 300, 300),
        (3, 128, 4097, 4100),
        (3, 8, 3, 5),
        (2, 24, 300, 310),
        (1, 256, 77, 77),
        (5, 256, 4097, 4097),
    ] {
        let op = Op::AttnDecodeF16 {
            heads,
            head_dim,
            len,
            max_seq,
        };
        let out = assert_op(&mut dev, &op, s);
        assert_eq!(
            out.stats.dispatches_per_repeat, 1,
            "{op}: the split and its combine are one dispatch"
        );
        // The planner's chunks per workgroup, and that many workgroups.
        let per = out.stats.tuning.get(Knob::Chunks).expect("chunks is named") as usize;
        let splits = len.div_ceil(attn_decode_chunk(head_dim)).div_ceil(per);
        assert!(
            heads * splits >= 1024 || per == 1,
            "{op}: {per} chunks each, {splits} splits"
        );
    }
    assert_clean(&dev);
}

/// Every head count from 1 to 32 at a length of a few chunks, the last
/// partial: each head's last workgroup combines that head alone.
#[test]
fn attn_decode_f16_combines_each_head_of_any_count() {
    let mut dev = device();
    let s = seed();
    for heads in 1..=32 {
        assert_op(
            &mut dev,
            &Op::AttnDecodeF16 {
                heads,
                head_dim: 32,
                len: 300,
                max_seq: 301,
            },
            s ^ heads as u64,
        );
    }
    assert_clean(&dev);
}

/// Each chunks-per-workgroup `--tune` offers, from one workgroup per chunk
/// to a whole head in one, gives the reference's answer, and a value out
/// of range is refused with the range.
#[test]
fn attn_decode_f16_every_split_is_right() {
    let mut dev = device();
    let s = seed();
    for (heads, len) in [(3, 4097), (2, 300), (4, 7)] {
        let op = Op::AttnDecodeF16 {
            heads,
            head_dim: 128,
            len,
            max_seq: len + 3,
        };
        let cands = dev.tuning_candidates(&op);
        let mut splits: Vec<usize> = cands
            .iter()
            .filter_map(|t| t.get(Knob::Chunks))
            .map(|per| len.div_ceil(attn_decode_chunk(128)).div_ceil(per as usize))
            .collect();
        splits.sort_unstable();
        splits.dedup();
        assert_eq!(splits.len(), cands.len() - 1, "{op}: {cands:?}");
        for t in cands {
            let out = run_checked(
                &mut dev,
                &op,
                s,
                &RunOpts {
                    repeats: 2,
                    tuning: Some(t.clone()),
                    ..RunOpts::default()
                },
            );
            assert!(out.passes(), "{op} {t}: {:?}", out.comparisons);
        }
    }
    let op = Op::AttnDecodeF16 {
        heads: 2,
        head_dim: 128,
        len: 300,
        max_seq: 300,
    };
    for v in [0, 65] {
        let t = Tuning::default().with(Knob::Chunks, v);
        let e = dev
            .run(greta_runtime::Job::new(
                &op,
                &inputs(&op, s),
                &mut [HostBuf::poisoned(greta_kernels::DType::F16, 256)],
                &RunOpts {
                    tuning: Some(t),
                    ..RunOpts::default()
                },
            ))
            .unwrap_err();
        assert!(
            matches!(e, RuntimeError::BadInput(_)) && e.to_string().contains("must be 1..=64"),
            "{e}"
        );
    }
    assert_clean(&dev);
}

#[test]
fn attn_prefill_f16_is_causal() {
    let mut dev = device();
    let s = seed();
    // Tiles of 32 query rows and 32 keys: partial tiles, a cached prefix
    // that is not a multiple of a tile, one token, odd head sizes.
    for (tokens, heads, head_dim, pos0, max_seq) in [
        (37, 2, 16, 5, 50),
        (100, 4, 64, 0, 100),
        (33, 1, 128, 31, 70),
        (1, 2, 8, 0, 1),
        (70, 2, 24, 7, 77),
    ] {
        let out = assert_op(
            &mut dev,
            &Op::AttnPrefillF16 {
                tokens,
                heads,
                head_dim,
                pos0,
                max_seq,
            },
            s,
        );
        // lavapipe has no cooperative matrices: the f32-FMA kernel, named
        // so that a tuning cache entry pins it.
        assert_eq!(out.stats.kernel, "attn_prefill_f16");
        assert_eq!(out.stats.tuning, Tuning::default().with(Knob::Coopmat, 0));
    }
    assert_clean(&dev);
}

/// `coopmat` picks the kernel: 0 (the f32-FMA one) runs on lavapipe with
/// the default's results bit for bit; 1 (cooperative matrices) is refused
/// there with the reason, before anything runs, and the device stays
/// usable; the tuning sweep offers only what the device can run.
#[test]
fn attn_prefill_f16_kernel_choice_on_a_device_without_matrix_units() {
    let mut dev = device();
    let s = seed();
    let op = Op::AttnPrefillF16 {
        tokens: 70,
        heads: 2,
        head_dim: 32,
        pos0: 3,
        max_seq: 80,
    };
    let by_default = assert_op(&mut dev, &op, s);
    let forced = |v| RunOpts {
        tuning: Some(Tuning::default().with(Knob::Coopmat, v)),
        ..RunOpts::default()
    };
    let scalar = run_checked(&mut dev, &op, s, &forced(0));
    assert!(scalar.passes(), "{:?}", scalar.comparisons);
    assert_eq!(scalar.stats.kernel, "attn_prefill_f16");
    let (HostBuf::F16(a), HostBuf::F16(b)) = (&by_default.outputs[0], &scalar.outputs[0]) else {
        panic!("o is f16")
    };
    assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));

    let inputs = inputs(&op, s);
    let mut outputs = vec![HostBuf::poisoned(greta_kernels::DType::F16, 70 * 2 * 32)];
    let err = dev
        .run(greta_runtime::Job::new(
            &op,
            &inputs,
            &mut outputs,
            &forced(1),
        ))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Unsupported(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("attn_prefill_f16_cm (coopmat=1)") && msg.contains("cooperative matrix"),
        "{msg}"
    );
    assert_eq!(dev.tuning_candidates(&op), vec![Tuning::default()]);
    assert_op(&mut dev, &op, s);
    assert_clean(&dev);
}

/// The planner refuses shapes its kernels cannot take, with the reason.
#[test]
fn attention_shapes_outside_the_kernels_are_refused() {
    let dev = device();
    let bad = Op::AttnPrefillF16 {
        tokens: 4,
        heads: 1,
        head_dim: 136,
        pos0: 0,
        max_seq: 4,
    };
    let why = dev.supports(&bad).unwrap_err();
    assert!(why.contains("head_dim"), "{why}");
    let bad = Op::AttnDecodeF16 {
        heads: 1,
        head_dim: 12,
        len: 4,
        max_seq: 4,
    };
    assert!(dev.supports(&bad).unwrap_err().contains("multiple of 8"));
}
