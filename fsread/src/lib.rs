//! Reading a file that someone else controls: a path handed to greta on the
//! command line, a cache in `$XDG_CACHE_HOME`, a captured machine's sysroot.
//! Such a path can name a FIFO (an open blocks until a writer appears, a read
//! until it writes), a device node (`/dev/zero` never ends) or a file of any
//! size. Every read here opens with `O_NONBLOCK` (so opening a FIFO returns
//! at once), checks on the opened descriptor that it is a regular file (no
//! race with a rename between a `stat` and the `open`), and reads at most
//! `cap` bytes, refusing more. Shared by probe, runtime and smoke so the rule
//! has one implementation. The same paths are cleared the same way where
//! greta writes its own file: [`set_aside`].
//!
//! Writing a file or directory that someone named ([`output`]) meets the
//! same world from the other side: a link planted in `/tmp`, a FIFO or a
//! device where a file should go, a stop signal in the middle.

pub mod output;

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: is a {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{}: larger than the {cap}-byte limit for this file", path.display())]
    TooLarge { path: PathBuf, cap: u64 },
    #[error("{}: not UTF-8 text (byte {at})", path.display())]
    NotUtf8 { path: PathBuf, at: usize },
}

impl Error {
    /// Whether the file simply is not there (callers that treat a missing
    /// file as "nothing yet" test this).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    /// The error as an `io::Error` (kind `NotFound` kept, the rest `InvalidData`
    /// or the original kind), for callers whose signatures speak `io`.
    pub fn into_io(self) -> std::io::Error {
        match self {
            Error::Io { source, .. } => source,
            e => std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
        }
    }
}

/// What a file of type `t` is, in words ("FIFO", "symbolic link", ...):
/// the one wording of greta's messages about a path that is not what it
/// should be (the readers here, the wheel cache, `smoke --prom`); it lives
/// in the vocabulary so that path settings say it the same way.
pub use greta_vocab::kind_of;

/// Opens `path` for reading without blocking and returns it only when the
/// opened descriptor is a regular file (symlinks are followed). For callers
/// that stream the file (hashing a wheel): bound the read yourself.
pub fn open_regular(path: &Path) -> Result<File, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let t = f.metadata().map_err(io)?.file_type();
    if !t.is_file() {
        return Err(Error::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(t),
        });
    }
    Ok(f)
}

/// The whole content of the regular file `path`, at most `cap` bytes (a
/// larger file is [`Error::TooLarge`], never a truncated read).
pub fn bytes(path: &Path, cap: u64) -> Result<Vec<u8>, Error> {
    let f = open_regular(path)?;
    let too_large = || Error::TooLarge {
        path: path.to_path_buf(),
        cap,
    };
    // The size is a hint (sysfs and procfs files report 0 or 4096), so the
    // read below is bounded whatever it says.
    let hint = f.metadata().map(|m| m.len()).unwrap_or(0);
    if hint > cap {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(hint as usize);
    f.take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if buf.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(buf)
}

/// [`bytes`] as UTF-8 text (invalid UTF-8 is an error naming the byte).
pub fn text(path: &Path, cap: u64) -> Result<String, Error> {
    String::from_utf8(bytes(path, cap)?).map_err(|e| Error::NotUtf8 {
        path: path.to_path_buf(),
        at: e.utf8_error().valid_up_to(),
    })
}

/// [`bytes`], with a missing file as `Ok(None)`.
pub fn bytes_if_exists(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, Error> {
    match bytes(path, cap) {
        Err(e) if e.is_not_found() => Ok(None),
        r => r.map(Some),
    }
}

/// [`text`], with a missing file as `Ok(None)`.
pub fn text_if_exists(path: &Path, cap: u64) -> Result<Option<String>, Error> {
    match text(path, cap) {
        Err(e) if e.is_not_found() => Ok(None),
        r => r.map(Some),
    }
}

/// Renames whatever is at `path` (never followed, opened or deleted: a
/// FIFO, a device node, a symlink, a directory) to the first free
/// `<path>.aside-<pid>-<n>`, so that it stays for its owner to look at and
/// greta can put its own regular file at `path`. The one way greta's
/// caches (the wheel cache, the tuning cache) clear a path they own;
/// callers say so, naming both paths. Returns the new name.
pub fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    for n in 0u32..1000 {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".aside-{}-{n}", std::process::id()));
        let to = PathBuf::from(name);
        if std::fs::symlink_metadata(&to).is_ok() {
            continue;
        }
        return std::fs::rename(path, &to).map(|()| to);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name to move it aside to",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;

    fn mkfifo(p: &Path) {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_without_writer_is_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        mkfifo(&p);
        // Would block forever in std::fs::read.
        let e = text(&p, 1024).unwrap_err();
        assert!(matches!(e, Error::NotRegular { kind: "FIFO", .. }), "{e}");
        assert!(e.to_string().contains("fifo: is a FIFO"), "{e}");
        assert!(text_if_exists(&p, 1024).is_err());
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let e = bytes(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(
            matches!(
                e,
                Error::NotRegular {
                    kind: "character device",
                    ..
                }
            ),
            "{e}"
        );
        let d = tempfile::tempdir().unwrap();
        let e = bytes(d.path(), 1 << 20).unwrap_err();
        assert!(
            matches!(e, Error::NotRegular { .. } | Error::Io { .. }),
            "{e}"
        );
    }

    #[test]
    fn the_cap_is_exact_and_missing_files_are_none() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(bytes(&p, 10).unwrap(), b"0123456789");
        assert!(matches!(bytes(&p, 9), Err(Error::TooLarge { cap: 9, .. })));
        assert_eq!(text_if_exists(&d.path().join("nope"), 9).unwrap(), None);
        std::fs::write(&p, b"ab\xffcd").unwrap();
        assert!(matches!(text(&p, 10), Err(Error::NotUtf8 { at: 2, .. })));
        // procfs reports size 0; the read is still complete and bounded.
        let stat = bytes(Path::new("/proc/self/status"), 1 << 20).unwrap();
        assert!(stat.starts_with(b"Name:"));
        assert!(matches!(
            bytes(Path::new("/proc/self/status"), 4),
            Err(Error::TooLarge { .. })
        ));
    }

    /// What is set aside keeps its kind and target (a link is not
    /// followed), under a name of its own; a second one gets another name.
    #[test]
    fn set_aside_renames_without_following_and_never_overwrites() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        let p = d.path().join("cache.json");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let a = set_aside(&p).unwrap();
        assert!(std::fs::symlink_metadata(&p).is_err());
        assert!(std::fs::symlink_metadata(&a)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_link(&a).unwrap(), target);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
        mkfifo(&p);
        let b = set_aside(&p).unwrap();
        assert_ne!(a, b);
        assert!(b
            .to_string_lossy()
            .ends_with(&format!(".aside-{}-1", std::process::id())));
        assert!(std::fs::symlink_metadata(&b).unwrap().file_type().is_fifo());
        assert!(set_aside(&p).is_err(), "nothing there: an error");
    }
}
