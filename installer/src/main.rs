//! `greta`: one binary for doctor, install and smoke.
//!
//! Every subcommand lives in its own module under `cmd/` and returns an
//! [`exit::Exit`]; an `Err` means greta itself could not decide (exit 2).

use clap::{Parser, Subcommand};
use greta::{cmd, exit};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "greta",
    version,
    about = "Get a GPU machine ready for LLM work (AMD first; NVIDIA and CPU too)"
)]
struct Cli {
    /// More log output on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Find the GPU stack and explain every problem with a fix.
    Doctor(cmd::doctor::Args),
    /// Install the pinned torch + triton + jax profile for this machine.
    Install(cmd::install::Args),
    /// Run the device gates against CPU references.
    Smoke(cmd::smoke::Args),
    /// Draw smoke results as one self-contained HTML page (bars, fleet grid, history).
    Report(cmd::report::Args),
    /// Inspect, check and update the pinned profiles in lock/.
    Lock(cmd::lock::Args),
    /// Stage a profile's wheels for a node without internet.
    Bundle(cmd::bundle::Args),
    /// List or remove greta environments.
    Env(cmd::env::Args),
    /// Internal: HIP/CUDA device work in a child process of greta itself.
    #[command(name = "__gpu", hide = true)]
    Gpu(cmd::gpu::Args),
}

fn main() -> ExitCode {
    // clap exits 2 on usage errors, which matches our contract.
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    // Compiles and device work run in children of this same binary.
    cmd::gpu::register_helper();
    let result = match cli.command {
        Command::Doctor(a) => cmd::doctor::run(a, cli.verbose),
        Command::Install(a) => cmd::install::run(a, cli.verbose),
        Command::Smoke(a) => cmd::smoke::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Lock(a) => cmd::lock::run(a, cli.verbose),
        Command::Bundle(a) => cmd::bundle::run(a),
        Command::Env(a) => cmd::env::run(a),
        Command::Gpu(a) => return ExitCode::from(cmd::gpu::run(a)),
    };
    // A stop signal being handled ends greta by the signal, not this code.
    greta::stop::hold_if_stopped();
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            // An error may quote a path, a file's value or a tool's output.
            eprintln!(
                "greta: error: {}",
                greta_vocab::VisibleLines(&format!("{e:#}"))
            );
            exit::Exit::Undecided.into()
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: a log file or CI capture gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
