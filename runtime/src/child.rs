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

use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::OnceLock;
use std::time::Duration;

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

pub use greta_vocab::child::describe;

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

/// At most this much of a child's output is read back (a compiled object
/// comes back on stdout).
const OUTPUT_CAP: usize = 256 << 20;

/// Runs `cmd` with `stdin` as its input, in its own process group, killing
/// that group after `limit` (and after it exits: a compile grandchild goes
/// with it), through the vocabulary's one child runner.
pub fn run(
    cmd: Command,
    what: &str,
    stdin: &[u8],
    limit: Duration,
) -> Result<ChildOutput, ChildError> {
    use greta_vocab::child::{Child, ChildError as Vc};
    let exe = format!("{:?}", cmd.get_program());
    let running = Child::new(cmd)
        .own_group()
        .cap(OUTPUT_CAP)
        .stdin_bytes(stdin.to_vec())
        .start()
        .map_err(|e| match e {
            Vc::Spawn { source, .. } | Vc::Wait { source, .. } => ChildError::Spawn { exe, source },
            Vc::TimedOut { .. } => unreachable!("start sets no time limit"),
        })?;
    let f = running.finish(Some(limit));
    if f.timed_out {
        return Err(ChildError::TimedOut {
            what: what.to_string(),
            limit,
            stderr: f.stderr.text(),
        });
    }
    let status = f
        .status
        .ok_or_else(|| std::io::Error::other(format!("{what}: the child could not be reaped")))?;
    Ok(ChildOutput {
        status,
        stdout: f.stdout.bytes,
        stderr: f.stderr.text(),
        wall: f.wall,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The wrapper's own part: the time limit becomes its error, naming the
    /// work and the limit (that the group, grandchildren included, is
    /// killed is greta_vocab::child's test).
    #[test]
    fn a_child_past_its_limit_is_a_timeout_naming_it() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("sleep 300 & exec sleep 300");
        let t = Instant::now();
        let e = run(cmd, "a sleeping child", b"", Duration::from_millis(400)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
        assert!(
            e.to_string()
                .contains("a sleeping child gave no answer within 0.4 s"),
            "{e}"
        );
        assert!(matches!(e, ChildError::TimedOut { .. }));
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
