//! `GRETA_TEST_PAUSE_AT=<step>`: the test hook that holds greta at a named
//! point so that a kill or interrupt test sends its signal at a state it
//! has observed (the line this prints on stderr), never after a sleep.
//! Steps: the install's (`fetched`, `venv`, `installed`, `checked`,
//! `bundle-swap`, `bundle-written`) and the output writer's (`write-prom`,
//! `write-page`, `write-result`, `write-capture`, `write-fix`: the temporary file or
//! directory is written and synced, not yet renamed into place).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by the first pause: a process holds once, so the thread that
/// handles the stop signal can still write what it writes at the same
/// step (`smoke --prom` marks its textfile undecided).
static PAUSED: AtomicBool = AtomicBool::new(false);

/// Holds the calling thread (for up to an hour) when `GRETA_TEST_PAUSE_AT`
/// names `step` and no pause happened in this process yet.
pub fn pause_at(step: &str) {
    if std::env::var(crate::EnvVars::GRETA_TEST_PAUSE_AT).is_ok_and(|s| s == step)
        && !PAUSED.swap(true, Ordering::SeqCst)
    {
        eprintln!("greta: paused at {step} (GRETA_TEST_PAUSE_AT)");
        for _ in 0..3600 {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}
