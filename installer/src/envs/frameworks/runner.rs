//! The gate script's process: its own process group (so everything a
//! framework starts can be killed at once), `PR_SET_PDEATHSIG` (it dies with
//! greta), a hard time limit, and output read with a size cap.
//!
//! After the interpreter exits, or when its time is up, the whole group is
//! killed before the leader is reaped: the leader stays a zombie until then
//! (the waiter uses `waitid(WNOWAIT)`), so its pid, which is the group id,
//! cannot have been reused by then. Nothing the run started is left behind,
//! whether it finished, hung or crashed.

use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// Most bytes kept of stdout and of stderr each; the rest is read and dropped.
pub const MAX_OUTPUT: usize = 16 << 20;

/// How long the pipes may stay open after the group was killed: only a
/// process that left the group (setsid) could hold them.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

pub struct Running {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    out: Receiver<Captured>,
    err: Receiver<Captured>,
    exited: Receiver<()>,
}

/// What a stream held (at most [`MAX_OUTPUT`] bytes) and whether it was cut.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    pub text: String,
    pub cut: bool,
}

#[derive(Debug)]
pub struct Finished {
    pub status: Option<ExitStatus>,
    pub stdout: Captured,
    pub stderr: Captured,
    /// The time limit was reached and the group was killed.
    pub timed_out: bool,
    /// A pipe was still open after the group was killed.
    pub pipes_held: bool,
}

fn reader(mut r: impl Read + Send + 'static) -> Receiver<Captured> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut keep = Vec::new();
        let mut buf = [0u8; 65536];
        let mut cut = false;
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = MAX_OUTPUT.saturating_sub(keep.len());
                    if n > room {
                        cut = true;
                    }
                    keep.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(Captured {
            text: String::from_utf8_lossy(&keep).into_owned(),
            cut,
        });
    });
    rx
}

/// Starts `cmd` as the leader of a new process group, stdin piped.
pub fn start(mut cmd: Command) -> Result<Running> {
    let shown = format!("{cmd:?}");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().with_context(|| format!("starting {shown}"))?;
    let stdin = child.stdin.take();
    let out = reader(child.stdout.take().expect("piped"));
    let err = reader(child.stderr.take().expect("piped"));
    // WNOWAIT leaves the child unreaped (see the module doc).
    let exited = crate::envs::installer::exit_signal(child.id());
    Ok(Running {
        child: Some(child),
        stdin,
        out,
        err,
        exited,
    })
}

impl Running {
    /// Writes `data` to stdin and closes it (a child that already died
    /// makes this an error, which the caller may ignore: `finish` tells).
    pub fn send_and_close(&mut self, data: &[u8]) -> Result<()> {
        let mut s = self.stdin.take().context("stdin already closed")?;
        s.write_all(data).context("writing to the gate runner")
    }

    /// Waits up to `limit`, then kills the group and collects the output.
    pub fn finish(mut self, limit: Duration) -> Finished {
        let exited = self.exited.recv_timeout(limit).is_ok();
        self.stdin.take();
        let mut child = self.child.take().expect("finish runs once");
        kill_group(&child);
        let status = child.wait().ok();
        let out = self.out.recv_timeout(DRAIN_LIMIT);
        let err = self.err.recv_timeout(DRAIN_LIMIT);
        Finished {
            status,
            pipes_held: out.is_err() || err.is_err(),
            stdout: out.unwrap_or_default(),
            stderr: err.unwrap_or_default(),
            timed_out: !exited,
        }
    }
}

fn kill_group(child: &Child) {
    // SAFETY: plain syscall; the group id is the unreaped leader's pid.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            kill_group(&c);
            let _ = c.wait();
        }
    }
}
