//! `greta doctor --fix`: remediation with consent, for the findings whose
//! fix is safe and reversible. Each remedy is worked out from the report's
//! facts as a list of file changes under the machine's root (`/`, or the
//! `--sysroot` tree), shown as a diff or a command before anything happens;
//! applied only after one yes (or `--yes`); every write atomic
//! (`greta_fsread::output`); an undo record written before the first
//! change, so `--fix --undo` puts every file back. Never a remedy that only
//! prints: each one changes a file, and one whose effect needs a new login,
//! shell or boot says so instead of claiming the finding is gone.

mod apply;
mod plan;
mod run;

pub use apply::{apply, undo, Recorded};
pub use plan::plan;
pub use run::{run, run_undo, Consent};

use serde::Serialize;
use std::path::{Path, PathBuf};

/// One change to one file of the machine. Paths are machine paths
/// (`/etc/group`); the root they live under is the caller's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// Write `after` where `before` stood (`None`: the file is new).
    Write {
        path: String,
        before: Option<String>,
        after: String,
    },
    /// Move a file aside (a left-behind manifest): undo moves it back.
    Move { from: String, to: String },
}

/// When a remedy's effect shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Takes {
    /// At once: doctor run again must not raise the finding.
    Now,
    /// At the next login (group membership).
    Relogin,
    /// In a new shell, or after re-sourcing the file.
    NewShell,
    /// After a reboot (kernel module options), or udev reloaded.
    Reboot,
}

impl Takes {
    pub fn say(self) -> &'static str {
        match self {
            Takes::Now => "takes effect now",
            Takes::Relogin => "takes effect at the next login (log out and back in)",
            Takes::NewShell => "takes effect in a new shell (or after sourcing the file again)",
            Takes::Reboot => "takes effect after a reboot",
        }
    }
}

/// The remedy of one finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Remedy {
    /// The finding id it answers.
    pub finding: String,
    /// What it does, in a few words.
    pub title: String,
    pub changes: Vec<Change>,
    pub takes: Takes,
    /// What else is needed for it to take effect (a command to run), when
    /// anything is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub then: Option<String>,
}

/// `abs` (a machine path) under `root`.
pub fn host(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// The change for people: a diff of the lines that differ (one region:
/// what the remedies change is one place of a file), or the command.
pub fn show(c: &Change) -> String {
    match c {
        Change::Move { from, to } => format!("$ mv {from} {to}\n"),
        Change::Write {
            path,
            before,
            after,
        } => {
            let old: Vec<&str> = before.as_deref().unwrap_or("").lines().collect();
            let new: Vec<&str> = after.lines().collect();
            let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
            let tail = old[head..]
                .iter()
                .rev()
                .zip(new[head..].iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            let mut s = match before {
                Some(_) => format!("--- {path}\n+++ {path}\n"),
                None => format!("--- /dev/null\n+++ {path} (new)\n"),
            };
            s.push_str(&format!("@@ line {} @@\n", head + 1));
            for l in &old[head..old.len() - tail] {
                s.push_str(&format!("-{l}\n"));
            }
            for l in &new[head..new.len() - tail] {
                s.push_str(&format!("+{l}\n"));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_gives_the_changed_lines() {
        let c = Change::Write {
            path: "/etc/group".into(),
            before: Some("root:x:0:\nrender:x:105:\nann:x:1000:\n".into()),
            after: "root:x:0:\nrender:x:105:ann\nann:x:1000:\n".into(),
        };
        assert_eq!(
            show(&c),
            "--- /etc/group\n+++ /etc/group\n@@ line 2 @@\n-render:x:105:\n+render:x:105:ann\n"
        );
        let new = Change::Write {
            path: "/etc/modprobe.d/x.conf".into(),
            before: None,
            after: "options ttm pages_limit=1\n".into(),
        };
        assert!(show(&new).contains("+options ttm pages_limit=1\n"));
    }
}
