//! Gate and profile definitions. The catalogue is data
//! (`smoke/data/gates.toml`, embedded): an id, a greta-kernels [`Op`] with
//! its shape, and the profiles that run it. What follows from the op
//! (tolerance, rate unit, precision class) is derived here, once.

use crate::check::Tolerance;
use crate::results::RateUnit;
use crate::spec::AchievableKind;
use greta_kernels::Op;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

pub const BUILTIN_GATES: &str = include_str!("../data/gates.toml");

/// A named set of gates with its default repeat count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Device opens, tiny fill/copy readback: seconds.
    Ultrasafe,
    /// Fill and copy patterns over large buffers: bandwidth.
    Fill,
    /// Every kernel at moderate size, 10 clean repeats: well under a minute.
    Default,
    /// Larger sizes.
    Standard,
    /// Sizes that reach the hardware limit; per-device-class floors apply,
    /// else spec floors (`data/specs.toml`).
    Perf,
    /// torch, triton and jax of a Python env compute on the device (run by
    /// `greta smoke --profile frameworks`; no kernel gates of this catalogue).
    Frameworks,
    /// For schedulers (Slurm's `HealthCheckProgram` is killed after 60 s):
    /// every kernel's correctness, full-size copy and GEMM stress held to
    /// the model's achievable rates, memory-test slices.
    Health,
    /// A rented node before a paid run: health's gates, the full-size
    /// streaming gates, the 30 s stress and a memory test of most of the
    /// device's memory; floors as `perf`'s. Minutes.
    Acceptance,
}

impl Profile {
    pub const ALL: [Profile; 8] = [
        Profile::Ultrasafe,
        Profile::Fill,
        Profile::Default,
        Profile::Standard,
        Profile::Perf,
        Profile::Frameworks,
        Profile::Health,
        Profile::Acceptance,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Ultrasafe => "ultrasafe",
            Profile::Fill => "fill",
            Profile::Default => "default",
            Profile::Standard => "standard",
            Profile::Perf => "perf",
            Profile::Frameworks => "frameworks",
            Profile::Health => "health",
            Profile::Acceptance => "acceptance",
        }
    }

    /// Clean repeats a gate needs (fresh inputs each).
    pub fn repeats(self) -> u32 {
        match self {
            Profile::Ultrasafe => 2,
            Profile::Fill | Profile::Frameworks | Profile::Health | Profile::Acceptance => 3,
            Profile::Default | Profile::Standard => 10,
            Profile::Perf => 5,
        }
    }

    /// Dispatches timed in each submission (the op is idempotent, so the
    /// output of the last one is what gets checked).
    pub fn dispatches(self) -> u32 {
        match self {
            Profile::Ultrasafe | Profile::Default | Profile::Frameworks => 1,
            Profile::Fill | Profile::Health | Profile::Acceptance => 2,
            Profile::Standard | Profile::Perf => 5,
        }
    }

    /// Submission timeout when `--timeout` is not given: larger sizes on a
    /// small GPU (an iGPU running `gemm_f32.8192` five times in one
    /// submission) need longer than a healthy device ever needs for the
    /// moderate sizes.
    pub fn default_timeout_s(self) -> f64 {
        match self {
            Profile::Ultrasafe | Profile::Fill | Profile::Default | Profile::Health => 10.0,
            Profile::Standard => 30.0,
            Profile::Perf | Profile::Acceptance => 60.0,
            // Per framework: importing torch and the first CUDA/HIP call
            // take seconds; a triton or XLA compile cache miss, more.
            Profile::Frameworks => 300.0,
        }
    }

    /// Whether the profile runs this catalogue's kernel gates (`frameworks`
    /// runs Python frameworks instead; `greta smoke` dispatches it).
    pub fn runs_kernels(self) -> bool {
        self != Profile::Frameworks
    }

    /// Whether perf floors apply without a baseline: the per-device-class
    /// floors of `data/floors.toml`, else the spec floors of `data/specs.toml`.
    /// Only `perf`, whose gates are sized for the hardware's limit: the small
    /// gates `acceptance` shares with `health` (gemm_f32.1024, softmax.256x1024)
    /// cannot reach a fraction of spec on a healthy H200 (2026-11-29: gemm_f32.1024
    /// 18.9 TFLOP/s against a 0.35-of-spec floor of 23.4), so holding them to it
    /// failed a sound node. `acceptance`'s full-size gates keep their
    /// achievable-rate floors, which apply in every profile.
    pub fn uses_class_floors(self) -> bool {
        matches!(self, Profile::Perf)
    }

    pub fn about(self) -> &'static str {
        match self {
            Profile::Ultrasafe => "device opens, tiny fill/copy readback (seconds)",
            Profile::Fill => "fill and copy patterns over 256 MiB buffers: bandwidth",
            Profile::Default => "every kernel at moderate size, 10 clean repeats",
            Profile::Standard => "larger sizes, 10 clean repeats",
            Profile::Perf => "hardware-limit sizes, per-device-class floors, else spec floors",
            Profile::Frameworks => {
                "torch, triton and jax of a Python env compute on the device (--env, --python)"
            }
            Profile::Health => {
                "for schedulers: every kernel's correctness, full-size copy and GEMM stress held to achievable floors, memory-test slices (well under 60 s)"
            }
            Profile::Acceptance => {
                "a rented node before a paid run: health's gates, full-size streaming, 30 s stress, memory test of most of device memory (minutes)"
            }
        }
    }
}

