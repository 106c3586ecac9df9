//! Whether running the same command again can help, so that greta never
//! says "rerun to continue" where a rerun fails the same way (a full disk,
//! HOME unset, a read-only cache, an installer stopped by its time limit, a
//! `GRETA_UV` that is no uv), and says what would help instead. Decided on
//! typed errors in the chain, never on their words: a child that speaks
//! only text (uv, pip) is read once, where it exits, for the OS error it
//! names ([`out_of_space`]), and that becomes a type.

use std::path::Path;
use std::time::Duration;

/// An error only a change by the user fixes (a setting, a variable); the
/// text says what.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FixFirst(pub String);

/// A step failed for want of space on a filesystem; `help` says how much
/// to free where, for the last line.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct DiskFull {
    pub what: String,
    pub help: String,
}

/// A child of an installer step (uv, pip, python) that failed: `text`
/// says how; `out_of_space` when its output said its OS refused a write
/// for want of space (ENOSPC, or EDQUOT: over quota; see
/// [`out_of_space`]), for the step that knows where it wrote to measure.
#[derive(Debug, thiserror::Error)]
#[error("{text}")]
pub struct ChildFailed {
    pub text: String,
    pub out_of_space: bool,
}

/// A step killed at its time limit: a rerun under the same limit stops at
/// the same point.
#[derive(Debug, thiserror::Error)]
#[error("{step} did not finish within {} s and was killed (the limit is {flag} SECS, default {default} s); the previous env is untouched", limit.as_secs())]
pub struct OverTimeLimit {
    /// The command, as `uv pip install`.
    pub step: String,
    pub limit: Duration,
    pub flag: &'static str,
    pub default: u64,
}

/// Less free space than this on a step's filesystem after it failed: the
/// failure is taken for a full disk.
const NEARLY_FULL: u64 = 16 << 20;

/// Bytes free for this user on the filesystem holding `dir` (or its
/// nearest existing ancestor), and that directory.
pub fn free_space(dir: &Path) -> Option<(u64, &Path)> {
    let mut at = Some(dir);
    while let Some(d) = at {
        if let Ok(c) = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()) {
            // SAFETY: a zeroed statvfs is a valid out-buffer for statvfs(3).
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: a valid NUL-terminated path and our own buffer.
            if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
                return Some(((st.f_bavail as u64).saturating_mul(st.f_frsize as u64), d));
            }
        }
        at = d.parent();
    }
    None
}

/// `Some(what)` when the filesystem holding `dir` (or its nearest existing
/// ancestor) has less than 16 MiB left for this user.
pub fn full_filesystem(dir: &Path) -> Option<DiskFull> {
    let (free, d) = free_space(dir)?;
    (free < NEARLY_FULL).then(|| DiskFull {
        what: format!(
            "the filesystem of {} is full ({free} bytes free)",
            d.display()
        ),
        help: format!("free space on the full filesystem of {}", d.display()),
    })
}

/// A step that wrote into `dir` failed: a [`DiskFull`] that says how much
/// to free there when the step's child said it ran out of space (a
/// [`ChildFailed`] in `e`'s chain) or the filesystem is nearly full;
/// `needs`: what the step writes there, when known (the wheels' unpacked
/// size). `None`: nothing says space was the cause.
pub fn out_of_space_in(e: &anyhow::Error, dir: &Path, needs: Option<u64>) -> Option<DiskFull> {
    let said = e.chain().any(|c| {
        c.downcast_ref::<ChildFailed>()
            .is_some_and(|f| f.out_of_space)
    });
    if !said {
        return full_filesystem(dir);
    }
    let size = greta_vocab::size::bytes;
    let Some((free, d)) = free_space(dir) else {
        return Some(DiskFull {
            what: format!("out of space writing under {}", dir.display()),
            help: format!("free space where {} writes", dir.display()),
        });
    };
    Some(match needs {
        Some(n) if n > free => DiskFull {
            what: format!(
                "out of space: the filesystem of {} has {} free and the wheels unpack to {}",
                d.display(),
                size(free),
                size(n)
            ),
            help: format!(
                "free at least {} on the filesystem of {} (or set GRETA_HOME to a directory on a larger one)",
                size(n - free),
                d.display()
            ),
        },
        Some(n) => DiskFull {
            what: format!(
                "out of space, yet the filesystem of {} has {} free, more than the {} the wheels unpack to: the full one is another the installer writes to (uv's cache: `uv cache dir`; TMPDIR)",
                d.display(),
                size(free),
                size(n)
            ),
            help: "free space where the installer writes (uv's cache, TMPDIR)".into(),
        },
        None => DiskFull {
            what: format!(
                "out of space: the filesystem of {} has {} free",
                d.display(),
                size(free)
            ),
            help: format!("free space on the full filesystem of {}", d.display()),
        },
    })
}

