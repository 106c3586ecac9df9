//! Files, links and directories of the machine, read through the root:
//! size-capped, recorded for a capture, and in a sysroot resolved inside
//! the tree.

use super::*;

impl Root {
    /// Reads a whole text file (lossy UTF-8, capped at [`MAX_READ`]). A
    /// directory on the way that is there but is none (a FIFO or a file
    /// where it should be, a loop of links, one this user may not search)
    /// is recorded as unknown ([`Root::unreadable`]): what lies beneath it is not known
    /// to be absent. (The file itself being a directory or a FIFO is what
    /// the captured machine had, and the caller's error to judge.)
    pub fn read(&self, abs: &str) -> std::io::Result<String> {
        let host = self.host_path_known(abs, Target::File)?;
        let r = read_capped(&host);
        match &r {
            Ok(text) => self.note(|rec| {
                rec.files.insert(abs.to_string(), text.clone());
            }),
            Err(e) => self.unknown_on(&host, e, Target::File),
        }
        r
    }

    /// Trimmed content of a small file (sysfs attribute), None on any error.
    pub fn read_trim(&self, abs: &str) -> Option<String> {
        self.read(abs).ok().map(|s| s.trim().to_string())
    }

    /// The first `n` bytes of a file (e.g. an ELF header).
    pub fn read_prefix(&self, abs: &str, n: usize) -> std::io::Result<Vec<u8>> {
        let host = self.host_path_known(abs, Target::File)?;
        let f = greta_fsread::open_regular(&host)
            .map_err(|e| e.into_io())
            .inspect_err(|e| self.unknown_on(&host, e, Target::File))?;
        let mut buf = Vec::with_capacity(n);
        f.take(n as u64).read_to_end(&mut buf)?;
        self.note(|rec| {
            let e = rec.prefixes.entry(abs.to_string()).or_default();
            if buf.len() > e.len() {
                *e = buf.clone();
            }
        });
        Ok(buf)
    }

    /// Whether the path exists (following symlinks).
    pub fn exists(&self, abs: &str) -> bool {
        let e = self.host_path(abs).exists();
        self.note_path(abs);
        e
    }

    /// Whether the path is a directory (following symlinks).
    pub fn is_dir(&self, abs: &str) -> bool {
        let d = self.host_path(abs).is_dir();
        if d {
            self.note(|rec| {
                rec.dirs.insert(abs.to_string());
            });
        }
        d
    }

    /// Target of a symlink, as written in the link.
    pub fn read_link(&self, abs: &str) -> Option<PathBuf> {
        let t = std::fs::read_link(self.host_path_nofollow(abs)).ok();
        if t.is_some() {
            self.note(|rec| {
                rec.links.insert(abs.to_string());
            });
        }
        t
    }

    /// Sorted entry names of a directory; empty when missing or
    /// unreadable. A directory that is there but cannot be listed (a FIFO
    /// or a file where it should be, a loop of links, one above it that is
    /// no directory, one this user may not list) is recorded as unknown
    /// ([`Root::unreadable`]): its entries are not known to be none.
    pub fn list(&self, abs: &str) -> Vec<String> {
        match self.list_dir(abs) {
            Listing::Entries(v) => v,
            Listing::Absent | Listing::Unknown => Vec::new(),
        }
    }

    /// [`Root::list`], saying whether an empty answer means "no such
    /// directory" or "something is there that cannot be listed" (then
    /// recorded as unknown).
    pub(crate) fn list_dir(&self, abs: &str) -> Listing {
        let listing = self.listing(abs);
        if matches!(listing, Listing::Entries(_)) {
            self.note(|rec| {
                rec.dirs.insert(abs.to_string());
            });
        }
        listing
    }

