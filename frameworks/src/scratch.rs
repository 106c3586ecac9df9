//! The gate script's scratch directory (`$TMPDIR/greta-gates-PID-XXXXXX`)
//! and the sweep of those that dead runs left.
//!
//! A killed install never reached the `TempDir`'s drop, so its directory
//! stayed for ever (68 of them after the fault campaign of 2026-11-25). The
//! directory's name carries the pid of the greta that made it; each new
//! one first removes the directories, owned by this user, whose greta is
//! gone (`.staging` is swept the same way). Directories of the older
//! unnamed form (`greta-gates-XXXXXX`) are removed once a day old.

use anyhow::{Context, Result};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

const PREFIX: &str = "greta-gates-";

/// How old an unnamed (pre-pid) scratch directory must be to go.
const UNNAMED_AGE: Duration = Duration::from_secs(24 * 3600);

/// Creates this run's scratch directory in `tmp`, after sweeping what dead
/// runs left there.
pub fn create_in(tmp: &Path) -> Result<tempfile::TempDir> {
    sweep(tmp);
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir_in(tmp)
        .context("creating a directory for the gate script")
}

/// Removes the scratch directories in `tmp` that belong to this user and
/// to no live greta.
pub fn sweep(tmp: &Path) {
    let Ok(rd) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !m.is_dir() || m.uid() != me {
            continue;
        }
        let dead = match rest.split_once('-') {
            Some((pid, _)) => pid
                .parse::<libc::pid_t>()
                .ok()
                .filter(|p| *p > 0)
                .is_some_and(gone),
            None => m
                .modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > UNNAMED_AGE),
        };
        if dead {
            match std::fs::remove_dir_all(e.path()) {
                Ok(()) => tracing::info!("removed {} (its greta is gone)", e.path().display()),
                Err(err) => tracing::warn!("cannot remove {}: {err}", e.path().display()),
            }
        }
    }
}

fn gone(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_runs_dirs_go_live_ones_and_others_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let dead_dir = tmp.path().join(format!("{PREFIX}{dead}-abc123"));
        let live_dir = tmp
            .path()
            .join(format!("{PREFIX}{}-def456", std::process::id()));
        let other = tmp.path().join("greta-gatesX");
        let unnamed_fresh = tmp.path().join(format!("{PREFIX}q1w2e3"));
        for d in [&dead_dir, &live_dir, &other, &unnamed_fresh] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
            std::fs::write(d.join("greta_gates.py"), "x").unwrap();
        }
        let made = create_in(tmp.path()).unwrap();
        assert!(!dead_dir.exists());
        assert!(live_dir.exists() && other.exists() && unnamed_fresh.exists());
        assert!(made
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("{PREFIX}{}-", std::process::id())));
    }
}
