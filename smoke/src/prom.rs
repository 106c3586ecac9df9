//! `--prom FILE`: the run as a Prometheus textfile for node_exporter's
//! textfile collector (text exposition format 0.0.4): per device and gate,
//! pass / rate / floor / peer median, plus the run's status, duration and
//! time. Written atomically (a temporary file in the same directory, synced,
//! made world-readable and renamed over FILE), so the collector never reads
//! half a file; the temporary name does not end in `.prom`, which the
//! collector ignores.

use crate::results::{GateStatus, Report, RunStatus};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Label set of one device.
struct DevLabels(String);

/// The textfile for a finished run.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let profile = format!("profile=\"{}\"", esc(&r.profile));
    run_families(
        &mut out,
        &profile,
        r.status,
        r.wall_s,
        unix_time(&r.finished_at),
    );

    let devs: Vec<(DevLabels, &crate::results::DeviceRun)> = r
        .devices
        .iter()
        .map(|d| {
            (
                DevLabels(format!(
                    "{profile},device=\"{}\",name=\"{}\",uuid=\"{}\",backend=\"{}\"",
                    d.index,
                    esc(&d.device.name),
                    esc(&d.device.uuid.map(|u| u.to_string()).unwrap_or_default()),
                    esc(&d.backend)
                )),
                d,
            )
        })
        .collect();
    family(
        &mut out,
        "greta_smoke_device_pass",
        "1 when every gate that ran on the device passed (and it was not lost), else 0.",
    );
    for (l, d) in &devs {
        sample(
            &mut out,
            "greta_smoke_device_pass",
            &l.0,
            bool01(d.status == RunStatus::Pass),
        );
    }
    family(
        &mut out,
        "greta_smoke_device_open_seconds",
        "Seconds to open the device.",
    );
    for (l, d) in &devs {
        sample(&mut out, "greta_smoke_device_open_seconds", &l.0, d.open_s);
    }
    type Pick = fn(&crate::results::GateResult) -> Option<f64>;
    let per_gate: [(&str, &str, bool, Pick); 5] = [
        (
            "greta_smoke_gate_pass",
            "1 when the gate passed, 0 when it failed (skipped gates: greta_smoke_gate_skipped).",
            false,
            |g| match g.status {
                GateStatus::Pass => Some(1.0),
                GateStatus::Fail => Some(0.0),
                GateStatus::Skip => None,
            },
        ),
        (
            "greta_smoke_gate_skipped",
            "1 for a gate that was skipped (the device cannot run it, f16 preconditions, device lost).",
            false,
            |g| (g.status == GateStatus::Skip).then_some(1.0),
        ),
        (
            "greta_smoke_gate_rate",
            "The gate's measured rate, in the unit of its unit label (us/dispatch: lower is better).",
            true,
            |g| g.metrics.as_ref().and_then(|m| m.rate),
        ),
        (
            "greta_smoke_gate_floor",
            "The floor the rate was held to (a minimum; for us/dispatch a maximum), when one applied.",
            true,
            |g| g.floor.as_ref().map(|f| f.limit),
        ),
        (
            "greta_smoke_gate_peer_median",
            "The node's median rate for the gate (--device all with two or more devices).",
            true,
            |g| g.peer.as_ref().map(|p| p.median),
        ),
    ];
    for (name, help, with_unit, pick) in per_gate {
        family(&mut out, name, help);
        for (l, d) in &devs {
            for g in &d.gates {
                let Some(v) = pick(g).filter(|v| v.is_finite()) else {
                    continue;
                };
                let mut labels = format!("{},gate=\"{}\"", l.0, esc(&g.id));
                if with_unit {
                    let unit = g.metrics.as_ref().map(|m| m.unit.as_str()).unwrap_or("");
                    let _ = write!(labels, ",unit=\"{}\"", esc(unit));
                }
                sample(&mut out, name, &labels, v);
            }
        }
    }
    out
}

/// The textfile for a run that decided nothing before any device ran
/// (exit 2): status 2, how long it took, when.
pub fn render_undecided(profile: &str, wall_s: f64) -> String {
    let mut out = String::new();
    let now = time::OffsetDateTime::now_utc();
    let t = now.unix_timestamp() as f64 + f64::from(now.millisecond()) / 1e3;
    run_families(
        &mut out,
        &format!("profile=\"{}\"", esc(profile)),
        RunStatus::Undecided,
        wall_s,
        Some(t),
    );
    out
}

