//! Published peak figures per device model (`smoke/data/specs.toml`,
//! embedded; `GRETA_SPECS=FILE` replaces it): every gate's rate as a
//! fraction of its device's spec sheet, and the `perf` profile's spec
//! floors on a node seen for the first time (no `--baseline`, no measured
//! device class). docs/smoke.md, "Spec sheets", says where each figure comes
//! from and why the fractions are what they are.

use crate::floors::{locate, toml_error, FloorsError, Reference};
use crate::results::{DeviceInfo, RateUnit, SpecRef};
use greta_kernels::{Op, Precision};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// `smoke/data/specs.toml`.
pub const BUILTIN_SPECS: &str = include_str!("../../data/specs.toml");

/// Largest specs file read (`GRETA_SPECS`): the built-in one is ~50 KiB.
pub const MAX_SPECS: u64 = 4 << 20;

/// The one `schema_version` this greta reads.
pub const SPECS_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    pub schema_version: u32,
    #[serde(default, rename = "device")]
    pub devices: Vec<DeviceSpec>,
    /// Where the rows came from (the built-in file or `GRETA_SPECS`).
    #[serde(skip)]
    pub path: String,
}

/// One device model's vendor peak figures: dense, per driver-visible device
/// (the header of `smoke/data/specs.toml` defines every field).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    pub model: String,
    pub vendor: String,
    pub arch: String,
    pub gfx: Option<String>,
    #[serde(rename = "match")]
    pub matches: Vec<MatchEntry>,
    pub cu_count: Option<u32>,
    pub sm_count: Option<u32>,
    pub devices_per_board: Option<u32>,
    pub mem_bw_gbs: f64,
    pub mem_config: Option<String>,
    pub fp16_dense_tflops: f64,
    pub bf16_dense_tflops: f64,
    pub fp32_tflops: f64,
    /// `fp32_tflops` counts RDNA's dual issue, which ordinary code never
    /// reaches: the f32 GEMM spec floor holds it to half the figure.
    #[serde(default)]
    pub fp32_dual_issue: bool,
    pub fp32_matrix_tflops: Option<f64>,
    pub fp16_vector_tflops: Option<f64>,
    pub tf32_dense_tflops: Option<f64>,
    pub board_mem_bw_gbs: Option<f64>,
    pub board_fp16_dense_tflops: Option<f64>,
    pub board_bf16_dense_tflops: Option<f64>,
    pub board_fp32_tflops: Option<f64>,
    pub board_fp32_matrix_tflops: Option<f64>,
    pub clock_mhz_assumed: Option<u32>,
    pub board_power_w: Option<u32>,
    pub confidence: String,
    /// URLs, the vendor's first.
    pub source: Vec<String>,
    pub figures_from: String,
    pub notes: String,
    /// Rates measured on healthy devices of this model (not peaks): the
    /// first-seen floors of full-size gates (`[[device.achievable]]`).
    #[serde(default)]
    pub achievable: Vec<Achievable>,
}

/// A rate a healthy device of the row's model was measured to reach, with
/// when and how: a full-size gate ([`crate::gates::Gate::achievable`]) is
/// held to [`AchievableKind::fraction`] of it on a device that has no
/// baseline and no measured class, so that a GPU at 1/1.3 of its speed
/// fails the first time greta sees it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Achievable {
    pub what: AchievableKind,
    /// The GEMM's side (m = n = k); none for copy.
    pub size: Option<u32>,
    /// GB/s for copy (bytes read + written), TFLOP/s for the GEMMs.
    pub rate: f64,
    /// The day it was measured, `YYYY-MM-DD`.
    pub measured: String,
    /// What ran on what, and where the figure is published.
    pub source: String,
}

/// What an achievable rate measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AchievableKind {
    /// A device-to-device copy of at least 1 GiB: the streaming gates'.
    Copy,
    /// The vendor BLAS's square f16-in, f32-accumulate GEMM: the stress
    /// gate's when the vendor library ran it.
    VendorGemmF16,
    /// The vendor BLAS's square f32 GEMM (TF32 off): recorded beside the
    /// others; no gate is held to it yet.
    VendorGemmF32,
}

