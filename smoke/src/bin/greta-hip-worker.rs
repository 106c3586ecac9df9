//! `greta-hip-worker`: the HIP half of greta, built on the target machine.
//!
//! The `greta` binary must start on machines without ROCm, so it does not
//! link libamdhip64. This worker does (cargo feature `hip`): `greta install`
//! (or `greta smoke --backend hip` on first use) builds it against the
//! machine's own ROCm, and `greta` runs it and reads its JSON on stdout.
//! Human messages go to stderr. Exit codes are greta's: 0 pass, 1 a check
//! failed, 2 could not decide (no HIP device, no hipcc, bad flags).
//!
//! Subcommands:
//! - `smoke`: the smoke gates through the HIP backend; prints the
//!   `greta.smoke/v1` report (the same gates, tolerances and schema as Vulkan).
//! - `devices`: HIP devices as `greta.hip-devices/v1` JSON (doctor's live check).
//! - `build-kernels`: compiles (or finds in the cache) the HIP kernels for
//!   the detected or named gfx targets (`greta install`).

use clap::{Parser, Subcommand};
use greta_runtime::hip::{self, CompileError, HipError, Hipcc, KernelCache, KernelSources};
use greta_smoke::{BackendChoice, DeviceChoice, Options, Profile, SmokeError};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Schema of an error report of `smoke` (no greta.smoke/v1 report exists then).
const WORKER_SCHEMA: &str = "greta.hip-worker/v1";
/// Schema of `devices` output.
const DEVICES_SCHEMA: &str = "greta.hip-devices/v1";
/// Schema of `build-kernels` output.
const KERNELS_SCHEMA: &str = "greta.hip-kernels/v1";

#[derive(Parser)]
#[command(
    name = "greta-hip-worker",
    version,
    about = "greta's HIP backend worker (built on the target against its ROCm)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the smoke gates on HIP and print the greta.smoke/v1 report.
    Smoke(SmokeArgs),
    /// List HIP devices (JSON); exit 2 with the reason when there are none.
    Devices,
    /// Build the HIP kernels for this machine's GPU (or --gfx targets) into the cache.
    BuildKernels {
        /// Target(s) to build for instead of the detected GPU's (repeatable).
        #[arg(long)]
        gfx: Vec<String>,
        /// Code-object cache directory (default: $XDG_CACHE_HOME/greta/hip-kernels).
        #[arg(long)]
        cache_dir: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct SmokeArgs {
    #[arg(long, default_value = "default")]
    profile: Profile,
    /// N, all, or a name fragment.
    #[arg(long, default_value = "auto")]
    device: DeviceChoice,
    /// Only these gate ids (repeatable).
    #[arg(long = "gate")]
    gates: Vec<String>,
    #[arg(long)]
    repeat: Option<u32>,
    /// Seconds each submission may take.
    #[arg(long, default_value_t = greta_smoke::session::DEFAULT_TIMEOUT_S as f64)]
    timeout: f64,
    #[arg(long)]
    baseline: Option<PathBuf>,
    #[arg(long, default_value_t = greta_smoke::floors::DEFAULT_FLOOR_FRACTION)]
    floor_fraction: f64,
    #[arg(long)]
    deny_list: Option<PathBuf>,
    #[arg(long)]
    seed: Option<u64>,
    /// Also write the dated JSON + CSV into this directory (greta usually
    /// writes them itself from stdout).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Make the test-only gates selectable (tests only).
    #[arg(long, hide = true)]
    include_test_gates: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Smoke(a) => smoke(a),
        Command::Devices => devices(),
        Command::BuildKernels { gfx, cache_dir } => build_kernels(gfx, cache_dir),
    };
    ExitCode::from(code)
}

fn print_json(v: &impl serde::Serialize) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, v);
    let _ = writeln!(out);
    let _ = out.flush();
}

