//! Output that fits the terminal: `greta smoke` on a real pseudo-terminal
//! 80 and 120 columns wide prints no line wider than the terminal (the
//! table once reached 146 columns on lavapipe, 291 on a GPU with skip
//! reasons), while output to a pipe or file keeps every line whole.

use crate::support::greta;
use crate::support::greta::CPU_SMOKE;
use crate::support::pty::run_on_pty_cols;

/// The printed width of a terminal line: colour codes and the carriage
/// returns of the terminal's line discipline take no columns.
fn columns(line: &str) -> usize {
    let mut n = 0;
    let mut esc = false;
    for c in line.chars() {
        match (esc, c) {
            (false, '\x1b') => esc = true,
            (false, '\r') => {}
            (false, _) => n += 1,
            (true, c) if c.is_ascii_alphabetic() => esc = false,
            (true, _) => {}
        }
    }
    n
}

#[test]
fn smoke_fits_80_and_120_columns_and_a_pipe_keeps_lines_whole() {
    let mut args = CPU_SMOKE.to_vec();
    // The default profile: more columns and the block-estimate lines.
    args[4] = "default";
    for width in [80u16, 120] {
        let mut c = greta();
        c.args(&args).env("TERM", "xterm");
        let (o, seen) = run_on_pty_cols(c, true, width);
        assert_eq!(o.status.code(), Some(0), "{seen}");
        assert!(seen.contains("smoke default: PASS"), "{seen}");
        for line in seen.lines() {
            assert!(
                columns(line) <= width as usize,
                "{} columns on a {width}-column terminal: {line:?}\n{seen}",
                columns(line)
            );
        }
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
