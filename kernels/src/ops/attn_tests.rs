//! The tolerances of rope_kv_f16 and the attention ops hold what a correct
//! f16 kernel makes and refuse the typical mistakes: a wrong RoPE
//! angle and a causal mask off by one. Each mistake is a perturbed f64
//! reference; each correct device is the reference rounded to f16 (to
//! nearest, and toward zero, the two roundings a driver may use).
use super::attn_decode_f16::attend;
use super::rope_kv_f16::rotate;
use super::*;
use crate::check::check_f32;
use half::f16;

/// Seeded values in -1..1 (SplitMix64's finalizer over a counter).
fn values(seed: u64, n: usize) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let mut z = seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i.wrapping_mul(0xbf58_476d_1ce4_e5b9));
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            // An f16 value, as the device's inputs are.
            f16::from_f64((z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0).to_f64()
        })
        .collect()
}

fn nearest(r: &[f64]) -> Vec<f32> {
    r.iter().map(|&x| f16::from_f64(x).to_f32()).collect()
}

/// Rounded toward zero: the nearest f16, stepped back one unit where it
/// rounded away from zero.
fn toward_zero(r: &[f64]) -> Vec<f32> {
    r.iter()
        .map(|&x| {
            let h = f16::from_f64(x);
            if h.to_f64().abs() > x.abs() {
                f16::from_bits(h.to_bits() - 1).to_f32()
            } else {
                h.to_f32()
            }
        })
        .collect()
}

fn as_f32(r: &[f64]) -> Vec<f32> {
    r.iter().map(|&x| x as f32).collect()
}

/// The device's roundings pass `tol`; every mistake fails it.
fn holds(what: &str, want: &[f64], mistakes: &[(&str, Vec<f64>)], tol: Tolerance) {
    for got in [nearest(want), toward_zero(want)] {
        let c = check_f32(&got, want, tol);
        assert!(c.pass, "{what}: a correct f16 result fails: {c:?}");
    }
    for (name, wrong) in mistakes {
        let c = check_f32(&as_f32(wrong), want, tol);
        assert!(!c.pass, "{what}: {name} passes (rel_err {:e})", c.rel_err);
    }
}

#[test]
fn rope_kv_tolerance_refuses_a_wrong_angle() {
    let tol = Op::RopeKvF16 {
        tokens: 1,
        heads: 1,
        head_dim: 4,
        pos0: 0,
        max_seq: 1,
        theta: 1.0,
    }
    .tolerance();
    // The gates' head size, at a decode position and a prefill block.
    for (tokens, pos0) in [(1usize, 4095u32), (64, 0), (3, 1)] {
        let (heads, hd, theta) = (32, 128, 10000.0);
        let x = values(tokens as u64 + pos0 as u64, tokens * heads * hd);
        let rot = |dp: f64, scale: f64, th: f64| -> Vec<f64> {
            x.chunks(hd)
                .enumerate()
                .flat_map(|(i, head)| {
                    rotate(head, (pos0 as usize + i / heads) as f64 + dp, th, scale)
                })
                .collect()
        };
        let want = rot(0.0, 1.0, theta);
        let mistakes = [
            ("position off by one", rot(1.0, 1.0, theta)),
            ("angle of the wrong sign", rot(0.0, -1.0, theta)),
            ("theta 10% off", rot(0.0, 1.0, theta * 1.1)),
            ("no rotation", x.clone()),
        ];
        holds(
            &format!("rope tokens={tokens} pos0={pos0}"),
            &want,
            &mistakes,
            tol,
        );
    }
}

#[test]
fn decode_tolerance_refuses_a_mask_off_by_one() {
    let (heads, hd) = (32, 128);
    let tol = Op::AttnDecodeF16 {
        heads,
        head_dim: hd,
        len: 1,
        max_seq: 1,
    }
    .tolerance();
    for len in [100usize, 512, 4096] {
        let d = heads * hd;
        let q = values(1, d);
        let k = values(2, (len + 1) * d);
        let v = values(3, (len + 1) * d);
        let want = attend(&q, &k, &v, heads, hd, len);
        let mistakes = [
            ("one position short", attend(&q, &k, &v, heads, hd, len - 1)),
            (
                "one position too many",
                attend(&q, &k, &v, heads, hd, len + 1),
            ),
        ];
        holds(&format!("decode len={len}"), &want, &mistakes, tol);
    }
}

