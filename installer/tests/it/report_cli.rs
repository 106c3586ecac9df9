//! `greta report` end to end on real files: a results directory holding
//! good runs of mixed versions and everything that must be named and
//! skipped (another schema, a truncated file, a FIFO with no writer, a file
//! over the size cap), a DIR argument (its newest run), and the refusals
//! (nothing readable, an --out that is a directory, an unwritable
//! `smoke --html` checked before any gate runs).

use crate::support::run::Run;
use greta_smoke::results::Report;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn greta(args: &[&str]) -> (i32, String, Duration) {
    let mut cmd = crate::support::greta();
    cmd.args(args);
    let r = Run::of(cmd);
    (r.code, r.stderr, r.elapsed)
}

/// A real lavapipe run (report/tests/data), at `time`, of greta `version`.
fn run_at(time: &str, version: &str) -> Report {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/data/lavapipe-default.json");
    let mut r: Report = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    r.started_at = time.into();
    r.greta_version = version.into();
    r
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn history_draws_what_reads_and_names_every_file_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("results");
    std::fs::create_dir(&d).unwrap();
    for (i, (t, v)) in [
        ("2026-11-20T10:00:00Z", "0.1.0"),
        ("2026-11-21T10:00:00Z", "0.1.0"),
        ("2026-11-22T10:00:00Z", "0.2.0"),
    ]
    .iter()
    .enumerate()
    {
        std::fs::write(d.join(format!("smoke-{i}.json")), run_at(t, v).to_json()).unwrap();
    }
    std::fs::write(d.join("tune.json"), r#"{"schema": "greta.tune/v1"}"#).unwrap();
    let whole = run_at("2026-11-23T10:00:00Z", "0.2.0").to_json();
    std::fs::write(d.join("cut.json"), &whole[..whole.len() / 2]).unwrap();
    mkfifo(&d.join("fifo.json"));
    let big = std::fs::File::create(d.join("huge.json")).unwrap();
    big.set_len(greta_report::FILE_CAP + 1).unwrap();
    std::fs::write(d.join("notes.txt"), "not a result").unwrap();

    let page = dir.path().join("history.html");
    let (code, err, took) = greta(&[
        "report",
        "--history",
        d.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(
        took < Duration::from_secs(60),
        "the FIFO must not block: {took:?}"
    );
    assert!(err.contains("3 runs, 4 files not used"), "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    for (name, why) in [
        ("tune.json", "greta.tune/v1"),
        ("cut.json", "not JSON"),
        ("fifo.json", "FIFO"),
        ("huge.json", "limit"),
    ] {
        assert!(
            err.lines().any(|l| l.contains(name) && l.contains(why)),
            "stderr names {name} with {why:?}: {err}"
        );
        assert!(html.contains(name), "the page names {name}");
    }
    assert!(!html.contains("notes.txt"), "only *.json files are results");
    assert!(
        html.contains("greta 0.1.0 -&gt; 0.2.0"),
        "the version change is marked"
    );
    assert_eq!(
        html.matches("<svg class=\"history\"").count(),
        11,
        "a chart per gate"
    );
    assert!(
        !html.contains("<link") && !html.contains(" src=\"http"),
        "self-contained"
    );

    // A DIR stands for its newest run; a FIFO given by name is refused.
    let last = dir.path().join("last.html");
    let (code, err, _) = greta(&[
        "report",
        d.to_str().unwrap(),
        "--out",
        last.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&last)
        .unwrap()
        .contains("data-started-at=\"2026-11-22T10:00:00Z\""));
    let (code, err, _) = greta(&[
        "report",
        d.join("fifo.json").to_str().unwrap(),
        "--out",
        last.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("FIFO") && err.contains("no greta.smoke/v1 result could be read"),
        "{err}"
    );
    assert!(std::fs::read_to_string(&last)
        .unwrap()
        .contains("No greta.smoke/v1 result"));
}

#[test]
fn an_out_that_is_not_a_regular_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("r.json");
    std::fs::write(&good, run_at("2026-11-20T10:00:00Z", "0.1.0").to_json()).unwrap();
    let sub = dir.path().join("page.html");
    std::fs::create_dir(&sub).unwrap();
    let (code, err, _) = greta(&[
        "report",
        good.to_str().unwrap(),
        "--out",
        sub.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("directory"), "{err}");
    assert!(sub.is_dir());
    // Nothing left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    // greta smoke --html into a directory that is not there: refused
    // before any device is opened.
    let (code, err, took) = greta(&[
        "smoke",
        "--device",
        "cpu",
        "--no-save",
        "--html",
        dir.path().join("missing/run.html").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--html") && err.contains("missing"), "{err}");
    assert!(took < Duration::from_secs(30));
}

/// `cmd` with stdout and stderr on one real terminal: the exit code and
/// what the terminal received.
fn run_on_pty(cmd: Command) -> (i32, String) {
    let (o, seen) = crate::support::pty::run_on_pty(cmd, true);
    (o.status.code().unwrap_or(-1), seen)
}

/// On a terminal the end-of-run table's `vs_floor` multiple is coloured;
/// with NO_COLOR set, or TERM=dumb, it is not (lavapipe, a real run held
/// to a real earlier run as --baseline, so every gate has a floor).
#[test]
fn the_floor_column_is_coloured_on_a_terminal_unless_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (code, _, _) = greta(&[
        "smoke",
        "--device",
        "cpu",
        "--profile",
        "ultrasafe",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let base = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let smoke = |env: &[(&str, &str)]| {
        let mut c = crate::support::greta();
        c.args(crate::support::greta::CPU_SMOKE)
            .arg("--baseline")
            .arg(&base)
            .env("TERM", "xterm-256color")
            .env("RUST_LOG", "off");
        for (k, v) in env {
            c.env(k, v);
        }
        let (code, seen) = run_on_pty(c);
        eprintln!("--- pty ({env:?}) -> {code}\n{seen}");
        assert!(code == 0 || code == 1, "{seen}");
        assert!(seen.contains("vs_floor"), "{seen}");
        seen
    };
    let coloured = smoke(&[]);
    assert!(
        coloured.contains("\x1b[32m") || coloured.contains("\x1b[1;31m"),
        "the multiple is coloured on a terminal: {coloured:?}"
    );
    for env in [[("NO_COLOR", "1")], [("TERM", "dumb")]] {
        let plain = smoke(&env);
        assert!(!plain.contains('\x1b'), "{env:?}: {plain:?}");
    }
}

/// A page is copied off the machine: with no `--out` it is written to
/// ./greta-report.html, and the results under HOME (the default results
/// directory, a skipped file's name) are shown as `~/...`, never with the
/// home directory's absolute path.
#[test]
fn the_default_page_lands_here_and_names_no_home_path() {
    let home = tempfile::tempdir().unwrap();
    let results = home.path().join(".local/share/greta/smoke");
    std::fs::create_dir_all(&results).unwrap();
    std::fs::write(
        results.join("smoke-1.json"),
        run_at("2026-11-20T10:00:00Z", "0.1.0").to_json(),
    )
    .unwrap();
    std::fs::write(results.join("smoke-0.json"), "{ cut").unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    for args in [
        vec!["report", results.to_str().unwrap()],
        vec!["report", "--history"],
    ] {
        let o = crate::support::greta()
            .args(&args)
            .env("HOME", home.path())
            .current_dir(cwd.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        let page = std::fs::read_to_string(cwd.path().join("greta-report.html")).unwrap();
        assert!(
            !page.contains(home_s),
            "{args:?}: the home path is in the page"
        );
        assert!(page.contains("~/.local/share/greta/smoke"), "{args:?}");
        std::fs::remove_file(cwd.path().join("greta-report.html")).unwrap();
    }
}