impl AchievableKind {
    /// The fraction of the achievable rate a full-size gate must reach:
    /// 0.85 for streaming, 0.8 for the vendor's GEMM. Both sit above
    /// 1/1.3 = 0.77 (a GPU at 1/1.3 of its speed fails) and below the
    /// lowest rate a healthy H200 reached against these figures (copy.1g
    /// 0.97 of 4210 GB/s, the cuBLAS stress 0.995 of 646 TFLOP/s:
    /// docs/performance.md), so a clean device passes with room.
    pub fn fraction(self) -> f64 {
        match self {
            AchievableKind::Copy => 0.85,
            AchievableKind::VendorGemmF16 | AchievableKind::VendorGemmF32 => 0.8,
        }
    }

    pub fn unit(self) -> RateUnit {
        match self {
            AchievableKind::Copy => RateUnit::GBps,
            _ => RateUnit::TFlops,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AchievableKind::Copy => "copy",
            AchievableKind::VendorGemmF16 => "vendor_gemm_f16",
            AchievableKind::VendorGemmF32 => "vendor_gemm_f32",
        }
    }

    fn is_gemm(self) -> bool {
        self != AchievableKind::Copy
    }
}

/// How a row claims a device: `pci:VVVV:DDDD[:rRR]` or a lowercase
/// substring of the device's name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub enum MatchEntry {
    Pci {
        vendor: u32,
        device: u32,
        revision: Option<u8>,
    },
    Name(String),
}

impl TryFrom<String> for MatchEntry {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if let Some(rest) = s.strip_prefix("pci:") {
            let bad =
                || format!("match entry {s:?}: expected pci:VVVV:DDDD or pci:VVVV:DDDD:rRR (hex)");
            let parts: Vec<&str> = rest.split(':').collect();
            let hex4 = |p: &str| {
                (p.len() == 4 && p.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| u32::from_str_radix(p, 16).ok())
                    .flatten()
            };
            let (vendor, device) = match parts.as_slice() {
                [v, d] | [v, d, _] => (hex4(v).ok_or_else(bad)?, hex4(d).ok_or_else(bad)?),
                _ => return Err(bad()),
            };
            let revision = match parts.get(2) {
                None => None,
                Some(r) => {
                    let hex = r
                        .strip_prefix('r')
                        .filter(|h| h.len() == 2 && h.bytes().all(|b| b.is_ascii_hexdigit()));
                    Some(
                        hex.and_then(|h| u8::from_str_radix(h, 16).ok())
                            .ok_or_else(bad)?,
                    )
                }
            };
            if vendor == 0 || rest != rest.to_lowercase() {
                return Err(format!(
                    "match entry {s:?}: the vendor id must be non-zero and the hex lowercase"
                ));
            }
            return Ok(MatchEntry::Pci {
                vendor,
                device,
                revision,
            });
        }
        if s.trim().is_empty() || s.trim() != s || s.to_lowercase() != s {
            return Err(format!(
                "match entry {s:?}: a name entry is a non-empty lowercase substring of the device name, without surrounding spaces"
            ));
        }
        Ok(MatchEntry::Name(s))
    }
}

impl fmt::Display for MatchEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchEntry::Pci {
                vendor,
                device,
                revision: None,
            } => write!(f, "pci:{vendor:04x}:{device:04x}"),
            MatchEntry::Pci {
                vendor,
                device,
                revision: Some(r),
            } => write!(f, "pci:{vendor:04x}:{device:04x}:r{r:02x}"),
            MatchEntry::Name(n) => write!(f, "name {n:?}"),
        }
    }
}

/// What a device is known by. The smoke report's device record carries
/// the PCI vendor and device id (0 where the backend has none) but no PCI
/// revision, so `revision` is `None` for every device today.
#[derive(Debug, Clone, Copy)]
pub struct DeviceKey<'a> {
    pub name: &'a str,
    pub vendor_id: u32,
    pub device_id: u32,
    pub revision: Option<u8>,
}

