//! SIGTERM or SIGINT while `greta smoke` or `greta report` runs: the
//! temporary files of the outputs being written are removed, the command's
//! last words are written (`smoke --prom FILE` marks FILE undecided), and
//! greta dies of the signal, so the exit status stays "killed by SIGTERM"
//! (or SIGINT) as shells and schedulers expect, never 0 or 1 from a run
//! that was stopped. An ignored signal stays ignored. SIGKILL cannot be
//! caught: what it leaves, the next write to the same directory sweeps
//! (`greta_fsread::output`).
//!
//! The handler only notes the signal and writes its number to a pipe
//! (async-signal-safe); a thread waiting on the pipe does the work:
//! `greta_fsread::output::stop_writes` removes every temporary this
//! process holds and holds any other thread that would write another (a
//! writer whose temporary was removed under it waits too, rather than
//! report a failed rename), then the last words run, then the default
//! action is restored and the signal raised again. `main` checks
//! [`hold_if_stopped`] before it returns, so a run that finishes while the
//! thread works does not exit first.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The write end of the pipe the handler writes to (-1: none yet).
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
/// A stop signal came.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

const SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
    let fd = PIPE_W.load(Ordering::Relaxed);
    let b = sig as u8;
    // SAFETY: write is async-signal-safe; `b` lives for the call. A failed
    // write (full pipe: a second signal) changes nothing.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
}

/// From now on a SIGTERM or SIGINT removes this process's temporaries,
/// runs `last` (given the signal's name) and ends greta by the signal.
/// Call once, before the command starts its work.
pub fn on_stop(what: &'static str, last: impl FnOnce(&'static str) + Send + 'static) {
    let mut fds = [-1; 2];
    // SAFETY: a two-int array for pipe2; close-on-exec so no child keeps it.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        crate::errln!(
            "greta {what}: warning: {}: a stop signal will leave temporary files behind",
            std::io::Error::last_os_error()
        );
        return;
    }
    let [r, w] = fds;
    PIPE_W.store(w, Ordering::Relaxed);
    let spawned = std::thread::Builder::new()
        .name("greta-stop-signal".into())
        .spawn(move || {
            let Some(sig) = wait_for_signal(r) else {
                return;
            };
            let name = if sig == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            greta_fsread::output::stop_writes();
            last(name);
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

/// For `main`, before it returns: when a stop signal came, wait for the
/// thread that handles it to end greta by the signal.
pub fn hold_if_stopped() {
    if SIGNALLED.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
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
