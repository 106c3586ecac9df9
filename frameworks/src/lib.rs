//! Framework gates: torch, triton and jax of a Python env compute on the
//! device, each checked against a float64 NumPy reference on fresh random
//! inputs. `greta install` runs them in the staged env before the swap;
//! `greta smoke --profile frameworks` runs them on any env or interpreter.
//! Both call [`run`] (install through [`start`], so that the interpreter
//! starts while its wheels are still being installed).
//!
//! The work happens in the env's own interpreter, running `gates.py`
//! (embedded here), in its own process group with a time limit
//! ([`runner`]). What crosses the process boundary is JSON lines parsed into
//! the types below; the judgement (tolerances, which device counts, what a
//! failure means) is made here, in Rust ([`judge`]), and the results become
//! a `greta.smoke/v1` report ([`report`]).

pub mod judge;
pub mod report;
mod scratch;
pub mod session;

pub use judge::Expect;
pub use session::Checked;

use anyhow::{bail, Context, Result};
use greta_vocab::child::{Child, Finished, Running};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Most bytes kept of the gate script's stdout and of its stderr each.
pub const MAX_OUTPUT: usize = 16 << 20;

/// The gate script; see its header for the protocol.
pub const SCRIPT: &str = include_str!("gates.py");

/// Modules greta knows gates for, in run order.
pub const MODULES: [&str; 3] = ["torch", "triton", "jax"];

/// One line greta reads from the script's private stdout.
#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    /// A module's child finished (a later time-out can name the others).
    Done { module: String },
    /// The whole run; the last line.
    Result(Run),
}

/// Everything one run of the script reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    pub python: PythonSeen,
    /// GPU-selection variables as the interpreter saw them
    /// (`CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`, `HSA_OVERRIDE_GFX_VERSION`, ...).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub wall_s: f64,
    pub frameworks: Vec<ModuleRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PythonSeen {
    pub executable: String,
    pub version: String,
    pub prefix: String,
    #[serde(default)]
    pub base_prefix: Option<String>,
    /// Started with `-I` (only the env's own files count).
    #[serde(default)]
    pub isolated: bool,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ModuleStatus {
    /// Imported, and every gate ran to its end (each gate says pass or fail).
    Ok,
    /// An exception: at import (phase `import`) or outside any gate.
    Error,
    /// Killed at the time limit.
    Timeout,
    /// The process died (a signal, an abort in native code) before it reported.
    Crashed,
    /// The module is not installed (`ModuleNotFoundError` for the module itself).
    Missing,
}

/// One framework's import, what it says about its build and device, and its gates.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModuleRun {
    pub module: String,
    pub status: ModuleStatus,
    pub error: Option<String>,
    #[serde(default)]
    pub traceback: Option<String>,
    /// The step it was in when it timed out or crashed.
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub import_s: Option<f64>,
    #[serde(default)]
    pub version: Option<String>,
    /// `module.__file__`.
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub info: Info,
    #[serde(default)]
    pub gates: Vec<GateRecord>,
    #[serde(default)]
    pub elapsed_s: Option<f64>,
}

/// What a framework says about itself (fields per framework; absent ones
/// were not asked or not known).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Info {
    /// torch.version.hip / torch.version.cuda.
    #[serde(default)]
    pub hip: Option<String>,
    #[serde(default)]
    pub cuda: Option<String>,
    #[serde(default)]
    pub cuda_available: Option<bool>,
    #[serde(default)]
    pub device_count: Option<u32>,
    #[serde(default)]
    pub device_error: Option<String>,
    /// The device the gates ran on.
    #[serde(default)]
    pub device: Option<DeviceSeen>,
    /// jax.devices().
    #[serde(default)]
    pub devices: Vec<JaxDevice>,
    #[serde(default)]
    pub default_backend: Option<String>,
    #[serde(default)]
    pub jaxlib: Option<String>,
    /// triton's compile target (e.g. `GPUTarget(backend='cuda', arch=90, warp_size=32)`).
    #[serde(default)]
    pub target: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Gpu,
    Cpu,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceSeen {
    pub kind: DeviceKind,
    pub name: String,
    /// Why there is no GPU, in the framework's words.
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub platform: Option<String>,
    /// AMD: e.g. `gfx942:sramecc+:xnack-`.
    #[serde(default, rename = "gcnArchName")]
    pub gcn_arch_name: Option<String>,
    #[serde(default)]
    pub pci_bus_id: Option<u32>,
    #[serde(default)]
    pub pci_device_id: Option<u32>,
    #[serde(default)]
    pub pci_domain_id: Option<u32>,
    #[serde(default)]
    pub uuid: Option<String>,
}

