//! A mistyped value (profile, gate, check id, backend, lock profile) is
//! refused with exit 2 and the nearest values, before any device or
//! machine is probed: no backend is chosen, no snapshot is written.

use crate::support::greta;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    greta().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--gate` with a near miss: the three nearest gates and `--list-gates`,
/// not every gate id; and no backend was chosen (choosing one probes the
/// drivers and says so on stderr).
#[test]
fn an_unknown_gate_names_the_nearest_before_any_device_is_probed() {
    let o = run(&[
        "smoke",
        "--gate",
        "gemm_f16.25",
        "--no-save",
        "--no-progress",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("did you mean `gemm_f16.256`"), "{e}");
    assert!(e.contains("greta smoke --list-gates"), "{e}");
    assert!(e.matches('`').count() <= 6, "three ids at most: {e}");
    assert!(!e.contains("fill.tiny"), "the catalogue is not dumped: {e}");
    assert!(!e.contains("backend"), "a device was probed: {e}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_mistyped_profile_or_backend_says_what_was_meant() {
    let o = run(&["smoke", "--profile", "defualt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `default`?"),
        "{}",
        stderr(&o)
    );
    let o = run(&["smoke", "--backend", "rocm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("use --backend hip"), "{}", stderr(&o));
    let o = run(&["install", "--profile", "rocm6.44", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `rocm6.4`?"),
        "{}",
        stderr(&o)
    );
}

/// `doctor --check` with a near miss names the nearest ids, and refuses
/// before the machine is read: `--capture` writes no snapshot.
#[test]
fn an_unknown_check_is_refused_before_the_machine_is_read() {
    let d = tempfile::tempdir().unwrap();
    let snap = d.path().join("snap");
    let o = run(&[
        "doctor",
        "--check",
        "kfd.permision",
        "--capture",
        snap.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("did you mean `kfd.permission`"), "{e}");
    assert!(e.contains("greta doctor --list-checks"), "{e}");
    assert!(
        !snap.exists(),
        "the machine was read and captured before the refusal"
    );
}
