//! The one way greta runs a child process (python, uv, pip, a compile or
//! device child): output captured, a time limit, and no orphan.
//!
//! Children get `PR_SET_PDEATHSIG(SIGKILL)`: if greta is killed mid-install,
//! uv/pip die with it instead of writing on into a staging dir that the next
//! run is about to delete. A child still running when its [`Running`] is
//! dropped is killed and reaped.
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// What a finished child printed, and how it ended.
#[derive(Debug)]
pub struct Output {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Why a child gave no [`Output`].
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("starting {shown}: {source}")]
    Spawn {
        shown: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{shown} did not finish within {limit:?} and was killed")]
    TimedOut { shown: String, limit: Duration },
    #[error("waiting for {shown}: {source}")]
    Wait {
        shown: String,
        #[source]
        source: std::io::Error,
    },
}

/// Runs `cmd` to completion (or kills it after `timeout`), capturing output.
pub fn run(cmd: Command, timeout: Option<Duration>) -> Result<Output, ChildError> {
    start(cmd, false)?.finish(timeout)
}

/// A child started by [`start`]: its output is being collected, and it is
/// killed if dropped unfinished.
pub struct Running {
    shown: String,
    child: Option<std::process::Child>,
    stdin: Option<std::process::ChildStdin>,
    out: Option<std::thread::JoinHandle<Vec<u8>>>,
    err: Option<std::thread::JoinHandle<Vec<u8>>>,
    exited: std::sync::mpsc::Receiver<()>,
}

/// Starts `cmd` with captured output and, when `stdin_piped`, a pipe to
/// its stdin (else /dev/null).
pub fn start(mut cmd: Command, stdin_piped: bool) -> Result<Running, ChildError> {
    let shown = format!("{cmd:?}");
    cmd.stdin(if stdin_piped {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut child = cmd.spawn().map_err(|source| ChildError::Spawn {
        shown: shown.clone(),
        source,
    })?;
    let stdin = child.stdin.take();
    let collect = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut s);
            }
            s
        })
    };
    let t_out = collect(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let t_err = collect(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let rx = exit_signal(child.id());
    Ok(Running {
        shown,
        child: Some(child),
        stdin,
        out: Some(t_out),
        err: Some(t_err),
        exited: rx,
    })
}

/// Makes `cmd`'s child receive SIGKILL when greta dies.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs between fork and exec; prctl is
    // async-signal-safe and the closure touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

impl Running {
    /// The child's pid (for signals from a test hook or a watchdog).
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The pipe to the child's stdin, when started with one.
    pub fn stdin(&mut self) -> Option<&mut std::process::ChildStdin> {
        self.stdin.as_mut()
    }

    /// Closes the child's stdin, waits for it (killing it after `timeout`,
    /// counted from now) and returns what it printed.
    pub fn finish(mut self, timeout: Option<Duration>) -> Result<Output, ChildError> {
        // Our stdin end goes first: a child reading it to the end sees EOF.
        self.stdin.take();
        let exited = match timeout {
            None => self.exited.recv().is_ok(),
            Some(limit) => self.exited.recv_timeout(limit).is_ok(),
        };
        let shown = std::mem::take(&mut self.shown);
        let Some(mut child) = self.child.take() else {
            unreachable!("finish consumes the only Running")
        };
        if !exited {
            let _ = child.kill();
        }
        let status = child.wait().map_err(|source| ChildError::Wait {
            shown: shown.clone(),
            source,
        })?;
        if !exited {
            return Err(ChildError::TimedOut {
                shown,
                limit: timeout.unwrap_or_default(),
            });
        }
        let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            String::from_utf8_lossy(&h.and_then(|h| h.join().ok()).unwrap_or_default()).into_owned()
        };
        Ok(Output {
            status,
            stdout: join(self.out.take()),
            stderr: join(self.err.take()),
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A channel that receives once when child `pid` has exited. A waiter thread
/// blocks in `waitid(WNOWAIT)`, so the child stays unreaped (its pid cannot
/// be reused before the owner's `child.wait()`), and a time limit is a plain
/// `recv_timeout` instead of a polling loop.
pub fn exit_signal(pid: u32) -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: waitid writes only into `info`, which we own; WNOWAIT
            // leaves the child to its owner's wait.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if rc != -1 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                break;
            }
        }
        let _ = tx.send(());
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_status_come_back() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let o = run(c, Some(Duration::from_secs(60))).unwrap();
        assert_eq!(o.status.code(), Some(3));
        assert_eq!((o.stdout.as_str(), o.stderr.as_str()), ("out\n", "err\n"));
    }

    #[test]
    fn a_child_past_its_limit_is_killed_and_reported() {
        let mut c = Command::new("sleep");
        c.arg("600");
        let t = std::time::Instant::now();
        let e = run(c, Some(Duration::from_millis(200))).unwrap_err();
        assert!(matches!(e, ChildError::TimedOut { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let e = run(Command::new("/nonexistent/greta-nope"), None).unwrap_err();
        assert!(matches!(e, ChildError::Spawn { .. }));
        assert!(e.to_string().contains("greta-nope"), "{e}");
    }

    #[test]
    fn stdin_is_piped_when_asked() {
        use std::io::Write;
        let mut r = start(Command::new("cat"), true).unwrap();
        r.stdin().unwrap().write_all(b"hello").unwrap();
        let o = r.finish(Some(Duration::from_secs(60))).unwrap();
        assert_eq!(o.stdout, "hello");
    }
}
