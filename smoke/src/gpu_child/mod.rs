//! The device child: one typed request in, one typed reply out. `greta
//! smoke` sends its HIP and CUDA runs here (Vulkan runs in its own
//! process); `greta install`'s proof step sends any backend, Vulkan too.
//!
//! Why a child: a hung GPU can block a driver call forever, and a run-time
//! compiler can abort its process (ROCm 5.2's hiprtc on gfx942). So device
//! work on HIP and its CUDA twin runs in a child of the same executable
//! (`greta __gpu serve`, registered with
//! [`greta_vocab::child::set_helper`]): the parent ([`ask`]) bounds
//! its time and kills its process group; the child ([`serve`]) enforces
//! each submission's limit itself, and after a hang its caller leaves with
//! `_exit` so driver teardown cannot block it.
//!
//! What crosses the boundary is this module's types, nothing else: a
//! [`Request`] as JSON on the child's stdin, a [`Reply`] as one JSON line on
//! its stdout. A reply is printed exactly as its own schema always was
//! (`greta.smoke/v1`, `greta.gpu-devices/v1`, `greta.gpu-child/v1`), so
//! captures and readers of those outputs see no change.

mod ask;
mod serve;

pub use ask::{
    ask, ask_with_env, run_limit, run_smoke, run_smoke_with_env, run_tune, runtime, tune_limit,
    AskError, Asked,
};
pub use serve::{serve, Served};

use crate::gates::Profile;
use crate::results::{Report, SCHEMA};
use crate::session::{BackendChoice, DeviceChoice, Options, SmokeError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Schema of the error object a child prints instead of a report.
pub const ERROR_SCHEMA: &str = "greta.gpu-child/v1";
/// Schema of a device listing.
pub const DEVICES_SCHEMA: &str = "greta.gpu-devices/v1";

/// What the parent asks of the child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Run the smoke gates; the reply is a report or an error.
    Smoke(SmokeRequest),
    /// List the backend's devices; the reply is a [`DevicesAnswer`].
    Devices(DevicesRequest),
    /// `greta smoke --tune` on a HIP/CUDA device; the reply is a
    /// `greta.tune/v1` report or an error.
    Tune(TuneRequest),
    /// Which runtime library (and compiler) the backend would load; the
    /// reply is a [`RuntimeAnswer`]. Opening one runs its initialisers, so
    /// the parent asks here rather than open it itself.
    Runtime(RuntimeRequest),
}

/// `runtime`: which backend, and greta envs to look in first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeRequest {
    pub backend: GpuBackend,
    /// Env roots searched before the usual places (a staged env, whose
    /// ROCm wheels carry libamdhip64).
    #[serde(default)]
    pub env_roots: Vec<PathBuf>,
}

/// Schema of a runtime answer.
pub const RUNTIME_SCHEMA: &str = "greta.gpu-runtime/v1";

/// The runtime library a backend loads, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeAnswer {
    pub schema: String,
    pub backend: String,
    /// `None` when no library could be opened (`error` says why).
    pub runtime: Option<greta_runtime::RuntimeLibrary>,
    pub error: Option<String>,
}

/// What a tune asks: the serialisable core of [`crate::tune::TuneOptions`],
/// all of it crossing to the child for HIP and CUDA (the child writes the
/// tuning cache itself: it is the device's file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneRequest {
    pub profile: Profile,
    /// One device (`auto`, an index, a name fragment).
    #[serde(with = "device_text")]
    pub device: DeviceChoice,
    #[serde(with = "backend_text")]
    pub backend: BackendChoice,
    pub gates: Vec<String>,
    /// Limit for each submission, in seconds.
    pub timeout_s: f64,
    pub seed: u64,
    pub cache_dir: Option<PathBuf>,
    pub dry_run: bool,
}

impl TuneRequest {
    /// `profile` with every default, the only place they are set: the
    /// machine's device and backend, the profile's gates and submission
    /// limit, a seed from the clock, the default cache, written.
    pub fn new(profile: Profile) -> TuneRequest {
        TuneRequest {
            profile,
            device: DeviceChoice::default(),
            backend: BackendChoice::Auto,
            gates: Vec::new(),
            timeout_s: profile.default_timeout_s(),
            seed: crate::session::clock_seed(),
            cache_dir: None,
            dry_run: false,
        }
    }

    /// The options a tune runs with (here or in the child), checked once: a
    /// timeout that is no duration or more than one device is a usage
    /// error, not a panic.
    pub fn options(&self) -> Result<crate::tune::TuneOptions, SmokeError> {
        let timeout = timeout_of(self.timeout_s)?;
        let device = match &self.device {
            DeviceChoice::One(d) => d.clone(),
            DeviceChoice::All => {
                return Err(SmokeError::Usage(
                    "tune one device at a time (--device N)".into(),
                ))
            }
        };
        Ok(crate::tune::TuneOptions {
            request: self.clone(),
            device,
            timeout,
            validation: None,
        })
    }
}

