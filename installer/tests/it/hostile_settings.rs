//! Settings at the edges of what they take. A duration at the top of its
//! type's range (`GRETA_FETCH_TIMEOUT_S=18446744073709551615`) panicked
//! with exit 101 ("overflow when adding duration to instant"): every
//! duration the installer takes from a variable or a flag is clamped to a
//! documented ceiling; the install runs as with a long limit. A value
//! below what a setting allows, or a path that is not UTF-8, is named with
//! its variable.

use crate::support::{self, Harness};

const HUGE: &str = "18446744073709551615";

#[test]
fn huge_duration_settings_are_clamped_not_a_panic() {
    let h = Harness::new(1_000);
    let mut c = h.install_command(&["--import-timeout", HUGE]);
    c.env("GRETA_FETCH_TIMEOUT_S", HUGE)
        .env("GRETA_FETCH_BACKOFF_MS", HUGE);
    let o = c.output().unwrap();
    let err = support::stderr(&o);
    assert!(!err.contains("panicked"), "{}", support::text(&o));
    assert_eq!(o.status.code(), Some(0), "{}", support::text(&o));
    assert!(h.env_dir("cpu").join("greta-env.json").exists());
}

/// `greta lock update --timeout` with the largest number: a clear run (`/bin/false`
/// as uv: it fails, saying uv failed, never a panic).
#[test]
fn a_huge_lock_update_timeout_is_not_a_panic() {
    let h = Harness::new(1_000);
    let o = h
        .cmd(&[
            "lock",
            "update",
            "cpu",
            "--uv",
            "/bin/false",
            "--timeout",
            HUGE,
            "--dry-run",
        ])
        .output()
        .unwrap();
    let err = support::stderr(&o);
    assert!(!err.contains("panicked"), "{}", support::text(&o));
    assert_ne!(o.status.code(), Some(101), "{}", support::text(&o));
    assert!(err.contains("/bin/false"), "{}", support::text(&o));
}

/// `GRETA_FETCH_ATTEMPTS=0` was read as 1 and the install then failed on
/// the first server error without naming the variable: a value below what
/// a setting allows is refused by name, before anything is fetched.
#[test]
fn a_setting_below_its_least_value_is_refused_by_name() {
    let h = Harness::new(1_000);
    let torch = h.wheel("torch").filename.clone();
    h.server.fault_once(&torch, support::Fault::Status(500));
    for (var, want) in [
        (
            "GRETA_FETCH_ATTEMPTS",
            "GRETA_FETCH_ATTEMPTS=\"0\": 0 is less than 1, the least it allows",
        ),
        (
            "GRETA_FETCH_JOBS",
            "GRETA_FETCH_JOBS=\"0\": 0 is less than 1, the least it allows",
        ),
        (
            "GRETA_FETCH_TIMEOUT_S",
            "GRETA_FETCH_TIMEOUT_S=\"0\": 0 seconds is less than 1s, the least it allows",
        ),
    ] {
        let o = h.install_command(&[]).env(var, "0").output().unwrap();
        let err = support::stderr(&o);
        assert_ne!(o.status.code(), Some(0), "{}", support::text(&o));
        assert!(err.contains(want), "{var}: {err}");
        assert!(
            h.server.log().is_empty(),
            "{var}: fetched {:?}",
            h.server.log()
        );
    }
}

/// A `GRETA_LOCK_DIR` that is not UTF-8 was shown as `/tmp/��bad` in a
/// message that did not say where the directory came from: its bytes are
/// shown escaped, beside the variable.
#[test]
fn a_lock_dir_that_is_not_utf8_is_named_with_its_variable_and_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let h = Harness::new(1_000);
    let dir = h
        .dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"\xff\xfebad"));
    let o = h
        .cmd(&["lock", "list"])
        .env("GRETA_LOCK_DIR", &dir)
        .output()
        .unwrap();
    let err = support::stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{}", support::text(&o));
    let shown = format!("{}/\\xff\\xfebad", h.dir.path().display());
    assert!(
        err.contains(&format!(
            "cannot read {shown}/matrix.toml: no such file (the lock directory, set by the environment variable GRETA_LOCK_DIR)"
        )),
        "{err}"
    );
    assert!(!err.contains('\u{fffd}'), "{err}");
}
