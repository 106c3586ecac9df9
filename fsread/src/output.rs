//! Writing an output a user named (`smoke --prom FILE`, `--html FILE`,
//! `--out DIR`, `report --out FILE`, `doctor --capture DIR`, the env and
//! results directories): the one way greta does it.
//!
//! - Where it goes is found by [`walk`]: every symbolic link on the way is
//!   followed as the kernel would, except one in a sticky or
//!   world-writable directory that neither the caller nor root owns,
//!   which is refused ([`OutputError::ForeignLink`]): root writing
//!   `/tmp/greta.prom` must not replace the file a link planted there by
//!   another user points to. A link the caller or root owns, or one in an
//!   ordinary directory, is written through and stays a link.
//! - A file output must be a regular file or a free name: the new content
//!   is renamed over it, which would replace a FIFO, a device or a
//!   directory, so those are refused and left as they are.
//! - The content goes to a temporary file in the same directory (created
//!   exclusively, never through a link), is synced, and renamed over the
//!   name, all relative to the directory's open handle: a reader sees the
//!   old file or the new one, never half of one, and an error leaves the
//!   old one.
//! - Temporaries are named so that their process can be told
//!   ([`temp`]); a stop signal removes this process's ([`stop_writes`]),
//!   and each write sweeps the directory of those a dead process left.

mod temp;
mod walk;

pub use temp::stop_writes;

use rustix::fs::{Mode, OFlags, RenameFlags};
use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use temp::Temp;
use walk::{Dir, Leaf};

/// Why an output could not be written where it was named.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(
        "{}: not following the symbolic link {} (owned by {}) in {}, a {dir_kind} directory \
         where another user could have put it; greta follows a link there only when it is \
         owned by root or by the user running greta ({}), as the kernel's protected_symlinks \
         rule does: remove the link, or name the file it points to",
        named.display(),
        link.display(),
        user(*owner),
        dir.display(),
        user(*caller)
    )]
    ForeignLink {
        named: PathBuf,
        link: PathBuf,
        owner: u32,
        caller: u32,
        dir: PathBuf,
        dir_kind: &'static str,
    },
    #[error(
        "{} {} a {kind}, not a regular file: the output is renamed over its target, which \
         would replace it; name a regular file (or a new one)",
        named.display(),
        if *via_link { "leads to" } else { "is" }
    )]
    NotRegular {
        named: PathBuf,
        kind: &'static str,
        via_link: bool,
    },
    #[error("{}: {} is a {kind}, not a directory", named.display(), path.display())]
    NotDir {
        named: PathBuf,
        path: PathBuf,
        kind: &'static str,
    },
    #[error(
        "{}: more than {} symbolic links on the way (a loop?)",
        named.display(),
        walk::MAX_LINKS
    )]
    Loop { named: PathBuf },
    #[error(
        "{}: its symbolic links lead elsewhere than the kernel follows them (a /proc link, \
         or they changed while greta resolved them)",
        named.display()
    )]
    Changed { named: PathBuf },
    #[error("{}: {what} {}: {source}", named.display(), path.display())]
    Io {
        named: PathBuf,
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl OutputError {
    /// A write that found its name taken ([`OutputDir::write_new`]).
    pub fn is_already_exists(&self) -> bool {
        matches!(self, OutputError::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists)
    }
}

/// `uid N (name)`, the name from `/etc/passwd` where it has one.
fn user(uid: u32) -> String {
    let name = crate::text(Path::new("/etc/passwd"), 4 << 20)
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut f = l.split(':');
                let name = f.next()?;
                (f.nth(1)? == uid.to_string()).then(|| name.to_string())
            })
        });
    match name {
        Some(n) => format!("uid {uid} ({n})"),
        None => format!("uid {uid}"),
    }
}