impl<'a> DeviceKey<'a> {
    pub fn of(d: &'a DeviceInfo) -> DeviceKey<'a> {
        DeviceKey {
            name: &d.name,
            vendor_id: d.vendor_id,
            device_id: d.device_id,
            revision: None,
        }
    }
}

impl MatchEntry {
    /// How strongly this entry claims the device: PCI id and revision (3)
    /// beats PCI id (2) beats a name (1, longer names first); `None` when
    /// it does not claim it.
    fn strength(&self, key: &DeviceKey<'_>) -> Option<(u8, usize)> {
        match self {
            MatchEntry::Pci {
                vendor,
                device,
                revision,
            } => {
                let ids = *vendor == key.vendor_id && *device == key.device_id;
                match revision {
                    None => ids.then_some((2, 0)),
                    Some(r) => (ids && key.revision == Some(*r)).then_some((3, 0)),
                }
            }
            MatchEntry::Name(n) => key.name.to_lowercase().contains(n).then_some((1, n.len())),
        }
    }
}

/// A row and the entry by which it claims a device.
type Claim<'a> = (&'a DeviceSpec, &'a MatchEntry);

/// The outcome of looking a device up.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecMatch<'a> {
    /// The row that claims the device most strongly, and by which entry.
    Found {
        spec: &'a DeviceSpec,
        by: &'a MatchEntry,
    },
    /// No row claims it: no fractions of spec, no spec floor.
    Unknown,
    /// Two rows claim it equally strongly (a data error the file's checks
    /// cannot see, e.g. two names of one length in one device name): no
    /// spec is used rather than a guess.
    Ambiguous(Vec<&'a str>),
}

/// The rate classes a spec floor applies to, and the fraction of the spec
/// figure each must reach (docs/smoke.md, "Spec floors", has the
/// measurements behind them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateClass {
    /// fill, copy, vec_add: against `mem_bw_gbs`.
    Streaming,
    /// rmsnorm, layernorm, softmax: against `mem_bw_gbs`.
    Norms,
    /// gemm_f32: against `fp32_tflops` (half of it where dual issue).
    GemmF32,
    /// gemm_f16: against `fp16_dense_tflops`.
    GemmF16,
}

impl RateClass {
    pub fn of(op: &Op) -> Option<RateClass> {
        match op {
            Op::Fill { .. } | Op::Copy { .. } | Op::VecAdd { .. } => Some(RateClass::Streaming),
            Op::RmsNorm { .. } | Op::LayerNorm { .. } | Op::Softmax { .. } => {
                Some(RateClass::Norms)
            }
            Op::GemmF32 { .. } => Some(RateClass::GemmF32),
            Op::GemmF16 { .. } => Some(RateClass::GemmF16),
            _ => None,
        }
    }

    /// 0.6 of the lowest fraction of spec greta's Vulkan kernels reach on
    /// a healthy H100 and H200 (streaming 0.85, norms 0.79, f32 GEMM 0.64,
    /// f16 GEMM 0.25), rounded down to 0.05: DCGM's 0.75 margin times 0.8
    /// for a model never measured, whose reachable fraction may sit lower.
    pub fn fraction(self) -> f64 {
        match self {
            RateClass::Streaming => 0.5,
            RateClass::Norms => 0.45,
            RateClass::GemmF32 => 0.35,
            RateClass::GemmF16 => 0.15,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RateClass::Streaming => "streaming",
            RateClass::Norms => "norms",
            RateClass::GemmF32 => "f32 GEMM",
            RateClass::GemmF16 => "f16 GEMM",
        }
    }
}

impl DeviceSpec {
    /// The figure a gate's rate is a fraction of: an f32 TFLOP/s op (GEMM)
    /// against `fp32_tflops`, an f16 one against `fp16_dense_tflops` (the
    /// op's precision fact), every GB/s gate against `mem_bw_gbs`; none for
    /// us/dispatch.
    pub fn figure_for(&self, op: &Op, unit: RateUnit) -> Option<SpecRef> {
        let (figure, field) = match (op.precision(), unit) {
            (Precision::Fp32, RateUnit::TFlops) => (self.fp32_tflops, "fp32_tflops"),
            (Precision::Fp16, RateUnit::TFlops) => (self.fp16_dense_tflops, "fp16_dense_tflops"),
            (_, RateUnit::GBps) => (self.mem_bw_gbs, "mem_bw_gbs"),
            _ => return None,
        };
        Some(SpecRef {
            figure,
            unit,
            field: field.to_string(),
            model: self.model.clone(),
            source: self.source.first().cloned().unwrap_or_default(),
        })
    }

