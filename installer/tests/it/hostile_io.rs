//! Hostile files end to end: a FIFO, a device node or a huge
//! file wherever greta reads one is a clear error (or, for a cache, ignored)
//! and never a hang or an unbounded read; a closed stdout ends greta quietly
//! (exit 0, no panic) for every command that prints results.

use crate::support;
use crate::support::Harness;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(
        // SAFETY: a valid NUL-terminated path.
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "{}",
        p.display()
    );
}

/// Runs `c` to completion, failing the test (and killing it) when it is
/// still running after a generous limit: the defect is a hang for ever.
fn bounded(mut c: Command) -> Output {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    // stdout/stderr are small for these commands; poll the exit.
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "{c:?} still running after 120 s (hang); stderr: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `c` with stdout a pipe whose read end is already closed: every write
/// fails with EPIPE, as under `| head -c1` once head has exited.
fn with_closed_stdout(mut c: Command) -> Output {
    let mut fds = [0i32; 2];
    // SAFETY: a two-int array for pipe(2).
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fds[0] is ours and closed once.
    unsafe { libc::close(fds[0]) };
    // SAFETY: fds[1] is a fresh pipe end nothing else owns; the File (then
    // the Stdio) becomes its only owner.
    let w = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) };
    c.stdin(Stdio::null())
        .stdout(Stdio::from(w))
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    drop(c); // the parent's copy of the write end
    child.wait_with_output().unwrap()
}

fn assert_quiet_exit(o: &Output, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(0), "{what}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{what}: {err}"
    );
}

#[test]
fn a_closed_stdout_ends_each_command_quietly() {
    let h = Harness::new(1_000);
    let py = support::python();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("lock show", vec!["lock", "show", "cpu", "--json"]),
        ("lock show (text)", vec!["lock", "show", "cpu"]),
        (
            "doctor --list-checks",
            vec!["doctor", "--list-checks", "--json"],
        ),
        (
            "doctor --list-checks (text)",
            vec!["doctor", "--list-checks"],
        ),
        (
            "smoke --list-gates",
            vec!["smoke", "--list-gates", "--json"],
        ),
        ("smoke --list-gates (text)", vec!["smoke", "--list-gates"]),
        (
            "install --dry-run",
            vec![
                "install",
                "--profile",
                "cpu",
                "--python",
                py.to_str().unwrap(),
                "--no-smoke",
                "--dry-run",
                "--json",
            ],
        ),
        ("env list", vec!["env", "list", "--json"]),
    ];
    for (what, args) in cases {
        let o = with_closed_stdout(h.cmd(&args));
        assert_quiet_exit(&o, what);
    }
}

#[test]
fn a_fifo_or_device_given_as_an_input_file_is_refused_at_once() {
    let h = Harness::new(1_000);
    let fifo = h.dir.path().join("fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    for input in [f, "/dev/zero"] {
        for (what, args) in [
            ("--baseline", vec!["smoke", "--baseline", input, "--json"]),
            ("--deny-list", vec!["smoke", "--deny-list", input, "--json"]),
            ("--facts", vec!["lock", "select", "--facts", input]),
        ] {
            let o = bounded(h.cmd(&args));
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{what} {input}: {err}");
            assert!(
                err.contains(input) && (err.contains("FIFO") || err.contains("character device")),
                "{what} {input}: {err}"
            );
        }
    }
}

#[test]
fn lock_files_that_are_fifos_are_refused_by_name() {
    let h = Harness::new(1_000);
    let matrix = h.lock_dir().join("matrix.toml");
    std::fs::remove_file(&matrix).unwrap();
    mkfifo(&matrix);
    let o = bounded(h.cmd(&["lock", "check"]));
    let err = stderr(&o) + &String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("matrix.toml") && err.contains("FIFO"), "{err}");
}

/// An env receipt that is a FIFO hung `greta env list` and plain `greta
/// doctor`; the env is listed as unusable instead.
#[test]
fn a_receipt_that_is_a_fifo_does_not_hang_env_list() {
    let h = Harness::new(1_000);
    let env = h.env_dir("x");
    std::fs::create_dir_all(&env).unwrap();
    mkfifo(&env.join("greta-env.json"));
    let o = bounded(h.cmd(&["env", "list"]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("FIFO"), "{out}{}", stderr(&o));
    // Plain `greta doctor` looks at the envs too.
    let o = bounded(h.cmd(&["doctor", "--json"]));
    assert!(
        matches!(o.status.code(), Some(0..=1)),
        "doctor: {:?} {}",
        o.status,
        stderr(&o)
    );
}

/// A bundle whose manifest is /dev/zero was read without bound.
#[test]
fn a_bundle_manifest_that_is_a_device_is_refused() {
    let h = Harness::new(1_000);
    let b = h.dir.path().join("bundle");
    std::fs::create_dir_all(&b).unwrap();
    std::os::unix::fs::symlink("/dev/zero", b.join("greta-bundle.json")).unwrap();
    let o = bounded(h.install_command(&["--bundle", b.to_str().unwrap()]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("character device"), "{err}");
}

/// Ctrl-C printed nothing (progress bars left frozen). greta now
/// says what was kept, and still dies of SIGINT (the status shells expect).
#[test]
fn ctrl_c_says_the_previous_env_is_untouched() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let h = Harness::new(2_000_000);
    let torch = h.throttle_torch(4096, 50);
    let c = h.install_command(&["--reinstall"]);
    let mut child = support::spawn_interruptible(c);
    // Wait for the observed state: torch's download has started.
    let start = Instant::now();
    while h.server.hits(&torch).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "download never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.signal(), Some(libc::SIGINT), "{st:?} {err}");
    assert!(
        err.contains("interrupted; the previous env is untouched"),
        "{err}"
    );
}

/// Killed between the swap's two renames, the previous env was
/// only `.backup-<name>`: `env list` showed nothing and `env remove` said
/// there was no such env, until the next install.
#[test]
fn an_env_left_as_a_backup_by_a_killed_swap_is_restored() {
    let h = Harness::new(1_000);
    let envs = h.envs_dir();
    let backup = envs.join(".backup-x");
    std::fs::create_dir_all(backup.join("bin")).unwrap();
    std::fs::write(backup.join("bin/marker"), b"previous env").unwrap();
    let o = bounded(h.cmd(&["env", "list", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names = support::env_names(&v);
    assert_eq!(names, vec!["x"], "{}", stderr(&o));
    assert!(stderr(&o).contains("restored env x"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(h.env_dir("x").join("bin/marker")).unwrap(),
        b"previous env"
    );
    assert!(!backup.exists());
    // And removal finds it.
    std::fs::rename(h.env_dir("x"), &backup).unwrap();
    let o = bounded(h.cmd(&["env", "remove", "x"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!h.env_dir("x").exists() && !backup.exists());
}