/// What an output is, which names its temporaries, sets its mode and
/// names the step `GRETA_TEST_PAUSE_AT` can hold it at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A Prometheus textfile (`--prom`): 0644, as the collector often
    /// runs as another user.
    Textfile,
    /// An HTML page (`--html`, `report --out`): 0644.
    Page,
    /// A result file (`smoke-*.json`, `.csv`): 0600.
    Result,
    /// A snapshot directory (`doctor --capture`): 0700 while built.
    Snapshot,
    /// A system file `doctor --fix` writes (`/etc/group`, a modprobe.d or
    /// udev file, a shell profile, an env's activation script): a new one
    /// 0644, as those are read by other users and services; one rewritten
    /// keeps its mode (a 0600 profile stays 0600) and, where the writer
    /// may give it, its owner.
    Config,
}

impl Purpose {
    fn tag(self) -> &'static str {
        match self {
            Purpose::Textfile => "prom",
            Purpose::Page => "page",
            Purpose::Result => "result",
            Purpose::Snapshot => "capture",
            Purpose::Config => "fix",
        }
    }
    fn mode(self) -> u32 {
        match self {
            Purpose::Textfile | Purpose::Page | Purpose::Config => 0o644,
            Purpose::Result => 0o600,
            Purpose::Snapshot => 0o700,
        }
    }
    fn step(self) -> &'static str {
        match self {
            Purpose::Textfile => "write-prom",
            Purpose::Page => "write-page",
            Purpose::Result => "write-result",
            Purpose::Snapshot => "write-capture",
            Purpose::Config => "write-fix",
        }
    }
}

/// A file's identity (device, inode): two paths name one file when these
/// agree, whatever their spelling.
pub type FileId = (u64, u64);

/// A user-named output file, resolved: the directory it goes in (held
/// open) and its name there; a regular file or nothing yet.
#[derive(Debug)]
pub struct Output {
    named: PathBuf,
    dir: Dir,
    name: OsString,
    existing: Option<FileId>,
}

impl Output {
    /// Where `named` leads (see the module's rules). Its directory must
    /// exist.
    pub fn resolve(named: &Path) -> Result<Output, OutputError> {
        let w = walk::to_leaf(named, false)?;
        let existing = match w.leaf {
            Leaf::Free => None,
            Leaf::Found { meta, .. } if meta.is_file() => Some((meta.dev(), meta.ino())),
            Leaf::Found { meta, via_link } => {
                return Err(OutputError::NotRegular {
                    named: named.to_path_buf(),
                    kind: crate::kind_of(meta.file_type()),
                    via_link,
                })
            }
        };
        Ok(Output {
            named: named.to_path_buf(),
            dir: w.dir,
            name: w.name,
            existing,
        })
    }

    /// [`Output::resolve`], and its directory takes a file: for a check
    /// before the work whose result is written later.
    pub fn check(named: &Path) -> Result<Output, OutputError> {
        let o = Output::resolve(named)?;
        probe(&o.named, &o.dir)?;
        Ok(o)
    }

