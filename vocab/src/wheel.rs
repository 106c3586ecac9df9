//! One pinned wheel: the unit the lock files, the fetcher, the cache, the
//! bundle manifest and the env receipt all speak of.
use crate::Sha256;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A wheel as a lock file pins it. `at` says where (`pylock.cpu.toml`,
/// the line of its hash), so a changed hash is traced to the line to fix;
/// it is not part of any file greta writes (a bundle's lockfile is checked
/// by its own hash instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedWheel {
    /// Normalised (PEP 503) project name.
    pub name: String,
    pub version: String,
    /// The wheel's file name (`torch-2.9.1+cpu-cp312-...whl`).
    pub filename: String,
    /// Serialised with its credentials hidden (`lock show --json`, the
    /// install plan, a bundle's manifest): nothing reads it back to fetch.
    #[serde(serialize_with = "crate::url_secrets::serialize_redacted")]
    pub url: String,
    /// The cache key and the only proof that counts.
    pub sha256: Sha256,
    pub size: Option<u64>,
    #[serde(skip)]
    pub at: Option<LockLine>,
}

impl PinnedWheel {
    /// Refuses what greta never installs (an sdist, a file name that is a
    /// path): called where a pin is read and again before any byte is
    /// fetched, so a bad lock entry writes nothing. (The hash is a
    /// [`Sha256`]: a malformed one was refused where it was read.)
    pub fn validate(&self) -> anyhow::Result<()> {
        if !self.filename.ends_with(".whl") {
            anyhow::bail!(
                "{} {}: {} is not a wheel; greta installs wheels only and never builds sources",
                self.name,
                self.version,
                self.filename
            );
        }
        if let Some(why) = crate::unsafe_file_name(&self.filename) {
            anyhow::bail!(
                "{}: unsafe wheel file name {:?} ({why})",
                self.name,
                self.filename
            );
        }
        Ok(())
    }
}

/// A line of a lock file: `pylock.cpu.toml:42`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockLine {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
}

impl std::fmt::Display for LockLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::Place::line(self.file.display(), self.line).fmt(f)
    }
}
