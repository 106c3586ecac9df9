//! TEST-ONLY fault injection (`--inject`, hidden; or `GRETA_SMOKE_INJECT`):
//! the self-check RVS's gst does, so a fleet can prove that greta's gates
//! catch a wrong result, a slow GPU and a hung kernel on *its* devices and
//! backend. Faults are applied by the runner around any
//! [`greta_runtime::Backend`], so they work on every backend alike.
//!
//! | spec | fault |
//! | --- | --- |
//! | `corrupt:D[:GATE]` | flips one bit of the middle element of the first output of repeat 1 of every gate (or of GATE) on device D: the highest clear exponent bit of a float (the value grows by 2^64 or more), bit 30 of a u32 |
//! | `slow:D[:F]` | multiplies every time measured on device D by F (default 2) |
//! | `hang:D[:GATE]` | runs a kernel that never finishes in time in place of GATE (default: the first gate that runs) on device D |
//! | `throttle:D[:LIMIT]` | every telemetry reading of device D says LIMIT (`thermal` by default, `power`, `current`, `other`) held its clocks |
//! | `link:D[:GxW]` | device D's PCIe link reads trained at generation G, W lanes (default `1x1`) |
//! | `ecc:D[:BLOCK]` | device D's uncorrectable error count of BLOCK (default `umc`) reads one higher after the run than before |
//! | `vanish:D[:GATE]` | device D falls off the bus at GATE (default: the first gate that runs): that gate loses the device, and the backend lists it no more |
//! | `prologue:D[:GATE]` | the decode layer (every `block_decode` gate, or GATE, one of them) on device D runs its fused QKV step's diagnostic variant, whose RMSNorm prologue leaves one lane of each group out of the sum of squares (tuning `probe=1`): a fused kernel that is faster and wrong, on the device itself, which the layer's check must fail |
//!
//! The telemetry faults (`throttle`, `link`, `ecc`) act where the readings
//! come from: the sampler's source and the counter and link reader of
//! [`crate::telemetry`] are wrapped, so every verdict downstream is the
//! one a real card's readings meet. A device with no telemetry of its own
//! (lavapipe) gets a source named `inject:D` carrying only the fault.
//!
//! D is the device's index in the backend's list (`--device N`). A report
//! of a run with faults lists them in `settings.inject`.

use greta_runtime::{HostBuf, RunStats};

/// One injected fault.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// A single-bit error in one result of a gate.
    Corrupt { device: usize, gate: Option<String> },
    /// Every measured time on the device multiplied by `factor`.
    Slow { device: usize, factor: f64 },
    /// A kernel that does not complete within the timeout.
    Hang { device: usize, gate: Option<String> },
    /// Every telemetry reading says `limit` held the clocks.
    Throttle { device: usize, limit: Limit },
    /// The PCIe link reads trained at `link`.
    Link {
        device: usize,
        link: greta_runtime::LinkState,
    },
    /// An uncorrectable error count of `block` rises during the run.
    Ecc { device: usize, block: String },
    /// The device is gone from `gate` on (`None`: the first gate run).
    Vanish { device: usize, gate: Option<String> },
    /// The decode layer's fused QKV prologue is wrong on the device, in
    /// `gate` (`None`: every `block_decode` gate of the run).
    Prologue { device: usize, gate: Option<String> },
}

/// Which limit a `throttle` fault reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Power,
    Thermal,
    Current,
    Other,
}

impl Limit {
    /// The limit set in a reading's `limits`.
    pub fn set(self, l: &mut greta_runtime::ClockLimits) {
        match self {
            Limit::Power => l.power = true,
            Limit::Thermal => l.thermal = true,
            Limit::Current => l.current = true,
            Limit::Other => l.other = true,
        }
    }
}

/// The telemetry faults of one device, for [`crate::telemetry`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelemetryFaults {
    /// The device's index, for the name of a source made up for it.
    pub device: usize,
    pub throttle: Option<Limit>,
    pub link: Option<greta_runtime::LinkState>,
    pub ecc: Option<String>,
}

impl TelemetryFaults {
    pub fn any(&self) -> bool {
        self.throttle.is_some() || self.link.is_some() || self.ecc.is_some()
    }
}

/// The bit a corruption flips in a u32 word.
pub const CORRUPT_BIT_32: u32 = 30;

