//! `greta __gpu …`: the hidden subcommand that runs HIP/CUDA device work in
//! a child process of this same binary (no second binary to build or find).
//!
//! Why a child: a hung GPU can block a driver call forever, and a run-time
//! compiler can abort its process (ROCm 5.2's hiprtc on gfx942). The parent
//! (`greta smoke --backend hip|cuda`, `greta doctor`, `greta install`)
//! bounds the child's time and kills its whole process group; the child
//! enforces each submission's limit itself and leaves with `_exit` after a
//! hang, so driver teardown cannot block it. What crosses the boundary is
//! typed: the argv of a clap command, and serde values on stdout.

use crate::cmd::smoke::Args as SmokeArgs;
use greta_smoke::runtime::gpu::child;
use greta_smoke::{BackendChoice, Options, SmokeError};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::time::Duration;

/// Schema of the error object a child prints instead of a report.
pub const ERROR_SCHEMA: &str = "greta.gpu-child/v1";
/// Schema of `devices` output.
pub const DEVICES_SCHEMA: &str = "greta.gpu-devices/v1";

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Debug)]
// Parsed once per process from the command line: the size of a variant
// costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Compile kernels: a CompileRequest (JSON) on stdin, a CompileAnswer on stdout.
    Compile,
    /// The smoke gates on --backend hip|cuda; prints the greta.smoke/v1 report.
    Smoke(SmokeArgs),
    /// The devices a backend sees (greta.gpu-devices/v1).
    Devices {
        #[arg(long)]
        backend: String,
    },
    /// Compile the bundled kernels with this machine's hiprtc for --target
    /// (no GPU needed), through the cache and compile child the device path
    /// uses; prints greta.gpu-kernels/v1.
    BuildKernels {
        #[arg(long)]
        target: Vec<String>,
        #[arg(long)]
        cache_dir: Option<std::path::PathBuf>,
        /// Also report the compiler's registers, LDS and occupancy per
        /// kernel (cmd/gpu_resources.rs).
        #[arg(long)]
        resource_usage: bool,
    },
}

/// `greta __gpu build-kernels` output, one entry per target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelsAnswer {
    pub schema: String,
    pub runtime: Option<String>,
    pub built: Vec<BuiltTarget>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuiltTarget {
    pub target: String,
    pub compiler: Option<String>,
    pub object: Option<greta_smoke::runtime::gpu::CachedObject>,
    pub error: Option<String>,
    /// With `--resource-usage`: the compiler's figures per kernel, or why
    /// there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<crate::cmd::gpu_resources::KernelResources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
}

/// Why a child could not produce a report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChildError {
    pub schema: String,
    pub kind: String,
    pub message: String,
}

/// `greta __gpu devices` output.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DevicesAnswer {
    pub schema: String,
    pub backend: String,
    pub devices: Vec<greta_smoke::runtime::DeviceInfo>,
    /// `None` when the listing worked.
    pub error: Option<String>,
    pub no_device: bool,
    /// What kind of failure `error` is, so that readers (the doctor's HIP
    /// check) decide on the kind, not on its words. Absent in answers
    /// recorded before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<DevicesError>,
}

pub use greta_vocab::DevicesError;

/// The kind of a listing failure, from the runtime's typed error.
fn devices_error_of(e: &greta_smoke::runtime::RuntimeError) -> DevicesError {
    use greta_smoke::runtime::RuntimeError;
    match e {
        RuntimeError::NoDevice(_) => DevicesError::NoDevice,
        RuntimeError::LoaderMissing(_) => DevicesError::LoaderMissing,
        _ => DevicesError::Other,
    }
}

/// The helper every compile and device child is started through.
pub fn register_helper() {
    if let Ok(exe) = std::env::current_exe() {
        child::set_helper(child::Helper {
            exe,
            args: vec!["__gpu".into()],
        });
    }
}

fn print(v: &impl Serialize) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, v);
    let _ = writeln!(out);
    let _ = out.flush();
}

pub fn run(args: Args) -> u8 {
    match args.command {
        Command::Compile => {
            let mut out = std::io::stdout().lock();
            greta_smoke::runtime::gpu::serve_compile(std::io::stdin().lock(), &mut out)
        }
        Command::Devices { backend } => devices(&backend),
        Command::Smoke(a) => smoke(a),
        Command::BuildKernels {
            target,
            cache_dir,
            resource_usage,
        } => build_kernels(&target, cache_dir, resource_usage),
    }
}