/// What a smoke run asks: the serialisable core of [`Options`], and all of
/// it that crosses to the child. What stays with the parent (where results
/// go, the progress bar) is not here: the child writes no files and draws
/// nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmokeRequest {
    pub profile: Profile,
    #[serde(with = "device_text")]
    pub device: DeviceChoice,
    /// Any backend; `auto` is decided by the `greta` binary's child before
    /// it serves the request.
    #[serde(with = "backend_text")]
    pub backend: BackendChoice,
    pub gates: Vec<String>,
    pub repeat: Option<u32>,
    /// Limit for each submission, in seconds.
    pub timeout_s: f64,
    pub floor_fraction: f64,
    pub peer_fraction: f64,
    pub baseline: Option<PathBuf>,
    pub deny_list: Option<PathBuf>,
    pub seed: Option<u64>,
    pub include_test_gates: bool,
    /// TEST-ONLY fault specs, as the parent resolved them.
    pub inject: Vec<String>,
}

impl SmokeRequest {
    /// `profile` with every default, the only place they are set: the
    /// machine's device and backend, the profile's gates, repeats and
    /// submission limit ([`Profile::default_timeout_s`]), the default floor
    /// and peer fractions, a seed from the clock, no extra files.
    pub fn new(profile: Profile) -> SmokeRequest {
        SmokeRequest {
            profile,
            device: DeviceChoice::default(),
            backend: BackendChoice::Auto,
            gates: Vec::new(),
            repeat: None,
            timeout_s: profile.default_timeout_s(),
            floor_fraction: crate::DEFAULT_FLOOR_FRACTION,
            peer_fraction: crate::DEFAULT_PEER_FRACTION,
            baseline: None,
            deny_list: None,
            seed: None,
            include_test_gates: false,
            inject: Vec::new(),
        }
    }

    /// The limit for each submission; one that is no duration (negative,
    /// NaN, too large) is a usage error, not a panic.
    pub fn timeout(&self) -> Result<std::time::Duration, SmokeError> {
        timeout_of(self.timeout_s)
    }

    /// The options the child runs with: no files, no progress bar.
    pub fn options(&self) -> Result<Options, SmokeError> {
        self.timeout()?;
        Ok(Options {
            request: self.clone(),
            out_dir: None,
            write_results: false,
            progress: false,
        })
    }
}

/// A request's `timeout_s` as a duration; one that is no duration
/// (negative, NaN, too large) is a usage error, not a panic.
fn timeout_of(secs: f64) -> Result<std::time::Duration, SmokeError> {
    std::time::Duration::try_from_secs_f64(secs).map_err(|_| {
        SmokeError::Usage(format!("--timeout must be a number of seconds, got {secs}"))
    })
}

/// `devices`: which backend to list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicesRequest {
    pub backend: GpuBackend,
}

/// The backends the child serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuBackend {
    Hip,
    Cuda,
}

impl GpuBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            GpuBackend::Hip => "hip",
            GpuBackend::Cuda => "cuda",
        }
    }

    pub fn kind(self) -> greta_runtime::BackendKind {
        match self {
            GpuBackend::Hip => greta_runtime::BackendKind::Hip,
            GpuBackend::Cuda => greta_runtime::BackendKind::Cuda,
        }
    }
}

impl std::str::FromStr for GpuBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hip" => Ok(GpuBackend::Hip),
            "cuda" => Ok(GpuBackend::Cuda),
            other => Err(format!("unknown backend {other:?}")),
        }
    }
}

/// What the child answers: exactly one of these, printed as its own
/// schema's JSON (no wrapper), and read back by that schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `greta.smoke/v1`: the gates ran (whatever their verdict).
    Report(Box<Report>),
    /// `greta.gpu-devices/v1`.
    Devices(DevicesAnswer),
    /// `greta.tune/v1`: the sweep ran (whatever each candidate did).
    Tune(Box<crate::tune::TuneReport>),
    /// `greta.gpu-runtime/v1`.
    Runtime(Box<RuntimeAnswer>),
    /// `greta.gpu-child/v1`: nothing was decided, and why.
    Error(ChildError),
}

impl Serialize for Reply {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reply::Report(r) => r.serialize(s),
            Reply::Devices(d) => d.serialize(s),
            Reply::Tune(t) => t.serialize(s),
            Reply::Runtime(r) => r.serialize(s),
            Reply::Error(e) => e.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Reply::from_value(v).map_err(serde::de::Error::custom)
    }
}

/// A request larger than this is no request (a real one is a few hundred
/// bytes): refused, not read on.
const REQUEST_CAP: u64 = 1 << 20;

