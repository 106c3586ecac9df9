//! A real pseudo-terminal, for what greta draws only on a terminal
//! (progress bars, colour).

use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Runs `cmd` with stderr (and, with `stdout_too`, stdout) on the slave
/// side of a new 200-column pseudo-terminal (no bar line wraps), any other
/// stdout on a pipe. Returns the output (`stderr` empty) and what the
/// terminal received, read until every slave descriptor is closed.
pub fn run_on_pty(mut cmd: Command, stdout_too: bool) -> (Output, String) {
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    rustix::termios::tcsetwinsize(
        &master,
        rustix::termios::Winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )
    .unwrap();
    let slave: OwnedFd = rustix::fs::open(
        name.as_c_str(),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    if stdout_too {
        cmd.stdout(Stdio::from(slave.try_clone().unwrap()));
    } else {
        cmd.stdout(Stdio::piped());
    }
    cmd.stderr(Stdio::from(slave));
    let child = cmd.spawn().unwrap();
    // The Command holds our copies of the slave: without dropping it, the
    // master would never see the end of the output.
    drop(cmd);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut m = std::fs::File::from(master);
        let mut seen = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match m.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                // EIO: every slave descriptor is closed (Linux).
                Err(e) if e.raw_os_error() == Some(libc::EIO) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("reading the pty: {e}"),
            }
        }
        let _ = tx.send(seen);
    });
    let o = child.wait_with_output().unwrap();
    let seen = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the pty was still open 120 s after greta exited");
    (o, String::from_utf8_lossy(&seen).into_owned())
}
