//! The one way greta runs a child process (python, uv, pip, a compile or
//! device child, the framework gates): output captured with a size cap, a
//! time limit, and no orphan.
//!
//! - Every child gets `PR_SET_PDEATHSIG(SIGKILL)`: if greta is killed
//!   mid-install, uv/pip die with it instead of writing on into a staging
//!   dir that the next run is about to delete.
//! - [`Child::own_group`] makes the child the leader of a new process group,
//!   and the whole group is killed when the child exits, when its time is
//!   up, or when its [`Running`] is dropped: a framework's or a compiler's
//!   grandchildren go with it. The leader stays unreaped until then (the
//!   exit waiter uses `waitid(WNOWAIT)`), so its pid, the group id, cannot
//!   have been reused.
//! - stdout and stderr are read by threads into at most [`Child::cap`]
//!   bytes each (the rest is read and dropped, and [`Captured::cut`] says
//!   so); stdin bytes are written by a thread, so neither a chatty child nor
//!   one that never reads its input can block the time limit.
//!
//! Where greta runs itself as the child (a kernel compile, device work:
//! `greta __gpu ...`), the binary registers how to start itself once
//! ([`set_helper`]), and every layer below asks [`helper`] for it; the
//! typed requests and replies those children speak are their callers'
//! (the runtime's compile request, smoke's device-child protocol).
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// Most bytes kept of stdout and of stderr each, unless [`Child::cap`] says
/// otherwise.
pub const DEFAULT_CAP: usize = 64 << 20;

/// How long the pipes may stay open after the child (and its group) ended:
/// only a process that left the group (setsid) or a child that was not
/// given a group could hold them.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// What a stream held, at most the cap, and whether it was cut.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Captured {
    pub bytes: Vec<u8>,
    pub cut: bool,
}

impl Captured {
    /// The bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// How a started child ended.
#[derive(Debug)]
pub struct Finished {
    /// `None` only when waiting for it failed.
    pub status: Option<ExitStatus>,
    pub stdout: Captured,
    pub stderr: Captured,
    /// The time limit was reached and the child (its group) was killed.
    pub timed_out: bool,
    /// A pipe was still open [`DRAIN_LIMIT`] after the child ended.
    pub pipes_held: bool,
    /// From the start to the end of the child.
    pub wall: Duration,
}

/// How a child that ran to its end (not killed at its limit) ended, and
/// what it printed (see [`Child::output`]).
#[derive(Debug)]
pub struct Exited {
    pub status: ExitStatus,
    /// As written (a reply may be any bytes), at most the cap.
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// From the start to the end of the child.
    pub wall: Duration,
}

impl Exited {
    /// `exit status 2`, or `killed by signal 6 (SIGABRT)`.
    pub fn how(&self) -> String {
        describe(self.status)
    }
}

/// What a finished child printed, as text, and how it ended (see [`run`]).
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
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

/// `exit status N` or `killed by signal N (NAME)`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
        _ => status.to_string(),
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGKILL => "SIGKILL",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// What the child reads.
enum Input {
    Null,
    Bytes(Vec<u8>),
    Piped,
}

/// A child to start: the command and how it is bounded.
pub struct Child {
    cmd: Command,
    group: bool,
    merge: bool,
    cap: usize,
    input: Input,
    name: Option<String>,
}

impl Child {
    pub fn new(cmd: Command) -> Child {
        Child {
            cmd,
            group: false,
            merge: false,
            cap: DEFAULT_CAP,
            input: Input::Null,
            name: None,
        }
    }

    /// What errors call the child ("the hip smoke child", "hipcc"), in
    /// place of its command line.
    pub fn named(mut self, what: impl Into<String>) -> Child {
        self.name = Some(what.into());
        self
    }

    /// Runs the child as the leader of its own process group, killed as a
    /// group when it ends, times out or is dropped.
    pub fn own_group(mut self) -> Child {
        self.group = true;
        self
    }

    /// Sends stderr into stdout's pipe, so [`Finished::stdout`] holds both
    /// interleaved as the child wrote them (a failing tool's message in
    /// context: how the doctor keeps rocminfo's output) and `stderr` is
    /// empty.
    pub fn merge_stderr(mut self) -> Child {
        self.merge = true;
        self
    }

    /// Keeps at most `bytes` of stdout and of stderr each.
    pub fn cap(mut self, bytes: usize) -> Child {
        self.cap = bytes;
        self
    }

    /// Feeds `bytes` to stdin, then closes it.
    pub fn stdin_bytes(mut self, bytes: Vec<u8>) -> Child {
        self.input = Input::Bytes(bytes);
        self
    }

    /// Keeps a pipe to stdin for [`Running::send_and_close`].
    pub fn stdin_piped(mut self) -> Child {
        self.input = Input::Piped;
        self
    }