    /// The spec floor's reference for a gate of `op`, when its rate class
    /// has one: the spec figure (halved for dual-issue f32) and the class's
    /// fraction.
    pub fn floor_reference(&self, op: &Op, unit: RateUnit) -> Option<(Reference, f64)> {
        let class = RateClass::of(op)?;
        let spec = self.figure_for(op, unit)?;
        let halved = class == RateClass::GemmF32 && self.fp32_dual_issue;
        let rate = if halved {
            spec.figure / 2.0
        } else {
            spec.figure
        };
        Some((
            Reference {
                rate,
                unit,
                source: format!(
                    "spec {} {}{} ({} class; {})",
                    self.model,
                    spec.field,
                    if halved { " / 2 (dual issue)" } else { "" },
                    class.as_str(),
                    spec.source
                ),
            },
            class.fraction(),
        ))
    }
}

impl DeviceSpec {
    /// The achievable rate of `kind` for work `op` (a GEMM's row must be
    /// of its size), if the row has one.
    pub fn achievable_for(&self, kind: AchievableKind, op: &Op) -> Option<&Achievable> {
        let size = match *op {
            Op::GemmF16 { m, n, k } | Op::GemmF32 { m, n, k } if m == n && n == k => {
                u32::try_from(m).ok()
            }
            _ => None,
        };
        self.achievable
            .iter()
            .find(|a| a.what == kind && (!kind.is_gemm() || a.size == size))
    }

    /// The first-seen floor of a full-size gate of `op` held to `kind`:
    /// the achievable rate and its fraction. `vendor_ran` says whether the
    /// vendor's library did the gate's work (a stress gate on greta's own
    /// GEMM is not held to the vendor's rate).
    pub fn achievable_floor(
        &self,
        kind: AchievableKind,
        op: &Op,
        vendor_ran: bool,
    ) -> Option<(Reference, f64)> {
        if kind.is_gemm() && !vendor_ran {
            return None;
        }
        let a = self.achievable_for(kind, op)?;
        Some((
            Reference {
                rate: a.rate,
                unit: kind.unit(),
                source: format!(
                    "achievable {} {}{} (measured {}: {})",
                    self.model,
                    kind.as_str(),
                    a.size.map(|s| format!(" {s}")).unwrap_or_default(),
                    a.measured,
                    a.source
                ),
            },
            kind.fraction(),
        ))
    }
}

impl SpecFile {
    pub fn builtin() -> SpecFile {
        Self::parse("smoke/data/specs.toml", BUILTIN_SPECS).expect("built-in specs.toml is valid")
    }

    /// The specs a run uses: `GRETA_SPECS` when set (a bad file is an
    /// input error, exit 2), else the built-in file.
    pub fn for_run() -> Result<SpecFile, FloorsError> {
        match std::env::var_os(greta_vocab::EnvVars::GRETA_SPECS) {
            Some(p) if !p.is_empty() => Self::load(Path::new(&p)),
            _ => Ok(Self::builtin()),
        }
    }

    pub fn load(path: &Path) -> Result<SpecFile, FloorsError> {
        let text = greta_fsread::text(path, MAX_SPECS)?;
        Self::parse(&path.display().to_string(), &text)
    }

