//! The results contract: `schema: "greta.smoke/v1"` JSON and its CSV
//! summary. Fleet tools and `--baseline` read these files back, so fields are
//! only ever added, never renamed; every float that can be undefined is an
//! `Option` (JSON has no NaN).

use crate::check::Tolerance;
use greta_vocab::DeviceType;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "greta.smoke/v1";

/// One `greta smoke` run: every device it ran on, every gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub greta_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub finished_at: String,
    pub wall_s: f64,
    pub host: HostInfo,
    pub profile: String,
    /// What was asked for (`auto`, `vulkan`, `hip`); each device says which
    /// backend actually ran it.
    pub backend_requested: String,
    pub settings: Settings,
    pub status: RunStatus,
    pub devices: Vec<DeviceRun>,
    /// What the failures mean, with fixes (the doctor's finding ids, e.g.
    /// `framework.cpu-fallback`); the `frameworks` profile fills it.
    #[serde(default)]
    pub findings: Vec<greta_vocab::Finding>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpu: Option<String>,
}

/// The options the run used, so a result can be reproduced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// `--repeat` when given; each gate records the repeats it ran.
    pub repeat: Option<u32>,
    pub timeout_s: f64,
    pub floor_fraction: f64,
    pub baseline: Option<String>,
    /// `--gate` selections (empty: the whole profile).
    pub gates: Vec<String>,
    /// Base seed; each gate's and repeat's seed derives from it.
    pub seed: u64,
    pub include_test_gates: bool,
    /// `--peer-fraction`: with several devices, a gate's rate must reach
    /// this fraction of the node's median for it (null in older files).
    #[serde(default)]
    pub peer_fraction: Option<f64>,
    /// TEST-ONLY faults injected into this run (`--inject`); empty in a
    /// real run. A report with faults is never a healthy baseline.
    #[serde(default)]
    pub inject: Vec<String>,
}

/// A run's verdict: the vocabulary's [`greta_vocab::Verdict`] (pass, fail,
/// undecided; exit codes 0, 1, 2), the one type every command that answers
/// "may the paid run start?" speaks.
pub type RunStatus = greta_vocab::Verdict;

/// The identity of a device as the backend reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    /// Written `cpu`, `integrated`, `discrete`, `virtual` or `other`.
    #[serde(with = "greta_vocab::device_type_short")]
    pub device_type: DeviceType,
    /// Driver name as reported (e.g. `radv`, `llvmpipe`, `NVIDIA`, `hip`).
    pub driver_name: String,
    pub driver_info: String,
    pub driver_version: String,
    /// API version (Vulkan `1.3.230`, HIP runtime version).
    pub api_version: String,
    /// Device UUID, hex with dashes (vulkaninfo's form), when the backend
    /// has one. Files that wrote 32 bare hex digits still read.
    pub uuid: Option<greta_vocab::DeviceUuid>,
    /// shaderFloat16 + 16-bit storage (or the HIP equivalent).
    pub fp16: bool,
}

