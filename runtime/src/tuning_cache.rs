//! The tuning cache: per device, the fastest *correct* [`Tuning`] found for
//! each (kernel, shape class), so later runs start from it.
//!
//! File: `$XDG_CACHE_HOME/greta/tuning/<backend>-<uuid>-<driver_version>.json`
//! (else `~/.cache/...`), JSON with `schema: "greta.tuning/v1"`, the device
//! identity and an `entries` map from [`shape_class`] to [`TunedEntry`]. The
//! driver version is part of the name, so a driver update starts a new,
//! empty cache. A file that does not parse or names another device is
//! ignored (and replaced on the next save); writes are atomic (temporary
//! file + rename).

use crate::info::DeviceInfo;
use crate::tuning::Tuning;
use greta_kernels::Op;
use greta_vocab::EnvVars;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const SCHEMA: &str = "greta.tuning/v1";

/// Largest tuning file read: a full sweep of every gate is a few KiB.
pub const MAX_FILE: u64 = 4 << 20;

/// What was measured for one shape class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunedEntry {
    pub tuning: Tuning,
    /// Kernel variant that ran (e.g. `gemm_f16_coopmat`).
    pub kernel: String,
    /// Median device time per dispatch at the measured shape.
    pub median_ns: u64,
    /// The exact op measured (the class covers neighbouring shapes).
    pub measured_op: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct TuningFile {
    schema: String,
    device: String,
    uuid: String,
    driver_id: String,
    driver_version: u32,
    entries: BTreeMap<String, TunedEntry>,
}

/// Loaded (or fresh) tuning cache of one device.
pub struct TuningCache {
    path: Option<PathBuf>,
    file: TuningFile,
    /// Why an existing file was not used, if it was not.
    pub ignored: Option<String>,
    /// Entries checked against the tuner's candidates ([`Self::get_vetted`]),
    /// by key, with the warning said about each (`None`: a candidate).
    vetted: Mutex<BTreeMap<String, Option<String>>>,
}

/// The class an op's tuning is shared across, the key of its entry: the
/// op's own `shape_class` fact (kernel name plus each size rounded up to a
/// power of two, and whether rows are 16-byte aligned, which selects vec4
/// variants; `kernels/src/ops/NAME.rs`).
pub fn shape_class(op: &Op) -> String {
    op.shape_class()
}

/// Which kernels an entry tunes. Vulkan's entries are keyed by the shape
/// class itself (the keys pinned in the tests: files on users' machines
/// hold them); the HIP/CUDA kernels' by [`GPU_PREFIX`] and the class. No
/// op name contains a `/`, so neither family can ever read the other's
/// entry, even from a file copied between backends of one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySpace {
    Vulkan,
    /// The HIP kernels and their CUDA twin (`kernels/hip`).
    Gpu,
}

/// Prefix of the HIP/CUDA kernels' keys.
pub const GPU_PREFIX: &str = "gpu/";

impl KeySpace {
    /// The key of `op`'s entry in this space.
    pub fn key(self, op: &Op) -> String {
        match self {
            KeySpace::Vulkan => shape_class(op),
            KeySpace::Gpu => format!("{GPU_PREFIX}{}", shape_class(op)),
        }
    }
}

/// `$GRETA_TUNING_CACHE` when set to a directory (`off` disables the
/// cache: `None`), else `$XDG_CACHE_HOME/greta/tuning`, else
/// `$HOME/.cache/greta/tuning`. Err: the variable is not UTF-8 or holds
/// a control character (the path is named in results and messages).
pub fn default_dir() -> Result<Option<PathBuf>, String> {
    match greta_vocab::Setting::text_path(EnvVars::GRETA_TUNING_CACHE)? {
        Some(s) if s.value == Path::new("off") => Ok(None),
        Some(s) => Ok(Some(s.value)),
        None => {
            use greta_vocab::dirs;
            Ok(dirs::greta_dir(
                dirs::Base::Cache,
                "tuning",
                &dirs::process_env,
            ))
        }
    }
}

/// Whether `GRETA_TUNING_CACHE=off` turned the cache off.
pub fn disabled_by_env() -> bool {
    std::env::var_os(EnvVars::GRETA_TUNING_CACHE).is_some_and(|v| v == "off")
}

