//! Whether running the same command again can help, so that greta never
//! says "rerun to continue" where a rerun fails the same way (issue 28: a
//! full disk, HOME unset, a read-only cache). Decided on typed errors in
//! the chain, never on their words.

/// An error only a change by the user fixes (a setting, a variable); the
/// text says what.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FixFirst(pub String);

/// A step failed on a filesystem with (almost) no room left: a child
/// (uv, pip) said so only in its own words, so greta asks the filesystem
/// itself ([`full_filesystem`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DiskFull(pub String);

/// Less free space than this on a step's filesystem after it failed: the
/// failure is taken for a full disk.
const NEARLY_FULL: u64 = 16 << 20;

/// `Some(what)` when the filesystem holding `dir` (or its nearest existing
/// ancestor) has less than 16 MiB left for this user.
pub fn full_filesystem(dir: &std::path::Path) -> Option<DiskFull> {
    let mut at = Some(dir);
    while let Some(d) = at {
        if let Ok(c) = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()) {
            // SAFETY: a zeroed statvfs is a valid out-buffer for statvfs(3).
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: a valid NUL-terminated path and our own buffer.
            if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
                let free = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
                return (free < NEARLY_FULL).then(|| {
                    DiskFull(format!(
                        "the filesystem of {} is full ({free} bytes free)",
                        d.display()
                    ))
                });
            }
        }
        at = d.parent();
    }
    None
}

/// Why a rerun alone cannot help `e`, if it cannot: a download that will
/// fail again (404, wrong hash), a [`FixFirst`], or an OS error of a full
/// disk, a read-only filesystem or a refused permission anywhere in the
/// chain. `None`: a rerun may help (a server error, a timeout, a signal).
pub fn blocker(e: &anyhow::Error) -> Option<&'static str> {
    // A context object is found by the error's own downcast, not the chain.
    if e.downcast_ref::<DiskFull>().is_some() {
        return Some("the full disk");
    }
    if e.downcast_ref::<FixFirst>().is_some() {
        return Some("the setting above");
    }
    for c in e.chain() {
        if let Some(f) = c.downcast_ref::<crate::fetch::http::Failed>() {
            if !f.rerun_helps {
                return Some("the cause above");
            }
        }
        if c.downcast_ref::<FixFirst>().is_some() {
            return Some("the setting above");
        }
        if c.downcast_ref::<DiskFull>().is_some() {
            return Some("the full disk");
        }
        if refused_path(c) {
            return Some("the path above");
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            match io.kind() {
                K::StorageFull | K::QuotaExceeded => return Some("the full disk"),
                K::ReadOnlyFilesystem => return Some("the read-only filesystem"),
                K::PermissionDenied => return Some("the permissions"),
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
        // A real ENOSPC: /dev/full refuses every write with it.
        let full = std::fs::write("/dev/full", b"x")
            .context("writing the cache")
            .unwrap_err();
        assert_eq!(blocker(&full), Some("the full disk"));
        let ro = Err::<(), _>(std::io::Error::from_raw_os_error(libc::EROFS))
            .context("creating /c/partial")
            .unwrap_err();
        assert_eq!(blocker(&ro), Some("the read-only filesystem"));
        let home = anyhow::Error::new(FixFirst("HOME is not set".into())).context("prepare");
        assert_eq!(blocker(&home), Some("the setting above"));
        let timeout = Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut))
            .context("fetching")
            .unwrap_err();
        assert_eq!(blocker(&timeout), None);
        let full = anyhow::anyhow!("uv: No space left on device").context(DiskFull("x".into()));
        assert_eq!(blocker(&full), Some("the full disk"));
        // /dev/shm or / has room on any machine that runs the tests.
        assert!(full_filesystem(std::path::Path::new("/nonexistent/dir")).is_none());
    }
}
