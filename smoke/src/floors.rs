//! Performance floors. A floor is a fraction of a rate measured on a healthy
//! device: either an earlier run of the same device (`--baseline FILE`) or
//! a per-device-class table (`smoke/data/floors.toml`, used by the `perf`
//! profile), at `--floor-fraction` (0.8); else, for a full-size gate, its
//! model's achievable rate (`smoke/data/specs.toml`, `crate::spec`).

use crate::results::{DeviceInfo, Floor, RateUnit, Report, SCHEMA};
use greta_vocab::place::line_col;
use greta_vocab::Place;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// 0.8 of a healthy rate: DCGM's 0.75 lets a GPU at 1/1.3 of its speed
/// (0.77) pass; 0.8 fails it, and a healthy device's run-to-run spread on
/// the gates that hold floors is a few percent (docs/performance.md).
pub const DEFAULT_FLOOR_FRACTION: f64 = 0.8;

/// A healthy rate to hold a gate to.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub rate: f64,
    pub unit: RateUnit,
    pub source: String,
}

/// Hold `rate` to `fraction` of `reference`: at least `fraction × ref` for
/// GB/s and TFLOP/s, at most `ref / fraction` for µs per dispatch.
pub fn apply(rate: Option<f64>, reference: &Reference, fraction: f64) -> Floor {
    let limit = if reference.unit.higher_is_better() {
        reference.rate * fraction
    } else {
        reference.rate / fraction
    };
    let passed = match rate {
        Some(r) if r.is_finite() => {
            if reference.unit.higher_is_better() {
                r >= limit
            } else {
                r <= limit
            }
        }
        _ => false,
    };
    Floor {
        limit,
        unit: reference.unit,
        reference: reference.rate,
        fraction,
        source: reference.source.clone(),
        passed,
    }
}

/// Why a baseline or floors file could not be used (greta exits 2).
#[derive(Debug, thiserror::Error)]
pub enum FloorsError {
    /// A FIFO, device or oversized file (the message names the path).
    #[error("cannot read {0}")]
    Read(#[from] greta_fsread::Error),
    #[error("{}: not a greta smoke result: {msg}", Place::new(path.display(), *line, *column))]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        msg: String,
    },
    #[error("{}: {msg}", Place::new(path, *line, *column))]
    Toml {
        path: String,
        line: usize,
        column: usize,
        msg: String,
    },
    #[error("{path}: schema is {found:?}, expected {SCHEMA:?} (a `greta smoke` result JSON)")]
    Schema { path: PathBuf, found: String },
    #[error("{}: {msg}", Place::new(path, *line, *column))]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        msg: String,
    },
}

/// An earlier run's result file, used for `--baseline`.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub path: PathBuf,
    pub report: Report,
}

/// Largest `--baseline` file read: a result of every gate on eight GPUs is
/// well under 1 MiB (`--baseline /dev/zero` once grew to 5 GB in 2 s).
pub const MAX_BASELINE: u64 = 64 << 20;

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, FloorsError> {
        let text = greta_fsread::text(path, MAX_BASELINE)?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Baseline, FloorsError> {
        // Check the schema first so a JSON file of another kind gets the
        // plainer message.
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| FloorsError::Json {
                path: path.to_path_buf(),
                line: e.line(),
                column: e.column(),
                msg: e.to_string(),
            })?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        if schema != SCHEMA {
            return Err(FloorsError::Schema {
                path: path.to_path_buf(),
                found: schema.to_string(),
            });
        }
        // Re-parse from text (not the Value) so errors carry line:column.
        let report: Report = serde_json::from_str(text).map_err(|e| FloorsError::Json {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            msg: e.to_string(),
        })?;
        if let Some((d, g)) = report.devices.iter().find_map(|d| {
            d.gates
                .iter()
                .find(|g| {
                    g.metrics
                        .as_ref()
                        .and_then(|m| m.rate)
                        .is_some_and(|r| !(r.is_finite() && r > 0.0))
                })
                .map(|g| (d, g))
        }) {
            let (line, column) = locate(text, &format!("\"{}\"", g.id));
            return Err(FloorsError::Invalid {
                path: path.display().to_string(),
                line,
                column,
                msg: format!(
                    "gate {} on device {} has a rate that is not a positive number",
                    g.id, d.index
                ),
            });
        }
        Ok(Baseline {
            path: path.to_path_buf(),
            report,
        })
    }

    /// The baseline device that matches `device`: the same UUID, else the
    /// same name, else the baseline's only device.
    fn device_for(&self, device: &DeviceInfo) -> Option<&crate::results::DeviceRun> {
        let devs = &self.report.devices;
        devs.iter()
            .find(|d| d.device.uuid.is_some() && d.device.uuid == device.uuid)
            .or_else(|| devs.iter().find(|d| d.device.name == device.name))
            .or(if devs.len() == 1 { devs.first() } else { None })
    }

    pub fn matches_device(&self, device: &DeviceInfo) -> bool {
        self.device_for(device).is_some()
    }

    /// The baseline's rate for `gate` on the device that matches `device`.
    pub fn reference(&self, device: &DeviceInfo, gate: &str) -> Option<Reference> {
        let d = self.device_for(device)?;
        let g = d.gates.iter().find(|g| g.id == gate)?;
        let m = g.metrics.as_ref()?;
        Some(Reference {
            rate: m.rate?,
            unit: m.unit,
            source: format!("baseline {}", self.path.display()),
        })
    }
}