impl TuningCache {
    /// The cache of `info` in `dir` (`None`: [`default_dir`]; no directory
    /// at all: an in-memory cache that is never saved).
    pub fn open(info: &DeviceInfo, dir: Option<&Path>) -> Self {
        let (dir, refused) = match dir {
            Some(d) => (Some(d.to_path_buf()), None),
            None => match default_dir() {
                Ok(d) => (d, None),
                Err(e) => (None, Some(e)),
            },
        };
        let backend = info.backend.as_str();
        let path = dir.map(|d| {
            d.join(format!(
                "{backend}-{}-{:08x}.json",
                info.uuid.map(|u| u.hex()).unwrap_or_default(),
                info.driver_version
            ))
        });
        let fresh = TuningFile {
            schema: SCHEMA.into(),
            device: info.name.clone(),
            uuid: info.uuid.map(|u| u.hex()).unwrap_or_default(),
            driver_id: info.driver_id.to_string(),
            driver_version: info.driver_version,
            entries: BTreeMap::new(),
        };
        // A refused variable: kept in memory, never saved, and said.
        let mut ignored = refused.map(|e| format!("{e}: tuning is kept in memory, not saved"));
        if let Some(why) = &ignored {
            tracing::warn!("tuning cache: {why}");
        }
        // Non-blocking and capped: a FIFO or /dev/zero put where the cache
        // lives is ignored with a warning, never waited on or read for ever.
        let read = path
            .as_deref()
            .map(|p| greta_fsread::text_if_exists(p, MAX_FILE));
        let file = match read {
            Some(Ok(Some(text))) => match serde_json::from_str::<TuningFile>(&text) {
                Ok(mut f)
                    if f.schema == SCHEMA
                        && f.uuid.parse::<greta_vocab::DeviceUuid>().ok() == info.uuid
                        && f.driver_version == info.driver_version =>
                {
                    let before = f.entries.len();
                    f.entries.retain(|class, e| {
                        let keep = !e.tuning.is_diagnostic();
                        if !keep {
                            tracing::warn!(
                                "tuning cache entry {class} ({}) asks for a diagnostic variant: ignored",
                                e.tuning
                            );
                        }
                        keep
                    });
                    if f.entries.len() < before {
                        ignored = Some(format!(
                            "{} entr(y/ies) asking for a diagnostic variant dropped",
                            before - f.entries.len()
                        ));
                    }
                    f
                }
                Ok(f) => {
                    ignored = Some(format!(
                        "written for another device/driver/schema ({} {} {})",
                        f.schema, f.uuid, f.driver_version
                    ));
                    fresh
                }
                Err(e) => {
                    ignored = Some(format!("unreadable: {e}"));
                    fresh
                }
            },
            Some(Err(e)) => {
                ignored = Some(format!("cannot read: {e}"));
                fresh
            }
            Some(Ok(None)) | None => fresh,
        };
        if let (Some(why), Some(p)) = (&ignored, &path) {
            tracing::warn!("ignoring tuning cache {}: {why}", p.display());
        }
        TuningCache {
            path,
            file,
            ignored,
            vetted: Mutex::default(),
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The stored tuning of the Vulkan kernels for `op`'s shape class.
    pub fn get(&self, op: &Op) -> Option<&TunedEntry> {
        self.get_in(KeySpace::Vulkan, op)
    }

    /// The stored tuning of `space`'s kernels for `op`'s shape class.
    pub fn get_in(&self, space: KeySpace, op: &Op) -> Option<&TunedEntry> {
        self.file.entries.get(&space.key(op))
    }

    /// The stored tuning of `space`'s kernels for `op`'s class, checked
    /// once per entry against what `--tune` would time for `op` on this
    /// device: `candidates` are those tunings, `resolve` the tuning a plan
    /// runs for a tuning (its defaults filled in, as the tuner stores it;
    /// `None` when it does not plan, which the caller handles). An entry
    /// that plans but is none of the candidates was not written by this
    /// greta's tuner on this device (edited by hand, another version's
    /// sweep, a limit that changed): it is used all the same (it plans
    /// within the device's limits, and pinning a tuning by hand is
    /// legitimate), with a warning that names it, once.
    pub fn get_vetted(
        &self,
        space: KeySpace,
        op: &Op,
        resolve: &dyn Fn(&Tuning) -> Option<Tuning>,
        candidates: &dyn Fn() -> Vec<Tuning>,
    ) -> Option<&TunedEntry> {
        let key = space.key(op);
        let e = self.file.entries.get(&key)?;
        let mut vetted = self.vetted.lock().unwrap_or_else(|p| p.into_inner());
        if let std::collections::btree_map::Entry::Vacant(slot) = vetted.entry(key) {
            let Some(runs) = resolve(&e.tuning) else {
                return Some(e);
            };
            let known = candidates()
                .iter()
                .any(|c| resolve(c).as_ref() == Some(&runs));
            let said = (!known).then(|| {
                format!(
                    "tuning cache entry {} ({}) is not one greta smoke --tune tries for {op} on this \
                     device (edited by hand, or written by another greta): used as written{}",
                    slot.key(),
                    e.tuning,
                    self.path
                        .as_ref()
                        .map(|p| format!("; {}", p.display()))
                        .unwrap_or_default()
                )
            });
            if let Some(w) = &said {
                tracing::warn!("{w}");
            }
            slot.insert(said);
        }
        Some(e)
    }

    /// What [`Self::get_vetted`] warned of so far, one line per entry.
    pub fn warnings(&self) -> Vec<String> {
        let vetted = self.vetted.lock().unwrap_or_else(|p| p.into_inner());
        vetted.values().flatten().cloned().collect()
    }

    /// Stores `entry` for `op`'s class (Vulkan kernels); a diagnostic
    /// tuning is never stored.
    pub fn put(&mut self, op: &Op, entry: TunedEntry) {
        self.put_in(KeySpace::Vulkan, op, entry)
    }

    /// Stores `entry` for `op`'s class in `space`; a diagnostic tuning is
    /// never stored.
    pub fn put_in(&mut self, space: KeySpace, op: &Op, entry: TunedEntry) {
        if entry.tuning.is_diagnostic() {
            tracing::warn!(
                "not caching {} for {op}: a diagnostic variant",
                entry.tuning
            );
            return;
        }
        self.file.entries.insert(space.key(op), entry);
    }

    pub fn len(&self) -> usize {
        self.file.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.file.entries.is_empty()
    }

    /// Makes sure the cache's directory exists (created when missing):
    /// `--tune` checks it before it times anything. Errors name the path.
    pub fn ensure_dir(&self) -> std::io::Result<()> {
        match self.path.as_deref().and_then(Path::parent) {
            Some(dir) => make_dir(dir),
            None => Ok(()),
        }
    }

    /// Writes the file atomically (a temporary file in the directory,
    /// renamed over the cache's name); `Ok(None)` for an in-memory cache.
    /// The rename would replace whatever sits at the name: a FIFO, a
    /// device node, a symlink or a directory there is moved aside to
    /// `NAME.aside-PID-N` with a warning, never followed or deleted (the
    /// wheel cache's rule: this is greta's own cache, so the next save
    /// must succeed, and what was there stays for its owner). Errors name
    /// the path.
    pub fn save(&self) -> std::io::Result<Option<PathBuf>> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        make_dir(dir)?;
        let named = |p: &Path, e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
        };
        if let Ok(m) = std::fs::symlink_metadata(path) {
            if !m.is_file() {
                let what = greta_fsread::kind_of(m.file_type());
                let to = greta_fsread::set_aside(path).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!(
                            "{} is a {what}, not a regular file, and cannot be moved aside: {e}",
                            path.display()
                        ),
                    )
                })?;
                tracing::warn!(
                    "the tuning cache {} was a {what}, not a regular file: moved it aside to {} \
                     (greta never writes through one)",
                    path.display(),
                    to.display()
                );
            }
        }
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| named(dir, e))?;
        let text = serde_json::to_string_pretty(&self.file).map_err(std::io::Error::other)?;
        tmp.write_all(text.as_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| named(tmp.path(), e))?;
        tmp.persist(path).map_err(|e| named(path, e.error))?;
        Ok(Some(path.clone()))
    }
}

/// `dir` as a directory, created with its parents when missing; a file
/// where it (or a parent) should be is an error naming that path. A
/// symlink to a directory is followed: a linked cache directory is
/// legitimate.
fn make_dir(dir: &Path) -> std::io::Result<()> {
    if std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    // The nearest existing path decides: the directory itself or the
    // first parent that exists.
    if let Some((at, m)) = dir
        .ancestors()
        .find_map(|a| std::fs::metadata(a).ok().map(|m| (a, m)))
    {
        if !m.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!(
                    "the tuning cache directory {}: {} is a {}, not a directory",
                    dir.display(),
                    at.display(),
                    greta_fsread::kind_of(m.file_type())
                ),
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot create the tuning cache directory {}: {e}",
                dir.display()
            ),
        )
    })
}

#[cfg(test)]
mod tests;
