//! Ctrl-C during `greta install`: say what was kept, then die of SIGINT as
//! before. The install never needs cleanup on interrupt (the env is built
//! aside and renamed into place; downloads are verified before they enter
//! the cache), so the handler only writes one line, async-signal-safely,
//! below the progress bars, and re-raises the signal at its default action:
//! the exit status stays "killed by SIGINT", as shells and tests expect.

const INSTALL: &[u8] = b"\ngreta install: interrupted; the previous env is untouched and verified downloads stay cached (rerun to continue)\n";

extern "C" fn on_sigint(_: libc::c_int) {
    // SAFETY: write, signal and raise are async-signal-safe; INSTALL is static.
    unsafe {
        libc::write(2, INSTALL.as_ptr().cast(), INSTALL.len());
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::raise(libc::SIGINT);
    }
}

/// Installs the handler for `greta install`, unless SIGINT is ignored (a
/// background job started by a non-interactive shell keeps it ignored).
pub fn on_install_interrupt() {
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
