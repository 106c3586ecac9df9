//! A cached copy of what `uv venv` wrote at an env's staging path, so a
//! rebuild of the same env restores it (a millisecond) instead of running
//! `uv venv` again (~15-20 ms, as much as the import check).
//!
//! `uv venv` is deterministic in its inputs: the uv binary, the base
//! interpreter, the target path and uv's `UV_*` settings (greta passes
//! `--no-config`). The template is keyed by all of them: the uv binary's
//! and the interpreter's resolved paths and file identities (device, inode,
//! size, mtime, ctime), the staging path, every `UV_*` variable, and greta's
//! version. Each file's sha256 is recorded when the template is made and
//! checked when it is restored; anything odd (a missing or changed file, an
//! unreadable manifest) drops the template and `uv venv` runs as before.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const MANIFEST: &str = "greta-template.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Manifest {
    key: String,
    entries: Vec<Entry>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    /// Relative to the venv root.
    path: String,
    /// "dir", "file" or "link".
    kind: String,
    #[serde(default)]
    mode: u32,
    /// sha256 of a file, the target of a link.
    #[serde(default)]
    value: String,
}

/// Where templates live and what this build of the venv depends on.
pub struct Template {
    dir: PathBuf,
    key: String,
}

// A file's identity (path, target, device, inode, size, times) is the
// lock set's: the interpreter cache keys on it too.
pub(crate) use greta_lockset::file_identity as identity;

impl Template {
    /// None when an input cannot be identified (then `uv venv` just runs).
    pub fn for_venv(
        cache_root: &Path,
        uv: &Path,
        python: &Path,
        target: &Path,
    ) -> Option<Template> {
        let mut uv_vars: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| k.starts_with("UV_"))
            .collect();
        uv_vars.sort();
        let key = format!(
            "v1\0uv {}\0python {}\0target {}\0vars {:?}\0greta {}",
            identity(uv)?,
            identity(python)?,
            target.display(),
            uv_vars,
            env!("CARGO_PKG_VERSION")
        );
        let digest = hex::encode(Sha256::digest(key.as_bytes()));
        Some(Template {
            dir: cache_root.join("venv-templates").join(digest),
            key,
        })
    }

    /// Recreates the template at `target` (which must not exist). `Ok(false)`:
    /// no usable template; nothing is left at `target` then.
    pub fn restore(&self, target: &Path) -> Result<bool> {
        let Ok(text) =
            crate::read::text_capped(&self.dir.join(MANIFEST), crate::read::MAX_DATA_FILE)
        else {
            return Ok(false);
        };
        let manifest: Manifest = match serde_json::from_str(&text) {
            Ok(m) => m,
            Err(_) => {
                self.discard();
                return Ok(false);
            }
        };
        if manifest.key != self.key {
            self.discard();
            return Ok(false);
        }
        match copy_checked(&self.dir.join("venv"), target, &manifest.entries) {
            Ok(()) => Ok(true),
            Err(_) => {
                let _ = super::remove_tree(target);
                self.discard();
                Ok(false)
            }
        }
    }

    /// Keeps a copy of the fresh venv at `venv` (best effort: a template
    /// that cannot be written only means the next rebuild runs `uv venv`).
    pub fn save(&self, venv: &Path) {
        let _ = self.try_save(venv);
    }

    fn try_save(&self, venv: &Path) -> Result<()> {
        let parent = self.dir.parent().context("template dir")?;
        fs::create_dir_all(parent)?;
        let tmp = parent.join(format!(
            ".{}.{}.tmp",
            self.dir.file_name().unwrap_or_default().to_string_lossy(),
            std::process::id()
        ));
        let _ = super::remove_tree(&tmp);
        let result = (|| -> Result<()> {
            fs::create_dir(&tmp)?;
            let mut entries = Vec::new();
            walk(venv, Path::new(""), &mut entries)?;
            copy_checked(venv, &tmp.join("venv"), &entries)?;
            let m = Manifest {
                key: self.key.clone(),
                entries,
            };
            fs::write(tmp.join(MANIFEST), serde_json::to_string(&m)?)?;
            self.discard();
            fs::rename(&tmp, &self.dir)?;
            Ok(())
        })();
        if result.is_err() {
            let _ = super::remove_tree(&tmp);
        }
        result
    }

    fn discard(&self) {
        let _ = super::remove_tree(&self.dir);
    }
}