/// What `profile` will take, said before it starts (acceptance: minutes
/// a rented node pays for), from the gates it runs: the stress gates'
/// time and the whole-memory test's slices at 3 s each at most.
pub fn duration_note(
    profile: Profile,
    gates: &[Gate],
    device_bytes: Option<u64>,
) -> Option<String> {
    if profile != Profile::Acceptance {
        return None;
    }
    // Each stress gate's time and its warm-up; none selected (`--gate`):
    // no stress part at all (an empty f64 sum is -0.0, once shown as "-0 s").
    let stress_gates: Vec<f64> = gates
        .iter()
        .filter_map(|g| g.stress.as_ref().map(|s| s.seconds + 1.0))
        .collect();
    let stress: f64 = stress_gates.iter().fold(0.0, |a, s| a + s);
    let sweep = gates.iter().find_map(|g| {
        let f = g.whole_memory?;
        let slice =
            g.op.scratch()
                .first()
                .map(|s| (s.len * s.dtype.size()) as u64)?;
        Some((f, slice))
    });
    let mut parts = Vec::new();
    if !stress_gates.is_empty() {
        parts.push(format!("{stress:.0} s of matrix stress"));
    }
    let mut total = stress + 60.0;
    if let Some((f, slice)) = sweep {
        let gib = |b: f64| b / (1u64 << 30) as f64;
        match device_bytes {
            Some(b) => {
                let slices = (b as f64 * f / slice as f64).floor().max(1.0);
                total += slices * 3.0;
                parts.push(format!(
                    "a memory test of {:.0} GiB ({f} of {:.0} GiB) in {slices:.0} slices of {:.0} GiB, up to 3 s each",
                    gib(slices * slice as f64),
                    gib(b as f64),
                    gib(slice as f64)
                ));
            }
            None => parts.push(format!(
                "a memory test of {f} of device memory in {:.0} GiB slices, up to 3 s each",
                gib(slice as f64)
            )),
        }
    }
    parts.push("about a minute for the other gates".into());
    Some(format!(
        "profile acceptance: about {:.0} min on a GPU{}: {}",
        (total / 60.0).ceil(),
        if device_bytes.is_none() {
            " plus the memory test"
        } else {
            ""
        },
        parts.join(", ")
    ))
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown profile {s:?}{}; one of: {}",
                    greta_vocab::suggest::did_you_mean(s, Profile::ALL.map(|p| p.as_str()), 1),
                    Profile::ALL.map(|p| p.as_str()).join(", ")
                )
            })
    }
}