impl DeviceInfo {
    /// A device nothing is known of but what to call it (it could not be
    /// opened, or its run never started).
    pub fn unknown(name: String) -> DeviceInfo {
        DeviceInfo {
            name,
            vendor_id: 0,
            device_id: 0,
            device_type: DeviceType::Other,
            driver_name: String::new(),
            driver_info: String::new(),
            driver_version: String::new(),
            api_version: String::new(),
            uuid: None,
            fp16: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceRun {
    /// Index in the backend's device list (`--device N`).
    pub index: usize,
    pub backend: String,
    pub device: DeviceInfo,
    pub status: RunStatus,
    /// Set when a submission timed out: the remaining gates were skipped.
    pub lost: Option<String>,
    /// Seconds spent opening the device (instance, pipelines).
    pub open_s: f64,
    pub gates: Vec<GateResult>,
    /// Validation-layer messages (Vulkan with `GRETA_VK_VALIDATION=1`); each
    /// also fails the gate during which it was raised.
    #[serde(default)]
    pub validation_messages: Vec<String>,
    /// What the runner or backend wants a reader to know (a duplicate GPU
    /// skipped, no baseline device matched, ...).
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Pass,
    Fail,
    Skip,
}

impl GateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Pass => "pass",
            GateStatus::Fail => "fail",
            GateStatus::Skip => "skip",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub id: String,
    /// Kernel name (`gemm_f32`, `softmax`, ...).
    pub op: String,
    /// Shape in words, e.g. `m=512 n=512 k=512`.
    pub shape: String,
    pub status: GateStatus,
    /// Why it failed or was skipped; `None` on pass.
    pub reason: Option<String>,
    pub tolerance: Tolerance,
    /// Seed of the first repeat; repeat `r` uses `seed + r`.
    pub seed: u64,
    /// Absent when the gate was skipped before running.
    pub metrics: Option<Metrics>,
    pub floor: Option<Floor>,
    pub wall_s: f64,
    /// The kernel variant the backend ran (e.g. `gemm_f16_coopmat`).
    #[serde(default)]
    pub kernel: Option<String>,
    /// How the rate compared with the same gate on the node's other
    /// devices (`--device all` with two or more); null when not compared.
    #[serde(default)]
    pub peer: Option<Peer>,
    /// The published peak this gate's rate is a fraction of (the device's
    /// row in `smoke/data/specs.toml`); absent for an unknown device and
    /// for us/dispatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<SpecRef>,
    /// `rate / spec.figure`; absent when either is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_fraction: Option<f64>,
    /// The in-run ceiling and the stress figures (`--profile perf`, the
    /// stress gate); every field absent when not measured.
    #[serde(flatten)]
    pub in_run: InRun,
}

/// What a run measured beside the gate's own kernel (issue 22): the
/// vendor's rate for the same work on the same device and the gate's
/// ratio to it; for the stress gate, its sustained figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InRun {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<CeilingRef>,
    /// `metrics.rate / ceiling.rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Why no ceiling was measured (no vendor library: every place looked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_unavailable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stress: Option<StressSummary>,
}

/// The vendor's rate for a gate's work, measured in the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingRef {
    pub rate: f64,
    pub unit: RateUnit,
    /// `cublasGemmEx`, `cublasSgemm`, `rocblas_gemm_ex`, `memcpy d2d (...)`.
    pub source: String,
    /// The library file (the driver's for a copy).
    pub library: String,
    pub version: String,
}

/// A stress gate's sustained figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StressSummary {
    /// What ran the GEMMs: `cublasGemmEx`, `rocblas_gemm_ex`, `greta gemm_f16`.
    pub engine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why greta's own kernel ran instead of the vendor's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Device seconds of GEMMs over all intervals.
    pub seconds: f64,
    pub intervals: u32,
    /// Intervals whose sampled tiles all matched.
    pub intervals_clean: u32,
    pub gemms: u64,
    /// Output tiles checked against the CPU product (all intervals).
    pub tiles_checked: u32,
    /// All work over all device time.
    pub tflops_sustained: Option<f64>,
    /// Spread of the per-interval rates.
    pub tflops_min: Option<f64>,
    pub tflops_median: Option<f64>,
    pub tflops_max: Option<f64>,
}

/// A published peak figure a gate's rate is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecRef {
    pub figure: f64,
    pub unit: RateUnit,
    /// Which figure of the row: `mem_bw_gbs`, `fp32_tflops`, `fp16_dense_tflops`.
    pub field: String,
    pub model: String,
    /// The row's first source (the vendor's).
    pub source: String,
}

/// Unit of a gate's rate, an op's fact (`kernels/src/ops/NAME.rs`).
pub use greta_kernels::RateUnit;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Rate from the median device time; `None` when no repeat completed.
    pub rate: Option<f64>,
    pub unit: RateUnit,
    /// Worst relative error (by norm) over the repeats.
    pub rel_err: Option<f64>,
    /// Worst absolute error over the repeats.
    pub max_abs_err: Option<f64>,
    pub repeats_clean: u32,
    pub repeats_total: u32,
    /// Device time of one dispatch, µs: median and min over all timed dispatches.
    pub time_median_us: Option<f64>,
    pub time_min_us: Option<f64>,
    /// Host wall time of one submission, µs, median.
    pub wall_median_us: Option<f64>,
    /// Bytes one dispatch must move, and flops it must do (what the rate is of).
    pub bytes: u64,
    pub flops: u64,
    /// `device_timestamps`, or `wall_clock` where the device has no usable
    /// timestamps (times then include submission overhead).
    #[serde(default)]
    pub timing: Option<String>,
    /// Time of the first call, µs (framework gates: kernel loading, JIT
    /// compilation and library start-up included); absent for kernel gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_call_us: Option<f64>,
}