/// Whether a child's output names the OS error of a write refused for want
/// of space, as Rust programs (uv: `(os error 28)`) and Python (pip, venv:
/// `[Errno 28]`) print it; `ENOSPC` and `EDQUOT` by their numbers.
pub fn out_of_space(output: &str) -> bool {
    [libc::ENOSPC, libc::EDQUOT].iter().any(|n| {
        output.contains(&format!("(os error {n})")) || output.contains(&format!("[Errno {n}]"))
    })
}

/// What to do before a rerun can help `e`, if a rerun alone cannot: a
/// download that will fail again (404, wrong hash), a [`FixFirst`], a
/// [`DiskFull`], an [`OverTimeLimit`], or an OS error of a full disk, a
/// read-only filesystem or a refused permission anywhere in the chain.
/// `None`: a rerun may help (a server error, a timeout, a signal).
pub fn blocker(e: &anyhow::Error) -> Option<String> {
    let fixed = |s: &str| Some(s.to_string());
    // A context object is found by the error's own downcast, not the chain.
    if let Some(d) = e.downcast_ref::<DiskFull>() {
        return Some(d.help.clone());
    }
    if e.downcast_ref::<FixFirst>().is_some() {
        return fixed("fix the setting above");
    }
    for c in e.chain() {
        if let Some(f) = c.downcast_ref::<crate::fetch::http::Failed>() {
            if !f.rerun_helps {
                return fixed("fix the cause above");
            }
        }
        if c.downcast_ref::<FixFirst>().is_some() {
            return fixed("fix the setting above");
        }
        if let Some(d) = c.downcast_ref::<DiskFull>() {
            return Some(d.help.clone());
        }
        if let Some(t) = c.downcast_ref::<OverTimeLimit>() {
            return Some(format!(
                "raise {} above {} s if the installer was still at work (else find what it waited on)",
                t.flag,
                t.limit.as_secs()
            ));
        }
        if refused_path(c) {
            return fixed("fix the path above");
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            match io.kind() {
                K::StorageFull | K::QuotaExceeded => return fixed("fix the full disk"),
                K::ReadOnlyFilesystem => return fixed("fix the read-only filesystem"),
                K::PermissionDenied => return fixed("fix the permissions"),
                _ => {}
            }
        }
    }
    None
}

