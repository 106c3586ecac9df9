//! Bundles: `greta bundle` writes one (wheels, lock files, the pinned uv,
//! a manifest); `greta install --bundle DIR` imports its wheels into the
//! cache before the fetch step, so that step runs offline.

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

use super::plan::{artifact, Plan};
use crate::envs;
use crate::fetch::{self, Cache, FetchOptions, PinnedWheel};
use greta_lockset::{LockDir, MATRIX_FILE};

/// Manifest of a bundle directory.
pub use greta_lockset::BUNDLE_MANIFEST;
pub const BUNDLE_SCHEMA: &str = "greta.bundle/v1";

/// Manifest written by `greta bundle`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct BundleManifest {
    pub schema: String,
    /// Wall time of the fetch step of the run that made the bundle.
    #[serde(default)]
    pub fetch_ms: u128,
    pub profile: String,
    pub python: String,
    pub lockfile: String,
    pub lock_sha256: greta_vocab::Sha256,
    pub wheels: Vec<PinnedWheel>,
    /// `std::env::consts::ARCH` of the machine that made the bundle: its
    /// wheels and its uv are for that architecture. Absent in bundles made
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// The pinned uv wheel under `tools/` (with `tools.toml` beside the
    /// lockfile). Absent in bundles made before bundles carried uv, or
    /// from a lock dir without `tools.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uv: Option<envs::uv_bootstrap::BundledUv>,
    pub greta_version: String,
    pub created: String,
}