/// Numeric class of a gate: its op's (`kernels/src/ops/NAME.rs`).
pub use greta_kernels::Precision;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    pub id: String,
    pub about: String,
    pub op: Op,
    pub profiles: Vec<Profile>,
    #[serde(default)]
    pub fixed_value: bool,
    pub dispatches: Option<u32>,
    #[serde(default)]
    pub test_only: bool,
    /// Set on the stress gates: the op (a `gemm_f16`) runs back to back
    /// for this long instead of the profile's repeats.
    pub stress: Option<StressConfig>,
    /// Set on a full-size gate, whose size reaches the device's achievable
    /// rate: on a device with no baseline and no measured class it is held
    /// to that fraction of the model's achievable rate of this kind
    /// (`data/specs.toml`), in every profile that runs it.
    pub achievable: Option<AchievableKind>,
    /// Sized for a GPU (a memtest slice of GiBs): skipped on a CPU device,
    /// where it takes minutes. A gate with `achievable` is full size too.
    #[serde(default)]
    pub full_size: bool,
    /// A memtest gate that sweeps this fraction of the device's memory:
    /// its slice run again and again, each one kept allocated while the
    /// next runs (so each is other memory), until the fraction is covered
    /// or an allocation fails.
    pub whole_memory: Option<f64>,
    /// A copy gate over the host link instead of device memory: the op's
    /// bytes from pinned host memory to the device and back, each way
    /// timed, held to a share of the PCIe link's rate.
    #[serde(default)]
    pub host_link: bool,
}

/// How long a stress gate holds the matrix units, and how it samples.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StressConfig {
    /// Seconds of GEMMs (after a warm-up of about 1 s).
    pub seconds: f64,
    /// Seconds per timed interval; each has fresh inputs and its own rate.
    #[serde(default = "StressConfig::default_interval")]
    pub interval_s: f64,
    /// Output tiles checked per interval.
    #[serde(default = "StressConfig::default_tiles")]
    pub tiles: u32,
    /// Side of a checked tile.
    #[serde(default = "StressConfig::default_tile")]
    pub tile: u32,
}

impl StressConfig {
    fn default_interval() -> f64 {
        1.0
    }
    fn default_tiles() -> u32 {
        8
    }
    fn default_tile() -> u32 {
        32
    }

    fn check(&self) -> Result<(), String> {
        if !(self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err(format!(
                "stress.seconds {} is not in (0, 3600]",
                self.seconds
            ));
        }
        if !(self.interval_s > 0.0 && self.interval_s <= self.seconds) {
            return Err(format!(
                "stress.interval_s {} is not in (0, seconds]",
                self.interval_s
            ));
        }
        if self.tiles == 0 || self.tile == 0 || self.tile > 256 {
            return Err("stress.tiles must be > 0 and stress.tile in 1..=256".into());
        }
        Ok(())
    }
}

impl Gate {
    /// The op's precision: f16 gates have extra preconditions.
    pub fn precision(&self) -> Precision {
        self.op.precision()
    }

    pub fn tolerance(&self) -> Tolerance {
        self.op.tolerance()
    }

    /// The op's rate unit: TFLOP/s for compute-bound ops, GB/s of the
    /// bytes it must move for memory-bound ones, us/dispatch for noop.
    pub fn unit(&self) -> RateUnit {
        self.op.rate_unit()
    }

    /// The rate of one dispatch that took `ns` nanoseconds.
    pub fn rate(&self, ns: f64) -> Option<f64> {
        if !(ns.is_finite() && ns > 0.0) {
            return None;
        }
        Some(match self.unit() {
            RateUnit::UsPerDispatch => ns / 1e3,
            RateUnit::TFlops => self.op.flops() as f64 / ns / 1e3,
            RateUnit::GBps => self.op.bytes_moved() as f64 / ns,
        })
    }

    /// `m=256 n=256 k=256`: the shape without the op name.
    pub fn shape(&self) -> String {
        let s = self.op.to_string();
        let inner = s
            .split_once('(')
            .map(|(_, rest)| rest.trim_end_matches(')'))
            .unwrap_or("");
        inner.replace(',', " ")
    }

    /// Sized for a GPU: `full_size`, or held to an achievable rate.
    pub fn is_full_size(&self) -> bool {
        self.full_size || self.achievable.is_some()
    }

    pub fn dispatches_for(&self, profile: Profile) -> u32 {
        self.dispatches
            .unwrap_or_else(|| profile.dispatches())
            .max(1)
    }
}

/// The parsed catalogue.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub gates: Vec<Gate>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    gate: Vec<Gate>,
}

