//! One `greta smoke` run end to end: choose the backend and devices, run the
//! profile's gates on each, write the results. This is the library entry
//! point the `greta` binary (and `greta install`) call.

use crate::deny::DenyList;
use crate::floors::{Baseline, ClassFile, FloorsError};
use crate::gates::{Catalog, Profile};
pub use crate::gpu_child::SmokeRequest;
use crate::inject::Faults;
use crate::node::{run_devices, RuntimeOpener};
use crate::progress::Bar;
use crate::results::{self, DeviceRun, Report, RunStatus, Settings, Written, SCHEMA};
use crate::runner::{device_info, DeviceContext};
use greta_runtime::{BackendKind, DeviceSelect, RuntimeError};
use std::path::PathBuf;
use std::time::Instant;

/// Which backend runs the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// Chosen per machine by the `greta` binary (HIP on gfx94x); in this
    /// library it means Vulkan.
    #[default]
    Auto,
    Vulkan,
    Hip,
    /// The CUDA twin of the HIP backend (NVIDIA GPUs).
    Cuda,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "vulkan" => Ok(BackendChoice::Vulkan),
            "hip" => Ok(BackendChoice::Hip),
            "cuda" => Ok(BackendChoice::Cuda),
            // Names people reach for: ROCm's device API is HIP, NVIDIA's is CUDA.
            "rocm" | "amd" | "hsa" => Err(format!(
                "unknown backend {s:?}: ROCm's device API is HIP, so use --backend hip \
                 (one of: auto, vulkan, hip, cuda)"
            )),
            "nvidia" | "nv" => Err(format!(
                "unknown backend {s:?}: NVIDIA GPUs run through CUDA, so use --backend cuda \
                 (one of: auto, vulkan, hip, cuda)"
            )),
            _ => Err(format!(
                "unknown backend {s:?}{}; one of: auto, vulkan, hip, cuda",
                greta_vocab::suggest::did_you_mean(s, ["auto", "vulkan", "hip", "cuda"], 1)
            )),
        }
    }
}

impl BackendChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Vulkan => "vulkan",
            BackendChoice::Hip => "hip",
            BackendChoice::Cuda => "cuda",
        }
    }
}

/// `--device N|all|cpu|auto|NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceChoice {
    /// Every device the backend lists.
    All,
    One(DeviceSelect),
}

impl Default for DeviceChoice {
    fn default() -> Self {
        DeviceChoice::One(DeviceSelect::Auto)
    }
}

impl std::str::FromStr for DeviceChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            Ok(DeviceChoice::All)
        } else {
            s.parse().map(DeviceChoice::One)
        }
    }
}

/// Everything `greta smoke` can be asked: the [`SmokeRequest`] (what the
/// gates run with, all that crosses to the device child, its defaults in
/// [`SmokeRequest::new`]) and what stays with the process that asked
/// (where results go, the progress bar).
#[derive(Debug, Clone)]
pub struct Options {
    pub request: SmokeRequest,
    /// Results directory; `None`: the XDG default.
    pub out_dir: Option<PathBuf>,
    /// Write the JSON and CSV files (off only for embedding callers).
    pub write_results: bool,
    /// Progress bar on stderr (shown only when stderr is a terminal).
    pub progress: bool,
}