/// Copies a verified cache file into a bundle. A copy, never a hard link:
/// a link changes the cached file's ctime, which made uv treat every cached
/// wheel as new and unpack the whole profile again into its own cache
/// (~5.7 GB per bundle + rebuild for the cpu profile). `std::fs::copy` uses
/// `copy_file_range`, which shares extents where the filesystem can.
fn copy_out_of_cache(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Whether the process `pid` is gone.
fn dead(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Beside a bundle directory `out`, what dead `greta bundle` runs left:
/// the previous bundle set aside by a swap killed between its
/// renames (`.NAME.old-PID`) is put back when `out` is missing, else
/// removed; a half-written bundle (`.NAME.partial-PID`) is removed. A live
/// PID's entries are another run's and stay. Called by `greta bundle` and
/// `greta install --bundle` before they look at `out`.
fn recover_beside(out: &Path) {
    let (Some(parent), Some(name)) = (out.parent(), out.file_name()) else {
        return;
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let name = name.to_string_lossy();
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    let mut old = Vec::new();
    for e in rd.flatten() {
        let file_name = e.file_name();
        let Some(n) = file_name.to_str() else {
            continue;
        };
        let Some(rest) = n.strip_prefix(&format!(".{name}.")) else {
            continue;
        };
        let (kind, pid) = match rest.split_once('-') {
            Some((k @ ("partial" | "old"), p)) => match p.parse::<libc::pid_t>() {
                Ok(p) if p > 0 && dead(p) => (k, p),
                _ => continue,
            },
            _ => continue,
        };
        if kind == "old" {
            old.push((pid, e.path()));
            continue;
        }
        match envs::remove_tree(&e.path()) {
            Ok(()) => tracing::info!("removed {} (its bundle run is gone)", e.path().display()),
            Err(err) => tracing::warn!("cannot remove {}: {err:#}", e.path().display()),
        }
    }
    for (_, p) in old {
        if std::fs::symlink_metadata(out).is_err() && std::fs::rename(&p, out).is_ok() {
            crate::errln!(
                "greta: restored the previous bundle {} (a `greta bundle` replacing it was killed)",
                out.display()
            );
        } else if let Err(err) = envs::remove_tree(&p) {
            tracing::warn!("cannot remove {}: {err:#}", p.display());
        }
    }
}

/// Where greta records the half-written bundles it is making, one file
/// per run (`<pid>`, holding the absolute path of its `.NAME.partial-PID`),
/// so a run killed while writing one (2.9 GB for cpu) is collected by any
/// later bundle or install, not only by the next bundle to the same DIR.
fn bundles_in_progress(cache: &Cache) -> std::path::PathBuf {
    cache.root().join("bundles-in-progress")
}

/// Records `tmp` as this run's half-written bundle; the record's path.
fn record_partial(cache: &Cache, tmp: &Path) -> Option<std::path::PathBuf> {
    let dir = bundles_in_progress(cache);
    std::fs::create_dir_all(&dir).ok()?;
    let abs = std::path::absolute(tmp).ok()?;
    let rec = dir.join(std::process::id().to_string());
    let mut f = crate::fetch::owned::create_new(&rec).ok()?;
    std::io::Write::write_all(&mut f, abs.as_os_str().as_encoded_bytes()).ok()?;
    Some(rec)
}

/// Removes the half-written bundles recorded by runs that are gone (the
/// recorded path must still be a real directory named
/// `.NAME.partial-<that pid>`), and their records.
pub(crate) fn sweep_recorded_partials(cache: &Cache) {
    let dir = bundles_in_progress(cache);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in rd.flatten() {
        let Some(pid) = e
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok())
            .filter(|p| *p > 0)
        else {
            continue;
        };
        if !dead(pid) {
            continue;
        }
        if let Ok(text) = crate::read::text_capped(&e.path(), 64 * 1024) {
            let p = Path::new(text.trim_end_matches('\n'));
            let named = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.') && n.ends_with(&format!(".partial-{pid}")));
            let real = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
            if p.is_absolute() && named && real {
                match envs::remove_tree(p) {
                    Ok(()) => tracing::info!("removed {} (its bundle run is gone)", p.display()),
                    Err(err) => tracing::warn!("cannot remove {}: {err:#}", p.display()),
                }
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
}

/// Puts the finished bundle `tmp` at `out`, replacing a previous bundle as
/// envs are replaced: one atomic exchange of the two directories where the
/// filesystem has it (`renameat2(RENAME_EXCHANGE)`), else two renames with
/// the previous bundle set aside as `.NAME.old-PID`, which the next run puts
/// back if this one dies between them ([`recover_beside`]). At no moment
/// is `out` a half-deleted bundle.
fn swap_in(tmp: &Path, out: &Path) -> Result<()> {
    if std::fs::symlink_metadata(out).is_err() {
        return std::fs::rename(tmp, out)
            .with_context(|| format!("moving the bundle into {}", out.display()));
    }
    if exchange(tmp, out).is_ok() {
        // `tmp` now holds the previous bundle.
        if let Err(e) = envs::remove_tree(tmp) {
            tracing::warn!("cannot remove the previous bundle {}: {e:#}", tmp.display());
        }
        return Ok(());
    }
    let name = out.file_name().context("-o needs a directory name")?;
    let aside = out.with_file_name(format!(
        ".{}.old-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::rename(out, &aside)
        .with_context(|| format!("moving the previous bundle {} aside", out.display()))?;
    super::pause_at("bundle-swap");
    if let Err(e) = std::fs::rename(tmp, out) {
        let _ = std::fs::rename(&aside, out);
        return Err(e).with_context(|| format!("moving the bundle into {}", out.display()));
    }
    if let Err(e) = envs::remove_tree(&aside) {
        tracing::warn!(
            "cannot remove the previous bundle {}: {e:#}",
            aside.display()
        );
    }
    Ok(())
}

/// `renameat2(a, b, RENAME_EXCHANGE)`: both names stay, their contents
/// swap, in one step.
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: two valid NUL-terminated paths, relative to the cwd.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl BundleManifest {
    pub fn load(dir: &Path) -> Result<BundleManifest> {
        recover_beside(dir);
        let p = dir.join(BUNDLE_MANIFEST);
        if dir.join("wheels").is_dir() && std::fs::symlink_metadata(&p).is_err() {
            anyhow::bail!(
                "bundle {} is damaged: it has wheels/ but no {BUNDLE_MANIFEST}; make the bundle again with `greta bundle -o {}`",
                dir.display(),
                dir.display()
            );
        }
        if !p.exists() {
            anyhow::bail!(
                "{} is not a greta bundle (no {BUNDLE_MANIFEST})",
                dir.display()
            );
        }
        let text = crate::read::text_capped(&p, crate::read::MAX_DATA_FILE)?;
        let m: BundleManifest =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
        if m.schema != BUNDLE_SCHEMA {
            bail!(
                "{}: schema {:?}, this greta reads {BUNDLE_SCHEMA}",
                p.display(),
                m.schema
            );
        }
        Ok(m)
    }

    /// A bundle is for the architecture it was made on (its wheels and
    /// its uv): made elsewhere, it is refused here with both names.
    pub fn check_arch(&self, dir: &Path) -> Result<()> {
        let here = std::env::consts::ARCH;
        match &self.arch {
            Some(a) if a != here => bail!(
                "bundle {} was made on a {a} machine (its wheels and uv are for {a}); this node is {here}: make the bundle with `greta bundle` on a {here} machine",
                dir.display()
            ),
            _ => Ok(()),
        }
    }
}

/// Checks a bundle against the plan made from its own lock dir and copies
/// its wheels into the cache (each hash-verified on the way in).
pub(super) fn import_bundle(dir: &Path, cache: &Cache, items: &[PinnedWheel]) -> Result<()> {
    let m = BundleManifest::load(dir)?;
    let lock_path = dir.join(&m.lockfile);
    let lock_sha = fetch::cache::sha256_file(&lock_path)?;
    if lock_sha != m.lock_sha256 {
        bail!(
            "{}: sha256 {lock_sha} differs from the bundle manifest ({}); the bundle was modified",
            lock_path.display(),
            m.lock_sha256
        );
    }
    let mut missing = Vec::new();
    let mut damaged = Vec::new();
    for a in items {
        if let fetch::Lookup::Hit(_) = cache.lookup(a)? {
            continue;
        }
        let src = dir.join("wheels").join(&a.filename);
        if !src.is_file() {
            // The manifest promises it: the bundle lost it, whatever the
            // Python (a half-deleted bundle was blamed on it).
            if m.wheels.iter().any(|w| w.filename == a.filename) {
                damaged.push(a.filename.clone());
            } else {
                missing.push(a.filename.clone());
            }
            continue;
        }
        cache
            .import(&src, a)
            .with_context(|| format!("bundle {} is damaged", dir.display()))?;
    }
    if !damaged.is_empty() {
        bail!(
            "bundle {} is damaged: its manifest lists {} wheel(s) that are not in {}: {}; make the bundle again with `greta bundle -o {}`",
            dir.display(),
            damaged.len(),
            dir.join("wheels").display(),
            damaged.join(", "),
            dir.display()
        );
    }
    if !missing.is_empty() {
        bail!(
            "bundle {} (made for Python {}) lacks {} wheel(s) this interpreter needs: {}; make the bundle with `greta bundle --python X.Y` for this node's Python",
            dir.display(),
            m.python,
            missing.len(),
            missing.join(", ")
        );
    }
    Ok(())
}

/// `greta bundle`: fetch and stage a profile's wheels + lock + manifest.
pub fn bundle(
    plan: &Plan,
    lock_dir: &LockDir,
    out: &Path,
    fopts: &FetchOptions,
    index_url: Option<&str>,
) -> Result<BundleManifest> {
    recover_beside(out);
    if out.exists() {
        let empty = std::fs::read_dir(out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty && !out.join(BUNDLE_MANIFEST).is_file() {
            bail!(
                "{} exists and is not empty (and not a greta bundle); choose another -o DIR",
                out.display()
            );
        }
    }
    let cache = Cache::new(Cache::default_root()?);
    sweep_recorded_partials(&cache);
    let mut items: Vec<PinnedWheel> = plan.wheels.iter().map(artifact).collect();
    if let Some(idx) = index_url {
        let client = fetch::http::client(fopts)?;
        fetch::index::relocate(&client, idx, &mut items, fopts)?;
    }
    // The pinned uv for this machine's architecture travels too (fetched
    // from its pinned URL, verified like every wheel), so a node without
    // uv does not fall back to pip.
    let arch = std::env::consts::ARCH;
    let uv = match envs::uv_bootstrap::load(lock_dir)? {
        Some(pin) => match envs::uv_bootstrap::wheel_for(&pin, arch) {
            Ok(w) => Some((
                envs::uv_bootstrap::bundled(&pin, w),
                envs::uv_bootstrap::artifact(&pin, w),
            )),
            Err(e) => {
                crate::errln!("greta: the bundle carries no uv: {e:#}");
                None
            }
        },
        None => {
            crate::errln!(
                "greta: the bundle carries no uv: {} has no {}",
                lock_dir,
                envs::uv_bootstrap::TOOLS_FILE
            );
            None
        }
    };
    let mut all = items.clone();
    all.extend(uv.iter().map(|(_, a)| a.clone()));
    let t = Instant::now();
    let mut fetched = fetch::fetch_all(&cache, &all, fopts)?;
    let fetch_ms = t.elapsed().as_millis();
    let uv_fetched = uv.as_ref().and_then(|_| fetched.pop());
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let fname = out
        .file_name()
        .context("-o needs a directory name")?
        .to_string_lossy()
        .into_owned();
    let tmp = parent.join(format!(".{fname}.partial-{}", std::process::id()));
    if tmp.exists() {
        envs::remove_tree(&tmp)?;
    }
    std::fs::create_dir_all(tmp.join("wheels"))?;
    let record = record_partial(&cache, &tmp);
    let result = (|| -> Result<BundleManifest> {
        for f in &fetched {
            let dest = tmp.join("wheels").join(&f.artifact.filename);
            copy_out_of_cache(&f.path, &dest)?;
        }
        let lock_name = plan
            .lockfile
            .file_name()
            .context("lockfile name")?
            .to_string_lossy()
            .into_owned();
        // The lock files are written from the set in effect (built in or
        // a directory); the lockfile's hash is checked against the plan below.
        let copy_lock_file = |name: &str| -> Result<()> {
            let text = lock_dir.read_required(name)?;
            std::fs::write(tmp.join(name), text)
                .with_context(|| format!("writing {}", tmp.join(name).display()))
        };
        copy_lock_file(&lock_name)?;
        copy_lock_file(MATRIX_FILE)?;
        if let Some(f) = &uv_fetched {
            let tools = tmp.join(envs::uv_bootstrap::BUNDLE_TOOLS_DIR);
            std::fs::create_dir_all(&tools)?;
            let dest = tools.join(&f.artifact.filename);
            copy_out_of_cache(&f.path, &dest)?;
            copy_lock_file(envs::uv_bootstrap::TOOLS_FILE)?;
        }
        let copied_sha = fetch::cache::sha256_file(&tmp.join(&lock_name))?;
        if copied_sha != plan.lock_sha256 {
            bail!("{} changed while bundling; rerun", plan.lockfile.display());
        }
        let m = BundleManifest {
            schema: BUNDLE_SCHEMA.into(),
            fetch_ms,
            profile: plan.profile.clone(),
            python: plan
                .python
                .version
                .split('.')
                .take(2)
                .collect::<Vec<_>>()
                .join("."),
            lockfile: lock_name,
            lock_sha256: plan.lock_sha256,
            wheels: items.clone(),
            arch: Some(arch.to_string()),
            uv: uv.as_ref().map(|(b, _)| b.clone()),
            greta_version: env!("CARGO_PKG_VERSION").into(),
            created: envs::receipt::now_rfc3339(),
        };
        std::fs::write(
            tmp.join(BUNDLE_MANIFEST),
            serde_json::to_string_pretty(&m)? + "\n",
        )?;
        Ok(m)
    })();
    super::pause_at("bundle-written");
    let done = result.and_then(|m| swap_in(&tmp, out).map(|()| m));
    if done.is_err() {
        let _ = envs::remove_tree(&tmp);
    }
    if let Some(r) = record {
        let _ = std::fs::remove_file(r);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(arch: Option<&str>) -> BundleManifest {
        BundleManifest {
            schema: BUNDLE_SCHEMA.into(),
            fetch_ms: 1,
            profile: "cpu".into(),
            python: "3.12".into(),
            lockfile: "pylock.cpu.toml".into(),
            lock_sha256: greta_vocab::Sha256([0; 32]),
            wheels: vec![PinnedWheel {
                name: "x".into(),
                version: "1".into(),
                filename: "x-1-py3-none-any.whl".into(),
                url: "https://e/x-1-py3-none-any.whl".into(),
                sha256: greta_vocab::Sha256([0xab; 32]),
                size: Some(3),
                at: Some(fetch::LockLine {
                    file: "/lock/pylock.cpu.toml".into(),
                    line: 9,
                }),
            }],
            arch: arch.map(str::to_string),
            uv: None,
            greta_version: "0.1.0".into(),
            created: "2026-11-23T00:00:00Z".into(),
        }
    }

    /// The lock line is this machine's business: the manifest keeps its
    /// shape (a bundle's lockfile travels with it and is checked by hash).
    #[test]
    fn a_manifest_round_trips_without_lock_lines() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest(Some(std::env::consts::ARCH));
        let text = serde_json::to_string_pretty(&m).unwrap();
        // Neither the field nor the lockfile it would name.
        assert!(
            !text.contains("\"at\"") && !text.contains("/lock/pylock"),
            "{text}"
        );
        std::fs::write(dir.path().join(BUNDLE_MANIFEST), text).unwrap();
        let back = BundleManifest::load(dir.path()).unwrap();
        assert_eq!(back.wheels[0].at, None);
        assert_eq!(back.wheels[0].sha256, m.wheels[0].sha256);
        back.check_arch(dir.path()).unwrap();
    }

    #[test]
    fn a_bundle_for_another_architecture_is_refused_with_both_names() {
        let other = if std::env::consts::ARCH == "aarch64" {
            "x86_64"
        } else {
            "aarch64"
        };
        let e = manifest(Some(other))
            .check_arch(Path::new("/b"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("made on a {other} machine"))
                && e.contains(&format!("this node is {}", std::env::consts::ARCH)),
            "{e}"
        );
        // Bundles from before the field: accepted.
        manifest(None).check_arch(Path::new("/b")).unwrap();
    }
}
