//! The fetch progress bars: drawn on stderr when it is a terminal (here a
//! real pseudo-terminal), never when stderr is a pipe or with `--json`, and
//! never on stdout.

use crate::support;
use crate::support::{text, Harness};
use indicatif::HumanBytes;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Output, Stdio};

/// Runs `cmd` with stderr on the slave side of a new pseudo-terminal
/// (200 columns, so no bar line wraps) and stdout on a pipe; returns the
/// output with `stderr` holding what the terminal received.
fn run_on_pty(mut cmd: Command) -> Output {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    rustix::termios::tcsetwinsize(
        &master,
        rustix::termios::Winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )
    .unwrap();
    let slave: OwnedFd = rustix::fs::open(
        name.as_c_str(),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    cmd.env("TERM", "xterm-256color")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave));
    let child = cmd.spawn().unwrap();
    // The Command holds our copy of the slave: without dropping it, the
    // master would never see the end of the output.
    drop(cmd);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut m = std::fs::File::from(master);
        let mut seen = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match m.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                // EIO: every slave descriptor is closed (Linux).
                Err(e) if e.raw_os_error() == Some(libc::EIO) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("reading the pty: {e}"),
            }
        }
        let _ = tx.send(seen);
    });
    let mut o = child.wait_with_output().unwrap();
    o.stderr = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the pty was still open 120 s after greta exited");
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
    assert!(o.stdout.is_empty(), "{}", text(&o));
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
    assert!(o.stdout.is_empty(), "{}", text(&o));

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