impl DeviceSeen {
    /// `0000:83:00.0`, as the probe spells PCI addresses.
    pub fn pci_address(&self) -> Option<String> {
        Some(format!(
            "{:04x}:{:02x}:{:02x}.0",
            self.pci_domain_id?, self.pci_bus_id?, self.pci_device_id?
        ))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JaxDevice {
    pub platform: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub id: Option<i64>,
}

/// One computation checked against its reference.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateRecord {
    pub id: String,
    pub shape: String,
    #[serde(default)]
    pub flops: u64,
    #[serde(default)]
    pub bytes: u64,
    /// Repeats that completed and were checked (fresh inputs each).
    pub repeats: u32,
    /// Worst ‖out − ref‖₂ / ‖ref‖₂ over the repeats (null: none completed).
    pub rel_err: Option<f64>,
    pub max_abs_err: Option<f64>,
    /// False when an output held NaN or infinity.
    #[serde(default = "yes")]
    pub finite: bool,
    /// Where the result tensor lives (`cuda:0`, `cpu`, `gpu:0`).
    pub device: Option<String>,
    pub first_call_us: Option<f64>,
    pub median_us: Option<f64>,
    pub min_us: Option<f64>,
    pub error: Option<String>,
    #[serde(default)]
    pub traceback: Option<String>,
}

fn yes() -> bool {
    true
}

/// What one run asks for: the interpreter, what it imports and gates with
/// which limits, and what the result must show. Built with [`Request::new`],
/// whose defaults are the only ones.
#[derive(Debug, Clone)]
pub struct Request {
    /// The interpreter (the env's `bin/python`, or any Python).
    pub python: PathBuf,
    /// Modules to import and inspect (in [`MODULES`] order).
    pub modules: Vec<String>,
    /// Run the compute gates; off, the modules are only imported and
    /// inspected (`greta install --no-smoke`).
    pub gates: bool,
    pub seed: u64,
    /// Limit per module (they run side by side, so also for the whole run).
    pub timeout: Duration,
    pub repeats: u32,
    /// Run with `-I`: only the env's own files count (greta envs). Off for
    /// `--python`, which is judged as its user runs it.
    pub isolated: bool,
    /// Extra environment (the env's activation variables).
    pub env: BTreeMap<String, String>,
    /// What the env promises and the machine needs.
    pub expect: Expect,
}

/// Clean repeats of each gate, each with fresh inputs.
pub const DEFAULT_REPEATS: u32 = 3;

impl Request {
    /// Every framework of [`MODULES`] on `python`, gated, with the default
    /// limits, a seed from the clock, and nothing expected of it.
    pub fn new(python: PathBuf) -> Request {
        Request {
            expect: Expect {
                label: format!("python {}", python.display()),
                backend: None,
                version: None,
                gpu: None,
                env_root: None,
                require_all: false,
            },
            python,
            modules: MODULES.iter().map(|m| m.to_string()).collect(),
            gates: true,
            seed: clock_seed(),
            timeout: session::DEFAULT_TIMEOUT,
            repeats: DEFAULT_REPEATS,
            isolated: false,
            env: BTreeMap::new(),
        }
    }

    /// The modules whose gates run: none without [`Request::gates`], and
    /// triton only where it has a GPU to compile for.
    pub fn gated(&self) -> Vec<String> {
        if !self.gates {
            return vec![];
        }
        self.modules
            .iter()
            .filter(|m| *m != "triton" || self.expect.triton_runs())
            .cloned()
            .collect()
    }
}

/// A [`Request::seed`] from the clock, for runs given none: 53 bits, so it
/// survives the trip through JSON into Python and back into the report.
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        & ((1 << 53) - 1)
}

/// Runs the gates `request` asks for and judges them: [`start`], then
/// [`Started::run`]. The error is an interpreter that could not be started.
pub fn run(request: &Request) -> Result<Checked> {
    Ok(start(request.clone())?.run())
}

/// The interpreter started and waiting for "go" (see [`start`]).
pub struct Started {
    running: Running,
    request: Request,
    /// Holds `gates.py` for as long as the interpreter may read it.
    _dir: tempfile::TempDir,
}

