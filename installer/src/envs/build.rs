//! Building an env beside its final place and swapping it in.
//!
//! The staging dir sits in the envs directory (`.staging/<name>`), on the
//! target's filesystem, so the final step is a `rename`, which is atomic. A venv records its own absolute path
//! (scripts' `#!` lines, `bin/activate`), so before the swap those
//! references are rewritten from the staging path to the final one.

use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{installer, remove_tree, EnvRoot};

/// An env under construction. Dropping it without [`Staging::promote`]
/// deletes it: a failed install leaves nothing behind but cached wheels.
pub struct Staging {
    pub path: PathBuf,
    pub target: PathBuf,
    keep: bool,
}

impl Staging {
    pub fn create(root: &EnvRoot, name: &str) -> Result<Staging> {
        let path = root.staging_path(name);
        if path.exists() {
            remove_tree(&path)?;
        }
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        Ok(Staging {
            path,
            target: root.env_path(name),
            keep: false,
        })
    }

    /// The venv: `uv venv` when uv installs (about 20 ms; uv installs from
    /// outside the venv, so no pip in it), restored from the template of an
    /// earlier `uv venv` of this same env when there is one (see
    /// `venv_template`), else `python -m venv` with pip. Says which.
    pub fn make_venv(
        &self,
        python: &Path,
        tool: &installer::Tool,
        cache_root: Option<&Path>,
        limit: Duration,
    ) -> Result<&'static str> {
        let template = match (tool, cache_root) {
            (installer::Tool::Uv(uv), Some(c)) => {
                super::venv_template::Template::for_venv(c, uv, python, &self.path)
            }
            _ => None,
        };
        if let Some(t) = &template {
            if t.restore(&self.path)? {
                return Ok("uv venv (restored from its template)");
            }
        }
        let cmd = match tool {
            installer::Tool::Uv(uv) => {
                let mut c = Command::new(uv);
                c.args([
                    "venv",
                    "--quiet",
                    "--no-config",
                    "--no-project",
                    "--no-python-downloads",
                    "--python",
                ])
                .arg(python)
                .arg(&self.path)
                .env_remove("VIRTUAL_ENV");
                c
            }
            installer::Tool::Pip => {
                let mut c = Command::new(python);
                c.args(["-m", "venv"]).arg(&self.path);
                c
            }
        };
        let o = installer::run_limited(cmd, limit)?;
        if !o.status.success() {
            let text = format!(
                "creating the venv with {} failed ({}): {}{}",
                python.display(),
                o.status,
                o.stdout,
                o.stderr
            );
            return Err(installer::failed(
                &o,
                text,
                "\n(on Debian/Ubuntu: apt-get install python3-venv)",
            ));
        }
        // Exit 0 is not proof: a uv that does nothing made no
        // venv, and everything after would fail for another reason.
        if !super::installed::venv_made(&self.path) {
            bail!(
                "{} exited 0 but made no venv at {} (no pyvenv.cfg or bin/python)",
                match tool {
                    installer::Tool::Uv(uv) => format!("uv venv ({})", uv.display()),
                    installer::Tool::Pip => format!("{} -m venv", python.display()),
                },
                self.path.display()
            );
        }
        if let Some(t) = &template {
            t.save(&self.path);
        }
        Ok(match tool {
            installer::Tool::Uv(_) => "uv venv",
            installer::Tool::Pip => "python -m venv",
        })
    }

    /// Rewrites the staging path to the final path in the venv's scripts,
    /// then brings the `RECORD` entries of the rewritten files (console
    /// scripts: their `#!` line) up to date, so the env is what an install
    /// at its final path would have written and its RECORDs stay true (the
    /// up-to-date check compares sizes against them).
    pub fn relocate(&self, python_xy: &str) -> Result<usize> {
        let rewritten = self.rewrite_paths()?;
        let site = self
            .path
            .join("lib")
            .join(format!("python{python_xy}"))
            .join("site-packages");
        fix_records(&site, &rewritten)?;
        Ok(rewritten.len())
    }

    fn rewrite_paths(&self) -> Result<Vec<(PathBuf, Vec<u8>)>> {
        let from = self.path.as_os_str().as_encoded_bytes().to_vec();
        let to = self.target.as_os_str().as_encoded_bytes().to_vec();
        let mut done = Vec::new();
        let mut files: Vec<PathBuf> = vec![self.path.join("pyvenv.cfg")];
        if let Ok(rd) = fs::read_dir(self.path.join("bin")) {
            files.extend(rd.flatten().map(|e| e.path()));
        }
        for f in files {
            let Ok(meta) = fs::symlink_metadata(&f) else {
                continue;
            };
            if !meta.is_file() || meta.len() > 8 << 20 {
                continue;
            }
            let bytes = crate::read::bytes_capped(&f, 8 << 20)?;
            if !contains(&bytes, &from) {
                continue;
            }
            let out = replace_all(&bytes, &from, &to);
            let tmp = f.with_file_name(format!(
                ".{}.greta-tmp",
                f.file_name().unwrap_or_default().to_string_lossy()
            ));
            fs::write(&tmp, &out).with_context(|| format!("writing {}", tmp.display()))?;
            fs::set_permissions(&tmp, meta.permissions())?;
            fs::rename(&tmp, &f).with_context(|| format!("writing {}", f.display()))?;
            done.push((f, out));
        }
        Ok(done)
    }

    /// Swaps the staged env in. The old env is moved to `.backup-<name>`
    /// first and deleted only after the new one is in place; a kill between
    /// the two renames is repaired by [`EnvRoot::recover`] (backup restored).
    pub fn promote(mut self, root: &EnvRoot, name: &str, pause: &dyn Fn(&str)) -> Result<PathBuf> {
        let backup = root.backup_path(name);
        let had_old = self.target.exists();
        if had_old {
            if backup.exists() {
                remove_tree(&backup)?;
            }
            fs::rename(&self.target, &backup).with_context(|| {
                format!("moving the previous env {} aside", self.target.display())
            })?;
            pause("swap");
        }
        if let Err(e) = fs::rename(&self.path, &self.target) {
            if had_old {
                let _ = fs::rename(&backup, &self.target);
            }
            return Err(e).with_context(|| format!("moving {} into place", self.path.display()));
        }
        self.keep = true;
        super::super::fetch::cache::sync_dir(&root.dir);
        if had_old {
            discard(root, name, &backup);
        }
        Ok(self.target.clone())
    }
}

