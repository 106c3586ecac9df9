//! Bounded reads of the files greta is handed (lockfiles, manifests,
//! receipts, fact files): a FIFO, a device or a huge file must be a clear
//! error, never a hang or an unbounded allocation. The rule itself lives in
//! `greta-fsread` (shared by every crate); this gives its errors the lock
//! set's type ([`crate::Error::Read`]) for the lock set and the installer
//! (which re-exports this module as its `read`).

use crate::{Error, Result};
use std::path::Path;

/// The most any data file greta reads may hold (the largest shipped
/// lockfile is ~100 KiB; a receipt of the cpu env ~3 MiB).
pub const MAX_DATA_FILE: u64 = 64 << 20;

/// Reads a regular file of at most `cap` bytes as UTF-8 (opened with
/// `O_NONBLOCK`, its type checked on the open descriptor: a FIFO, socket or
/// device is refused by name).
pub fn text_capped(path: &Path, cap: u64) -> Result<String> {
    greta_fsread::text(path, cap).map_err(read_error)
}

/// Opens a regular file for a streaming read (hashing a wheel), without
/// blocking on a FIFO; anything but a regular file is refused by name.
pub fn open_regular(path: &Path) -> Result<std::fs::File> {
    greta_fsread::open_regular(path).map_err(read_error)
}

/// As [`text_capped`], for bytes.
pub fn bytes_capped(path: &Path, cap: u64) -> Result<Vec<u8>> {
    greta_fsread::bytes(path, cap).map_err(read_error)
}

/// As [`text_capped`], but a missing file is `Ok(None)`.
pub fn text_if_exists(path: &Path, cap: u64) -> Result<Option<String>> {
    greta_fsread::text_if_exists(path, cap).map_err(read_error)
}

/// A file as the OS knows it: the path as given, what it resolves to, and
/// that file's device, inode, size, mtime and ctime. A replaced or modified
/// binary has another identity.
pub fn identity(p: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let abs = std::path::absolute(p).ok()?;
    let canonical = std::fs::canonicalize(&abs).ok()?;
    let m = std::fs::metadata(&canonical).ok()?;
    Some(format!(
        "{}\0{}\0{}:{}:{}:{}.{}:{}.{}",
        abs.display(),
        canonical.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

fn read_error(e: greta_fsread::Error) -> Error {
    Error::Read(ReadError(e))
}

/// Why a file could not be read, as a chain that says each thing once:
/// fsread's `Io` variant prints "PATH: OS error" *and* carries the OS error
/// as its source, so `{:#}` said it twice ("Not a directory (os error 20):
/// Not a directory (os error 20)"). Here an OS error is the source and the
/// path the message, so it stays in the chain (code that asks whether the
/// disk is full finds it); the other reasons (a FIFO, too large, not UTF-8)
/// are their own message.
#[derive(Debug)]
pub struct ReadError(greta_fsread::Error);

impl ReadError {
    /// Whether the file simply is not there.
    pub fn is_not_found(&self) -> bool {
        self.0.is_not_found()
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            greta_fsread::Error::Io { path, .. } => write!(f, "{}", path.display()),
            e => e.fmt(f),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            greta_fsread::Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error is the lock set's own type: a caller matches on it, and
    /// it reads the same through a caller's anyhow as it always did.
    #[test]
    fn a_read_error_is_typed_and_keeps_its_words() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("none");
        let e = text_capped(&missing, 10).unwrap_err();
        let Error::Read(r) = &e else { panic!("{e:?}") };
        assert!(r.is_not_found(), "{e:?}");
        let shown = format!("{:#}", anyhow::Error::new(e));
        assert_eq!(
            shown,
            format!(
                "{}: No such file or directory (os error 2)",
                missing.display()
            )
        );
        let e = text_capped(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(matches!(e, Error::Read(_)), "{e:?}");
        assert_eq!(
            format!("{:#}", anyhow::Error::new(e)),
            "/dev/zero: is a character device, not a regular file"
        );
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = text_capped(&p, 1024).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
    }

    #[test]
    fn device_and_directory_are_refused() {
        let e = text_capped(Path::new("/dev/zero"), 1024)
            .unwrap_err()
            .to_string();
        assert!(e.contains("character device"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let e = text_capped(d.path(), 1024).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
    }

    /// It said "PATH: Not a directory (os error 20): Not a directory (os
    /// error 20)".
    #[test]
    fn an_os_error_is_said_once_and_stays_in_the_chain() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("file");
        std::fs::write(&f, "x").unwrap();
        let e = anyhow::Error::new(text_capped(&f.join("inside"), 10).unwrap_err());
        let shown = format!("{e:#}");
        assert_eq!(shown.matches("(os error 20)").count(), 1, "{shown}");
        assert!(shown.starts_with(&f.join("inside").display().to_string()));
        assert!(e
            .chain()
            .any(|c| c.downcast_ref::<std::io::Error>().is_some()));
    }

    #[test]
    fn size_cap_and_missing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        std::fs::write(&p, vec![b'a'; 2048]).unwrap();
        assert_eq!(text_capped(&p, 4096).unwrap().len(), 2048);
        let e = text_capped(&p, 1024).unwrap_err().to_string();
        assert!(e.contains("1024-byte limit"), "{e}");
        assert!(text_if_exists(&d.path().join("none"), 10)
            .unwrap()
            .is_none());
    }
}
