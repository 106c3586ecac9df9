//! `greta smoke`: run the device gates (greta-smoke) and exit 0 pass,
//! 1 a gate failed, 2 could not run. All the work is in greta-smoke; this
//! is flags, output and exit codes.

pub(crate) mod auto;
mod fleet;
mod frameworks;
mod on_signal;
mod refused;

use crate::exit::Exit;
use greta_smoke::gpu_child::{ErrorKind, TuneRequest};
use greta_smoke::Catalog;
use greta_smoke::{BackendChoice, DeviceChoice, Options, Outcome, Profile, SmokeRequest};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 every gate passed, 1 a gate failed, 2 could not run \
(no usable device, bad flags, bad baseline). Gates and profiles: docs/smoke.md, --list-gates."
)]
pub struct Args {
    /// Gate set: ultrasafe, fill, default, standard, perf, health, frameworks.
    #[arg(long, default_value = "default", value_parser = parse_profile)]
    pub profile: Profile,
    /// Device: an index from the backend's list, `all`, `cpu` (lavapipe), `auto`, or a name fragment.
    #[arg(long, default_value = "auto", value_parser = parse_device)]
    pub device: DeviceChoice,
    /// Run only this gate (repeatable; any profile's gate id, see --list-gates).
    #[arg(long = "gate", value_name = "ID")]
    pub gates: Vec<String>,
    /// Clean repeats each gate needs, each with fresh random inputs (default: the profile's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub repeat: Option<u32>,
    /// Limit for each GPU submission, in seconds; a timeout fails the gate and ends the device's run
    /// [default: 10; standard 30, perf 60]
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    pub timeout: Option<f64>,
    /// Print the result JSON (schema greta.smoke/v1) on stdout; the table goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Directory for the dated result JSON and CSV (default: $XDG_DATA_HOME/greta/smoke).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// An earlier result JSON: fail a gate whose rate falls under --floor-fraction of its rate there.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Fraction of the baseline (or device-class) rate a gate must reach.
    #[arg(long, value_name = "F", default_value_t = greta_smoke::DEFAULT_FLOOR_FRACTION)]
    pub floor_fraction: f64,
    /// List every gate and profile, then exit (with --json: schema greta.smoke-gates/v1).
    #[arg(long)]
    pub list_gates: bool,
    /// Device backend: auto, vulkan, hip, cuda (auto: HIP on gfx94x, CUDA on NVIDIA, else Vulkan; it says why).
    #[arg(long, default_value = "auto", value_parser = parse_backend)]
    pub backend: BackendChoice,
    /// Extra f16 deny-list file (format of smoke/data/deny.toml), on top of the built-in list.
    #[arg(long, value_name = "FILE")]
    pub deny_list: Option<PathBuf>,
    /// Base seed of the random inputs (default: from the clock; always recorded in the results).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Tune instead of testing: time every tuning candidate of each gate (the profile's, or
    /// --gate), check each against the reference, and store the fastest correct one in the
    /// device's tuning cache ($XDG_CACHE_HOME/greta/tuning, or GRETA_TUNING_CACHE=DIR|off),
    /// which later runs use. Vulkan, HIP and CUDA (each backend's kernels have their own entries).
    #[arg(long)]
    pub tune: bool,
    /// Compile only (Vulkan): plan every gate of every profile (or --gate) for the device and
    /// create each pipeline with the driver's statistics captured (VGPRs, SGPRs, spills, scratch,
    /// LDS, waves per SIMD, code size, matrix instructions); no pipeline cache, no buffers,
    /// nothing submitted. Exit 1 when a pipeline could not be created. docs/radeon.md.
    #[arg(long, conflicts_with_all = ["tune", "list_gates"])]
    pub compile_only: bool,
    /// frameworks profile: the greta env to check (default: the active env, else python3 on PATH).
    #[arg(long, value_name = "NAME", conflicts_with = "python")]
    pub env: Option<String>,
    /// frameworks profile: the interpreter to check, as its user runs it (not isolated).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// With several devices (--device all): fail a gate whose rate is under this fraction of the
    /// node's median for it (an outlier among its siblings), even above its floor.
    #[arg(long, value_name = "F", default_value_t = greta_smoke::DEFAULT_PEER_FRACTION)]
    pub peer_fraction: f64,
    /// For health checks (Kubernetes node-problem-detector, Slurm): print exactly one short line
    /// on stdout (OK: / FAIL: / UNKNOWN: ...); the table goes to stderr. Exit codes as always.
    #[arg(long, conflicts_with = "json")]
    pub oneline: bool,
    /// Also write the run as a Prometheus textfile (node_exporter textfile collector), atomically.
    #[arg(long, value_name = "FILE")]
    pub prom: Option<PathBuf>,
    /// Do not write the dated JSON/CSV result files (health checks that run every few minutes);
    /// with --tune, do not store the winners in the tuning cache.
    #[arg(long)]
    pub no_save: bool,
    /// Also draw the run as one self-contained HTML page (as `greta report` does).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// TEST-ONLY: inject a fault (corrupt:D[:GATE], slow:D[:F], hang:D[:GATE]); docs/fleet.md.
    #[arg(
        long,
        hide = true,
        value_name = "SPEC",
        env = greta_vocab::EnvVars::GRETA_SMOKE_INJECT,
        value_delimiter = ','
    )]
    pub inject: Vec<String>,
    /// TEST-ONLY: make the deliberately broken/slow gates selectable (also GRETA_SMOKE_TEST_GATES=1).
    #[arg(
        long,
        hide = true,
        env = greta_vocab::EnvVars::GRETA_SMOKE_TEST_GATES,
        value_parser = parse_flag,
        default_value = "0",
        num_args = 0..=1,
        default_missing_value = "1"
    )]
    pub include_test_gates: bool,
}