    /// Writes `bytes` as this output, atomically (see the module).
    pub fn replace(&self, bytes: &[u8], purpose: Purpose) -> Result<(), OutputError> {
        // A config file rewritten keeps its mode and owner: the new bytes
        // are never readable by more users than the old ones were, not
        // even between the rename and a chmod.
        let keep = match purpose {
            Purpose::Config => rustix::fs::statat(
                &self.dir.fd,
                self.name.as_os_str(),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .ok()
            .filter(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file()),
            _ => None,
        };
        let mode = keep.map_or(purpose.mode(), |st| st.st_mode & 0o7777);
        let tmp = fill(&self.named, &self.dir, bytes, purpose, mode)?;
        if let Some(st) = keep {
            // Only a privileged writer can give a file away; anyone else's
            // file it could not have replaced in the first place.
            let _ = rustix::fs::chownat(
                &self.dir.fd,
                tmp.name(),
                Some(rustix::fs::Uid::from_raw(st.st_uid)),
                Some(rustix::fs::Gid::from_raw(st.st_gid)),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            );
        }
        rustix::fs::renameat(&self.dir.fd, tmp.name(), &self.dir.fd, &self.name)
            .map_err(|e| renamed(&self.named, &self.dir, e))?;
        tmp.settled();
        sync(&self.dir);
        Ok(())
    }

    /// The file there now, if any.
    pub fn id(&self) -> Option<FileId> {
        self.existing
    }

    /// The directory it goes in.
    pub fn dir_id(&self) -> io::Result<FileId> {
        let m = self.dir.fd.metadata()?;
        Ok((m.dev(), m.ino()))
    }

    /// Its name in that directory.
    pub fn file_name(&self) -> &OsStr {
        &self.name
    }

    /// Where it really goes (no symbolic link in it).
    pub fn path(&self) -> PathBuf {
        self.dir.path.join(&self.name)
    }
}

/// Writes `bytes` to the file `named` ([`Output::resolve`] then
/// [`Output::replace`]): resolved again at the time of the write, so a
/// check made minutes before cannot be outdated.
pub fn write(named: &Path, bytes: &[u8], purpose: Purpose) -> Result<(), OutputError> {
    Output::resolve(named)?.replace(bytes, purpose)
}

/// A user-named output directory, resolved and held open.
#[derive(Debug)]
pub struct OutputDir {
    named: PathBuf,
    dir: Dir,
}

impl OutputDir {
    /// The directory `named`, created with its parents when missing and
    /// `create` (links on the way under the module's rule).
    pub fn open(named: &Path, create: bool) -> Result<OutputDir, OutputError> {
        Ok(OutputDir {
            named: named.to_path_buf(),
            dir: walk::to_dir(named, create)?,
        })
    }

    /// The directory takes a file.
    pub fn check(&self) -> Result<(), OutputError> {
        probe(&self.named, &self.dir)
    }

    /// Writes `bytes` as the new file `name` in it, atomically, never
    /// replacing one that is there ([`OutputError::is_already_exists`]).
    pub fn write_new(&self, name: &str, bytes: &[u8], purpose: Purpose) -> Result<(), OutputError> {
        let tmp = fill(&self.named, &self.dir, bytes, purpose, purpose.mode())?;
        let fd = &self.dir.fd;
        match rustix::fs::renameat_with(fd, tmp.name(), fd, name, RenameFlags::NOREPLACE) {
            Ok(()) => {}
            // A filesystem without RENAME_NOREPLACE: a hard link fails on
            // a taken name just as well.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
                rustix::fs::linkat(fd, tmp.name(), fd, name, rustix::fs::AtFlags::empty())
                    .map_err(|e| renamed(&self.named, &self.dir, e))?;
            }
            Err(e) => return Err(renamed(&self.named, &self.dir, e)),
        }
        // After a hard link the temporary name is still there: dropped
        // unsettled, it is removed.
        drop(tmp);
        sync(&self.dir);
        Ok(())
    }

    /// Where it really is (no symbolic link in it).
    pub fn path(&self) -> &Path {
        &self.dir.path
    }

    /// The directory's identity.
    pub fn id(&self) -> io::Result<FileId> {
        let m = self.dir.fd.metadata()?;
        Ok((m.dev(), m.ino()))
    }
}

/// A user-named output directory built whole and then renamed into place
/// (`doctor --capture DIR`): DIR is either complete or absent.
#[derive(Debug)]
pub struct Snapshot {
    named: PathBuf,
    dir: Dir,
    name: OsString,
}

impl Snapshot {
    /// Where `named` leads (parents created), which must be a free name
    /// or an empty directory.
    pub fn resolve(named: &Path) -> Result<Snapshot, SnapshotError> {
        let w = walk::to_leaf(named, true)?;
        if let Leaf::Found { meta, .. } = &w.leaf {
            let path = w.dir.path.join(&w.name);
            let empty =
                meta.is_dir() && std::fs::read_dir(&path).is_ok_and(|mut rd| rd.next().is_none());
            if !empty {
                return Err(SnapshotError::Exists(named.to_path_buf()));
            }
        }
        Ok(Snapshot {
            named: named.to_path_buf(),
            dir: w.dir,
            name: w.name,
        })
    }

