//! Ctrl-C during `greta install` or `greta bundle`: say what was kept, then
//! die of SIGINT as before. Neither needs cleanup on interrupt (the env and
//! the bundle are built aside and swapped into place; downloads are
//! verified before they enter the cache), so the handler only writes one
//! line, async-signal-safely, below the progress bars, and re-raises the
//! signal at its default action: the exit status stays "killed by SIGINT",
//! as shells and tests expect.
//!
//! What is true depends on where the signal lands (the line said
//! "the previous env is untouched" while the previous env sat aside between
//! the swap's two renames), so the install tells this module when it
//! starts and ends the swap, and the handler picks the line by that phase
//! (an atomic load: async-signal-safe).

use std::sync::atomic::{AtomicU8, Ordering};

/// Where the run is, for the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// `greta install` before the swap: nothing of the env was touched.
    Building = 0,
    /// Between the swap's renames: the previous env may be aside.
    Swapping = 1,
    /// The new env is in place.
    Swapped = 2,
    /// `greta bundle`.
    Bundling = 3,
}

static PHASE: AtomicU8 = AtomicU8::new(Phase::Building as u8);

const BUILDING: &[u8] = b"\ngreta install: interrupted; the previous env is untouched and verified downloads stay cached (rerun to continue)\n";
const SWAPPING: &[u8] = b"\ngreta install: interrupted while swapping the new env in; if the previous env was set aside (.backup-NAME), the next greta install or greta env list puts it back; verified downloads stay cached\n";
const SWAPPED: &[u8] =
    b"\ngreta install: interrupted after the new env was swapped in; the new env is in place\n";
const BUNDLING: &[u8] = b"\ngreta bundle: interrupted; a previous bundle at the -o directory is unchanged, the half-made one beside it is removed by the next run, and verified downloads stay cached (rerun to continue)\n";

/// Tells the handler where the run is.
pub fn set_phase(p: Phase) {
    PHASE.store(p as u8, Ordering::SeqCst);
}

extern "C" fn on_sigint(_: libc::c_int) {
    let line = match PHASE.load(Ordering::SeqCst) {
        1 => SWAPPING,
        2 => SWAPPED,
        3 => BUNDLING,
        _ => BUILDING,
    };
    // SAFETY: write, signal and raise are async-signal-safe; `line` is static.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::raise(libc::SIGINT);
    }
}

/// Installs the handler for `greta install`, unless SIGINT is ignored (a
/// background job started by a non-interactive shell keeps it ignored).
pub fn on_install_interrupt() {
    set_phase(Phase::Building);
    install_handler();
}

/// Installs the handler for `greta bundle` (as [`on_install_interrupt`]).
pub fn on_bundle_interrupt() {
    set_phase(Phase::Bundling);
    install_handler();
}

fn install_handler() {
    // SAFETY: sigaction with a valid handler and zeroed struct; the old
    // action is read first so an ignored SIGINT stays ignored.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old) != 0
            || old.sa_sigaction == libc::SIG_IGN
        {
            return;
        }
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGINT, &act, std::ptr::null_mut());
    }
}