/// `--compile-only`: the report as a table (or JSON with --json); exit 1
/// when a pipeline could not be created, 2 when nothing could run.
fn compile_only(args: &Args) -> anyhow::Result<Exit> {
    if let Some(refused) = refused::refused(args, refused::Mode::CompileOnly) {
        crate::errln!("greta smoke: bad arguments: {refused}");
        return Ok(Exit::Undecided);
    }
    if !matches!(args.backend, BackendChoice::Auto | BackendChoice::Vulkan) {
        crate::errln!("greta smoke: bad arguments: --compile-only is for the Vulkan backend");
        return Ok(Exit::Undecided);
    }
    let DeviceChoice::One(select) = &args.device else {
        crate::errln!("greta smoke: bad arguments: --compile-only takes one device, not `all`");
        return Ok(Exit::Undecided);
    };
    greta_runtime::prepare_mesa_cache();
    let report = match greta_smoke::compile::compile_only(&Catalog::builtin(), select, &args.gates)
    {
        Ok(r) => r,
        Err(e) => {
            crate::errln!("greta smoke: {e}");
            return Ok(Exit::Undecided);
        }
    };
    if args.json {
        crate::out::print_json(&report)?;
    } else {
        crate::out::text(format_args!("{}", greta_smoke::compile::render(&report)));
    }
    let failed: Vec<&str> = report.failed().map(|g| g.id.as_str()).collect();
    if failed.is_empty() {
        Ok(Exit::Pass)
    } else {
        crate::errln!(
            "greta smoke: {} gate(s) whose pipelines the driver did not create: {}",
            failed.len(),
            failed.join(", ")
        );
        Ok(Exit::Fail)
    }
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    s.parse()
}

fn parse_device(s: &str) -> Result<DeviceChoice, String> {
    s.parse()
}

fn parse_backend(s: &str) -> Result<BackendChoice, String> {
    s.parse()
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("not a number of seconds: {s:?}"))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(format!(
            "must be more than 0 and at most 86400 seconds, got {s}"
        ))
    }
}