#[test]
fn prefill_tolerance_refuses_a_mask_off_by_one() {
    let (heads, hd, tokens) = (4, 128, 160);
    let tol = Op::AttnPrefillF16 {
        tokens: 1,
        heads,
        head_dim: hd,
        pos0: 0,
        max_seq: 1,
    }
    .tolerance();
    for pos0 in [0usize, 40] {
        let d = heads * hd;
        let q = values(4, tokens * d);
        let k = values(5, (pos0 + tokens + 1) * d);
        let v = values(6, (pos0 + tokens + 1) * d);
        let run = |shift: isize| -> Vec<f64> {
            (0..tokens)
                .flat_map(|t| {
                    let visible = ((pos0 + t + 1) as isize + shift).max(1) as usize;
                    attend(&q[t * d..(t + 1) * d], &k, &v, heads, hd, visible)
                })
                .collect()
        };
        let want = run(0);
        let mistakes = [
            ("diagonal masked", run(-1)),
            ("one future position seen", run(1)),
        ];
        holds(&format!("prefill pos0={pos0}"), &want, &mistakes, tol);
    }
}

/// The op's reference is `attend` over the causal window: token t of a
/// prefill equals a decode of length pos0 + t + 1 (one code path for
/// both, as the block's reference insists).
#[test]
fn prefill_rows_are_decodes_of_their_window() {
    let (heads, hd, tokens, pos0, max_seq) = (2, 16, 7, 3u32, 12);
    let d = heads * hd;
    let x = vec![
        values(7, tokens * d),
        values(8, max_seq * d),
        values(9, max_seq * d),
    ];
    let pre = Op::AttnPrefillF16 {
        tokens,
        heads,
        head_dim: hd,
        pos0,
        max_seq,
    }
    .reference_of(&x, &[]);
    for t in 0..tokens {
        let dec = Op::AttnDecodeF16 {
            heads,
            head_dim: hd,
            len: pos0 as usize + t + 1,
            max_seq,
        };
        let one = dec.reference_of(
            &[
                x[0][t * d..(t + 1) * d].to_vec(),
                x[1].clone(),
                x[2].clone(),
            ],
            &[],
        );
        assert_eq!(one[0], pre[0][t * d..(t + 1) * d], "token {t}");
    }
}

/// rope_kv_f16 writes exactly its rows: the reference keeps the rest of
/// the caches, and its region is those rows.
#[test]
fn rope_kv_reference_keeps_the_rest_of_the_caches() {
    let op = Op::RopeKvF16 {
        tokens: 2,
        heads: 2,
        head_dim: 8,
        pos0: 3,
        max_seq: 8,
        theta: 10000.0,
    };
    let d = 16;
    let x = vec![values(10, 2 * 3 * d)];
    let prior: Vec<HostBuf> = (0..3)
        .map(|i| {
            HostBuf::F16(
                values(11 + i, if i == 0 { 2 * d } else { 8 * d })
                    .iter()
                    .map(|&v| f16::from_f64(v))
                    .collect(),
            )
        })
        .collect();
    let out = op.reference_of(&x, &prior);
    assert_eq!(
        op.written(),
        Region::Ranges(std::iter::once(3 * d..5 * d).collect())
    );
    for c in 1..3 {
        for i in (0..8 * d).filter(|i| !(3 * d..5 * d).contains(i)) {
            assert_eq!(out[c][i], prior[c].get_f64(i), "cache {c} element {i}");
        }
    }
    // v is the third part of each token, copied.
    assert_eq!(
        out[2][3 * d..5 * d],
        [&x[0][2 * d..3 * d], &x[0][5 * d..6 * d]].concat()
    );
}
