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

mod cmd;
mod identity;
mod nodes;
mod reads;

pub(crate) use cmd::status_line;
pub use cmd::{CmdOutput, CmdStatus};
use identity::live_identity;
pub use identity::{GroupEntry, Identity};
pub(crate) use nodes::node_line;
pub use nodes::{NodeMeta, NodeState};
use reads::{
    blocked_on_way, capture_file, clip, is_executable, loop_at, parse_env, read_capped, relative,
    try_resolve_in, unknown_why, Target,
};
pub(crate) use reads::{resolve_in, Listing};

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
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
    /// `.greta/env` exists but could not be read: the variables that say
    /// where Vulkan, ROCm and Python are looked for are unknown.
    env_unknown: bool,
    /// Capture files that exist but could not be used (a FIFO at
    /// `.greta/dev-nodes` became "/dev/kfd does not exist"). Filled while
    /// the root is read (replays add theirs), reported as notes.
    unreadable: Mutex<Met>,
}

/// Unreadable paths in the order met, each once (a set beside the list:
/// a tree of 100,000 spoiled directories stays linear).
#[derive(Default)]
struct Met {
    list: Vec<Unreadable>,
    seen: std::collections::HashSet<Unreadable>,
}

impl Met {
    fn add(&mut self, u: Unreadable) {
        if self.seen.insert(u.clone()) {
            self.list.push(u);
        }
    }
}

/// A file or directory of a sysroot that is there but could not be used,
/// or a directory of a live machine that cannot be listed or stops a read
/// (one this user may not list, a FIFO or a file in its place, a loop of
/// links), and why:
/// the facts it holds are unknown, which is never the same as absent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unreadable {
    /// The path, relative to the sysroot (`.greta/dev-nodes`, `etc`,
    /// `sys/bus/pci/devices/0000:c5:00.0`); on a live machine, absolute
    /// (`/etc/vulkan/icd.d`).
    pub file: String,
    pub why: String,
    /// The check that needed it (the one reading the root when it was
    /// met), when known: that check cannot pass.
    pub check: Option<&'static str>,
}

