//! Bounded reads of the files greta is handed (lockfiles, manifests,
//! receipts, fact files): a FIFO, a device or a huge file must be a clear
//! error, never a hang or an unbounded allocation.

use anyhow::{bail, Context, Result};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The most any data file greta reads may hold (the largest shipped
/// lockfile is ~100 KiB; a receipt of the cpu env ~3 MiB).
pub const MAX_DATA_FILE: u64 = 64 << 20;

/// Reads a regular file of at most `cap` bytes as UTF-8.
///
/// The file is opened with `O_NONBLOCK` (opening a FIFO with no writer
/// would block otherwise) and its type is checked on the open descriptor,
/// so a FIFO, socket or device is refused by name.
pub fn text_capped(path: &Path, cap: u64) -> Result<String> {
    let bytes = bytes_capped(path, cap)?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Opens a regular file for a streaming read (hashing a wheel), without
/// blocking on a FIFO; anything but a regular file is refused by name.
pub fn open_regular(path: &Path) -> Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let meta = f
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.file_type().is_file() {
        bail!(
            "{}: not a regular file ({}); expected a file",
            path.display(),
            kind(&meta.file_type())
        );
    }
    Ok(f)
}

/// As [`text_capped`], for bytes.
pub fn bytes_capped(path: &Path, cap: u64) -> Result<Vec<u8>> {
    let f = open_regular(path)?;
    let meta = f
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if meta.len() > cap {
        bail!(
            "{}: {} bytes, more than the {} bytes greta reads from such a file",
            path.display(),
            meta.len(),
            cap
        );
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    // The file may grow between stat and read: read at most cap + 1 bytes.
    f.take(cap + 1)
        .read_to_end(&mut out)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if out.len() as u64 > cap {
        bail!(
            "{}: grew past {} bytes while being read",
            path.display(),
            cap
        );
    }
    Ok(out)
}

/// As [`text_capped`], but a missing file is `Ok(None)`.
pub fn text_if_exists(path: &Path, cap: u64) -> Result<Option<String>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => text_capped(path, cap).map(Some),
    }
}

fn kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn size_cap_and_missing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        std::fs::write(&p, vec![b'a'; 2048]).unwrap();
        assert_eq!(text_capped(&p, 4096).unwrap().len(), 2048);
        let e = text_capped(&p, 1024).unwrap_err().to_string();
        assert!(e.contains("2048 bytes"), "{e}");
        assert!(text_if_exists(&d.path().join("none"), 10)
            .unwrap()
            .is_none());
    }
}
