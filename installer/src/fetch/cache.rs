//! The content-addressed wheel cache under `$XDG_CACHE_HOME/greta`.
//!
//! A file is keyed by the sha256 the lock promises, so two profiles that pin
//! the same wheel share one copy, and a file only ever appears under its key
//! after its bytes were hashed and matched: downloads grow in `partial/` and
//! are renamed into `wheels/` atomically. A cached file is re-hashed every
//! time it is used, so a file changed on disk (tampering, bit rot, a user's
//! editor) is noticed, thrown away and fetched again instead of installed.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::Artifact;

#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

/// What [`Cache::lookup`] found under an artifact's key.
#[derive(Debug)]
pub enum Lookup {
    /// Present and its bytes hash to the key.
    Hit(PathBuf),
    /// Not there.
    Miss,
    /// Was there but did not match (size or sha256); it has been removed.
    Corrupt { path: PathBuf, reason: String },
}

impl Cache {
    pub fn new(root: PathBuf) -> Self {
        Cache { root }
    }

    /// `$XDG_CACHE_HOME/greta`, else `~/.cache/greta`.
    pub fn default_root() -> Result<PathBuf> {
        if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(x).join("greta"));
        }
        let home = std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .context("neither XDG_CACHE_HOME nor HOME is set: cannot place the wheel cache")?;
        Ok(PathBuf::from(home).join(".cache").join("greta"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a verified file lives: `wheels/sha256/ab/<hash>/<filename>`.
    /// The filename is kept because installers read the wheel tags from it.
    pub fn wheel_path(&self, a: &Artifact) -> PathBuf {
        self.root
            .join("wheels")
            .join("sha256")
            .join(&a.sha256[..2])
            .join(&a.sha256)
            .join(&a.filename)
    }

    /// Where an unverified download grows; resumable across runs.
    pub fn partial_path(&self, a: &Artifact) -> PathBuf {
        self.root.join("partial").join(format!("{}.part", a.sha256))
    }

    /// Finds a cached file and proves it by re-hashing it.
    pub fn lookup(&self, a: &Artifact) -> Result<Lookup> {
        let path = self.wheel_path(a);
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Lookup::Miss),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let reason = if let Some(size) = a.size.filter(|&s| s != meta.len()) {
            Some(format!("size {} bytes, expected {size}", meta.len()))
        } else {
            let got = sha256_file(&path)?;
            (got != a.sha256).then(|| format!("sha256 {got}, expected {}", a.sha256))
        };
        match reason {
            None => Ok(Lookup::Hit(path)),
            Some(reason) => {
                remove_file_forced(&path)
                    .with_context(|| format!("removing corrupt cache file {}", path.display()))?;
                Ok(Lookup::Corrupt { path, reason })
            }
        }
    }

    /// Moves a verified file into place under its key (atomic rename on the
    /// same filesystem) and makes it read-only.
    pub fn commit(&self, verified: &Path, a: &Artifact) -> Result<PathBuf> {
        let dest = self.wheel_path(a);
        let dir = dest.parent().expect("wheel path has a parent");
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        File::open(verified)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing {}", verified.display()))?;
        set_readonly(verified)?;
        fs::rename(verified, &dest)
            .with_context(|| format!("moving {} to {}", verified.display(), dest.display()))?;
        sync_dir(dir);
        Ok(dest)
    }

    /// Copies (or hard-links) an already verified file into the cache; used
    /// when importing a bundle.
    pub fn import(&self, src: &Path, a: &Artifact) -> Result<PathBuf> {
        let tmp_dir = self.root.join("partial");
        fs::create_dir_all(&tmp_dir).with_context(|| format!("creating {}", tmp_dir.display()))?;
        let tmp = tmp_dir.join(format!("{}.import.{}", a.sha256, std::process::id()));
        let _ = fs::remove_file(&tmp);
        if fs::hard_link(src, &tmp).is_err() {
            fs::copy(src, &tmp)
                .with_context(|| format!("copying {} into the cache", src.display()))?;
        }
        let got = sha256_file(&tmp)?;
        if got != a.sha256 {
            let _ = fs::remove_file(&tmp);
            anyhow::bail!(
                "{}: sha256 {got} does not match the lock ({})",
                src.display(),
                a.sha256
            );
        }
        self.commit(&tmp, a)
    }
}

/// Streaming sha256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

fn set_readonly(path: &Path) -> Result<()> {
    let mut perm = fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .permissions();
    perm.set_readonly(true);
    fs::set_permissions(path, perm).with_context(|| format!("chmod {}", path.display()))
}

/// Removes a file even when it was made read-only (as cache files are).
pub fn remove_file_forced(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            if let Ok(m) = fs::metadata(path) {
                let mut p = m.permissions();
                #[allow(clippy::permissions_set_readonly_false)]
                p.set_readonly(false);
                fs::set_permissions(path, p)?;
            }
            fs::remove_file(path)
        }
        r => r,
    }
}

/// Makes a rename durable; best effort (some filesystems refuse dir fsync).
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