    /// [`Root::list_dir`] without recording the directory for a capture
    /// (device-node directories are captured as their nodes' table): the
    /// one lister of the machine's directories, live or captured.
    pub(super) fn listing(&self, abs: &str) -> Listing {
        let Ok(host) = self.host_path_known(abs, Target::Dir) else {
            return Listing::Unknown;
        };
        let rd = match std::fs::read_dir(&host) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Listing::Absent,
            Err(e) => {
                self.unknown_on(&host, &e, Target::Dir);
                return Listing::Unknown;
            }
        };
        let mut v: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        v.sort();
        Listing::Entries(v)
    }

    /// Records that a path mattered (capture keeps it, even if
    /// it is a dangling link or was only listed).
    pub fn note_path(&self, abs: &str) {
        self.note(|rec| {
            rec.probed.insert(abs.to_string());
        });
    }

    /// Whether the path is an executable regular file (following symlinks).
    pub fn is_executable(&self, abs: &str) -> bool {
        let x = is_executable(&self.host_path(abs));
        if x {
            self.note_path(abs);
        }
        x
    }

    /// Finds an executable on the root's PATH (as an absolute machine path).
    pub fn which(&self, program: &str) -> Option<String> {
        let path = self.env("PATH")?;
        for dir in path.split(':').filter(|d| d.starts_with('/')) {
            let p = format!("{}/{program}", dir.trim_end_matches('/'));
            let host = self.host_path(&p);
            if is_executable(&host) {
                self.note_path(&p);
                return Some(p);
            }
        }
        None
    }
}

/// What a sysroot read was after: a file, or a directory to list. Any
/// directory that is there but cannot be listed is unknown; for a file,
/// only a directory on its way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    File,
    Dir,
}

/// What listing a directory gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listing {
    /// Its entry names, sorted.
    Entries(Vec<String>),
    /// Nothing is there.
    Absent,
    /// Something is there that cannot be listed (recorded as unknown).
    Unknown,
}

/// Host path of machine path `abs` inside the tree at `base`, resolving
/// symlinks inside the tree (absolute targets restart at `base`, `..`
/// never climbs above it). A loop, or a link that cannot be read, gives a
/// path that does not exist ([`try_resolve_in`] says which link it was).
pub(crate) fn resolve_in(base: &Path, abs: &str, follow_last: bool) -> PathBuf {
    try_resolve_in(base, abs, follow_last).unwrap_or_else(|_| base.join(UNRESOLVABLE))
}

/// Where [`resolve_in`] points a path it cannot resolve: inside the tree,
/// and never there.
const UNRESOLVABLE: &str = ".greta/unresolvable-symlink";

/// [`resolve_in`], or Err(the host path of the link) when a link on the way
/// loops (more than 40 hops) or cannot be read.
pub(super) fn try_resolve_in(
    base: &Path,
    abs: &str,
    follow_last: bool,
) -> Result<PathBuf, PathBuf> {
    {
        // `done` is a path inside the tree, as components below base.
        let mut done: Vec<OsString> = Vec::new();
        let mut todo: Vec<OsString> = logical_components(Path::new(abs));
        todo.reverse();
        let mut hops = 0;
        while let Some(c) = todo.pop() {
            if c == ".." {
                done.pop();
                continue;
            }
            done.push(c);
            let is_last = todo.is_empty();
            if is_last && !follow_last {
                break;
            }
            let here = base.join(done.iter().collect::<PathBuf>());
            let Ok(md) = std::fs::symlink_metadata(&here) else {
                continue;
            };
            if !md.file_type().is_symlink() {
                continue;
            }
            hops += 1;
            // A loop (or an unreadable link) must not be handed to the host's
            // open(), which would follow an absolute target out of the tree.
            let target = match std::fs::read_link(&here) {
                Ok(t) if hops <= 40 => t,
                _ => return Err(here),
            };
            done.pop();
            if target.is_absolute() {
                done.clear();
            }
            let mut t = logical_components(&target);
            t.reverse();
            todo.extend(t);
        }
        Ok(base.join(done.iter().collect::<PathBuf>()))
    }
}

/// What a failed read of `host` (a path inside the tree at `base`; `/`
/// on a live machine) means: None when nothing is there, which is an
/// answer (no such file); else the path that is there but not what it
/// should be, and why ([`blocked_on_way`]), or `host` itself and why.
pub(super) fn unknown_why(
    base: &Path,
    host: &Path,
    e: &std::io::Error,
    target: Target,
) -> Option<(PathBuf, String)> {
    if e.kind() == std::io::ErrorKind::NotFound {
        return None;
    }
    Some(
        blocked_on_way(base, host, target)
            .unwrap_or_else(|| (host.to_path_buf(), why_unreadable(host, e))),
    )
}

