//! The update's contact with the world: uv through the one child runner,
//! the atomic replacement of the lockfile, today's date.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::Duration;

/// Run a command with a time limit through the one child runner (its own
/// process group, killed at the limit or if greta dies); stdout on
/// success, an error with the tail of stderr otherwise.
pub(super) fn run_capture(prog: &Path, args: &[String], timeout: Duration) -> Result<String> {
    use greta_vocab::child::{describe, Child};
    let mut cmd = std::process::Command::new(prog);
    cmd.args(args)
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("UV_NO_CONFIG", "1");
    let out = Child::new(cmd)
        .own_group()
        .finish_within(Some(timeout))
        .with_context(|| format!("cannot run {}", prog.display()))?;
    if out.timed_out {
        bail!(
            "{} did not finish within {:.1} s",
            prog.display(),
            timeout.as_secs_f64()
        );
    }
    let Some(status) = out.status else {
        bail!("{} could not be waited for", prog.display());
    };
    if !status.success() {
        let err = out.stderr.text();
        let tail: Vec<&str> = err
            .lines()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        bail!(
            "{} exited with {}:\n{}",
            prog.display(),
            describe(status),
            tail.join("\n")
        );
    }
    Ok(out.stdout.text())
}

/// Replace `path` with `text` so a reader sees the old or the new file,
/// never half of one.
pub fn write_atomic(path: &Path, text: &str) -> crate::Result<()> {
    Ok(replace(path, text)?)
}

fn replace(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())?;
    // NamedTempFile is 0600; a lockfile is data everyone may read (keep the old mode if any).
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions())
        .unwrap_or_else(|_| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o644)
        });
    tmp.as_file().set_permissions(mode)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("cannot replace {}: {}", path.display(), e.error))?;
    Ok(())
}

pub(super) fn today() -> String {
    let f = time::macros::format_description!("[year]-[month]-[day]");
    time::OffsetDateTime::now_utc()
        .format(&f)
        .unwrap_or_else(|_| "unknown date".into())
}