fn run_families(out: &mut String, profile: &str, status: RunStatus, wall_s: f64, t: Option<f64>) {
    family(
        out,
        "greta_smoke_status",
        "Verdict of the last greta smoke run, as its exit code: 0 pass, 1 a gate failed, 2 undecided.",
    );
    sample(
        out,
        "greta_smoke_status",
        profile,
        f64::from(status.exit_code()),
    );
    family(
        out,
        "greta_smoke_run_duration_seconds",
        "Wall time of the last run.",
    );
    sample(out, "greta_smoke_run_duration_seconds", profile, wall_s);
    if let Some(t) = t {
        family(
            out,
            "greta_smoke_last_run_timestamp_seconds",
            "When the last run finished, Unix time.",
        );
        sample(out, "greta_smoke_last_run_timestamp_seconds", profile, t);
    }
}

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape(help, false));
    let _ = writeln!(out, "# TYPE {name} gauge");
}

fn sample(out: &mut String, name: &str, labels: &str, v: f64) {
    let _ = writeln!(out, "{name}{{{labels}}} {v}");
}

fn bool01(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// A label value: [`escape`]d, double quotes too.
fn esc(s: &str) -> String {
    escape(s, true)
}

/// Text for a label value (`quote`: a double quote is escaped too) or a
/// HELP line. The format's escapes (backslash, line feed, and a double
/// quote in a label value) as the format writes them. Every other control
/// character (CR, VT, FF, ESC, NEL...) and the Unicode line and paragraph
/// separators are valid there, but a reader that splits lines on them
/// (Python's `splitlines`, many editors) would cut the sample in two and
/// lose the file. They are written as text, the way Python and JavaScript
/// spell them (`\x1b`, `\x85`, `\u2028`; the backslash escaped in the
/// file), which every reader keeps on one line; no brace or comma, which
/// naive readers take for the end of a label.
fn escape(s: &str, quote: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '"' if quote => o.push_str("\\\""),
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(o, "\\\\u{:04x}", u32::from(c));
            }
            c if c.is_control() => {
                let _ = write!(o, "\\\\x{:02x}", u32::from(c));
            }
            c => o.push(c),
        }
    }
    o
}

fn unix_time(rfc3339: &str) -> Option<f64> {
    let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
}

/// Fail fast (before any gate runs) when `path` cannot be written: it must
/// be (or name, through symlinks) a regular file or nothing yet, and its
/// directory must take a file.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let target = target(path).map_err(|e| format!("--prom {}: {e}", path.display()))?;
    let dir = parent(&target);
    tempfile::Builder::new()
        .prefix(".greta-smoke-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| {
            format!(
                "--prom {}: cannot write in {}: {e}",
                path.display(),
                dir.display()
            )
        })
}