fn build_kernels(
    targets: &[String],
    cache_dir: Option<std::path::PathBuf>,
    resource_usage: bool,
) -> u8 {
    use greta_smoke::runtime::gpu::{Api, Driver};
    use greta_smoke::runtime::gpu::{KernelCache, KernelSources};
    use greta_smoke::runtime::hip::{compiler_for_target, Hip};
    let hip = match Hip::open() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("greta: {e}");
            print(&KernelsAnswer {
                schema: "greta.gpu-kernels/v1".into(),
                runtime: None,
                built: vec![],
            });
            return 2;
        }
    };
    let cache = KernelCache::new(cache_dir.unwrap_or_else(KernelCache::default_dir));
    let sources = KernelSources::bundled();
    let mut built = Vec::new();
    for t in targets {
        let r = compiler_for_target(&hip, t).and_then(|c| {
            let o = cache.get_or_build(&c, &sources, Api::Hip)?;
            Ok((c, o))
        });
        built.push(match r {
            Ok((c, o)) => {
                let (resources, resources_error) = if resource_usage {
                    let unit = sources.translation_unit(Api::Hip);
                    match crate::cmd::gpu_resources::measure(&c, &unit, &o.path) {
                        Ok(r) => (r, None),
                        Err(e) => {
                            eprintln!("greta: {t}: resource usage: {e}");
                            (vec![], Some(e))
                        }
                    }
                } else {
                    (vec![], None)
                };
                BuiltTarget {
                    target: t.clone(),
                    compiler: Some(c.library.to_string()),
                    object: Some(o),
                    error: None,
                    resources,
                    resources_error,
                }
            }
            Err(e) => {
                eprintln!("greta: {t}: {e}");
                BuiltTarget {
                    target: t.clone(),
                    compiler: None,
                    object: None,
                    error: Some(e.to_string()),
                    resources: vec![],
                    resources_error: None,
                }
            }
        });
    }
    let ok = built
        .iter()
        .all(|b| b.error.is_none() && b.resources_error.is_none());
    print(&KernelsAnswer {
        schema: "greta.gpu-kernels/v1".into(),
        runtime: Some(hip.library().to_string()),
        built,
    });
    if ok {
        0
    } else {
        1
    }
}

fn devices(backend: &str) -> u8 {
    let kind = match backend {
        "hip" => greta_smoke::runtime::BackendKind::Hip,
        "cuda" => greta_smoke::runtime::BackendKind::Cuda,
        other => {
            eprintln!("greta __gpu devices: unknown backend {other:?}");
            return 2;
        }
    };
    let (devices, error, error_kind) = match greta_smoke::runtime::list_devices(kind) {
        Ok(d) => (d, None, None),
        Err(e) => (vec![], Some(e.to_string()), Some(devices_error_of(&e))),
    };
    let no_device = matches!(
        error_kind,
        Some(DevicesError::NoDevice | DevicesError::LoaderMissing)
    );
    let code = if devices.is_empty() { 2 } else { 0 };
    print(&DevicesAnswer {
        schema: DEVICES_SCHEMA.into(),
        backend: backend.into(),
        devices,
        error,
        no_device,
        error_kind,
    });
    code
}

fn smoke(a: SmokeArgs) -> u8 {
    let backend = a.backend;
    if !matches!(backend, BackendChoice::Hip | BackendChoice::Cuda) {
        print(&ChildError {
            schema: ERROR_SCHEMA.into(),
            kind: "usage".into(),
            message: "the GPU child runs --backend hip or cuda only".into(),
        });
        return 2;
    }
    let opts = Options {
        profile: a.profile,
        device: a.device,
        backend,
        gates: a.gates,
        repeat: a.repeat,
        timeout: Duration::from_secs_f64(
            a.timeout.unwrap_or_else(|| a.profile.default_timeout_s()),
        ),
        out_dir: None,
        write_results: false,
        baseline: a.baseline,
        floor_fraction: a.floor_fraction,
        deny_list: a.deny_list,
        include_test_gates: a.include_test_gates,
        seed: a.seed,
        progress: false,
        // One device per child: peers are compared by the parent's run
        // (--device all), faults come as GRETA_SMOKE_INJECT from the parent.
        peer_fraction: greta_smoke::DEFAULT_PEER_FRACTION,
        inject: std::env::var(greta_vocab::EnvVars::GRETA_SMOKE_INJECT)
            .map(|v| {
                v.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    };
    match greta_smoke::run_profile(&opts) {
        Ok(outcome) => {
            print(&outcome.report);
            let code = outcome.report.status.exit_code();
            if outcome.report.devices.iter().any(|d| d.lost.is_some()) {
                // A hung GPU may block the driver's teardown at exit: leave now.
                let _ = std::io::stderr().flush();
                // SAFETY: _exit ends the process without running exit handlers.
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
            print(&ChildError {
                schema: ERROR_SCHEMA.into(),
                kind: kind.into(),
                message: e.to_string(),
            });
            2
        }
    }
}
