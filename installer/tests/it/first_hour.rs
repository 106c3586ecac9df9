//! A new user's first hour on this machine (no GPU; lavapipe is the only
//! Vulkan device), as docs/first-hour.md walks it, on real
//! pseudo-terminals 80 and 120 columns wide: `greta --help`, `doctor`,
//! `doctor -v`, `doctor --fix --dry-run`, `install --dry-run`, a smoke run
//! and `report` print no line wider than the terminal, stdout's and
//! stderr's alike. The same text to a pipe or a file keeps every line
//! whole, also when stderr is a terminal (`greta doctor > report.txt`
//! typed in one once wrapped the file to the terminal's width).

use crate::support::greta;
use crate::support::pty::{assert_fits, run_on_pty_cols};
use std::path::Path;
use std::process::Command;

/// greta as a user who has never run it: a home of their own (results,
/// envs, caches under it), the lock set built into greta, a terminal type.
fn new_user(home: &Path, args: &[&str]) -> Command {
    let mut c = greta();
    c.args(args).env("HOME", home).env("TERM", "xterm");
    c
}

/// The steps of the first hour, in order (the smoke run is the quick
/// profile on the CPU's Vulkan device: `terminal_width.rs` holds the
/// default profile's run to both widths).
const STEPS: [&[&str]; 8] = [
    &["--help"],
    &["doctor"],
    &["doctor", "-v"],
    &["doctor", "--fix", "--dry-run"],
    &["install", "--dry-run"],
    &["install", "--profile", "cpu", "--dry-run"],
    &["smoke", "--device", "cpu", "--profile", "ultrasafe"],
    &["report"],
];

#[test]
fn every_step_fits_80_and_120_columns() {
    for width in [80u16, 120] {
        let home = tempfile::tempdir().unwrap();
        // `greta report` writes its page in the working directory.
        let cwd = tempfile::tempdir().unwrap();
        for args in STEPS {
            let mut c = new_user(home.path(), args);
            c.current_dir(cwd.path());
            let (o, seen) = run_on_pty_cols(c, true, width);
            let what = format!("greta {} at {width} columns", args.join(" "));
            assert!(
                matches!(o.status.code(), Some(0 | 1)),
                "{what}: {:?}\n{seen}",
                o.status
            );
            assert!(!seen.contains("panicked"), "{what}:\n{seen}");
            assert_fits(&seen, width);
        }
        assert!(cwd.path().join("greta-report.html").is_file());
    }
}

/// The lines of `text` longer than `n` characters.
fn longer_than(text: &str, n: usize) -> Vec<&str> {
    text.lines().filter(|l| l.chars().count() > n).collect()
}

/// stdout to a pipe while stderr is the terminal (as `greta doctor >
/// file` in a shell): the results on stdout are whole lines, as with no
/// terminal at all; what goes to the terminal fits it.
#[test]
fn results_to_a_pipe_stay_whole_while_stderr_is_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["doctor"][..],
        &["install", "--profile", "cpu", "--dry-run"],
        &[
            "smoke",
            "--device",
            "cpu",
            "--profile",
            "ultrasafe",
            "--no-save",
        ],
    ] {
        let (o, seen) = run_on_pty_cols(new_user(home.path(), args), false, 80);
        let out = String::from_utf8_lossy(&o.stdout);
        let piped = new_user(home.path(), args).output().unwrap();
        let whole = String::from_utf8_lossy(&piped.stdout);
        // The same lines as with no terminal anywhere (the smoke table's
        // figures and the doctor's timings differ from run to run: their
        // count and the long lines' starts are compared).
        assert_eq!(
            out.lines().count(),
            whole.lines().count(),
            "greta {args:?}: stdout was wrapped:\n{out}\n---\n{whole}"
        );
        assert!(
            !longer_than(&out, 80).is_empty(),
            "greta {args:?}: no line over 80 columns on stdout:\n{out}"
        );
        assert_fits(&seen, 80);
    }
}