/// A one-bit flip that makes a float far larger: the highest clear bit of
/// the exponent (`exp_bits` wide, ending at bit `top`). A flip that
/// *shrinks* one element can hide under a norm tolerance (zeroing one
/// element of `gemm_f16.256` moves its norm by ~4e-3, under the 1e-2
/// tolerance): that is what a norm tolerance means, so the injection tests
/// the checker with errors it is meant to see.
fn grow(bits: u32, top: u32, exp_bits: u32) -> u32 {
    (0..exp_bits)
        .map(|i| top - i)
        .find(|b| bits & (1 << b) == 0)
        .map_or(bits ^ (1 << top), |b| bits | (1 << b))
}

/// A kernel far too slow for any timeout: `TestSlow` at its maximum chain
/// length, dispatched [`HANG_DISPATCHES`] times in one submission (minutes
/// on an H200, hours on lavapipe).
pub const HANG_OP: greta_kernels::Op = greta_kernels::Op::TestSlow { iters: u32::MAX };
pub const HANG_DISPATCHES: u32 = 64;

/// The faults of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    pub faults: Vec<Fault>,
    /// The specs as given, recorded in the report.
    pub specs: Vec<String>,
}

impl Faults {
    /// Parse `--inject` specs; `gates` is the run's plan (a named gate must
    /// be in it). Errors say which spec and why.
    /// Empty specs (an empty `GRETA_SMOKE_INJECT`) mean no fault.
    pub fn parse(specs: &[String], gates: &[crate::gates::Gate]) -> Result<Faults, String> {
        let specs: Vec<String> = specs
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let mut faults = Vec::new();
        for spec in &specs {
            faults.push(parse_one(spec, gates).map_err(|e| format!("--inject {spec:?}: {e}"))?);
        }
        Ok(Faults { faults, specs })
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Whether `gate` on `device` must hang.
    pub fn hangs(&self, device: usize, gate: &str, first_gate_run: bool) -> bool {
        self.faults.iter().any(|f| match f {
            Fault::Hang { device: d, gate: g } => {
                *d == device
                    && match g {
                        Some(g) => g == gate,
                        None => first_gate_run,
                    }
            }
            _ => false,
        })
    }

    /// Whether `device` vanishes at `gate` (see [`Faults::hangs`] for `first_gate_run`).
    pub fn vanishes(&self, device: usize, gate: &str, first_gate_run: bool) -> bool {
        self.faults.iter().any(|f| match f {
            Fault::Vanish { device: d, gate: g } => {
                *d == device
                    && match g {
                        Some(g) => g == gate,
                        None => first_gate_run,
                    }
            }
            _ => false,
        })
    }

    /// The devices that vanish during the run: the backend lists them no
    /// more after it.
    pub fn vanished(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .faults
            .iter()
            .filter_map(|f| match f {
                Fault::Vanish { device, .. } => Some(*device),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The telemetry faults of `device` (none: [`TelemetryFaults::any`] is false).
    pub fn telemetry(&self, device: usize) -> TelemetryFaults {
        let mut t = TelemetryFaults {
            device,
            ..Default::default()
        };
        for f in &self.faults {
            match f {
                Fault::Throttle { device: d, limit } if *d == device => t.throttle = Some(*limit),
                Fault::Link { device: d, link } if *d == device => t.link = Some(*link),
                Fault::Ecc { device: d, block } if *d == device => t.ecc = Some(block.clone()),
                _ => {}
            }
        }
        t
    }

    /// Corrupt `outputs` if a fault says so for this device, gate and repeat
    /// (0-based); returns whether a bit was flipped.
    pub fn corrupt(&self, device: usize, gate: &str, repeat: u32, outputs: &mut [HostBuf]) -> bool {
        let hit = repeat == 0
            && self.faults.iter().any(|f| match f {
                Fault::Corrupt { device: d, gate: g } => {
                    *d == device && g.as_deref().is_none_or(|g| g == gate)
                }
                _ => false,
            });
        if !hit {
            return false;
        }
        let Some(buf) = outputs.iter_mut().find(|b| !b.is_empty()) else {
            return false;
        };
        let mid = buf.len() / 2;
        match buf {
            HostBuf::F32(v) => v[mid] = f32::from_bits(grow(v[mid].to_bits(), 30, 8)),
            HostBuf::U32(v) => v[mid] ^= 1 << CORRUPT_BIT_32,
            HostBuf::F16(v) => {
                v[mid] = half::f16::from_bits(grow(u32::from(v[mid].to_bits()), 14, 5) as u16)
            }
        }
        true
    }

    /// The tuning a gate's run asks for: the diagnostic `probe=1` of the
    /// decode layer (its fused QKV step with a wrong norm prologue) where a
    /// `prologue` fault names this device and gate, or every `block_decode`
    /// gate of the device; `None` (the gate's own plan) otherwise.
    pub fn tuning(
        &self,
        device: usize,
        gate: &crate::gates::Gate,
    ) -> Option<greta_runtime::Tuning> {
        let hit = matches!(gate.op, greta_kernels::Op::BlockDecode { .. })
            && self.faults.iter().any(|f| match f {
                Fault::Prologue { device: d, gate: g } => {
                    *d == device && g.as_deref().is_none_or(|g| g == gate.id)
                }
                _ => false,
            });
        hit.then(|| greta_runtime::Tuning::of(&[(greta_runtime::Knob::Probe, 1)]))
    }

    /// Scale the times of `stats` when `device` is to look slow.
    pub fn slow(&self, device: usize, stats: &mut RunStats) {
        for f in &self.faults {
            if let Fault::Slow { device: d, factor } = f {
                if *d == device {
                    for ns in &mut stats.device_ns {
                        *ns = (*ns as f64 * factor).round() as u64;
                    }
                    stats.wall = stats.wall.mul_f64(*factor);
                }
            }
        }
    }
}

fn parse_one(spec: &str, gates: &[crate::gates::Gate]) -> Result<Fault, String> {
    let mut parts = spec.trim().splitn(3, ':');
    let kind = parts.next().unwrap_or_default();
    let device: usize = parts
        .next()
        .ok_or(
            "expected KIND:DEVICE[:ARG], e.g. corrupt:0, slow:1:2.5, hang:0:copy.16m, link:0:3x8",
        )?
        .parse()
        .map_err(|_| "DEVICE must be a device index (as --device N)".to_string())?;
    let arg = parts.next().filter(|a| !a.is_empty());
    let gate = |a: Option<&str>| -> Result<Option<String>, String> {
        match a {
            None => Ok(None),
            Some(g) if gates.iter().any(|x| x.id == g) => Ok(Some(g.to_string())),
            Some(g) => Err(format!("gate {g:?} is not among this run's gates")),
        }
    };
    match kind {
        "corrupt" => Ok(Fault::Corrupt {
            device,
            gate: gate(arg)?,
        }),
        "hang" => Ok(Fault::Hang {
            device,
            gate: gate(arg)?,
        }),
        "slow" => {
            let factor = match arg {
                None => 2.0,
                Some(a) => a
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1e6)
                    .ok_or_else(|| {
                        format!("slow factor must be a number in (0, 1e6], got {a:?}")
                    })?,
            };
            Ok(Fault::Slow { device, factor })
        }
        "vanish" => Ok(Fault::Vanish {
            device,
            gate: gate(arg)?,
        }),
        "prologue" => {
            let decode = |g: &crate::gates::Gate| matches!(g.op, greta_kernels::Op::BlockDecode { .. });
            let gate = gate(arg)?;
            match &gate {
                Some(g) if !gates.iter().any(|x| x.id == *g && decode(x)) => {
                    return Err(format!(
                        "gate {g:?} is no decode layer (block_decode): a prologue fault corrupts the fused QKV step of one"
                    ))
                }
                None if !gates.iter().any(decode) => {
                    return Err(
                        "this run has no decode layer gate (block_decode) whose prologue could go wrong".into(),
                    )
                }
                _ => {}
            }
            Ok(Fault::Prologue { device, gate })
        }
        "throttle" => {
            let limit = match arg.unwrap_or("thermal") {
                "thermal" => Limit::Thermal,
                "power" => Limit::Power,
                "current" => Limit::Current,
                "other" => Limit::Other,
                a => {
                    return Err(format!(
                        "throttle limit must be thermal, power, current or other, got {a:?}"
                    ))
                }
            };
            Ok(Fault::Throttle { device, limit })
        }
        "link" => {
            let a = arg.unwrap_or("1x1");
            let link = {
                let bad =
                    || format!("link must be GENxWIDTH (Gen 1-6, 1-32 lanes), e.g. 3x8, got {a:?}");
                let (g, w) = a.split_once(['x', 'X']).ok_or_else(bad)?;
                let gen: u32 = g.parse().map_err(|_| bad())?;
                let width: u32 = w.parse().map_err(|_| bad())?;
                if !(1..=6).contains(&gen) || !(1..=32).contains(&width) {
                    return Err(bad());
                }
                greta_runtime::LinkState { gen, width }
            };
            Ok(Fault::Link { device, link })
        }
        "ecc" => {
            let block = arg.unwrap_or("umc");
            if !block.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "ecc block must be a RAS block name such as umc or gfx, got {block:?}"
                ));
            }
            Ok(Fault::Ecc {
                device,
                block: block.to_string(),
            })
        }
        _ => Err(format!(
            "unknown fault {kind:?}; one of: corrupt, slow, hang, throttle, link, ecc, vanish, prologue"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::{Catalog, Profile};

    fn plan() -> Vec<crate::gates::Gate> {
        Catalog::builtin()
            .plan(Profile::Default, &[], false)
            .unwrap()
    }

    #[test]
    fn specs_parse_and_bad_ones_say_why() {
        let f = Faults::parse(
            &[
                "corrupt:1".into(),
                "slow:2:3.5".into(),
                "hang:0:copy.16m".into(),
                "slow:3".into(),
            ],
            &plan(),
        )
        .unwrap();
        assert_eq!(
            f.faults,
            [
                Fault::Corrupt {
                    device: 1,
                    gate: None
                },
                Fault::Slow {
                    device: 2,
                    factor: 3.5
                },
                Fault::Hang {
                    device: 0,
                    gate: Some("copy.16m".into())
                },
                Fault::Slow {
                    device: 3,
                    factor: 2.0
                },
            ]
        );
        assert!(Faults::parse(&["".into(), " ".into()], &plan())
            .unwrap()
            .is_empty());
        for (spec, why) in [
            ("melt:0", "unknown fault"),
            ("corrupt", "expected KIND:DEVICE"),
            ("corrupt:x", "device index"),
            ("hang:0:fill.1g", "not among this run's gates"),
            ("slow:0:-1", "slow factor"),
            ("slow:0:nan", "slow factor"),
            ("throttle:0:hot", "throttle limit"),
            ("link:0:3", "GENxWIDTH"),
            ("link:0:7x16", "GENxWIDTH"),
            ("link:0:3x0", "GENxWIDTH"),
            ("ecc:0:u/mc", "RAS block"),
            ("vanish:0:fill.1g", "not among this run's gates"),
        ] {
            let e = Faults::parse(&[spec.into()], &plan()).unwrap_err();
            assert!(e.contains(why) && e.contains(spec), "{spec}: {e}");
        }
    }

    #[test]
    fn telemetry_faults_are_per_device() {
        let f = Faults::parse(
            &[
                "throttle:0".into(),
                "link:0:3x8".into(),
                "ecc:1:gfx".into(),
                "link:1".into(),
                "throttle:2:power".into(),
                "vanish:2:copy.16m".into(),
                "vanish:1".into(),
            ],
            &plan(),
        )
        .unwrap();
        let t0 = f.telemetry(0);
        assert_eq!(t0.throttle, Some(Limit::Thermal));
        assert_eq!(t0.link, Some(greta_runtime::LinkState { gen: 3, width: 8 }));
        assert_eq!(t0.ecc, None);
        let t1 = f.telemetry(1);
        assert_eq!(
            (t1.throttle, t1.link, t1.ecc.as_deref()),
            (
                None,
                Some(greta_runtime::LinkState { gen: 1, width: 1 }),
                Some("gfx")
            )
        );
        assert_eq!(f.telemetry(2).throttle, Some(Limit::Power));
        assert!(!f.telemetry(3).any() && t0.any());
        assert!(f.vanishes(2, "copy.16m", false) && !f.vanishes(2, "fill.16m", true));
        assert!(f.vanishes(1, "fill.16m", true) && !f.vanishes(1, "copy.16m", false));
        assert!(!f.vanishes(0, "fill.16m", true));
        assert_eq!(f.vanished(), [1, 2]);
    }

    #[test]
    fn corruption_flips_one_bit_of_one_repeat_on_one_device() {
        let f = Faults::parse(&["corrupt:1:vec_add.1m".into()], &plan()).unwrap();
        let fresh = || vec![HostBuf::F32(vec![0.75; 5]), HostBuf::U32(vec![7; 3])];
        let mut o = fresh();
        assert!(!f.corrupt(0, "vec_add.1m", 0, &mut o), "other device");
        assert!(!f.corrupt(1, "copy.16m", 0, &mut o), "other gate");
        assert!(!f.corrupt(1, "vec_add.1m", 1, &mut o), "later repeat");
        assert_eq!(o, fresh());
        assert!(f.corrupt(1, "vec_add.1m", 0, &mut o));
        let HostBuf::F32(v) = &o[0] else { panic!() };
        assert_eq!(v[2], f32::from_bits(0.75f32.to_bits() ^ (1 << 30)));
        assert!(v[2] > 1e37, "{}", v[2]);
        // A value whose top exponent bit is set grows by the next clear bit.
        let five = grow(5.0f32.to_bits(), 30, 8);
        assert_eq!((five ^ 5.0f32.to_bits()).count_ones(), 1);
        assert_eq!(f32::from_bits(five), 5.0 * 2f32.powi(64));
        assert_eq!(f32::from_bits(grow(0.0f32.to_bits(), 30, 8)), 2.0);
        assert_eq!(v.iter().filter(|x| **x == 0.75).count(), 4);
        assert_eq!(o[1], fresh()[1]);
        // No output (noop): nothing to corrupt.
        assert!(!f.corrupt(1, "vec_add.1m", 0, &mut []));
    }

    /// `prologue` asks the decode gates of its device for the diagnostic
    /// `probe=1` (every one, or the one named) and nothing of any other
    /// gate or device; a gate that is no decode layer, or a run without
    /// one, is refused with why.
    #[test]
    fn a_prologue_fault_asks_the_decode_layer_for_its_wrong_prologue() {
        let cat = Catalog::builtin();
        let perf = cat.plan(Profile::Perf, &[], false).unwrap();
        let by = |id: &str| perf.iter().find(|g| g.id == id).unwrap().clone();
        let (l512, l4096, copy) = (
            by("block_decode.L512"),
            by("block_decode.L4096"),
            by("copy.1g"),
        );
        let probe = Some(greta_runtime::Tuning::of(&[(
            greta_runtime::Knob::Probe,
            1,
        )]));
        let f = Faults::parse(&["prologue:1".into()], &perf).unwrap();
        assert_eq!(f.tuning(1, &l512), probe);
        assert_eq!(f.tuning(1, &l4096), probe);
        assert_eq!(f.tuning(1, &copy), None, "not a decode layer");
        assert_eq!(f.tuning(0, &l512), None, "another device");
        let f = Faults::parse(&["prologue:0:block_decode.L4096".into()], &perf).unwrap();
        assert_eq!((f.tuning(0, &l512), f.tuning(0, &l4096)), (None, probe));
        let copies = cat
            .plan(Profile::Default, &["copy.16m".into()], false)
            .unwrap();
        for (spec, gates, why) in [
            ("prologue:0:copy.1g", &perf, "no decode layer"),
            ("prologue:0", &copies, "no decode layer gate"),
        ] {
            let e = Faults::parse(&[spec.into()], gates).unwrap_err();
            assert!(e.contains(why) && e.contains(spec), "{spec}: {e}");
        }
    }

    #[test]
    fn slow_scales_times_and_hang_picks_its_gate() {
        let f = Faults::parse(&["slow:0:2.5".into(), "hang:1".into()], &plan()).unwrap();
        let mut s = RunStats {
            device_ns: vec![1000, 2000],
            timing: greta_runtime::TimingSource::DeviceTimestamps,
            wall: std::time::Duration::from_micros(10),
            kernel: "k".into(),
            tuning: Default::default(),
            dispatches_per_repeat: 1,
            step_ns: Vec::new(),
        };
        f.slow(1, &mut s);
        assert_eq!(s.device_ns, [1000, 2000]);
        f.slow(0, &mut s);
        assert_eq!(s.device_ns, [2500, 5000]);
        assert_eq!(s.wall, std::time::Duration::from_micros(25));
        assert!(f.hangs(1, "copy.16m", true));
        assert!(!f.hangs(1, "fill.16m", false));
        assert!(!f.hangs(0, "copy.16m", true));
    }
}
