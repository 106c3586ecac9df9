//! `greta smoke --backend hip|cuda` and the `auto` choice of backend.
//!
//! HIP and its CUDA twin run in a child process of this same binary
//! (`greta __gpu smoke …`, see `cmd::gpu`): a hung GPU or a crashing
//! compiler ends that child, never greta. The parent bounds the child's
//! time, kills its process group when it overruns, and prints and writes
//! the child's `greta.smoke/v1` report exactly as a Vulkan run's. Gates,
//! tolerances, schema and exit codes are the same `greta_smoke` code.

use super::fleet::Fleet;
use super::Args;
use crate::cmd::gpu::{ChildError, ERROR_SCHEMA};
use crate::exit::Exit;
use greta_probe::{Facts, Vendor};
use greta_smoke::results::{self, Report, SCHEMA};
use greta_smoke::runtime::gpu::child;
use greta_smoke::Catalog;
use greta_smoke::{BackendChoice, DeviceChoice};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// What `auto` decided, and the one line that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub backend: BackendChoice,
    pub why: String,
}

/// What the choice looks at, gathered from the live machine by [`gather`]
/// and passed in so the decision itself is testable on any machine.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// AMD GPUs as "name (gfxNNN)" with their gfx target when known.
    pub amd_gpus: Vec<(String, Option<String>)>,
    /// Vulkan devices that are not CPU implementations (lavapipe).
    pub vulkan_gpus: Vec<String>,
    /// Vulkan CPU devices (lavapipe/llvmpipe).
    pub vulkan_cpus: Vec<String>,
    /// Why Vulkan lists nothing (no loader, enumeration failed), when it does not.
    pub vulkan_error: Option<String>,
    /// The HIP runtime greta would load (libamdhip64 and why), if any.
    pub rocm: Option<String>,
    /// NVIDIA GPUs by name.
    pub nvidia_gpus: Vec<String>,
    /// The CUDA driver library greta would load, if any.
    pub cuda: Option<String>,
}

