//! Reading `greta.smoke/v1` files: one file, or every `*.json` of a
//! directory. A file that cannot be used (unreadable, too large, a FIFO,
//! not JSON, another schema) is a [`Skipped`] with the reason, never an
//! error of the whole page.

use greta_smoke::results::{Report, SCHEMA};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Largest result file read (a run of eight devices and every gate is
/// about 150 KB; a larger file is not one greta wrote).
pub const FILE_CAP: u64 = 16 << 20;
/// Most devices one result may hold. A node has at most a few dozen (eight
/// GPUs, each split into eight partitions, is 64); a file naming more is
/// not a run of one node, and each device costs the page a section.
pub const DEVICE_CAP: usize = 1024;
/// Most directory entries looked at (a results directory of a node that
/// runs a health check every five minutes for a year holds ~105 000).
pub const DIR_ENTRY_CAP: usize = 200_000;

/// One run and where it came from. Everything drawn is read from the
/// results types (the in-run ceiling and ratio too: `GateResult::in_run`).
#[derive(Debug, Clone)]
pub struct Run {
    pub path: Option<PathBuf>,
    pub report: Report,
    /// Bytes of the file it was read from (0 for a run made in memory):
    /// what a page of many runs counts against its cap.
    pub size: u64,
}

/// A file that was not used, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

impl Run {
    /// A run in memory (`greta smoke --html`).
    pub fn from_report(report: Report) -> Run {
        Run {
            path: None,
            report,
            size: 0,
        }
    }

    /// Parse `bytes` (the content of `path`) as a `greta.smoke/v1` report;
    /// only a file that does not parse is looked at again, to say why in
    /// its own terms (its schema).
    pub fn parse(bytes: &[u8], path: Option<&Path>) -> Result<Run, String> {
        let report: Report = match serde_json::from_slice(bytes) {
            Ok(r) => r,
            Err(e) => return Err(why_not(bytes, e)),
        };
        if report.schema != SCHEMA {
            return Err(format!("schema {:?}, not {SCHEMA:?}", report.schema));
        }
        if report.devices.len() > DEVICE_CAP {
            return Err(format!(
                "{} devices in one result: a node has a few dozen at most, and greta draws at most {DEVICE_CAP}",
                report.devices.len()
            ));
        }
        Ok(Run {
            path: path.map(Path::to_path_buf),
            report,
            size: bytes.len() as u64,
        })
    }
}

/// Why `bytes` is not a result: not JSON, another schema, or a
/// greta.smoke/v1 file that does not fit the results types.
fn why_not(bytes: &[u8], e: serde_json::Error) -> String {
    #[derive(Deserialize)]
    struct Schema {
        #[serde(default)]
        schema: Option<serde_json::Value>,
    }
    if e.is_syntax() || e.is_eof() {
        return format!("not JSON: {e}");
    }
    match serde_json::from_slice::<Schema>(bytes) {
        Ok(Schema {
            schema: Some(serde_json::Value::String(s)),
        }) if s != SCHEMA => format!("schema {s:?}, not {SCHEMA:?}"),
        Ok(Schema { schema: None }) => format!("no \"schema\" field: not a {SCHEMA} result"),
        _ => format!("not a valid {SCHEMA} result: {e}"),
    }
}

/// Read one result file (capped, a FIFO or device refused without blocking).
pub fn read_run(path: &Path) -> Result<Run, Skipped> {
    let skip = |why: String| Skipped {
        path: path.to_path_buf(),
        why,
    };
    let bytes =
        greta_fsread::bytes(path, FILE_CAP).map_err(|e| skip(strip_path(&e.to_string(), path)))?;
    Run::parse(&bytes, Some(path)).map_err(skip)
}

/// fsread's messages start with the path; a [`Skipped`] already names it.
fn strip_path(msg: &str, path: &Path) -> String {
    let p = format!("{}: ", path.display());
    msg.strip_prefix(&p).unwrap_or(msg).to_string()
}

/// The `*.json` files directly in `dir`, sorted by name, and the entries
/// that could not be listed. Err only when `dir` itself cannot be listed.
pub(crate) fn json_files(dir: &Path) -> Result<(Vec<PathBuf>, Vec<Skipped>), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names = Vec::new();
    let mut skipped = Vec::new();
    for (n, e) in entries.enumerate() {
        if n >= DIR_ENTRY_CAP {
            skipped.push(Skipped {
                path: dir.to_path_buf(),
                why: format!("more than {DIR_ENTRY_CAP} entries: the rest were not looked at"),
            });
            break;
        }
        match e {
            Ok(e) => {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "json") {
                    names.push(p);
                }
            }
            Err(e) => skipped.push(Skipped {
                path: dir.to_path_buf(),
                why: format!("listing failed part way: {e}"),
            }),
        }
    }
    names.sort();
    Ok((names, skipped))
}

