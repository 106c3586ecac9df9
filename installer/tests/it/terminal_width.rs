//! Output that fits the terminal: `greta smoke` on a real pseudo-terminal
//! 80 and 120 columns wide prints no line wider than the terminal (the
//! table once reached 146 columns on lavapipe, 291 on a GPU with skip
//! reasons; the progress bar 81 with a long gate's name), while output to
//! a pipe or file keeps every line whole. A line counts as the terminal
//! meets it (support::pty::overflowing_lines): a bar redrawn in place is
//! one line each time.

use crate::support::greta;
use crate::support::greta::CPU_SMOKE;
use crate::support::pty::{assert_fits, run_on_pty_cols};

#[test]
fn smoke_fits_80_and_120_columns_and_a_pipe_keeps_lines_whole() {
    let mut args = CPU_SMOKE.to_vec();
    // The default profile: more columns and the block-estimate lines; its
    // progress bar drawn, with the longest gate names.
    args[4] = "default";
    args.retain(|a| *a != "--no-progress");
    for width in [80u16, 120] {
        let mut c = greta();
        c.args(&args).env("TERM", "xterm");
        let (o, seen) = run_on_pty_cols(c, true, width);
        assert_eq!(o.status.code(), Some(0), "{seen}");
        assert!(seen.contains("smoke default: PASS"), "{seen}");
        // The progress bar included: it was drawn (stderr is the terminal).
        assert!(seen.contains('░'), "no bar drawn:\n{seen}");
        assert_fits(&seen, width);
        // Every gate is still named, one row each.
        assert!(seen.contains("block_prefill.small"), "{seen}");
    }
    // To a pipe nothing is wrapped: the table's rows stay one line each.
    let o = greta().args(&args).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.starts_with("gate ") && l.contains("median_us")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("block block_prefill.small:") && l.contains("slowest step")),
        "{out}"
    );
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../probe/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The doctor on a paste whose evidence lines run to hundreds of
/// characters: on a terminal every line fits, a check's summary goes on
/// under its own column; to a pipe every line is whole. The pasted file's
/// path is said once (its check's line), each evidence line from it says
/// `line N`; and no finding prints the same line twice.
#[test]
fn doctor_fits_80_and_120_columns_says_a_path_once_and_each_line_once() {
    let paste = fixture("ERRORS.md");
    for width in [80u16, 120] {
        let mut c = greta();
        c.args(["doctor", "--from", &paste]).env("TERM", "xterm");
        let (o, seen) = run_on_pty_cols(c, true, width);
        assert_eq!(o.status.code(), Some(1), "{seen}");
        assert_fits(&seen, width);
        assert!(seen.contains("Summary:"), "{seen}");
    }
    let o = greta().args(["doctor", "--from", &paste]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().any(|l| l.len() > 200), "{out}");
    assert_eq!(
        out.matches(paste.as_str()).count(),
        1,
        "the path more than once:\n{out}"
    );
    assert!(out.contains("evidence: line 87: "), "{out}");
    // Each finding's block (from its glyph line to the next) holds each
    // line once.
    let mut block: Vec<&str> = Vec::new();
    for line in out.lines().chain(["  ✗ end"]) {
        if line.starts_with("  ✗ ") || line.starts_with("  ! ") || line.starts_with("  ✓ ") {
            let mut seen = std::collections::HashSet::new();
            for l in &block {
                assert!(seen.insert(l), "printed twice: {l:?}\n{out}");
            }
            block.clear();
        }
        block.push(line);
    }
}

/// The doctor on this machine and a smoke that stops with a long error:
/// on an 80-column terminal every line of both fits, stderr's included.
#[test]
fn live_doctor_and_smoke_errors_fit_80_columns() {
    let mut c = greta();
    c.arg("doctor").env("TERM", "xterm");
    let (_, seen) = run_on_pty_cols(c, true, 80);
    assert!(seen.contains("Summary:"), "{seen}");
    assert_fits(&seen, 80);

    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp
        .path()
        .join("a-directory-whose-name-is-long-enough-to-overflow")
        .join("and-another-that-does-not-exist-either")
        .join("page.html");
    let mut c = greta();
    c.args([
        "smoke",
        "--device",
        "cpu",
        "--profile",
        "ultrasafe",
        "--html",
    ])
    .arg(&deep)
    .env("TERM", "xterm");
    let (o, seen) = run_on_pty_cols(c, true, 80);
    assert_eq!(o.status.code(), Some(2), "{seen}");
    assert!(
        seen.contains("greta smoke: bad arguments: --html"),
        "{seen}"
    );
    assert_fits(&seen, 80);
    // To a pipe the same error is one line.
    let o = greta()
        .args([
            "smoke",
            "--device",
            "cpu",
            "--profile",
            "ultrasafe",
            "--html",
        ])
        .arg(&deep)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.lines()
            .any(|l| l.starts_with("greta smoke: bad arguments: --html") && l.len() > 80),
        "{e}"
    );
}
