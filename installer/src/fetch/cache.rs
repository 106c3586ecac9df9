//! The content-addressed wheel cache under `$XDG_CACHE_HOME/greta`.
//!
//! A file is keyed by the sha256 the lock promises, so two profiles that pin
//! the same wheel share one copy, and a file only ever appears under its key
//! after its bytes were hashed and matched: downloads grow in `partial/` and
//! are renamed into `wheels/` atomically.
//!
//! Every use verifies the file again. The full sha256 is recomputed unless a
//! stamp written at the last verification (`.verified`: inode, size, mtime,
//! ctime, time of verification) still matches the file *and* was written
//! since the last boot. Any write to the file, a `touch` that restores its
//! mtime, or a file renamed over it changes the ctime or inode, which user
//! space cannot set back, so tampering is caught by the stamp; a crash
//! before the data reached the disk is caught because the stamp predates
//! the boot. `GRETA_VERIFY_CACHE=1` re-hashes every time regardless (bit rot).
//! The stamp is what makes a warm reinstall cheap, and also why files are
//! not fsync'ed on the way in.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::PinnedWheel;

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

    /// `$XDG_CACHE_HOME/greta`, else `~/.cache/greta` (`greta_vocab::dirs`).
    pub fn default_root() -> Result<PathBuf> {
        use greta_vocab::dirs;
        dirs::greta_root(dirs::Base::Cache, &dirs::process_env).ok_or_else(|| {
            crate::rerun::FixFirst(format!(
                "no absolute directory in {}: cannot place the wheel cache",
                dirs::Base::Cache.read_from()
            ))
            .into()
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a verified file lives: `wheels/sha256/ab/<hash>/<filename>`.
    /// The filename is kept because installers read the wheel tags from it.
    pub fn wheel_path(&self, a: &PinnedWheel) -> PathBuf {
        let hex = a.sha256.to_string();
        self.root
            .join("wheels")
            .join("sha256")
            .join(&hex[..2])
            .join(&hex)
            .join(&a.filename)
    }

    /// Where an unverified download grows; resumable across runs.
    pub fn partial_path(&self, a: &PinnedWheel) -> PathBuf {
        self.root.join("partial").join(format!("{}.part", a.sha256))
    }

    /// Finds a cached file and proves it: by its stamp when that still
    /// holds, else by re-hashing it (see the module docs). Anything but a
    /// regular file at the path (a FIFO, a directory, a symlink, a device)
    /// is dropped like a corrupt file, so the wheel is fetched again.
    pub fn lookup(&self, a: &PinnedWheel) -> Result<Lookup> {
        let path = self.wheel_path(a);
        let (mut file, meta) = match open_entry(&path)? {
            Entry::Missing => return Ok(Lookup::Miss),
            Entry::Other(m) => return self.drop_other(path, &m),
            Entry::File(f, m) => (f, m),
        };
        let reason = if let Some(size) = a.size.filter(|&s| s != meta.len()) {
            // The sha256 is the proof; a size is only a quick test. A file
            // with the right hash is kept whatever the lock's size says
            // (a wrong size in the lock once deleted a good wheel).
            let got = sha256_read(&mut file, &path)?;
            if got == a.sha256 {
                tracing::warn!(
                    "{}: the lock says {size} bytes, but the cached file with its sha256 has {}: \
                     the lock's size is wrong",
                    a.filename,
                    meta.len()
                );
                write_stamp(&path, &file);
                None
            } else {
                Some(format!("size {} bytes, expected {size}", meta.len()))
            }
        } else if stamp_holds(&path, &meta) {
            None
        } else {
            let got = sha256_read(&mut file, &path)?;
            if got == a.sha256 {
                write_stamp(&path, &file);
                None
            } else {
                Some(format!("sha256 {got}, expected {}", a.sha256))
            }
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

    /// Drops what is not a regular file at a wheel's path (a directory with
    /// what it holds; a symlink itself, never its target).
    fn drop_other(&self, path: PathBuf, m: &fs::Metadata) -> Result<Lookup> {
        let what = super::owned::kind(m);
        let gone = if m.file_type().is_dir() {
            fs::remove_dir_all(&path)
        } else {
            remove_file_forced(&path)
        };
        gone.with_context(|| {
            format!(
                "removing {} from the cache (a {what}, not a regular file)",
                path.display()
            )
        })?;
        Ok(Lookup::Corrupt {
            path,
            reason: format!("a {what}, not a regular file"),
        })
    }

    /// Hashes the cached file of `a` whatever its stamp says; a file that is
    /// wrong, or anything but a regular file, is removed (with its stamp)
    /// and described. `Ok(None)`: right, or not cached.
    pub fn reverify(&self, a: &PinnedWheel) -> Result<Option<String>> {
        let path = self.wheel_path(a);
        let mut file = match open_entry(&path)? {
            Entry::Missing => return Ok(None),
            Entry::Other(m) => {
                let _ = fs::remove_file(stamp_path(&path));
                return Ok(match self.drop_other(path, &m)? {
                    Lookup::Corrupt { reason, .. } => Some(format!("{}: {reason}", a.filename)),
                    _ => None,
                });
            }
            Entry::File(f, _) => f,
        };
        let got = sha256_read(&mut file, &path)?;
        if got == a.sha256 {
            return Ok(None);
        }
        remove_file_forced(&path)
            .with_context(|| format!("removing corrupt cache file {}", path.display()))?;
        let _ = fs::remove_file(stamp_path(&path));
        Ok(Some(format!(
            "{} has sha256 {got}, expected {}",
            a.filename, a.sha256
        )))
    }

    /// Moves a verified file into place under its key (atomic rename on the
    /// same filesystem) and makes it read-only. `file` is the descriptor
    /// whose bytes were hashed: the mode is set on it, and the stamp is
    /// written only when the entry now under the key is that very file (a
    /// path swapped after hashing is never stamped).
    pub fn commit(&self, verified: &Path, file: &File, a: &PinnedWheel) -> Result<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let dest = self.wheel_path(a);
        let dir = dest.parent().expect("wheel path has a parent");
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let hashed = file
            .metadata()
            .with_context(|| format!("reading {}", verified.display()))?;
        if !hashed.file_type().is_file() {
            anyhow::bail!("{}: not a regular file", verified.display());
        }
        let mut perm = hashed.permissions();
        perm.set_readonly(true);
        file.set_permissions(perm)
            .with_context(|| format!("chmod {}", verified.display()))?;
        // What sits under the key may be anything (item 4): a directory
        // would take the rename into itself, so it goes first.
        if let Entry::Other(m) = open_entry(&dest)? {
            self.drop_other(dest.clone(), &m)?;
        }
        fs::rename(verified, &dest)
            .with_context(|| format!("moving {} to {}", verified.display(), dest.display()))?;
        let now =
            fs::symlink_metadata(&dest).with_context(|| format!("reading {}", dest.display()))?;
        if now.dev() != hashed.dev() || now.ino() != hashed.ino() {
            let _ = remove_file_forced(&dest);
            anyhow::bail!(
                "{} was replaced while greta verified it; removed it (run again)",
                verified.display()
            );
        }
        write_stamp(&dest, file);
        Ok(dest)
    }

    /// Copies (or hard-links) an already verified file into the cache; used
    /// when importing a bundle. `src` must be a regular file (a symlink to
    /// one is followed); what lands in the cache is hashed on its own
    /// descriptor.
    pub fn import(&self, src: &Path, a: &PinnedWheel) -> Result<PathBuf> {
        let tmp_dir = self.root.join("partial");
        super::owned::dir(&tmp_dir)?;
        let tmp = tmp_dir.join(format!("{}.import.{}", a.sha256, std::process::id()));
        let _ = fs::remove_file(&tmp);
        let src_is_file = fs::symlink_metadata(src).is_ok_and(|m| m.file_type().is_file());
        if !src_is_file || fs::hard_link(src, &tmp).is_err() {
            let mut from = crate::read::open_regular(src)?;
            let mut to = super::owned::create_new(&tmp)
                .with_context(|| format!("creating {}", tmp.display()))?;
            io::copy(&mut from, &mut to)
                .with_context(|| format!("copying {} into the cache", src.display()))?;
        }
        let mut file = match open_entry(&tmp)? {
            Entry::File(f, _) => f,
            _ => anyhow::bail!("{}: not a regular file after copying", tmp.display()),
        };
        let got = sha256_read(&mut file, &tmp)?;
        if got != a.sha256 {
            let _ = fs::remove_file(&tmp);
            anyhow::bail!(
                "{}: sha256 {got} does not match the lock ({})",
                src.display(),
                a.sha256
            );
        }
        self.commit(&tmp, &file, a)
    }
}

/// What is at a cache path, looked at without following a symlink and
/// opened without blocking.
enum Entry {
    Missing,
    /// A regular file, opened for reading, and its metadata (of the
    /// descriptor, so of the bytes that will be read).
    File(File, fs::Metadata),
    /// Anything else (the entry's own metadata).
    Other(fs::Metadata),
}

fn open_entry(path: &Path) -> Result<Entry> {
    use std::os::unix::fs::OpenOptionsExt;
    let look = |path: &Path| match fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let Some(m) = look(path)? else {
        return Ok(Entry::Missing);
    };
    if !m.file_type().is_file() {
        return Ok(Entry::Other(m));
    }
    let f = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        // Swapped since the look: say what is there now.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Entry::Missing),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO)) => {
            return Ok(look(path)?.map_or(Entry::Missing, Entry::Other));
        }
        Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
    };
    let m = f
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?;
    if !m.file_type().is_file() {
        return Ok(Entry::Other(m));
    }
    Ok(Entry::File(f, m))
}

/// The stamp: `ino size mtime_ns ctime_ns verified_unix_s`.
fn stamp_line(meta: &fs::Metadata, verified_at: i64) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{} {} {}.{} {}.{} {verified_at}",
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

fn stamp_path(file: &Path) -> PathBuf {
    file.with_file_name(".verified")
}

/// Records that `file` (the open descriptor of `path`, whose bytes were
/// just hashed) hashed right just now (best effort: without a stamp the
/// next use re-hashes, which is only slower). The stamp's temporary file is
/// created exclusively, never through whatever sits at its name.
fn write_stamp(path: &Path, file: &File) {
    let Ok(meta) = file.metadata() else { return };
    if !meta.file_type().is_file() {
        return;
    }
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let p = stamp_path(path);
    let tmp = p.with_extension(format!("tmp{}", std::process::id()));
    let written = super::owned::create_new(&tmp)
        .and_then(|mut f| io::Write::write_all(&mut f, stamp_line(&meta, now).as_bytes()));
    if written.is_err() || fs::rename(&tmp, &p).is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// Whether the stamp proves `file` unchanged since it was last hashed.
fn stamp_holds(file: &Path, meta: &fs::Metadata) -> bool {
    if std::env::var_os(greta_vocab::EnvVars::GRETA_VERIFY_CACHE)
        .is_some_and(|v| v != "0" && !v.is_empty())
    {
        return false;
    }
    let Ok(text) = crate::read::text_capped(&stamp_path(file), 4096) else {
        return false;
    };
    let Some((head, at)) = text.trim().rsplit_once(' ') else {
        return false;
    };
    let Ok(at) = at.parse::<i64>() else {
        return false;
    };
    let Some(boot) = boot_time() else {
        return false;
    };
    at > boot && stamp_line(meta, at).rsplit_once(' ').map(|(h, _)| h) == Some(head)
}

/// Unix time of the last boot (`btime` in /proc/stat).
fn boot_time() -> Option<i64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// Streaming sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<greta_vocab::Sha256> {
    // Streamed, so no size cap; but a FIFO or device is refused at open.
    let mut f = crate::read::open_regular(path)?;
    sha256_read(&mut f, path)
}

/// Streaming sha256 of an open file from its start (`path` names it in
/// errors).
fn sha256_read(f: &mut File, path: &Path) -> Result<greta_vocab::Sha256> {
    use std::io::Seek;
    f.rewind()
        .with_context(|| format!("reading {}", path.display()))?;
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
    Ok(greta_vocab::Sha256(h.finalize().into()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn artifact(bytes: &[u8]) -> PinnedWheel {
        PinnedWheel {
            name: "x".into(),
            version: "1".into(),
            filename: "x-1-py3-none-any.whl".into(),
            url: "http://127.0.0.1:9/x".into(),
            sha256: greta_vocab::Sha256(Sha256::digest(bytes).into()),
            size: Some(bytes.len() as u64),
            at: None,
        }
    }

    /// A cache in a fresh directory holding one committed wheel of `n`
    /// random bytes: the directory (kept alive), the cache, the bytes, the
    /// pin and the cached file's path.
    fn one_committed(n: usize) -> (tempfile::TempDir, Cache, Vec<u8>, PinnedWheel, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf());
        let bytes = random(n);
        let a = artifact(&bytes);
        let tmp = dir.path().join("in");
        fs::write(&tmp, &bytes).unwrap();
        let p = cache.commit(&tmp, &File::open(&tmp).unwrap(), &a).unwrap();
        (dir, cache, bytes, a, p)
    }

    fn random(n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut v)
            .unwrap();
        v
    }

    /// A wrong `size` in the lock deleted a cached wheel whose
    /// sha256 was right.
    #[test]
    fn a_wrong_size_in_the_lock_keeps_a_file_whose_hash_is_right() {
        let (_dir, cache, bytes, a, p) = one_committed(4096);
        let lying = PinnedWheel {
            size: Some(4095),
            ..a.clone()
        };
        assert!(matches!(cache.lookup(&lying).unwrap(), Lookup::Hit(_)));
        assert_eq!(fs::read(&p).unwrap(), bytes, "the good file was deleted");
        // A file of the wrong size *and* hash is still thrown away.
        let other = PinnedWheel {
            sha256: greta_vocab::Sha256(Sha256::digest(b"other").into()),
            ..lying
        };
        assert!(matches!(
            cache.lookup(&other).unwrap(),
            Lookup::Miss | Lookup::Corrupt { .. }
        ));
    }

    #[test]
    fn same_size_edit_with_restored_mtime_is_caught_by_the_stamp() {
        let (_dir, cache, bytes, a, p) = one_committed(4096);
        assert!(matches!(cache.lookup(&a).unwrap(), Lookup::Hit(_)));
        assert!(
            stamp_holds(&p, &fs::metadata(&p).unwrap()),
            "fresh stamp must hold"
        );

        // Flip one byte, then put the old mtime back: only ctime tells.
        let before = fs::metadata(&p).unwrap();
        let mut b = bytes.clone();
        b[100] ^= 0x40;
        remove_file_forced(&p).unwrap();
        fs::write(&p, &b).unwrap();
        let times = [
            libc::timespec {
                tv_sec: before.atime(),
                tv_nsec: before.atime_nsec(),
            },
            libc::timespec {
                tv_sec: before.mtime(),
                tv_nsec: before.mtime_nsec(),
            },
        ];
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(
            // SAFETY: valid path and two timespecs, as utimensat requires.
            unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) },
            0
        );
        match cache.lookup(&a).unwrap() {
            Lookup::Corrupt { reason, .. } => assert!(reason.contains("sha256"), "{reason}"),
            other => panic!("tampered file accepted: {other:?}"),
        }
        assert!(!p.exists());
    }

    #[test]
    fn stamp_from_before_boot_forces_a_rehash() {
        let (_dir, cache, _, a, p) = one_committed(1000);
        let meta = fs::metadata(&p).unwrap();
        fs::write(stamp_path(&p), stamp_line(&meta, 1)).unwrap();
        assert!(!stamp_holds(&p, &meta));
        // The re-hash succeeds and renews the stamp.
        assert!(matches!(cache.lookup(&a).unwrap(), Lookup::Hit(_)));
        assert!(stamp_holds(&p, &fs::metadata(&p).unwrap()));
    }
}