/// 1-based line and column of the first occurrence of a needle.
pub(crate) use greta_vocab::place::find as locate;

/// `smoke/data/floors.toml`: healthy rates per device class.
pub const BUILTIN_FLOORS: &str = include_str!("../data/floors.toml");

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassFile {
    #[serde(default, rename = "class")]
    pub classes: Vec<DeviceClass>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceClass {
    pub id: String,
    /// Where the numbers come from (date, GPU, driver, method). Required:
    /// a floor nobody can trace is a guess.
    pub measured: String,
    #[serde(rename = "match")]
    pub matcher: DeviceMatch,
    /// Gate id -> healthy rate in that gate's unit.
    pub rates: BTreeMap<String, f64>,
}

/// Which devices an entry applies to; every key given must match.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceMatch {
    pub vendor_id: Option<u32>,
    /// Any of these PCI device ids.
    #[serde(default)]
    pub device_ids: Vec<u32>,
    /// Case-insensitive substring of the device name.
    pub name_contains: Option<String>,
    /// Case-insensitive: equal to the driver name.
    pub driver_name: Option<String>,
    /// Case-insensitive substring of the driver info string.
    pub driver_info_contains: Option<String>,
    /// Backend (`vulkan`, `hip`).
    pub backend: Option<String>,
}

impl DeviceMatch {
    pub fn matches(&self, d: &DeviceInfo, backend: &str) -> bool {
        let ci_contains =
            |hay: &str, needle: &str| hay.to_lowercase().contains(&needle.to_lowercase());
        self.vendor_id.is_none_or(|v| v == d.vendor_id)
            && (self.device_ids.is_empty() || self.device_ids.contains(&d.device_id))
            && self
                .name_contains
                .as_deref()
                .is_none_or(|n| ci_contains(&d.name, n))
            && self
                .driver_name
                .as_deref()
                .is_none_or(|n| d.driver_name.eq_ignore_ascii_case(n))
            && self
                .driver_info_contains
                .as_deref()
                .is_none_or(|n| ci_contains(&d.driver_info, n))
            && self
                .backend
                .as_deref()
                .is_none_or(|b| b.eq_ignore_ascii_case(backend))
    }
}

impl ClassFile {
    pub fn builtin() -> ClassFile {
        Self::parse("smoke/data/floors.toml", BUILTIN_FLOORS)
            .expect("built-in floors.toml is valid")
    }

