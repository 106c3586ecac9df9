//! Whether running the same command again can help, so that greta never
//! says "rerun to continue" where a rerun fails the same way (issue 28: a
//! full disk, HOME unset, a read-only cache). Decided on typed errors in
//! the chain, never on their words.

/// An error only a change by the user fixes (a setting, a variable); the
/// text says what.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FixFirst(pub String);

/// Why a rerun alone cannot help `e`, if it cannot: a download that will
/// fail again (404, wrong hash), a [`FixFirst`], or an OS error of a full
/// disk, a read-only filesystem or a refused permission anywhere in the
/// chain. `None`: a rerun may help (a server error, a timeout, a signal).
pub fn blocker(e: &anyhow::Error) -> Option<&'static str> {
    for c in e.chain() {
        if let Some(f) = c.downcast_ref::<crate::fetch::http::Failed>() {
            if !f.rerun_helps {
                return Some("the cause above");
            }
        }
        if c.downcast_ref::<FixFirst>().is_some() {
            return Some("the setting above");
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
    }
}
