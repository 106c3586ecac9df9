//! Opening the files greta writes in its own cache (`partial/<sha>.part`,
//! its `.lock`, the `.verified` stamp's temporary file).
//!
//! The cache sits in the user's home, where anything may have been left at
//! these paths: a symlink to a file outside the cache (a download appended
//! to it), a symlink to a device (a stream that "verified" while going into
//! `/dev/zero`), a FIFO (an `open` or `write` that blocks for ever), a
//! directory. So these files are opened as every other input is: without
//! following a symlink, without blocking, their type checked on the opened
//! descriptor, and created exclusively when missing. Whatever else sits at
//! the path is renamed aside (never deleted: it may be somebody's) with a
//! warning naming it, and a fresh regular file is created in its place.

use anyhow::{Context, Result};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a cache file is for: data is appended to a partial download; a
/// lock file only carries an `flock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Read and appended to; must have no other name (a hard link to a file
    /// elsewhere would be written through like a symlink).
    Append,
    /// Opened only to lock it.
    Lock,
}

/// Opens the regular file at `path` (read + write, appending for
/// [`Use::Append`]), creating it exclusively when missing; anything else
/// at `path` is moved aside first (see the module docs).
pub fn open(path: &Path, usage: Use) -> Result<File> {
    rounds(path, "opened", |seen| match seen {
        Some(m) if !is_ours(&m, usage) => {
            move_aside(path, &m)?;
            Ok(None)
        }
        Some(_) => match opts(usage).open(path) {
            Ok(f) => {
                // The type is checked on the descriptor: the path may
                // have been swapped since the look.
                let m = f
                    .metadata()
                    .with_context(|| format!("reading {}", path.display()))?;
                Ok(is_ours(&m, usage).then_some(f))
            }
            // Swapped for a symlink (ELOOP), a socket (ENXIO), a
            // directory (EISDIR) or gone: look again.
            Err(e) if retry_after(&e) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
        },
        None => created(path, opts(usage).create_new(true).mode(0o644).open(path)),
    })
}

/// Looks at `path` (its entry, not following a symlink; None when there is
/// none) and hands what it saw to `round`, until a round gives a result.
/// A few rounds at most: another greta may create or move the entry between
/// the look and the act on it, and each round either finishes or removes
/// one cause. `done` names the act for the error ("opened", "created").
fn rounds<T>(
    path: &Path,
    done: &str,
    mut round: impl FnMut(Option<fs::Metadata>) -> Result<Option<T>>,
) -> Result<T> {
    for _ in 0..8 {
        let seen = match fs::symlink_metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        if let Some(v) = round(seen)? {
            return Ok(v);
        }
    }
    anyhow::bail!(
        "{}: kept changing while greta {done} it (another process is replacing it)",
        path.display()
    )
}

/// A round's exclusive create: made, or (another process was first) look
/// again.
fn created<T>(path: &Path, made: io::Result<T>) -> Result<Option<T>> {
    match made {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}

fn opts(usage: Use) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    if usage == Use::Append {
        o.append(true);
    }
    o
}

fn retry_after(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || matches!(
            e.raw_os_error(),
            Some(libc::ELOOP | libc::ENXIO | libc::EISDIR)
        )
}

fn is_ours(m: &fs::Metadata, usage: Use) -> bool {
    m.file_type().is_file() && (usage == Use::Lock || m.nlink() == 1)
}

/// What a non-regular entry is, in words.
pub fn kind(m: &fs::Metadata) -> &'static str {
    if m.file_type().is_file() {
        "regular file with other names (a hard link)"
    } else {
        greta_fsread::kind_of(m.file_type())
    }
}

/// Renames `path` to `<path>.aside-<pid>-<n>` ([`greta_fsread::set_aside`])
/// and says so on stderr: what was there stays for its owner to look at,
/// and greta writes nothing through it.
pub fn move_aside(path: &Path, m: &fs::Metadata) -> Result<PathBuf> {
    let what = kind(m);
    let to = greta_fsread::set_aside(path).with_context(|| {
        format!(
            "{} is a {what}, not a regular file, and cannot be moved aside",
            path.display()
        )
    })?;
    tracing::warn!("{} was a {what}; moved to {}", path.display(), to.display());
    crate::errln!(
        "greta: warning: {} was a {what}, not a regular file: moved it aside to {} (greta never writes through one)",
        path.display(),
        to.display()
    );
    Ok(to)
}

/// Makes `path` a real directory (created with its parents when missing):
/// a symlink there (to a directory outside the cache, whose files greta
/// would then write and rename), a file or a FIFO is moved aside first.
pub fn dir(path: &Path) -> Result<()> {
    rounds(path, "created", |seen| match seen {
        Some(m) if m.file_type().is_dir() => Ok(Some(())),
        Some(m) => {
            move_aside(path, &m)?;
            Ok(None)
        }
        // made: look again, to see a directory there
        None => created(path, fs::create_dir_all(path)).map(|_| None),
    })
}

/// Whether `path` is a real directory (not a symlink to one): the sweeps
/// delete files only in greta's own directories.
pub fn is_real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

/// Creates `path` exclusively for writing (never through a symlink or into
/// a FIFO); an entry already there is removed first when it is not a
/// directory (it is a temporary file of greta's own naming).
pub fn create_new(path: &Path) -> io::Result<File> {
    let o = || {
        let mut o = OpenOptions::new();
        o.write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        o
    };
    match o().open(path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(path)?;
            o().open(path)
        }
        r => r,
    }
}

/// Blocks until the exclusive lock on `f` is ours (cache entries: waiting
/// for the other process is the right thing). Here, not in `envs::guard`,
/// so that fetch imports nothing of envs (no module circle).
pub fn flock_exclusive(f: &File) -> std::io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor borrowed for the call.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
