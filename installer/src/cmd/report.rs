//! `greta report`: greta.smoke/v1 results as one self-contained HTML page
//! (greta-report draws it; this is flags, reading, writing and exit codes).
//!
//! Exit 0 when the page was written from at least one result; 2 when no
//! result could be read or the page could not be written. A file that
//! cannot be used (unreadable, too large, a FIFO, another schema) is named
//! on stderr and in the page, never fatal.

use crate::exit::Exit;
use greta_report::{Run, Skipped};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Without FILES: the newest result in the results directory. A DIR: its newest result. \
Exit codes: 0 page written, 2 nothing readable or the page not written. docs/smoke.md, \"Report page\"."
)]
pub struct Args {
    /// Result files (greta.smoke/v1 JSON), or a directory of them.
    #[arg(value_name = "FILES|DIR")]
    pub paths: Vec<PathBuf>,
    /// The HTML file to write (replaced atomically).
    #[arg(long, value_name = "FILE.html")]
    pub out: PathBuf,
    /// Each gate's rate over time per device, from every result in DIR
    /// (default: the results directory greta smoke writes to).
    #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with = "paths")]
    pub history: Option<Option<PathBuf>>,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let default_dir = || {
        greta_smoke::results::default_out_dir().ok_or_else(|| {
            anyhow::anyhow!("no results directory: set XDG_DATA_HOME or HOME, or name one")
        })
    };
    let (html, used, skipped) = if let Some(dir) = args.history {
        let dir = match dir {
            Some(d) => d,
            None => default_dir()?,
        };
        // Each result is digested as it is read: the history holds a few
        // numbers per gate, not the results.
        let history = match greta_report::History::read_dir(&dir) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("greta report: cannot list {e}");
                return Ok(Exit::Undecided);
            }
        };
        let (used, skipped) = (history.len(), history.skipped().to_vec());
        (history.render(), used, skipped)
    } else {
        let paths = if args.paths.is_empty() {
            vec![default_dir()?]
        } else {
            args.paths
        };
        let (runs, skipped) = read_paths(&paths);
        (
            greta_report::render_runs(&runs, &skipped),
            runs.len(),
            skipped,
        )
    };
    for s in &skipped {
        eprintln!("greta report: not used: {}: {}", s.path.display(), s.why);
    }
    if let Err(e) = write_page(&args.out, &html) {
        eprintln!("greta report: could not write {}: {e}", args.out.display());
        return Ok(Exit::Undecided);
    }
    if used == 0 {
        eprintln!(
            "greta report: no greta.smoke/v1 result could be read; {} says so",
            args.out.display()
        );
        return Ok(Exit::Undecided);
    }
    eprintln!(
        "greta report: wrote {} ({used} run{}, {} file{} not used)",
        args.out.display(),
        if used == 1 { "" } else { "s" },
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" }
    );
    Ok(Exit::Pass)
}

/// Files as given; a directory stands for its newest result.
fn read_paths(paths: &[PathBuf]) -> (Vec<Run>, Vec<Skipped>) {
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        if std::fs::metadata(p).is_ok_and(|m| m.is_dir()) {
            match greta_report::newest_in(p) {
                Ok((newest, sk)) => {
                    skipped.extend(sk);
                    match newest {
                        Some(r) => runs.push(r),
                        None => skipped.push(Skipped {
                            path: p.clone(),
                            why: "no greta.smoke/v1 result in this directory".into(),
                        }),
                    }
                }
                Err(e) => skipped.push(Skipped {
                    path: p.clone(),
                    why: format!("cannot list: {e}"),
                }),
            }
            continue;
        }
        match greta_report::read_run(p) {
            Ok(r) => runs.push(r),
            Err(s) => skipped.push(s),
        }
    }
    (runs, skipped)
}

/// Write the page through a temporary file in the same directory, renamed
/// into place: a reader never sees half a page, and on error the previous
/// page stays. Anything but a regular file (or a free name) at `out` is
/// refused: the rename would replace it.
pub fn write_page(out: &Path, html: &str) -> std::io::Result<()> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if !m.is_file() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "is a {}, not a regular file (the page is renamed into place, which would replace it)",
                    greta_fsread::kind_of(m.file_type())
                ),
            ))
        }
        _ => {}
    }
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".greta-report-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(html.as_bytes())?;
    tmp.as_file().sync_all()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(out).map_err(|e| e.error)?;
    Ok(())
}

/// `greta smoke --html FILE`: the page of the run just made. A page that
/// cannot be written is said on stderr; the run's verdict stands.
pub fn write_run_page(out: &Path, report: &greta_smoke::results::Report) -> bool {
    let html = greta_report::render_runs(&[Run::from_report(report.clone())], &[]);
    match write_page(out, &html) {
        Ok(()) => {
            eprintln!("report page: {}", out.display());
            true
        }
        Err(e) => {
            eprintln!("greta smoke: could not write --html {}: {e}", out.display());
            false
        }
    }
}

/// Before any gate runs: `--html FILE` must be a regular file or a free
/// name in a directory that takes files.
pub fn check_writable(out: &Path) -> Result<(), String> {
    if let Ok(m) = std::fs::symlink_metadata(out) {
        if !m.is_file() {
            return Err(format!(
                "--html {}: is a {}, not a regular file",
                out.display(),
                greta_fsread::kind_of(m.file_type())
            ));
        }
    }
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".greta-report-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| {
            format!(
                "--html {}: cannot write in {}: {e}",
                out.display(),
                dir.display()
            )
        })
}
