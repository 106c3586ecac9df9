//! The subgroup size a plan requires: on a device that offers a range
//! (RADV: 32 or 64), the kernels that count subgroups get a fixed one and
//! every other kernel the driver's choice unless `wave` asks; on a device
//! with one size nothing changes.

use super::test_limits::{nvidia, radv_rdna3};
use super::*;

/// Llama-2-7B's prefill shapes: q/k/v/o projections, the attention.
fn linear() -> Op {
    Op::LinearF16 {
        tokens: 512,
        rows: 4096,
        cols: 4096,
    }
}

fn attn() -> Op {
    Op::AttnPrefillF16 {
        tokens: 512,
        heads: 32,
        head_dim: 128,
        pos0: 0,
        max_seq: 512,
    }
}

fn gemm() -> Op {
    Op::GemmF16 {
        m: 4096,
        n: 4096,
        k: 4096,
    }
}

fn wave32() -> Option<Wave> {
    Some(Wave {
        size: 32,
        full: true,
    })
}

#[test]
fn radv_gets_the_cooperative_matrix_kernels_at_wave32() {
    let lim = radv_rdna3();
    let p = plan(&linear(), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::LinearF16Cm);
    assert_eq!(p.wave, wave32());
    // The kernel's own subgroup-size constant is the size required.
    assert_eq!(p.spec[5], 32);
    assert_eq!(p.tuning.get(Knob::Wave), Some(32));

    let p = plan(&attn(), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::AttnPrefillF16Cm);
    assert_eq!(p.wave, wave32());
    assert_eq!(p.spec, vec![128, 4 * 32, 32]);

    let p = plan(&gemm(), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::GemmF16Cmreg);
    assert_eq!(p.wave, wave32());
    assert_eq!(p.spec[5], 32);
}

#[test]
fn wave_asks_for_another_size_and_the_kernel_is_planned_for_it() {
    let lim = radv_rdna3();
    let t = Tuning::default().with(Knob::Wave, 64);
    let p = plan(&attn(), &t, &lim).unwrap();
    assert_eq!(p.shader, Shader::AttnPrefillF16Cm);
    assert_eq!(
        p.wave,
        Some(Wave {
            size: 64,
            full: true
        })
    );
    assert_eq!(p.spec, vec![128, 4 * 64, 64]);
    assert_eq!(p.tuning.get(Knob::Wave), Some(64));
    for bad in [16, 48, 128, 0] {
        let err = plan(&attn(), &Tuning::default().with(Knob::Wave, bad), &lim)
            .err()
            .unwrap_or_else(|| panic!("wave={bad} planned"));
        assert!(err.to_string().contains("32..=64"), "{err}");
    }
}

#[test]
fn other_kernels_keep_the_drivers_choice_unless_asked() {
    let lim = radv_rdna3();
    let norm = Op::RmsNorm {
        rows: 64,
        cols: 4096,
        eps: 1e-5,
    };
    let p = plan(&norm, &Tuning::default(), &lim).unwrap();
    assert_eq!(p.wave, None);
    assert_eq!(p.tuning.get(Knob::Wave), None);
    let p = plan(&norm, &Tuning::default().with(Knob::Wave, 64), &lim).unwrap();
    // Asked: required, without full subgroups (the kernel does not count them).
    assert_eq!(
        p.wave,
        Some(Wave {
            size: 64,
            full: false
        })
    );
    assert_eq!(p.tuning.get(Knob::Wave), Some(64));
    // The tiled linear kernel, asked for by its tiles.
    let t = Tuning::default().with(Knob::Coopmat, 0);
    let p = plan(&linear(), &t, &lim).unwrap();
    assert_eq!((p.shader, p.wave), (Shader::LinearF16, None));
}

#[test]
fn tuning_tries_each_size_where_the_device_offers_a_choice() {
    let lim = radv_rdna3();
    let norm = Op::RmsNorm {
        rows: 64,
        cols: 4096,
        eps: 1e-5,
    };
    let waves = |op: &Op, lim: &Limits| -> Vec<Option<u32>> {
        candidates(op, lim)
            .iter()
            .map(|t| t.get(Knob::Wave))
            .collect()
    };
    let got = waves(&norm, &lim);
    assert!(got.contains(&None) && got.contains(&Some(32)) && got.contains(&Some(64)));
    // The attention's default is the cooperative-matrix kernel at wave 32
    // already: it is tried at 64 too, and at 32 once; the f32-FMA kernel
    // at the driver's choice, 32 and 64.
    let planned: Vec<(Shader, Option<u32>)> = candidates(&attn(), &lim)
        .iter()
        .map(|t| {
            let p = plan(&attn(), t, &lim).unwrap();
            (p.shader, p.wave.map(|w| w.size))
        })
        .collect();
    let count = |want: (Shader, Option<u32>)| planned.iter().filter(|p| **p == want).count();
    assert_eq!(
        count((Shader::AttnPrefillF16Cm, Some(32))),
        1,
        "{planned:?}"
    );
    assert_eq!(
        count((Shader::AttnPrefillF16Cm, Some(64))),
        1,
        "{planned:?}"
    );
    for w in [None, Some(32), Some(64)] {
        assert_eq!(count((Shader::AttnPrefillF16, w)), 1, "{planned:?}");
    }
    // Every candidate plans.
    for t in candidates(&linear(), &lim) {
        plan(&linear(), &t, &lim).unwrap();
    }
    // One size only: no wave candidates.
    assert!(waves(&attn(), &nvidia()).iter().all(Option::is_none));
}

#[test]
fn a_device_with_one_size_plans_as_before() {
    let lim = nvidia();
    for op in [linear(), attn(), gemm()] {
        let p = plan(&op, &Tuning::default(), &lim).unwrap();
        assert_eq!(p.wave, None, "{op}");
        assert_eq!(p.tuning.get(Knob::Wave), None, "{op}");
    }
    // Its own size may be named (a no-op); another may not.
    let p = plan(&attn(), &Tuning::default().with(Knob::Wave, 32), &lim).unwrap();
    assert_eq!(p.wave, None);
    let err = plan(&attn(), &Tuning::default().with(Knob::Wave, 64), &lim)
        .err()
        .unwrap();
    assert!(err.to_string().contains("subgroups of 32 only"), "{err}");
}

#[test]
fn a_range_without_control_still_refuses_the_subgroup_counting_kernels() {
    // A device reporting 32..64 but no subgroup-size control for compute.
    let lim = Limits {
        waves: None,
        ..radv_rdna3()
    };
    let p = plan(&linear(), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::LinearF16);
    let p = plan(&attn(), &Tuning::default(), &lim).unwrap();
    assert_eq!(p.shader, Shader::AttnPrefillF16);
}