impl Catalog {
    pub fn builtin() -> Catalog {
        Catalog::parse("smoke/data/gates.toml", BUILTIN_GATES)
            .expect("built-in gates.toml is valid")
    }

    pub fn parse(path: &str, text: &str) -> Result<Catalog, String> {
        let file: CatalogFile = toml::from_str(text)
            .map_err(|e| crate::floors::toml_error(path, text, &e).to_string())?;
        let mut seen = std::collections::BTreeSet::new();
        for g in &file.gate {
            if !seen.insert(g.id.as_str()) {
                return Err(format!("{path}: gate {} is defined twice", g.id));
            }
            g.op.validate()
                .map_err(|e| format!("{path}: gate {}: {e}", g.id))?;
            if g.op.is_test_only() != g.test_only {
                return Err(format!(
                    "{path}: gate {}: test_only must be set exactly for the test-only ops",
                    g.id
                ));
            }
            if g.test_only && !g.profiles.is_empty() {
                return Err(format!(
                    "{path}: gate {}: a test-only gate is in no profile",
                    g.id
                ));
            }
            if let Some(st) = &g.stress {
                if !matches!(g.op, Op::GemmF16 { .. }) || !g.id.starts_with("stress.") {
                    return Err(format!(
                        "{path}: gate {}: a stress gate runs a gemm_f16 op and its id starts with `stress.`",
                        g.id
                    ));
                }
                st.check()
                    .map_err(|e| format!("{path}: gate {}: {e}", g.id))?;
            }
            match g.achievable {
                None => {}
                Some(AchievableKind::Copy)
                    if matches!(g.op, Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. }) => {}
                Some(AchievableKind::VendorGemmF16) if g.stress.is_some() => {}
                Some(k) => {
                    return Err(format!(
                        "{path}: gate {}: achievable = \"{}\" holds a streaming gate (fill, copy, vec_add) to the copy rate or a stress gate to the vendor's f16 GEMM rate, nothing else",
                        g.id,
                        k.as_str()
                    ))
                }
            }
            if g.host_link
                && !(matches!(g.op, Op::Copy { .. })
                    && g.stress.is_none()
                    && g.achievable.is_none()
                    && g.whole_memory.is_none())
            {
                return Err(format!(
                    "{path}: gate {}: host_link is a copy gate's, with no stress, achievable or whole_memory",
                    g.id
                ));
            }
            if let Some(f) = g.whole_memory {
                if !(matches!(g.op, Op::Memtest { .. }) && f > 0.0 && f <= 0.95) {
                    return Err(format!(
                        "{path}: gate {}: whole_memory is a fraction in (0, 0.95] of a memtest gate",
                        g.id
                    ));
                }
            }
            if matches!(g.op, Op::Memtest { flip_mask, .. } if flip_mask != 0) {
                return Err(format!(
                    "{path}: gate {}: flip_mask injects memory errors; it is for tests, not a gate",
                    g.id
                ));
            }
            if g.fixed_value && !matches!(g.op, Op::Fill { .. }) {
                return Err(format!(
                    "{path}: gate {}: fixed_value is for fill gates",
                    g.id
                ));
            }
        }
        Ok(Catalog { gates: file.gate })
    }

    pub fn get(&self, id: &str) -> Option<&Gate> {
        self.gates.iter().find(|g| g.id == id)
    }

    /// The gates a run executes, in order: `selected` ids (in catalogue
    /// order) or the whole profile; f32 gates first, then f16 gates (which
    /// depend on the f32 gates having passed). Unknown ids, and test-only
    /// gates without `include_test`, are errors that list what exists.
    pub fn plan(
        &self,
        profile: Profile,
        selected: &[String],
        include_test: bool,
    ) -> Result<Vec<Gate>, String> {
        let visible = |g: &&Gate| include_test || !g.test_only;
        let mut gates: Vec<Gate> = if selected.is_empty() {
            self.gates
                .iter()
                .filter(|g| g.profiles.contains(&profile))
                .cloned()
                .collect()
        } else {
            for id in selected {
                match self.get(id) {
                    Some(g) if visible(&g) => {}
                    _ => {
                        // The few nearest ids, not all of them on one line.
                        let near = greta_vocab::suggest::did_you_mean(
                            id,
                            self.gates.iter().filter(visible).map(|g| g.id.as_str()),
                            3,
                        );
                        return Err(format!(
                            "unknown gate {id:?}{near}; every gate: greta smoke --list-gates"
                        ));
                    }
                }
            }
            self.gates
                .iter()
                .filter(|g| selected.contains(&g.id))
                .cloned()
                .collect()
        };
        gates.sort_by_key(|g| g.precision() == Precision::Fp16);
        Ok(gates)
    }
}