impl Options {
    /// `request`, its results written to the default place, with a
    /// progress bar on a terminal.
    pub fn new(request: SmokeRequest) -> Options {
        Options {
            request,
            out_dir: None,
            write_results: true,
            progress: true,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::new(SmokeRequest::new(Profile::Default))
    }
}

/// Why a run could not decide anything (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SmokeError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    NoDevice(String),
    #[error(transparent)]
    Input(#[from] FloorsError),
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub written: Option<Written>,
    /// The gates ran but the result files could not be written (exit 2).
    pub write_error: Option<String>,
}

impl Outcome {
    /// 0 every gate that ran passed, 1 a gate failed, 2 nothing decided
    /// (or the results could not be written).
    pub fn exit_code(&self) -> u8 {
        if self.write_error.is_some() {
            2
        } else {
            self.report.status.exit_code()
        }
    }
}

/// Run `opts.request.profile` (or the selected gates) on the chosen device(s).
pub fn run_profile(opts: &Options) -> Result<Outcome, SmokeError> {
    let started = Instant::now();
    let started_at = results::now_rfc3339();
    check_options(opts)?;
    let catalog = Catalog::builtin();
    let plan = catalog
        .plan(
            opts.request.profile,
            &opts.request.gates,
            opts.request.include_test_gates,
        )
        .map_err(SmokeError::Usage)?;
    let faults = Faults::parse(&opts.request.inject, &plan).map_err(SmokeError::Usage)?;
    // Read every input before touching a device: a bad file is exit 2, fast.
    let baseline = opts
        .request
        .baseline
        .as_deref()
        .map(Baseline::load)
        .transpose()?;
    let mut deny = DenyList::builtin();
    if let Some(p) = &opts.request.deny_list {
        deny.extend(DenyList::load(p)?);
    }
    let classes = ClassFile::builtin();
    let specs = crate::spec::SpecFile::for_run()?;
    let out_dir = results_dir(opts)?;
    let seed = opts.request.seed.unwrap_or_else(clock_seed);

    let kind = resolve_backend(opts.request.backend)?;
    let selects = device_selects(opts, kind)?;
    // The backend's devices now, to be counted again after the run: one
    // that falls off the bus meanwhile fails the run by name.
    let listed_before = greta_runtime::list_devices(kind).ok().map(|l| l.len());
    // Two or more devices run the same inputs: their references are shared.
    let shared = (selects.len() >= 2).then(|| crate::shared_refs::SharedRefs::new(selects.len()));

    let ctx = DeviceContext {
        profile: opts.request.profile,
        gates: &plan,
        repeat: opts.request.repeat,
        timeout: opts.request.timeout()?,
        seed,
        floor_fraction: opts.request.floor_fraction,
        baseline: baseline.as_ref(),
        classes: &classes,
        specs: &specs,
        deny: &deny,
        faults: &faults,
        shared: shared.as_ref(),
    };
    let bar = Bar::new(opts.progress, plan.len() * selects.len());
    bar.set_device(&match selects.len() {
        1 => String::new(),
        n => format!("{n} devices"),
    });
    // One worker per device, all at once (crate::node).
    let mut devices: Vec<DeviceRun> = Vec::new();
    let runs = run_devices(&RuntimeOpener(kind), &selects, &ctx, &bar);
    for (sel, run) in selects.iter().zip(runs) {
        match run {
            Ok(run) => devices.push(run),
            // One named device that cannot be opened: nothing decided.
            Err(e) if selects.len() == 1 => {
                bar.finish();
                return Err(no_device(e));
            }
            // One of several listed devices: that device fails.
            Err(e) => devices.push(unopenable(kind, sel, &e, &plan, seed)),
        }
    }
    if devices.len() >= 2 {
        crate::peers::compare(&mut devices, opts.request.peer_fraction);
    }
    bar.finish();

    // Every GPU counted: a backend that lists fewer than the node's own
    // records is a failed run, never a pass of the ones it saw.
    // (Vulkan lists a GPU once per driver, and lavapipe: not one per GPU.)
    // TEST-ONLY: a device injected to vanish is listed no more.
    let vanished = faults.vanished();
    let listed_after: Option<Vec<greta_runtime::DeviceInfo>> =
        greta_runtime::list_devices(kind).ok().map(|l| {
            l.into_iter()
                .filter(|d| !vanished.contains(&d.index))
                .collect()
        });
    let mut checks: Vec<_> = (kind != BackendKind::Vulkan)
        .then_some(listed_after.as_ref())
        .flatten()
        .and_then(|l| crate::telemetry::census(kind, l.iter().filter(|d| !d.is_cpu()).count()))
        .into_iter()
        .collect();
    if let (Some(before), Some(after)) = (listed_before, listed_after.as_ref()) {
        checks.push(crate::telemetry::recount(
            kind.as_str(),
            before,
            after.len(),
        ));
    }
    let mut status = Report::summarize(&devices);
    if checks.iter().any(|c| !c.pass) {
        status = RunStatus::Fail;
    }
    let report = Report {
        schema: SCHEMA.to_string(),
        greta_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at,
        finished_at: results::now_rfc3339(),
        wall_s: started.elapsed().as_secs_f64(),
        host: results::host_info(),
        profile: opts.request.profile.as_str().to_string(),
        backend_requested: opts.request.backend.as_str().to_string(),
        settings: settings(opts, seed, &faults),
        status,
        devices,
        findings: vec![],
        checks,
    };
    let (written, write_error) = match out_dir.map(|dir| results::write_report(&report, &dir)) {
        Some(Ok(w)) => (Some(w), None),
        Some(Err(e)) => (None, Some(format!("{e:#}"))),
        None => (None, None),
    };
    Ok(Outcome {
        report,
        written,
        write_error,
    })
}

/// The options' own limits, before anything is read or opened (exit 2).
pub(crate) fn check_options(opts: &Options) -> Result<(), SmokeError> {
    if !(opts.request.floor_fraction > 0.0 && opts.request.floor_fraction <= 1.0) {
        return Err(SmokeError::Usage(format!(
            "--floor-fraction must be in (0, 1], got {}",
            opts.request.floor_fraction
        )));
    }
    if !(opts.request.peer_fraction > 0.0 && opts.request.peer_fraction <= 1.0) {
        return Err(SmokeError::Usage(format!(
            "--peer-fraction must be in (0, 1], got {}",
            opts.request.peer_fraction
        )));
    }
    if opts.request.timeout()?.is_zero() {
        return Err(SmokeError::Usage(
            "--timeout must be more than 0 seconds".into(),
        ));
    }
    if !opts.request.profile.runs_kernels() && opts.request.gates.is_empty() {
        // Python frameworks, not kernels: `greta smoke` runs them in the
        // env's interpreter (the greta-frameworks crate).
        return Err(SmokeError::Usage(
            "profile frameworks has no kernel gates: it runs through `greta smoke --profile frameworks`"
                .into(),
        ));
    }
    Ok(())
}

/// Where the results go (None with `--no-save`): the directory exists, or is
/// created, and takes a file, so a run fails before minutes of gates, not after.
pub(crate) fn results_dir(opts: &Options) -> Result<Option<PathBuf>, SmokeError> {
    let out_dir = match (&opts.out_dir, opts.write_results) {
        (Some(d), true) => Some(d.clone()),
        (None, true) => Some(results::default_out_dir().ok_or_else(|| {
            SmokeError::Usage("no results directory: set --out, XDG_DATA_HOME or HOME".into())
        })?),
        (_, false) => None,
    };
    if let Some(dir) = &out_dir {
        greta_fsread::output::OutputDir::open(dir, true)
            .and_then(|d| d.check())
            .map_err(|e| {
                SmokeError::Usage(format!(
                    "results directory {} is not writable: {e}",
                    dir.display()
                ))
            })?;
    }
    Ok(out_dir)
}

/// The devices to run on: the one chosen, or with `--device all` every
/// device of the backend, CPU implementations (lavapipe) only when nothing
/// else exists (as for `auto`; `--device cpu` or an index still picks them).
fn device_selects(opts: &Options, kind: BackendKind) -> Result<Vec<DeviceSelect>, SmokeError> {
    Ok(match &opts.request.device {
        DeviceChoice::One(s) => vec![s.clone()],
        DeviceChoice::All => {
            let list = greta_runtime::list_devices(kind).map_err(no_device)?;
            if list.is_empty() {
                return Err(SmokeError::NoDevice(format!(
                    "no {} device found",
                    opts.request.backend.as_str()
                )));
            }
            let gpus: Vec<usize> = list
                .iter()
                .filter(|d| !d.is_cpu())
                .map(|d| d.index)
                .collect();
            if gpus.is_empty() {
                list.iter().map(|d| DeviceSelect::Index(d.index)).collect()
            } else {
                gpus.into_iter().map(DeviceSelect::Index).collect()
            }
        }
    })
}

/// The settings the report records.
fn settings(opts: &Options, seed: u64, faults: &Faults) -> Settings {
    Settings {
        repeat: opts.request.repeat,
        timeout_s: opts.request.timeout_s,
        floor_fraction: opts.request.floor_fraction,
        baseline: opts
            .request
            .baseline
            .as_ref()
            .map(|p| p.display().to_string()),
        gates: opts.request.gates.clone(),
        seed,
        include_test_gates: opts.request.include_test_gates,
        peer_fraction: Some(opts.request.peer_fraction),
        inject: faults.specs.clone(),
    }
}

/// The backend `choice` runs on.
fn resolve_backend(choice: BackendChoice) -> Result<BackendKind, SmokeError> {
    match choice {
        BackendChoice::Auto | BackendChoice::Vulkan => Ok(BackendKind::Vulkan),
        BackendChoice::Hip | BackendChoice::Cuda => {
            let kind = if choice == BackendChoice::Hip {
                BackendKind::Hip
            } else {
                BackendKind::Cuda
            };
            // Ask the runtime first: no library or no device is exit 2 with
            // its reason, before any gate is planned.
            match greta_runtime::list_devices(kind) {
                Ok(_) => Ok(kind),
                Err(e) => Err(SmokeError::NoDevice(format!(
                    "--backend {}: {e}",
                    choice.as_str()
                ))),
            }
        }
    }
}

fn no_device(e: RuntimeError) -> SmokeError {
    SmokeError::NoDevice(format!("no usable device: {e}"))
}

/// A listed device that failed to open: every gate fails with why.
fn unopenable(
    kind: BackendKind,
    sel: &DeviceSelect,
    e: &RuntimeError,
    plan: &[crate::gates::Gate],
    seed: u64,
) -> DeviceRun {
    let listed = greta_runtime::list_devices(kind)
        .ok()
        .and_then(|l| match sel {
            DeviceSelect::Index(i) => l.get(*i).cloned(),
            _ => None,
        });
    let index = match sel {
        DeviceSelect::Index(i) => *i,
        _ => 0,
    };
    let device = match &listed {
        Some(d) => device_info(d),
        None => results::DeviceInfo::unknown(format!("{sel:?}")),
    };
    let why = format!("could not open the device: {e}");
    DeviceRun {
        index,
        backend: kind.as_str().into(),
        device,
        status: RunStatus::Fail,
        lost: Some(why.clone()),
        open_s: 0.0,
        gates: plan
            .iter()
            .map(|g| crate::runner::skipped(g, seed, why.clone()))
            .collect(),
        validation_messages: vec![],
        notes: vec![],
        checks: vec![],
    }
}

pub(crate) fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names people type for a backend greta calls otherwise are
    /// answered with the one it means; a typo with the nearest.
    #[test]
    fn a_backend_by_another_name_says_which_it_means() {
        let e = "rocm".parse::<BackendChoice>().unwrap_err();
        assert!(e.contains("--backend hip"), "{e}");
        let e = "nvidia".parse::<BackendChoice>().unwrap_err();
        assert!(e.contains("--backend cuda"), "{e}");
        let e = "vulkna".parse::<BackendChoice>().unwrap_err();
        assert!(e.contains("did you mean `vulkan`?"), "{e}");
        let e = "opencl".parse::<BackendChoice>().unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn choices_parse() {
        assert_eq!("all".parse::<DeviceChoice>().unwrap(), DeviceChoice::All);
        assert_eq!(
            "1".parse::<DeviceChoice>().unwrap(),
            DeviceChoice::One(DeviceSelect::Index(1))
        );
        assert_eq!(
            "cpu".parse::<DeviceChoice>().unwrap(),
            DeviceChoice::One(DeviceSelect::Cpu)
        );
        assert!("".parse::<DeviceChoice>().is_err());
        assert_eq!("hip".parse::<BackendChoice>().unwrap(), BackendChoice::Hip);
        assert!("rocm"
            .parse::<BackendChoice>()
            .unwrap_err()
            .contains("auto, vulkan, hip"));
        assert_eq!(
            "cuda".parse::<BackendChoice>().unwrap(),
            BackendChoice::Cuda
        );
    }

    #[test]
    fn bad_options_are_usage_errors_before_any_device() {
        let mut o = Options::default();
        o.request.floor_fraction = 1.5;
        o.write_results = false;
        assert!(matches!(run_profile(&o), Err(SmokeError::Usage(_))));
        let mut o = Options::default();
        o.request.gates = vec!["nope".into()];
        o.write_results = false;
        let e = run_profile(&o).unwrap_err();
        assert!(e.to_string().contains("unknown gate"), "{e}");
        let mut o = Options::default();
        o.request.baseline = Some("/nonexistent/b.json".into());
        o.write_results = false;
        assert!(matches!(run_profile(&o), Err(SmokeError::Input(_))));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let o = Options {
            out_dir: Some(file.join("sub")),
            ..Options::default()
        };
        let e = run_profile(&o).unwrap_err().to_string();
        assert!(e.contains("not writable") && e.contains("file/sub"), "{e}");
    }
}
