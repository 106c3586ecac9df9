//! Issue 28, item 8: a duration setting at the top of its type's range
//! (`GRETA_FETCH_TIMEOUT_S=18446744073709551615`) panicked with exit 101
//! ("overflow when adding duration to instant"). Every duration the
//! installer takes from a variable or a flag is clamped to a documented
//! ceiling; the install runs as with a long limit.

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
