//! The one door through which the live/sysroot collectors see a machine.
//!
//! Every file read, command output, environment variable and the user's
//! credentials go through [`Root`], so the same collectors run on the live
//! machine (`Root::live()`) and on a captured or synthetic tree
//! (`Root::sysroot(dir)`). A live root can also record everything it was
//! asked for, which is how `capture` knows exactly what a replay needs.
//!
//! Sysroot layout (besides the machine's own files at their usual paths):
//! - `.greta/cmd/<name>.txt`: command output (stdout and stderr together);
//!   `.greta/cmd/<name>.status`: `exit N`, `timeout`, `not-found` or
//!   `error TEXT` (absent: the command ran and exited 0).
//! - `.greta/env`: `KEY=VALUE` lines (only [`ENV_ALLOW`] keys are used).
//! - `.greta/id`: the `id` command's output, e.g.
//!   `uid=1000(ann) gid=1000(ann) groups=1000(ann),44(video)`.
//! - `.greta/dev-nodes`: one line per device node, since device nodes cannot
//!   be copied: `PATH TYPE MODE UID GID [open=ok|open=ERRNO_NAME]`, e.g.
//!   `/dev/kfd c 0660 0 109`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Environment variables doctor reads. Nothing else is ever read or captured,
/// so a support bundle cannot leak secrets from the environment.
pub const ENV_ALLOW: &[&str] = &[
    "VK_DRIVER_FILES",
    "VK_ICD_FILENAMES",
    "VK_ADD_DRIVER_FILES",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME",
    "XDG_DATA_DIRS",
    "HOME",
    "USER",
    "AMD_VULKAN_ICD",
    "DISABLE_LAYER_AMD_SWITCHABLE_GRAPHICS_1",
    "ROCM_PATH",
    "HIP_PATH",
    "HSA_OVERRIDE_GFX_VERSION",
    "LD_LIBRARY_PATH",
    "PATH",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    // The active Python env (doctor reads the frameworks installed there).
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    // pyenv's own version selection, so shims resolve without running bash.
    "PYENV_VERSION",
    "PWD",
];

/// Largest file or command output kept; sysfs/proc files are tiny, a full
/// `vulkaninfo` is a few MB. Anything beyond is cut, never a memory blow-up.
pub const MAX_READ: usize = 16 << 20;

/// Default limit for a command: rocminfo hangs forever on some broken stacks.
pub const DEFAULT_CMD_TIMEOUT: Duration = Duration::from_secs(8);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Live,
    Sysroot,
}

/// Who is asking: what decides whether a device node opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub user: Option<String>,
    pub gid: u32,
    /// Supplementary groups of the process (what the kernel checks), with
    /// the primary gid included.
    pub groups: Vec<u32>,
}

impl Identity {
    /// Parses the output of `id`: `uid=1000(ann) gid=1000(ann) groups=1000(ann),44(video)`.
    pub fn parse_id(text: &str) -> Option<Identity> {
        fn num(s: &str) -> Option<(u32, Option<String>)> {
            let (n, rest) = match s.find('(') {
                Some(i) => (&s[..i], Some(&s[i + 1..])),
                None => (s, None),
            };
            let name = rest.and_then(|r| r.strip_suffix(')')).map(str::to_string);
            Some((n.trim().parse().ok()?, name))
        }
        let mut id = Identity::default();
        let mut have_uid = false;
        for word in text.split_whitespace() {
            if let Some(v) = word.strip_prefix("uid=") {
                let (uid, name) = num(v)?;
                id.uid = uid;
                id.user = name;
                have_uid = true;
            } else if let Some(v) = word.strip_prefix("gid=") {
                id.gid = num(v)?.0;
            } else if let Some(v) = word.strip_prefix("groups=") {
                for g in v.split(',') {
                    if let Some((n, _)) = num(g) {
                        id.groups.push(n);
                    }
                }
            }
        }
        if !id.groups.contains(&id.gid) {
            id.groups.push(id.gid);
        }
        have_uid.then_some(id)
    }

