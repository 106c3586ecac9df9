//! `greta __gpu …`: the hidden subcommand that runs HIP/CUDA device work in
//! a child process of this same binary (no second binary to build or find).
//!
//! Why a child: a hung GPU can block a driver call forever, and a run-time
//! compiler can abort its process (ROCm 5.2's hiprtc on gfx942). The parent
//! (`greta smoke --backend hip|cuda`, `greta doctor`, `greta install`)
//! bounds the child's time and kills its whole process group; the child
//! enforces each submission's limit itself and leaves with `_exit` after a
//! hang, so driver teardown cannot block it. The device child's request
//! and reply are `greta_smoke::gpu_child`'s types; this is their command
//! line: `serve` (a request on stdin, what greta's own parents use) and
//! `smoke` / `devices` (the same requests from flags, for a person).

use crate::cmd::smoke::Args as SmokeArgs;
use greta_runtime::{Api, BuildRequest};
use greta_smoke::gpu_child::{self, DevicesRequest, GpuBackend, Request};
use greta_smoke::BackendChoice;
use greta_vocab::child;
use serde::Serialize;
use std::io::Write;

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
    /// The device child: a greta_smoke::gpu_child::Request (JSON) on stdin,
    /// its Reply on stdout.
    Serve,
    /// The smoke gates on --backend hip|cuda; prints the greta.smoke/v1 report.
    Smoke(SmokeArgs),
    /// The devices a backend sees (greta.gpu-devices/v1).
    Devices {
        #[arg(long)]
        backend: String,
    },
    /// Compile the bundled kernels with this machine's hiprtc (--backend
    /// hip, gfx targets) or NVRTC (--backend cuda, sm_XX targets) for
    /// --target (no GPU and no driver needed), through the cache and compile
    /// child the device path uses; prints greta.gpu-kernels/v1.
    BuildKernels {
        #[arg(long, value_enum, default_value = "hip")]
        backend: KernelBackend,
        #[arg(long)]
        target: Vec<String>,
        #[arg(long)]
        cache_dir: Option<std::path::PathBuf>,
        /// Also report the compiler's registers, LDS and occupancy per
        /// kernel (the runtime's build_kernels::resources).
        #[arg(long)]
        resource_usage: bool,
    },
}

/// Whose compiler `build-kernels` uses.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum KernelBackend {
    Hip,
    Cuda,
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
            greta_runtime::serve_compile(std::io::stdin().lock(), &mut out)
        }
        Command::Serve => match Request::read(std::io::stdin().lock()) {
            Ok(req) => answer(decide_auto(req)),
            Err(e) => {
                eprintln!("greta __gpu serve: {e}");
                2
            }
        },
        Command::Devices { backend } => match backend.parse::<GpuBackend>() {
            Ok(backend) => answer(Request::Devices(DevicesRequest { backend })),
            Err(_) => {
                eprintln!("greta __gpu devices: unknown backend {backend:?}");
                2
            }
        },
        Command::Smoke(a) => answer(Request::Smoke(crate::cmd::smoke::request(&a))),
        Command::BuildKernels {
            backend,
            target,
            cache_dir,
            resource_usage,
        } => {
            let (answer, code) = greta_runtime::build_kernels(&BuildRequest {
                api: match backend {
                    KernelBackend::Hip => Api::Hip,
                    KernelBackend::Cuda => Api::Cuda,
                },
                targets: target,
                cache_dir,
                resource_usage,
            });
            print(&answer);
            code
        }
    }
}

/// A smoke request for `--backend auto` decided here, in the child, as
/// `greta smoke` decides it (and says why on stderr): a parent that asks
/// for `auto` (`greta install`'s proof step) loads no GPU library itself.
fn decide_auto(req: Request) -> Request {
    match req {
        Request::Smoke(mut s) if s.backend == BackendChoice::Auto => {
            let c = greta_smoke::auto::choose_with(&s.device, crate::cmd::smoke::auto::seen);
            eprintln!(
                "greta smoke: backend {}: {}",
                c.backend.as_str(),
                greta_vocab::Visible(&c.why)
            );
            s.backend = c.run_as();
            Request::Smoke(s)
        }
        req => req,
    }
}

/// Serves `req` and prints its reply; after a lost device, leaves at once.
fn answer(req: Request) -> u8 {
    let served = gpu_child::serve(req);
    print(&served.reply);
    if served.device_lost {
        // A hung GPU may block the driver's teardown at exit: leave now.
        let _ = std::io::stderr().flush();
        // SAFETY: _exit ends the process without running exit handlers;
        // stdout was flushed by `print`.
        unsafe { libc::_exit(i32::from(served.code)) };
    }
    served.code
}