/// Starts `request.python` on the gate script; it waits for
/// [`Started::run`] before importing anything, so it can be started while
/// wheels are still being installed (its start-up is then off the critical
/// path). The interpreter, its flags, seed, repeats, modules and
/// environment are fixed here; what is gated, the limit and the
/// expectation may still change ([`Started::request_mut`]).
pub fn start(request: Request) -> Result<Started> {
    let python = &request.python;
    let dir = scratch::create_in(&std::env::temp_dir())?;
    let script = dir.path().join("greta_gates.py");
    std::fs::write(&script, SCRIPT).with_context(|| format!("writing {}", script.display()))?;
    let mut cmd = Command::new(python);
    if request.isolated {
        cmd.arg("-I");
    }
    cmd.arg(&script)
        .arg(format!("seed={}", request.seed))
        .arg(format!("repeats={}", request.repeats))
        .args(&request.modules)
        .envs(&request.env)
        .env_remove("PYTHONHOME")
        // The script's own bytecode is never cached next to it.
        .env("PYTHONDONTWRITEBYTECODE", "1");
    // Its own process group (everything a framework starts is killed with
    // it), PR_SET_PDEATHSIG, stdin piped for "go", output capped.
    let running = Child::new(cmd)
        .own_group()
        .stdin_piped()
        .cap(MAX_OUTPUT)
        .start()
        .with_context(|| format!("starting {}", python.display()))?;
    Ok(Started {
        running,
        request,
        _dir: dir,
    })
}

impl Started {
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// What is decided after the start: [`Request::gates`],
    /// [`Request::timeout`] and [`Request::expect`] (they go with "go").
    /// The other fields were used at the start; changing them here changes
    /// nothing but what is reported.
    pub fn request_mut(&mut self) -> &mut Request {
        &mut self.request
    }

    /// Lets the interpreter go, waits for its result and judges it
    /// ([`session::finish`]).
    pub fn run(self) -> Checked {
        session::finish(self)
    }

    /// Lets the interpreter go and waits for its result, also giving what
    /// it printed on stderr (framework and runtime messages such as
    /// `hipErrorNoBinaryForGpu` or `Memory access fault` are printed there,
    /// not raised). The script enforces the per-module limit itself (and
    /// names what timed out); this limit, a little longer, is for an
    /// interpreter that never gets that far.
    fn wait(mut self) -> (Request, Result<Run>, String) {
        // A child that died at start-up cannot read "go"; `finish` says why.
        let go = format!(
            "go gates={} timeout={}\n",
            self.request.gated().join(","),
            self.request.timeout.as_secs_f64()
        );
        let _ = self.running.send_and_close(go.as_bytes());
        let limit = self.request.timeout.saturating_add(Duration::from_secs(30));
        let f = self.running.finish(Some(limit));
        let parsed = parse(&f, &self.request, limit);
        (self.request, parsed, f.stderr.text())
    }
}

fn parse(f: &Finished, request: &Request, limit: Duration) -> Result<Run> {
    let mut done = Vec::new();
    let mut result = None;
    for (i, line) in f.stdout.text().lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(Event::Done { module }) => done.push(module),
            Ok(Event::Result(r)) => result = Some(r),
            Err(e) => bail!(
                "the gate runner's output, line {}: {e} (line starts {:?})",
                i + 1,
                line.chars().take(120).collect::<String>()
            ),
        }
    }
    if let Some(r) = result {
        return Ok(r);
    }
    let stderr = f.stderr.text();
    let stderr = tail(&stderr, 2000);
    if f.timed_out {
        let pending: Vec<&str> = request
            .modules
            .iter()
            .map(String::as_str)
            .filter(|m| !done.iter().any(|d| d == m))
            .collect();
        bail!(
            "{} did not finish within {limit:?} and was killed; stderr:\n{stderr}",
            pending.join(", "),
        );
    }
    let status = f
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "unknown status".into());
    bail!(
        "the gate runner ended ({status}) without a result{}{}; stderr:\n{stderr}",
        if f.stdout.cut {
            " (its output was cut at 16 MiB)"
        } else {
            ""
        },
        if f.pipes_held {
            " (a process that left its group held the output open)"
        } else {
            ""
        }
    )
}

/// The last `max` bytes of `s`, on a character boundary.
pub fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s.trim();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].trim()
}

/// Modules to import for a wheel set (what was installed), in run order.
pub fn modules_for(wheel_names: &[String]) -> Vec<String> {
    let norm: Vec<String> = wheel_names
        .iter()
        .map(|w| greta_vocab::normalize_name(w))
        .collect();
    let has = |n: &str| norm.iter().any(|w| w == n);
    let mut m = Vec::new();
    if has("torch") {
        m.push("torch".to_string());
    }
    if [
        "triton",
        "pytorch-triton-rocm",
        "triton-rocm",
        "pytorch-triton",
    ]
    .iter()
    .any(|n| has(n))
    {
        m.push("triton".to_string());
    }
    if has("jax") {
        m.push("jax".to_string());
    }
    m
}