/// Write `text` to `path` atomically: temp file in the same directory,
/// synced, mode 0644 (the collector often runs as another user), renamed
/// over `path`. On error `path` keeps its previous content.
///
/// The rename replaces whatever node sits at the name, so the name is
/// resolved first ([`target`]): a symlink is written through (the regular
/// file it names is replaced, the link stays), and a FIFO, directory,
/// socket or device is refused and left as it was.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let target =
        target(path).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".greta-smoke-")
        .suffix(".prom.tmp")
        .tempfile_in(parent(&target))?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Symlinks followed before giving up (Linux's own limit, ELOOP).
const MAX_LINKS: usize = 40;

/// The path the textfile really goes to: `path` itself when nothing or a
/// regular file is there; through symlinks, the regular file they lead to
/// (as open(2) follows them, `/proc/self/fd` links included) or, for a
/// dangling link, the free name it ends at (relative links against their
/// own directory). Anything else is an error saying what is there and why
/// it is refused.
fn target(path: &Path) -> Result<std::path::PathBuf, String> {
    use std::io::ErrorKind::NotFound;
    let refuse = |t: std::fs::FileType, via: bool| {
        format!(
            "{} {} a {}, not a regular file: the textfile is renamed over its target, which \
             would replace it; name a regular file (or a new one)",
            path.display(),
            if via { "leads to" } else { "is" },
            greta_fsread::kind_of(t)
        )
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == NotFound => return Ok(path.to_path_buf()),
        Err(e) => return Err(format!("cannot inspect {}: {e}", path.display())),
        Ok(m) if m.is_file() => return Ok(path.to_path_buf()),
        Ok(m) if !m.is_symlink() => return Err(refuse(m.file_type(), false)),
        Ok(_) => {}
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => std::fs::canonicalize(path)
            .map_err(|e| format!("cannot resolve the symlink {}: {e}", path.display())),
        Ok(m) => Err(refuse(m.file_type(), true)),
        Err(e) if e.kind() == NotFound => dangling_end(path),
        Err(e) => Err(format!("cannot follow the symlink {}: {e}", path.display())),
    }
}

/// The free name a dangling chain of symlinks from `path` ends at.
fn dangling_end(path: &Path) -> Result<std::path::PathBuf, String> {
    let mut p = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_symlink() => {
                let link = std::fs::read_link(&p)
                    .map_err(|e| format!("cannot read the symlink {}: {e}", p.display()))?;
                p = parent(&p).join(link);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(p),
            _ => return Err(format!("{} changed while it was resolved", path.display())),
        }
    }
    Err(format!(
        "more than {MAX_LINKS} symlinks from {} (a loop?)",
        path.display()
    ))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_report;
    use crate::results::Peer;

    /// Parsed with prometheus-parse, a maintained parser of the text
    /// format, and checked line by line against the format's grammar.
    fn parse(text: &str) -> prometheus_parse::Scrape {
        for l in text.lines() {
            assert!(!l.is_empty(), "empty line in\n{text}");
            if let Some(rest) = l.strip_prefix("# ") {
                assert!(
                    rest.starts_with("HELP greta_smoke_") || rest.starts_with("TYPE greta_smoke_"),
                    "{l}"
                );
                continue;
            }
            let (name, rest) = l.split_once('{').expect("labels");
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{l}"
            );
            let (_, value) = rest.rsplit_once("} ").expect("value");
            assert!(value.parse::<f64>().is_ok_and(f64::is_finite), "{l}");
        }
        assert!(text.ends_with('\n'));
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parses")
    }

    fn value(s: &prometheus_parse::Scrape, metric: &str, gate: Option<&str>) -> Option<f64> {
        s.samples
            .iter()
            .find(|x| x.metric == metric && gate.is_none_or(|g| x.labels.get("gate") == Some(g)))
            .map(|x| match x.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{metric} is not a gauge: {other:?}"),
            })
    }

    /// Each `(metric, gate, value)`: the sample's value (`None`: no such
    /// sample).
    fn assert_values(s: &prometheus_parse::Scrape, want: &[(&str, Option<&str>, Option<f64>)]) {
        for &(metric, gate, want) in want {
            assert_eq!(value(s, metric, gate), want, "{metric} {gate:?}");
        }
    }

    #[test]
    fn a_report_renders_as_valid_exposition_format() {
        let mut r = sample_report();
        r.devices[0].device.name = "GPU \"quoted\" \\ name\nx".into();
        r.devices[0].gates[0].peer = Some(Peer {
            median: 11.0,
            unit: crate::results::RateUnit::GBps,
            devices: 2,
            fraction: 0.85,
            limit: 9.35,
            ratio: 12.5 / 11.0,
            passed: true,
        });
        let text = render(&r);
        let s = parse(&text);
        assert_values(
            &s,
            &[
                ("greta_smoke_status", None, Some(1.0)),
                ("greta_smoke_run_duration_seconds", None, Some(2.9)),
                // 2026-11-21T22:49:40Z
                (
                    "greta_smoke_last_run_timestamp_seconds",
                    None,
                    Some(1_795_301_380.0),
                ),
                ("greta_smoke_device_pass", None, Some(0.0)),
                ("greta_smoke_gate_pass", Some("copy.bw"), Some(1.0)),
                ("greta_smoke_gate_pass", Some("softmax.256x1024"), Some(0.0)),
                ("greta_smoke_gate_pass", Some("gemm_f16.256"), None),
                ("greta_smoke_gate_skipped", Some("gemm_f16.256"), Some(1.0)),
                ("greta_smoke_gate_rate", Some("copy.bw"), Some(12.5)),
                ("greta_smoke_gate_floor", Some("copy.bw"), Some(7.5)),
                ("greta_smoke_gate_peer_median", Some("copy.bw"), Some(11.0)),
            ],
        );
        let rate = s
            .samples
            .iter()
            .find(|x| x.metric == "greta_smoke_gate_rate")
            .unwrap();
        assert_eq!(rate.labels.get("unit"), Some("GB/s"));
        assert_eq!(rate.labels.get("device"), Some("0"));
        assert_eq!(rate.labels.get("profile"), Some("default"));
        // Each family is announced once, and its samples follow it.
        for fam in ["greta_smoke_gate_rate", "greta_smoke_device_pass"] {
            assert_eq!(text.matches(&format!("# TYPE {fam} gauge\n")).count(), 1);
        }
        assert!(s.docs.contains_key("greta_smoke_gate_pass"));

        let u = render_undecided("health", 0.25);
        assert_values(
            &parse(&u),
            &[
                ("greta_smoke_status", None, Some(2.0)),
                ("greta_smoke_run_duration_seconds", None, Some(0.25)),
            ],
        );
    }

    #[test]
    fn writes_are_atomic_readable_and_keep_the_old_file_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("greta.prom");
        write_atomic(&p, "a 1\n").unwrap();
        write_atomic(&p, "b 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b 2\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
        // Only the final file is left: no temporaries.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(check_writable(&p).is_ok());
        let bad = dir.path().join("missing/greta.prom");
        let e = check_writable(&bad).unwrap_err();
        assert!(e.contains("missing"), "{e}");
        assert!(write_atomic(&bad, "x").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b 2\n");
    }

    /// A FIFO, a directory or a socket at FILE is refused, by the check
    /// before the run and by the write, and stays what it was: renaming
    /// over it would replace the node (as root, `--prom /dev/full` turned
    /// /dev/full into a regular file).
    #[test]
    fn a_target_that_is_not_a_regular_file_is_refused_and_left_alone() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.prom");
        crate::test_files::mkfifo(&fifo);
        let sub = dir.path().join("dir.prom");
        std::fs::create_dir(&sub).unwrap();
        let sock = dir.path().join("sock.prom");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        for (p, kind) in [(&fifo, "FIFO"), (&sub, "directory"), (&sock, "socket")] {
            let e = check_writable(p).unwrap_err();
            assert!(e.contains(kind) && e.contains("not a regular file"), "{e}");
            let e = write_atomic(p, "greta_smoke_status 0\n").unwrap_err();
            assert!(e.to_string().contains(kind), "{e}");
        }
        let t = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();
        assert!(t(&fifo).is_fifo());
        assert!(t(&sub).is_dir());
        assert!(t(&sock).is_socket());
        // A link to one is refused the same way, and stays a link.
        let link = dir.path().join("link.prom");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(check_writable(&link).unwrap_err().contains("FIFO"));
        assert!(write_atomic(&link, "x\n").is_err());
        assert!(t(&link).is_symlink() && t(&fifo).is_fifo());
        // /dev/stdout when stdout is a pipe: a link to a /proc/self/fd
        // link whose text ("pipe:[N]") is no path; the pipe is refused.
        let mut fds = [-1; 2];
        // SAFETY: a two-int array for pipe(2).
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let stdout_like = dir.path().join("stdout.prom");
        std::os::unix::fs::symlink(format!("/proc/self/fd/{}", fds[1]), &stdout_like).unwrap();
        let e = check_writable(&stdout_like).unwrap_err();
        assert!(e.contains("leads to a FIFO"), "{e}");
        assert!(write_atomic(&stdout_like, "x\n").is_err());
        assert!(t(&stdout_like).is_symlink());
        // SAFETY: both ends are ours, closed once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        // No temporaries are left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
    }

    /// A symlink is written through on purpose: the regular file it names
    /// (or will name: a dangling link) gets the text, the link stays.
    #[test]
    fn a_symlink_target_is_written_through_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real_dir = dir.path().join("real");
        std::fs::create_dir(&real_dir).unwrap();
        let real = real_dir.join("greta.prom");
        std::fs::write(&real, "old 1\n").unwrap();
        let link = dir.path().join("greta.prom");
        std::os::unix::fs::symlink("real/greta.prom", &link).unwrap();
        let link2 = dir.path().join("greta2.prom");
        std::os::unix::fs::symlink("greta.prom", &link2).unwrap();
        check_writable(&link2).unwrap();
        write_atomic(&link2, "new 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new 2\n");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert!(std::fs::symlink_metadata(&link2).unwrap().is_symlink());
        // Dangling: the file it names is created.
        let dangling = dir.path().join("later.prom");
        std::os::unix::fs::symlink("real/later.prom", &dangling).unwrap();
        write_atomic(&dangling, "x 1\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(real_dir.join("later.prom")).unwrap(),
            "x 1\n"
        );
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_symlink());
        // A loop is an error, never a hang.
        let a = dir.path().join("a.prom");
        let b = dir.path().join("b.prom");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert!(check_writable(&a).is_err());
        assert!(write_atomic(&a, "x").is_err());
        assert!(std::fs::symlink_metadata(&a).unwrap().is_symlink());
    }
}
