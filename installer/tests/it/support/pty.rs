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
pub fn run_on_pty(cmd: Command, stdout_too: bool) -> (Output, String) {
    run_on_pty_cols(cmd, stdout_too, 200)
}

/// A new pseudo-terminal of `cols` columns: its master and slave.
fn open_pty(cols: u16) -> (OwnedFd, OwnedFd) {
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    rustix::termios::tcsetwinsize(
        &master,
        rustix::termios::Winsize {
            ws_row: 50,
            ws_col: cols,
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
    (master, slave)
}

/// [`run_on_pty`] on a terminal `cols` columns wide.
pub fn run_on_pty_cols(mut cmd: Command, stdout_too: bool, cols: u16) -> (Output, String) {
    let (master, slave) = open_pty(cols);
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

/// An interactive program (a shell) with a new 80-column pseudo-terminal
/// as its stdin, stdout and stderr: each of `typed` is written to it once
/// the program has been quiet for a moment, then the terminal is read
/// until `until` shows or `timeout` passes, and the program is killed.
/// Returns everything the terminal showed.
pub fn converse(mut cmd: Command, typed: &[&str], until: &str, timeout: Duration) -> String {
    use std::io::Write;
    let (master, slave) = open_pty(80);
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let mut writer = std::fs::File::from(master.try_clone().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut m = std::fs::File::from(master);
        let mut buf = [0u8; 8192];
        loop {
            match m.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    let mut seen = Vec::new();
    // Reads until nothing came for `quiet` (or `stop` says it has what it needs).
    let mut read_until =
        |quiet: Duration, deadline: std::time::Instant, stop: &dyn Fn(&[u8]) -> bool| {
            while std::time::Instant::now() < deadline {
                match rx.recv_timeout(quiet) {
                    Ok(chunk) => {
                        seen.extend_from_slice(&chunk);
                        if stop(&seen) {
                            return;
                        }
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => return,
                    Err(_) => return,
                }
            }
        };
    let deadline = std::time::Instant::now() + timeout;
    for t in typed {
        read_until(Duration::from_millis(500), deadline, &|_| false);
        writer.write_all(t.as_bytes()).unwrap();
    }
    let want = until.as_bytes().to_vec();
    read_until(timeout, deadline, &|s: &[u8]| {
        s.windows(want.len()).any(|w| w == want.as_slice())
    });
    let _ = child.kill();
    let _ = child.wait();
    String::from_utf8_lossy(&seen).into_owned()
}

/// The lines of `seen` (what a terminal `width` columns wide received)
/// that ran past its last column, as the terminal met them: the cursor's
/// column is followed through carriage returns, newlines, tabs,
/// backspaces and the cursor moves of CSI sequences (`G`, `C`, `D`;
/// colour and erase codes take no columns), so a bar redrawn in place is
/// one line each time, and a line that ends exactly at the last column
/// (indicatif fills its last bar line so) is no overflow until something
/// more is printed on it. Every character is taken as one column: greta's
/// own glyphs (✓ ✗ · … █ ░ ⠋) are, and so is what the tests print.
pub fn overflowing_lines(seen: &str, width: usize) -> Vec<String> {
    let mut over = Vec::new();
    let mut col = 0usize;
    let mut line = String::new();
    let mut chars = seen.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    let mut param = String::new();
                    for f in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&f) {
                            let n = param
                                .trim_start_matches('?')
                                .split(';')
                                .next()
                                .and_then(|p| p.parse::<usize>().ok())
                                .unwrap_or(1);
                            match f {
                                'G' => col = n.saturating_sub(1),
                                'C' => col = (col + n).min(width),
                                'D' => col = col.saturating_sub(n),
                                _ => {}
                            }
                            break;
                        }
                        param.push(f);
                    }
                } else {
                    // Another escape: its one following character.
                    chars.next();
                }
            }
            '\r' => col = 0,
            '\n' => {
                col = 0;
                line.clear();
            }
            '\t' => col = (col / 8 + 1) * 8,
            '\x08' => col = col.saturating_sub(1),
            c if c.is_control() => {}
            c => {
                if col >= width {
                    over.push(format!("{line}{c}"));
                    col = 0;
                }
                col += 1;
                line.push(c);
            }
        }
    }
    over
}

/// Every line of `seen` fits a terminal `width` columns wide
/// ([`overflowing_lines`] finds none).
#[track_caller]
pub fn assert_fits(seen: &str, width: u16) {
    let over = overflowing_lines(seen, width as usize);
    assert!(
        over.is_empty(),
        "{} line(s) ran past column {width}, the first: {:?}\n{seen}",
        over.len(),
        over[0]
    );
}

#[test]
fn overflow_is_found_where_the_terminal_would_wrap() {
    // 80 columns exactly, then a newline: fits.
    assert!(overflowing_lines(&format!("{}\n", "a".repeat(80)), 80).is_empty());
    // 81: the 81st character wraps.
    assert_eq!(overflowing_lines(&"a".repeat(81), 80).len(), 1);
    // A bar redrawn in place with \r and an erase code: each draw alone.
    let bar = format!("\r\x1b[2K{}", "=".repeat(70)).repeat(5);
    assert!(overflowing_lines(&bar, 80).is_empty());
    // Colour codes take no columns; a cursor move does.
    let coloured = format!("\x1b[1;32m{}\x1b[0m\n", "b".repeat(80));
    assert!(overflowing_lines(&coloured, 80).is_empty());
    assert_eq!(overflowing_lines("\x1b[75Gabcdefg", 80).len(), 1);
    // A line at the last column, then a carriage return: no wrap.
    assert!(overflowing_lines(&format!("{}\r{}", "c".repeat(80), "d".repeat(3)), 80).is_empty());
}