/// A performance floor that applied to a gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// The limit the rate was held to: a minimum for GB/s and TFLOP/s, a
    /// maximum for µs/dispatch.
    pub limit: f64,
    pub unit: RateUnit,
    /// The healthy rate it derives from (`limit = fraction × reference`, or
    /// `reference / fraction` for µs/dispatch).
    pub reference: f64,
    pub fraction: f64,
    /// Where the reference came from: `baseline FILE`, `floors.toml class ID`
    /// or `spec MODEL FIELD (CLASS class; URL)`.
    pub source: String,
    pub passed: bool,
}

/// A gate's rate held against the node's median for the same gate: a GPU
/// degraded by heat, clocks, PCIe or memory faults shows up against its
/// siblings even when it clears a fixed floor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peer {
    /// Median rate of the gate over the devices that measured it.
    pub median: f64,
    pub unit: RateUnit,
    /// How many devices the median is over (this one included).
    pub devices: usize,
    pub fraction: f64,
    /// `fraction × median`, a minimum; for µs/dispatch `median / fraction`, a maximum.
    pub limit: f64,
    /// How this device compares with the median, as a speed: rate / median
    /// (median / rate for µs/dispatch); 1.0 is the median, 0.5 half as fast.
    pub ratio: f64,
    pub passed: bool,
}

impl Report {
    /// Derive the run status from the devices' gates.
    pub fn summarize(devices: &[DeviceRun]) -> RunStatus {
        let gates = devices.iter().flat_map(|d| d.gates.iter());
        let mut any_pass = false;
        for g in gates {
            match g.status {
                GateStatus::Fail => return RunStatus::Fail,
                GateStatus::Pass => any_pass = true,
                GateStatus::Skip => {}
            }
        }
        if devices
            .iter()
            .any(|d| d.lost.is_some() || !d.validation_messages.is_empty())
        {
            return RunStatus::Fail;
        }
        if any_pass {
            RunStatus::Pass
        } else {
            RunStatus::Undecided
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }

    /// The CSV summary: one row per device and gate. Columns are part of the
    /// contract (docs/smoke.md).
    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(CSV_COLUMNS).expect("write to memory");
        let num = |x: Option<f64>| x.map(|v| format!("{v}")).unwrap_or_default();
        for d in &self.devices {
            for g in &d.gates {
                let m = g.metrics.as_ref();
                w.write_record([
                    d.index.to_string(),
                    d.device.name.clone(),
                    d.backend.clone(),
                    self.profile.clone(),
                    g.id.clone(),
                    g.status.as_str().to_string(),
                    num(m.and_then(|m| m.rate)),
                    m.map(|m| m.unit.as_str().to_string()).unwrap_or_default(),
                    num(g.floor.as_ref().map(|f| f.limit)),
                    num(m.and_then(|m| m.rel_err)),
                    num(m.and_then(|m| m.max_abs_err)),
                    m.map(|m| m.repeats_clean.to_string()).unwrap_or_default(),
                    m.map(|m| m.repeats_total.to_string()).unwrap_or_default(),
                    num(m.and_then(|m| m.time_median_us)),
                    num(m.and_then(|m| m.time_min_us)),
                    g.reason.clone().unwrap_or_default(),
                ])
                .expect("write to memory");
            }
        }
        String::from_utf8(w.into_inner().expect("flush to memory")).expect("csv is utf-8")
    }
}

pub const CSV_COLUMNS: [&str; 16] = [
    "device",
    "device_name",
    "backend",
    "profile",
    "gate",
    "status",
    "rate",
    "unit",
    "floor",
    "rel_err",
    "max_abs_err",
    "repeats_clean",
    "repeats_total",
    "time_median_us",
    "time_min_us",
    "reason",
];

/// `$XDG_DATA_HOME/greta/smoke`, else `~/.local/share/greta/smoke`
/// (`greta_vocab::dirs`).
pub fn default_out_dir() -> Option<PathBuf> {
    use greta_vocab::dirs;
    dirs::greta_dir(dirs::Base::Data, "smoke", &dirs::process_env)
}

