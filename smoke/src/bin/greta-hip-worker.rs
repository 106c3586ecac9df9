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
//! - `ceiling` (feature `hip-blas`): greta's GEMM and hipBLAS's on the same
//!   inputs, both checked against the reference: the in-run ceiling.

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
    /// greta's GEMM next to hipBLAS's at one shape, both checked (`greta.hip-ceiling/v1`).
    #[cfg(feature = "hip-blas")]
    Ceiling {
        #[arg(long, default_value_t = 2048)]
        m: usize,
        #[arg(long, default_value_t = 2048)]
        n: usize,
        #[arg(long, default_value_t = 2048)]
        k: usize,
        /// f16 inputs, f32 accumulation (GemmF16) instead of f32.
        #[arg(long)]
        f16: bool,
        #[arg(long, default_value_t = 10)]
        repeat: u32,
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
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
        #[cfg(feature = "hip-blas")]
        Command::Ceiling {
            m,
            n,
            k,
            f16,
            repeat,
            timeout,
            seed,
        } => ceiling::run(m, n, k, f16, repeat, timeout, seed),
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
        peer_fraction: greta_smoke::peers::DEFAULT_PEER_FRACTION,
        inject: Vec::new(),
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

#[cfg(feature = "hip-blas")]
mod ceiling {
    use super::print_json;
    use greta_runtime::hip::HipBackend;
    use greta_runtime::{Backend, DeviceSelect, Op, RunOpts, RunStats, RuntimeError};
    use greta_smoke::check::Tolerance;
    use greta_smoke::inputs::prepare;
    use greta_smoke::verify::verify;
    use serde_json::json;
    use std::time::Duration;

    /// Runs one GEMM shape through greta's kernel and through hipBLAS, on the
    /// same inputs, and prints both rates and both checks.
    pub fn run(
        m: usize,
        n: usize,
        k: usize,
        f16: bool,
        repeat: u32,
        timeout: f64,
        seed: u64,
    ) -> u8 {
        let op = if f16 {
            Op::GemmF16 { m, n, k }
        } else {
            Op::GemmF32 { m, n, k }
        };
        if let Err(e) = op.validate() {
            eprintln!("greta-hip-worker: {e}");
            return 2;
        }
        if !(timeout.is_finite() && timeout > 0.0) || repeat == 0 {
            eprintln!("greta-hip-worker: --timeout must be > 0 and --repeat >= 1");
            return 2;
        }
        let mut dev = match HipBackend::open(&DeviceSelect::Auto) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("greta-hip-worker: {e}");
                return 2;
            }
        };
        let opts = RunOpts {
            repeats: repeat,
            timeout: Duration::from_secs_f64(timeout),
            tuning: None,
        };
        let tol = if f16 {
            Tolerance::FP16_ACC32
        } else {
            Tolerance::FP32
        };
        let p = prepare(&op, false, seed);
        let one = |hipblas: bool, dev: &mut HipBackend| -> serde_json::Value {
            let mut out = p.outputs.clone();
            let r: Result<RunStats, RuntimeError> = if hipblas {
                dev.run_hipblas(&op, &p.inputs, &mut out, &opts)
            } else {
                dev.run(&op, &p.inputs, &mut out, &opts)
            };
            match r {
                Ok(stats) => {
                    let check = verify(&p, &out, tol, seed);
                    let ns = stats.median_ns().max(1) as f64;
                    json!({
                        "kernel": stats.kernel,
                        "median_ns": stats.median_ns(),
                        "tflops": op.flops() as f64 / ns / 1e3,
                        "pass": check.pass,
                        "rel_err": check.rel_err,
                        "reason": check.reason,
                    })
                }
                Err(e) => json!({ "error": e.to_string() }),
            }
        };
        let custom = one(false, &mut dev);
        let hipblas = one(true, &mut dev);
        let pass = custom["pass"] == true && hipblas["pass"] == true;
        print_json(&json!({
            "schema": "greta.hip-ceiling/v1",
            "device": dev.info().name,
            "gfx": dev.hip_info().gfx,
            "op": op.to_string(),
            "repeat": repeat,
            "greta": custom,
            "hipblas": hipblas,
        }));
        if pass {
            0
        } else {
            1
        }
    }
}
