//! The exit-code contract shared by every command (DESIGN.md): scripts decide
//! on these, so they never change meaning.

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything checked passed.
    Pass = 0,
    /// A check or gate failed.
    Fail = 1,
    /// Could not decide: usage error, no device, bad input.
    Undecided = 2,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}
