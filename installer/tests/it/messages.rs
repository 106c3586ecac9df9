//! What greta says must be true (the installer's side):
//! - "rerun to continue" where a rerun cannot help (HOME unset).
//! - Ctrl-C between the swap's renames said "the previous env is
//!   untouched" while it sat aside as `.backup-<name>`.
//! - OS errors printed twice ("No such file or directory (os error 2): No
//!   such file or directory (os error 2)").
//! - `greta bundle` printed nothing on Ctrl-C.

use crate::support::{self, Harness};
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

#[test]
fn without_home_greta_says_what_to_fix_not_to_rerun() {
    let h = Harness::new(1_000);
    let o = h
        .install_command(&[])
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    let err = support::stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("HOME"), "{err}");
    assert!(!err.contains("rerun to continue"), "{err}");
}

#[test]
fn an_os_error_is_printed_once() {
    let h = Harness::new(1_000);
    // A lock dir that is a file: reading matrix.toml in it is ENOTDIR.
    let file = h.dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let o = h
        .cmd(&["lock", "check", "--lock-dir", file.to_str().unwrap()])
        .output()
        .unwrap();
    let err = support::stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("(os error 20)").count(),
        1,
        "the OS error is printed more than once: {err}"
    );
}

/// Starts `c` with SIGINT at its default action (a terminal's foreground
/// job), waits for `ready`, sends SIGINT, and returns its stderr once it
/// died of it.
fn interrupt(c: std::process::Command, ready: &dyn Fn(&str) -> bool) -> String {
    let mut child = support::spawn_interruptible(c);
    let mut err_pipe = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match err_pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    all.extend_from_slice(&buf[..n]);
                    let _ = tx.send(String::from_utf8_lossy(&all).into_owned());
                }
            }
        }
    });
    let start = Instant::now();
    let mut seen = String::new();
    while !ready(&seen) {
        if let Ok(s) = rx.recv_timeout(Duration::from_millis(50)) {
            seen = s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "never ready: {seen}"
        );
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let st = child.wait().unwrap();
    while let Ok(s) = rx.recv_timeout(Duration::from_millis(500)) {
        seen = s;
    }
    assert_eq!(st.signal(), Some(libc::SIGINT), "{st:?} {seen}");
    seen
}

#[test]
fn ctrl_c_between_the_swap_renames_does_not_say_untouched() {
    let h = Harness::new(1_000);
    let o = h.install(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    let mut c = h.install_command(&["--reinstall"]);
    c.env("GRETA_TEST_PAUSE_AT", "swap");
    let err = interrupt(c, &|s| s.contains("paused at swap"));
    assert!(!err.contains("previous env is untouched"), "{err}");
    assert!(err.contains("interrupted while swapping"), "{err}");
    // And what it says holds: the next look restores the previous env.
    let o = h.cmd(&["env", "list", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(support::env_names(&v), vec!["cpu"], "{}", support::text(&o));
}

#[test]
fn ctrl_c_during_bundle_says_what_was_kept() {
    let h = Harness::new(2_000_000);
    let torch = h.throttle_torch(4096, 50);
    let out = h.dir.path().join("bundle");
    let c = h.bundle_command(&out, &[]);
    let server = &h.server;
    let err = interrupt(c, &|_| !server.hits(&torch).is_empty());
    assert!(err.contains("greta bundle: interrupted"), "{err}");
}