thread_local! {
    /// The check reading the root on this thread ([`reading_for`]).
    static READING_FOR: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Runs `f` as check `check`: what it finds unreadable is charged to that
/// check (the collectors run on several threads, so the check is per
/// thread: a collector that starts threads of its own passes
/// [`current_check`] on to them).
pub(crate) fn reading_for<T>(check: Option<&'static str>, f: impl FnOnce() -> T) -> T {
    let before = READING_FOR.with(|c| c.replace(check));
    let out = f();
    READING_FOR.with(|c| c.set(before));
    out
}

/// The check reading the root on this thread.
pub(crate) fn current_check() -> Option<&'static str> {
    READING_FOR.with(Cell::get)
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.why)
    }
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
            env_unknown: false,
            unreadable: Mutex::default(),
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
        let mut unreadable = Vec::new();
        // The environment decides where the Vulkan, ROCm and Python checks
        // look: each of them is charged with an unknown one.
        let env_read = capture_file(&base, ".greta/env", None);
        let env_unknown = env_read.is_err();
        let env = match env_read {
            Ok(t) => t.map(|t| parse_env(&t)).unwrap_or_default(),
            Err(u) => {
                for check in ["vulkan-icds", "rocm", "python"] {
                    unreadable.push(Unreadable {
                        check: Some(check),
                        ..u.clone()
                    });
                }
                BTreeMap::new()
            }
        };
        let id_text = capture_file(&base, ".greta/id", Some("device-nodes")).unwrap_or_else(|u| {
            unreadable.push(u);
            None
        });
        let dev_nodes = capture_file(&base, ".greta/dev-nodes", Some("device-nodes"));
        let identity = id_text.and_then(|t| {
            let id = Identity::parse_id(&t);
            if id.is_none() {
                unreadable.push(Unreadable {
                    file: ".greta/id".into(),
                    why: "not the output of `id` (no uid=N): who runs doctor, and so which device nodes open, is unknown".into(),
                    check: Some("device-nodes"),
                });
            }
            id
        });
        let mut nodes = BTreeMap::new();
        let mut nodes_unknown = BTreeMap::new();
        let nodes_unreadable = {
            match dev_nodes {
                Ok(None) => None,
                Ok(Some(t)) => {
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
                                    check: Some("device-nodes"),
                                });
                            }
                        }
                    }
                    None
                }
                Err(u) => {
                    let why = u.to_string();
                    unreadable.push(u);
                    Some(why)
                }
            }
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
            env_unknown,
            unreadable: Mutex::new({
                let mut met = Met::default();
                unreadable.into_iter().for_each(|u| met.add(u));
                met
            }),
        })
    }

    /// Capture files that exist but could not be used so far (a replay of
    /// an unreadable command output adds its own), in the order met.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        self.unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .list
            .clone()
    }

    fn add_unreadable(&self, u: Unreadable) {
        self.unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(u);
    }

    /// Records that a directory is there but could not be read (`e`,
    /// reading `host` as `target`), charged to the check reading the root;
    /// nothing when it is simply absent. A directory to list that cannot
    /// be, or one on the way to a file that stops the read (a FIFO or a
    /// file where it should be, a loop of links, one this user may not
    /// search: a hardened `/sys`, `/dev/dri` or `/etc/vulkan`): what it
    /// holds is unknown to doctor. One rule for live machines and
    /// sysroots; a live note names the absolute path and who could not
    /// list it.
    fn unknown_on(&self, host: &Path, e: &std::io::Error, target: Target) {
        let found = match target {
            Target::Dir => unknown_why(&self.base, host, e, target),
            Target::File if e.kind() == std::io::ErrorKind::NotFound => None,
            Target::File => blocked_on_way(&self.base, host, target),
        };
        let Some((path, why)) = found else {
            return;
        };
        let (file, why) = match self.mode {
            Mode::Live => {
                let who = match &self.identity {
                    Some(Identity { user: Some(u), .. }) => format!(" by {u}"),
                    Some(i) => format!(" by uid {}", i.uid),
                    None => String::new(),
                };
                (
                    path.display().to_string(),
                    format!("cannot be listed{who}: {why}"),
                )
            }
            Mode::Sysroot => (relative(&self.base, &path), why),
        };
        self.add_unreadable(Unreadable {
            file,
            why,
            check: READING_FOR.with(Cell::get),
        });
    }

    /// The host path of `abs` for a read; in a sysroot, a link that loops
    /// fails the read (`ELOOP`) and, when it stands for a directory (one
    /// on the way, or the one to list), is recorded as unknown.
    fn host_path_known(&self, abs: &str, target: Target) -> std::io::Result<PathBuf> {
        match self.mode {
            Mode::Live => Ok(PathBuf::from(abs)),
            Mode::Sysroot => try_resolve_in(&self.base, abs, true).map_err(|link| {
                let last = try_resolve_in(&self.base, abs, false).is_ok_and(|p| p == link);
                if target == Target::Dir || !last {
                    self.add_unreadable(loop_at(&self.base, &link, READING_FOR.with(Cell::get)));
                }
                std::io::Error::from_raw_os_error(libc::ELOOP)
            }),
        }
    }

    /// Whether `.greta/env` exists but could not be read.
    pub fn env_unknown(&self) -> bool {
        self.env_unknown
    }

    /// Whether `.greta/id` exists but says nobody, or `.greta` itself
    /// cannot be read (so "can this user open it" is unknown, not "yes").
    pub fn identity_unknown(&self) -> Option<Unreadable> {
        self.unreadable()
            .into_iter()
            .find(|u| u.file == ".greta/id" || u.file == ".greta")
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

#[cfg(test)]
mod tests;
