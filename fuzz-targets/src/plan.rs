//! `gemm_plan`: the op planner given arbitrary tunings and device limits (wrapped
//! tile arithmetic once crashed the driver). Every plan it
//! accepts must fit the device: shared memory and invocations recomputed
//! here in u128 from the spec constants.
use crate::Words;
use greta_runtime::{
    plan_vulkan as plan, Coop2Workgroup, Knob, Op, Shader, Tuning, VulkanLimits as Limits, Waves,
};

/// Every knob: a new one is fuzzed without being listed here (a byte picks
/// an index, so seeds written before a knob was added pick other knobs now;
/// they stay valid inputs).
const KEYS: &[Knob] = &Knob::ALL;

fn shared_bytes(shader: Shader, s: &[u128]) -> u128 {
    match shader {
        Shader::GemmF32 | Shader::GemmF16 => (s[0] + 1 + s[1]) * s[2] * 4,
        Shader::GemmF32V4 => 2 * s[2] * ((s[0] / 4 + 1) * 16 + s[1] * 4),
        Shader::GemmF16Cmreg => s[6] * 16 * (s[0] * (s[2] / 8 + 1) + s[2] * (s[1] / 8 + 1)),
        Shader::GemmF16Coopmat => s[0] * s[2] * 2 + s[2] * s[1] * 2 + s[0] * s[1] * 4,
        _ => 0,
    }
}

/// The op planner on arbitrary device limits and up to 9 tuning keys: every
/// plan it accepts must fit the device.
pub fn gemm_plan(data: &[u8]) {
    let mut w = Words(data);
    let flags = w.u8();
    let lim = Limits {
        max_range: u64::from(w.u32()).max(16),
        offset_align: u64::from(w.u8()).max(1),
        max_invocations: w.u32(),
        max_shared: w.u32(),
        subgroup_arith: flags & 1 != 0,
        coop_f16: (flags & 2 != 0).then_some((16, 8, 16)),
        f16_storage: flags & 4 != 0,
        coop2: flags & 8 != 0,
        // The matrix operations come with the extension, here where the
        // subgroup-arithmetic bit is set too, so both states are explored.
        coop2_ops: flags & 9 == 9,
        coop2_workgroups: [(32, 16, 16), (64, 16, 16), (128, 32, 16), (256, 32, 32)]
            .map(|(workgroup, m, n)| Coop2Workgroup {
                workgroup,
                m,
                n,
                k: 16,
            })
            .to_vec(),
        coop16: flags & 16 != 0,
        coop16_f16: flags & 64 != 0,
        subgroup_size: (flags & 32 != 0).then(|| w.u32()),
        waves: (flags & 128 != 0).then(|| Waves {
            min: w.u32(),
            max: w.u32(),
            full: w.u8() & 1 != 0,
            max_subgroups: w.u32(),
        }),
        compute_units: None,
    };
    let (m, n, k) = (
        (w.u32() % (1 << 16)) as usize,
        (w.u32() % (1 << 16)) as usize,
        (w.u32() % (1 << 16)) as usize,
    );
    let op = match w.u8() % 5 {
        0 => Op::GemmF32 { m, n, k },
        1 => Op::GemmF16 { m, n, k },
        2 => Op::Softmax { rows: m, cols: n },
        // The decode attention's split over the device's compute units.
        3 => Op::AttnDecodeF16 {
            heads: m % 256 + 1,
            head_dim: (n % 32 + 1) * 8,
            len: k + 1,
            max_seq: k + 1,
        },
        _ => Op::Fill {
            n: m * 16 + n,
            value: 7,
        },
    };
    let mut t = Tuning::default();
    for _ in 0..(w.u8() % 10) {
        let key = KEYS[w.u8() as usize % KEYS.len()];
        t = t.with(key, w.u32());
    }
    // Read last: seeds written before the count existed keep their meaning.
    let lim = Limits {
        compute_units: Some(w.u32()).filter(|&n| n > 0),
        ..lim
    };
    if let Ok(p) = plan(&op, &t, &lim) {
        let spec: Vec<u128> = p.spec.iter().map(|v| u128::from(*v)).collect();
        assert!(
            shared_bytes(p.shader, &spec) <= u128::from(lim.max_shared),
            "{op} {t}: {} {:?} over {} bytes of shared memory",
            p.shader,
            p.spec,
            lim.max_shared
        );
        // A required subgroup size is one the device offers.
        if let Some(w) = p.wave {
            assert!(
                lim.waves
                    .is_some_and(|r| (r.min..=r.max).contains(&w.size) && w.size.is_power_of_two()),
                "{op} {t}: requires subgroups of {} outside the device's range",
                w.size
            );
        }
        for d in &p.dispatches {
            assert!(
                d.groups.iter().all(|g| *g >= 1 && *g <= 65535),
                "{op} {t}: {:?}",
                d.groups
            );
        }
    }
}