    pub fn parse(path: &str, text: &str) -> Result<ClassFile, FloorsError> {
        let file: ClassFile = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
        for c in &file.classes {
            if let Some((gate, rate)) = c.rates.iter().find(|(_, r)| !(r.is_finite() && **r > 0.0))
            {
                let (line, column) = locate(text, &format!("\"{gate}\""));
                return Err(FloorsError::Invalid {
                    path: path.to_string(),
                    line,
                    column,
                    msg: format!(
                        "class {}: rate for {gate} must be a positive number, got {rate}",
                        c.id
                    ),
                });
            }
            if c.matcher == DeviceMatch::default() {
                let (line, column) = locate(text, &format!("\"{}\"", c.id));
                return Err(FloorsError::Invalid {
                    path: path.to_string(),
                    line,
                    column,
                    msg: format!("class {}: an empty match would apply to every device", c.id),
                });
            }
        }
        Ok(file)
    }

    /// The first class that matches the device.
    pub fn class_for(&self, d: &DeviceInfo, backend: &str) -> Option<&DeviceClass> {
        self.classes.iter().find(|c| c.matcher.matches(d, backend))
    }
}

impl DeviceClass {
    pub fn reference(&self, gate: &str, unit: RateUnit) -> Option<Reference> {
        self.rates.get(gate).map(|&rate| Reference {
            rate,
            unit,
            source: format!("floors.toml class {} ({})", self.id, self.measured),
        })
    }
}