    /// Starts it; its output is being collected from now on.
    pub fn start(mut self) -> Result<Running, ChildError> {
        let shown = self.shown();
        self.cmd.stdin(match self.input {
            Input::Null => Stdio::null(),
            _ => Stdio::piped(),
        });
        // One pipe for both streams when merged; the Command's copies of
        // its write end close when `self` drops at the end of this function,
        // so the reader sees end-of-file when the child's side closes.
        let merged = if self.merge {
            let (r, w) = std::io::pipe().map_err(|source| ChildError::Spawn {
                shown: shown.clone(),
                source,
            })?;
            let w2 = w.try_clone().map_err(|source| ChildError::Spawn {
                shown: shown.clone(),
                source,
            })?;
            self.cmd.stdout(w).stderr(w2);
            Some(r)
        } else {
            self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            None
        };
        if self.group {
            self.cmd.process_group(0);
        }
        die_with_parent(&mut self.cmd);
        let started = Instant::now();
        let mut child = self.cmd.spawn().map_err(|source| ChildError::Spawn {
            shown: shown.clone(),
            source,
        })?;
        let stdin = match (self.input, child.stdin.take()) {
            (Input::Bytes(bytes), Some(mut pipe)) => {
                // A child that exits without reading makes this fail: its
                // status tells, not this write.
                std::thread::spawn(move || {
                    let _ = pipe.write_all(&bytes);
                });
                None
            }
            (_, pipe) => pipe,
        };
        let (out, err) = match merged {
            Some(r) => (
                reader(Some(r), self.cap),
                reader(None::<std::io::PipeReader>, 0),
            ),
            None => (
                reader(child.stdout.take(), self.cap),
                reader(child.stderr.take(), self.cap),
            ),
        };
        let exited = exit_signal(child.id());
        Ok(Running {
            child: Some(child),
            group: self.group,
            stdin,
            out,
            err,
            exited,
            started,
        })
    }

    /// Starts it and waits at most `limit` (`None`: no limit).
    pub fn finish_within(self, limit: Option<Duration>) -> Result<Finished, ChildError> {
        Ok(self.start()?.finish(limit))
    }

    /// Runs it to its end within `limit` (`None`: no limit): how it exited
    /// and what it printed, or an error naming it when it could not start,
    /// was killed at the limit, or could not be reaped.
    pub fn output(self, limit: Option<Duration>) -> Result<Exited, ChildError> {
        let shown = self.shown();
        let f = self.finish_within(limit)?;
        if f.timed_out {
            return Err(ChildError::TimedOut {
                shown,
                limit: limit.unwrap_or_default(),
            });
        }
        let status = f.status.ok_or_else(|| ChildError::Wait {
            shown,
            source: std::io::Error::other("the child could not be reaped"),
        })?;
        Ok(Exited {
            status,
            stderr: f.stderr.text(),
            stdout: f.stdout.bytes,
            wall: f.wall,
        })
    }

    /// Its name, else its command line.
    fn shown(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{:?}", self.cmd))
    }
}

/// A started child: killed (with its group, if it has one) if dropped
/// unfinished.
pub struct Running {
    child: Option<std::process::Child>,
    group: bool,
    stdin: Option<std::process::ChildStdin>,
    out: Receiver<Captured>,
    err: Receiver<Captured>,
    exited: Receiver<()>,
    started: Instant,
}

/// Reads `pipe` to its end on a thread, keeping at most `cap` bytes.
fn reader(pipe: Option<impl Read + Send + 'static>, cap: usize) -> Receiver<Captured> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut keep = Captured::default();
        if let Some(mut r) = pipe {
            let mut buf = [0u8; 65536];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = cap.saturating_sub(keep.bytes.len());
                        keep.cut |= n > room;
                        keep.bytes.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        let _ = tx.send(keep);
    });
    rx
}

/// Makes `cmd`'s child receive SIGKILL when greta dies.
fn die_with_parent(cmd: &mut Command) {
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

    /// Writes `data` to the piped stdin ([`Child::stdin_piped`]) and closes
    /// it. A child that already died makes this an error the caller may
    /// ignore: [`Running::finish`] tells how it ended.
    pub fn send_and_close(&mut self, data: &[u8]) -> std::io::Result<()> {
        let mut s = self
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("stdin is not piped, or already closed"))?;
        s.write_all(data)
    }

    /// Closes stdin, waits up to `limit` (`None`: for ever), kills the
    /// child (its group) if it is still running, reaps it and collects what
    /// it printed.
    pub fn finish(mut self, limit: Option<Duration>) -> Finished {
        self.stdin.take();
        let exited = match limit {
            None => self.exited.recv().is_ok(),
            Some(l) => self.exited.recv_timeout(l).is_ok(),
        };
        let mut child = self.child.take().expect("finish consumes the only Running");
        self.kill(&mut child);
        let status = child.wait().ok();
        let wall = self.started.elapsed();
        let out = self.out.recv_timeout(DRAIN_LIMIT);
        let err = self.err.recv_timeout(DRAIN_LIMIT);
        Finished {
            status,
            pipes_held: out.is_err() || err.is_err(),
            stdout: out.unwrap_or_default(),
            stderr: err.unwrap_or_default(),
            timed_out: !exited,
            wall,
        }
    }

    /// Kills the child's group (the leader is unreaped, so its pid is still
    /// the group's id), or the child alone when it has no group of its own.
    fn kill(&self, child: &mut std::process::Child) {
        if self.group {
            // SAFETY: kill(2) on the process group our unreaped child leads.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
        } else {
            let _ = child.kill();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            self.kill(&mut c);
            let _ = c.wait();
        }
    }
}

/// Runs `cmd` to completion (or kills it after `timeout`), capturing its
/// output as text: the way greta runs python, uv and pip.
pub fn run(cmd: Command, timeout: Option<Duration>) -> Result<Output, ChildError> {
    let e = Child::new(cmd).output(timeout)?;
    Ok(Output {
        status: e.status,
        stdout: String::from_utf8_lossy(&e.stdout).into_owned(),
        stderr: e.stderr,
    })
}

/// A channel that receives once when child `pid` has exited. A waiter thread
/// blocks in `waitid(WNOWAIT)`, so the child stays unreaped (its pid cannot
/// be reused before the owner's `child.wait()`), and a time limit is a plain
/// `recv_timeout` instead of a polling loop.
fn exit_signal(pid: u32) -> Receiver<()> {
    let (tx, rx) = channel::<()>();
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

mod helper;
pub use helper::{helper, set_helper, Helper, HELPER_CAP};

#[cfg(test)]
mod tests;