/// `--backend auto`: the backend the device's frameworks use where greta's
/// own path through it is the reliable one — HIP on gfx94x (Vulkan is known
/// to fail there), CUDA on NVIDIA GPUs with a CUDA driver (what torch, JAX
/// and Triton run on there); on RDNA and elsewhere Vulkan (RADV) when it
/// sees a GPU, HIP when Vulkan has no GPU to offer and ROCm is present.
pub fn choose(device: &DeviceChoice, m: &Machine) -> Choice {
    let vulkan = |why: String| Choice {
        backend: BackendChoice::Vulkan,
        why,
    };
    let hip = |why: String| Choice {
        backend: BackendChoice::Hip,
        why,
    };
    if device_arg(device) == "cpu" {
        return vulkan("--device cpu is Vulkan's CPU device (lavapipe)".into());
    }
    let names = |v: &[(String, Option<String>)]| {
        v.iter()
            .map(|(n, g)| match g {
                Some(g) => format!("{n} ({g})"),
                None => n.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let gfx94x: Vec<(String, Option<String>)> = m
        .amd_gpus
        .iter()
        .filter(|(_, g)| g.as_deref().is_some_and(|g| g.starts_with("gfx94")))
        .cloned()
        .collect();
    if !gfx94x.is_empty() {
        return hip(format!(
            "{} is an MI300-class GPU (gfx94x), where Vulkan is known to fail",
            names(&gfx94x)
        ));
    }
    if let (false, Some(lib)) = (m.nvidia_gpus.is_empty(), &m.cuda) {
        return Choice {
            backend: BackendChoice::Cuda,
            why: format!(
                "{} is an NVIDIA GPU: CUDA is what its frameworks use ({lib})",
                m.nvidia_gpus.join(", ")
            ),
        };
    }
    if !m.vulkan_gpus.is_empty() {
        return vulkan(format!("Vulkan sees {}", m.vulkan_gpus.join(", ")));
    }
    let vulkan_state = match (&m.vulkan_error, m.vulkan_cpus.is_empty()) {
        (Some(e), _) => format!("Vulkan is unusable ({e})"),
        (None, true) => "Vulkan lists no device".to_string(),
        (None, false) => format!(
            "Vulkan lists only its CPU device ({})",
            m.vulkan_cpus.join(", ")
        ),
    };
    let vulkan_usable = m.vulkan_error.is_none() && !m.vulkan_cpus.is_empty();
    match &m.rocm {
        Some(r) if !vulkan_usable => hip(format!("{vulkan_state} and ROCm is present ({r})")),
        Some(r) if !m.amd_gpus.is_empty() => hip(format!(
            "{vulkan_state}, but the machine has an AMD GPU ({}) and ROCm is present ({r})",
            names(&m.amd_gpus)
        )),
        Some(_) => vulkan(format!("{vulkan_state}, and there is no AMD GPU for HIP")),
        None if vulkan_usable => vulkan(format!("{vulkan_state}; no AMD GPU with ROCm for HIP")),
        None => vulkan(format!(
            "{vulkan_state}, and no ROCm for HIP either (no libamdhip64 found)"
        )),
    }
}

/// [`choose`] on the live machine; `--device cpu` needs no probing.
pub fn choose_live(device: &DeviceChoice) -> Choice {
    if device_arg(device) == "cpu" {
        return choose(device, &Machine::default());
    }
    choose(device, &gather())
}

/// Reads what [`choose`] needs from the live machine: PCI and KFD for the
/// GPUs and their gfx targets, the Vulkan loader and devices as doctor sees
/// them, and which HIP/CUDA runtime greta would load. The Vulkan part is
/// read only when there is no gfx94x GPU.
pub fn gather() -> Machine {
    let f = greta_probe::Probe::new(&greta_probe::Root::live())
        .scope(greta_probe::Scope::Devices)
        .run()
        .facts;
    let mut m = Machine {
        amd_gpus: f
            .gpus
            .iter()
            .filter(|g| g.vendor == Vendor::Amd)
            .map(|g| (g.name.clone(), g.gfx.clone()))
            .collect(),
        nvidia_gpus: f
            .gpus
            .iter()
            .filter(|g| g.vendor == Vendor::Nvidia)
            .map(|g| g.name.clone())
            .collect(),
        ..Machine::default()
    };
    let gfx94x = m
        .amd_gpus
        .iter()
        .any(|(_, g)| g.as_deref().is_some_and(|g| g.starts_with("gfx94")));
    if !gfx94x {
        vulkan_facts(&f, &mut m);
    }
    m.rocm = greta_smoke::runtime::hip::Hip::open()
        .ok()
        .map(|h| greta_smoke::runtime::gpu::Driver::library(&h).to_string());
    if !m.nvidia_gpus.is_empty() {
        m.cuda = greta_smoke::runtime::cuda::Cuda::open()
            .ok()
            .map(|c| greta_smoke::runtime::gpu::Driver::library(&c).to_string());
    }
    m
}

/// The Vulkan side of [`Machine`], from the devices the probe enumerated
/// (it reads Vulkan only when no gfx94x GPU is there).
fn vulkan_facts(f: &Facts, m: &mut Machine) {
    if f.vulkan.loader.is_none() {
        m.vulkan_error = Some("no Vulkan loader, libvulkan.so.1".into());
        return;
    }
    for d in &f.vulkan.devices {
        if d.device_type.as_deref() == Some("CPU") {
            m.vulkan_cpus.push(d.name.clone());
        } else {
            m.vulkan_gpus.push(d.name.clone());
        }
    }
    if f.vulkan.devices.is_empty() {
        m.vulkan_error = f
            .signals
            .iter()
            .find(|s| s.id.starts_with("vulkan-enumeration") || s.id.starts_with("vk"))
            .map(|s| s.text.clone());
    }
}

/// The `--device` value as the child takes it back on its command line.
pub fn device_arg(d: &DeviceChoice) -> String {
    let sel = match d {
        DeviceChoice::All => return "all".into(),
        DeviceChoice::One(sel) => sel,
    };
    // DeviceSelect is greta-runtime's (no direct dependency of this crate);
    // its serde form is the stable way to read it here.
    match serde_json::to_value(sel).unwrap_or_default() {
        serde_json::Value::String(s) => s.to_ascii_lowercase(), // "Auto", "Cpu"
        serde_json::Value::Object(o) => match o.into_iter().next() {
            Some((_, serde_json::Value::Number(n))) => n.to_string(), // {"Index": N}
            Some((_, serde_json::Value::String(s))) => s,             // {"Name": "..."}
            _ => "auto".into(),
        },
        _ => "auto".into(),
    }
}

/// The child's `smoke` command line for `args` (`greta __gpu smoke …`).
pub fn child_args(args: &Args, backend: BackendChoice) -> Vec<String> {
    let timeout = args
        .timeout
        .unwrap_or_else(|| args.profile.default_timeout_s());
    let mut v: Vec<String> = vec![
        "--backend".into(),
        backend.as_str().into(),
        "--profile".into(),
        args.profile.as_str().into(),
        "--device".into(),
        device_arg(&args.device),
        "--timeout".into(),
        timeout.to_string(),
        "--floor-fraction".into(),
        args.floor_fraction.to_string(),
    ];
    for g in &args.gates {
        v.extend(["--gate".into(), g.clone()]);
    }
    if let Some(r) = args.repeat {
        v.extend(["--repeat".into(), r.to_string()]);
    }
    if let Some(p) = &args.baseline {
        v.extend(["--baseline".into(), p.display().to_string()]);
    }
    if let Some(p) = &args.deny_list {
        v.extend(["--deny-list".into(), p.display().to_string()]);
    }
    if let Some(s) = args.seed {
        v.extend(["--seed".into(), s.to_string()]);
    }
    if args.include_test_gates {
        v.push("--include-test-gates=1".into());
    }
    v
}

/// How long the whole child run may take: every submission at its limit,
/// plus start-up (driver init, kernel compile on first use). Only a
/// backstop against a child that hangs outside a submission (the child
/// enforces each submission's limit itself).
fn run_limit(args: &Args, timeout_s: f64) -> Duration {
    let gates = Catalog::builtin()
        .plan(args.profile, &args.gates, args.include_test_gates)
        .map_or(1, |p| p.len().max(1)) as f64;
    let repeats = args.repeat.unwrap_or_else(|| args.profile.repeats()) as f64;
    let devices = if matches!(args.device, DeviceChoice::All) {
        8.0
    } else {
        1.0
    };
    Duration::from_secs_f64(300.0 + timeout_s * gates * (repeats + 2.0) * devices)
}

/// The results directory, checked writable before anything runs (as the
/// Vulkan path does inside greta_smoke): exit 2 before minutes of gates.
fn results_dir(args: &Args) -> Result<PathBuf, String> {
    let dir = match &args.out {
        Some(d) => d.clone(),
        None => results::default_out_dir()
            .ok_or("no results directory: set --out, XDG_DATA_HOME or HOME")?,
    };
    std::fs::create_dir_all(&dir)
        .and_then(|_| {
            tempfile::Builder::new()
                .prefix(".smoke-probe-")
                .tempfile_in(&dir)
                .map(drop)
        })
        .map_err(|e| format!("results directory {} is not writable: {e}", dir.display()))?;
    Ok(dir)
}

/// `greta smoke --backend hip|cuda`: run the gates in a child of this
/// binary, print and write its report, exit with its code.
pub fn run(args: &Args, backend: BackendChoice, fleet: &Fleet) -> anyhow::Result<Exit> {
    if !(args.floor_fraction > 0.0 && args.floor_fraction <= 1.0) {
        return Ok(stop(
            fleet,
            format!(
                "bad arguments: --floor-fraction must be in (0, 1], got {}",
                args.floor_fraction
            ),
        ));
    }
    let dir = match results_dir(args) {
        Ok(d) => d,
        Err(e) => {
            return Ok(stop(fleet, format!("bad arguments: {e}")));
        }
    };
    let Some(helper) = child::helper() else {
        return Ok(stop(
            fleet,
            "could not run: greta cannot find its own executable".to_string(),
        ));
    };
    let timeout_s = args
        .timeout
        .unwrap_or_else(|| args.profile.default_timeout_s());
    let mut cmd = helper.command("smoke");
    cmd.args(child_args(args, backend));
    // TEST-ONLY faults reach the child as they reach greta (docs/fleet.md).
    cmd.env(
        greta_vocab::EnvVars::GRETA_SMOKE_INJECT,
        args.inject.join(","),
    );
    let what = format!("the {} smoke child", backend.as_str());
    let out = match child::run(cmd, &what, b"", run_limit(args, timeout_s)) {
        Ok(o) => o,
        Err(e) => {
            return Ok(stop(fleet, format!("could not run: {e}")));
        }
    };
    eprint!("{}", out.stderr);
    match parse_output(&out.stdout) {
        Parsed::Report(report) => {
            finish(args, &report, out.status.code().unwrap_or(2), &dir, fleet)
        }
        Parsed::Error(e) => {
            let what = match e.kind.as_str() {
                "usage" => "bad arguments",
                "input" => "bad input file",
                _ => "could not run",
            };
            Ok(stop(fleet, format!("{what}: {}", e.message)))
        }
        Parsed::Nothing(why) => Ok(stop(
            fleet,
            format!(
                "could not run: the {} child ended with {} without a report ({why})",
                backend.as_str(),
                out.how()
            ),
        )),
    }
}

/// Nothing could be decided: the reason on stderr (and, for fleets, the
/// UNKNOWN line and a status-2 textfile).
fn stop(fleet: &Fleet, why: String) -> Exit {
    if fleet.oneline || fleet.prom.is_none() {
        eprintln!("greta smoke: {why}");
    }
    fleet.undecided(&why)
}

enum Parsed {
    Report(Box<Report>),
    Error(ChildError),
    Nothing(String),
}

fn parse_output(stdout: &[u8]) -> Parsed {
    let text = String::from_utf8_lossy(stdout);
    let text = text.trim();
    if text.is_empty() {
        return Parsed::Nothing("no output on stdout".into());
    }
    let v: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Parsed::Nothing(format!("stdout is not JSON: {e}")),
    };
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => match serde_json::from_value::<Report>(v) {
            Ok(r) => Parsed::Report(Box::new(r)),
            Err(e) => Parsed::Nothing(format!("its {SCHEMA} report does not parse: {e}")),
        },
        Some(ERROR_SCHEMA) => match serde_json::from_value::<ChildError>(v) {
            Ok(e) => Parsed::Error(e),
            Err(e) => Parsed::Nothing(format!("its {ERROR_SCHEMA} object does not parse: {e}")),
        },
        other => Parsed::Nothing(format!("unknown schema {other:?}")),
    }
}

/// Prints and writes `report` as the Vulkan path does; the exit code is the
/// worker's, or 2 when the results could not be written.
fn finish(
    args: &Args,
    report: &Report,
    code: i32,
    dir: &std::path::Path,
    fleet: &Fleet,
) -> anyhow::Result<Exit> {
    let table = greta_smoke::table::render(report);
    let (written, write_error) = if args.no_save {
        (None, None)
    } else {
        match results::write_report(report, dir) {
            Ok(w) => (Some(w), None),
            Err(e) => (None, Some(format!("{e:#}"))),
        }
    };
    let outcome = greta_smoke::Outcome {
        report: report.clone(),
        written,
        write_error,
    };
    // The child's code decides; it agrees with the report's status (the
    // same greta_smoke computed both), and anything else is undecided.
    let exit = match (code, outcome.write_error.is_none()) {
        (_, false) => Exit::Undecided,
        (0, true) => Exit::Pass,
        (1, true) => Exit::Fail,
        _ => Exit::Undecided,
    };
    // --oneline / --prom (docs/fleet.md), as on the Vulkan path.
    if let Some(e) = fleet.finish(&outcome, &table) {
        return Ok(e);
    }
    if args.json {
        eprint!("{table}");
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", report.to_json())?;
        out.flush()?;
    } else {
        print!("{table}");
    }
    if let Some(w) = &outcome.written {
        eprintln!("results: {} (csv: {})", w.json.display(), w.csv.display());
    }
    if let Some(e) = &outcome.write_error {
        eprintln!("greta smoke: could not write results: {e}");
    }
    Ok(fleet.exit(exit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amd(name: &str, gfx: &str) -> (String, Option<String>) {
        (name.into(), Some(gfx.into()))
    }

    #[test]
    fn auto_picks_hip_on_gfx94x_whatever_vulkan_says() {
        let m = Machine {
            amd_gpus: vec![amd("AMD Instinct MI300X VF", "gfx942")],
            vulkan_gpus: vec!["AMD Instinct MI300X (RADV GFX942)".into()],
            ..Machine::default()
        };
        let c = choose(&DeviceChoice::default(), &m);
        assert_eq!(c.backend, BackendChoice::Hip);
        assert!(
            c.why.contains("gfx942") && c.why.contains("Vulkan is known to fail"),
            "{}",
            c.why
        );
    }

    #[test]
    fn auto_keeps_vulkan_where_it_has_a_gpu_or_hip_has_nothing() {
        let radv = Machine {
            amd_gpus: vec![amd("AMD Radeon 760M", "gfx1103")],
            vulkan_gpus: vec!["AMD Radeon 760M (RADV GFX1103_R1)".into()],
            rocm: Some("hipcc /usr/bin/hipcc".into()),
            ..Machine::default()
        };
        let c = choose(&DeviceChoice::default(), &radv);
        assert_eq!(c.backend, BackendChoice::Vulkan);
        assert!(c.why.contains("RADV GFX1103"), "{}", c.why);
        // Lavapipe only, no AMD GPU: Vulkan's CPU device, even with ROCm installed.
        let lavapipe = Machine {
            vulkan_cpus: vec!["llvmpipe (LLVM 15.0.6, 256 bits)".into()],
            rocm: Some("hipcc /usr/bin/hipcc".into()),
            ..Machine::default()
        };
        let c = choose(&DeviceChoice::default(), &lavapipe);
        assert_eq!(c.backend, BackendChoice::Vulkan);
        assert!(
            c.why.contains("only its CPU device") && c.why.contains("no AMD GPU"),
            "{}",
            c.why
        );
        // No Vulkan and no ROCm: Vulkan, whose own error then says what is missing.
        let bare = Machine {
            vulkan_error: Some("no Vulkan loader, libvulkan.so.1".into()),
            ..Machine::default()
        };
        let c = choose(&DeviceChoice::default(), &bare);
        assert_eq!(c.backend, BackendChoice::Vulkan);
        assert!(c.why.contains("no ROCm"), "{}", c.why);
        // --device cpu means lavapipe.
        let c = choose(&"cpu".parse().unwrap(), &radv);
        assert_eq!(c.backend, BackendChoice::Vulkan);
    }

    #[test]
    fn auto_picks_hip_when_vulkan_is_unusable_and_rocm_is_there() {
        let m = Machine {
            amd_gpus: vec![amd("AMD Instinct MI210", "gfx90a")],
            vulkan_error: Some("no Vulkan loader, libvulkan.so.1".into()),
            rocm: Some("libamdhip64 /opt/rocm/lib/libamdhip64.so".into()),
            ..Machine::default()
        };
        let c = choose(&DeviceChoice::default(), &m);
        assert_eq!(c.backend, BackendChoice::Hip);
        assert!(
            c.why.contains("Vulkan is unusable") && c.why.contains("ROCm is present"),
            "{}",
            c.why
        );
        // Vulkan has only lavapipe but the AMD GPU is there for HIP.
        let m = Machine {
            vulkan_cpus: vec!["llvmpipe".into()],
            vulkan_error: None,
            ..m
        };
        let c = choose(&DeviceChoice::default(), &m);
        assert_eq!(c.backend, BackendChoice::Hip);
        assert!(c.why.contains("MI210 (gfx90a)"), "{}", c.why);
    }

    #[test]
    fn auto_picks_cuda_on_nvidia_with_a_driver_and_vulkan_without() {
        let m = Machine {
            nvidia_gpus: vec!["NVIDIA H200".into()],
            vulkan_gpus: vec!["NVIDIA H200".into()],
            cuda: Some("libcuda /usr/lib/libcuda.so.1".into()),
            ..Machine::default()
        };
        let c = choose(&DeviceChoice::default(), &m);
        assert_eq!(c.backend, BackendChoice::Cuda);
        assert!(
            c.why.contains("NVIDIA H200") && c.why.contains("libcuda"),
            "{}",
            c.why
        );
        let c = choose(&DeviceChoice::default(), &Machine { cuda: None, ..m });
        assert_eq!(c.backend, BackendChoice::Vulkan);
    }

    #[test]
    fn device_choices_round_trip_to_the_child_command_line() {
        for s in ["auto", "cpu", "all", "3", "MI300X"] {
            let d: DeviceChoice = s.parse().unwrap();
            assert_eq!(device_arg(&d), s);
            let back: DeviceChoice = device_arg(&d).parse().unwrap();
            assert_eq!(back, d);
        }
    }

    #[test]
    fn child_output_is_a_report_an_error_or_nothing() {
        let e = serde_json::to_vec(&ChildError {
            schema: ERROR_SCHEMA.into(),
            kind: "no_device".into(),
            message: "no HIP device found: x".into(),
        })
        .unwrap();
        match parse_output(&e) {
            Parsed::Error(e) => assert_eq!(
                (e.kind.as_str(), e.message.as_str()),
                ("no_device", "no HIP device found: x")
            ),
            _ => panic!("not an error object"),
        }
        for bad in [
            "",
            "Segmentation fault",
            "{\"schema\":\"x\"}",
            "{\"schema\":\"greta.smoke/v1\"}",
        ] {
            assert!(
                matches!(parse_output(bad.as_bytes()), Parsed::Nothing(_)),
                "{bad}"
            );
        }
    }
}