/// The first path on the way from `base` to `host` that stops a read
/// there, and why: one that is there but no directory (`etc` a FIFO, a
/// PCI device's directory a file; `host` itself too when it is the
/// directory to list), a loop of symbolic links, or a directory this user
/// may not search (then the directory the read needed is named: the one
/// to list, or the file's own). None when every directory on the way is
/// one (the file itself is then the caller's to judge) or nothing is
/// there. The one walk for live machines and sysroots alike.
pub(super) fn blocked_on_way(
    base: &Path,
    host: &Path,
    target: Target,
) -> Option<(PathBuf, String)> {
    let comps: Vec<_> = host
        .strip_prefix(base)
        .into_iter()
        .flat_map(|r| r.components())
        .collect();
    let mut at = base.to_path_buf();
    for (i, c) in comps.iter().enumerate() {
        at.push(c);
        let last = i + 1 == comps.len();
        match std::fs::metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) if last && target == Target::File => return None,
            Ok(m) => {
                let kind = greta_fsread::kind_of(m.file_type());
                let a = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                return Some((at, format!("{a} {kind} where a directory should be")));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                let needed = match target {
                    Target::Dir => host,
                    Target::File => host.parent().unwrap_or(host),
                };
                return Some((needed.to_path_buf(), why_unreadable(&at, &e)));
            }
            Err(e) => return Some((at.clone(), why_unreadable(&at, &e))),
        }
    }
    None
}

/// Components of a path without the root and `.`.
pub(super) fn logical_components(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

pub(super) fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (k, v) = l.split_once('=')?;
            let k = k.trim();
            if !ENV_ALLOW.contains(&k) {
                return None;
            }
            let v = v.trim_end_matches(['\r', '\n']);
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// Up to [`MAX_READ`] bytes of a regular file as text. A FIFO, device node
/// or directory is an error at once (opened without blocking, the type
/// checked on the descriptor): a sysroot is untrusted input, and a FIFO in it
/// once hung `doctor --sysroot` for ever.
pub(super) fn read_capped(p: &Path) -> std::io::Result<String> {
    let f = greta_fsread::open_regular(p).map_err(|e| e.into_io())?;
    let mut buf = Vec::new();
    f.take(MAX_READ as u64).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A capture file (`.greta/env`, `.greta/cmd/rocminfo.txt`; `rel` from
/// the tree's top): its text, Ok(None) when it is absent, or Err saying
/// what is there but cannot be read, charged to `check`. Links are
/// resolved inside the tree (a capture's link never reads the host's
/// files); a link to nothing where greta wrote a file, or `.greta` itself
/// being no directory, is unknown, not absent.
pub(super) fn capture_file(
    base: &Path,
    rel: &str,
    check: Option<&'static str>,
) -> Result<Option<String>, Unreadable> {
    let host = try_resolve_in(base, rel, true).map_err(|link| loop_at(base, &link, check))?;
    match read_capped(&host) {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            let asked = resolve_in(base, rel, false);
            let dangling =
                e.kind() == std::io::ErrorKind::NotFound && asked.symlink_metadata().is_ok();
            let why = if dangling {
                Some((rel.to_string(), "a link to nothing".to_string()))
            } else {
                unknown_why(base, &host, &e, Target::File).map(|(p, why)| (relative(base, &p), why))
            };
            match why {
                None => Ok(None),
                Some((file, why)) => Err(Unreadable { file, why, check }),
            }
        }
    }
}

/// `p` as a note names it: relative to a sysroot's top.
pub(super) fn relative(base: &Path, p: &Path) -> String {
    p.strip_prefix(base)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_else(|_| p.display().to_string())
}

/// A link of the tree that loops (or cannot be read), as unknown.
pub(super) fn loop_at(base: &Path, link: &Path, check: Option<&'static str>) -> Unreadable {
    Unreadable {
        file: relative(base, link),
        why: "a loop of symbolic links (or a link that cannot be read)".into(),
        check,
    }
}

/// Why a file that exists could not be read, without its host path (the
/// note names the capture file itself).
pub(super) fn why_unreadable(p: &Path, e: &std::io::Error) -> String {
    let msg = e.to_string();
    let host = format!("{}: ", p.display());
    let msg = msg.strip_prefix(&host).unwrap_or(&msg).to_string();
    match e.kind() {
        std::io::ErrorKind::NotFound => "a link to nothing".into(),
        _ => msg,
    }
}

/// At most `n` characters of `s`, for quoting a bad line.
pub(super) fn clip(s: &str, n: usize) -> String {
    let t: String = s.chars().take(n).collect();
    if t.len() < s.len() {
        format!("{t}...")
    } else {
        t
    }
}

pub(super) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