    pub fn parse(path: &str, text: &str) -> Result<SpecFile, FloorsError> {
        let mut file: SpecFile = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
        file.path = path.to_string();
        let invalid = |needle: &str, msg: String| {
            let (line, column) = locate(text, needle);
            FloorsError::Invalid {
                path: path.to_string(),
                line,
                column,
                msg,
            }
        };
        if file.schema_version != SPECS_SCHEMA_VERSION {
            return Err(invalid(
                "schema_version",
                format!(
                    "schema_version is {}, this greta reads {SPECS_SCHEMA_VERSION}",
                    file.schema_version
                ),
            ));
        }
        let mut claimed: BTreeMap<&MatchEntry, &str> = BTreeMap::new();
        for d in &file.devices {
            let at = format!("model = \"{}\"", d.model);
            let row = |msg: String| invalid(&at, format!("device {:?}: {msg}", d.model));
            if d.model.trim().is_empty() {
                return Err(invalid("model", "a device row has an empty model".into()));
            }
            if d.source.is_empty()
                || d.source
                    .iter()
                    .any(|s| !(s.starts_with("https://") || s.starts_with("http://")))
            {
                return Err(row(
                    "every row needs a source: one or more http(s) URLs, the vendor's first".into(),
                ));
            }
            if d.figures_from.trim().is_empty() {
                return Err(row(
                    "figures_from must say where each figure was read".into()
                ));
            }
            if let Some((name, v)) = d
                .figures()
                .into_iter()
                .find(|(_, v)| !(v.is_finite() && *v > 0.0))
            {
                return Err(row(format!("{name} must be a positive number, got {v}")));
            }
            if d.matches.is_empty() {
                return Err(row("match is empty: the row would claim no device".into()));
            }
            check_achievable(&d.achievable).map_err(row)?;
            for m in &d.matches {
                if let Some(other) = claimed.insert(m, &d.model) {
                    return Err(row(format!("match entry {m} is also claimed by {other:?}")));
                }
            }
        }
        Ok(file)
    }