/// A toml error as `path:line:col: message`.
pub(crate) fn toml_error(path: &str, text: &str, e: &toml::de::Error) -> FloorsError {
    let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
    FloorsError::Toml {
        path: path.to_string(),
        line,
        column,
        msg: e.message().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_report;

    fn reference(rate: f64, unit: RateUnit) -> Reference {
        Reference {
            rate,
            unit,
            source: "test".into(),
        }
    }

    /// The floors file's header states `--floor-fraction`'s default: the
    /// one the code uses (it said 0.75 while the default was 0.8).
    #[test]
    fn the_floors_header_states_the_default_fraction() {
        let stated: Vec<f64> = BUILTIN_FLOORS
            .lines()
            .take_while(|l| l.starts_with('#'))
            .flat_map(|l| l.split("(default ").skip(1))
            .filter_map(|rest| rest.split([':', ')']).next())
            .map(|n| n.trim().parse().expect("a number after `(default`"))
            .collect();
        assert_eq!(stated, [DEFAULT_FLOOR_FRACTION]);
    }

    #[test]
    fn floor_is_a_fraction_of_the_reference() {
        let r = reference(100.0, RateUnit::GBps);
        let f = apply(Some(80.0), &r, 0.75);
        assert!(f.passed);
        assert_eq!(f.limit, 75.0);
        assert!(!apply(Some(74.9), &r, 0.75).passed);
        assert!(apply(Some(74.9), &r, 0.5).passed);
        assert!(!apply(None, &r, 0.75).passed);
        assert!(!apply(Some(f64::NAN), &r, 0.75).passed);
    }

    #[test]
    fn latency_floor_is_a_ceiling() {
        let r = reference(3.0, RateUnit::UsPerDispatch);
        let f = apply(Some(3.9), &r, 0.75);
        assert_eq!(f.limit, 4.0);
        assert!(f.passed);
        assert!(!apply(Some(4.1), &r, 0.75).passed);
    }

    #[test]
    fn baseline_round_trip_and_lookup() {
        let rep = sample_report();
        let text = rep.to_json();
        let b = Baseline::parse(Path::new("b.json"), &text).unwrap();
        let dev = &rep.devices[0].device;
        let r = b.reference(dev, "copy.bw").unwrap();
        assert_eq!(r.rate, 12.5);
        assert_eq!(r.unit, RateUnit::GBps);
        assert!(r.source.contains("b.json"));
        // Failed gate without a rate, skipped gate without metrics, unknown gate.
        assert!(b.reference(dev, "softmax.256x1024").is_none());
        assert!(b.reference(dev, "gemm_f16.256").is_none());
        assert!(b.reference(dev, "nope").is_none());
        // Another device falls back to the baseline's only device.
        let mut other = dev.clone();
        other.uuid = None;
        other.name = "other".into();
        assert!(b.reference(&other, "copy.bw").is_some());
    }

    #[test]
    fn a_baseline_of_other_devices_gives_no_floor() {
        let mut rep = sample_report();
        let mut second = rep.devices[0].clone();
        second.index = 1;
        second.device.name = "second".into();
        second.device.uuid = Some(greta_vocab::DeviceUuid([0x22; 16]));
        rep.devices[0].device.name = "first".into();
        rep.devices[0].device.uuid = Some(greta_vocab::DeviceUuid([0x11; 16]));
        rep.devices.push(second);
        let b = Baseline::parse(Path::new("b.json"), &rep.to_json()).unwrap();
        let mut dev = sample_report().devices[0].device.clone();
        assert!(!b.matches_device(&dev));
        assert!(b.reference(&dev, "copy.bw").is_none());
        dev.uuid = Some(greta_vocab::DeviceUuid([0x22; 16]));
        assert!(b.matches_device(&dev));
        assert_eq!(b.device_for(&dev).unwrap().index, 1);
    }

    #[test]
    fn bad_baselines_say_where() {
        let p = Path::new("base.json");
        let e = Baseline::parse(p, "{\n  \"schema\": \"greta.smoke/v1\",\n  oops\n}").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("base.json:3:"), "{msg}");

        let e = Baseline::parse(p, r#"{"schema": "greta.doctor/v1"}"#).unwrap_err();
        assert!(e.to_string().contains("greta.doctor/v1"), "{e}");

        let e = Baseline::parse(p, "{\"schema\": \"greta.smoke/v1\"}").unwrap_err();
        assert!(e.to_string().starts_with("base.json:1:"), "{e}");

        let mut rep = sample_report();
        rep.devices[0].gates[0].metrics.as_mut().unwrap().rate = Some(-1.0);
        let text = rep.to_json();
        let e = Baseline::parse(p, &text).unwrap_err().to_string();
        assert!(e.contains("copy.bw") && e.contains("positive"), "{e}");
        let line: usize = e.split(':').nth(1).unwrap().parse().unwrap();
        assert!(text.lines().nth(line - 1).unwrap().contains("copy.bw"));

        let e = Baseline::load(Path::new("/nonexistent/base.json")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/base.json"));
    }

    /// `--baseline /dev/zero` grew to 5 GB in 2 s and a FIFO hung;
    /// the same for `--deny-list`. Both are refused at once, naming the file.
    #[test]
    fn baselines_and_deny_lists_that_are_fifos_devices_or_huge_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let (fifo, huge) = crate::test_files::fifo_and_huge(d.path(), "json", MAX_BASELINE);
        for (p, why) in [
            (fifo.as_path(), "is a FIFO"),
            (Path::new("/dev/zero"), "is a character device"),
            (huge.as_path(), "limit"),
        ] {
            let e = Baseline::load(p).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(&*p.to_string_lossy()), "{e}");
            let e = crate::deny::DenyList::load(p).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn builtin_floors_file_parses_and_guesses_nothing() {
        let f = ClassFile::builtin();
        for c in &f.classes {
            assert!(
                !c.measured.trim().is_empty(),
                "class {} lacks provenance",
                c.id
            );
        }
    }

    #[test]
    fn class_file_matching_and_errors() {
        let text = r#"
[[class]]
id = "lavapipe"
measured = "test data"
match = { driver_name = "LLVMPIPE", backend = "vulkan" }
rates = { "copy.bw" = 2.0 }
"#;
        let f = ClassFile::parse("f.toml", text).unwrap();
        let dev = sample_report().devices[0].device.clone();
        let c = f.class_for(&dev, "vulkan").unwrap();
        let r = c.reference("copy.bw", RateUnit::GBps).unwrap();
        assert_eq!(r.rate, 2.0);
        assert!(f.class_for(&dev, "hip").is_none());

        let e = ClassFile::parse("f.toml", "[[class]]\nid = 3\n").unwrap_err();
        assert!(e.to_string().starts_with("f.toml:2:"), "{e}");
        let bad = text.replace("2.0", "-2.0");
        let e = ClassFile::parse("f.toml", &bad).unwrap_err().to_string();
        assert!(e.starts_with("f.toml:6:"), "{e}");
        let empty = "[[class]]\nid = \"x\"\nmeasured = \"m\"\nmatch = {}\nrates = {}\n";
        let e = ClassFile::parse("f.toml", empty).unwrap_err().to_string();
        assert!(e.contains("every device"), "{e}");
    }
}