/// Where [`write_report`] put the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub json: PathBuf,
    pub csv: PathBuf,
}

/// Write `smoke-<UTC time>-<profile>.json` and `.csv` into `dir`, each
/// through a temporary file in the same directory renamed into place, so a
/// reader never sees half a file. An existing file is never replaced: a
/// second run within the same second gets a `-N` suffix.
pub fn write_report(report: &Report, dir: &Path) -> anyhow::Result<Written> {
    use anyhow::Context;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating results directory {}", dir.display()))?;
    let stamp = file_stamp(&report.started_at);
    let json = report.to_json();
    let csv = report.to_csv();
    for n in 0..1000 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let base = format!("smoke-{stamp}-{}{suffix}", report.profile);
        let json_path = dir.join(format!("{base}.json"));
        let csv_path = dir.join(format!("{base}.csv"));
        if json_path.exists() || csv_path.exists() {
            continue;
        }
        match write_new(dir, &json_path, json.as_bytes()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("writing {}", json_path.display())),
        }
        write_new(dir, &csv_path, csv.as_bytes())
            .with_context(|| format!("writing {}", csv_path.display()))?;
        return Ok(Written {
            json: json_path,
            csv: csv_path,
        });
    }
    anyhow::bail!("no free result file name in {}", dir.display())
}

fn write_new(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".smoke-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist_noclobber(path).map_err(|e| e.error)?;
    Ok(())
}

/// `2026-11-21T22:49:37.123Z` -> `20261121T224937Z`.
fn file_stamp(rfc3339: &str) -> String {
    let digits: String = rfc3339
        .chars()
        .take_while(|c| *c != '.' && *c != 'Z' && *c != '+')
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    format!("{digits}Z")
}

