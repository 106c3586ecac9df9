//! Device nodes (`/dev/kfd`, `/dev/dri/renderD*`): their metadata, live
//! or from a capture's `.greta/dev-nodes` table, and whether they open.

use super::*;

/// Metadata of a device node (`/dev/kfd`, `/dev/dri/renderD128`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMeta {
    pub path: String,
    /// `c` char device, `b` block, `f` regular file, `d` directory, `?` other.
    pub kind: char,
    /// Permission bits (`0o660`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Live result of `open(O_RDWR)`: `Ok(())` or the errno name (`EACCES`).
    /// None when not tried (sysroot trees written by hand).
    pub open: Option<Result<(), String>>,
}

impl NodeMeta {
    pub(super) fn to_line(&self) -> String {
        let open = match &self.open {
            None => String::new(),
            Some(Ok(())) => " open=ok".into(),
            Some(Err(e)) => format!(" open={e}"),
        };
        format!(
            "{} {} {:04o} {} {}{open}",
            self.path, self.kind, self.mode, self.uid, self.gid
        )
    }
    pub(super) fn from_line(line: &str) -> Option<NodeMeta> {
        let mut w = line.split_whitespace();
        let path = w.next()?.to_string();
        let kind = w.next()?.chars().next()?;
        let mode = u32::from_str_radix(w.next()?, 8).ok()?;
        let uid = w.next()?.parse().ok()?;
        let gid = w.next()?.parse().ok()?;
        let open = w.next().and_then(|o| o.strip_prefix("open=")).map(|o| {
            if o == "ok" {
                Ok(())
            } else {
                Err(o.to_string())
            }
        });
        Some(NodeMeta {
            path,
            kind,
            mode,
            uid,
            gid,
            open,
        })
    }
}

/// What a sysroot's device-node table says of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeState {
    Present(NodeMeta),
    /// The table was read and has no line for it.
    Absent,
    /// The table (or this path's line) could not be read: why.
    Unknown(String),
}

impl Root {
    /// Device nodes directly under `dir` whose names start with `prefix`.
    pub fn list_nodes(&self, dir: &str, prefix: &str) -> Vec<String> {
        match self.mode {
            // The one lister: a `/dev/dri` this user may not list is
            // unknown with a note, not "no render nodes".
            Mode::Live => match self.listing(dir) {
                Listing::Entries(names) => names
                    .into_iter()
                    .filter(|n| n.starts_with(prefix))
                    .map(|n| format!("{}/{n}", dir.trim_end_matches('/')))
                    .collect(),
                Listing::Absent | Listing::Unknown => Vec::new(),
            },
            Mode::Sysroot => {
                // Only the keys that start with `DIR/PREFIX` (a range of the
                // sorted table), then the same test as before on each.
                let start = format!("{}/{prefix}", dir.trim_end_matches('/'));
                self.nodes
                    .range(start.clone()..)
                    .take_while(|(k, _)| k.starts_with(&start))
                    .filter(|(k, _)| {
                        let p = Path::new(k.as_str());
                        p.parent() == Some(Path::new(dir))
                            && p.file_name()
                                .and_then(|f| f.to_str())
                                .is_some_and(|f| f.starts_with(prefix))
                    })
                    .map(|(k, _)| k.clone())
                    .collect()
            }
        }
    }

    /// What is known of a device node: present (with its metadata), absent,
    /// or unknown (a sysroot whose `dev-nodes` could not be read).
    pub fn node_state(&self, abs: &str) -> NodeState {
        if self.mode == Mode::Sysroot {
            if let Some(why) = &self.nodes_unreadable {
                return NodeState::Unknown(format!(".greta/dev-nodes: {why}"));
            }
            if let Some(why) = self.nodes_unknown.get(abs) {
                return NodeState::Unknown(format!(".greta/dev-nodes: {why}"));
            }
        }
        match self.node(abs) {
            Some(m) => NodeState::Present(m),
            None => NodeState::Absent,
        }
    }

    /// Metadata of a device node; live also tries `open(O_RDWR)` and closes
    /// it at once. None when the node does not exist (or is unknown: see
    /// [`Root::node_state`]).
    pub fn node(&self, abs: &str) -> Option<NodeMeta> {
        let meta = match self.mode {
            Mode::Sysroot => self.nodes.get(abs).cloned(),
            Mode::Live => live_node(abs),
        };
        if let Some(m) = &meta {
            self.note(|rec| {
                if !rec.nodes.iter().any(|n| n.path == m.path) {
                    rec.nodes.push(m.clone());
                }
            });
        }
        meta
    }
}

/// Writes the record's metadata files (`dev-nodes`, `status`) formats; used by capture.
pub(crate) fn node_line(n: &NodeMeta) -> String {
    n.to_line()
}

fn live_node(abs: &str) -> Option<NodeMeta> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let md = std::fs::metadata(abs).ok()?;
    let ft = md.file_type();
    let kind = if ft.is_char_device() {
        'c'
    } else if ft.is_block_device() {
        'b'
    } else if ft.is_dir() {
        'd'
    } else if ft.is_file() {
        'f'
    } else {
        '?'
    };
    let open = if kind == 'c' {
        Some(try_open_rw(abs))
    } else {
        None
    };
    Some(NodeMeta {
        path: abs.to_string(),
        kind,
        mode: md.mode() & 0o7777,
        uid: md.uid(),
        gid: md.gid(),
        open,
    })
}

/// Opens read-write and closes at once: the only test that also sees
/// container device cgroups and LSMs, not just the permission bits.
fn try_open_rw(abs: &str) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(abs)
    {
        Ok(f) => {
            drop(f);
            Ok(())
        }
        Err(e) => Err(errno_name(e.raw_os_error().unwrap_or(0))),
    }
}

fn errno_name(e: i32) -> String {
    match e {
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ENXIO => "ENXIO",
        libc::ENODEV => "ENODEV",
        libc::EBUSY => "EBUSY",
        libc::EINVAL => "EINVAL",
        libc::ENOMEM => "ENOMEM",
        libc::EROFS => "EROFS",
        _ => return format!("errno{e}"),
    }
    .to_string()
}
