//! Files, links and directories of the machine, read through the root:
//! size-capped, recorded for a capture, and in a sysroot resolved inside
//! the tree.

use super::*;

impl Root {
    /// Reads a whole text file (lossy UTF-8, capped at [`MAX_READ`]).
    pub fn read(&self, abs: &str) -> std::io::Result<String> {
        let r = read_capped(&self.host_path(abs));
        if let Ok(text) = &r {
            self.note(|rec| {
                rec.files.insert(abs.to_string(), text.clone());
            });
        }
        r
    }

    /// Trimmed content of a small file (sysfs attribute), None on any error.
    pub fn read_trim(&self, abs: &str) -> Option<String> {
        self.read(abs).ok().map(|s| s.trim().to_string())
    }

    /// The first `n` bytes of a file (e.g. an ELF header).
    pub fn read_prefix(&self, abs: &str, n: usize) -> std::io::Result<Vec<u8>> {
        let f = greta_fsread::open_regular(&self.host_path(abs)).map_err(|e| e.into_io())?;
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

    /// Sorted entry names of a directory; empty when missing or unreadable.
    pub fn list(&self, abs: &str) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.host_path(abs)) else {
            return Vec::new();
        };
        self.note(|rec| {
            rec.dirs.insert(abs.to_string());
        });
        let mut v: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        v.sort();
        v
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

/// Host path of machine path `abs` inside the tree at `base`, resolving
/// symlinks inside the tree (absolute targets restart at `base`, `..`
/// never climbs above it).
pub(crate) fn resolve_in(base: &Path, abs: &str, follow_last: bool) -> PathBuf {
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
                _ => return base.join(".greta/unresolvable-symlink"),
            };
            done.pop();
            if target.is_absolute() {
                done.clear();
            }
            let mut t = logical_components(&target);
            t.reverse();
            todo.extend(t);
        }
        base.join(done.iter().collect::<PathBuf>())
    }
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

/// A capture metadata file (`.greta/NAME`): its text, or None when it is
/// absent; when it exists but cannot be read, None and a line in
/// `unreadable` saying why.
pub(super) fn capture_file(
    greta: &Path,
    name: &str,
    unreadable: &mut Vec<Unreadable>,
) -> Option<String> {
    let p = greta.join(name);
    match read_capped(&p) {
        Ok(t) => Some(t),
        Err(e) => {
            if p.symlink_metadata().is_ok() {
                unreadable.push(Unreadable {
                    file: format!(".greta/{name}"),
                    why: why_unreadable(&p, e),
                });
            }
            None
        }
    }
}

/// Why a file that exists could not be read, without its host path (the
/// note names the capture file itself).
pub(super) fn why_unreadable(p: &Path, e: std::io::Error) -> String {
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