/// Every `*.json` file directly in `dir`, by name: the runs that read, and
/// the files that did not with why. Err only when `dir` itself cannot be
/// listed. Holds every run: [`newest_in`] and the history keep less.
#[cfg(test)]
pub fn read_dir(dir: &Path) -> Result<(Vec<Run>, Vec<Skipped>), String> {
    let (names, mut skipped) = json_files(dir)?;
    let mut runs = Vec::new();
    for p in names {
        match read_run(&p) {
            Ok(r) => runs.push(r),
            Err(s) => skipped.push(s),
        }
    }
    Ok((runs, skipped))
}

/// The run of `dir` that started last, and the files that were not used:
/// each file is read and dropped unless it is the newest so far, so a
/// directory of many big results costs one or two of them in memory.
/// Err only when `dir` itself cannot be listed.
pub fn newest_in(dir: &Path) -> Result<(Option<Run>, Vec<Skipped>), String> {
    let (names, mut skipped) = json_files(dir)?;
    let mut newest: Option<Run> = None;
    for p in names {
        match read_run(&p) {
            // Of equal times, the later name wins.
            Ok(r) => {
                if newest
                    .as_ref()
                    .is_none_or(|n| r.report.started_at >= n.report.started_at)
                {
                    newest = Some(r);
                }
            }
            Err(s) => skipped.push(s),
        }
    }
    Ok((newest, skipped))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report as greta writes it (greta-smoke's own types, serialized).
    pub fn sample(devices: usize) -> Report {
        let text = include_str!("../tests/data/lavapipe-default.json");
        let mut r: Report = serde_json::from_str(text).unwrap();
        let one = r.devices[0].clone();
        r.devices = (0..devices)
            .map(|i| {
                let mut d = one.clone();
                d.index = i;
                d
            })
            .collect();
        r
    }

    #[test]
    fn other_schemas_bad_json_and_wrong_shapes_are_reasons() {
        let e = Run::parse(b"{\"schema\": \"greta.tune/v1\"}", None).unwrap_err();
        assert!(
            e.contains("greta.tune/v1") && e.contains("greta.smoke/v1"),
            "{e}"
        );
        let e = Run::parse(b"{\"a\": 1}", None).unwrap_err();
        assert!(e.contains("no \"schema\""), "{e}");
        let e = Run::parse(b"{\"schema\": \"greta.smoke/v1\"", None).unwrap_err();
        assert!(e.contains("not JSON") && e.contains("line 1"), "{e}");
        let e = Run::parse(b"{\"schema\": \"greta.smoke/v1\", \"devices\": 3}", None).unwrap_err();
        assert!(e.contains("not a valid greta.smoke/v1"), "{e}");
    }

    /// A gate's in-run ceiling and ratio (what `--profile perf` writes)
    /// come through; a file without them (older greta) reads as none.
    #[test]
    fn ceiling_and_ratio_are_read_when_present() {
        let r = sample(1);
        let mut v = serde_json::to_value(&r).unwrap();
        v["devices"][0]["gates"][1]["ceiling"] = serde_json::json!({
            "rate": 40.5, "unit": "TFLOP/s", "source": "cublasSgemm",
            "library": "libcublas.so.13", "version": "13.1.0"});
        v["devices"][0]["gates"][1]["ratio"] = serde_json::json!(0.8);
        let run = Run::parse(serde_json::to_string(&v).unwrap().as_bytes(), None).unwrap();
        let g = &run.report.devices[0].gates[1].in_run;
        assert_eq!(g.ceiling.as_ref().unwrap().rate, 40.5);
        assert_eq!(g.ceiling.as_ref().unwrap().library, "libcublas.so.13");
        assert_eq!(g.ratio, Some(0.8));
        assert_eq!(run.report.devices[0].gates[0].in_run.ceiling, None);
    }

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// A directory of good runs, another schema, garbage, a FIFO (no
    /// writer: a blocking open would hang) and a file over the cap: the
    /// good ones read, every other one is named with its reason.
    #[test]
    fn a_directory_reads_what_it_can_and_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let r = sample(1);
        std::fs::write(d.join("a.json"), r.to_json()).unwrap();
        std::fs::write(d.join("b.json"), "{\"schema\": \"greta.doctor/v1\"}").unwrap();
        std::fs::write(d.join("c.json"), "\u{0}garbage").unwrap();
        std::fs::write(d.join("notes.txt"), "not json, not looked at").unwrap();
        mkfifo(&d.join("d.json"));
        let big = std::fs::File::create(d.join("e.json")).unwrap();
        big.set_len(FILE_CAP + 1).unwrap();
        let (runs, skipped) = read_dir(d).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].report.started_at, r.started_at);
        let why = |n: &str| {
            skipped
                .iter()
                .find(|s| s.path == d.join(n))
                .map(|s| s.why.clone())
                .unwrap()
        };
        assert!(why("b.json").contains("greta.doctor/v1"));
        assert!(why("c.json").contains("not JSON"));
        assert!(why("d.json").contains("FIFO"), "{}", why("d.json"));
        assert!(why("e.json").contains("limit"), "{}", why("e.json"));
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(read_dir(&d.join("missing"))
            .unwrap_err()
            .contains("missing"));
    }
}
