//! `greta doctor --capture DIR`: a replayable snapshot of this machine.
//!
//! The live collectors run once on a recording [`Root`]; exactly what they
//! read is written under DIR at the same paths (symlinks recreated, so path
//! resolution replays identically), plus `.greta/` metadata: command
//! outputs, the allow-listed environment (never anything else: no secrets),
//! `id`, and device-node modes (nodes themselves cannot be copied). The
//! snapshot is built in a temporary directory beside DIR and renamed into
//! place, so DIR is either complete or absent
//! (`greta_fsread::output::Snapshot`, which also refuses a link to DIR that
//! another user planted in a shared directory).

use greta_fsread::output::{Snapshot, SnapshotError};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use crate::collect::CheckRun;
use crate::facts::Facts;
use crate::root::{node_line, resolve_in, status_line, Record, Root};

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("only the live machine can be captured")]
    NotLive,
    #[error("capture target {0} already exists and is not empty")]
    Exists(PathBuf),
    #[error("cannot write capture at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Output(#[from] greta_fsread::output::OutputError),
}

impl From<SnapshotError> for CaptureError {
    fn from(e: SnapshotError) -> CaptureError {
        match e {
            SnapshotError::Exists(p) => CaptureError::Exists(p),
            SnapshotError::Output(e) => CaptureError::Output(e),
        }
    }
}

/// What was captured (also written to `.greta/facts.json`).
#[derive(Debug)]
pub struct Captured {
    pub dir: PathBuf,
    pub facts: Facts,
    pub checks: Vec<CheckRun>,
    /// Files written (not counting `.greta/`).
    pub files: usize,
}

/// Captures the live machine into `dir` (which must not exist, or be
/// empty): `collect` runs once on a recording root, and what it read is
/// written out (the front door, [`crate::Probe::capture`], says which
/// collectors run).
pub(crate) fn capture_with(
    dir: &Path,
    collect: impl FnOnce(&Root) -> (Facts, Vec<CheckRun>),
) -> Result<Captured, CaptureError> {
    let snapshot = Snapshot::resolve(dir)?;
    let root = Root::live_recording();
    let (facts, checks) = collect(&root);
    let rec = root.take_record().unwrap_or_default();
    let files = snapshot.build(|tmp| write_tree(tmp, &root, &rec, &facts))?;
    let dir = dir.to_path_buf();
    Ok(Captured {
        dir,
        facts,
        checks,
        files,
    })
}