    /// The `id` line for this identity, using `group_name` for the names.
    pub fn to_id_line(&self, group_name: impl Fn(u32) -> Option<String>) -> String {
        let n = |g: u32| match group_name(g) {
            Some(name) => format!("{g}({name})"),
            None => g.to_string(),
        };
        let user = match &self.user {
            Some(u) => format!("{}({u})", self.uid),
            None => self.uid.to_string(),
        };
        let groups: Vec<String> = self.groups.iter().map(|&g| n(g)).collect();
        format!("uid={user} gid={} groups={}", n(self.gid), groups.join(","))
    }
}

/// How a command run (or its replay) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdStatus {
    Exited(i32),
    /// Killed after the time limit; the text holds what it printed until then.
    TimedOut,
    /// The program is not on PATH (live) or was not captured (sysroot).
    NotFound,
    /// Could not be started or read.
    Error(String),
}

impl CmdStatus {
    fn to_line(&self) -> String {
        match self {
            CmdStatus::Exited(c) => format!("exit {c}"),
            CmdStatus::TimedOut => "timeout".into(),
            CmdStatus::NotFound => "not-found".into(),
            CmdStatus::Error(e) => format!("error {}", e.replace('\n', " ")),
        }
    }
    fn from_line(line: &str) -> CmdStatus {
        let line = line.trim();
        if let Some(c) = line.strip_prefix("exit ") {
            return c
                .trim()
                .parse()
                .map(CmdStatus::Exited)
                .unwrap_or_else(|_| CmdStatus::Error(line.into()));
        }
        match line {
            "timeout" => CmdStatus::TimedOut,
            "not-found" => CmdStatus::NotFound,
            _ => CmdStatus::Error(line.strip_prefix("error ").unwrap_or(line).to_string()),
        }
    }
}

/// A command's combined output and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdOutput {
    /// Capture name, e.g. `rocminfo`, `hipconfig-version`.
    pub name: String,
    pub status: CmdStatus,
    pub text: String,
}

