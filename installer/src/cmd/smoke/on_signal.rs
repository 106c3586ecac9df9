//! SIGTERM or SIGINT during `greta smoke --prom FILE`: the textfile says
//! the run was undecided (`greta_smoke_status 2`, the time of the signal)
//! before greta dies of the signal. Without it a node whose health check
//! was stopped (the Slurm wrapper's `timeout`, a drain, Ctrl-C) keeps the
//! previous run's healthy file, and its timestamp, until the next run.
//!
//! The handler only writes the signal's number to a pipe (async-signal-
//! safe); a thread waiting on the pipe writes the textfile as any run does
//! (`prom::write_atomic`: a temporary file renamed over FILE, so the
//! collector never sees half a file), then restores the default action and
//! raises the signal again, so the exit status stays "killed by SIGTERM"
//! (or SIGINT) as shells and schedulers expect. An ignored signal stays
//! ignored. SIGKILL cannot be caught: after one, the file's
//! `greta_smoke_last_run_timestamp_seconds` grows old (docs/fleet.md's
//! alert on it covers that).

use greta_smoke::{prom, Profile};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

/// The write end of the pipe the handler writes to (-1: none yet).
static PIPE_W: AtomicI32 = AtomicI32::new(-1);

const SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = PIPE_W.load(Ordering::Relaxed);
    let b = sig as u8;
    // SAFETY: write is async-signal-safe; `b` lives for the call. A failed
    // write (full pipe: a second signal) changes nothing.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
}

/// From now on, a SIGTERM or SIGINT marks `path` undecided before greta
/// dies of it. Call once, before the run starts its work.
pub fn mark_undecided_on_signal(path: PathBuf, profile: Profile, started: Instant) {
    let mut fds = [-1; 2];
    // SAFETY: a two-int array for pipe2; close-on-exec so no child keeps it.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!(
            "greta smoke: warning: {}: a stop signal will leave {} as it was",
            std::io::Error::last_os_error(),
            path.display()
        );
        return;
    }
    let [r, w] = fds;
    PIPE_W.store(w, Ordering::Relaxed);
    let spawned = std::thread::Builder::new()
        .name("greta-smoke-signal".into())
        .spawn(move || {
            let Some(sig) = wait_for_signal(r) else {
                return;
            };
            let name = if sig == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            let text = prom::render_undecided(profile.as_str(), started.elapsed().as_secs_f64());
            match prom::write_atomic(&path, &text) {
                Ok(()) => eprintln!(
                    "greta smoke: stopped by {name}; {} now says undecided (greta_smoke_status 2)",
                    path.display()
                ),
                Err(e) => eprintln!(
                    "greta smoke: stopped by {name}; could not mark {} undecided: {e}",
                    path.display()
                ),
            }
            // SAFETY: plain calls; the default action ends the process.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::kill(libc::getpid(), sig);
            }
        });
    if spawned.is_err() {
        return; // no watcher: leave the default actions in place
    }
    for sig in SIGNALS {
        // SAFETY: sigaction with a valid handler and a zeroed struct; the
        // old action is read first so an ignored signal stays ignored.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// Blocks until the handler writes a signal number to the pipe `r`;
/// `None` if the pipe fails (then nothing is done on a signal).
fn wait_for_signal(r: libc::c_int) -> Option<libc::c_int> {
    loop {
        let mut b = 0u8;
        // SAFETY: reads one byte into `b`.
        let n = unsafe { libc::read(r, (&mut b as *mut u8).cast(), 1) };
        if n == 1 && SIGNALS.contains(&libc::c_int::from(b)) {
            return Some(libc::c_int::from(b));
        }
        if n == 0
            || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
        {
            return None;
        }
    }
}