    /// The row that claims `key` most strongly (PCI id + revision, then
    /// PCI id, then the longest name entry).
    pub fn lookup(&self, key: &DeviceKey<'_>) -> SpecMatch<'_> {
        let mut best: Option<((u8, usize), Vec<Claim<'_>>)> = None;
        for d in &self.devices {
            let Some((s, m)) = d
                .matches
                .iter()
                .filter_map(|m| m.strength(key).map(|s| (s, m)))
                .max_by_key(|(s, _)| *s)
            else {
                continue;
            };
            match &mut best {
                Some((bs, rows)) if *bs == s => rows.push((d, m)),
                Some((bs, _)) if *bs > s => {}
                _ => best = Some((s, vec![(d, m)])),
            }
        }
        match best {
            None => SpecMatch::Unknown,
            Some((_, rows)) if rows.len() == 1 => SpecMatch::Found {
                spec: rows[0].0,
                by: rows[0].1,
            },
            Some((_, rows)) => {
                SpecMatch::Ambiguous(rows.iter().map(|(d, _)| d.model.as_str()).collect())
            }
        }
    }
}

impl DeviceSpec {
    /// Every figure the row gives, by field name (each must be positive).
    fn figures(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("mem_bw_gbs", self.mem_bw_gbs),
            ("fp16_dense_tflops", self.fp16_dense_tflops),
            ("bf16_dense_tflops", self.bf16_dense_tflops),
            ("fp32_tflops", self.fp32_tflops),
        ];
        for (name, x) in [
            ("fp32_matrix_tflops", self.fp32_matrix_tflops),
            ("fp16_vector_tflops", self.fp16_vector_tflops),
            ("tf32_dense_tflops", self.tf32_dense_tflops),
            ("board_mem_bw_gbs", self.board_mem_bw_gbs),
            ("board_fp16_dense_tflops", self.board_fp16_dense_tflops),
            ("board_bf16_dense_tflops", self.board_bf16_dense_tflops),
            ("board_fp32_tflops", self.board_fp32_tflops),
            ("board_fp32_matrix_tflops", self.board_fp32_matrix_tflops),
            ("cu_count", self.cu_count.map(f64::from)),
            ("sm_count", self.sm_count.map(f64::from)),
            ("devices_per_board", self.devices_per_board.map(f64::from)),
            ("clock_mhz_assumed", self.clock_mhz_assumed.map(f64::from)),
            ("board_power_w", self.board_power_w.map(f64::from)),
        ] {
            if let Some(x) = x {
                v.push((name, x));
            }
        }
        v
    }
}

/// An achievable row must be traceable and unambiguous: a positive rate,
/// a date, a source, a size exactly for the GEMMs, one row per kind and
/// size.
fn check_achievable(rows: &[Achievable]) -> Result<(), String> {
    for (i, a) in rows.iter().enumerate() {
        let what = a.what.as_str();
        if !(a.rate.is_finite() && a.rate > 0.0) {
            return Err(format!(
                "achievable {what}: rate must be a positive number, got {}",
                a.rate
            ));
        }
        let date = a.measured.as_bytes();
        let is_date = date.len() == 10
            && date.iter().enumerate().all(|(j, b)| match j {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            });
        if !is_date {
            return Err(format!(
                "achievable {what}: measured must be the day of the measurement, YYYY-MM-DD, got {:?}",
                a.measured
            ));
        }
        if a.source.trim().is_empty() {
            return Err(format!(
                "achievable {what}: source must say what ran and where the figure is published"
            ));
        }
        if a.what.is_gemm() != a.size.is_some_and(|s| s > 0) {
            return Err(format!(
                "achievable {what}: a GEMM rate needs its size (m = n = k > 0), a copy rate has none"
            ));
        }
        if rows[..i]
            .iter()
            .any(|b| b.what == a.what && b.size == a.size)
        {
            return Err(format!("achievable {what}: given twice for one size"));
        }
    }
    Ok(())
}

/// The spec table of docs/smoke.md, from the data (a test keeps the page
/// and the file in step).
pub fn markdown(file: &SpecFile) -> String {
    let mut out = String::from(
        "| model | matched by | memory GB/s | fp16 dense TFLOP/s | fp32 TFLOP/s | confidence | source |\n\
         | --- | --- | ---: | ---: | ---: | --- | --- |\n",
    );
    for d in &file.devices {
        let mut shown: Vec<String> = d
            .matches
            .iter()
            .filter(|m| {
                !matches!(
                    m,
                    MatchEntry::Pci {
                        revision: Some(_),
                        ..
                    }
                )
            })
            .map(|m| match m {
                MatchEntry::Name(n) => format!("`{n}`"),
                other => format!("`{other}`"),
            })
            .collect();
        let revs = d.matches.len() - shown.len();
        if revs > 0 {
            shown.push(format!(
                "{revs} PCI id+revision pair{}",
                if revs == 1 { "" } else { "s" }
            ));
        }
        out.push_str(&format!(
            "| {} | {} | {} | {} | {}{} | {} | {} |\n",
            d.model,
            shown.join(", "),
            d.mem_bw_gbs,
            d.fp16_dense_tflops,
            d.fp32_tflops,
            if d.fp32_dual_issue {
                " (dual issue)"
            } else {
                ""
            },
            d.confidence,
            d.source.first().map(String::as_str).unwrap_or(""),
        ));
    }
    out
}

/// The device's note about its spec row: which row and by what, or that
/// greta does not know the device (only said where spec floors would
/// apply, so other profiles' reports are unchanged for unknown devices).
pub fn note(m: &SpecMatch<'_>, device: &DeviceInfo, file: &str, floors: bool) -> Option<String> {
    match m {
        SpecMatch::Found { spec, by } => Some(format!(
            "spec figures: {} ({file}), matched by {by}{}; rates are also given as a fraction of spec{}",
            spec.model,
            match by {
                MatchEntry::Name(_) => " (the device record has no PCI revision)",
                _ => "",
            },
            if floors {
                ", and spec floors apply where no baseline or class floor does"
            } else {
                ""
            }
        )),
        SpecMatch::Unknown if floors => Some(format!(
            "no spec figures for this device in {file} (name {:?}, PCI {:04x}:{:04x}): no spec floors, no fractions of spec; see GRETA_SPECS in docs/smoke.md",
            device.name, device.vendor_id, device.device_id
        )),
        SpecMatch::Ambiguous(models) => Some(format!(
            "spec figures: rows {} of {file} claim this device equally: none used, no spec floors",
            models.join(", ")
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