/// `a/b/../c` → `a/c`, without touching the filesystem (RECORD paths are
/// relative to site-packages and climb out of it to reach `bin/`).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Updates hash and size of every RECORD line (of every `.dist-info` in
/// `site`) that names one of `rewritten`; each RECORD is replaced whole
/// (temporary file, then rename).
fn fix_records(site: &Path, rewritten: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    use base64::Engine;
    use sha2::Digest;
    if rewritten.is_empty() {
        return Ok(());
    }
    let targets: std::collections::HashMap<PathBuf, &Vec<u8>> =
        rewritten.iter().map(|(f, b)| (lexical(f), b)).collect();
    let Ok(rd) = fs::read_dir(site) else {
        return Ok(());
    };
    for e in rd.flatten() {
        if !e.file_name().to_string_lossy().ends_with(".dist-info") {
            continue;
        }
        let record = e.path().join("RECORD");
        let Ok(text) = crate::read::text_capped(&record, crate::read::MAX_DATA_FILE) else {
            continue;
        };
        let mut changed = false;
        let mut out = String::with_capacity(text.len());
        for line in text.lines() {
            // Only files outside site-packages (`../../../bin/x`) can be
            // rewritten ones; a torch RECORD has ~15,000 other lines.
            let outside = line.starts_with("..") || line.starts_with("\"..");
            let first = if outside {
                super::record::parse(line)
                    .ok()
                    .and_then(|rows| rows.into_iter().next())
            } else {
                None
            };
            let hit = first
                .as_ref()
                .and_then(|r| targets.get(&lexical(&site.join(&r.path))));
            match (hit, first) {
                (Some(bytes), Some(r)) => {
                    let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .encode(sha2::Sha256::digest(bytes));
                    out.push_str(&super::record::row(
                        &r.path,
                        &format!("sha256={digest}"),
                        bytes.len() as u64,
                    ));
                    changed = true;
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        if changed {
            let tmp = record.with_file_name(".RECORD.greta-tmp");
            fs::write(&tmp, out).with_context(|| format!("writing {}", tmp.display()))?;
            fs::rename(&tmp, &record).with_context(|| format!("writing {}", record.display()))?;
        }
    }
    Ok(())
}

/// Deletes the replaced env without making the user wait for it: renamed
/// to `.trash-<name>-<pid>` (never listed, removed by the next run if this
/// does not finish), then removed by a detached `rm -rf`.
fn discard(root: &EnvRoot, name: &str, old: &Path) {
    let trash = root.trash_path(name);
    if fs::rename(old, &trash).is_err() {
        let _ = remove_tree(old);
        return;
    }
    let spawned = Command::new("rm")
        .arg("-rf")
        .arg("--")
        .arg(&trash)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        let _ = remove_tree(&trash);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.keep {
            let _ = remove_tree(&self.path);
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_rewritten_scripts_get_their_new_hash_and_size() {
        use base64::Engine;
        use sha2::Digest;
        let d = tempfile::tempdir().unwrap();
        let site = d.path().join("lib/python3.11/site-packages");
        let info = site.join("demo-1.0.dist-info");
        fs::create_dir_all(&info).unwrap();
        fs::create_dir_all(d.path().join("bin")).unwrap();
        let record = "demo/__init__.py,sha256=abc,5\n\
                      ../../../bin/demo,sha256=old,40\n\
                      \"../../../bin/we,ird\",sha256=old,41\n\
                      demo-1.0.dist-info/RECORD,,\n";
        fs::write(info.join("RECORD"), record).unwrap();
        let script = b"#!/envs/demo/bin/python\nprint(1)\n".to_vec();
        let weird = b"#!/envs/demo/bin/python\n".to_vec();
        let rewritten = vec![
            (d.path().join("bin/demo"), script.clone()),
            (d.path().join("bin/we,ird"), weird.clone()),
        ];
        fix_records(&site, &rewritten).unwrap();
        let b64 = |b: &[u8]| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b))
        };
        assert_eq!(
            fs::read_to_string(info.join("RECORD")).unwrap(),
            format!(
                "demo/__init__.py,sha256=abc,5\n../../../bin/demo,sha256={},{}\n\"../../../bin/we,ird\",sha256={},{}\ndemo-1.0.dist-info/RECORD,,\n",
                b64(&script),
                script.len(),
                b64(&weird),
                weird.len()
            )
        );
        assert_eq!(
            lexical(Path::new("/e/lib/p/site-packages/../../../bin/x")),
            PathBuf::from("/e/bin/x")
        );
    }

    #[test]
    fn replaces_every_occurrence() {
        assert_eq!(
            replace_all(b"#!/a/.s-1/bin/python\nX=/a/.s-1\n", b"/a/.s-1", b"/a/env"),
            b"#!/a/env/bin/python\nX=/a/env\n".to_vec()
        );
        assert!(!contains(b"abc", b""));
    }
}