impl Request {
    /// The request on `input` (the child's stdin), read to its end, at most
    /// [`REQUEST_CAP`] bytes.
    pub fn read(input: impl std::io::Read) -> Result<Request, String> {
        use std::io::Read;
        let mut text = Vec::new();
        input
            .take(REQUEST_CAP + 1)
            .read_to_end(&mut text)
            .map_err(|e| format!("reading the request on stdin: {e}"))?;
        if text.len() as u64 > REQUEST_CAP {
            return Err(format!("the request on stdin is over {REQUEST_CAP} bytes"));
        }
        serde_json::from_slice(&text).map_err(|e| format!("the request on stdin: {e}"))
    }
}

impl Reply {
    /// A child's stdout as its reply, or why it is none (the words name
    /// what was missing or wrong, for the parent's "without a report").
    pub fn parse(stdout: &[u8]) -> Result<Reply, String> {
        let text = String::from_utf8_lossy(stdout);
        let text = text.trim();
        if text.is_empty() {
            return Err("no output on stdout".into());
        }
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("stdout is not JSON: {e}"))?;
        Reply::from_value(v)
    }

    fn from_value(v: serde_json::Value) -> Result<Reply, String> {
        let schema = v.get("schema").and_then(|s| s.as_str()).map(str::to_string);
        match schema.as_deref() {
            Some(SCHEMA) => serde_json::from_value(v)
                .map(|r| Reply::Report(Box::new(r)))
                .map_err(|e| format!("its {SCHEMA} report does not parse: {e}")),
            Some(DEVICES_SCHEMA) => serde_json::from_value(v)
                .map(Reply::Devices)
                .map_err(|e| format!("its {DEVICES_SCHEMA} listing does not parse: {e}")),
            Some(crate::tune::SCHEMA) => serde_json::from_value(v)
                .map(|t| Reply::Tune(Box::new(t)))
                .map_err(|e| format!("its {} report does not parse: {e}", crate::tune::SCHEMA)),
            Some(RUNTIME_SCHEMA) => serde_json::from_value(v)
                .map(|r| Reply::Runtime(Box::new(r)))
                .map_err(|e| format!("its {RUNTIME_SCHEMA} answer does not parse: {e}")),
            Some(ERROR_SCHEMA) => serde_json::from_value(v)
                .map(Reply::Error)
                .map_err(|e| format!("its {ERROR_SCHEMA} object does not parse: {e}")),
            other => Err(format!("unknown schema {other:?}")),
        }
    }
}

/// Why a child could not produce a report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChildError {
    pub schema: String,
    pub kind: ErrorKind,
    pub message: String,
}

impl ChildError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ChildError {
        ChildError {
            schema: ERROR_SCHEMA.into(),
            kind,
            message: message.into(),
        }
    }
}

/// Why nothing was decided (exit 2), in the child's reply and in this
/// process alike: the parent words it, never the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorKind {
    /// Bad arguments.
    #[serde(rename = "usage")]
    Usage,
    /// A file given (baseline, deny list, spec table) is unusable.
    #[serde(rename = "input")]
    Input,
    /// No usable device or runtime, or the child itself failed. Its wire
    /// name is the one the child has always written.
    #[serde(rename = "no_device")]
    CouldNotRun,
}

impl ErrorKind {
    /// The kind of a run's error (the one mapping of [`SmokeError`]).
    pub fn of(e: &SmokeError) -> ErrorKind {
        match e {
            SmokeError::Usage(_) => ErrorKind::Usage,
            SmokeError::NoDevice(_) => ErrorKind::CouldNotRun,
            SmokeError::Input(_) => ErrorKind::Input,
        }
    }
}

/// A device listing: what the runtime lists, or why nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicesAnswer {
    pub schema: String,
    pub backend: String,
    pub devices: Vec<greta_runtime::DeviceInfo>,
    /// `None` when the listing worked.
    pub error: Option<String>,
    pub no_device: bool,
    /// What kind of failure `error` is, so that readers (the doctor's HIP
    /// check) decide on the kind, not on its words. Absent in answers
    /// recorded before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<greta_vocab::DevicesError>,
}

/// [`DeviceChoice`] as its command-line text (`auto`, `cpu`, `all`, an
/// index, a name fragment), which parses back to the same choice.
mod device_text {
    use super::DeviceChoice;
    use greta_runtime::DeviceSelect;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn text(d: &DeviceChoice) -> String {
        match d {
            DeviceChoice::All => "all".into(),
            DeviceChoice::One(DeviceSelect::Auto) => "auto".into(),
            DeviceChoice::One(DeviceSelect::Cpu) => "cpu".into(),
            DeviceChoice::One(DeviceSelect::Index(i)) => i.to_string(),
            DeviceChoice::One(DeviceSelect::Name(n)) => n.clone(),
        }
    }

    pub fn serialize<S: Serializer>(d: &DeviceChoice, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&text(d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DeviceChoice, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// [`BackendChoice`] as its command-line text.
mod backend_text {
    use super::BackendChoice;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &BackendChoice, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(b.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BackendChoice, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