fn write_tree(cap: &Path, root: &Root, rec: &Record, facts: &Facts) -> std::io::Result<usize> {
    let mut w = Writer { cap, written: 0 };
    for (path, text) in &rec.files {
        let text = if path == "/etc/group" {
            relevant_groups(root, rec, text)
        } else {
            text.clone()
        };
        w.replicate(path, &Leaf::Content(text.as_bytes()), 0)?;
    }
    for (path, bytes) in &rec.prefixes {
        if !rec.files.contains_key(path) {
            w.replicate(path, &Leaf::Content(bytes), 0)?;
        }
    }
    for path in &rec.links {
        w.replicate(path, &Leaf::Link, 0)?;
    }
    for path in &rec.dirs {
        w.replicate(path, &Leaf::Dir, 0)?;
    }
    for path in &rec.probed {
        if std::fs::symlink_metadata(path).is_ok() {
            w.replicate(path, &Leaf::Exists, 0)?;
        }
    }
    let greta = cap.join(".greta");
    let cmd = greta.join("cmd");
    std::fs::create_dir_all(&cmd)?;
    let mut env = String::new();
    for (k, v) in root.env_all() {
        if !v.contains('\n') {
            env.push_str(&format!("{k}={v}\n"));
        }
    }
    std::fs::write(greta.join("env"), env)?;
    if let Some(id) = root.identity() {
        let groups = root.groups();
        let line = id.to_id_line(|g| groups.iter().find(|e| e.gid == g).map(|e| e.name.clone()));
        std::fs::write(greta.join("id"), format!("{line}\n"))?;
    }
    let nodes: String = rec.nodes.iter().map(|n| node_line(n) + "\n").collect();
    std::fs::write(greta.join("dev-nodes"), nodes)?;
    for out in &rec.cmds {
        std::fs::write(cmd.join(format!("{}.txt", out.name)), &out.text)?;
        std::fs::write(
            cmd.join(format!("{}.status", out.name)),
            status_line(&out.status) + "\n",
        )?;
    }
    // For people reading the bundle; replay does not need these.
    extra_commands(root, facts, &cmd);
    let mut fj = std::fs::File::create(greta.join("facts.json"))?;
    fj.write_all(
        serde_json::to_string_pretty(facts)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(w.written)
}

/// Only the `/etc/group` lines doctor can use (the device nodes' groups,
/// the user's groups, render and video): the rest names other people.
fn relevant_groups(root: &Root, rec: &Record, text: &str) -> String {
    let mut gids: Vec<u32> = rec.nodes.iter().map(|n| n.gid).collect();
    if let Some(id) = root.identity() {
        gids.extend(&id.groups);
        gids.push(id.gid);
    }
    text.lines()
        .filter(|l| match crate::root::GroupEntry::parse(l) {
            Some(g) => gids.contains(&g.gid) || g.name == "render" || g.name == "video",
            None => false,
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `vulkaninfo --summary` and `nvidia-smi -q`, for humans reading a bundle.
fn extra_commands(root: &Root, facts: &Facts, cmd: &Path) {
    let mut runs = vec![("vulkaninfo-summary", "vulkaninfo", vec!["--summary"])];
    if facts
        .gpus
        .iter()
        .any(|g| g.vendor == crate::facts::Vendor::Nvidia)
    {
        runs.push(("nvidia-smi-q", "nvidia-smi", vec!["-q"]));
    }
    for (name, prog, args) in runs {
        if cmd.join(format!("{name}.txt")).exists() {
            continue;
        }
        let out = root.run(name, prog, &args);
        if out.text().is_some() {
            let _ = std::fs::write(cmd.join(format!("{name}.txt")), &out.text);
            let _ = std::fs::write(
                cmd.join(format!("{name}.status")),
                status_line(&out.status) + "\n",
            );
        }
    }
}

enum Leaf<'a> {
    /// A file with this content.
    Content(&'a [u8]),
    /// Only the symlink itself.
    Link,
    Dir,
    /// Whatever is there: a directory, or an empty file with the same mode.
    Exists,
}

struct Writer<'a> {
    cap: &'a Path,
    written: usize,
}

impl Writer<'_> {
    /// Recreates `abs` in the capture: every symlink met on the live path is
    /// recreated (and its target replicated), directories are created, the
    /// leaf is written.
    fn replicate(&mut self, abs: &str, leaf: &Leaf, depth: u32) -> std::io::Result<()> {
        if depth > 40 || !abs.starts_with('/') {
            return Ok(());
        }
        let comps: Vec<String> = Path::new(abs)
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        let mut prefix = String::new();
        for (i, c) in comps.iter().enumerate() {
            prefix.push('/');
            prefix.push_str(c);
            let last = i + 1 == comps.len();
            let md = std::fs::symlink_metadata(&prefix);
            match md {
                Ok(m) if m.file_type().is_symlink() => {
                    let Ok(target) = std::fs::read_link(&prefix) else {
                        return Ok(());
                    };
                    let at = resolve_in(self.cap, &prefix, false);
                    if let Some(p) = at.parent() {
                        std::fs::create_dir_all(p)?;
                    }
                    if std::fs::symlink_metadata(&at).is_err() {
                        std::os::unix::fs::symlink(&target, &at)?;
                    }
                    if last && matches!(leaf, Leaf::Link) {
                        return Ok(());
                    }
                    let step = one_step(&prefix, &target);
                    if last {
                        return self.replicate(&step, leaf, depth + 1);
                    }
                    self.replicate(&step, &Leaf::Dir, depth + 1)?;
                }
                Ok(m) if m.is_dir() && (!last || !matches!(leaf, Leaf::Content(_))) => {
                    std::fs::create_dir_all(resolve_in(self.cap, &prefix, true))?;
                }
                Ok(m) if m.is_dir() => {}
                _ if !last => {
                    std::fs::create_dir_all(resolve_in(self.cap, &prefix, true))?;
                }
                _ => {}
            }
        }
        let at = resolve_in(self.cap, abs, true);
        match leaf {
            Leaf::Content(bytes) => {
                if let Some(p) = at.parent() {
                    std::fs::create_dir_all(p)?;
                }
                if !at.is_dir() {
                    std::fs::write(&at, bytes)?;
                    // Keep the exec bit: a replay asks "is it executable?".
                    if let Ok(m) = std::fs::metadata(abs) {
                        use std::os::unix::fs::PermissionsExt;
                        let mode = m.permissions().mode() & 0o777;
                        std::fs::set_permissions(
                            &at,
                            std::fs::Permissions::from_mode(mode | 0o200),
                        )?;
                    }
                    self.written += 1;
                }
            }
            Leaf::Exists => {
                let Ok(m) = std::fs::metadata(abs) else {
                    return Ok(());
                };
                if m.is_dir() {
                    std::fs::create_dir_all(&at)?;
                } else if std::fs::symlink_metadata(&at).is_err() {
                    use std::os::unix::fs::PermissionsExt;
                    if let Some(p) = at.parent() {
                        std::fs::create_dir_all(p)?;
                    }
                    std::fs::write(&at, b"")?;
                    let mode = m.permissions().mode() & 0o777;
                    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode | 0o200))?;
                    self.written += 1;
                }
            }
            Leaf::Dir => std::fs::create_dir_all(&at)?,
            Leaf::Link => {}
        }
        Ok(())
    }
}

/// Where a symlink at `link` points, one hop, as an absolute machine path
/// (relative targets resolved against the link's real parent directory).
fn one_step(link: &str, target: &Path) -> String {
    let base = if target.is_absolute() {
        PathBuf::from("/")
    } else {
        let parent = Path::new(link).parent().unwrap_or(Path::new("/"));
        std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf())
    };
    let mut out: Vec<String> = Vec::new();
    for c in base.join(target).components() {
        match c {
            Component::Normal(s) => out.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    format!("/{}", out.join("/"))
}