/// `1`/`true`/`yes` on, `0`/`false`/`no`/empty off (also for the env var).
fn parse_flag(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "" | "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("expected 1 or 0, got {s:?}")),
    }
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    if args.list_gates {
        let catalog = Catalog::builtin();
        if args.json {
            let v = greta_smoke::table::list_gates_json(&catalog, args.include_test_gates);
            crate::out::print_json(&v)?;
        } else {
            crate::out::text(format_args!(
                "{}",
                greta_smoke::table::list_gates(&catalog, args.include_test_gates)
            ));
        }
        return Ok(Exit::Pass);
    }
    let started = std::time::Instant::now();
    let fleet = fleet::Fleet {
        oneline: args.oneline,
        prom: args.prom.clone(),
        profile: args.profile,
        started,
        prom_failed: Default::default(),
    };
    if args.profile == Profile::Frameworks {
        on_signal::on_stop(args.prom.clone(), args.profile, started);
        return frameworks::run(&args, &fleet);
    }
    if args.env.is_some() || args.python.is_some() {
        crate::errln!(
            "greta smoke: bad arguments: --env and --python go with --profile frameworks"
        );
        return Ok(Exit::Undecided);
    }
    // Every value is checked before any device is probed: a typo costs no
    // driver load and says so at once.
    let planned = match Catalog::builtin().plan(args.profile, &args.gates, args.include_test_gates)
    {
        Ok(gates) => gates,
        Err(e) => {
            crate::errln!("greta smoke: bad arguments: {e}");
            return Ok(Exit::Undecided);
        }
    };
    if args.tune {
        return tune(&args);
    }
    if args.compile_only {
        return compile_only(&args);
    }
    if let Err(exit) = check_outputs(&args, &fleet) {
        return Ok(exit);
    }
    // While only this thread runs: where Mesa caches shaders (a full disk
    // there is a SIGBUS in its cache thread) is decided before any Vulkan.
    greta_runtime::prepare_mesa_cache();
    // A profile that takes minutes says so before it starts.
    if let Some(note) = greta_smoke::duration_note(args.profile, &planned, None) {
        crate::errln!("greta smoke: {note}");
    }
    on_signal::on_stop(args.prom.clone(), args.profile, started);
    let backend = match args.backend {
        BackendChoice::Auto => {
            let c = greta_smoke::auto::choose_with(&args.device, auto::seen);
            // The reason names the GPUs the drivers report.
            crate::errln!(
                "greta smoke: backend {}: {}",
                c.backend.as_str(),
                greta_vocab::Visible(&c.why)
            );
            c.run_as()
        }
        b => b,
    };
    let opts = Options {
        request: SmokeRequest {
            backend,
            ..request(&args)
        },
        out_dir: args.out.clone(),
        write_results: !args.no_save,
        progress: !args.no_progress,
    };
    // Vulkan here, HIP/CUDA in the device child: the same report either way.
    let finished = match greta_smoke::run(&opts) {
        Ok(f) => f,
        Err(e) => {
            let what = match e.kind {
                ErrorKind::Usage => "bad arguments",
                ErrorKind::Input => "bad input file",
                ErrorKind::CouldNotRun => "could not run",
            };
            let why = format!("{what}: {}", e.message);
            // --oneline prints UNKNOWN on stdout, --prom alone says it on
            // stderr itself: the reason is printed once.
            if fleet.oneline || fleet.prom.is_none() {
                crate::errln!("greta smoke: {why}");
            }
            return Ok(fleet.undecided(&why));
        }
    };
    present(&args, &fleet, &finished.outcome, finished.exit_code)
}

/// The flags as the request every smoke run is made of (`greta smoke`,
/// `greta __gpu smoke`): the one place a flag becomes a setting; what is
/// not given keeps [`SmokeRequest::new`]'s default.
pub(crate) fn request(args: &Args) -> SmokeRequest {
    let defaults = SmokeRequest::new(args.profile);
    SmokeRequest {
        profile: args.profile,
        device: args.device.clone(),
        backend: args.backend,
        gates: args.gates.clone(),
        repeat: args.repeat,
        timeout_s: args.timeout.unwrap_or(defaults.timeout_s),
        floor_fraction: args.floor_fraction,
        peer_fraction: args.peer_fraction,
        baseline: args.baseline.clone(),
        deny_list: args.deny_list.clone(),
        seed: args.seed,
        include_test_gates: args.include_test_gates,
        // GRETA_SMOKE_INJECT=a,,b: the empty items are no faults.
        inject: args
            .inject
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect(),
    }
}

/// Before anything runs: the files `--html` and `--prom` name must be
/// writable places (a regular file or a free name, reached by no planted
/// link). The error is the exit already said.
fn check_outputs(args: &Args, fleet: &fleet::Fleet) -> Result<(), Exit> {
    if let Some(h) = &args.html {
        if let Err(e) = greta_fsread::output::Output::check(h) {
            crate::errln!("greta smoke: bad arguments: --html {e}");
            return Err(Exit::Undecided);
        }
    }
    fleet.check().map_err(|e| fleet.refused(&e))
}