/// `e` is greta refusing a path it was to write (a link another user
/// planted in a shared directory, a FIFO where a file goes, ...): bad
/// input, which the user must change (exit 2).
pub fn refused_path(e: &(dyn std::error::Error + 'static)) -> bool {
    use greta_fsread::output::OutputError as O;
    matches!(
        e.downcast_ref::<O>(),
        Some(
            O::ForeignLink { .. }
                | O::NotRegular { .. }
                | O::NotDir { .. }
                | O::Loop { .. }
                | O::Changed { .. }
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn full_disk_read_only_and_settings_are_not_rerun_material() {
        let help = |e: &anyhow::Error| blocker(e);
        // A real ENOSPC: /dev/full refuses every write with it.
        let full = std::fs::write("/dev/full", b"x")
            .context("writing the cache")
            .unwrap_err();
        assert_eq!(help(&full).as_deref(), Some("fix the full disk"));
        let ro = Err::<(), _>(std::io::Error::from_raw_os_error(libc::EROFS))
            .context("creating /c/partial")
            .unwrap_err();
        assert_eq!(help(&ro).as_deref(), Some("fix the read-only filesystem"));
        let home = anyhow::Error::new(FixFirst("HOME is not set".into())).context("prepare");
        assert_eq!(help(&home).as_deref(), Some("fix the setting above"));
        let timeout = Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut))
            .context("fetching")
            .unwrap_err();
        assert_eq!(help(&timeout), None);
        let full = anyhow::anyhow!("uv: No space left on device").context(DiskFull {
            what: "x".into(),
            help: "free 3.0 MiB on the filesystem of /e".into(),
        });
        assert_eq!(
            help(&full).as_deref(),
            Some("free 3.0 MiB on the filesystem of /e")
        );
        // An installer killed at --installer-timeout stops there again.
        let slow = anyhow::Error::new(OverTimeLimit {
            step: "uv pip install".into(),
            limit: Duration::from_secs(3),
            flag: "--installer-timeout",
            default: 1800,
        })
        .context("installing");
        assert_eq!(
            help(&slow).as_deref(),
            Some("raise --installer-timeout above 3 s if the installer was still at work (else find what it waited on)")
        );
        assert!(slow
            .root_cause()
            .to_string()
            .contains("(the limit is --installer-timeout SECS, default 1800 s)"));
        // /dev/shm or / has room on any machine that runs the tests.
        assert!(full_filesystem(Path::new("/nonexistent/dir")).is_none());
    }

    /// uv and pip say ENOSPC in their own words; the number is what is read.
    #[test]
    fn a_childs_words_for_a_full_disk_are_recognised_by_the_errno() {
        assert!(out_of_space(
            "error: Failed to install: torch-2.5.1-cp311-none-any.whl (torch==2.5.1)\n  Caused by: failed to write to file `/e/.staging/cpu/lib/python3.11/site-packages/torch/blob.bin`: No space left on device (os error 28)"
        ));
        assert!(out_of_space(
            "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"
        ));
        assert!(out_of_space("OSError: [Errno 122] Disk quota exceeded"));
        assert!(!out_of_space(
            "error: No such file or directory (os error 2)"
        ));
        assert!(!out_of_space("[Errno 2] No such file or directory: 'x'"));
        assert!(!out_of_space("os error 280"));
    }

    /// A child that said it ran out of space: how much to free where comes
    /// from the filesystem and what the step writes.
    #[test]
    fn out_of_space_says_how_much_to_free_where() {
        let said = anyhow::Error::new(ChildFailed {
            text: "uv pip install failed".into(),
            out_of_space: true,
        });
        let dir = std::env::temp_dir();
        let (free, _) = free_space(&dir).unwrap();
        let more = free.saturating_add(5 << 20);
        let d = out_of_space_in(&said, &dir, Some(more)).unwrap();
        assert!(d.what.contains("the wheels unpack to"), "{}", d.what);
        assert!(d.help.starts_with("free at least "), "{}", d.help);
        assert!(d.help.contains("GRETA_HOME"), "{}", d.help);
        // Room enough here: the full filesystem is another one.
        let d = out_of_space_in(&said, &dir, Some(1)).unwrap();
        assert!(d.what.contains("the full one is another"), "{}", d.what);
        // Nothing said it and the filesystem has room: not a full disk.
        let other = anyhow::Error::new(ChildFailed {
            text: "uv pip install failed (exit status: 2)".into(),
            out_of_space: false,
        });
        assert!(out_of_space_in(&other, &dir, Some(more)).is_none());
    }
}