fn smoke(a: SmokeArgs) -> u8 {
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        eprintln!(
            "greta-hip-worker: --timeout must be a positive number of seconds, got {}",
            a.timeout
        );
        return 2;
    }
    // Ask HIP first: with no device the answer is exit 2 and HIP's reason,
    // before any gate is planned.
    if let Err(e) = hip::device::device_count() {
        eprintln!("greta-hip-worker: {e}");
        let kind = if e.is_no_device() { "no_device" } else { "hip" };
        print_json(
            &json!({ "schema": WORKER_SCHEMA, "error": { "kind": kind, "message": e.to_string() } }),
        );
        return 2;
    }
    let opts = Options {
        profile: a.profile,
        device: a.device,
        backend: BackendChoice::Hip,
        gates: a.gates,
        repeat: a.repeat,
        timeout: Duration::from_secs_f64(a.timeout),
        write_results: a.out.is_some(),
        out_dir: a.out,
        baseline: a.baseline,
        floor_fraction: a.floor_fraction,
        deny_list: a.deny_list,
        include_test_gates: a.include_test_gates,
        seed: a.seed,
        progress: false,
    };
    match greta_smoke::run_profile(&opts) {
        Ok(outcome) => {
            print_json(&outcome.report);
            if let Some(e) = &outcome.write_error {
                eprintln!("greta-hip-worker: could not write results: {e}");
            }
            let code = outcome.exit_code();
            if outcome.report.devices.iter().any(|d| d.lost.is_some()) {
                // A hung GPU may block HIP's teardown at exit; leave now.
                let _ = std::io::stderr().flush();
                // SAFETY: _exit ends the process without running atexit handlers.
                unsafe { libc::_exit(code as i32) };
            }
            code
        }
        Err(e) => {
            let kind = match e {
                SmokeError::Usage(_) => "usage",
                SmokeError::NoDevice(_) => "no_device",
                SmokeError::Input(_) => "input",
            };
            eprintln!("greta-hip-worker: {e}");
            print_json(
                &json!({ "schema": WORKER_SCHEMA, "error": { "kind": kind, "message": e.to_string() } }),
            );
            2
        }
    }
}

fn devices() -> u8 {
    let hipcc = Hipcc::locate();
    let hipcc_json = match &hipcc {
        Ok(h) => json!({ "path": h.path, "version": h.short_version() }),
        Err(e) => json!({ "error": e.to_string() }),
    };
    match hip::list_devices() {
        Ok(list) => {
            print_json(
                &json!({ "schema": DEVICES_SCHEMA, "devices": list, "hipcc": hipcc_json, "error": null }),
            );
            if list.is_empty() {
                2
            } else {
                0
            }
        }
        Err(e) => {
            eprintln!("greta-hip-worker: {e}");
            print_json(
                &json!({ "schema": DEVICES_SCHEMA, "devices": [], "hipcc": hipcc_json, "error": e.to_string() }),
            );
            2
        }
    }
}

fn build_kernels(gfx: Vec<String>, cache_dir: Option<PathBuf>) -> u8 {
    let fail = |what: String| {
        eprintln!("greta-hip-worker: {what}");
        print_json(&json!({ "schema": KERNELS_SCHEMA, "built": [], "error": what }));
        2
    };
    let targets = if gfx.is_empty() {
        match hip::device::device_count().and_then(|n| {
            (0..n)
                .map(hip::device::query)
                .collect::<Result<Vec<_>, _>>()
        }) {
            Ok(devs) => {
                let mut t: Vec<String> = devs.into_iter().map(|d| d.gfx).collect();
                t.dedup();
                t
            }
            Err(e @ HipError::NoDevice { .. }) => {
                return fail(format!(
                    "{e} (name a target with --gfx to build without a GPU)"
                ))
            }
            Err(e) => return fail(e.to_string()),
        }
    } else {
        gfx
    };
    let hipcc = match Hipcc::locate() {
        Ok(h) => h,
        Err(e) => return fail(e.to_string()),
    };
    let cache = KernelCache::new(cache_dir.unwrap_or_else(KernelCache::default_dir));
    let sources = KernelSources::bundled();
    let mut built = Vec::new();
    for t in &targets {
        eprintln!(
            "greta-hip-worker: building HIP kernels for {t} with {} ({})",
            hipcc.path.display(),
            hipcc.short_version()
        );
        match cache.get_or_build(&hipcc, &sources, t) {
            Ok(obj) => {
                eprintln!(
                    "greta-hip-worker: {t}: {} {}",
                    if obj.compiled {
                        "built"
                    } else {
                        "already cached:"
                    },
                    obj.path.display()
                );
                built.push(
                    json!({ "gfx": t, "path": obj.path, "compiled": obj.compiled, "key": obj.key }),
                );
            }
            Err(e) => {
                let unsupported = matches!(e, CompileError::UnsupportedTarget { .. });
                eprintln!("greta-hip-worker: {e}");
                print_json(&json!({
                    "schema": KERNELS_SCHEMA,
                    "built": built,
                    "error": e.to_string(),
                    "unsupported_target": unsupported,
                }));
                return if unsupported { 2 } else { 1 };
            }
        }
    }
    print_json(&json!({
        "schema": KERNELS_SCHEMA,
        "built": built,
        "hipcc": { "path": hipcc.path, "version": hipcc.short_version() },
        "sources_hash": sources.hash(),
        "error": null,
    }));
    0
}