    /// Builds it: `fill` writes the tree under the path it is given (a
    /// temporary directory beside the target), which then replaces the
    /// free name or the empty directory. On any error nothing is left.
    pub fn build<T>(&self, fill: impl FnOnce(&Path) -> io::Result<T>) -> Result<T, SnapshotError> {
        let io = |what, path, source| OutputError::Io {
            named: self.named.clone(),
            what,
            path,
            source,
        };
        temp::sweep(&self.dir);
        let tmp = Temp::dir(&self.dir, Purpose::Snapshot.tag())
            .map_err(|e| io("cannot create a directory in", self.dir.path.clone(), e))?;
        let at = self.dir.path.join(tmp.name());
        let made = fill(&at).map_err(|e| io("cannot write", at.clone(), e))?;
        greta_vocab::pause_at(Purpose::Snapshot.step());
        match rustix::fs::renameat(&self.dir.fd, tmp.name(), &self.dir.fd, &self.name) {
            Ok(()) => {}
            Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) => {
                return Err(SnapshotError::Exists(self.named.clone()))
            }
            Err(e) => return Err(renamed(&self.named, &self.dir, e).into()),
        }
        tmp.settled();
        sync(&self.dir);
        Ok(made)
    }

    /// Where it really goes (no symbolic link in it).
    pub fn path(&self) -> PathBuf {
        self.dir.path.join(&self.name)
    }
}

/// Why a snapshot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The name is taken by something other than an empty directory.
    #[error("{} already exists and is not an empty directory", .0.display())]
    Exists(PathBuf),
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// A temporary file in `dir` holding `bytes`, synced, with `mode`; the
/// directory swept of dead processes' temporaries first.
fn fill<'d>(
    named: &Path,
    dir: &'d Dir,
    bytes: &[u8],
    purpose: Purpose,
    mode: u32,
) -> Result<Temp<'d>, OutputError> {
    let io = |what, source| OutputError::Io {
        named: named.to_path_buf(),
        what,
        path: dir.path.clone(),
        source,
    };
    temp::sweep(dir);
    let (tmp, mut f) =
        Temp::file(dir, purpose.tag()).map_err(|e| io("cannot create a file in", e))?;
    f.write_all(bytes)
        .and_then(|()| rustix::fs::fchmod(&f, Mode::from_raw_mode(mode)).map_err(io::Error::from))
        .and_then(|()| f.sync_all())
        .map_err(|e| io("cannot write in", e))?;
    greta_vocab::pause_at(purpose.step());
    Ok(tmp)
}

/// The directory takes a file: one is made and removed.
fn probe(named: &Path, dir: &Dir) -> Result<(), OutputError> {
    temp::sweep(dir);
    Temp::file(dir, "probe")
        .map(drop)
        .map_err(|source| OutputError::Io {
            named: named.to_path_buf(),
            what: "cannot write in",
            path: dir.path.clone(),
            source,
        })
}

/// A failed rename: when a stop signal removed the temporary, this thread
/// waits for greta to die of it instead of saying so.
fn renamed(named: &Path, dir: &Dir, e: rustix::io::Errno) -> OutputError {
    temp::hold_if_stopping();
    OutputError::Io {
        named: named.to_path_buf(),
        what: "cannot rename into place in",
        path: dir.path.clone(),
        source: e.into(),
    }
}

/// The rename made durable (best effort: a directory greta may not read
/// cannot be opened to sync).
fn sync(dir: &Dir) {
    if let Ok(fd) = rustix::fs::openat(
        &dir.fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        let _ = rustix::fs::fsync(fd);
    }
}

#[cfg(test)]
mod tests;
