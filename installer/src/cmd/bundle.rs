//! `greta bundle`: fetch a profile's wheels and the pinned uv (verified)
//! and stage them with the lockfile and a manifest, for
//! `greta install --bundle DIR` on a node without internet.

use crate::exit::Exit;
use crate::fetch::FetchOptions;
use crate::install::PlanInput;
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Profile to bundle.
    #[arg(long)]
    pub profile: String,
    /// Target Python "X.Y" (default: the newest supported Python on PATH).
    #[arg(long, value_name = "X.Y")]
    pub python: Option<String>,
    /// Output directory (created; replaced if it holds an older bundle).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Lock directory (matrix.toml + pylock files) [default: $GRETA_LOCK_DIR, else the set built into greta].
    #[arg(long, value_name = "DIR")]
    pub lock_dir: Option<PathBuf>,
    /// Simple-API index to fetch from instead of the lockfile URLs.
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Use only the wheel cache.
    #[arg(long)]
    pub offline: bool,
    /// Machine-readable result on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<Exit> {
    // Ctrl-C printed nothing; it now says what was kept.
    crate::interrupt::on_bundle_interrupt();
    let lock_dir = greta_lockset::LockDir::resolve(args.lock_dir.as_deref());
    let plan = crate::install::plan(&PlanInput {
        lock_dir: &lock_dir,
        profile: Some(&args.profile),
        python: None,
        python_version: args.python.as_deref(),
        sysroot: None,
        probe: false,
    })?;
    if !args.json {
        crate::out::err_text(format_args!(
            "{}",
            crate::install::explain(&plan, crate::install::Detail::Wheels)
        ));
    }
    let mut fopts = FetchOptions::from_env()?;
    fopts.offline = args.offline;
    fopts.progress = !args.json;
    match crate::install::bundle(
        &plan,
        &lock_dir,
        &args.output,
        &fopts,
        args.index_url.as_deref(),
    ) {
        Ok(m) => {
            if args.json {
                crate::outln!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"result": "bundled", "dir": args.output, "manifest": m})
                    )?
                );
            } else {
                let bytes: u64 = m.wheels.iter().filter_map(|w| w.size).sum();
                let uv = match &m.uv {
                    Some(u) => format!(", uv {} for {}", u.version, u.arch),
                    None => ", no uv".into(),
                };
                crate::errln!(
                    "✓ bundle {} for Python {}: {} wheels ({}){uv}, {}, manifest {}; install with: greta install --bundle {}",
                    greta_vocab::Visible(&m.profile),
                    greta_vocab::Visible(&m.python.to_string()),
                    m.wheels.len(),
                    greta_vocab::size::bytes(bytes),
                    greta_vocab::Visible(&m.lockfile.to_string()),
                    crate::install::BUNDLE_MANIFEST,
                    args.output.display()
                );
            }
            Ok(Exit::Pass)
        }
        Err(e) => {
            crate::errln!(
                "greta bundle: {}",
                greta_vocab::VisibleLines(&format!("{e:#}"))
            );
            Ok(Exit::Fail)
        }
    }
}
