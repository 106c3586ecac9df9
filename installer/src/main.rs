//! `greta`: one binary for doctor, install and smoke.
//!
//! Every subcommand lives in its own module under `cmd/` and returns an
//! [`exit::Exit`]; an `Err` means greta itself could not decide (exit 2).

use clap::{CommandFactory, Parser, Subcommand};
use greta::{cmd, exit};
use std::process::ExitCode;

/// The first steps and the exit codes, under `greta --help` (as rustup's
/// "common commands" do): a new user sees the path before the details.
const FOOTER: &str = "\
Getting started:
  greta doctor     find the GPU stack; every problem comes with its fix
  greta install    install the pinned torch/triton/jax profile this machine gets
  greta smoke      run the device gates against CPU references
  greta report     draw a smoke run as one HTML page

Exit codes (every command):
  0  everything checked passed
  1  a check or gate failed
  2  could not decide: bad arguments, no usable device, unreadable input

Machine-readable output: --json (schemas in docs/). Colour: --color, NO_COLOR.
Shell completions: greta completions bash|zsh|fish; manual: man greta.";

#[derive(Parser)]
#[command(
    name = "greta",
    version,
    about = "Get a GPU machine ready for LLM work (AMD first; NVIDIA and CPU too)",
    after_help = FOOTER
)]
struct Cli {
    /// More log output on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Colour the output: auto (on a terminal, unless NO_COLOR or TERM=dumb), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
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
    /// Print a shell completion script (bash, zsh or fish) on stdout.
    #[command(after_help = "\
bash: greta completions bash > ~/.local/share/bash-completion/completions/greta
zsh:  greta completions zsh > ~/.zfunc/_greta   (with fpath+=(~/.zfunc) before compinit)
fish: greta completions fish > ~/.config/fish/completions/greta.fish")]
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print greta's manual page (roff) on stdout: `greta man | man -l -`.
    Man {
        /// Write every page instead (greta.1 and one per subcommand) into DIR.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Internal: HIP/CUDA device work in a child process of greta itself.
    #[command(name = "__gpu", hide = true)]
    Gpu(cmd::gpu::Args),
}

/// The shells `greta completions` writes for.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

fn main() -> ExitCode {
    // clap exits 2 on usage errors, which matches our contract.
    let cli = Cli::parse();
    // One colour decision for every table and report (before any output).
    greta_vocab::colour::set_choice(cli.color.parse().unwrap_or_default());
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
        Command::Completions { shell } => completions(shell),
        Command::Man { dir } => man(dir),
        Command::Gpu(a) => return ExitCode::from(cmd::gpu::run(a)),
    };
    // A stop signal being handled ends greta by the signal, not this code.
    greta::stop::hold_if_stopped();
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            // An error may quote a path, a file's value or a tool's output.
            greta_vocab::stderr::print(&format!(
                "greta: error: {}\n",
                greta_vocab::VisibleLines(&format!("{e:#}"))
            ));
            exit::Exit::Undecided.into()
        }
    }
}

/// The completion script, generated from this very command line's definition.
fn completions(shell: Shell) -> anyhow::Result<exit::Exit> {
    let mut buf = Vec::new();
    let mut c = Cli::command();
    match shell {
        Shell::Bash => {
            clap_complete::generate(clap_complete::Shell::Bash, &mut c, "greta", &mut buf)
        }
        Shell::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut c, "greta", &mut buf),
        Shell::Fish => {
            clap_complete::generate(clap_complete::Shell::Fish, &mut c, "greta", &mut buf)
        }
    }
    greta::out_text(&String::from_utf8(buf)?);
    Ok(exit::Exit::Pass)
}

/// `greta.1` on stdout, or with `--dir` every page (`greta.1`,
/// `greta-doctor.1`, `greta-lock-show.1`, ...), from the same definition.
fn man(dir: Option<std::path::PathBuf>) -> anyhow::Result<exit::Exit> {
    let c = Cli::command();
    if let Some(dir) = dir {
        clap_mangen::generate_to(c, &dir)
            .map_err(|e| anyhow::anyhow!("writing the manual pages to {}: {e}", dir.display()))?;
        return Ok(exit::Exit::Pass);
    }
    let mut buf = Vec::new();
    clap_mangen::Man::new(c).render(&mut buf)?;
    greta::out_text(&String::from_utf8(buf)?);
    Ok(exit::Exit::Pass)
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
        // Each event wrapped to the terminal's width (whole to a pipe or a file).
        .with_writer(greta::log_event)
        // Colour codes only on a terminal: a log file or CI capture gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