impl CmdOutput {
    /// Text when the command ran at all (even with a non-zero exit or a
    /// timeout: a failing rocminfo's message is the most useful evidence).
    pub fn text(&self) -> Option<&str> {
        match self.status {
            CmdStatus::NotFound => None,
            _ => Some(&self.text),
        }
    }
}

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
    fn to_line(&self) -> String {
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
    fn from_line(line: &str) -> Option<NodeMeta> {
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

/// Everything a live root was asked for; `capture` copies exactly this.
#[derive(Debug, Default, Clone)]
pub struct Record {
    /// Files read whole, with the text that was read.
    pub files: BTreeMap<String, String>,
    /// Files of which only a prefix was read (ELF headers), with the bytes.
    pub prefixes: BTreeMap<String, Vec<u8>>,
    /// Paths whose existence was asked.
    pub probed: BTreeSet<String>,
    /// Symlinks read.
    pub links: BTreeSet<String>,
    /// Directories listed.
    pub dirs: BTreeSet<String>,
    pub cmds: Vec<CmdOutput>,
    pub nodes: Vec<NodeMeta>,
}

/// `/etc/group` entries and, per gid, the indices of its entries.
type GroupTable = (Vec<GroupEntry>, BTreeMap<u32, Vec<usize>>);

/// A machine to look at: `/` or a captured tree.
pub struct Root {
    base: PathBuf,
    mode: Mode,
    env: BTreeMap<String, String>,
    identity: Option<Identity>,
    cmd_timeout: Duration,
    record: Option<Mutex<Record>>,
    /// Sysroot device-node table, loaded once, by path: lookups and
    /// listings stay logarithmic in a capture of any length (a linear
    /// search per node made 40,000 lines take 10 s).
    nodes: BTreeMap<String, NodeMeta>,
    /// `/etc/group`, parsed on first use (read once, not once per node),
    /// with the indices of each gid's entries.
    groups: std::sync::OnceLock<GroupTable>,
    /// Device-node paths whose `dev-nodes` line could not be parsed: their
    /// state is unknown (a parser that skipped the line made /dev/kfd look
    /// absent).
    nodes_unknown: BTreeMap<String, String>,
    /// Why the whole `dev-nodes` table is unknown (it exists but could not
    /// be read); every node is then unknown, never absent.
    nodes_unreadable: Option<String>,
    /// Capture files that exist but could not be used (issue 28: a FIFO at
    /// `.greta/dev-nodes` became "/dev/kfd does not exist"). Filled while
    /// the root is read (replays add theirs), reported as notes.
    unreadable: Mutex<Vec<Unreadable>>,
}

/// A capture file that exists but could not be used, and why: the facts it
/// holds are unknown, which is never the same as absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file, relative to the sysroot (`.greta/dev-nodes`).
    pub file: String,
    pub why: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.why)
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
    /// The running machine, as this process sees it.
    pub fn live() -> Root {
        let env = ENV_ALLOW
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect();
        Root {
            base: PathBuf::from("/"),
            mode: Mode::Live,
            env,
            identity: Some(live_identity()),
            cmd_timeout: DEFAULT_CMD_TIMEOUT,
            record: None,
            nodes: BTreeMap::new(),
            groups: Default::default(),
            nodes_unknown: BTreeMap::new(),
            nodes_unreadable: None,
            unreadable: Mutex::new(Vec::new()),
        }
    }

    /// A live root that remembers every read, for `capture`.
    pub fn live_recording() -> Root {
        let mut r = Root::live();
        r.record = Some(Mutex::new(Record::default()));
        r
    }

    /// A captured or synthetic tree. Errors only when `dir` is not a
    /// readable directory (doctor then exits 2).
    pub fn sysroot(dir: impl AsRef<Path>) -> std::io::Result<Root> {
        let base = dir.as_ref().to_path_buf();
        let md = std::fs::metadata(&base)?;
        if !md.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("sysroot {} is not a directory", base.display()),
            ));
        }
        std::fs::read_dir(&base)?;
        let greta = base.join(".greta");
        let mut unreadable = Vec::new();
        let env = capture_file(&greta, "env", &mut unreadable)
            .map(|t| parse_env(&t))
            .unwrap_or_default();
        let identity = capture_file(&greta, "id", &mut unreadable).and_then(|t| {
            let id = Identity::parse_id(&t);
            if id.is_none() {
                unreadable.push(Unreadable {
                    file: ".greta/id".into(),
                    why: "not the output of `id` (no uid=N): who runs doctor, and so which device nodes open, is unknown".into(),
                });
            }
            id
        });
        let mut nodes = BTreeMap::new();
        let mut nodes_unknown = BTreeMap::new();
        let nodes_unreadable = if greta.join("dev-nodes").symlink_metadata().is_ok() {
            match read_capped(&greta.join("dev-nodes")) {
                Ok(t) => {
                    for (i, line) in t.lines().enumerate() {
                        match NodeMeta::from_line(line) {
                            // The first line for a path wins, as a linear search did.
                            Some(m) => {
                                nodes.entry(m.path.clone()).or_insert(m);
                            }
                            None => {
                                let Some(path) = line.split_whitespace().next() else {
                                    continue;
                                };
                                let why = format!(
                                    "line {} is not `PATH TYPE MODE UID GID`: {}",
                                    i + 1,
                                    clip(line, 80)
                                );
                                if path.starts_with("/dev/") {
                                    nodes_unknown.entry(path.to_string()).or_insert(why.clone());
                                }
                                unreadable.push(Unreadable {
                                    file: ".greta/dev-nodes".into(),
                                    why,
                                });
                            }
                        }
                    }
                    None
                }
                Err(e) => {
                    let why = why_unreadable(&greta.join("dev-nodes"), e);
                    unreadable.push(Unreadable {
                        file: ".greta/dev-nodes".into(),
                        why: why.clone(),
                    });
                    Some(why)
                }
            }
        } else {
            None
        };
        // A parsed line for a path outranks a malformed one.
        nodes_unknown.retain(|p, _| !nodes.contains_key(p));
        Ok(Root {
            base,
            mode: Mode::Sysroot,
            env,
            identity,
            cmd_timeout: DEFAULT_CMD_TIMEOUT,
            record: None,
            nodes,
            groups: Default::default(),
            nodes_unknown,
            nodes_unreadable,
            unreadable: Mutex::new(unreadable),
        })
    }

    /// Capture files that exist but could not be used so far (a replay of
    /// an unreadable command output adds its own), in the order met.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        self.unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn add_unreadable(&self, u: Unreadable) {
        let mut v = self.unreadable.lock().unwrap_or_else(|e| e.into_inner());
        if !v.contains(&u) {
            v.push(u);
        }
    }

    /// Whether `.greta/id` exists but says nobody (so "can this user open
    /// it" is unknown, not "yes").
    pub fn identity_unknown(&self) -> Option<Unreadable> {
        self.unreadable()
            .into_iter()
            .find(|u| u.file == ".greta/id")
    }

    /// Same root with another limit for commands.
    pub fn with_cmd_timeout(mut self, t: Duration) -> Root {
        self.cmd_timeout = t;
        self
    }

    /// Replaces the environment (tests, and callers that sanitise it).
    pub fn with_env(mut self, env: BTreeMap<String, String>) -> Root {
        self.env = env
            .into_iter()
            .filter(|(k, _)| ENV_ALLOW.contains(&k.as_str()))
            .collect();
        self
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn is_live(&self) -> bool {
        self.mode == Mode::Live
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// "live" or "sysroot:DIR", for `Facts::sources`.
    pub fn source_label(&self) -> String {
        match self.mode {
            Mode::Live => "live".into(),
            Mode::Sysroot => format!("sysroot:{}", self.base.display()),
        }
    }

    pub fn env(&self, key: &str) -> Option<&str> {
        self.env.get(key).map(String::as_str)
    }

    /// An env var that is set and non-empty.
    pub fn env_nonempty(&self, key: &str) -> Option<&str> {
        self.env(key).filter(|v| !v.is_empty())
    }

    pub fn env_all(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The user's credentials; None when a sysroot has no `.greta/id`.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// What was recorded so far (live_recording only).
    pub fn take_record(&self) -> Option<Record> {
        self.record
            .as_ref()
            .map(|m| std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner())))
    }

    /// Records a result that did not come from a command line (live
    /// enumerations, dlopen results) so a capture can replay it.
    pub(crate) fn note_cmd(&self, out: CmdOutput) {
        self.note(|rec| rec.cmds.push(out));
    }

    /// The machine path after resolving every symlink (inside the tree for a
    /// sysroot); the input unchanged when it cannot be resolved.
    pub fn canonical(&self, abs: &str) -> String {
        self.note_path(abs);
        match self.mode {
            Mode::Live => std::fs::canonicalize(abs)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| abs.to_string()),
            Mode::Sysroot => {
                let host = resolve_in(&self.base, abs, true);
                match host.strip_prefix(&self.base) {
                    Ok(rel) => format!("/{}", rel.to_string_lossy()),
                    Err(_) => abs.to_string(),
                }
            }
        }
    }

    fn note(&self, f: impl FnOnce(&mut Record)) {
        if let Some(m) = &self.record {
            f(&mut m.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Host path of `abs` (an absolute path on the machine). In a sysroot
    /// every symlink is resolved inside the tree, so an absolute link such
    /// as `/opt/rocm -> /opt/rocm-6.2.0` never escapes to the host.
    pub fn host_path(&self, abs: &str) -> PathBuf {
        match self.mode {
            Mode::Live => PathBuf::from(abs),
            Mode::Sysroot => resolve_in(&self.base, abs, true),
        }
    }

    /// Like `host_path` but leaves a final symlink unresolved (for lstat/readlink).
    fn host_path_nofollow(&self, abs: &str) -> PathBuf {
        match self.mode {
            Mode::Live => PathBuf::from(abs),
            Mode::Sysroot => resolve_in(&self.base, abs, false),
        }
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

    /// Device nodes directly under `dir` whose names start with `prefix`.
    pub fn list_nodes(&self, dir: &str, prefix: &str) -> Vec<String> {
        match self.mode {
            Mode::Live => {
                let Ok(rd) = std::fs::read_dir(dir) else {
                    return Vec::new();
                };
                let mut v: Vec<String> = rd
                    .filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.starts_with(prefix))
                    .map(|n| format!("{}/{n}", dir.trim_end_matches('/')))
                    .collect();
                v.sort();
                v
            }
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

    /// Runs `program args` (live, with the time limit; `program` may be a
    /// bare name looked up on PATH or an absolute path) or replays
    /// `.greta/cmd/<name>.txt` (sysroot). Never hangs, never panics.
    pub fn run(&self, name: &str, program: &str, args: &[&str]) -> CmdOutput {
        let out = match self.mode {
            Mode::Sysroot => self.replay(name),
            Mode::Live => {
                let exe = if program.starts_with('/') {
                    Some(program.to_string()).filter(|p| is_executable(Path::new(p)))
                } else {
                    self.which(program)
                };
                match exe {
                    None => CmdOutput {
                        name: name.into(),
                        status: CmdStatus::NotFound,
                        text: String::new(),
                    },
                    Some(exe) => run_with_timeout(name, &exe, args, self.cmd_timeout),
                }
            }
        };
        self.note(|rec| rec.cmds.push(out.clone()));
        out
    }

    fn replay(&self, name: &str) -> CmdOutput {
        let dir = self.base.join(".greta/cmd");
        let txt = dir.join(format!("{name}.txt"));
        match read_capped(&txt) {
            // Captured but unreadable: the command's answer is unknown,
            // which is not "the command is not installed".
            Err(e) if txt.symlink_metadata().is_ok() => {
                let why = why_unreadable(&txt, e);
                self.add_unreadable(Unreadable {
                    file: format!(".greta/cmd/{name}.txt"),
                    why: why.clone(),
                });
                CmdOutput {
                    name: name.into(),
                    status: CmdStatus::Error(format!("captured output unreadable: {why}")),
                    text: String::new(),
                }
            }
            Err(_) => CmdOutput {
                name: name.into(),
                status: CmdStatus::NotFound,
                text: String::new(),
            },
            Ok(text) => {
                let status = read_capped(&dir.join(format!("{name}.status")))
                    .map(|s| CmdStatus::from_line(&s))
                    .unwrap_or(CmdStatus::Exited(0));
                CmdOutput {
                    name: name.into(),
                    status,
                    text,
                }
            }
        }
    }

    /// Name of a group id from the root's `/etc/group`.
    pub fn group_name(&self, gid: u32) -> Option<String> {
        self.groups_of(gid).next().map(|g| g.name.clone())
    }

    /// Entries of the root's `/etc/group`.
    pub fn groups(&self) -> &[GroupEntry] {
        &self.group_table().0
    }

    /// The `/etc/group` entries of `gid` (usually one; the first names it).
    pub fn groups_of(&self, gid: u32) -> impl Iterator<Item = &GroupEntry> {
        let (all, by_gid) = self.group_table();
        by_gid.get(&gid).into_iter().flatten().map(|&i| &all[i])
    }

    fn group_table(&self) -> &GroupTable {
        self.groups.get_or_init(|| {
            let all: Vec<GroupEntry> = self
                .read("/etc/group")
                .map(|t| t.lines().filter_map(GroupEntry::parse).collect())
                .unwrap_or_default();
            let mut by_gid: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for (i, g) in all.iter().enumerate() {
                by_gid.entry(g.gid).or_default().push(i);
            }
            (all, by_gid)
        })
    }
}

/// One line of `/etc/group`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEntry {
    pub name: String,
    pub gid: u32,
    pub members: Vec<String>,
}

impl GroupEntry {
    pub fn parse(line: &str) -> Option<GroupEntry> {
        let mut f = line.split(':');
        let name = f.next()?.trim().to_string();
        let _pw = f.next()?;
        let gid = f.next()?.trim().parse().ok()?;
        let members = f
            .next()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect();
        (!name.is_empty() && !name.starts_with('#')).then_some(GroupEntry { name, gid, members })
    }
}

/// Writes the record's metadata files (`dev-nodes`, `status`) formats; used by capture.
pub(crate) fn node_line(n: &NodeMeta) -> String {
    n.to_line()
}

pub(crate) fn status_line(s: &CmdStatus) -> String {
    s.to_line()
}

/// Components of a path without the root and `.`.
fn logical_components(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

fn parse_env(text: &str) -> BTreeMap<String, String> {
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
fn read_capped(p: &Path) -> std::io::Result<String> {
    let f = greta_fsread::open_regular(p).map_err(|e| e.into_io())?;
    let mut buf = Vec::new();
    f.take(MAX_READ as u64).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A capture metadata file (`.greta/NAME`): its text, or None when it is
/// absent; when it exists but cannot be read, None and a line in
/// `unreadable` saying why.
fn capture_file(greta: &Path, name: &str, unreadable: &mut Vec<Unreadable>) -> Option<String> {
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
fn why_unreadable(p: &Path, e: std::io::Error) -> String {
    let msg = e.to_string();
    let host = format!("{}: ", p.display());
    let msg = msg.strip_prefix(&host).unwrap_or(&msg).to_string();
    match e.kind() {
        std::io::ErrorKind::NotFound => "a link to nothing".into(),
        _ => msg,
    }
}

/// At most `n` characters of `s`, for quoting a bad line.
fn clip(s: &str, n: usize) -> String {
    let t: String = s.chars().take(n).collect();
    if t.len() < s.len() {
        format!("{t}...")
    } else {
        t
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn live_identity() -> Identity {
    // SAFETY: getuid/getgid take no arguments and never fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: getgroups(0, NULL) only returns the count; the second call gets
    // a buffer of exactly that many gid_t, and the count it returns (never
    // more than the size given) bounds what is kept.
    let mut groups = unsafe {
        let n = libc::getgroups(0, std::ptr::null_mut());
        let mut v: Vec<libc::gid_t> = vec![0; n.max(0) as usize];
        let got = libc::getgroups(n, v.as_mut_ptr());
        v.truncate(got.max(0) as usize);
        v
    };
    if !groups.contains(&gid) {
        groups.push(gid);
    }
    groups.sort_unstable();
    groups.dedup();
    let user = read_capped(Path::new("/etc/passwd")).ok().and_then(|t| {
        t.lines().find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let uid_f = f.nth(1)?;
            (uid_f.parse::<u32>().ok()? == uid).then(|| name.to_string())
        })
    });
    Identity {
        uid,
        user,
        gid,
        groups,
    }
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

/// Runs a program, reading its combined output in a thread; on time-out the
/// process is killed and the partial output kept. A grandchild still holding
/// the pipe cannot block us: the reader thread is simply left behind.
fn run_with_timeout(name: &str, exe: &str, args: &[&str], timeout: Duration) -> CmdOutput {
    let expr = duct::cmd(exe, args)
        .stdin_null()
        .stderr_to_stdout()
        .unchecked()
        .env("LC_ALL", "C");
    let handle = match expr.reader() {
        Ok(h) => Arc::new(h),
        Err(e) => {
            let status = if e.kind() == std::io::ErrorKind::NotFound {
                CmdStatus::NotFound
            } else {
                CmdStatus::Error(e.to_string())
            };
            return CmdOutput {
                name: name.into(),
                status,
                text: String::new(),
            };
        }
    };
    let buf = Arc::new(Mutex::new(Vec::<u8>::new()));
    let (tx, rx) = mpsc::channel();
    {
        let handle = Arc::clone(&handle);
        let buf = Arc::clone(&buf);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 16384];
            let mut r = &*handle;
            loop {
                match r.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut b = buf.lock().unwrap_or_else(|e| e.into_inner());
                        if b.len() < MAX_READ {
                            b.extend_from_slice(&chunk[..n]);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            let code = match handle.try_wait() {
                Ok(Some(o)) => o.status.code().unwrap_or(-1),
                _ => -1,
            };
            let _ = tx.send(code);
        });
    }
    let status = match rx.recv_timeout(timeout) {
        Ok(code) => CmdStatus::Exited(code),
        Err(_) => {
            let _ = handle.kill();
            CmdStatus::TimedOut
        }
    };
    let text = String::from_utf8_lossy(&buf.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    CmdOutput {
        name: name.into(),
        status,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_id_output() {
        let id =
            Identity::parse_id("uid=1000(ann) gid=1001(ann) groups=1001(ann),44(video),27(sudo)")
                .unwrap();
        assert_eq!(id.uid, 1000);
        assert_eq!(id.user.as_deref(), Some("ann"));
        assert_eq!(id.gid, 1001);
        assert_eq!(id.groups, vec![1001, 44, 27]);
        let line = id.to_id_line(|g| (g == 44).then(|| "video".to_string()));
        assert_eq!(line, "uid=1000(ann) gid=1001 groups=1001,44(video),27");
        assert_eq!(Identity::parse_id("garbage"), None);
        assert_eq!(Identity::parse_id("uid=x(y)"), None);
    }

    #[test]
    fn node_and_status_lines_round_trip() {
        let n = NodeMeta {
            path: "/dev/kfd".into(),
            kind: 'c',
            mode: 0o660,
            uid: 0,
            gid: 109,
            open: Some(Err("EACCES".into())),
        };
        assert_eq!(n.to_line(), "/dev/kfd c 0660 0 109 open=EACCES");
        assert_eq!(NodeMeta::from_line(&n.to_line()), Some(n));
        for s in [
            CmdStatus::Exited(3),
            CmdStatus::TimedOut,
            CmdStatus::NotFound,
            CmdStatus::Error("spawn failed".into()),
        ] {
            assert_eq!(CmdStatus::from_line(&s.to_line()), s);
        }
    }

    #[test]
    fn env_file_keeps_only_allow_listed_keys() {
        let env = parse_env(
            "PATH=/usr/bin\nAWS_SECRET_ACCESS_KEY=x\nexport ROCM_PATH=\"/opt/rocm-6.2.0\"\n=bad\n",
        );
        assert_eq!(env.get("PATH").map(String::as_str), Some("/usr/bin"));
        assert_eq!(
            env.get("ROCM_PATH").map(String::as_str),
            Some("/opt/rocm-6.2.0")
        );
        assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
    }

    #[test]
    fn sysroot_symlinks_stay_inside_the_tree() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("opt/rocm-9.9.9/.info")).unwrap();
        std::fs::write(d.path().join("opt/rocm-9.9.9/.info/version"), "9.9.9-1\n").unwrap();
        std::os::unix::fs::symlink("/opt/rocm-9.9.9", d.path().join("opt/rocm")).unwrap();
        // A link that tries to climb out of the tree stays at its top.
        std::os::unix::fs::symlink("../../../../../../etc", d.path().join("opt/escape")).unwrap();
        // A self-loop with an absolute target must not read the host's file.
        std::fs::create_dir_all(d.path().join("proc/sys/kernel")).unwrap();
        std::os::unix::fs::symlink(
            "/proc/sys/kernel/osrelease",
            d.path().join("proc/sys/kernel/osrelease"),
        )
        .unwrap();
        let r = Root::sysroot(d.path()).unwrap();
        assert_eq!(
            r.read_trim("/opt/rocm/.info/version").as_deref(),
            Some("9.9.9-1")
        );
        assert_eq!(
            r.read_link("/opt/rocm"),
            Some(PathBuf::from("/opt/rocm-9.9.9"))
        );
        assert!(r.host_path("/opt/escape/passwd").starts_with(d.path()));
        assert!(r.read("/opt/escape/passwd").is_err());
        assert!(r.read("/proc/sys/kernel/osrelease").is_err());
    }

    #[test]
    fn command_time_out_is_reported_not_waited() {
        let r = Root::live().with_cmd_timeout(Duration::from_millis(300));
        let t0 = std::time::Instant::now();
        let out = r.run("sleep", "/bin/sh", &["-c", "echo started; exec sleep 30"]);
        assert_eq!(out.status, CmdStatus::TimedOut);
        assert!(
            out.text.contains("started"),
            "partial output kept: {:?}",
            out.text
        );
        // Generous bound: the point is "not 30 s", not a timing measurement.
        assert!(t0.elapsed() < Duration::from_secs(20));
        let ok = r.run("echo", "/bin/sh", &["-c", "echo hi; echo err >&2; exit 3"]);
        assert_eq!(ok.status, CmdStatus::Exited(3));
        assert!(ok.text.contains("hi") && ok.text.contains("err"));
        let missing = r.run("nope", "definitely-not-a-program-greta", &[]);
        assert_eq!(missing.status, CmdStatus::NotFound);
    }
}