/// Now, RFC 3339 UTC.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// What we know about the host, from sysinfo (no commands run).
pub fn host_info() -> HostInfo {
    let mut sys = sysinfo::System::new();
    sys.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
    let cpu = sys
        .cpus()
        .first()
        .map(|c| c.brand().trim().to_string())
        .filter(|s| !s.is_empty());
    HostInfo {
        hostname: sysinfo::System::host_name(),
        os: sysinfo::System::long_os_version(),
        kernel: sysinfo::System::kernel_version(),
        cpu,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn sample_report() -> Report {
        let device = DeviceInfo {
            name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            vendor_id: 0x10005,
            device_id: 0,
            device_type: DeviceType::Cpu,
            driver_name: "llvmpipe".into(),
            driver_info: "Mesa 22.3.6 (LLVM 15.0.6)".into(),
            driver_version: "0.0.1".into(),
            api_version: "1.3.230".into(),
            uuid: Some("6d657361-3232-2e33-2e36-000000000000".parse().unwrap()),
            fp16: true,
        };
        let metrics = Metrics {
            rate: Some(12.5),
            unit: RateUnit::GBps,
            rel_err: Some(0.0),
            max_abs_err: Some(0.0),
            repeats_clean: 10,
            repeats_total: 10,
            time_median_us: Some(80.0),
            time_min_us: Some(75.5),
            wall_median_us: Some(300.0),
            bytes: 1 << 20,
            flops: 0,
            timing: Some("device_timestamps".into()),
            first_call_us: None,
        };
        Report {
            schema: SCHEMA.into(),
            greta_version: "0.1.0".into(),
            started_at: "2026-11-21T22:49:37.123456Z".into(),
            finished_at: "2026-11-21T22:49:40Z".into(),
            wall_s: 2.9,
            host: HostInfo {
                hostname: Some("ci".into()),
                os: Some("Linux 12 Debian GNU/Linux".into()),
                kernel: None,
                cpu: None,
            },
            profile: "default".into(),
            backend_requested: "auto".into(),
            settings: Settings {
                repeat: None,
                timeout_s: 10.0,
                floor_fraction: 0.75,
                baseline: None,
                gates: vec![],
                seed: 42,
                include_test_gates: false,
                peer_fraction: None,
                inject: vec![],
            },
            status: RunStatus::Fail,
            devices: vec![DeviceRun {
                index: 0,
                backend: "vulkan".into(),
                device,
                status: RunStatus::Fail,
                lost: None,
                open_s: 0.2,
                validation_messages: vec![],
                notes: vec![],
                gates: vec![
                    GateResult {
                        id: "copy.bw".into(),
                        op: "copy".into(),
                        shape: "n=262144".into(),
                        status: GateStatus::Pass,
                        reason: None,
                        tolerance: Tolerance::Exact,
                        seed: 7,
                        metrics: Some(metrics.clone()),
                        floor: Some(Floor {
                            limit: 7.5,
                            unit: RateUnit::GBps,
                            reference: 10.0,
                            fraction: 0.75,
                            source: "baseline b.json".into(),
                            passed: true,
                        }),
                        wall_s: 0.1,
                        kernel: Some("copy".into()),
                        peer: None,
                        spec: None,
                        spec_fraction: None,
                        in_run: InRun::default(),
                    },
                    GateResult {
                        id: "softmax.256x1024".into(),
                        op: "softmax".into(),
                        shape: "rows=256 cols=1024".into(),
                        status: GateStatus::Fail,
                        reason: Some("rel_err 1e-3 > 1e-5, \"quoted\"".into()),
                        tolerance: Tolerance::FP32,
                        seed: 8,
                        metrics: Some(Metrics {
                            rel_err: None,
                            rate: None,
                            ..metrics
                        }),
                        floor: None,
                        wall_s: 0.2,
                        kernel: None,
                        peer: None,
                        spec: None,
                        spec_fraction: None,
                        in_run: InRun::default(),
                    },
                    GateResult {
                        id: "gemm_f16.256".into(),
                        op: "gemm_f16".into(),
                        shape: "m=256 n=256 k=256".into(),
                        status: GateStatus::Skip,
                        reason: Some("an f32 gate failed".into()),
                        tolerance: Tolerance::FP16_ACC32,
                        seed: 9,
                        metrics: None,
                        floor: None,
                        wall_s: 0.0,
                        kernel: None,
                        peer: None,
                        spec: None,
                        spec_fraction: None,
                        in_run: InRun::default(),
                    },
                ],
            }],
            findings: vec![],
        }
    }

    #[test]
    fn json_round_trip_is_lossless() {
        let r = sample_report();
        let text = r.to_json();
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        // The field names other tools match on.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], "greta.smoke/v1");
        let g = &v["devices"][0]["gates"][0];
        assert_eq!(g["status"], "pass");
        assert_eq!(g["metrics"]["unit"], "GB/s");
        assert_eq!(g["tolerance"]["kind"], "exact");
        assert_eq!(v["devices"][0]["gates"][1]["tolerance"]["value"], 1e-5);
        assert!(v["devices"][0]["gates"][1]["metrics"]["rel_err"].is_null());
    }

    #[test]
    fn ceiling_ratio_and_stress_fields_are_additive() {
        let r = sample_report();
        let before = r.to_json();
        // Not measured: not one byte of the report changes.
        assert!(
            !before.contains("ceiling") && !before.contains("ratio") && !before.contains("stress")
        );
        let mut r2 = r.clone();
        let g = &mut r2.devices[0].gates[0];
        g.in_run.ceiling = Some(CeilingRef {
            rate: 25.0,
            unit: RateUnit::GBps,
            source: "memcpy d2d (cuMemcpyDtoDAsync)".into(),
            library: "/usr/lib/x86_64-linux-gnu/libcuda.so.1".into(),
            version: "CUDA 12.8".into(),
        });
        g.in_run.ratio = Some(0.5);
        let g = &mut r2.devices[0].gates[2];
        g.in_run.ceiling_unavailable =
            Some("no cuBLAS (libcublas) found for an in-run ceiling; looked in: a; b".into());
        g.in_run.stress = Some(StressSummary {
            engine: "greta gemm_f16".into(),
            library: None,
            version: None,
            note: Some("no vendor BLAS".into()),
            seconds: 30.0,
            intervals: 30,
            intervals_clean: 30,
            gemms: 900,
            tiles_checked: 240,
            tflops_sustained: Some(600.0),
            tflops_min: Some(590.0),
            tflops_median: Some(601.0),
            tflops_max: Some(610.0),
        });
        let text = r2.to_json();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let g0 = &v["devices"][0]["gates"][0];
        assert_eq!(g0["ceiling"]["rate"], 25.0);
        assert_eq!(g0["ceiling"]["unit"], "GB/s");
        assert_eq!(g0["ceiling"]["source"], "memcpy d2d (cuMemcpyDtoDAsync)");
        assert_eq!(
            g0["ceiling"]["library"],
            "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
        );
        assert_eq!(g0["ceiling"]["version"], "CUDA 12.8");
        assert_eq!(g0["ratio"], 0.5);
        let g1 = &v["devices"][0]["gates"][1];
        assert!(g1.get("ceiling").is_none() && g1.get("ratio").is_none());
        let g2 = &v["devices"][0]["gates"][2];
        assert!(g2["ceiling_unavailable"]
            .as_str()
            .unwrap()
            .contains("looked in: a; b"));
        assert_eq!(g2["stress"]["tflops_sustained"], 600.0);
        assert_eq!(g2["stress"]["intervals"], 30);
        assert!(g2["stress"].get("library").is_none());
        // The gate's other fields are where and what they were: removing
        // the new keys gives the old gate back byte for byte.
        let mut stripped = v.clone();
        for g in stripped["devices"][0]["gates"].as_array_mut().unwrap() {
            let o = g.as_object_mut().unwrap();
            for k in ["ceiling", "ratio", "ceiling_unavailable", "stress"] {
                o.remove(k);
            }
        }
        let old: serde_json::Value = serde_json::from_str(&before).unwrap();
        assert_eq!(stripped, old);
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r2);
    }

    #[test]
    fn csv_has_header_and_one_row_per_gate_with_quoting() {
        let r = sample_report();
        let text = r.to_csv();
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            rd.headers().unwrap().iter().collect::<Vec<_>>(),
            CSV_COLUMNS
        );
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(&rows[0][4], "copy.bw");
        assert_eq!(&rows[0][6], "12.5");
        assert_eq!(&rows[0][8], "7.5");
        assert_eq!(&rows[1][15], "rel_err 1e-3 > 1e-5, \"quoted\"");
        assert_eq!(&rows[2][5], "skip");
        assert_eq!(&rows[2][6], "");
        assert_eq!(&rows[0][1], "llvmpipe (LLVM 15.0.6, 256 bits)");
    }

    #[test]
    fn write_is_dated_and_never_clobbers() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample_report();
        let a = write_report(&r, dir.path()).unwrap();
        let b = write_report(&r, dir.path()).unwrap();
        assert_eq!(
            a.json.file_name().unwrap(),
            "smoke-20261121T224937Z-default.json"
        );
        assert_eq!(
            b.json.file_name().unwrap(),
            "smoke-20261121T224937Z-default-1.json"
        );
        let back: Report =
            serde_json::from_str(&std::fs::read_to_string(&a.json).unwrap()).unwrap();
        assert_eq!(back, r);
        assert!(std::fs::read_to_string(&b.csv)
            .unwrap()
            .starts_with("device,"));
        // No temporary files left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names.iter().all(|n| !n.ends_with(".tmp")));
    }

    #[test]
    fn write_into_unwritable_place_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        let err = write_report(&sample_report(), &file.join("sub")).unwrap_err();
        assert!(format!("{err:#}").contains("not-a-dir"), "{err:#}");
    }

    #[test]
    fn status_summary() {
        let mut r = sample_report();
        assert_eq!(Report::summarize(&r.devices), RunStatus::Fail);
        r.devices[0].gates.remove(1);
        assert_eq!(Report::summarize(&r.devices), RunStatus::Pass);
        // A validation message anywhere fails the run, gates passing or not.
        r.devices[0].validation_messages.push("VUID-x".into());
        assert_eq!(Report::summarize(&r.devices), RunStatus::Fail);
        r.devices[0].validation_messages.clear();
        r.devices[0].gates.remove(0);
        assert_eq!(Report::summarize(&r.devices), RunStatus::Undecided);
    }

    #[test]
    fn file_stamp_from_rfc3339() {
        assert_eq!(file_stamp("2026-11-21T22:49:37Z"), "20261121T224937Z");
        assert_eq!(file_stamp("2026-11-21T22:49:37.5Z"), "20261121T224937Z");
    }
}
