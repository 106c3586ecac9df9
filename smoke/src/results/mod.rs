//! The results contract: `schema: "greta.smoke/v1"` JSON and its CSV
//! summary. Fleet tools and `--baseline` read these files back, so fields are
//! only ever added, never renamed; every float that can be undefined is an
//! `Option` (JSON has no NaN).

use crate::check::Tolerance;
use greta_vocab::DeviceType;
use serde::{Deserialize, Serialize};
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
    /// Checks of the whole node (every GPU counted by the backend); a
    /// failed one fails the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::telemetry::NodeCheck>,
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
    /// The PCI address, `0000:c1:00.0` (lower-case hex), where the backend
    /// gives one (VK_EXT_pci_bus_info, hipDeviceGetPCIBusId,
    /// cuDeviceGetPCIBusId): what ties a result to a slot of the machine,
    /// and to its sysfs card and NVML device. Absent in older files and
    /// where the backend has none (lavapipe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
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
            pci_bus_id: None,
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
    /// Checks of the device's health around its gates (error counters
    /// before and after, the PCIe link under load); a failed one fails the
    /// run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::telemetry::NodeCheck>,
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

impl GateResult {
    /// A gate's outcome with nothing measured yet: no metrics, floor, peer,
    /// spec, kernel or in-run figures, no wall time. A skipped gate stays
    /// so; a run fills in what it measured.
    pub(crate) fn new(
        id: String,
        op: String,
        shape: String,
        status: GateStatus,
        reason: Option<String>,
        tolerance: Tolerance,
        seed: u64,
    ) -> GateResult {
        GateResult {
            id,
            op,
            shape,
            status,
            reason,
            tolerance,
            seed,
            metrics: None,
            floor: None,
            wall_s: 0.0,
            kernel: None,
            peer: None,
            spec: None,
            spec_fraction: None,
            in_run: InRun::default(),
        }
    }
}

/// What a run measured beside the gate's own kernel: the
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
    /// A composite gate's (the transformer block's) step times and model
    /// estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockSummary>,
    /// The host-copy gate's figures: each direction's rate and the link's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_copy: Option<HostCopySummary>,
    /// What the GPU said about itself while the gate ran (stress gates):
    /// power, temperature, clocks and the share of the time each limit
    /// held them, one summary per watched device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub telemetry: Vec<crate::telemetry::Summary>,
}

/// Where a transformer-block gate's time goes, and what it means for a
/// whole model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockSummary {
    /// Each step of the layer's graph, in order: its kernel and median
    /// device time when timed step by step (their sum exceeds the replay's
    /// time by the launch gaps the graph removes). Empty when the device
    /// has no timestamps.
    pub steps: Vec<StepTime>,
    /// Tokens one replay processes.
    pub tokens: u32,
    /// Layers of the model the estimate assumes (Llama-2-7B: 32).
    pub layers: u32,
    /// An estimate, not a measurement: tokens/s of `layers` such layers
    /// back to back at the gate's median replay time (no embedding, output
    /// head, sampling or host work).
    pub est_tokens_per_s: Option<f64>,
}

/// One step of a graph and its median device time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    pub kernel: String,
    pub us: f64,
    /// For a fused step (one kernel doing what several steps of the
    /// unfused graph do), those steps by name (`rmsnorm_f16`, `gemv_f16
    /// (qkv)`, ...): its time is theirs together. Empty for a plain step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
}

impl BlockSummary {
    /// Llama-2-7B's depth, the model the gates' shapes come from.
    pub const LAYERS: u32 = 32;

    /// From a run's kernel list (`graph:a+b+...`), step times in ns, the
    /// ops of the graph that ran (each fused step's parts come from its
    /// op: [`greta_kernels::Op::parts`]), the tokens per replay and the
    /// median replay time.
    pub fn new(
        kernel: &str,
        step_ns: &[u64],
        ops: &[greta_kernels::Op],
        tokens: usize,
        median_ns: Option<f64>,
    ) -> BlockSummary {
        let names = kernel.strip_prefix("graph:").unwrap_or(kernel).split('+');
        BlockSummary {
            steps: names
                .zip(step_ns)
                .enumerate()
                .map(|(i, (k, &ns))| StepTime {
                    kernel: k.to_string(),
                    us: ns as f64 / 1e3,
                    parts: ops
                        .get(i)
                        .map(|o| o.parts().iter().map(|p| p.to_string()).collect())
                        .unwrap_or_default(),
                })
                .collect(),
            tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
            layers: Self::LAYERS,
            est_tokens_per_s: median_ns
                .filter(|ns| ns.is_finite() && *ns > 0.0)
                .map(|ns| tokens as f64 / (ns * 1e-9 * f64::from(Self::LAYERS))),
        }
    }
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

/// A host-copy gate's figures: pinned host memory to the device and back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCopySummary {
    /// Bytes of each copy, each way.
    pub bytes: u64,
    pub rounds: u32,
    /// Rounds whose bytes came back as they were sent.
    pub rounds_clean: u32,
    /// Median rate of the rounds, host to device and device to host, GB/s.
    pub up_gbps: Option<f64>,
    pub down_gbps: Option<f64>,
    /// How the host memory was pinned and the copies made.
    pub how: String,
    /// The link the floor was taken from (the most the card can train to)
    /// and its rate each way ([`crate::telemetry::link_gbps`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::telemetry::LinkState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_gbps: Option<f64>,
    /// Why no link floor applied (a CPU device; no link known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_floor: Option<String>,
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
        if devices.iter().any(|d| {
            d.lost.is_some()
                || !d.validation_messages.is_empty()
                || d.checks.iter().any(|c| !c.pass)
        }) {
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

/// Write `smoke-<UTC time>-<profile>.json` and `.csv` into `dir` (created
/// when missing), each through `greta_fsread::output` (a temporary file in
/// the same directory renamed into place, so a reader never sees half a
/// file; a symbolic link planted on the way by another user refused). An
/// existing file is never replaced: a second run within the same second
/// gets a `-N` suffix.
pub fn write_report(report: &Report, dir: &Path) -> anyhow::Result<Written> {
    use anyhow::Context;
    use greta_fsread::output::{OutputDir, Purpose};
    let out = OutputDir::open(dir, true)
        .with_context(|| format!("results directory {}", dir.display()))?;
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
        let (json_name, csv_name) = (format!("{base}.json"), format!("{base}.csv"));
        if out.path().join(&json_name).exists() || out.path().join(&csv_name).exists() {
            continue;
        }
        match out.write_new(&json_name, json.as_bytes(), Purpose::Result) {
            Ok(()) => {}
            Err(e) if e.is_already_exists() => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("writing {}", dir.join(&json_name).display()))
            }
        }
        out.write_new(&csv_name, csv.as_bytes(), Purpose::Result)
            .with_context(|| format!("writing {}", dir.join(&csv_name).display()))?;
        return Ok(Written {
            json: dir.join(json_name),
            csv: dir.join(csv_name),
        });
    }
    anyhow::bail!("no free result file name in {}", dir.display())
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
pub(crate) mod tests;
