//! A finished child, as the CLI tests look at it: exit code, both streams
//! as text and how long it took; the command line and what it said go to
//! the test's own stderr, which the harness shows when the test fails.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Run {
    /// The exit code; -1 when a signal ended it.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// Runs `cmd` to its end (stdout and stderr captured).
    pub fn of(cmd: Command) -> Run {
        Self::fed(cmd, None)
    }

    /// [`Run::of`], with `input` written to its stdin (then closed) when
    /// given.
    pub fn fed(mut cmd: Command, input: Option<&[u8]>) -> Run {
        let line = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let t = Instant::now();
        // as `Command::output` does: no stdin unless there is input
        cmd.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("running {line}: {e}"));
        if let Some(bytes) = input {
            let mut stdin = child.stdin.take().expect("stdin piped");
            stdin.write_all(bytes).expect("writing the child's stdin");
        }
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("waiting for {line}: {e}"));
        let run = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            elapsed: t.elapsed(),
        };
        eprintln!(
            "{line} -> {} in {:?}\n--- stdout\n{}--- stderr\n{}",
            run.code, run.elapsed, run.stdout, run.stderr
        );
        run
    }
}
