//! Device work in a child process that is the same executable.
//!
//! A hung GPU can block a driver call forever, and ROCm 5.2's hiprtc asked
//! for a target it does not know aborts its whole process (SIGABRT,
//! "munmap_chunk(): invalid pointer"). So greta runs compiles and device
//! work in a child — the same `greta` binary, through a hidden subcommand
//! the binary registers with [`set_helper`] — and bounds it here: the child
//! runs in its own process group, is killed with that whole group at its
//! deadline, and the group is killed again after it exits, so nothing it
//! started is left behind.

use std::io::{Read, Seek, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How to start a helper child: `exe args... <verb>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Helper {
    pub exe: PathBuf,
    pub args: Vec<String>,
}

static HELPER: OnceLock<Helper> = OnceLock::new();

/// Registers the helper (the `greta` binary does, at start). Without one,
/// compiles run in the calling process (library tests).
pub fn set_helper(h: Helper) {
    let _ = HELPER.set(h);
}

pub fn helper() -> Option<&'static Helper> {
    HELPER.get()
}

impl Helper {
    /// `exe args... verb`, ready for [`run`].
    pub fn command(&self, verb: &str) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(&self.args).arg(verb);
        c
    }
}

/// How a child ended and what it printed.
#[derive(Debug)]
pub struct ChildOutput {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub wall: Duration,
}

impl ChildOutput {
    /// `exit status 2`, or `killed by signal 6 (SIGABRT)`.
    pub fn how(&self) -> String {
        describe(self.status)
    }
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

#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("starting {exe}: {source}")]
    Spawn { exe: String, source: std::io::Error },
    #[error("{what} gave no answer within {:.1} s; killed it and its process group", limit.as_secs_f64())]
    TimedOut {
        what: String,
        limit: Duration,
        stderr: String,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// At most this much of a child's output is read back.
const OUTPUT_CAP: u64 = 256 << 20;

/// Runs `cmd` with `stdin` as its input, in its own process group, killing
/// that group after `limit`. Output goes through files (no pipe to fill).
pub fn run(
    mut cmd: Command,
    what: &str,
    stdin: &[u8],
    limit: Duration,
) -> Result<ChildOutput, ChildError> {
    let mut input = tempfile::tempfile()?;
    input.write_all(stdin)?;
    input.rewind()?;
    let out = tempfile::tempfile()?;
    let err = tempfile::tempfile()?;
    let exe = format!("{:?}", cmd.get_program());
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::from(input))
        .stdout(out.try_clone()?)
        .stderr(err.try_clone()?)
        .process_group(0)
        .spawn()
        .map_err(|source| ChildError::Spawn { exe, source })?;
    let pgid = child.id() as libc::pid_t;
    let kill_group = || {
        // SAFETY: kill(2) on our own child's process group id.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    };
    let mut nap = Duration::from_millis(1);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if started.elapsed() >= limit {
            kill_group();
            let _ = child.wait();
            return Err(ChildError::TimedOut {
                what: what.to_string(),
                limit,
                stderr: read_capped(err).unwrap_or_default(),
            });
        }
        std::thread::sleep(nap.min(limit.saturating_sub(started.elapsed())));
        nap = (nap * 2).min(Duration::from_millis(20));
    };
    // Whatever the child started (a compile grandchild) goes with it.
    kill_group();
    let wall = started.elapsed();
    let mut stdout = Vec::new();
    let mut out = out;
    out.rewind()?;
    out.take(OUTPUT_CAP).read_to_end(&mut stdout)?;
    Ok(ChildOutput {
        status,
        stdout,
        stderr: read_capped(err)?,
        wall,
    })
}

fn read_capped(mut f: std::fs::File) -> std::io::Result<String> {
    f.rewind()?;
    let mut v = Vec::new();
    f.take(OUTPUT_CAP).read_to_end(&mut v)?;
    Ok(String::from_utf8_lossy(&v).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_past_its_limit_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // The child starts a grandchild in the same group, then hangs.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "sleep 300 & echo $! > {}; exec sleep 300",
            pidfile.display()
        ));
        let t = Instant::now();
        let e = run(cmd, "a sleeping child", b"", Duration::from_millis(400)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert!(e.to_string().contains("no answer within 0.4 s"), "{e}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild is gone (or a zombie being reaped by init).
        let gone = (0..200).any(|_| {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.split_whitespace().nth(2).unwrap_or("").to_string());
            if matches!(state.as_deref(), Err(_) | Ok("Z")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
            false
        });
        assert!(gone, "grandchild {pid} survived");
    }

    #[test]
    fn exit_codes_signals_and_output_come_back() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("cat; echo oops >&2; exit 3");
        let o = run(cmd, "x", b"hello", Duration::from_secs(30)).unwrap();
        assert_eq!(
            (o.how().as_str(), o.stdout.as_slice(), o.stderr.trim()),
            ("exit status 3", b"hello".as_slice(), "oops")
        );
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("kill -ABRT $$");
        let o = run(cmd, "x", b"", Duration::from_secs(30)).unwrap();
        assert_eq!(o.how(), "killed by signal 6 (SIGABRT)");
    }
}