/// A run's outcome as every profile shows it: the page (`--html`), the
/// textfile (`--prom`), one line (`--oneline`) or the table (and `--json`),
/// where the result files went; `exit_code` is the run's (0, 1, 2).
fn present(
    args: &Args,
    fleet: &fleet::Fleet,
    outcome: &Outcome,
    exit_code: u8,
) -> anyhow::Result<Exit> {
    // With --json or --oneline the table goes to stderr.
    let table = greta_smoke::table::render(&outcome.report, args.json || fleet.oneline);
    if let Some(h) = &args.html {
        super::report::write_run_page(h, &outcome.report);
    }
    if let Some(exit) = fleet.finish(outcome, &table) {
        return Ok(exit);
    }
    if args.json {
        eprint!("{table}");
        crate::outln!("{}", outcome.report.to_json());
    } else {
        crate::out::text(format_args!("{table}"));
    }
    if let Some(w) = &outcome.written {
        crate::errln!("results: {} (csv: {})", w.json.display(), w.csv.display());
        // The last line: how to see the run as a page. Without --out the
        // report finds the newest result itself, so no path is said twice.
        let from = match &args.out {
            None => String::new(),
            Some(d) => match crate::envs::activate::quote_path("--out", d) {
                Ok(q) => format!(" {q}"),
                Err(_) => String::from(" DIR"),
            },
        };
        crate::errln!(
            "page: greta report{from} (writes ./{})",
            super::report::DEFAULT_PAGE
        );
    }
    if let Some(e) = &outcome.write_error {
        crate::errln!("greta smoke: could not write results: {e}");
    }
    Ok(fleet.exit(match exit_code {
        0 => Exit::Pass,
        1 => Exit::Fail,
        _ => Exit::Undecided,
    }))
}

/// `--tune`: the sweep is greta_smoke::tune; this prints it (table, or
/// JSON schema greta.tune/v1 with --json) and maps errors to exit 2.
fn tune(args: &Args) -> anyhow::Result<Exit> {
    if let Some(refused) = refused::refused(args, refused::Mode::Tune) {
        crate::errln!("greta smoke: bad arguments: {refused}");
        return Ok(Exit::Undecided);
    }
    let device = match &args.device {
        DeviceChoice::One(s) => s.clone(),
        DeviceChoice::All => {
            crate::errln!(
                "greta smoke --tune: bad arguments: tune one device at a time (--device N)"
            );
            return Ok(Exit::Undecided);
        }
    };
    // The backend a later run on this device takes (`auto` decides as it
    // does there), so the run finds what was tuned for it.
    let backend = match args.backend {
        BackendChoice::Auto => {
            let c = greta_smoke::auto::choose_with(&args.device, auto::seen);
            crate::errln!(
                "greta smoke --tune: backend {}: {}",
                c.backend.as_str(),
                c.why
            );
            c.run_as()
        }
        b => b,
    };
    let defaults = TuneRequest::new(args.profile);
    let request = TuneRequest {
        device: DeviceChoice::One(device),
        backend,
        gates: args.gates.clone(),
        timeout_s: args.timeout.unwrap_or(defaults.timeout_s),
        seed: args.seed.unwrap_or(defaults.seed),
        // --no-save: the sweep is shown, the tuning cache left as it is.
        dry_run: args.no_save,
        ..defaults
    };
    let opts = match request.options() {
        Ok(o) => o,
        Err(e) => {
            crate::errln!("greta smoke --tune: bad arguments: {e}");
            return Ok(Exit::Undecided);
        }
    };
    match greta_smoke::tune::tune(&opts) {
        Ok(r) => {
            let table = greta_smoke::tune::render(&r);
            if args.json {
                eprint!("{table}");
                crate::out::print_json(&r)?;
            } else {
                crate::out::text(format_args!("{table}"));
            }
            Ok(Exit::Pass)
        }
        Err(e) => {
            crate::errln!("greta smoke --tune: could not run: {e}");
            Ok(Exit::Undecided)
        }
    }
}