/// Gates for unit tests: one `default`-profile gate `NAME.t` per op, given
/// as its TOML inline table (`{ op = "copy", n = 64 }`), planned as a run
/// would plan them.
#[cfg(test)]
pub(crate) fn test_gates(ops: &[&str]) -> Vec<Gate> {
    let mut text = String::new();
    for op in ops {
        let name = op
            .split('"')
            .nth(1)
            .expect("an inline table that starts with op = \"NAME\"");
        text += &format!(
            "[[gate]]\nid = \"{name}.t\"\nabout = \"\"\nop = {op}\nprofiles = [\"default\"]\n"
        );
    }
    Catalog::parse("t.toml", &text)
        .unwrap()
        .plan(Profile::Default, &[], false)
        .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_profile_names_the_nearest() {
        let e = "defualt".parse::<Profile>().unwrap_err();
        assert!(e.contains("did you mean `default`?"), "{e}");
        let e = "framework".parse::<Profile>().unwrap_err();
        assert!(e.contains("did you mean `frameworks`?"), "{e}");
    }

    /// Each op's rate unit and precision as gates have always had them
    /// (the results' `unit`, the f16 preconditions and deny list follow).
    #[test]
    fn units_and_precisions_of_every_op_are_pinned() {
        let facts: Vec<(&str, &str, Precision)> = Op::catalogue()
            .into_iter()
            .map(|op| {
                let g = Gate {
                    id: format!("{}.x", op.name()),
                    about: String::new(),
                    op,
                    profiles: vec![],
                    fixed_value: false,
                    dispatches: None,
                    test_only: false,
                    stress: None,
                    achievable: None,
                    full_size: false,
                    whole_memory: None,
                    host_link: false,
                };
                (g.op.name(), g.unit().as_str(), g.precision())
            })
            .collect();
        use Precision::{Fp16, Fp32};
        assert_eq!(
            facts,
            [
                ("noop", "us/dispatch", Fp32),
                ("fill", "GB/s", Fp32),
                ("copy", "GB/s", Fp32),
                ("vec_add", "GB/s", Fp32),
                ("gemm_f32", "TFLOP/s", Fp32),
                ("gemm_f16", "TFLOP/s", Fp16),
                ("gemv_f16", "GB/s", Fp16),
                ("linear_f16", "TFLOP/s", Fp16),
                ("gemv_add_f16", "GB/s", Fp16),
                ("rms_gemv_swiglu_f16", "GB/s", Fp16),
                ("rms_gemv_rope_kv_f16", "GB/s", Fp16),
                ("rmsnorm", "GB/s", Fp32),
                ("layernorm", "GB/s", Fp32),
                ("softmax", "GB/s", Fp32),
                ("rmsnorm_f16", "GB/s", Fp16),
                ("add_rmsnorm_f16", "GB/s", Fp16),
                ("swiglu_f16", "GB/s", Fp16),
                ("rope", "GB/s", Fp32),
                ("kv_update", "GB/s", Fp32),
                ("rope_kv_f16", "GB/s", Fp16),
                ("attn_decode_f16", "GB/s", Fp16),
                ("attn_prefill_f16", "TFLOP/s", Fp16),
                ("block_decode", "GB/s", Fp16),
                ("block_prefill", "TFLOP/s", Fp16),
                ("memtest", "GB/s", Fp32),
                ("test_broken_copy", "GB/s", Fp32),
                ("test_slow", "GB/s", Fp32),
            ]
        );
    }

    #[test]
    fn builtin_catalogue_is_valid_and_every_profile_has_gates() {
        let c = Catalog::builtin();
        for p in Profile::ALL {
            let plan = c.plan(p, &[], false).unwrap();
            assert_eq!(!plan.is_empty(), p.runs_kernels(), "{p}");
            assert!(plan.iter().all(|g| !g.test_only));
        }
        // The default profile runs every op of the catalogue (but the
        // test-only ones): a new op without a gate fails here.
        let default = c.plan(Profile::Default, &[], false).unwrap();
        for op in greta_kernels::Op::catalogue()
            .iter()
            .filter(|o| !o.is_test_only())
        {
            assert!(
                default.iter().any(|g| g.op.name() == op.name()),
                "the default profile has no gate for {}",
                op.name()
            );
        }
        // Gate ids start with their op name (the naming rule of the docs).
        for g in &c.gates {
            let prefix = g.id.split('.').next().unwrap();
            assert!(
                g.op.name() == prefix
                    || (g.test_only && prefix == "test")
                    || (g.stress.is_some() && prefix == "stress"),
                "{} runs {}",
                g.id,
                g.op.name()
            );
        }
    }

    #[test]
    fn f16_gates_run_after_f32_gates() {
        let c = Catalog::builtin();
        let plan = c.plan(Profile::Default, &[], false).unwrap();
        let first_f16 = plan
            .iter()
            .position(|g| g.precision() == Precision::Fp16)
            .unwrap();
        assert!(plan[first_f16..]
            .iter()
            .all(|g| g.precision() == Precision::Fp16));
    }

    #[test]
    fn selection_and_test_gates() {
        let c = Catalog::builtin();
        let plan = c
            .plan(
                Profile::Ultrasafe,
                &["copy.16m".into(), "gemm_f16.256".into()],
                false,
            )
            .unwrap();
        assert_eq!(
            plan.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
            ["copy.16m", "gemm_f16.256"]
        );
        let e = c
            .plan(Profile::Default, &["nope".into()], false)
            .unwrap_err();
        assert!(
            e.contains("unknown gate \"nope\"") && e.contains("--list-gates"),
            "{e}"
        );
        // A near miss names the few nearest gates, never the whole catalogue.
        let e = c
            .plan(Profile::Default, &["gemm_f16.25".into()], false)
            .unwrap_err();
        assert!(e.contains("did you mean `gemm_f16.256`"), "{e}");
        assert!(e.matches('`').count() <= 6, "at most 3 named: {e}");
        assert!(!e.contains("fill.tiny"), "{e}");
        assert!(!e.contains("test.slow"));
        assert!(c
            .plan(Profile::Default, &["test.slow".into()], false)
            .is_err());
        let plan = c
            .plan(Profile::Default, &["test.slow".into()], true)
            .unwrap();
        assert_eq!(plan[0].id, "test.slow");
    }

    #[test]
    fn derived_properties() {
        let c = Catalog::builtin();
        let g = c.get("gemm_f32.256").unwrap();
        assert_eq!(g.tolerance(), Tolerance::FP32);
        assert_eq!(g.unit(), RateUnit::TFlops);
        assert_eq!(g.shape(), "m=256 n=256 k=256");
        // 2*256^3 flops in 1 ms = 0.0336 TFLOP/s.
        let r = g.rate(1e6).unwrap();
        assert!((r - 2.0 * 256f64.powi(3) / 1e12 / 1e-3).abs() < 1e-9, "{r}");
        assert_eq!(
            c.get("gemm_f16.256").unwrap().tolerance(),
            Tolerance::FP16_ACC32
        );
        assert_eq!(c.get("gemm_f16.256").unwrap().precision(), Precision::Fp16);
        assert_eq!(c.get("copy.16m").unwrap().tolerance(), Tolerance::Exact);
        // copy of 4 Mi words moves 32 MiB; in 1 ms that is 33.55 GB/s.
        let r = c.get("copy.16m").unwrap().rate(1e6).unwrap();
        assert!((r - 33.554432).abs() < 1e-6, "{r}");
        let noop = c.get("noop.dispatch").unwrap();
        assert_eq!(noop.rate(2500.0), Some(2.5));
        assert_eq!(noop.dispatches_for(Profile::Default), 256);
        assert!(g.rate(0.0).is_none());
    }

    #[test]
    fn catalogue_errors_are_specific() {
        let dup = "[[gate]]\nid=\"a\"\nabout=\"\"\nop={op=\"noop\"}\nprofiles=[]\n".repeat(2);
        assert!(Catalog::parse("g.toml", &dup)
            .unwrap_err()
            .contains("twice"));
        let bad = "[[gate]]\nid=\"a\"\nabout=\"\"\nop={op=\"copy\", n=0}\nprofiles=[]\n";
        assert!(Catalog::parse("g.toml", bad)
            .unwrap_err()
            .contains("n must be > 0"));
        let unknown = "[[gate]]\nid=\"a\"\nabout=\"\"\nop={op=\"warp\"}\nprofiles=[]\n";
        assert!(Catalog::parse("g.toml", unknown)
            .unwrap_err()
            .starts_with("g.toml:4:"));
    }

    #[test]
    fn stress_gates_are_gemm_f16_with_sane_times() {
        let c = Catalog::builtin();
        let perf = c.get("stress.gemm_f16.8192").unwrap();
        assert!(perf.profiles.contains(&Profile::Perf));
        assert!(matches!(perf.op, Op::GemmF16 { m: 8192, .. }));
        let short = c.get("stress.gemm_f16.512").unwrap();
        assert_eq!(short.profiles, [Profile::Health, Profile::Acceptance]);
        // Health's short form fits Slurm's 60 s with room for the rest.
        assert!(short.stress.as_ref().unwrap().seconds <= 10.0);
        let head = "[[gate]]\nid=\"stress.x\"\nabout=\"\"\nprofiles=[]\n";
        let bad = format!("{head}op={{op=\"copy\", n=4}}\nstress={{seconds=1}}\n");
        assert!(Catalog::parse("g.toml", &bad)
            .unwrap_err()
            .contains("gemm_f16"));
        let bad = format!("{head}op={{op=\"gemm_f16\", m=4, n=4, k=4}}\nstress={{seconds=0}}\n");
        assert!(Catalog::parse("g.toml", &bad)
            .unwrap_err()
            .contains("stress.seconds 0"));
        let ok = format!("{head}op={{op=\"gemm_f16\", m=4, n=4, k=4}}\nstress={{seconds=2}}\n");
        let g = Catalog::parse("g.toml", &ok).unwrap().gates.remove(0);
        assert_eq!(g.stress.unwrap().interval_s, 1.0);
    }

    /// The acceptance note says what the selected gates take: the whole
    /// profile its stress, memory test and the rest; gates selected with
    /// `--gate` and no stress gate among them no stress part at all (it
    /// said "-0 s of matrix stress"); other profiles say nothing.
    #[test]
    fn the_acceptance_note_names_only_what_runs() {
        let c = Catalog::builtin();
        let all = c.plan(Profile::Acceptance, &[], false).unwrap();
        let note = duration_note(Profile::Acceptance, &all, Some(140 << 30)).unwrap();
        assert!(note.contains("33 s of matrix stress"), "{note}");
        assert!(note.contains("in 31 slices of 4 GiB"), "{note}");
        for gates in [
            vec!["memtest.16m".to_string()],
            vec!["copy.16m".into(), "memtest.all".into()],
        ] {
            let plan = c.plan(Profile::Acceptance, &gates, false).unwrap();
            for bytes in [None, Some(80 << 30)] {
                let note = duration_note(Profile::Acceptance, &plan, bytes).unwrap();
                assert!(!note.contains("matrix stress"), "{note}");
                assert!(!note.contains("-0"), "{note}");
                assert!(
                    note.contains("about a minute for the other gates"),
                    "{note}"
                );
            }
        }
        let one = c
            .plan(Profile::Acceptance, &["stress.gemm_f16.512".into()], false)
            .unwrap();
        let note = duration_note(Profile::Acceptance, &one, None).unwrap();
        assert!(
            note.contains(": 2 s of matrix stress, about a minute"),
            "{note}"
        );
        assert_eq!(duration_note(Profile::Health, &all, None), None);
    }

    #[test]
    fn profile_names() {
        for p in Profile::ALL {
            assert_eq!(p.as_str().parse::<Profile>().unwrap(), p);
        }
        assert!("fast".parse::<Profile>().unwrap_err().contains("ultrasafe"));
    }
}
