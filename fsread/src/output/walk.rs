//! Where a user-named path really leads, found one component at a time on
//! directory descriptors (`O_PATH`), as the kernel's own walk does, with
//! the link rule applied to every symbolic link met on the way: in a
//! sticky or world-writable directory (`/tmp`, a shared textfile
//! directory) only a link the caller or root owns is followed, since any
//! other user may have planted it there (the kernel's `protected_symlinks`
//! rule, which greta cannot rely on: it is off in many containers, and a
//! writer that reads links itself and renames onto their targets never
//! meets it). The directory reached is held open, so what is done in it
//! afterwards happens there even if a name on the way is swapped.

use super::OutputError;
use rustix::fs::{Mode, OFlags};
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Symbolic links followed before giving up (Linux's own limit, ELOOP).
pub(crate) const MAX_LINKS: usize = 40;

/// A directory reached by a walk: held open (`O_PATH`), and its path,
/// which holds no symbolic link (for messages, and for callers that must
/// go on by path).
#[derive(Debug)]
pub(crate) struct Dir {
    pub fd: File,
    pub path: PathBuf,
}

/// What the last component names.
#[derive(Debug)]
pub(crate) enum Leaf {
    /// Nothing: a free name.
    Free,
    /// Something (never a symbolic link: those were followed), reached
    /// through one when `via_link`.
    Found { meta: Metadata, via_link: bool },
}

/// A walk to a name in a directory.
#[derive(Debug)]
pub(crate) struct Walked {
    pub dir: Dir,
    pub name: OsString,
    pub leaf: Leaf,
}

enum Part {
    Root,
    Up,
    Name(OsString),
}

fn parts(p: &Path) -> VecDeque<Part> {
    p.components()
        .filter_map(|c| match c {
            Component::RootDir => Some(Part::Root),
            Component::ParentDir => Some(Part::Up),
            Component::Normal(n) => Some(Part::Name(n.to_owned())),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// A path that can only name a directory: `/`, `..` or `x/` at its end.
fn names_a_directory(p: &Path) -> bool {
    p.as_os_str().as_bytes().ends_with(b"/")
        || !matches!(p.components().next_back(), Some(Component::Normal(_)))
}

/// `openat(dir, name, O_PATH | flags)`: a handle on the entry itself, of
/// whatever type (with `NOFOLLOW`, the link itself), that opens nothing
/// for reading or writing (a FIFO does not block, a device is not opened).
pub(crate) fn open_path(dir: impl AsFd, name: &OsStr, flags: OFlags) -> io::Result<File> {
    rustix::fs::openat(
        dir,
        name,
        flags | OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(io::Error::from)
}

/// The effective user id, whose links are followed anywhere.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

struct Walker<'a> {
    named: &'a Path,
    links: usize,
    euid: u32,
}

/// The walk to the last component of `named` (whatever is there, or
/// nothing); missing directories on the way are created when `create`.
pub(crate) fn to_leaf(named: &Path, create: bool) -> Result<Walked, OutputError> {
    if named.as_os_str().is_empty() || names_a_directory(named) {
        return Err(OutputError::NotRegular {
            named: named.to_path_buf(),
            kind: "directory",
            via_link: false,
        });
    }
    match Walker::new(named).run(true, create)? {
        (dir, Some((name, leaf))) => Ok(Walked { dir, name, leaf }),
        // A leaf walk ends at a name or fails (see `run`).
        (_, None) => Err(OutputError::NotRegular {
            named: named.to_path_buf(),
            kind: "directory",
            via_link: false,
        }),
    }
}

/// The walk to the directory `named`, created (with its parents) when
/// missing and `create`.
pub(crate) fn to_dir(named: &Path, create: bool) -> Result<Dir, OutputError> {
    if named.as_os_str().is_empty() {
        return Err(OutputError::Io {
            named: named.to_path_buf(),
            what: "cannot open",
            path: named.to_path_buf(),
            source: io::ErrorKind::NotFound.into(),
        });
    }
    Ok(Walker::new(named).run(false, create)?.0)
}

impl<'a> Walker<'a> {
    fn new(named: &'a Path) -> Walker<'a> {
        Walker {
            named,
            links: 0,
            euid: euid(),
        }
    }

    fn io(&self, what: &'static str, path: PathBuf, source: io::Error) -> OutputError {
        if source.raw_os_error() == Some(libc::ELOOP) {
            return OutputError::Loop {
                named: self.named.to_path_buf(),
            };
        }
        OutputError::Io {
            named: self.named.to_path_buf(),
            what,
            path,
            source,
        }
    }

    fn root(&self) -> Result<Dir, OutputError> {
        let path = PathBuf::from("/");
        open_path(rustix::fs::CWD, OsStr::new("/"), OFlags::DIRECTORY)
            .map(|fd| Dir {
                fd,
                path: path.clone(),
            })
            .map_err(|e| self.io("cannot open", path, e))
    }

    fn cwd(&self) -> Result<Dir, OutputError> {
        let path = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        open_path(rustix::fs::CWD, OsStr::new("."), OFlags::DIRECTORY)
            .map(|fd| Dir {
                fd,
                path: path.clone(),
            })
            .map_err(|e| self.io("cannot open", path, e))
    }

    fn up(&self, dir: Dir) -> Result<Dir, OutputError> {
        let mut path = dir.path.clone();
        path.pop();
        open_path(&dir.fd, OsStr::new(".."), OFlags::DIRECTORY)
            .map(|fd| Dir { fd, path })
            .map_err(|e| self.io("cannot open", dir.path.join(".."), e))
    }

    /// The link rule: `link` (the entry `name` of `dir`) may be followed
    /// unless `dir` is sticky or world-writable and neither the caller nor
    /// root owns the link. Counts the link against [`MAX_LINKS`].
    fn may_follow(&mut self, dir: &Dir, name: &OsStr, link: &Metadata) -> Result<(), OutputError> {
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(OutputError::Loop {
                named: self.named.to_path_buf(),
            });
        }
        let d = dir
            .fd
            .metadata()
            .map_err(|e| self.io("cannot inspect", dir.path.clone(), e))?;
        let sticky = d.mode() & 0o1000 != 0;
        let world_writable = d.mode() & 0o002 != 0;
        let owner = link.uid();
        if (sticky || world_writable) && owner != self.euid && owner != 0 {
            return Err(OutputError::ForeignLink {
                named: self.named.to_path_buf(),
                link: dir.path.join(name),
                owner,
                caller: self.euid,
                dir: dir.path.clone(),
                dir_kind: match (sticky, world_writable) {
                    (true, true) => "sticky, world-writable",
                    (true, false) => "sticky",
                    _ => "world-writable",
                },
            });
        }
        Ok(())
    }

    /// What the kernel finds through the link `name` (magic links of
    /// `/proc` included, whose text is no path): its identity when it is a
    /// regular file, `None` when the link dangles. Anything else is refused.
    fn kernel_view(&self, dir: &Dir, name: &OsStr) -> Result<Option<(u64, u64)>, OutputError> {
        match open_path(&dir.fd, name, OFlags::empty()) {
            Ok(f) => {
                let m = f
                    .metadata()
                    .map_err(|e| self.io("cannot inspect", dir.path.join(name), e))?;
                if m.is_file() {
                    Ok(Some((m.dev(), m.ino())))
                } else {
                    Err(OutputError::NotRegular {
                        named: self.named.to_path_buf(),
                        kind: crate::kind_of(m.file_type()),
                        via_link: true,
                    })
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io("cannot follow", dir.path.join(name), e)),
        }
    }

    /// Walks every component; with `leaf`, the last one is not entered but
    /// returned with what is there.
    fn run(
        mut self,
        leaf: bool,
        create: bool,
    ) -> Result<(Dir, Option<(OsString, Leaf)>), OutputError> {
        let mut queue = parts(self.named);
        let mut dir = if self.named.is_absolute() {
            self.root()?
        } else {
            self.cwd()?
        };
        // Reached through a link, and what the kernel found through it.
        let mut via_link = false;
        let mut expect: Option<Option<(u64, u64)>> = None;
        while let Some(part) = queue.pop_front() {
            let last = leaf && queue.is_empty();
            let name = match part {
                Part::Root => {
                    dir = self.root()?;
                    continue;
                }
                Part::Up => {
                    dir = self.up(dir)?;
                    continue;
                }
                Part::Name(n) => n,
            };
            let here = dir.path.join(&name);
            let mut found = open_path(&dir.fd, &name, OFlags::NOFOLLOW);
            if create
                && !last
                && found
                    .as_ref()
                    .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
            {
                match rustix::fs::mkdirat(&dir.fd, &name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(self.io("cannot create the directory", here, e.into())),
                }
                found = open_path(&dir.fd, &name, OFlags::NOFOLLOW);
            }
            let f = match found {
                Ok(f) => f,
                Err(e) if last && e.kind() == io::ErrorKind::NotFound => {
                    if expect.is_some_and(|k| k.is_some()) {
                        return Err(OutputError::Changed {
                            named: self.named.to_path_buf(),
                        });
                    }
                    return Ok((dir, Some((name, Leaf::Free))));
                }
                Err(e) => return Err(self.io("cannot open", here, e)),
            };
            let meta = f
                .metadata()
                .map_err(|e| self.io("cannot inspect", here.clone(), e))?;
            if meta.file_type().is_symlink() {
                self.may_follow(&dir, &name, &meta)?;
                if last {
                    via_link = true;
                    expect = Some(self.kernel_view(&dir, &name)?);
                }
                let text =
                    rustix::fs::readlinkat(&dir.fd, name.as_os_str(), Vec::new()).map_err(|e| {
                        self.io("cannot read the symbolic link", here.clone(), e.into())
                    })?;
                let target = PathBuf::from(OsString::from_vec(text.into_bytes()));
                if last && names_a_directory(&target) {
                    return Err(OutputError::NotRegular {
                        named: self.named.to_path_buf(),
                        kind: "directory",
                        via_link: true,
                    });
                }
                let mut more = parts(&target);
                while let Some(p) = more.pop_back() {
                    queue.push_front(p);
                }
                continue;
            }
            if last {
                if let Some(k) = expect {
                    if k != Some((meta.dev(), meta.ino())) {
                        return Err(OutputError::Changed {
                            named: self.named.to_path_buf(),
                        });
                    }
                }
                return Ok((dir, Some((name, Leaf::Found { meta, via_link }))));
            }
            if !meta.is_dir() {
                return Err(OutputError::NotDir {
                    named: self.named.to_path_buf(),
                    path: here,
                    kind: crate::kind_of(meta.file_type()),
                });
            }
            dir = Dir { fd: f, path: here };
        }
        if leaf {
            // Only links can end a leaf walk here ("a -> ."), caught above;
            // kept as an error rather than a panic.
            return Err(OutputError::NotRegular {
                named: self.named.to_path_buf(),
                kind: "directory",
                via_link,
            });
        }
        Ok((dir, None))
    }
}
