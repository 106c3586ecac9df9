//! Command outputs: run live under a time limit (through the one child
//! runner, `greta_vocab::child`), or replayed from `.greta/cmd/`.

use super::*;

/// How a command run (or its replay) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdStatus {
    Exited(i32),
    /// Killed after the time limit; the text holds what it printed until then.
    TimedOut,
    /// The program is not on PATH (live) or was not captured (sysroot).
    NotFound,
    /// Could not be started or read.
    Error(String),
    /// Replayed: the capture holds this command's answer, but it could not
    /// be read (a FIFO, a directory, `.greta/cmd` no directory). What it
    /// said is unknown: neither "not installed" nor a failure of its own.
    Unknown(String),
}

impl CmdStatus {
    pub(super) fn to_line(&self) -> String {
        match self {
            CmdStatus::Exited(c) => format!("exit {c}"),
            CmdStatus::TimedOut => "timeout".into(),
            CmdStatus::NotFound => "not-found".into(),
            CmdStatus::Error(e) | CmdStatus::Unknown(e) => {
                format!("error {}", e.replace('\n', " "))
            }
        }
    }
    pub(super) fn from_line(line: &str) -> CmdStatus {
        let line = line.trim();
        if let Some(c) = line.strip_prefix("exit ") {
            return c
                .trim()
                .parse()
                .map(CmdStatus::Exited)
                .unwrap_or_else(|_| CmdStatus::Error(line.into()));
        }
        match line {
            "timeout" => CmdStatus::TimedOut,
            "not-found" => CmdStatus::NotFound,
            _ => CmdStatus::Error(line.strip_prefix("error ").unwrap_or(line).to_string()),
        }
    }
}

/// A command's combined output and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdOutput {
    /// Capture name, e.g. `rocminfo`, `hipconfig-version`.
    pub name: String,
    pub status: CmdStatus,
    pub text: String,
}

impl CmdOutput {
    /// Text when the command ran at all (even with a non-zero exit or a
    /// timeout: a failing rocminfo's message is the most useful evidence).
    pub fn text(&self) -> Option<&str> {
        match self.status {
            CmdStatus::NotFound | CmdStatus::Unknown(_) => None,
            _ => Some(&self.text),
        }
    }
}

impl Root {
    /// Runs `program args` (live, with the time limit; `program` may be a
    /// bare name looked up on PATH or an absolute path) or replays
    /// `.greta/cmd/<name>.txt` (sysroot). Never hangs, never panics.
    pub fn run(&self, name: &str, program: &str, args: &[&str]) -> CmdOutput {
        let out = match self.mode {
            Mode::Sysroot => self.replay(name),
            Mode::Live => {
                let exe = if program.starts_with('/') {
                    Some(program.to_string()).filter(|p| is_executable(Path::new(p)))
                } else {
                    self.which(program)
                };
                match exe {
                    None => CmdOutput {
                        name: name.into(),
                        status: CmdStatus::NotFound,
                        text: String::new(),
                    },
                    Some(exe) => run_with_timeout(name, &exe, args, self.cmd_timeout),
                }
            }
        };
        self.note(|rec| rec.cmds.push(out.clone()));
        out
    }

    fn replay(&self, name: &str) -> CmdOutput {
        let check = READING_FOR.with(Cell::get);
        let out = |status, text| CmdOutput {
            name: name.into(),
            status,
            text,
        };
        match capture_file(&self.base, &format!(".greta/cmd/{name}.txt"), check) {
            // Captured but unreadable (or `.greta/cmd` is no directory):
            // the command's answer is unknown, which is not "the command
            // is not installed".
            Err(u) => {
                let status = CmdStatus::Unknown(format!("captured output unreadable: {u}"));
                self.add_unreadable(u);
                out(status, String::new())
            }
            Ok(None) => out(CmdStatus::NotFound, String::new()),
            Ok(Some(text)) => {
                let status =
                    match capture_file(&self.base, &format!(".greta/cmd/{name}.status"), check) {
                        Ok(s) => s.map_or(CmdStatus::Exited(0), |s| CmdStatus::from_line(&s)),
                        Err(u) => {
                            let s = CmdStatus::Unknown(format!("captured status unreadable: {u}"));
                            self.add_unreadable(u);
                            s
                        }
                    };
                out(status, text)
            }
        }
    }
}

pub(crate) fn status_line(s: &CmdStatus) -> String {
    s.to_line()
}

/// Runs a program with its output and errors merged in the order written
/// (a failing tool's message beside what it printed first), through the
/// one child runner: its own process group (a tool's helpers die with it),
/// killed at the time limit with the partial output kept, never an orphan
/// if doctor dies, at most [`MAX_READ`] bytes kept.
fn run_with_timeout(name: &str, exe: &str, args: &[&str], timeout: Duration) -> CmdOutput {
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args).env("LC_ALL", "C");
    let ran = greta_vocab::child::Child::new(cmd)
        .merge_stderr()
        .own_group()
        .cap(MAX_READ)
        .finish_within(Some(timeout));
    let (status, text) = match ran {
        Err(greta_vocab::child::ChildError::Spawn { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            (CmdStatus::NotFound, String::new())
        }
        Err(e) => (CmdStatus::Error(e.to_string()), String::new()),
        Ok(f) if f.timed_out => (CmdStatus::TimedOut, f.stdout.text()),
        // A signal is no exit code: -1, as the status line has always said.
        Ok(f) => (
            CmdStatus::Exited(f.status.and_then(|s| s.code()).unwrap_or(-1)),
            f.stdout.text(),
        ),
    };
    CmdOutput {
        name: name.into(),
        status,
        text,
    }
}
