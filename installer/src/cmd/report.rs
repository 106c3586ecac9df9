//! `greta report`: greta.smoke/v1 results as one self-contained HTML page
//! (greta-report draws it; this is flags, reading, writing and exit codes).
//!
//! Exit 0 when the page was written from at least one result; 2 when no
//! result could be read or the page could not be written. A file that
//! cannot be used (unreadable, too large, a FIFO, another schema) is named
//! on stderr and in the page, never fatal. The page never replaces one of
//! the results it is drawn from: an `--out` that is one of the inputs (the
//! same file, however named) or a `.json` name in a results directory read
//! is refused, exit 2.

use crate::exit::Exit;
use greta_fsread::output::{self, FileId, Output, Purpose};
use greta_report::{Page, Run, Skipped};
use std::os::unix::fs::MetadataExt;
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
    #[arg(long, value_name = "FILE.html", default_value = DEFAULT_PAGE)]
    pub out: PathBuf,
    /// Each gate's rate over time per device, from every result in DIR
    /// (default: the results directory greta smoke writes to).
    #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with = "paths")]
    pub history: Option<Option<PathBuf>>,
}

/// Where the page goes without `--out`: the current directory, where the
/// user who asked for it looks first.
pub const DEFAULT_PAGE: &str = "greta-report.html";

pub fn run(args: Args) -> anyhow::Result<Exit> {
    crate::stop::on_stop("report", |_| {});
    // Where the page goes, before anything is read: a bad --out is exit 2 at once.
    let out = match Output::resolve(&args.out) {
        Ok(o) => o,
        Err(e) => {
            crate::errln!("greta report: --out {e}");
            return Ok(Exit::Undecided);
        }
    };
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
        if let Err(why) = not_an_input(&out, &args.out, std::slice::from_ref(&dir)) {
            crate::errln!("greta report: {why}");
            return Ok(Exit::Undecided);
        }
        // Each result is digested as it is read: the history holds a few
        // numbers per gate, not the results.
        let history = match greta_report::History::read_dir(&dir) {
            Ok(h) => h,
            Err(e) => {
                crate::errln!("greta report: cannot list {e}");
                return Ok(Exit::Undecided);
            }
        };
        // The results read are the directory's `*.json` files; none may be
        // the page (a link or hard link to --out under another name).
        if let Err(why) = not_read(&out, &args.out, json_files_of(&dir)) {
            crate::errln!("greta report: {why}");
            return Ok(Exit::Undecided);
        }
        let (used, skipped) = (history.len(), history.skipped().to_vec());
        (history.render(), used, skipped)
    } else {
        let paths = if args.paths.is_empty() {
            vec![default_dir()?]
        } else {
            args.paths
        };
        if let Err(why) = not_an_input(&out, &args.out, &paths) {
            crate::errln!("greta report: {why}");
            return Ok(Exit::Undecided);
        }
        // Each run is drawn as it is read and dropped: the page holds one
        // or two results at once, and draws at most PAGE_RUNS runs and
        // PAGE_BYTES of results (the rest are named as not used).
        let page = read_paths(&paths);
        if let Err(why) = not_read(&out, &args.out, page.read().iter().cloned()) {
            crate::errln!("greta report: {why}");
            return Ok(Exit::Undecided);
        }
        let (used, skipped) = (page.runs(), page.skipped().to_vec());
        (page.finish(), used, skipped)
    };
    for s in &skipped {
        crate::errln!("greta report: not used: {}: {}", s.path.display(), s.why);
    }
    let html = private(&html);
    if let Err(e) = out.replace(html.as_bytes(), Purpose::Page) {
        crate::errln!("greta report: could not write --out {e}");
        return Ok(Exit::Undecided);
    }
    if used == 0 {
        crate::errln!(
            "greta report: no greta.smoke/v1 result could be read; {} says so",
            args.out.display()
        );
        return Ok(Exit::Undecided);
    }
    crate::errln!(
        "greta report: wrote {} ({used} run{}, {} file{} not used)",
        args.out.display(),
        if used == 1 { "" } else { "s" },
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" }
    );
    Ok(Exit::Pass)
}

