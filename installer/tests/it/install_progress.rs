//! The fetch progress bars: drawn on stderr when it is a terminal (here a
//! real pseudo-terminal), never when stderr is a pipe or with `--json`, and
//! never on stdout.

use crate::support;
use crate::support::{text, Harness};
use indicatif::HumanBytes;
use std::process::{Command, Output};

/// `cmd` with stderr on a real terminal, stdout on a pipe: the output
/// with `stderr` holding what the terminal received.
fn run_on_pty(cmd: Command) -> Output {
    let (mut o, seen) = support::pty::run_on_pty(cmd, false);
    o.stderr = seen.into_bytes();
    o
}

/// `greta install --reinstall --profile cpu --python <python3> --no-smoke ARGS`.
fn install_cmd(h: &Harness, extra: &[&str]) -> Command {
    h.install_command(&[&["--reinstall"], extra].concat())
}

/// What a drawn bar leaves for each wheel and for the whole fetch.
fn bar_marks(h: &Harness) -> Vec<String> {
    let mut marks = Vec::new();
    let mut total = 0u64;
    for w in &h.wheels {
        let size = HumanBytes(w.bytes.len() as u64);
        total += w.bytes.len() as u64;
        // The per-file bar at its full size, then the line left for it.
        marks.push(format!("{size}/{size} {}", w.filename));
        marks.push(format!("fetched {} ({size})", w.filename));
    }
    // The overall bar: its prefix and its total.
    marks.push(format!("{} files [", h.wheels.len()));
    marks.push(format!("/{} ", HumanBytes(total)));
    marks
}

fn assert_no_bar(s: &str, h: &Harness, what: &str) {
    for m in bar_marks(h) {
        assert!(!s.contains(&m), "bar output {m:?} in {what}:\n{s}");
    }
    assert!(!s.contains("] "), "a bar in {what}:\n{s}");
}

#[test]
fn bars_are_drawn_on_a_terminal_and_only_there() {
    support::require_uv();
    let h = Harness::new(96 * 1024);
    let o = run_on_pty(install_cmd(&h, &[]));
    let tty = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{}", text(&o));
    for m in bar_marks(&h) {
        assert!(
            tty.contains(&m),
            "{m:?} was not drawn on the terminal:\n{tty}"
        );
    }
    // stdout holds the plan only: no bar is drawn there.
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(plan.contains("3 wheels, "), "{}", text(&o));
    assert_no_bar(&plan, &h, "stdout on a terminal");
    assert!(tty.contains("✓ env cpu ready"), "{tty}");
    h.import_in_env("cpu");

    // stderr on a pipe: the same install (cold cache again) draws nothing.
    std::fs::remove_dir_all(h.cache_dir().join("wheels")).unwrap();
    let o = install_cmd(&h, &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        h.server.hits(&h.wheel("torch").filename).len(),
        2,
        "the second install did not download: {}",
        text(&o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_no_bar(&err, &h, "stderr on a pipe");
    assert!(err.contains("3 wheels verified (3 downloaded"), "{err}");
    assert!(!err.contains('\x1b'), "escape codes on a pipe:\n{err}");
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(plan.contains("3 wheels, "), "{}", text(&o));
    assert!(!plan.contains('\x1b'), "escape codes on a pipe:\n{plan}");

    // --json on a terminal: no bars anywhere, stdout is just the JSON.
    std::fs::remove_dir_all(h.cache_dir().join("wheels")).unwrap();
    let o = run_on_pty(install_cmd(&h, &["--json"]));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(h.server.hits(&h.wheel("torch").filename).len(), 3);
    let tty = String::from_utf8_lossy(&o.stderr);
    assert_no_bar(&tty, &h, "the terminal with --json");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_no_bar(&out, &h, "stdout with --json");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["result"], "installed");
}

#[test]
fn bundle_draws_bars_on_a_terminal_and_none_with_json() {
    let h = Harness::new(48 * 1024);
    let bundle = |name: &str, json: bool| {
        let out = h.dir.path().join(name);
        let extra: &[&str] = if json { &["--json"] } else { &[] };
        std::fs::remove_dir_all(h.cache_dir().join("wheels")).ok();
        run_on_pty(h.bundle_command(&out, extra))
    };
    let o = bundle("b1", false);
    assert!(o.status.success(), "{}", text(&o));
    let tty = String::from_utf8_lossy(&o.stderr);
    for m in bar_marks(&h) {
        assert!(
            tty.contains(&m),
            "{m:?} was not drawn on the terminal:\n{tty}"
        );
    }
    assert!(o.stdout.is_empty(), "{}", text(&o));

    let o = bundle("b2", true);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(h.server.hits(&h.wheel("jax").filename).len(), 2);
    assert_no_bar(
        &String::from_utf8_lossy(&o.stderr),
        &h,
        "the terminal with --json",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_no_bar(&out, &h, "stdout with --json");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["result"], "bundled");
}

/// `s` with every run of whitespace one space: a wrapped line read whole.
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `greta install` on terminals 80 and 120 columns wide, with a cached
/// wheel that fails verification (a tracing warning and greta's own line
/// about it), the bars of its new download, the smoke step's summary and
/// the activation line of an env under a long path: every line fits; the
/// smoke step's summary is said whole (wrapped to a terminal, only its
/// last piece once reached the line). To a pipe each is one line.
#[test]
fn install_on_a_terminal_fits_80_and_120_columns() {
    support::require_uv();
    let h = Harness::new(48 * 1024);
    let data = h
        .dir
        .path()
        .join("a-data-directory-whose-name-is-long-enough")
        .join("to-push-the-activation-line-past-eighty-columns");
    let install = || {
        let mut c = h.install_with(
            &support::python(),
            &["--reinstall", "--framework-check", "imports"],
        );
        c.env("XDG_DATA_HOME", &data);
        c
    };
    // torch's cached file one byte longer than the lock says: it fails
    // verification and is fetched again.
    let spoil = || {
        let cached = h.cached_wheel("torch").expect("torch is cached");
        let mut bytes = std::fs::read(&cached).unwrap();
        bytes.push(0);
        std::fs::write(&cached, bytes).unwrap();
    };
    let o = install().output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for width in [80u16, 120] {
        spoil();
        let (o, seen) = support::pty::run_on_pty_cols(install(), true, width);
        assert!(o.status.success(), "{seen}");
        support::pty::assert_fits(&seen, width);
        let whole = flat(&seen);
        assert!(
            whole.contains("WARN") && whole.contains("failed verification"),
            "no warning shown:\n{seen}"
        );
        assert!(whole.contains("fetched torch-"), "no bar drawn:\n{seen}");
        assert!(
            whole.contains("smoke: pass (smoke ultrasafe: PASS: "),
            "the smoke step's summary is not whole:\n{seen}"
        );
        // The activation line's path is longer than a line here: cut where
        // the line ends, its start on the line after "activate with: .".
        assert!(whole.contains("activate with: . /"), "{seen}");
    }
    spoil();
    let o = install().output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for (what, found) in [
        (
            "the warning",
            err.lines()
                .any(|l| l.contains("WARN") && l.contains("failed verification")),
        ),
        (
            "the smoke summary",
            err.lines()
                .any(|l| l.starts_with("smoke: pass (smoke ultrasafe: PASS: ")),
        ),
        (
            "the activation line",
            err.lines().any(|l| {
                l.starts_with("  activate with: . ") && l.ends_with("/cpu/greta-activate")
            }),
        ),
    ] {
        assert!(found, "{what} is not one line on a pipe:\n{err}");
    }
}