/// Lists the tree under `root.join(rel)`: dirs before their contents.
fn walk(root: &Path, rel: &Path, out: &mut Vec<Entry>) -> Result<()> {
    let dir = root.join(rel);
    let mut names: Vec<_> = fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        let r = rel.join(&name);
        let p = root.join(&r);
        let m = fs::symlink_metadata(&p)?;
        let path = r
            .to_str()
            .context("non-UTF-8 name in the venv")?
            .to_string();
        if m.file_type().is_symlink() {
            let target = fs::read_link(&p)?;
            out.push(Entry {
                path,
                kind: "link".into(),
                mode: 0,
                value: target.to_str().context("non-UTF-8 link")?.to_string(),
            });
        } else if m.is_dir() {
            out.push(Entry {
                path,
                kind: "dir".into(),
                mode: m.permissions().mode() & 0o7777,
                value: String::new(),
            });
            walk(root, &r, out)?;
        } else if m.is_file() {
            let bytes = crate::read::bytes_capped(&p, crate::read::MAX_DATA_FILE)?;
            out.push(Entry {
                path,
                kind: "file".into(),
                mode: m.permissions().mode() & 0o7777,
                value: hex::encode(Sha256::digest(&bytes)),
            });
        } else {
            bail!("{}: not a file, dir or link", p.display());
        }
    }
    Ok(())
}

/// Copies `entries` from `from` to `to` (created), checking every file's
/// sha256 and every link's target against the entry.
fn copy_checked(from: &Path, to: &Path, entries: &[Entry]) -> Result<()> {
    fs::create_dir(to).with_context(|| format!("creating {}", to.display()))?;
    for e in entries {
        if e.path.is_empty() || Path::new(&e.path).is_absolute() || e.path.contains("..") {
            bail!("bad template entry {:?}", e.path);
        }
        let (src, dst) = (from.join(&e.path), to.join(&e.path));
        match e.kind.as_str() {
            "dir" => {
                fs::create_dir(&dst)?;
                fs::set_permissions(&dst, fs::Permissions::from_mode(e.mode))?;
            }
            "link" => {
                let target = fs::read_link(&src)?;
                if target.to_str() != Some(e.value.as_str()) {
                    bail!("{}: link changed", src.display());
                }
                std::os::unix::fs::symlink(&target, &dst)?;
            }
            "file" => {
                let bytes = crate::read::bytes_capped(&src, crate::read::MAX_DATA_FILE)?;
                if hex::encode(Sha256::digest(&bytes)) != e.value {
                    bail!("{}: content changed", src.display());
                }
                fs::write(&dst, &bytes)?;
                fs::set_permissions(&dst, fs::Permissions::from_mode(e.mode))?;
            }
            k => bail!("unknown template entry kind {k}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) {
        fs::create_dir_all(root.join("bin")).unwrap();
        fs::create_dir_all(root.join("lib/python3.11/site-packages")).unwrap();
        fs::write(root.join("pyvenv.cfg"), b"home = /x\n").unwrap();
        fs::write(root.join("bin/activate"), b"VIRTUAL_ENV=/s\n").unwrap();
        fs::set_permissions(root.join("bin/activate"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3", root.join("bin/python")).unwrap();
        std::os::unix::fs::symlink("lib", root.join("lib64")).unwrap();
    }

    fn snapshot(root: &Path) -> Vec<Entry> {
        let mut v = Vec::new();
        walk(root, Path::new(""), &mut v).unwrap();
        v
    }

    fn same(a: &[Entry], b: &[Entry]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.path == y.path && x.kind == y.kind && x.mode == y.mode && x.value == y.value
            })
    }

    fn template(cache: &Path, target: &Path) -> Template {
        // Any two existing files stand in for uv and python.
        let exe = std::env::current_exe().unwrap();
        Template::for_venv(cache, &exe, &exe, target).unwrap()
    }

    /// A venv tree (`v`), its template in a cache (`c`, not saved yet) and
    /// where to restore it (`w`), in a temporary directory.
    struct Setup {
        _dir: tempfile::TempDir,
        venv: PathBuf,
        again: PathBuf,
        t: Template,
    }

    fn setup() -> Setup {
        let d = tempfile::tempdir().unwrap();
        let (venv, cache, again) = (d.path().join("v"), d.path().join("c"), d.path().join("w"));
        tree(&venv);
        let t = template(&cache, &venv);
        Setup {
            _dir: d,
            venv,
            again,
            t,
        }
    }

    #[test]
    fn round_trip_restores_the_same_tree() {
        let Setup {
            _dir: _kept,
            venv,
            again,
            t,
        } = setup();
        assert!(!t.restore(&again).unwrap(), "no template yet");
        assert!(!again.exists());
        t.save(&venv);
        assert!(t.restore(&again).unwrap());
        assert!(same(&snapshot(&venv), &snapshot(&again)));
    }

    #[test]
    fn a_changed_template_is_dropped_not_used() {
        let Setup {
            _dir: _kept,
            venv,
            again,
            t,
        } = setup();
        t.save(&venv);
        fs::write(t.dir.join("venv/pyvenv.cfg"), b"home = /evil\n").unwrap();
        assert!(!t.restore(&again).unwrap());
        assert!(!again.exists(), "nothing half-copied is left");
        assert!(!t.dir.exists(), "the bad template is gone");
    }

    #[test]
    fn key_follows_the_target_path() {
        let d = tempfile::tempdir().unwrap();
        let a = template(d.path(), Path::new("/envs/.staging/a"));
        let b = template(d.path(), Path::new("/envs/.staging/b"));
        assert_ne!(a.dir, b.dir);
    }
}