/// Files as given, drawn as each is read; a directory stands for its
/// newest result.
fn read_paths(paths: &[PathBuf]) -> Page {
    let mut page = Page::default();
    for p in paths {
        if std::fs::metadata(p).is_ok_and(|m| m.is_dir()) {
            match greta_report::newest_in(p) {
                Ok((newest, sk)) => {
                    sk.into_iter().for_each(|s| page.skip(s));
                    match newest {
                        Some(r) => page.add(r),
                        None => page.skip(Skipped {
                            path: p.clone(),
                            why: "no greta.smoke/v1 result in this directory".into(),
                        }),
                    }
                }
                Err(e) => page.skip(Skipped {
                    path: p.clone(),
                    why: format!("cannot list: {e}"),
                }),
            }
            continue;
        }
        match greta_report::read_run(p) {
            Ok(r) => page.add(r),
            Err(s) => page.skip(s),
        }
    }
    page
}

/// The identity of the file at `p` (links followed), if it is one.
fn id_of(p: &Path) -> Option<(FileId, bool)> {
    std::fs::metadata(p)
        .ok()
        .map(|m| ((m.dev(), m.ino()), m.is_dir()))
}

/// `--out` is none of `inputs` (compared as files, by device and inode,
/// not by spelling), and no `.json` name in an input directory, where the
/// page would be read as a result by the next `greta report` or history.
fn not_an_input(out: &Output, named: &Path, inputs: &[PathBuf]) -> Result<(), String> {
    let json = Path::new(out.file_name())
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let dir = out.dir_id().ok();
    for p in inputs {
        match id_of(p) {
            Some((id, false)) if Some(id) == out.id() => {
                return Err(format!(
                    "--out {} is the input {} (the same file): the page would replace the \
                     result it is drawn from; name another file for the page",
                    named.display(),
                    p.display()
                ))
            }
            Some((id, true)) if json && Some(id) == dir => {
                return Err(format!(
                    "--out {} is a .json name in the results directory {}, where the page \
                     would be read as a result; name the page *.html, or put it elsewhere",
                    named.display(),
                    p.display()
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// `--out` is none of the result files read (a directory's results,
/// which may be links or hard links to it).
fn not_read(
    out: &Output,
    named: &Path,
    read: impl IntoIterator<Item = PathBuf>,
) -> Result<(), String> {
    let Some(out_id) = out.id() else {
        return Ok(());
    };
    match read
        .into_iter()
        .find(|p| id_of(p).is_some_and(|(id, _)| id == out_id))
    {
        Some(p) => Err(format!(
            "--out {} is the result {} read as an input (the same file): the page would \
             replace it; name another file for the page",
            named.display(),
            p.display()
        )),
        None => Ok(()),
    }
}

/// The `*.json` names of `dir` that a history reads (as many as it may).
fn json_files_of(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .take(greta_report::DIR_ENTRY_CAP)
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        })
        .collect()
}

/// `greta smoke --html FILE`: the page of the run just made. A page that
/// cannot be written is said on stderr; the run's verdict stands.
/// The page as it may leave the machine: no path under the user's home.
fn private(html: &str) -> String {
    let home = greta_vocab::dirs::process_env("HOME").map(PathBuf::from);
    greta_report::without_home(html, home.as_deref())
}

pub fn write_run_page(out: &Path, report: &greta_smoke::results::Report) -> bool {
    let html = greta_report::render_runs(&[Run::from_report(report.clone())], &[]);
    let html = private(&html);
    match output::write(out, html.as_bytes(), Purpose::Page) {
        Ok(()) => {
            crate::errln!("report page: {}", out.display());
            true
        }
        Err(e) => {
            crate::errln!("greta smoke: could not write --html {e}");
            false
        }
    }
}
